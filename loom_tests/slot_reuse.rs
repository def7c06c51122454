//! Slot reuse: entries live in a timer's arena (`src/arena.rs`), and a slot freed by a fire or a
//! cancel is handed to the next schedule. A handle whose task has finished must never touch the
//! task that reuses its slot (the generation check of `src/entry.rs`).

use std::time::Duration;

use crate::support::{manual_timer, ticks, Runs};
use loom::sync::Arc;

/// A is due; one thread advances (firing A and freeing its slot into that thread's free list) and
/// then schedules B, which reuses the slot; the main thread cancels A meanwhile. Whichever won A,
/// the stale handle never cancels B, and B fires exactly once at its own tick.
#[test]
fn stale_cancel_racing_slot_reuse() {
    loom::model(|| {
        let (clock, timer) = manual_timer(2);
        let (a, b) = (Runs::default(), Runs::default());
        let handle_a = timer.schedule(ticks(1), a.task());
        clock.advance(ticks(1));

        let reuser = {
            let (timer, b_task) = (Arc::clone(&timer), b.task());
            loom::thread::spawn(move || {
                timer.advance_clock(Duration::ZERO);
                timer.schedule(ticks(1), b_task)
            })
        };
        let cancelled = handle_a.cancel();
        let handle_b = reuser.join().unwrap();

        assert_eq!(
            a.count() + usize::from(cancelled),
            1,
            "A ran {} times, cancelled: {cancelled}",
            a.count()
        );
        assert!(handle_b.is_pending(), "a stale handle cancelled the task that reused its slot");
        assert!(!handle_a.is_pending());
        assert_eq!(timer.len(), 1);
        assert!(!handle_a.cancel(), "a finished task cannot be cancelled again");
        clock.advance(ticks(1));
        timer.advance_clock(Duration::ZERO);
        assert_eq!(b.count(), 1, "B fires once, at its tick");
        assert!(timer.is_empty());
    });
}
