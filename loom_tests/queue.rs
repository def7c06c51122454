//! The delay queue of values (`delaywheel::queue`): a `remove`, and a `reset`, racing the expiry of
//! the same value.
//!
//! A manual timer of wheel size 2 on a `ManualClock`, one value due now, two threads: one advances
//! the timer (its firing claims the value's entry and hands the value to the ready list), the other
//! removes the value and inserts a second one, due later, into the same shard (the main thread's),
//! where it may take the slot the first one left (`src/shard/slab.rs`), then removes by the first
//! key again, or re-arms it. Values are plain integers: what the models check is where each ends
//! up, and when.

use std::time::Duration;

use loom::sync::Arc;

use crate::support::{manual_queue, ticks};

/// Exactly one of "`remove` returned the value" and "a consumer took it" happens, whichever of the
/// remove's cancel and the firing claims the entry first; and the first key, stale once its value
/// left, never takes the later value that reused its slot: that one stays pending, never early,
/// and `len()` counts exactly it.
#[test]
fn remove_racing_expiry_then_reuse() {
    loom::model(|| {
        let (clock, queue) = manual_queue();
        let first = queue.insert(1, ticks(1));
        clock.advance(ticks(1));

        let advancer = {
            let queue = Arc::clone(&queue);
            loom::thread::spawn(move || queue.advance_clock(Duration::ZERO))
        };
        let removed = queue.remove(&first);
        let second = queue.insert(2, ticks(5));
        assert_eq!(queue.remove(&first), None, "a stale key took the later value");
        advancer.join().unwrap();

        let expired: Vec<u8> = std::iter::from_fn(|| queue.try_recv()).map(|e| e.into_inner()).collect();
        match removed {
            Some(value) => assert_eq!(
                (value, expired.as_slice()),
                (1, &[][..]),
                "expired after its remove, or the later value taken early"
            ),
            None => assert_eq!(expired, [1], "neither removed nor expired, or expired with the later value"),
        }
        assert_eq!(queue.len(), 1, "the later value alone is left");
        assert_eq!(queue.remove(&second), Some(2), "the later value was taken early");
    });
}

/// A reset racing the expiry of the same value: either the reset moved it (it returned `true`: the
/// value comes out only at the new deadline, carrying it) or the value expired at its first
/// deadline and the reset returned `false`, changing nothing. Never both, never neither.
#[test]
fn reset_racing_expiry() {
    loom::model(|| {
        let (clock, queue) = manual_queue();
        let start = queue.timer().now();
        let key = queue.insert(1, ticks(1));
        clock.advance(ticks(1));

        let advancer = {
            let queue = Arc::clone(&queue);
            loom::thread::spawn(move || queue.advance_clock(Duration::ZERO))
        };
        let moved = queue.reset_at(&key, start + ticks(3));
        advancer.join().unwrap();

        let first = queue.try_recv();
        if moved {
            assert!(first.is_none(), "moved, yet expired at its old deadline");
            clock.advance(ticks(2));
            queue.advance_clock(Duration::ZERO);
        }
        let expired = first.or_else(|| queue.try_recv()).expect("the value came out");
        let now = queue.timer().now();
        assert!(expired.deadline() <= now, "came out before the deadline it carries");
        assert_eq!(expired.deadline(), if moved { start + ticks(3) } else { start + ticks(1) });
        assert!(queue.is_empty());
    });
}

/// A `remove` racing the timer's shutdown, with a second value expired and not yet taken: the
/// pending value goes to exactly one of them (the remove's cancel or the shutdown's drain claims
/// it), and either way it leaves `len()`, which ends at the expired value alone.
#[test]
fn remove_racing_shutdown_leaves_len_exact() {
    loom::model(|| {
        let (clock, queue) = manual_queue();
        let expired = queue.insert(1, ticks(1));
        let pending = queue.insert(2, ticks(5));
        clock.advance(ticks(1));
        queue.advance_clock(Duration::ZERO);

        let shutdown = {
            let queue = Arc::clone(&queue);
            loom::thread::spawn(move || queue.timer().shutdown().len())
        };
        let removed = queue.remove(&pending);
        let handed_back = shutdown.join().unwrap();

        assert_eq!(usize::from(removed.is_some()) + handed_back, 1, "the pending value went to one side");
        assert!(matches!(removed, None | Some(2)), "removed the wrong value");
        assert_eq!(queue.remove(&expired), None, "an expired value is not removed");
        assert_eq!(queue.len(), 1, "len after the shutdown: the expired value alone");
        assert_eq!(queue.try_recv().map(|e| e.into_inner()), Some(1));
        assert!(queue.is_empty());
    });
}

/// Two shutdowns of the queue's timer at once: the pending value's count leaves `len()` once,
/// whichever drain claimed it and whichever shutdown hands the count over.
#[test]
fn two_shutdowns_count_a_pending_value_out_once() {
    loom::model(|| {
        let (clock, queue) = manual_queue();
        queue.insert(1, ticks(1));
        queue.insert(2, ticks(5));
        clock.advance(ticks(1));
        queue.advance_clock(Duration::ZERO);

        let other = {
            let queue = Arc::clone(&queue);
            loom::thread::spawn(move || queue.timer().shutdown().len())
        };
        let here = queue.timer().shutdown().len();
        assert_eq!(here + other.join().unwrap(), 1, "the pending value handed back once");
        assert_eq!(queue.len(), 1, "len after the shutdowns: the expired value alone");
    });
}
