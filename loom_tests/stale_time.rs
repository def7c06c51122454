//! Scheduling from a stale view of time while another thread moves the clock and the wheel.

use std::time::Duration;

use delaywheel::ManualClock;
use loom::sync::Arc;

use crate::support::{manual_timer, ticks, Runs};

/// Schedulers take no timer-wide lock: one may read the clock, then place its entry relative to a
/// tick the wheel has already left (docs/design.md, "Stale views of time are safe"). Here a thread
/// moves the clock from tick 0 to 1 and advances the wheel while the main thread schedules B one tick
/// ahead. B's deadline is tick 1 or 2, depending on which clock it read; whichever, B fires exactly
/// once and never before the time the main thread saw plus one tick: the wheel files from its own
/// time (the last expiration it flushed), and a deadline at or before that time goes to its
/// shard's overdue list, offered for the next round (`src/shard/wheel/mod.rs`, "Rounds").
#[test]
fn schedule_with_stale_time_racing_advance() {
    loom::model(|| {
        let (clock, timer) = manual_timer(2);
        let a = Runs::default();
        timer.schedule(ticks(1), a.task());

        let mover = {
            let (clock, timer) = (clock.clone(), Arc::clone(&timer));
            loom::thread::spawn(move || {
                clock.advance(ticks(1));
                timer.advance_clock(Duration::ZERO);
            })
        };
        let seen = clock.now();
        let fired_at = FiredAt::default();
        timer.schedule(ticks(1), fired_at.task(&clock));
        mover.join().unwrap();

        assert_eq!(a.count(), 1, "A was due at tick 1");
        clock.advance(ticks(1));
        timer.advance_clock(Duration::ZERO);
        let at = fired_at.get().expect("B fired by tick 2");
        assert!(
            at >= seen + ticks(1),
            "B fired at {at:?}, before its deadline (clock read {seen:?} + 1 tick)"
        );
        assert!(timer.is_empty());
    });
}

/// When a task ran, on the clock. Observation only (see `Runs`).
#[derive(Clone, Default)]
struct FiredAt(std::sync::Arc<std::sync::Mutex<Vec<Duration>>>);

impl FiredAt {
    fn task(&self, clock: &ManualClock) -> impl FnOnce() + Send + 'static {
        let (log, clock) = (self.clone(), clock.clone());
        move || log.0.lock().unwrap().push(clock.now())
    }

    /// The one time the task ran; panics if it ran more than once.
    fn get(&self) -> Option<Duration> {
        let runs = self.0.lock().unwrap();
        assert!(runs.len() <= 1, "ran {} times", runs.len());
        runs.first().copied()
    }
}

/// The stale view the other way round: while the main thread schedules B from tick 0 (deadline 1),
/// another thread moves the clock to tick 2 and schedules C for tick 3 into the same bucket (slot 1
/// serves ticks 1, 3, … on a wheel that has flushed tick 2). On the core a wheel files from its own
/// time, 0 here (nothing was flushed), so B goes to level 0's round 1 and C to level 1's round 2
/// (in the other thread's shard, where the host has more than one core): a bucket's round never
/// goes back. An advance at tick 2 fires every task due by then; `shutdown()` then hands back the
/// rest, each with its deadline.
#[test]
fn stale_schedule_lowers_bucket_expiration() {
    loom::model(|| {
        let (clock, timer) = manual_timer(2);
        let (b, c) = (Runs::default(), Runs::default());

        let mover = {
            let (clock, timer, c) = (clock.clone(), Arc::clone(&timer), c.clone());
            loom::thread::spawn(move || {
                clock.advance(ticks(2));
                timer.schedule(ticks(1), c.task()); // deadline 3: level 0, slot 1
            })
        };
        timer.schedule(ticks(1), b.task()); // deadline 1 or 3, as the clock read
        mover.join().unwrap();

        timer.advance_clock(Duration::ZERO); // at tick 2
        let unfired = timer.shutdown();
        for task in &unfired {
            assert!(task.deadline() > ticks(2), "a task due at {:?} did not fire at tick 2", task.deadline());
        }
        assert_eq!(c.count(), 0, "C is not due before tick 3");
        for task in unfired {
            task.run();
        }
        assert_eq!((b.count(), c.count()), (1, 1));
    });
}
