//! The `async` feature's `Sleep::reset`, and the drop of a sleep, racing the firing of its task.

use std::time::Duration;

use crate::support::{manual_timer, spawn_advance, step, ticks};

/// A sleep due at tick 1 is reset to tick 3 while an advance at tick 1 fires its task. Whether the
/// reset moves the pending task in place or finds it fired (or firing) and schedules a new one, the
/// sleep is not complete after both (its new deadline has not come), completes at tick 3, and
/// leaves nothing pending.
#[test]
fn reset_racing_fire() {
    loom::model(|| {
        let (clock, timer) = manual_timer(2);
        let mut sleep = timer.sleep(ticks(1));
        clock.advance(ticks(1));
        let advance = spawn_advance(&timer);
        sleep.reset(timer.now() + ticks(2));
        advance.join().unwrap();
        assert!(!sleep.is_elapsed(), "a reset sleep completed before its new deadline");
        clock.advance(ticks(1));
        timer.advance_clock(Duration::ZERO);
        assert!(!sleep.is_elapsed(), "completed a tick before its new deadline");
        clock.advance(ticks(1));
        timer.advance_clock(Duration::ZERO);
        assert!(sleep.is_elapsed(), "the reset sleep never completed");
        drop(sleep);
        assert!(timer.is_empty());
    });
}

/// A sleep due at tick 1 is dropped while an advance at tick 1 fires its task, and the next sleep
/// made on the same thread, due at tick 3, takes the thread's spare slot if the drop kept one
/// (`src/sleep/slot.rs`). Whether the drop's cancel wins or the task fires first, the old task
/// cannot complete the new sleep: it is not complete after both, completes at tick 3, and nothing
/// is left pending.
#[test]
fn spare_slot_after_fire() {
    loom::model(|| {
        let (clock, timer) = manual_timer(2);
        let sleep = timer.sleep(ticks(1));
        clock.advance(ticks(1));
        let advance = spawn_advance(&timer);
        drop(sleep);
        let next = timer.sleep(ticks(2));
        advance.join().unwrap();
        assert!(!next.is_elapsed(), "a new sleep completed by the task of a dropped one");
        step(&clock, &timer, 1);
        assert!(!next.is_elapsed(), "completed a tick before its deadline");
        step(&clock, &timer, 1);
        assert!(next.is_elapsed(), "the new sleep never completed");
        drop(next);
        assert!(timer.is_empty());
    });
}
