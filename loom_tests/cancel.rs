//! `cancel()` racing the flush that moves an entry, and racing its firing.

use std::time::Duration;

#[cfg(not(delaywheel_core))]
use crate::support::{manual_timer, step, ticks, Runs};
use crate::support::{spawn_advance, OneTask};

/// The entry sits in a level-1 bucket (slots of 2 ticks); at tick 2 that bucket is flushed and the
/// entry cascades into the level-0 bucket of tick 3. A cancel racing that move, whether it finds the
/// entry in the coarse bucket, in transit, or in the fine one, wins: nothing can fire at tick 2, so
/// `cancel()` returns `true` and the task never runs, not even when tick 3 comes.
#[test]
fn cancel_racing_cascade_to_finer_bucket() {
    loom::model(|| {
        let m = OneTask::new(2, 3, 2); // level 1, slot 1, expiration 2

        let advancer = spawn_advance(&m.timer);
        let cancelled = m.handle.cancel();
        advancer.join().unwrap();

        assert!(cancelled, "a pending task that cannot fire yet is cancelled");
        assert!(m.handle.is_cancelled());
        assert!(m.timer.is_empty());
        m.step(1);
        assert_eq!(m.runs.count(), 0, "a cancelled task never runs");
        let stats = m.timer.stats();
        assert_eq!((stats.fired, stats.cancelled, stats.pending), (0, 1, 0));
        assert!(m.timer.shutdown().is_empty());
    });
}

/// The task is due and the advancing thread flushes and fires it while `cancel()` runs: exactly one
/// of "the task ran once" and "cancel returned true", never both, never neither.
#[test]
fn cancel_racing_fire() {
    loom::model(|| {
        let m = OneTask::new(2, 1, 1);

        let advancer = spawn_advance(&m.timer);
        let cancelled = m.handle.cancel();
        advancer.join().unwrap();

        m.timer.advance_clock(Duration::ZERO); // nothing may run late either
        let a = m.runs.count();
        assert_eq!(a + usize::from(cancelled), 1, "ran {a} times, cancelled: {cancelled}");
        assert_eq!(m.handle.is_cancelled(), cancelled);
        assert_eq!(m.handle.is_fired(), !cancelled);
        let stats = m.timer.stats();
        assert_eq!(stats.fired + stats.cancelled, 1);
        assert!(m.timer.is_empty());
    });
}

/// Two cancels race the firing: exactly one of the three parties wins.
#[test]
fn two_cancels_racing_fire() {
    loom::model(|| {
        let m = OneTask::new(2, 1, 1);

        let advancer = spawn_advance(&m.timer);
        let other = {
            let handle = m.handle.clone();
            loom::thread::spawn(move || handle.cancel())
        };
        let cancelled = m.handle.cancel();
        let cancelled_there = other.join().unwrap();
        advancer.join().unwrap();

        let a = m.runs.count();
        let winners = a + usize::from(cancelled) + usize::from(cancelled_there);
        assert_eq!(winners, 1, "ran {a} times, cancels: {cancelled} {cancelled_there}");
        assert!(m.timer.is_empty());
    });
}

/// The entry sits in a level-1 bucket; at tick 3 one advance flushes that bucket (the entry cascades
/// to level 0) and then the level-0 bucket (the entry fires), while `cancel()` races both steps:
/// exactly one of "ran once" and "cancel returned true".
#[test]
fn cancel_racing_cascade_then_fire() {
    loom::model(|| {
        let m = OneTask::new(2, 3, 3); // level 1, slot 1, expiration 2

        let advancer = spawn_advance(&m.timer);
        let cancelled = m.handle.cancel();
        advancer.join().unwrap();

        m.timer.advance_clock(Duration::ZERO);
        let a = m.runs.count();
        assert_eq!(a + usize::from(cancelled), 1, "ran {a} times, cancelled: {cancelled}");
        assert!(m.timer.is_empty());
        assert!(m.timer.shutdown().is_empty());
    });
}

/// A cancel whose entry a cascade brought back into the bucket its ticket names, but in the
/// advancing thread's lane. B (round 1) and C (deadline 3, scheduled with the clock at 2 and the
/// wheel still at 0) share level 0, slot 1, lane 0 (the main thread's). The advance (lane 1) fires B
/// and moves C through level 1 back to level 0 slot 1, lane 1. The cancel, from C's ticket (lane 0),
/// finds it in lane 0, in transit, in level 1, or in lane 1 of its first bucket: it always wins.
// Models the arena's bucket lanes (a cancel following its entry into another lane).
#[cfg(not(delaywheel_core))]
#[test]
fn cancel_racing_readd_into_other_lane_of_same_bucket() {
    loom::model(|| {
        let (clock, timer) = manual_timer(2);
        let (b, c) = (Runs::default(), Runs::default());
        timer.schedule(ticks(1), b.task()); // level 0, slot 1, round 1
        clock.advance(ticks(2)); // the wheel stays at tick 0 until the advance
        let hc = timer.schedule(ticks(1), c.task()); // deadline 3: level 0, slot 1, same stage

        let advancer = spawn_advance(&timer);
        let cancelled = hc.cancel();
        advancer.join().unwrap();

        assert!(cancelled, "C cannot fire before tick 3");
        assert_eq!(b.count(), 1);
        step(&clock, &timer, 1);
        assert_eq!(c.count(), 0, "a cancelled task never runs");
        assert!(timer.is_empty());
        assert!(timer.shutdown().is_empty());
    });
}
