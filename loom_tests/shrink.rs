//! Shrinking: a shrink gives back arena pages whose slots are all free, while handles of the tasks
//! that ended there may still be looking (`src/entry/shrink.rs`, `src/entry/readers.rs`). A handle
//! is pinned while it looks, and a page is freed only after every pin that began before its retire
//! has ended: a handle never touches a freed page (under loom a freed page is kept and marked, and
//! touching it, or freeing it while one of its slots is locked, fails the model). A place a shrink
//! retired is offered to new pages only once the old page is out of the directory, so a page
//! created there is a new one, and a stale handle never finds the new occupant. And a shrink
//! never waits for a closure's drop that waits for it.

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

/// A is cancelled, so its page is empty; task K, due now, shrinks the timer when it runs. The main
/// thread advances the clock (running K, holding the advance lock) while another cancels B, whose
/// closure's drop advances the clock too: waits for that lock, pinned. K's shrink must not wait
/// for that pin (seeded fault `task_shrink_waits`: then neither ever returns).
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

/// A is pending when the main thread drops the timer while a thread looks at A's handle (cancel,
/// reset, status): the drop's drain abandons A (unless the cancel won it first), and its shrink
/// gives back A's page, which the handle keeps the arena of (`src/timer/shrink.rs`, "After a
/// shutdown"). The handle is pinned while it looks, so the page is freed only after it is done,
/// or is left retired when the drop's bounded wait runs out (zero under loom: both ways are
/// explored); A never runs, and its handle finds nothing pending after the drop.
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
/// there (pinned: a grace period waits for it) takes that lock. The drop's shrink (A's page,
/// emptied by the drain, goes back: B's handle keeps the arena) must not wait for that pin for
/// ever (seeded fault `stop_shrink_waits`: then neither ever returns); the page stays retired
/// until the arena goes. (B's closure dropped by the drain, on the main thread, takes no lock.)
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
