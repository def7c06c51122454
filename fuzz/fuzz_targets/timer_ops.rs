//! Fuzz target: the property test's operation language, decoded from the fuzzer's bytes and checked
//! against the same reference model (`tests/common/model.rs`). See `fuzz/README.md`.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

#[path = "../../tests/common/model.rs"]
#[allow(dead_code)]
mod model;

mod shape;

use model::{check_shape, Op, Shape};
use shape::nanos;

fn delay(u: &mut Unstructured<'_>) -> Result<Option<u64>> {
    shape::delay(u, false)
}

fn op(u: &mut Unstructured<'_>) -> Result<Op> {
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

/// The timer's shape (`shape.rs`), with a bound on pending tasks up to 700.
fn shape(u: &mut Unstructured<'_>) -> Result<Shape> {
    let (tick_us, wheel_size, capacity, max_pending) = shape::timer(u, 700)?;
    Ok(Shape { tick_us, wheel_size, capacity, max_pending })
}

fuzz_target!(|data: &[u8]| {
    if let Ok((shape, ops)) = shape::run(data, shape, op) {
        if let Err(failure) = check_shape(shape, ops.clone()) {
            panic!("{failure}\n{shape:?}, ops {ops:?}");
        }
    }
});
