//! Property tests: random operation sequences checked step by step against a reference model.
//!
//! The operation language: schedule (any delay: zero, sub-tick, many levels away, far future),
//! cancel (of any handle, including fired, cancelled and refused ones), reset (re-arm in place, by
//! delay or instant), closures of every size class the timer stores differently (alone and in
//! bursts), `shrink`, advance of the manual clock (zero, sub-tick, multi-level jumps) followed by
//! `advance_clock`, and shutdown, on timers with a capacity and a bound on pending tasks or none.
//! The model is a plain list of deadlines: after every step, exactly the tasks whose deadline tick
//! has begun have fired (and those of the next tick up to a passed deadline that fired mid-tick),
//! each once, none early; `cancel()` and `reset()` return what the model says; every sized closure
//! is dropped once, intact; `len()` is exact (`common/model.rs` has the whole list).
//!
//! `cargo test` runs at least 100 000 operations in total (256 cases of 300–500 operations, a
//! shutdown at most once and only in the last fifth, so nearly all run on a live timer); set
//! `DELAYWHEEL_PROPTEST_CASES` for more.

mod common;
#[path = "common/model_runs.rs"]
mod runs;

use common::model::{check_shape, Op, Shape};
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
        2 => (delay_strategy(), any::<u8>(), 0u8..3)
            .prop_map(|(nanos, class, mode)| Op::ScheduleSized(nanos, class, mode)),
        1 => (0u64..5_000_000_000, 1u16..300, 0u64..50_000_000, any::<u8>())
            .prop_map(|(nanos, count, spread, class)| Op::BurstSized { nanos, count, spread, class }),
        1 => (any::<usize>(), 1u16..400).prop_map(|(i, n)| Op::CancelMany(i, n)),
        1 => Just(Op::Shrink),
    ]
}

/// A capacity (none, within a page, or a few pages) and now and then a bound on pending tasks.
fn shape_strategy() -> impl Strategy<Value = Shape> {
    let capacity = prop_oneof![2 => Just(0usize), 1 => 1usize..300, 1 => 256usize..4_096];
    let max_pending = prop_oneof![3 => Just(None), 1 => (0usize..700).prop_map(Some)];
    (runs::tick_us(), runs::wheel_size(), capacity, max_pending).prop_map(
        |(tick_us, wheel_size, capacity, max_pending)| Shape { tick_us, wheel_size, capacity, max_pending },
    )
}

/// A sequence with at most one shutdown, late in it, called directly or by a task (scheduled
/// there with a short delay, so it runs at one of the next advances): most operations run on a
/// live timer (a shutdown among the ordinary operations ended most cases after a dozen steps).
fn ops_strategy() -> impl Strategy<Value = Vec<Op>> {
    let shutdown =
        prop_oneof![Just(Op::Shutdown), (0u64..5_000_000).prop_map(|n| Op::ShutdownInTask(Some(n)))];
    runs::with_one_late(proptest::collection::vec(op_strategy(), 300..500), shutdown)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: runs::cases(), ..ProptestConfig::default() })]

    #[test]
    fn timer_matches_the_reference_model(shape in shape_strategy(), ops in ops_strategy()) {
        check_shape(shape, ops).map_err(TestCaseError::fail)?;
    }
}
