//! Handles used from inside the batch that fires them, on a manual timer: a task's `reset` and
//! `cancel` of its own handle (refused: it is running), a cancel of a sibling later in the same
//! batch (wins: the sibling never runs), a reset of such a sibling (refused: it is being fired;
//! it runs in this batch), resets moving a later task into the advance under way (it runs in that
//! advance, in deadline order, once, where a task scheduled there waits for the next), and the
//! same through `RepeatingHandle`, and resets and cancels of tasks of later ticks one long advance
//! reaches (pending when the task runs); counts exact after each.

mod common;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use common::{manual_timer, ms};
use delaywheel::{ManualClock, Repeat, RepeatingHandle, Timer, TimerHandle};

type Slot = Arc<OnceLock<TimerHandle>>;

#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn push(&self, s: impl Into<String>) {
        self.0.lock().unwrap().push(s.into());
    }
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn step(clock: &ManualClock, timer: &Timer, by: Duration) -> bool {
    clock.advance(by);
    timer.advance_clock(Duration::ZERO)
}

/// A: resets and cancels itself (false, false), cancels B (true), resets C (false: being fired),
/// resets D (due at 20 ms) into the tick under way (true), reads the handles' states.
#[test]
fn a_task_moving_itself_and_its_batch_siblings() {
    let (clock, timer) = manual_timer(ms(1), 4);
    let timer = Arc::new(timer);
    let log = Log::default();
    let slots: Vec<Slot> = (0..4).map(|_| Slot::default()).collect();
    let a = {
        let (log, s, c) = (log.clone(), slots.clone(), clock.clone());
        move || {
            let me = s[0].get().unwrap();
            let (b, cc, d) = (s[1].get().unwrap(), s[2].get().unwrap(), s[3].get().unwrap());
            log.push(format!(
                "A at {:?}: self reset {} cancel {} pending {}; B pending {} cancel {}; C reset {} pending {}; D reset {}",
                c.now(),
                me.reset(ms(1)),
                me.cancel(),
                me.is_pending(),
                b.is_pending(),
                b.cancel(),
                cc.reset(ms(50)),
                cc.is_pending(),
                d.reset(Duration::ZERO),
            ));
        }
    };
    let (lb, lc, ld) = (log.clone(), log.clone(), log.clone());
    let c2 = clock.clone();
    slots[0].set(timer.schedule(ms(10), a)).unwrap();
    slots[1].set(timer.schedule(ms(10), move || lb.push("B"))).unwrap();
    slots[2].set(timer.schedule(ms(10), move || lc.push("C"))).unwrap();
    slots[3].set(timer.schedule(ms(20), move || ld.push(format!("D at {:?}", c2.now())))).unwrap();
    assert_eq!(timer.len(), 4);
    step(&clock, &timer, ms(9));
    assert!(log.take().is_empty());
    step(&clock, &timer, ms(1));
    let got = log.take();
    assert_eq!(
        got[0],
        "A at 10ms: self reset false cancel false pending false; B pending true cancel true; C reset false pending true; D reset true"
    );
    // B never runs; C runs in this batch; D, moved to the clock reading this advance works to,
    // runs in it too (the `TimerHandle::reset` rustdoc), and not again.
    assert_eq!(got[1..], ["C", "D at 10ms"], "{got:?}");
    assert!(slots[1].get().unwrap().is_cancelled());
    assert!(slots[2].get().unwrap().is_fired());
    timer.advance_clock(Duration::ZERO);
    assert!(log.take().is_empty());
    assert!(timer.is_empty());
    step(&clock, &timer, ms(30));
    assert!(log.take().is_empty());
    let stats = timer.stats();
    assert_eq!((stats.fired, stats.cancelled), (3, 1));
}

/// A later task in the batch cancelled by an earlier one, then the earlier one re-arms the
/// cancelled handle: refused, nothing runs; and a task that cancels a task of a later tick
/// reached by the same advance (taken out or not) wins too.
#[test]
fn cancels_of_tasks_later_in_one_long_advance_win_and_resets_after_them_are_refused() {
    for wheel in [2usize, 60] {
        let (clock, timer) = manual_timer(ms(10), wheel);
        let log = Log::default();
        let slots: Vec<Slot> = (0..3).map(|_| Slot::default()).collect();
        let (s, l) = (slots.clone(), log.clone());
        slots[0]
            .set(timer.schedule(ms(10), move || {
                let (b, c) = (s[1].get().unwrap(), s[2].get().unwrap());
                l.push(format!("A: {} {} {} {}", b.cancel(), b.reset(ms(1)), c.cancel(), c.cancel()));
            }))
            .unwrap();
        let l = log.clone();
        slots[1].set(timer.schedule(ms(10), move || l.push("B"))).unwrap();
        let l = log.clone();
        slots[2].set(timer.schedule(Duration::from_secs(50), move || l.push("C"))).unwrap();
        step(&clock, &timer, Duration::from_secs(3600));
        assert_eq!(log.take(), ["A: true false true false"], "wheel {wheel}");
        assert!(timer.is_empty());
        assert_eq!(timer.next_wakeup(), None);
        let stats = timer.stats();
        assert_eq!((stats.fired, stats.cancelled, stats.pending), (1, 2, 0));
    }
}

/// A task that moves a pending task of a later tick earlier and later, several times, from
/// inside the batch: the last `true` reset decides, and it runs once, never before it.
#[test]
fn repeated_resets_from_inside_a_batch_keep_the_last_deadline() {
    let (clock, timer) = manual_timer(ms(10), 60);
    let log = Log::default();
    let target: Slot = Slot::default();
    let (t, l) = (Arc::clone(&target), log.clone());
    let _a = timer.schedule(ms(10), move || {
        let h = t.get().unwrap();
        l.push(format!("A: {} {} {}", h.reset(ms(1)), h.reset(Duration::from_secs(40)), h.reset(ms(25))));
    });
    let l = log.clone();
    let c = clock.clone();
    target
        .set(timer.schedule(Duration::from_secs(3600), move || l.push(format!("T at {:?}", c.now()))))
        .unwrap();
    step(&clock, &timer, ms(10));
    assert_eq!(log.take(), ["A: true true true"]);
    assert_eq!(target.get().unwrap().deadline(), Some(timer.now() + ms(25)));
    for _ in 0..2 {
        step(&clock, &timer, ms(10));
        assert!(log.take().is_empty());
    }
    step(&clock, &timer, ms(10));
    assert_eq!(log.take(), ["T at 40ms"]);
    step(&clock, &timer, Duration::from_secs(7200));
    assert!(log.take().is_empty() && timer.is_empty());
}

/// A repeating task cancelled from a one-shot task of the same batch (earlier in it) does not
/// run; one cancelled from its own run runs that once and never again.
#[test]
fn a_repeating_task_cancelled_from_the_batch_and_from_its_own_run() {
    let (clock, timer) = manual_timer(ms(10), 3);
    let log = Log::default();
    let slot: Arc<OnceLock<RepeatingHandle>> = Arc::default();
    let s = Arc::clone(&slot);
    let l = log.clone();
    let _killer = timer.schedule(ms(30), move || l.push(format!("kill {}", s.get().unwrap().cancel())));
    let l = log.clone();
    let rep = timer.schedule_repeating(ms(10), Repeat::FixedRate(ms(10)), move || l.push("beat"));
    slot.set(rep.clone()).unwrap();
    step(&clock, &timer, ms(10));
    step(&clock, &timer, ms(10));
    assert_eq!(log.take(), ["beat", "beat"]);
    step(&clock, &timer, ms(10));
    // The killer was scheduled first: at 30 ms it runs before the beat due then.
    assert_eq!(log.take(), ["kill true"]);
    assert!(!rep.cancel());
    step(&clock, &timer, ms(100));
    assert!(log.take().is_empty() && timer.is_empty());

    let slot: Arc<OnceLock<RepeatingHandle>> = Arc::default();
    let s = Arc::clone(&slot);
    let l = log.clone();
    let rep = timer.schedule_repeating(ms(10), Repeat::FixedDelay(ms(10)), move || {
        l.push(format!("run, cancel {}", s.get().unwrap().cancel()));
    });
    slot.set(rep.clone()).unwrap();
    step(&clock, &timer, ms(10));
    assert_eq!(log.take(), ["run, cancel true"]);
    step(&clock, &timer, ms(100));
    assert!(log.take().is_empty() && timer.is_empty());
    assert!(!rep.cancel());
}

/// One advance over 100 ms (10 ms tick) whose first task, at 10 ms, moves a pending task B (due in
/// an hour) to 30 ms and schedules a new task S at 30 ms: B fires in that same advance, in
/// deadline order between the tasks due at 20 and 50 ms, while S waits for the next advance (the
/// `TimerHandle::reset` rustdoc); a move to a zero delay fires at the advance's last tick.
#[test]
fn a_reset_from_inside_an_advance_fires_in_it_and_a_schedule_waits_for_the_next() {
    for wheel in [2usize, 60] {
        let (clock, timer) = manual_timer(ms(10), wheel);
        let timer = Arc::new(timer);
        let log = Log::default();
        let (b, z): (Slot, Slot) = Default::default();
        let origin = timer.now();
        let at = |name: &'static str| {
            let (l, c) = (log.clone(), clock.clone());
            move || l.push(format!("{name} at {:?}", c.now()))
        };
        let (t, l, bb, zz) = (Arc::clone(&timer), log.clone(), Arc::clone(&b), Arc::clone(&z));
        let _a = timer.schedule(ms(10), move || {
            let moved = bb.get().unwrap().reset_at(origin + ms(30));
            let zeroed = zz.get().unwrap().reset(Duration::ZERO);
            let _s = t.schedule_at(origin + ms(30), {
                let l = l.clone();
                move || l.push("S")
            });
            l.push(format!("A: {moved} {zeroed}"));
        });
        let _c20 = timer.schedule(ms(20), at("C20"));
        let _c50 = timer.schedule(ms(50), at("C50"));
        b.set(timer.schedule(Duration::from_secs(3600), at("B"))).unwrap();
        z.set(timer.schedule(Duration::from_secs(3600), at("Z"))).unwrap();
        clock.advance(ms(100));
        assert!(timer.advance_clock(Duration::ZERO));
        // The manual clock reads 100 ms throughout the advance; the order is the firing order.
        assert_eq!(
            log.take(),
            ["A: true true", "C20 at 100ms", "B at 100ms", "C50 at 100ms", "Z at 100ms"],
            "wheel {wheel}"
        );
        assert_eq!(timer.len(), 1, "S waits");
        timer.advance_clock(Duration::ZERO);
        assert_eq!(log.take(), ["S"], "wheel {wheel}");
        assert!(timer.is_empty());
    }
}

/// One advance over 100 ms (10 ms tick) whose first task, at 10 ms, reads, moves and cancels
/// tasks of later ticks that advance reaches: each is pending when it runs (the advance goes tick
/// by tick, as the engine's cursor does), so the reset to 80 ms is `true` and fires there, after
/// the task due at 60, and the cancelled one never runs.
#[test]
fn a_task_of_a_long_advance_moves_and_cancels_tasks_of_its_later_ticks() {
    for wheel in [2usize, 60] {
        let (clock, timer) = manual_timer(ms(10), wheel);
        let log = Log::default();
        let (c, e): (Slot, Slot) = Default::default();
        let (cc, ee, l, at_80) = (Arc::clone(&c), Arc::clone(&e), log.clone(), timer.now() + ms(80));
        let _a = timer.schedule(ms(10), move || {
            let (c, e) = (cc.get().unwrap(), ee.get().unwrap());
            l.push(format!("A: {} {} {} {}", c.is_pending(), c.reset_at(at_80), e.is_pending(), e.cancel()));
        });
        let at = |name: &'static str| {
            let l = log.clone();
            move || l.push(name)
        };
        c.set(timer.schedule(ms(50), at("C"))).unwrap();
        let _d = timer.schedule(ms(60), at("D"));
        e.set(timer.schedule(ms(70), at("E"))).unwrap();
        step(&clock, &timer, ms(100));
        assert_eq!(log.take(), ["A: true true true true", "D", "C"], "wheel {wheel}");
        assert!(timer.is_empty() && c.get().unwrap().is_fired() && e.get().unwrap().is_cancelled());
        let stats = timer.stats();
        assert_eq!((stats.fired, stats.cancelled, stats.rearmed), (3, 1, 1), "wheel {wheel}");
    }
}
