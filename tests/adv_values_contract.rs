//! The contract of the values side, where other suites leave gaps: a queue driven by its
//! `next_deadline` alone (as a simulation on a manual clock drives it), keys reset into the past
//! and then removed, instants before the clock's origin, the timer's counters of a queue's values,
//! periodic runs across a clock jump of an hour, on a timer bounded to one pending task and shut
//! down from their own run, and operations of a purgatory whose `Drop` panics where the purgatory
//! lets go of them.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use delaywheel::purgatory::{DelayedOperation, Purgatory};
use delaywheel::queue::DelayQueue;
use delaywheel::{ManualClock, MissedTickBehavior, Repeat, Timer};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn manual(tick: Duration, size: usize) -> (ManualClock, Timer) {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(tick).wheel_size(size).clock(clock.clone()).manual().build();
    (clock, timer)
}

/// Moves the clock to the queue's next deadline, if any, and advances: the clock's reading after.
fn to_next_deadline<T: Send + 'static>(q: &DelayQueue<T>, clock: &ManualClock) -> Instant {
    if let Some(next) = q.next_deadline() {
        clock.advance(next.saturating_duration_since(q.timer().now()));
        q.advance_clock(Duration::ZERO);
    }
    q.timer().now()
}

/// A value reset to a deadline already passed is still pending until the next advance: `remove`
/// hands it back then; once that advance expired it, the key names nothing and the value comes out
/// carrying the passed deadline.
#[test]
fn reset_to_the_past_then_remove_hands_the_value_back() {
    let (clock, timer) = manual(ms(1), 4);
    let q = DelayQueue::with_timer(timer);
    clock.advance(ms(100));
    let k = q.insert(1u32, ms(50));
    let past = q.timer().now() - ms(70);
    assert!(q.reset_at(&k, past));
    assert_eq!(q.deadline(&k), Some(past));
    assert_eq!(q.remove(&k), Some(1));
    assert_eq!(q.len(), 0);
    q.advance_clock(Duration::ZERO);
    assert!(q.try_recv().is_none());
    // Again, but let it expire: then the key is dead for reset and remove.
    let k = q.insert(2u32, ms(50));
    assert!(q.reset_at(&k, past));
    q.advance_clock(Duration::ZERO);
    assert!(!q.reset(&k, ms(10)));
    assert_eq!(q.remove(&k), None);
    assert_eq!(q.deadline(&k), None);
    let e = q.try_recv().unwrap();
    assert_eq!((e.key(), e.deadline(), *e.get_ref()), (k, past, 2));
    assert!(q.is_empty());
}

/// Instants before the manual clock's origin (one 400 years before, past what the exact deadline
/// holds) read back as given (the far one never later than the origin) and come out at the next
/// advance, in deadline order, on a wheel of two slots.
#[test]
fn insert_at_before_the_origin_comes_out_at_the_next_advance_in_order() {
    let (_clock, timer) = manual(ms(1), 2);
    let q = DelayQueue::with_timer(timer);
    let origin = q.timer().now();
    let a = origin - Duration::from_secs(10);
    let b = origin - Duration::from_secs(20);
    let c = origin - Duration::from_secs(3600 * 24 * 365 * 400); // 400 years
    let ka = q.insert_at("a", a);
    let kb = q.insert_at("b", b);
    let kc = q.insert_at("c", c);
    let kd = q.insert_at("d", origin);
    assert_eq!(q.deadline(&ka), Some(a));
    assert_eq!(q.deadline(&kb), Some(b));
    assert!(q.deadline(&kc).unwrap() <= origin);
    assert_eq!(q.deadline(&kd), Some(origin));
    assert_eq!(q.len(), 4);
    q.advance_clock(Duration::ZERO);
    let out: Vec<_> = std::iter::from_fn(|| q.try_recv()).map(|e| (*e.get_ref(), e.key())).collect();
    assert_eq!(out, [("c", kc), ("b", kb), ("a", ka), ("d", kd)]);
}

/// A simulation moves its manual clock only to `next_deadline`, among random inserts, removes and
/// resets (some into the past), on wheels of 2 to 60 slots: every value comes out with its last
/// deadline, never early, and no later than the tick boundary at or after it (or the next advance
/// for a deadline already passed when set), so `next_deadline` never skips past a value.
#[test]
fn a_simulation_driven_by_next_deadline_sees_each_value_at_its_tick() {
    for (tick, size) in [(ms(1), 2usize), (ms(3), 4), (Duration::from_micros(1), 2), (ms(10), 60)] {
        let (clock, timer) = manual(tick, size);
        let q = DelayQueue::with_timer(timer);
        let origin = q.timer().now();
        let mut rng = 0x9e3779b97f4a7c15u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut live: Vec<(delaywheel::queue::Key, u64, Instant, Instant)> = Vec::new();
        let mut out = 0;
        for id in 0..3000u64 {
            let r = next();
            match r % 7 {
                0..=2 => {
                    let d = Duration::from_nanos(next() % (tick.as_nanos() as u64 * 500 + 1));
                    let k = q.insert(id, d);
                    live.push((k, id, q.deadline(&k).unwrap(), q.timer().now()));
                }
                3 if !live.is_empty() => {
                    let i = (next() % live.len() as u64) as usize;
                    let (k, id, _, _) = live.swap_remove(i);
                    assert_eq!(q.remove(&k), Some(id));
                }
                4 if !live.is_empty() => {
                    let i = (next() % live.len() as u64) as usize;
                    let d = Duration::from_nanos(next() % (tick.as_nanos() as u64 * 300 + 1));
                    let at = q.timer().now() + d;
                    let at = if next() % 4 == 0 { at - d - d } else { at };
                    assert!(q.reset_at(&live[i].0, at));
                    live[i].2 = at;
                    live[i].3 = q.timer().now();
                }
                _ => {
                    let now = to_next_deadline(&q, &clock);
                    while let Some(e) = q.try_recv() {
                        let i = live.iter().position(|l| l.0 == e.key()).expect("out once");
                        let (_, id, due, set) = live.swap_remove(i);
                        assert_eq!((*e.get_ref(), e.deadline()), (id, due));
                        assert!(now >= due, "early");
                        let since = due.saturating_duration_since(origin).as_nanos();
                        let t = tick.as_nanos();
                        let boundary = (since.div_ceil(t) * t).max(set.duration_since(origin).as_nanos());
                        let now_n = now.duration_since(origin).as_nanos();
                        assert!(now_n <= boundary, "late: {now_n} > {boundary}");
                        out += 1;
                    }
                }
            }
            assert_eq!(q.len(), live.len());
        }
        while !live.is_empty() {
            assert!(q.next_deadline().is_some(), "pending values have a next deadline");
            let now = to_next_deadline(&q, &clock);
            while let Some(e) = q.try_recv() {
                let i = live.iter().position(|l| l.0 == e.key()).expect("out once");
                let (_, _, due, _) = live.swap_remove(i);
                assert!(now >= due);
                out += 1;
            }
        }
        assert!(out > 0 && q.is_empty() && q.next_deadline().is_none());
    }
}

/// After a jump of an hour and 3 ms past a run's due time: `Burst` runs the missed runs one per
/// advance, `Delay` starts a grid a period after the late run, `Skip` keeps the grid.
#[test]
fn every_behaviour_under_large_clock_jumps_runs_on_its_rule() {
    for missed in [MissedTickBehavior::Burst, MissedTickBehavior::Delay, MissedTickBehavior::Skip] {
        let (clock, timer) = manual(ms(1), 4);
        let runs = Arc::new(Mutex::new(Vec::new()));
        let (r, c) = (runs.clone(), clock.clone());
        let h = timer.schedule_repeating(ms(10), Repeat::Every(ms(10), missed), move || {
            r.lock().unwrap().push(c.now());
        });
        clock.advance(ms(10));
        timer.advance_clock(Duration::ZERO);
        clock.advance(Duration::from_secs(3600) + ms(3));
        timer.advance_clock(Duration::ZERO);
        for _ in 0..25 {
            clock.advance(ms(1));
            timer.advance_clock(Duration::ZERO);
        }
        let got = runs.lock().unwrap().clone();
        let j = Duration::from_secs(3600) + ms(13);
        match missed {
            MissedTickBehavior::Burst => {
                assert_eq!(&got[..7], &[ms(10), j, j + ms(1), j + ms(2), j + ms(3), j + ms(4), j + ms(5)][..])
            }
            MissedTickBehavior::Delay => assert_eq!(got, [ms(10), j, j + ms(10), j + ms(20)]),
            MissedTickBehavior::Skip => assert_eq!(got, [ms(10), j, j + ms(7), j + ms(17)]),
        }
        assert!(h.cancel());
        assert!(timer.is_empty());
    }
}

/// The timer's counters of a queue's values: each insert is scheduled, each expiry fired, each
/// remove and each value a clear drops before it expired cancelled, each `true` reset a re-arm;
/// pending is the queue's `len` less the values expired and not taken.
#[test]
fn the_timers_counters_account_for_every_value() {
    let (clock, timer) = manual(ms(1), 4);
    let q = DelayQueue::with_timer(timer);
    let keys: Vec<_> = (0..200u64).map(|i| q.insert(i, ms(i % 37))).collect();
    for (i, k) in keys.iter().enumerate() {
        match i % 5 {
            0 => assert!(q.remove(k).is_some()),
            1 => assert!(q.reset(k, ms(50))),
            2 => assert!(q.reset_at(k, q.timer().now() - ms(3))),
            _ => {}
        }
    }
    clock.advance(ms(20));
    q.advance_clock(Duration::ZERO);
    let taken = std::iter::from_fn(|| q.try_recv()).count() as u64;
    let s = q.timer().stats();
    assert_eq!((s.scheduled, s.fired, s.cancelled, s.rearmed), (200, taken, 40, 80));
    assert_eq!((s.pending as u64, q.len() as u64), (160 - taken, 160 - taken));
    q.clear();
    let s = q.timer().stats();
    assert_eq!((s.cancelled, s.pending), (200 - taken, 0));
    // Values that expired and wait untaken were fired: a clear drops them without a cancel.
    for i in 0..10u64 {
        q.insert(i, ms(1));
    }
    clock.advance(ms(1));
    q.advance_clock(Duration::ZERO);
    q.clear();
    let s = q.timer().stats();
    assert_eq!((s.scheduled, s.fired, s.cancelled, s.pending), (210, taken + 10, 200 - taken, 0));
    assert!(q.is_empty());
}

/// A run is no longer pending when it re-arms: a timer bounded to one pending task keeps every
/// kind of repetition going.
#[test]
fn a_repetition_goes_on_on_a_timer_bounded_to_one_pending_task() {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(ms(1)).clock(clock.clone()).manual().max_pending(1).build();
    for repeat in [
        Repeat::FixedRate(ms(10)),
        Repeat::FixedDelay(ms(10)),
        Repeat::Every(ms(10), MissedTickBehavior::Delay),
    ] {
        let h = timer.schedule_repeating(ms(10), repeat, || {});
        for _ in 0..5 {
            clock.advance(ms(10));
            timer.advance_clock(Duration::ZERO);
        }
        assert_eq!(h.runs(), 5, "{repeat:?}");
        assert!(h.is_active() && h.cancel() && timer.is_empty(), "{repeat:?}");
    }
}

/// A run that shuts its timer down is the last: its re-arm is refused and the handle ends.
#[test]
fn a_run_that_shuts_its_timer_down_is_the_last() {
    for repeat in [
        Repeat::FixedRate(ms(10)),
        Repeat::FixedDelay(ms(10)),
        Repeat::Every(ms(10), MissedTickBehavior::Burst),
    ] {
        let (clock, timer) = manual(ms(1), 4);
        let timer = Arc::new(timer);
        let (weak, handed_back) = (Arc::downgrade(&timer), Arc::new(Mutex::new(None)));
        let h = {
            let handed_back = Arc::clone(&handed_back);
            timer.schedule_repeating(ms(10), repeat, move || {
                let timer = weak.upgrade().expect("the test holds the timer");
                *handed_back.lock().unwrap() = Some(timer.shutdown().len());
            })
        };
        for _ in 0..3 {
            clock.advance(ms(10));
            timer.advance_clock(Duration::ZERO);
        }
        assert_eq!((h.runs(), *handed_back.lock().unwrap()), (1, Some(0)), "{repeat:?}");
        assert!(!h.is_active() && !h.cancel(), "{repeat:?}");
    }
}

/// An operation that panics when dropped; it completes once `ready` is set.
struct Bomb {
    ready: Arc<AtomicBool>,
    completes: Arc<AtomicUsize>,
}

impl DelayedOperation for Bomb {
    fn try_complete(&self) -> bool {
        self.ready.load(Ordering::SeqCst)
    }
    fn on_complete(&self) {
        self.completes.fetch_add(1, Ordering::SeqCst);
    }
    fn on_expiration(&self) {}
}

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("an operation's drop panics");
    }
}

/// A manual purgatory holding three operations handed over as their only reference, watched
/// under key 1 (and 2), with `timeout`.
fn bombs(timeout: Duration) -> (ManualClock, Purgatory<u32, Bomb>, Arc<AtomicBool>, Arc<AtomicUsize>) {
    let (clock, timer) = manual(ms(1), 4);
    let purgatory = Purgatory::with_timer(timer);
    let (ready, completes) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
    for _ in 0..3 {
        let op = Bomb { ready: Arc::clone(&ready), completes: Arc::clone(&completes) };
        assert!(!purgatory.try_complete_else_watch(Arc::new(op), timeout, [1, 2]));
    }
    (clock, purgatory, ready, completes)
}

/// The check holds the last reference to each operation it completes (the lists and the timer let
/// go of theirs as it retires them): the first drop's panic must not end the check before the
/// rest of the list.
#[test]
fn a_check_goes_on_past_an_operation_whose_drop_panics() {
    let (_clock, purgatory, ready, completes) = bombs(ms(100));
    ready.store(true, Ordering::SeqCst);
    let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| purgatory.check_and_complete(&1)));
    assert_eq!(checked.ok(), Some(3), "every operation of the key completes, and the check returns");
    assert_eq!(completes.load(Ordering::SeqCst), 3);
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (0, 0, 0));
}

/// Operations that never expire are held by the watcher lists alone: the purgatory's drop lets go
/// of them, and a second panicking drop while the first unwinds would abort the process.
#[test]
fn dropping_a_purgatory_drops_operations_whose_drop_panics_without_panicking() {
    for timeout in [Duration::MAX, ms(100)] {
        let (_clock, purgatory, _ready, completes) = bombs(timeout);
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(purgatory)));
        assert!(dropped.is_ok(), "timeout {timeout:?}");
        assert_eq!(completes.load(Ordering::SeqCst), 0);
    }
}
