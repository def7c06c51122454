//! The `async` feature's `Sleep::reset`, and the drop of a sleep, racing the firing of its task.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
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

/// A sleep due at tick 1, polled once, is dropped while an advance at tick 1 fires its task, and
/// the next sleep made on the same thread, due at tick 3, takes the thread's spare slot if the
/// drop kept one (`src/sleep/slot.rs`). The dropped sleep's waker is woken at most once if its
/// task fired first (once if the firing took the waker before the drop cleared it), never if the
/// drop's cancel won. Either way the old task cannot complete the new sleep: it is
/// not complete after both, completes at tick 3, and nothing is left pending.
#[test]
fn spare_slot_after_fire() {
    loom::model(|| {
        let (clock, timer) = manual_timer(2);
        let mut sleep = timer.sleep(ticks(1));
        let wakes = Arc::new(Wakes::default());
        let waker = Waker::from(Arc::clone(&wakes));
        assert!(Pin::new(&mut sleep).poll(&mut Context::from_waker(&waker)).is_pending());
        clock.advance(ticks(1));
        let advance = spawn_advance(&timer);
        drop(sleep);
        let next = timer.sleep(ticks(2));
        advance.join().unwrap();
        let fired = timer.stats().fired;
        let woken = wakes.0.load(Ordering::SeqCst) as u64;
        assert!(woken <= fired, "the dropped sleep was woken {woken} times, its task fired {fired}");
        assert!(!next.is_elapsed(), "a new sleep completed by the task of a dropped one");
        step(&clock, &timer, 1);
        assert!(!next.is_elapsed(), "completed a tick before its deadline");
        step(&clock, &timer, 1);
        assert!(next.is_elapsed(), "the new sleep never completed");
        drop(next);
        assert!(timer.is_empty());
    });
}

/// Counts its wakes (a std waker: wakes are not loom operations).
#[derive(Default)]
struct Wakes(AtomicUsize);

impl Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}
