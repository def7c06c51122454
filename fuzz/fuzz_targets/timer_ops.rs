//! Fuzz target: the property test's operation language, decoded from the fuzzer's bytes and checked
//! against the same reference model (`tests/common/model.rs`). See `fuzz/README.md`.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

#[path = "../../tests/common/model.rs"]
#[allow(dead_code)]
mod model;

use model::{check_shape, Op, Shape};

fn delay(u: &mut Unstructured<'_>) -> Result<Option<u64>> {
    Ok(match u.int_in_range(0u8..=11)? {
        0..=2 => Some(u.int_in_range(0..=2)?),
        3..=6 => Some(u.int_in_range(0..=50_000_000)?),
        7..=9 => Some(u.int_in_range(0..=5_000_000_000_000)?),
        10 => Some(u.int_in_range(0..=u64::MAX / 4)?),
        _ => None,
    })
}

fn op(u: &mut Unstructured<'_>) -> Result<Op> {
    let nanos = |u: &mut Unstructured<'_>| -> Result<u64> {
        let scale = [0u64, 2_000, 20_000_000, 2_000_000_000, 10_000_000_000_000][u.choose_index(5)?];
        Ok(if scale == 0 { 0 } else { u.int_in_range(0..=scale)? })
    };
    // Shutdown is rare (1 in 256, and as often from inside a task): after it every operation is
    // a refused no-op.
    Ok(match u.int_in_range(0u8..=255)? {
        0..=55 => Op::Schedule(delay(u)?),
        56..=83 => Op::ScheduleSized(delay(u)?, u.arbitrary()?, u.int_in_range(0..=4)?),
        84 => Op::ShutdownInTask(delay(u)?),
        85..=87 => Op::ZeroChain(u.int_in_range(1..=30)?),
        88..=91 => Op::SchedulePanicking(delay(u)?),
        92..=95 => Op::ScheduleDropPanicking(delay(u)?),
        96..=119 => Op::Cancel(u.arbitrary()?),
        120..=123 => Op::CancelMany(u.arbitrary()?, u.int_in_range(1..=600)?),
        124..=127 => Op::Shrink,
        128..=143 => Op::Reset(u.arbitrary()?, delay(u)?),
        144..=207 => Op::Advance(nanos(u)?),
        208..=243 => Op::MoveClock(nanos(u)?),
        244..=247 => Op::SchedulePast(nanos(u)?),
        248..=250 => Op::Burst {
            nanos: delay(u)?.unwrap_or(u64::MAX),
            count: u.int_in_range(200..=600)?,
            spread: nanos(u)?,
        },
        251..=254 => Op::BurstSized {
            nanos: delay(u)?.unwrap_or(u64::MAX),
            count: u.int_in_range(50..=600)?,
            spread: nanos(u)?,
            class: u.arbitrary()?,
        },
        _ => Op::Shutdown,
    })
}

/// The timer's shape: tick (1 µs – 20 ms), wheel size (2 – 128), a capacity (none, within a
/// page, or a few pages) and now and then a bound on pending tasks.
fn shape(u: &mut Unstructured<'_>) -> Result<Shape> {
    let tick_us = u.int_in_range(1..=20_000)?;
    let wheel_size = u.int_in_range(2..=128)?;
    let capacity = match u.int_in_range(0u8..=3)? {
        0 | 1 => 0,
        2 => u.int_in_range(1..=300)?,
        _ => u.int_in_range(256..=4_096)?,
    };
    let max_pending = match u.int_in_range(0u8..=3)? {
        0 => Some(u.int_in_range(0..=700)?),
        _ => None,
    };
    Ok(Shape { tick_us, wheel_size, capacity, max_pending })
}

fn decode(data: &[u8]) -> Result<(Shape, Vec<Op>)> {
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
        if let Err(failure) = check_shape(shape, ops.clone()) {
            panic!("{failure}\n{shape:?}, ops {ops:?}");
        }
    }
});
