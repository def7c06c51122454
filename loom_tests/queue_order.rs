//! The delay queue of values: deadline order across batches (`src/queue/ready/order.rs`).
//!
//! A manual timer of wheel size 2 on a `ManualClock`. An advance expires two values; a consumer
//! takes the first, which moves the second to the consumers' side. Then a value is inserted at a
//! deadline already passed, due before the one waiting: one thread advances the timer (the value
//! expires in a batch of its own, out of order), the other takes.

use std::time::Duration;

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;

use crate::support::{manual_queue, ticks};

/// A take ordered after the advance (it saw the advance's flag) gets the value due first, the one
/// that expired last; a take racing the advance may get either; every value comes out once.
#[test]
fn an_out_of_order_batch_racing_a_take() {
    loom::model(|| {
        let (clock, queue) = manual_queue();
        queue.insert(2u8, ticks(2));
        queue.insert(3, ticks(3));
        clock.advance(ticks(3));
        queue.advance_clock(Duration::ZERO);
        assert_eq!(queue.try_recv().map(|e| e.into_inner()), Some(2));
        queue.insert_at(1, queue.timer().now() - ticks(2));

        let advanced = Arc::new(AtomicBool::new(false));
        let advancer = {
            let (queue, advanced) = (Arc::clone(&queue), Arc::clone(&advanced));
            loom::thread::spawn(move || {
                queue.advance_clock(Duration::ZERO);
                advanced.store(true, Ordering::Release);
            })
        };
        let after = advanced.load(Ordering::Acquire);
        let first = queue.try_recv().expect("a value waits").into_inner();
        if after {
            assert_eq!(first, 1, "a take after the advance got a value due later");
        }
        advancer.join().unwrap();
        let rest: Vec<u8> = std::iter::from_fn(|| queue.try_recv()).map(|e| e.into_inner()).collect();
        let expected: &[u8] = if first == 1 { &[3] } else { &[1] };
        assert_eq!(rest, expected, "a value lost or taken twice");
        assert!(queue.is_empty());
    });
}
