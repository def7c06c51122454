//! Slot reuse: entries live in their shard's slab of slots (`src/shard/slab.rs`), and a slot freed
//! by a fire or a cancel is handed to the next schedule into that shard. A handle whose task has
//! finished must never touch the task that reuses its slot: the handle's key carries its entry's
//! stamp, which the slot's life word must match (`src/shard/life.rs`).
//!
//! A thread schedules into the shard of its thread index (`src/shard/core.rs`), so the reuser's
//! schedule takes A's slot only where the timer has one shard (a host of one core); with more, B
//! goes to a shard of its own, and the model checks the stale handle against a live one of
//! another shard (as does `reset::reset_with_stale_ticket`). The reuse within one shard is
//! modelled by `queue::remove_racing_expiry_then_reuse` (its insert on the main thread, into the
//! slot the first value left) and by `shard::cancel_racing_give_back_and_reuse` on the pool.

use crate::support::{spawn_advance_then_reuse, OneTask, Runs};

/// A is due; one thread advances (firing A and freeing its slot) and then schedules B (into A's
/// slot on one shard); the main thread cancels A meanwhile. Whichever won A,
/// the stale handle never cancels B, and B fires exactly once at its own tick.
#[test]
fn stale_cancel_racing_slot_reuse() {
    loom::model(|| {
        let m = OneTask::new(2, 1, 1);
        let b = Runs::default();

        let reuser = spawn_advance_then_reuse(&m.timer, b.task());
        let cancelled = m.handle.cancel();
        let handle_b = reuser.join().unwrap();

        let a = m.runs.count();
        assert_eq!(a + usize::from(cancelled), 1, "A ran {a} times, cancelled: {cancelled}");
        assert!(handle_b.is_pending(), "a stale handle cancelled the task that reused its slot");
        assert!(!m.handle.is_pending());
        assert_eq!(m.timer.len(), 1);
        assert!(!m.handle.cancel(), "a finished task cannot be cancelled again");
        m.step(1);
        assert_eq!(b.count(), 1, "B fires once, at its tick");
        assert!(m.timer.is_empty());
    });
}
