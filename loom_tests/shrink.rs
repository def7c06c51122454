//! Shrinking: a shrink gives back arena pages whose slots are all free, while handles of the tasks
//! that ended there may still be looking (`src/entry/shrink.rs`, `src/entry/readers.rs`). A handle
//! is pinned while it looks, and a page is freed only after every pin that began before its retire
//! has ended: a handle never touches a freed page (under loom a freed page is kept and marked, and
//! touching it, or freeing it while one of its slots is locked, fails the model).

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
