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

use queue_model::{check, Op, QueueShape};

fn delay(u: &mut Unstructured<'_>) -> Result<Option<u64>> {
    Ok(match u.int_in_range(0u8..=11)? {
        0..=2 => Some(u.int_in_range(0..=2)?),
        3..=6 => Some(u.int_in_range(0..=50_000_000)?),
        7..=8 => Some(u.int_in_range(0..=5_000_000_000_000)?),
        9 => Some(u.int_in_range(0..=u64::MAX / 4)?),
        10 => Some(u.int_in_range(1u64 << 63..=u64::MAX)?), // past an i64 of nanoseconds
        _ => None,
    })
}

fn nanos(u: &mut Unstructured<'_>) -> Result<u64> {
    let scale = [0u64, 2_000, 20_000_000, 2_000_000_000, 10_000_000_000_000][u.choose_index(5)?];
    Ok(if scale == 0 { 0 } else { u.int_in_range(0..=scale)? })
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

/// The queue's shape: tick (1 µs – 20 ms), wheel size (2 – 128), a capacity (none, within a
/// page, or a few pages), now and then a bound on pending values, the values' size class, and
/// in a quarter of the runs every third value panics when dropped.
fn shape(u: &mut Unstructured<'_>) -> Result<QueueShape> {
    let tick_us = u.int_in_range(1..=20_000)?;
    let wheel_size = u.int_in_range(2..=128)?;
    let capacity = match u.int_in_range(0u8..=3)? {
        0 | 1 => 0,
        2 => u.int_in_range(1..=300)?,
        _ => u.int_in_range(256..=4_096)?,
    };
    let max_pending = match u.int_in_range(0u8..=3)? {
        0 => Some(u.int_in_range(0..=300)?),
        _ => None,
    };
    let (class, drop_panics) = (u.arbitrary()?, u.ratio(1u8, 4)?);
    Ok(QueueShape { tick_us, wheel_size, capacity, max_pending, class, drop_panics })
}

fn decode(data: &[u8]) -> Result<(QueueShape, Vec<Op>)> {
    let mut u = Unstructured::new(data);
    let shape = shape(&mut u)?;
    let mut ops = Vec::new();
    while !u.is_empty() && ops.len() < 2_000 {
        ops.push(op(&mut u)?);
    }
    Ok((shape, ops))
}

fuzz_target!(|data: &[u8]| {
    if let Ok((shape, ops)) = decode(data) {
        if let Err(failure) = check(shape, ops.clone()) {
            panic!("{failure}\n{shape:?}, ops {ops:?}");
        }
    }
});
