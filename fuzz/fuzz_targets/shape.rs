//! What both fuzz targets (`timer_ops.rs`, `queue_ops.rs`) decode alike: a run (a shape, then
//! operations), the timer it uses, delays, and the amounts of time the clock moves by.

use libfuzzer_sys::arbitrary::{Result, Unstructured};

/// A run: its shape, then operations until the bytes run out (at most 2,000).
pub fn run<S, O>(
    data: &[u8],
    shape: impl Fn(&mut Unstructured<'_>) -> Result<S>,
    op: impl Fn(&mut Unstructured<'_>) -> Result<O>,
) -> Result<(S, Vec<O>)> {
    let mut u = Unstructured::new(data);
    let shape = shape(&mut u)?;
    let mut ops = Vec::new();
    while !u.is_empty() && ops.len() < 2_000 {
        ops.push(op(&mut u)?);
    }
    Ok((shape, ops))
}

/// A timer's shape: tick in µs (1 µs – 20 ms), wheel size (2 – 128), a capacity (none, within a
/// page, or a few pages) and, in a quarter of the runs, a bound on pending entries up to
/// `most_pending`.
pub fn timer(u: &mut Unstructured<'_>, most_pending: usize) -> Result<(u64, usize, usize, Option<usize>)> {
    let tick_us = u.int_in_range(1..=20_000)?;
    let wheel_size = u.int_in_range(2..=128)?;
    let capacity = match u.int_in_range(0u8..=3)? {
        0 | 1 => 0,
        2 => u.int_in_range(1..=300)?,
        _ => u.int_in_range(256..=4_096)?,
    };
    let max_pending = match u.int_in_range(0u8..=3)? {
        0 => Some(u.int_in_range(0..=most_pending)?),
        _ => None,
    };
    Ok((tick_us, wheel_size, capacity, max_pending))
}

/// Nanoseconds to move the clock by: zero, or up to 2 µs, 20 ms, 2 s or about 2.8 hours.
pub fn nanos(u: &mut Unstructured<'_>) -> Result<u64> {
    let scale = [0u64, 2_000, 20_000_000, 2_000_000_000, 10_000_000_000_000][u.choose_index(5)?];
    Ok(if scale == 0 { 0 } else { u.int_in_range(0..=scale)? })
}

/// A delay in nanoseconds (`None`: `Duration::MAX`): zero or sub-µs, within 50 ms, up to about 80
/// minutes, up to centuries, and, if `past_i64`, past what an `i64` of nanoseconds holds (in the
/// place of a third of the ones up to 80 minutes).
pub fn delay(u: &mut Unstructured<'_>, past_i64: bool) -> Result<Option<u64>> {
    Ok(match u.int_in_range(0u8..=11)? {
        0..=2 => Some(u.int_in_range(0..=2)?),
        3..=6 => Some(u.int_in_range(0..=50_000_000)?),
        9 if past_i64 => Some(u.int_in_range(1u64 << 63..=u64::MAX)?),
        7..=9 => Some(u.int_in_range(0..=5_000_000_000_000)?),
        10 => Some(u.int_in_range(0..=u64::MAX / 4)?),
        _ => None,
    })
}
