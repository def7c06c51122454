//! What the property tests against reference models share: how many cases run, the timer shapes
//! they draw, and how a sequence gets its one late operation (a shutdown, so that most
//! operations run on a live timer).

use std::fmt::Debug;

use proptest::prelude::*;

/// Cases per property: `DELAYWHEEL_PROPTEST_CASES`, or 256.
pub fn cases() -> u32 {
    std::env::var("DELAYWHEEL_PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
}

/// Tick lengths in µs: the finest, fine, coarse, and now and then of 37 min to 28 h (ticks over
/// 2^41 ns keep their deadlines as far words: `deadline.rs`).
pub fn tick_us() -> impl Strategy<Value = u64> {
    prop_oneof![3 => Just(1u64), 3 => 1u64..100, 3 => 100u64..20_000, 1 => 2_199_024u64..100_000_000_000]
}

/// Wheel sizes: the smallest, small (many levels), and ordinary.
pub fn wheel_size() -> impl Strategy<Value = usize> {
    prop_oneof![Just(2usize), 2usize..8, 8usize..128]
}

/// `ops`, with at most one `late` operation inserted in its last fifth.
pub fn with_one_late<T: Clone + Debug>(
    ops: impl Strategy<Value = Vec<T>>,
    late: impl Strategy<Value = T>,
) -> impl Strategy<Value = Vec<T>> {
    (ops, proptest::option::of((0.8f64..1.0, late))).prop_map(|(mut ops, late)| {
        if let Some((at, op)) = late {
            let at = (ops.len() as f64 * at) as usize;
            ops.insert(at, op);
        }
        ops
    })
}
