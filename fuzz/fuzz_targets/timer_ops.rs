//! Fuzz target: the property test's operation language, decoded from the fuzzer's bytes and checked
//! against the same reference model (`tests/common/model.rs`). See `fuzz/README.md`.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

#[path = "../../tests/common/model.rs"]
#[allow(dead_code)]
mod model;

use model::{check, Op};

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
        0..=83 => Op::Schedule(delay(u)?),
        84 => Op::ShutdownInTask(delay(u)?),
        85..=87 => Op::ZeroChain(u.int_in_range(1..=30)?),
        88..=91 => Op::SchedulePanicking(delay(u)?),
        92..=95 => Op::ScheduleDropPanicking(delay(u)?),
        96..=127 => Op::Cancel(u.arbitrary()?),
        128..=143 => Op::Reset(u.arbitrary()?, delay(u)?),
        144..=207 => Op::Advance(nanos(u)?),
        208..=249 => Op::MoveClock(nanos(u)?),
        250..=254 => Op::Burst {
            nanos: delay(u)?.unwrap_or(u64::MAX),
            count: u.int_in_range(200..=600)?,
            spread: nanos(u)?,
        },
        _ => Op::Shutdown,
    })
}

fn decode(data: &[u8]) -> Result<(u64, usize, Vec<Op>)> {
    let mut u = Unstructured::new(data);
    let tick_us = u.int_in_range(1..=20_000)?;
    let wheel_size = u.int_in_range(2..=128)?;
    let mut ops = Vec::new();
    while !u.is_empty() && ops.len() < 2_000 {
        ops.push(op(&mut u)?);
    }
    Ok((tick_us, wheel_size, ops))
}

fuzz_target!(|data: &[u8]| {
    if let Ok((tick_us, wheel_size, ops)) = decode(data) {
        if let Err(failure) = check(tick_us, wheel_size, ops.clone()) {
            panic!("{failure}\ntick {tick_us} µs, wheel {wheel_size}, ops {ops:?}");
        }
    }
});
