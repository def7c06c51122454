//! Fuzz target: the delay queue's operation language (`tests/common/queue_model.rs`, shared with
//! the property test `tests/queue_model.rs`), decoded from the fuzzer's bytes and checked against
//! the same reference model, with values of every size class counting their drops. See
//! `fuzz/README.md`.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

#[path = "../../tests/common/queue_model.rs"]
#[allow(dead_code)]
mod queue_model;

mod shape;

use queue_model::{check, Op, QueueShape};
use shape::nanos;

fn delay(u: &mut Unstructured<'_>) -> Result<Option<u64>> {
    shape::delay(u, true)
}

fn op(u: &mut Unstructured<'_>) -> Result<Op> {
    // Shutdown is rare (1 in 256): after it every insert is refused.
    Ok(match u.int_in_range(0u8..=255)? {
        0..=59 => Op::Insert(delay(u)?),
        60..=71 => Op::InsertPlain(delay(u)?),
        72..=91 => Op::InsertAt(delay(u)?.unwrap_or(u64::MAX / 2), u.arbitrary()?),
        92..=99 => Op::InsertPast(nanos(u)?),
        100..=119 => Op::Remove(u.arbitrary()?),
        120..=143 => Op::Reset(u.arbitrary()?, delay(u)?),
        144..=147 => Op::Deadline(u.arbitrary()?),
        148..=151 => Op::ForeignKey(u.arbitrary()?),
        152..=191 => Op::Advance(nanos(u)?),
        192..=203 => Op::MoveClock(nanos(u)?),
        204..=229 => Op::Take(u.int_in_range(0..=8)?),
        230..=245 => Op::TakeMany(u.int_in_range(0..=20)?),
        246..=247 => Op::Clear,
        248..=254 => Op::Shrink,
        _ => Op::Shutdown,
    })
}

/// The queue's shape: its timer's (`shape.rs`, with a bound on pending values up to 300), the
/// values' size class, and in a quarter of the runs every third value panics when dropped.
fn shape(u: &mut Unstructured<'_>) -> Result<QueueShape> {
    let (tick_us, wheel_size, capacity, max_pending) = shape::timer(u, 300)?;
    let (class, drop_panics) = (u.arbitrary()?, u.ratio(1u8, 4)?);
    Ok(QueueShape { tick_us, wheel_size, capacity, max_pending, class, drop_panics })
}

fuzz_target!(|data: &[u8]| {
    if let Ok((shape, ops)) = shape::run(data, shape, op) {
        if let Err(failure) = check(shape, ops.clone()) {
            panic!("{failure}\n{shape:?}, ops {ops:?}");
        }
    }
});
