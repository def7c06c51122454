//! Slot reuse: entries live in a timer's arena (`src/arena.rs`), and a slot freed by a fire or a
//! cancel is handed to the next schedule. A handle whose task has finished must never touch the
//! task that reuses its slot (the generation check of `src/entry.rs`).

use crate::support::{spawn_advance_then_reuse, OneTask, Runs};

/// A is due; one thread advances (firing A and freeing its slot into that thread's free list) and
/// then schedules B, which reuses the slot; the main thread cancels A meanwhile. Whichever won A,
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
