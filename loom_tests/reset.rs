//! `reset()` racing the firing, a cascade, a cancel, a slot reuse and a shutdown, to an earlier
//! deadline and to a later one. A reset moves the pending entry at once, under its shard's lock,
//! to the bucket of its new deadline (filed from the shard's time, and offered after the unlock:
//! `Handle::reset`, `src/shard/core/handles.rs`); it never moves an entry an advance holds for
//! its batch (it returns `false`), and never claims.

use std::time::Duration;

use crate::support::{
    manual_timer, spawn_advance, spawn_advance_then_reuse, step, ticks, Drops, OneTask, Runs,
};

/// The task is due at tick 1 and the advancing thread fires it while `reset()` moves it to tick 4:
/// either the reset came first (`true`: the task runs once, at tick 4, never before) or the firing
/// did (`false`: it ran once, at tick 1, and nothing moved).
#[test]
fn reset_racing_fire() {
    loom::model(|| {
        let m = OneTask::new(2, 1, 1);

        let advancer = spawn_advance(&m.timer);
        let moved = m.handle.reset(ticks(3));
        advancer.join().unwrap();

        m.timer.advance_clock(Duration::ZERO);
        if moved {
            assert_eq!(m.runs.count(), 0, "a task a true reset moved to tick 4 ran at tick 1");
            m.step(2);
            assert_eq!(m.runs.count(), 0, "ran before the deadline the reset set");
            m.step(1);
        }
        assert_eq!(m.runs.count(), 1, "ran {} times, moved: {moved}", m.runs.count());
        assert!(m.handle.is_fired() && m.timer.is_empty());
        assert_eq!(m.timer.stats().rearmed, u64::from(moved));
    });
}

/// The entry (deadline 7) sits in a level-2 bucket (slots of 4 ticks); at tick 4 the advancing
/// thread cascades it into level 1 while `reset()` moves it earlier, to tick 5: wherever the reset
/// finds it (in its coarse bucket or the finer one), nothing can fire yet, so the reset returns
/// `true`, and the task runs once at tick 5, not later at 6 or 7.
#[test]
fn reset_racing_cascade() {
    loom::model(|| {
        let m = OneTask::new(2, 7, 4); // level 2, slot 1, round 4

        let advancer = spawn_advance(&m.timer);
        let moved = m.handle.reset(ticks(1));
        advancer.join().unwrap();

        assert!(moved, "a pending task that cannot fire yet is moved");
        assert_eq!(m.timer.len(), 1);
        m.timer.advance_clock(Duration::ZERO);
        assert_eq!(m.runs.count(), 0, "ran before the deadline the reset set");
        m.step(1);
        assert_eq!(m.runs.count(), 1, "the task moved to tick 5 did not run at tick 5");
        m.step(2);
        assert_eq!(m.runs.count(), 1, "it runs once");
        assert!(m.timer.is_empty());
    });
}

/// `reset()` and `cancel()` race on a pending task that cannot fire yet (due at tick 3, level 1),
/// the reset moving it to `to`: the cancel wins (the reset never claims), whether the reset moved
/// the task first or comes after; the task never runs, its closure is dropped once, and nothing
/// stays pending.
fn reset_racing_cancel_to(to: u32) {
    loom::model(move || {
        let (clock, timer) = manual_timer(2);
        let (a, drops) = (Runs::default(), Drops::default());
        let handle = timer.schedule(ticks(3), drops.guarding(a.task()));
        let canceller = {
            let handle = handle.clone();
            loom::thread::spawn(move || handle.cancel())
        };
        let moved = handle.reset(ticks(to));
        let cancelled = canceller.join().unwrap();

        assert!(cancelled, "a pending task is cancelled, reset or not");
        assert!(timer.is_empty());
        assert_eq!(drops.count(), 1, "the closure is dropped once (moved: {moved})");
        assert!(!handle.reset(ticks(1)), "a cancelled task cannot be moved");
        for _ in 0..6 {
            step(&clock, &timer, 1);
        }
        assert_eq!(a.count(), 0, "a cancelled task never runs");
        assert!(timer.shutdown().is_empty());
    });
}

/// Earlier (to tick 1, level 0).
#[test]
fn reset_racing_cancel() {
    reset_racing_cancel_to(1);
}

/// Later (to tick 5).
#[test]
fn later_reset_racing_cancel() {
    reset_racing_cancel_to(5);
}

/// The entry (deadline 5) sits in a level-2 bucket (slots of 4 ticks, round 4); at tick 4 the
/// advancing thread cascades it into level 0 while `reset()` moves it later, to tick 9: found in
/// its coarse bucket or in the level-0 bucket of tick 5, it moves to tick 9's bucket, and runs
/// once, at tick 9: not at 5, not later.
#[test]
fn later_reset_racing_cascade() {
    loom::model(|| {
        let m = OneTask::new(2, 5, 4); // level 2, slot 1, round 4

        let advancer = spawn_advance(&m.timer);
        let moved = m.handle.reset(ticks(5));
        advancer.join().unwrap();

        assert!(moved, "a pending task that cannot fire yet is moved");
        for tick in 5..9 {
            m.step(1);
            assert_eq!(m.runs.count(), 0, "ran at tick {tick}, before the deadline the reset set");
            assert_eq!(m.timer.len(), 1);
        }
        m.step(1);
        assert_eq!(m.runs.count(), 1, "the task moved to tick 9 did not run at tick 9");
        m.step(4);
        assert_eq!(m.runs.count(), 1, "it runs once");
        assert!(m.timer.is_empty());
        assert_eq!(m.timer.stats().rearmed, 1);
    });
}

/// A is due; one thread advances (firing A and freeing its slot) and then schedules B (into A's
/// slot where the timer has one shard: `slot_reuse.rs`); the main thread resets A meanwhile. The stale handle
/// never moves B, which fires once at its own tick; A runs once, at tick 1 or, if the reset came
/// first, at tick 6.
#[test]
fn reset_with_stale_ticket() {
    loom::model(|| {
        let m = OneTask::new(2, 1, 1);
        let b = Runs::default();

        let reuser = spawn_advance_then_reuse(&m.timer, b.task());
        let moved = m.handle.reset(ticks(5));
        let handle_b = reuser.join().unwrap();

        assert!(handle_b.is_pending());
        m.step(1);
        assert_eq!(b.count(), 1, "a stale handle moved the task that reused its slot");
        assert_eq!(m.runs.count(), usize::from(!moved), "A ran at tick 1 iff it was not moved");
        if moved {
            for _ in 0..4 {
                m.step(1);
            }
            assert_eq!(m.runs.count(), 1, "A, moved, runs once at tick 6");
        }
        assert!(m.timer.is_empty());
    });
}

/// `reset()` moves a pending task (due at tick 3, level 1) earlier, to tick 1, while another thread
/// shuts the timer down. Wherever the shard's close meets it (in its old bucket, or in the one the
/// reset moved it to; a reset after the close finds nothing pending), the task comes back from
/// `shutdown()` exactly once, never runs, and the accounting holds; its deadline is
/// the new one iff the reset returned `true`.
#[test]
fn earlier_reset_racing_shutdown() {
    loom::model(|| {
        let (_clock, timer) = manual_timer(2);
        let (a, drops) = (Runs::default(), Drops::default());
        let handle = timer.schedule(ticks(3), drops.guarding(a.task()));
        let shutter = {
            let timer = loom::sync::Arc::clone(&timer);
            loom::thread::spawn(move || timer.shutdown())
        };
        let moved = handle.reset(ticks(1));
        let unfired = shutter.join().unwrap();

        assert_eq!(unfired.len(), 1, "handed back once (moved: {moved})");
        assert_eq!(drops.count(), 0, "the closure was dropped, not handed back");
        let expected = if moved { ticks(1) } else { ticks(3) };
        assert_eq!(unfired[0].deadline(), expected, "handed back with the deadline of the reset iff true");
        assert!(!handle.is_pending() && timer.is_empty());
        let stats = timer.stats();
        assert_eq!(stats.fired + stats.cancelled + 1, stats.scheduled, "{stats:?}");
        drop(unfired);
        assert_eq!((a.count(), drops.count()), (0, 1));
    });
}
