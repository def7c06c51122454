//! Shrinking and dropping a timer while handles and closures' drops race it. A shrink gives back
//! each shard's vacant slots after its last occupied one under the shard's lock (`Core::shrink`,
//! `src/timer/stop.rs`, "Shrink"); a drop's stop closes and drains every shard. A handle
//! that outlives its timer finds nothing (its shard's header goes back to the pool under a new
//! epoch, which the handle's lock compares: `src/shard/pool.rs`), and neither a shrink nor a drop
//! waits for a closure's drop that waits for it.

use std::time::Duration;

use delaywheel::Timer;
use loom::sync::Arc;
use loom::thread;

use crate::support::{ticks, OneTask, Runs};

/// A task whose closure, dropped unrun (by the `cancel` that wins it), calls `then` on `timer`.
fn calls_when_dropped(timer: &Arc<Timer>, then: fn(&Timer)) -> impl FnOnce() + Send + 'static {
    struct OnDrop(Arc<Timer>, fn(&Timer));
    impl Drop for OnDrop {
        fn drop(&mut self) {
            (self.1)(&self.0);
        }
    }
    let guard = OnDrop(Arc::clone(timer), then);
    move || drop(guard)
}

/// A is cancelled, so its slot is vacant; task K, due now, shrinks the timer when it runs. The main
/// thread advances the clock (running K, holding the advance lock) while another cancels B, whose
/// closure's drop advances the clock too: it waits for that lock, or finds an advance running on
/// no thread of its own and returns. K's shrink takes only the shards' locks, which the cancel
/// released before it dropped B's closure: both threads return, and K runs once.
#[test]
fn shrink_in_a_task_racing_a_cancelled_closures_drop_that_advances() {
    loom::model(|| {
        let m = OneTask::new(2, 2, 0);
        let advance = |timer: &Timer| {
            let _ = timer.advance_clock(Duration::ZERO);
        };
        let b = m.timer.schedule(ticks(2), calls_when_dropped(&m.timer, advance));
        let timer = Arc::clone(&m.timer);
        let k = Runs::default();
        let k_task = k.task();
        m.timer.schedule(Duration::ZERO, move || {
            k_task();
            timer.shrink();
        });
        // After B's and K's schedules, which would take A's slot again.
        assert!(m.handle.cancel());
        let canceller = thread::spawn(move || b.cancel());
        m.timer.advance_clock(Duration::ZERO);
        assert!(canceller.join().unwrap(), "B was pending");
        assert_eq!(k.count(), 1, "K ran once, in one of the two advances");
        assert!(m.timer.is_empty());
    });
}

/// A is pending when the main thread drops the timer while a thread cancels and resets A's handle:
/// the cancel wins A, or the drop's drain takes it first. After the drop the handle finds nothing
/// pending and cancels nothing (its shard went back to the pool, its epoch moved), and A never
/// runs.
#[test]
fn stale_handle_racing_a_dropped_timers_shrink() {
    loom::model(|| {
        let OneTask { clock, timer, handle, runs } = OneTask::new(2, 2, 0);
        let looker_handle = handle.clone();
        let looker = thread::spawn(move || {
            let cancelled = looker_handle.cancel();
            let _ = looker_handle.reset(ticks(1));
            cancelled
        });
        drop(timer);
        let _cancelled = looker.join().unwrap();
        assert!(!handle.is_pending() && !handle.cancel(), "A outlived its timer");
        assert_eq!(runs.count(), 0, "A never runs");
        drop(clock);
    });
}

/// The main thread drops the timer holding a lock, while another cancels B, whose closure's drop
/// on that thread takes that lock. The drop's stop drains and gives back without waiting for any
/// closure's drop (the cancel drops B's closure after its shard's unlock), so both threads return
/// and A never runs. (B's closure dropped by the drain, on the main thread, takes no lock.)
#[test]
fn dropped_timers_shrink_racing_a_cancelled_closures_drop_that_waits_for_it() {
    loom::model(|| {
        let OneTask { clock, timer, handle, runs } = OneTask::new(2, 2, 0);
        let lock = Arc::new(loom::sync::Mutex::new(()));
        let in_drop = Arc::clone(&lock);
        let guard = OnDropLock(in_drop);
        let b = timer.schedule(ticks(2), move || drop(guard));
        let canceller = thread::spawn(move || {
            CANCELLER.with(|canceller| canceller.set(true));
            b.cancel()
        });
        let held = lock.lock().unwrap();
        drop(timer);
        drop(held);
        let _cancelled = canceller.join().unwrap();
        assert!(!handle.is_pending() && runs.count() == 0);
        drop(clock);
    });
}

loom::thread_local! {
    /// Whether this model thread is the canceller.
    static CANCELLER: std::cell::Cell<bool> = std::cell::Cell::new(false);
}

/// Takes its lock when dropped on the canceller's thread.
struct OnDropLock(Arc<loom::sync::Mutex<()>>);

impl Drop for OnDropLock {
    fn drop(&mut self) {
        if CANCELLER.with(std::cell::Cell::get) {
            drop(self.0.lock().unwrap());
        }
    }
}
