//! Scheduling from a stale view of time while another thread moves the clock and the wheel.

use std::time::Duration;

use delaywheel::ManualClock;
use loom::sync::Arc;

use crate::support::{manual_timer, ticks, Runs};

/// Schedulers take no timer-wide lock: one may read the clock, then place its entry relative to a
/// tick the wheel has already left (docs/design.md, "Stale views of time are safe"). Here a thread
/// moves the clock from tick 0 to 1 and advances the wheel while the main thread schedules B one tick
/// ahead. B's deadline is tick 1 or 2, depending on which clock it read; whichever, B fires exactly
/// once and never before the time the main thread saw plus one tick: the bucket lowering and the
/// re-add through the wheel repair the stale placement.
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
