//! `shutdown()` racing `try_schedule` and `advance_clock`; dropping the timer racing `cancel()`.
//!
//! The stop closes each shard and drains it in one critical section of the shard's lock
//! (`Core::close`, `src/shard/core/shutdown.rs`), and a schedule reads its shard's closed flag in
//! its insert's critical section: it is drained by the close or refused, wherever in the wheel it
//! goes (an existing bucket, or a level or chunk the insert creates, under the same lock).

use std::time::Duration;

use loom::sync::Arc;

use crate::support::{manual_timer, spawn_advance, ticks, Drops, Runs};

/// One thread schedules Y into the existing level 0 and Z into level 1, which it creates, while the
/// main thread shuts the timer down. X was pending before. Every task is accounted for exactly once:
/// it is handed back by `shutdown()`, or its `try_schedule` returned an error; none vanishes, none
/// runs behind the caller's back (nothing advances here, so nothing runs but what `shutdown` returns).
/// Dropping a timer cannot race a schedule on it (`drop` needs the last owner), so `shutdown()` is the
/// race to model; drop runs the same `stop`.
#[test]
fn shutdown_racing_schedule() {
    loom::model(|| {
        let (_clock, timer) = manual_timer(2);
        let (x, y, z) = (Runs::default(), Runs::default(), Runs::default());
        timer.schedule(ticks(1), x.task()); // level 0 exists now

        let scheduler = {
            let (timer, y, z) = (timer.clone(), y.clone(), z.clone());
            loom::thread::spawn(move || {
                let y_ok = timer.try_schedule(ticks(1), y.task()).is_ok(); // existing level 0
                let z_ok = timer.try_schedule(ticks(3), z.task()).is_ok(); // creates level 1
                (y_ok, z_ok)
            })
        };
        let unfired = timer.shutdown();
        let (y_ok, z_ok) = scheduler.join().unwrap();

        assert_eq!(x.count() + y.count() + z.count(), 0, "nothing ran before being handed back");
        let handed_back = unfired.len();
        for task in unfired {
            task.run();
        }
        assert_eq!(x.count(), 1, "X was pending: handed back");
        assert_eq!(y.count(), usize::from(y_ok), "Y: accepted and handed back, or refused");
        assert_eq!(z.count(), usize::from(z_ok), "Z: accepted and handed back, or refused");
        assert_eq!(handed_back, 1 + usize::from(y_ok) + usize::from(z_ok));
        assert!(timer.is_empty());
        let stats = timer.stats();
        let counted = (stats.scheduled, stats.abandoned);
        assert_eq!(counted, (handed_back as u64, handed_back as u64), "refusals count nowhere");
        assert!(timer.try_schedule(ticks(1), || {}).is_err());
        assert!(timer.shutdown().is_empty());
    });
}

/// Two schedulers race into level 1, which neither finds, while the main thread shuts down: each
/// creates level 1 in its shard's wheel (or, on one shard, the second finds it created), under its
/// shard's lock, and reads the closed flag there. So whichever way the creation and the close
/// race, an entry is refused, or linked before the close and drained by it: neither task
/// vanishes.
#[test]
fn shutdown_racing_two_schedules_into_new_level() {
    loom::model(|| {
        let (_clock, timer) = manual_timer(2);
        let (a, b) = (Runs::default(), Runs::default());
        let spawn_schedule = |runs: &Runs, delay| {
            let (timer, runs) = (timer.clone(), runs.clone());
            loom::thread::spawn(move || timer.try_schedule(delay, runs.task()).is_ok())
        };
        let scheduler_a = spawn_schedule(&a, ticks(3)); // level 1, slot 1
        let scheduler_b = spawn_schedule(&b, ticks(2)); // the same bucket
        let unfired = timer.shutdown();
        let (a_ok, b_ok) = (scheduler_a.join().unwrap(), scheduler_b.join().unwrap());

        let handed_back = unfired.len();
        for task in unfired {
            task.run();
        }
        assert_eq!(a.count(), usize::from(a_ok), "A: accepted and handed back, or refused");
        assert_eq!(b.count(), usize::from(b_ok), "B: accepted and handed back, or refused");
        assert_eq!(handed_back, usize::from(a_ok) + usize::from(b_ok));
        assert!(timer.is_empty());
    });
}

/// X is pending in level 0's slot 1 (wheel 4) when one thread schedules Y into slot 3 while the
/// main thread shuts the timer down. Y's insert writes its bucket (and, in a shard that has no
/// level 0 yet, the level and its chunk: `src/shard/wheel/buckets.rs`) under its shard's lock, where
/// it reads the closed flag: Y is refused, or linked before the close and handed back; X is handed
/// back.
#[test]
fn shutdown_racing_schedule_into_new_chunk() {
    loom::model(|| {
        let (_clock, timer) = manual_timer(4);
        let (x, y) = (Runs::default(), Runs::default());
        timer.schedule(ticks(1), x.task()); // level 0, slot 1: the first chunk exists now

        let scheduler = {
            let (timer, y) = (timer.clone(), y.clone());
            // Level 0, slot 3.
            loom::thread::spawn(move || timer.try_schedule(ticks(3), y.task()).is_ok())
        };
        let unfired = timer.shutdown();
        let y_ok = scheduler.join().unwrap();

        let handed_back = unfired.len();
        for task in unfired {
            task.run();
        }
        assert_eq!(x.count(), 1, "X was pending: handed back");
        assert_eq!(y.count(), usize::from(y_ok), "Y: accepted and handed back, or refused");
        assert_eq!(handed_back, 1 + usize::from(y_ok));
        assert!(timer.is_empty());
    });
}

/// The advancing thread fires a due task while the main thread shuts down: the task runs once (it
/// was claimed first), or is handed back unrun by `shutdown()` (the drain claimed it first), never
/// both, never neither. A task not yet due is always handed back.
#[test]
fn shutdown_racing_advance() {
    loom::model(|| {
        let (clock, timer) = manual_timer(2);
        let (due, later) = (Runs::default(), Runs::default());
        timer.schedule(ticks(1), due.task());
        timer.schedule(ticks(3), later.task());
        clock.advance(ticks(1));

        let advancer = spawn_advance(&timer);
        let unfired = timer.shutdown();
        advancer.join().unwrap();

        let ran_before_shutdown = due.count();
        let handed_back = unfired.len();
        assert_eq!(later.count(), 0, "LATER was not due");
        for task in unfired {
            task.run();
        }
        assert_eq!(due.count(), 1, "DUE ran once, or was handed back");
        assert_eq!(later.count(), 1, "LATER was handed back");
        assert_eq!(handed_back, 2 - ran_before_shutdown);
        assert!(timer.is_empty());
        let stats = timer.stats();
        let counted = (stats.fired, stats.abandoned, stats.scheduled);
        assert_eq!(
            counted,
            (ran_before_shutdown as u64, handed_back as u64, 2),
            "each counted once, by its end"
        );
        assert!(!timer.advance_clock(Duration::ZERO), "a shut-down timer does not advance");
    });
}

/// Dropping a timer cannot race a schedule on it, but it can race a `cancel()` through a handle, which
/// does not keep the timer alive. The task never runs, `cancel()` returns `true` iff it won against
/// the drop's drain, and the closure (with what it captured) is dropped exactly once, whoever drops it.
#[test]
fn drop_racing_cancel() {
    loom::model(|| {
        let (_clock, timer) = manual_timer(2);
        let (runs, drops) = (Runs::default(), Drops::default());
        let handle = timer.schedule(ticks(1), drops.guarding(runs.task()));

        let canceller = {
            let handle = handle.clone();
            loom::thread::spawn(move || handle.cancel())
        };
        drop(timer); // the last owner: `Timer::drop` runs here
        let cancelled = canceller.join().unwrap();

        assert_eq!(runs.count(), 0, "a dropped timer runs nothing");
        assert_eq!(drops.count(), 1, "the closure is dropped exactly once");
        // (The handle outlives the timer: once the drop gave its shard back, the handle knows
        // only that the task ended, as `TimerHandle::is_cancelled` says.)
        assert!(!handle.is_cancelled() || cancelled, "cancelled by the drop's drain");
        assert!(!handle.is_pending());
    });
}

/// Two threads shut the timer down at once: the pending task is handed back by exactly one of the
/// calls (whichever drained it first), and both return.
#[test]
fn two_shutdowns_racing() {
    loom::model(|| {
        let (_clock, timer) = manual_timer(2);
        let x = Runs::default();
        timer.schedule(ticks(1), x.task());

        let other = {
            let timer = Arc::clone(&timer);
            loom::thread::spawn(move || timer.shutdown())
        };
        let here = timer.shutdown();
        let there = other.join().unwrap();

        assert_eq!(here.len() + there.len(), 1, "handed back exactly once");
        for task in here.into_iter().chain(there) {
            task.run();
        }
        assert_eq!(x.count(), 1);
        assert!(timer.is_empty());
    });
}

/// A task shuts its own timer down (from inside `advance_clock`: the stop needs no advance lock,
/// `src/timer/stop.rs`) while another thread schedules B for a later tick: B is handed
/// back by that `shutdown()` call or refused, never lost.
#[test]
fn shutdown_from_a_task_racing_schedule() {
    loom::model(|| {
        let (clock, timer) = manual_timer(2);
        let handed_back = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        {
            let (timer_in_task, handed_back) = (Arc::clone(&timer), handed_back.clone());
            timer.schedule(ticks(1), move || handed_back.lock().unwrap().extend(timer_in_task.shutdown()));
        }
        clock.advance(ticks(1));
        let b = Runs::default();

        let scheduler = {
            let (timer, b) = (Arc::clone(&timer), b.clone());
            loom::thread::spawn(move || timer.try_schedule(ticks(1), b.task()).is_ok())
            // deadline 2
        };
        assert!(timer.advance_clock(Duration::ZERO)); // runs the shutting-down task
        let b_ok = scheduler.join().unwrap();

        assert_eq!(b.count(), 0, "nothing runs after the shutdown");
        let unfired = std::mem::take(&mut *handed_back.lock().unwrap());
        assert_eq!(unfired.len(), usize::from(b_ok));
        for task in unfired {
            task.run();
        }
        assert_eq!(b.count(), usize::from(b_ok), "B: accepted and handed back, or refused");
        assert!(timer.is_empty());
    });
}

/// A shutdown that does not wait for the advance (`shutdown_timeout(ZERO)`, as a drop or a
/// shutdown from a driver inside a task) races an advance that, at tick 2, fires Y and cascades X
/// from level 1 into level 0. Each shard's close drains it under its lock, held entries too, so
/// wherever the close finds them (in the level-1 bucket, Y held by the advance's batch, X refiled
/// in level 0) Y runs once (claimed before the close) or is handed back, X (due at tick 3) is
/// handed back, nothing stays pending, and the claims after the close find nothing.
#[test]
fn detached_drain_racing_a_cascade() {
    loom::model(|| {
        let (clock, timer) = manual_timer(2);
        let (x, y) = (Runs::default(), Runs::default());
        timer.schedule(ticks(3), x.task()); // level 1, slot 1 (round 2); level 0 from tick 2
        timer.schedule(ticks(2), y.task()); // the same bucket, due at its round
        clock.advance(ticks(2));

        // The advance on this thread, the close on the other: the close can come between the
        // advance's flush and its claim of Y.
        let drainer = {
            let timer = Arc::clone(&timer);
            loom::thread::spawn(move || timer.shutdown_timeout(Duration::ZERO))
        };
        timer.advance_clock(Duration::ZERO);
        let unfired = drainer.join().unwrap();

        let (ran_y, handed_back) = (y.count(), unfired.len());
        assert_eq!(x.count(), 0, "X was not due");
        for task in unfired {
            task.run();
        }
        assert_eq!((x.count(), y.count()), (1, 1), "each ran once or was handed back once");
        assert_eq!(handed_back, 2 - ran_y);
        assert!(timer.is_empty());
        let stats = timer.stats();
        assert_eq!(stats.fired + handed_back as u64, stats.scheduled, "{stats:?}");
        // (A drop's close is the last drain: what it left in a bucket would never be released.)
        assert!(stats.pending_per_level.iter().all(|&n| n == 0), "left in a bucket: {stats:?}");
    });
}
