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

/// A is cancelled (its slot, alone in its page under loom, is free); a thread looks at A's handle
/// again (cancel, reset, status) while the main thread shrinks the timer, giving A's page back.
/// The stale handle finds nothing pending whichever comes first; the page is then created anew
/// for B, which A's handle does not see either, and B fires once.
// Models the arena's page directory (a page freed under a pinned handle).
#[cfg(not(delaywheel_core))]
#[test]
fn stale_handle_racing_a_shrink() {
    loom::model(|| {
        let m = OneTask::new(2, 2, 0);
        assert!(m.handle.cancel());
        let stale = m.handle.clone();
        let looker = thread::spawn(move || {
            let cancelled = stale.cancel();
            let moved = stale.reset(crate::support::ticks(1));
            (cancelled, moved, stale.is_pending())
        });
        m.timer.shrink();
        let (cancelled, moved, pending) = looker.join().unwrap();
        assert!(!cancelled && !moved && !pending, "a cancelled task's handle found it pending");

        let b = Runs::default();
        let handle_b = m.timer.schedule(crate::support::ticks(1), b.task());
        assert!(handle_b.is_pending() && !m.handle.is_pending() && !m.handle.cancel());
        m.step(1);
        assert_eq!((b.count(), m.runs.count()), (1, 0), "B fires once, A never");
        assert!(m.timer.is_empty());
    });
}

/// A is cancelled, so its page (one slot under loom) is empty. The main thread shrinks the timer
/// while another schedules B and then looks at A's stale handle. B takes either a new index (the
/// shrink has not offered A's place yet) or A's place: `fresh_page` creates a page there anew, at
/// generation 0, while the retired one may still wait for its grace period. Whichever comes first,
/// the stale handle never finds B (its cancel does not take B, it sees nothing pending), no index
/// leaves the arena's pages (each lookup of a retired place finds the vacant stand-in), B stays
/// pending and fires once, A never.
// Models the arena's page directory (a retired page's place reused).
#[cfg(not(delaywheel_core))]
#[test]
fn schedule_creates_a_page_in_the_place_a_shrink_retires() {
    loom::model(|| {
        let m = OneTask::new(2, 2, 0);
        assert!(m.handle.cancel());
        let stale = m.handle.clone();
        let timer = Arc::clone(&m.timer);
        let b = Runs::default();
        let task_b = b.task();
        let scheduler = thread::spawn(move || {
            let handle_b = timer.schedule(crate::support::ticks(1), task_b);
            let found = stale.cancel() || stale.is_pending();
            (handle_b, found)
        });
        m.timer.shrink();
        let (handle_b, found) = scheduler.join().unwrap();
        assert!(!found, "A's stale handle found a pending task");
        assert!(handle_b.is_pending(), "B was lost: its page was retired");
        m.step(1);
        assert_eq!((b.count(), m.runs.count()), (1, 0), "B fires once, A never");
        assert!(m.timer.is_empty());
    });
}

/// A is cancelled, so its page (one slot) is empty. B's closure, dropped by the cancel the main
/// thread wins (pinned: a shrink's grace period waits for it), shrinks the timer, while another
/// thread shrinks it too. A shrink in its grace period holds the lock of the pages it retired
/// while it waits for that pin; the pinned thread must not shrink (seeded fault
/// `pinned_shrink_proceeds`: it waits for that lock, and neither ever returns).
// Models the arena's shrink grace period (a pinned thread's shrink).
#[cfg(not(delaywheel_core))]
#[test]
fn shrink_in_a_cancelled_closures_drop_racing_a_shrink() {
    loom::model(|| {
        let m = OneTask::new(2, 2, 0);
        let b = m.timer.schedule(ticks(2), calls_when_dropped(&m.timer, Timer::shrink));
        // After B's schedule, which would take A's slot again.
        assert!(m.handle.cancel());
        let timer = Arc::clone(&m.timer);
        let shrinker = thread::spawn(move || timer.shrink());
        assert!(b.cancel(), "B was pending");
        shrinker.join().unwrap();
        assert!(m.timer.is_empty() && !m.handle.is_pending());
    });
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
