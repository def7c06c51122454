//! Re-arming in place and absolute deadlines: `Timer::now`, `schedule_at`, `try_schedule_at`,
//! `next_wakeup`, `TimerHandle::reset` / `reset_at` / `deadline`, `RepeatingHandle::reset` /
//! `reset_at`, all on a manual clock: exact firing times, exactly-once outcomes.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use common::{manual_timer, ms, Counter, FireLog};
use delaywheel::{ManualClock, Repeat, ScheduleError, Timer};

/// Advances the clock one millisecond at a time up to `to` (a reading), advancing the timer at
/// every step, so that every firing time is observed to the millisecond.
fn step_to(clock: &ManualClock, timer: &Timer, to: Duration) {
    while clock.now() < to {
        clock.advance(ms(1));
        timer.advance_clock(Duration::ZERO);
    }
}

/// Counts how many times the values it hands out were dropped.
#[derive(Clone, Default)]
struct Drops(Arc<AtomicUsize>);

struct Tracked(Arc<AtomicUsize>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl Drops {
    fn value(&self) -> Tracked {
        Tracked(Arc::clone(&self.0))
    }

    fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

#[test]
fn now_follows_the_manual_clock_and_not_wall_time() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let other = Timer::builder().clock(clock.clone()).manual().build();
    let start = timer.now();
    assert_eq!(other.now(), start, "timers on one clock agree");
    std::thread::sleep(ms(3));
    assert_eq!(timer.now(), start, "wall time does not move a manual clock");
    clock.advance(Duration::from_nanos(1_234_567));
    assert_eq!(timer.now() - start, Duration::from_nanos(1_234_567));
    assert_eq!(other.now(), timer.now());
}

#[test]
fn now_on_the_system_clock_is_instant_now() {
    let timer = Timer::builder().manual().build();
    let before = Instant::now();
    let now = timer.now();
    let after = Instant::now();
    assert!(before <= now && now <= after, "{before:?} {now:?} {after:?}");
}

#[test]
fn schedule_at_fires_at_the_first_tick_at_or_after_its_instant() {
    let (clock, timer) = manual_timer(ms(10), 8);
    let log = FireLog::default();
    let start = timer.now();
    // On a tick boundary, between boundaries, and far enough to cascade twice (level 2).
    timer.schedule_at(start + ms(30), log.task(1, &clock));
    timer.schedule_at(start + ms(25), log.task(2, &clock));
    timer.schedule_at(start + ms(1_001), log.task(3, &clock));
    step_to(&clock, &timer, ms(1_100));
    assert_eq!(log.runs(), vec![(2, ms(30)), (1, ms(30)), (3, ms(1_010))]);
    assert!(timer.is_empty());
}

#[test]
fn schedule_at_a_passed_instant_runs_at_the_next_advance_also_mid_tick() {
    let (clock, timer) = manual_timer(ms(10), 8);
    let log = FireLog::default();
    clock.advance(ms(37)); // mid-tick
    let now = timer.now();
    timer.schedule_at(now, log.task(1, &clock));
    timer.schedule_at(now - ms(20), log.task(2, &clock));
    // Before the clock's origin, however far: already passed.
    let long_ago = now.checked_sub(Duration::from_secs(3_600)).unwrap_or(now - ms(37));
    timer.schedule_at(long_ago, log.task(3, &clock));
    assert_eq!(log.count(), 0, "never inside schedule_at");
    assert!(timer.advance_clock(Duration::ZERO));
    let mut ids = log.ids();
    ids.sort_unstable();
    assert_eq!(ids, vec![1, 2, 3]);
    assert!(log.runs().iter().all(|&(_, at)| at == ms(37)), "without the clock moving");
}

#[test]
fn try_schedule_at_refuses_a_deadline_beyond_the_range_and_drops_the_task() {
    let (_clock, timer) = manual_timer(Duration::from_micros(1), 8);
    let drops = Drops::default();
    let value = drops.value();
    // The range ends a second (`max_delay`'s slack) past `max_delay`.
    let far = timer.now().checked_add(timer.max_delay() + Duration::from_secs(2));
    let Some(far) = far else { return }; // an Instant this far is not representable here
    match timer.try_schedule_at(far, move || drop(value)) {
        Err(ScheduleError::DelayTooLong { delay, max }) => {
            assert_eq!(max, timer.max_delay());
            assert_eq!(delay, max + Duration::from_secs(2));
        }
        other => panic!("expected DelayTooLong, got {other:?}"),
    }
    assert_eq!(drops.count(), 1, "the refused task is dropped unrun");
    let value = drops.value();
    let inert = timer.schedule_at(far, move || drop(value));
    assert_eq!(drops.count(), 2);
    assert!(!inert.is_pending() && !inert.reset(ms(1)) && inert.deadline().is_none());
    assert!(timer.is_empty());
    // The last representable tick is accepted.
    assert!(timer.try_schedule_at(timer.now() + timer.max_delay(), || {}).is_ok());
}

#[test]
fn try_schedule_at_after_shutdown_is_refused() {
    let (_clock, timer) = manual_timer(ms(1), 8);
    timer.shutdown();
    assert_eq!(timer.try_schedule_at(timer.now(), || {}).err(), Some(ScheduleError::ShutDown));
}

#[test]
fn deadline_is_the_instant_given_and_none_once_the_task_is_gone() {
    let (clock, timer) = manual_timer(ms(10), 8);
    let start = timer.now();
    let h = timer.schedule(ms(25), || {});
    // The deadline itself, not the tick boundary it fires at (30 ms).
    assert_eq!(h.deadline(), Some(start + ms(25)));
    let exact = timer.schedule_at(start + ms(200), || {});
    assert_eq!(exact.deadline(), Some(start + ms(200)));
    step_to(&clock, &timer, ms(30));
    assert!(h.is_fired());
    assert_eq!(h.deadline(), None);
    assert!(exact.cancel());
    assert_eq!(exact.deadline(), None);
}

#[test]
fn deadline_reads_back_to_the_nanosecond_mid_tick_and_on_the_system_clock() {
    let (clock, timer) = manual_timer(ms(10), 8);
    let start = timer.now();
    clock.advance(Duration::from_nanos(3_000_123));
    let h = timer.schedule(ms(25), || {});
    assert_eq!(h.deadline(), Some(start + Duration::from_nanos(28_000_123)));
    assert!(h.reset_at(start + Duration::from_nanos(41_999_999)));
    assert_eq!(h.deadline(), Some(start + Duration::from_nanos(41_999_999)));
    step_to(&clock, &timer, ms(40));
    assert!(h.is_pending(), "due at 42 ms, fires at the 50 ms boundary");
    step_to(&clock, &timer, ms(50));
    assert!(h.is_fired());

    let timer = Timer::new();
    let at = timer.now() + Duration::from_nanos(30_000_123);
    let h = timer.schedule_at(at, || {});
    assert_eq!(h.deadline(), Some(at));
    assert!(h.reset_at(at + ms(7)));
    assert_eq!(h.deadline(), Some(at + ms(7)));
    assert!(h.cancel());
}

#[test]
fn reset_later_moves_the_task_and_it_fires_once_at_the_new_deadline() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let log = FireLog::default();
    let h = timer.schedule(ms(10), log.task(1, &clock));
    step_to(&clock, &timer, ms(5));
    assert!(h.reset(ms(20)));
    assert_eq!(h.deadline(), Some(timer.now() + ms(20)));
    step_to(&clock, &timer, ms(60));
    assert_eq!(log.runs(), vec![(1, ms(25))]);
    assert!(h.is_fired());
    assert!(!h.reset(ms(5)), "fired: nothing to move");
    assert!(!h.cancel());
}

#[test]
fn reset_earlier_from_a_coarse_level_fires_at_the_new_deadline() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let log = FireLog::default();
    let h = timer.schedule(Duration::from_secs(3_600), log.task(1, &clock));
    assert!(h.position().unwrap().level >= 3, "{:?}", h.position());
    step_to(&clock, &timer, ms(3));
    assert!(h.reset(ms(4)));
    assert_eq!(h.position().map(|p| p.level), Some(0));
    step_to(&clock, &timer, ms(10));
    assert_eq!(log.runs(), vec![(1, ms(7))]);
    assert!(timer.is_empty());
}

#[test]
fn reset_after_a_cascade_finds_the_task_in_its_new_bucket() {
    let (clock, timer) = manual_timer(ms(1), 4);
    let log = FireLog::default();
    let h = timer.schedule(ms(50), log.task(1, &clock));
    let first = h.position().unwrap();
    // Let it cascade at least once (its level-2 bucket's round starts at 48), then move it both ways.
    step_to(&clock, &timer, ms(48));
    let now = h.position().unwrap();
    assert!(now.level < first.level, "{first:?} -> {now:?}");
    assert!(h.reset(ms(30)));
    step_to(&clock, &timer, ms(70));
    assert_eq!(log.count(), 0, "never before the new deadline");
    assert!(h.reset_at(timer.now() + ms(5)));
    step_to(&clock, &timer, ms(100));
    assert_eq!(log.runs(), vec![(1, ms(75))]);
}

/// A later reset, again and again (an idle timeout): it fires once, at the last deadline. The reset
/// moves the entry at once, to the new deadline's bucket.
#[test]
fn a_later_reset_fires_once_at_the_last_deadline() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let log = FireLog::default();
    let h = timer.schedule(ms(10), log.task(1, &clock)); // level 1 (slots of 8 ticks), round 8
    assert_eq!(h.position().unwrap().level, 1);
    assert!(h.reset(ms(100)));
    let after = h.position().unwrap();
    assert_eq!((after.level, after.deadline_tick), (2, 100), "moved to level 2 (slots of 64 ticks)");
    assert_eq!(h.deadline(), Some(timer.now() + ms(100)));
    assert!(timer.next_wakeup().unwrap() <= timer.now() + ms(100), "never later than the work");
    // Its old bucket's round (8) leaves it there.
    step_to(&clock, &timer, ms(8));
    let moved = h.position().unwrap();
    assert_eq!((moved.level, moved.deadline_tick), (2, 100));
    // Re-armed later again and again: it stays put, and fires once, at the last.
    for at in 9..=40 {
        step_to(&clock, &timer, ms(at));
        assert!(h.reset(ms(100)));
        assert_eq!((h.position().unwrap().level, h.deadline()), (2, Some(timer.now() + ms(100))));
        assert!(timer.next_wakeup().unwrap() <= timer.now() + ms(100));
    }
    step_to(&clock, &timer, ms(139));
    assert!(log.runs().is_empty(), "never before its deadline");
    step_to(&clock, &timer, ms(300));
    assert_eq!(log.runs(), vec![(1, ms(140))]);
    assert_eq!(timer.stats().rearmed, 33);
}

#[test]
fn reset_to_a_passed_deadline_runs_at_the_next_advance_also_mid_tick() {
    let (clock, timer) = manual_timer(ms(10), 8);
    let log = FireLog::default();
    let a = timer.schedule(ms(500), log.task(1, &clock));
    let b = timer.schedule(ms(500), log.task(2, &clock));
    let c = timer.schedule(ms(500), log.task(3, &clock));
    clock.advance(ms(13));
    assert!(a.reset(Duration::ZERO));
    assert!(b.reset_at(timer.now() - ms(13)));
    let long_ago = timer.now().checked_sub(Duration::from_secs(3_600)).unwrap_or(timer.now() - ms(13));
    assert!(c.reset_at(long_ago), "before the clock's origin: already passed");
    assert_eq!(log.count(), 0, "never inside reset");
    timer.advance_clock(Duration::ZERO);
    let mut ids = log.ids();
    ids.sort_unstable();
    assert_eq!(ids, vec![1, 2, 3]);
    assert!(log.runs().iter().all(|&(_, at)| at == ms(13)));
}

#[test]
fn a_task_reset_many_times_keeps_its_closure_and_runs_once() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let runs = Counter::default();
    let drops = Drops::default();
    let value = drops.value();
    let task = runs.task();
    let h = timer.schedule(ms(100), move || {
        let _keep = &value;
        task();
    });
    let before = timer.stats().rearmed;
    let mut rng = common::SplitMix(7);
    for i in 0..1_000u64 {
        // Earlier and later, across levels.
        assert!(h.reset(ms(rng.range(20, 5_000))), "reset {i}");
        assert_eq!(timer.len(), 1);
        clock.advance(ms(rng.range(0, 10)));
        timer.advance_clock(Duration::ZERO);
        assert_eq!(drops.count(), 0, "the closure is kept");
    }
    assert_eq!(timer.stats().rearmed - before, 1_000);
    assert!(h.reset(ms(30)));
    let due = clock.now() + ms(30);
    step_to(&clock, &timer, due - ms(1));
    assert_eq!(runs.get(), 0, "never early");
    step_to(&clock, &timer, due);
    assert_eq!((runs.get(), drops.count()), (1, 1));
    step_to(&clock, &timer, due + Duration::from_secs(10));
    assert_eq!(runs.get(), 1);
    assert_eq!(timer.stats().rearmed - before, 1_001);
}

#[test]
fn reset_of_a_cancelled_task_changes_nothing() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let runs = Counter::default();
    let h = timer.schedule(ms(10), runs.task());
    assert!(h.cancel());
    assert!(!h.reset(ms(1)));
    assert!(!h.reset_at(timer.now()));
    assert!(h.is_cancelled() && timer.is_empty());
    step_to(&clock, &timer, ms(50));
    assert_eq!(runs.get(), 0);
    assert_eq!(timer.stats().rearmed, 0);
}

#[test]
fn a_reset_beyond_the_range_is_refused_and_leaves_the_deadline() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let log = FireLog::default();
    let h = timer.schedule(ms(10), log.task(1, &clock));
    let deadline = h.deadline();
    assert!(!h.reset(Duration::MAX));
    if let Some(far) = timer.now().checked_add(timer.max_delay() + Duration::from_secs(1) + ms(1)) {
        assert!(!h.reset_at(far));
    }
    assert_eq!(h.deadline(), deadline);
    step_to(&clock, &timer, ms(20));
    assert_eq!(log.runs(), vec![(1, ms(10))]);
}

#[test]
fn a_task_resetting_itself_or_its_batch_mate_while_firing_gets_false() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let timer = Arc::new(timer);
    let (tx, rx) = mpsc::channel();
    let mate_runs = Counter::default();
    let mate = Arc::new(timer.schedule(ms(5), mate_runs.task()));
    let slot: Arc<std::sync::Mutex<Option<delaywheel::TimerHandle>>> = Arc::default();
    let (s, m) = (Arc::clone(&slot), Arc::clone(&mate));
    let first = timer.schedule(ms(5), move || {
        let me = s.lock().unwrap().take().unwrap();
        tx.send((me.reset(ms(10)), m.reset(ms(10)))).unwrap();
    });
    *slot.lock().unwrap() = Some(first);
    step_to(&clock, &timer, ms(5));
    // The mate was in the same due batch: firing, so not moved (it may have run first).
    assert_eq!(rx.try_recv().unwrap(), (false, false));
    assert_eq!(mate_runs.get(), 1);
    step_to(&clock, &timer, ms(30));
    assert_eq!(mate_runs.get(), 1);
}

#[test]
fn a_stale_handle_never_moves_the_task_that_reused_its_slot() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let old = timer.schedule(ms(1), || {});
    step_to(&clock, &timer, ms(1));
    assert!(old.is_fired());
    // Schedule (and cancel) until the old slot is reused: its handle then no longer knows how
    // its task ended. The task that reused it, and a few others, stay pending.
    let log = FireLog::default();
    let mut handles = Vec::new();
    for id in 0..100_000 {
        let h = timer.schedule(ms(50), log.task(id, &clock));
        if !old.is_fired() {
            handles.push(h);
            break;
        }
        if id % 1_000 == 0 {
            handles.push(h);
        } else {
            assert!(h.cancel());
        }
    }
    assert!(!old.is_fired(), "the slot was never reused");
    let deadlines: Vec<_> = handles.iter().map(|h| h.deadline()).collect();
    assert!(!old.reset(ms(1)));
    assert!(!old.reset_at(timer.now()));
    assert_eq!(old.deadline(), None);
    assert_eq!(handles.iter().map(|h| h.deadline()).collect::<Vec<_>>(), deadlines);
    step_to(&clock, &timer, ms(50));
    assert_eq!(log.count(), 0, "nothing moved earlier");
    step_to(&clock, &timer, ms(51));
    assert_eq!(log.count(), handles.len());
}

#[test]
fn a_reset_racing_shutdown_loses_nothing() {
    let (_clock, timer) = manual_timer(ms(1), 8);
    let drops = Drops::default();
    let value = drops.value();
    let h = timer.schedule(ms(100), move || drop(value));
    assert!(h.reset(ms(50)));
    let unfired = timer.shutdown();
    assert_eq!(unfired.len(), 1);
    assert!(!h.reset(ms(10)), "abandoned: nothing to move");
    assert!(h.deadline().is_none());
    drop(unfired);
    assert_eq!(drops.count(), 1);
}

#[test]
fn next_wakeup_lets_a_simulation_jump_straight_to_the_work() {
    let (clock, timer) = manual_timer(ms(1), 8);
    assert_eq!(timer.next_wakeup(), None);
    let log = FireLog::default();
    let start = timer.now();
    let due = [ms(3), ms(40), ms(41), ms(700), ms(9_000)];
    for (id, &d) in due.iter().enumerate() {
        timer.schedule_at(start + d, log.task(id, &clock));
    }
    let mut jumps = 0;
    while let Some(next) = timer.next_wakeup() {
        let earliest = due[log.count()];
        assert!(next <= start + earliest, "{:?} is after the earliest task {earliest:?}", next - start);
        assert!(next >= timer.now(), "work left behind");
        clock.advance_to(next - start);
        timer.advance_clock(Duration::ZERO);
        jumps += 1;
        assert!(jumps < 100, "a simulation must not tick through empty slots");
    }
    let fired: Vec<_> = log.runs().into_iter().map(|(_, at)| at).collect();
    assert_eq!(fired, due);
    assert!(timer.is_empty());
}

#[test]
fn next_wakeup_follows_resets_and_cancels() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let start = timer.now();
    let h = timer.schedule(ms(5), || {});
    assert_eq!(timer.next_wakeup(), Some(start + ms(5)));
    assert!(h.reset(ms(2)));
    assert_eq!(timer.next_wakeup(), Some(start + ms(2)));
    assert!(h.cancel());
    assert_eq!(timer.next_wakeup(), None, "nothing pending");
    clock.advance(ms(10));
    assert!(timer.schedule(ms(0), || {}).is_pending());
    assert!(timer.next_wakeup().unwrap() <= timer.now(), "work due now");
}

#[test]
fn a_reset_to_an_earlier_deadline_wakes_a_sleeping_driver() {
    // A driver thread on a manual clock sleeps until the clock moves or an earlier bucket is
    // queued: nothing but the reset's queueing can wake it here.
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(ms(1)).clock(clock.clone()).build();
    let (tx, rx) = mpsc::channel();
    let h = timer.schedule(Duration::from_secs(3_600), move || tx.send(()).unwrap());
    clock.advance(ms(5));
    std::thread::sleep(ms(20)); // the driver goes back to sleep, an hour to wait
    assert!(h.reset_at(timer.now()));
    rx.recv_timeout(Duration::from_secs(30)).expect("the driver was not woken by the reset");
    assert!(h.is_fired());
}

#[test]
fn repeating_reset_moves_the_next_run_and_a_fixed_rate_grid_restarts_there() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let log = FireLog::default();
    let runs = log.clone();
    let c = clock.clone();
    let h = timer.schedule_repeating(ms(10), Repeat::FixedRate(ms(10)), move || {
        runs.task(0, &c)();
    });
    step_to(&clock, &timer, ms(12));
    assert!(h.reset(ms(15))); // the next run at 27, then 37, 47
    step_to(&clock, &timer, ms(47));
    let at: Vec<_> = log.runs().into_iter().map(|(_, at)| at).collect();
    assert_eq!(at, vec![ms(10), ms(27), ms(37), ms(47)]);
    assert!(h.reset_at(timer.now() + ms(2)));
    step_to(&clock, &timer, ms(60));
    let at: Vec<_> = log.runs().into_iter().map(|(_, at)| at).collect();
    assert_eq!(at[4..], [ms(49), ms(59)]);
    assert!(h.cancel());
    assert!(!h.reset(ms(1)), "cancelled");
    assert!(timer.is_empty());
}

#[test]
fn repeating_reset_with_a_fixed_delay() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let log = FireLog::default();
    let runs = log.clone();
    let c = clock.clone();
    let h = timer.schedule_repeating(ms(10), Repeat::FixedDelay(ms(10)), move || runs.task(0, &c)());
    assert!(h.reset(ms(3)));
    step_to(&clock, &timer, ms(23));
    let at: Vec<_> = log.runs().into_iter().map(|(_, at)| at).collect();
    assert_eq!(at, vec![ms(3), ms(13), ms(23)]);
    assert_eq!(h.runs(), 3);
    timer.shutdown();
    assert!(!h.reset(ms(1)), "ended with its timer");
}
