//! `cancel()` racing the flush that moves an entry, and racing its firing.

use std::time::Duration;

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
