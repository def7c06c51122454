//! Property tests: random operation sequences checked step by step against a reference model.
//!
//! The operation language: schedule (any delay: zero, sub-tick, many levels away, far future),
//! cancel (of any handle, including fired, cancelled and refused ones), reset (re-arm in place, by
//! delay or instant), advance of the manual clock
//! (zero, sub-tick, multi-level jumps) followed by `advance_clock`, and shutdown. The model is a plain
//! list of deadlines: after every step, exactly the tasks whose deadline tick has begun have fired,
//! each once, none early; `cancel()` and `reset()` return what the model says; `len()` is exact.
//!
//! `cargo test` runs at least 100 000 operations in total (256 cases of 300–500 operations, a
//! shutdown at most once and only in the last fifth, so nearly all run on a live timer); set
//! `DELAYWHEEL_PROPTEST_CASES` for more.

mod common;

use common::model::{check, Op};
use proptest::prelude::*;

fn delay_strategy() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![
        3 => (0u64..3).prop_map(Some),                                  // zero and sub-µs
        4 => (0u64..50_000_000).prop_map(Some),                          // within tens of ms
        3 => (0u64..5_000_000_000_000).prop_map(Some),                   // up to ~80 min
        1 => (0u64..u64::MAX / 4).prop_map(Some),                        // centuries
        1 => Just(None),                                                 // Duration::MAX
    ]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => delay_strategy().prop_map(Op::Schedule),
        1 => prop_oneof![0u64..2_000_000, 0u64..50_000_000].prop_map(Op::SchedulePast),
        1 => delay_strategy().prop_map(Op::SchedulePanicking),
        1 => delay_strategy().prop_map(Op::ScheduleDropPanicking),
        3 => any::<usize>().prop_map(Op::Cancel),
        3 => (any::<usize>(), delay_strategy()).prop_map(|(i, nanos)| Op::Reset(i, nanos)),
        4 => prop_oneof![
            Just(0u64),
            0u64..2_000,
            0u64..20_000_000,
            0u64..2_000_000_000,
            0u64..10_000_000_000_000,
        ]
        .prop_map(Op::Advance),
        2 => prop_oneof![Just(0u64), 0u64..2_000, 0u64..20_000_000, 0u64..5_000_000_000]
            .prop_map(Op::MoveClock),
        // Rare, big: one narrow band of deadlines, enough to make a stage big (staged cascade).
        1 => (delay_strategy(), 200u16..600, prop_oneof![Just(0u64), 0u64..50_000_000])
            .prop_map(|(nanos, count, spread)| Op::Burst { nanos: nanos.unwrap_or(u64::MAX), count, spread }),
        1 => (1u8..20).prop_map(Op::ZeroChain),
    ]
}

/// A sequence with at most one shutdown, late in it, called directly or by a task (scheduled
/// there with a short delay, so it runs at one of the next advances): most operations run on a
/// live timer (a shutdown among the ordinary operations ended most cases after a dozen steps).
fn ops_strategy() -> impl Strategy<Value = Vec<Op>> {
    let shutdown =
        prop_oneof![Just(Op::Shutdown), (0u64..5_000_000).prop_map(|n| Op::ShutdownInTask(Some(n)))];
    let at = proptest::option::of((0.8f64..1.0, shutdown));
    (proptest::collection::vec(op_strategy(), 300..500), at).prop_map(|(mut ops, shutdown_at)| {
        if let Some((at, shutdown)) = shutdown_at {
            let at = (ops.len() as f64 * at) as usize;
            ops.insert(at, shutdown);
        }
        ops
    })
}

fn cases() -> u32 {
    std::env::var("DELAYWHEEL_PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn timer_matches_the_reference_model(
        tick_us in prop_oneof![Just(1u64), 1u64..100, 100u64..20_000],
        wheel_size in prop_oneof![Just(2usize), 2usize..8, 8usize..128],
        ops in ops_strategy(),
    ) {
        check(tick_us, wheel_size, ops).map_err(TestCaseError::fail)?;
    }
}
