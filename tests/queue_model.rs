//! Property test of the delay queue of values (`queue::DelayQueue`) against the reference model in
//! `common/queue_model.rs` (shared with the fuzz target `queue_ops`), on a manual timer: random
//! inserts (by delay, by instant, at instants already passed, far future), removes, resets (by
//! delay and by instant) and deadlines of any key, keys given to another queue, clock moves,
//! advances, takes one by one and in batches, clears and shrinks, with values of every size class
//! counting their drops, on timers with and without a capacity and a bound on pending values. What
//! the model checks after every step is in its module docs.
//!
//! `DELAYWHEEL_PROPTEST_CASES` sets the number of cases (default 256).

#[path = "common/queue_model.rs"]
#[allow(dead_code)]
mod queue_model;
#[path = "common/model_runs.rs"]
mod runs;

use proptest::prelude::*;
use queue_model::{check, Op, QueueShape};

fn delay() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![
        3 => (0u64..3).prop_map(Some),
        4 => (0u64..50_000_000).prop_map(Some),
        2 => (0u64..5_000_000_000_000).prop_map(Some),
        1 => (0u64..u64::MAX / 4).prop_map(Some),
        1 => (1u64 << 63..u64::MAX).prop_map(Some), // past an i64 of nanoseconds
        1 => Just(None),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => delay().prop_map(Op::Insert),
        1 => delay().prop_map(Op::InsertPlain),
        2 => (delay(), any::<bool>()).prop_map(|(d, plain)| Op::InsertAt(d.unwrap_or(u64::MAX / 2), plain)),
        1 => prop_oneof![0u64..2_000_000, 0u64..50_000_000].prop_map(Op::InsertPast),
        2 => any::<usize>().prop_map(Op::Remove),
        3 => (any::<usize>(), delay()).prop_map(|(i, d)| Op::Reset(i, d)),
        4 => prop_oneof![Just(0u64), 0u64..2_000, 0u64..20_000_000, 0u64..2_000_000_000, 0u64..10_000_000_000_000]
            .prop_map(Op::Advance),
        1 => prop_oneof![Just(0u64), 0u64..2_000, 0u64..20_000_000].prop_map(Op::MoveClock),
        2 => (0u8..8).prop_map(Op::Take),
        1 => (0u8..16).prop_map(Op::TakeMany),
        1 => any::<usize>().prop_map(Op::Deadline),
        1 => any::<usize>().prop_map(Op::ForeignKey),
        1 => prop_oneof![20 => Just(Op::Shrink), 1 => Just(Op::Clear)],
    ]
}

/// A capacity (none, within a page, or a few pages), now and then a bound on pending values, the
/// values' size class, and in some runs values that panic when dropped.
fn shape() -> impl Strategy<Value = QueueShape> {
    let capacity = prop_oneof![2 => Just(0usize), 1 => 1usize..300, 1 => 256usize..4_096];
    let max_pending = prop_oneof![3 => Just(None), 1 => (0usize..300).prop_map(Some)];
    let values = (any::<u8>(), prop_oneof![3 => Just(false), 1 => Just(true)]);
    (runs::tick_us(), runs::wheel_size(), capacity, max_pending, values).prop_map(
        |(tick_us, wheel_size, capacity, max_pending, (class, drop_panics))| QueueShape {
            tick_us,
            wheel_size,
            capacity,
            max_pending,
            class,
            drop_panics,
        },
    )
}

/// A sequence with at most one shutdown, late in it, so that most operations run on a live timer.
fn ops() -> impl Strategy<Value = Vec<Op>> {
    runs::with_one_late(proptest::collection::vec(op(), 100..400), Just(Op::Shutdown))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: runs::cases(), ..ProptestConfig::default() })]

    #[test]
    fn delay_queue_matches_the_reference_model(shape in shape(), ops in ops()) {
        check(shape, ops).map_err(TestCaseError::fail)?;
    }
}
