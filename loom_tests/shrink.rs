//! Shrinking: a shrink gives back arena pages whose slots are all free, while handles of the tasks
//! that ended there may still be looking (`src/entry/shrink.rs`, `src/entry/readers.rs`). A handle
//! is pinned while it looks, and a page is freed only after every pin that began before its retire
//! has ended: a handle never touches a freed page (under loom a freed page is kept and marked, and
//! touching it, or freeing it while one of its slots is locked, fails the model). A place a shrink
//! retired is offered to new pages only once the old page is out of the directory, so a page
//! created there is a new one, and a stale handle never finds the new occupant.

use loom::sync::Arc;
use loom::thread;

use crate::support::{OneTask, Runs};

/// A is cancelled (its slot, alone in its page under loom, is free); a thread looks at A's handle
/// again (cancel, reset, status) while the main thread shrinks the timer, giving A's page back.
/// The stale handle finds nothing pending whichever comes first; the page is then created anew
/// for B, which A's handle does not see either, and B fires once.
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
