//! Idle timeouts re-armed on every message, forever: a reset moves the task in place (earlier,
//! later, across levels, into the past), so memory and the queued buckets stay flat however many
//! resets a timer serves. The only test of its binary, so that no other test's memory moves the
//! process's RSS meanwhile.

mod common;

use std::time::Duration;

#[cfg(target_os = "linux")]
use common::rss;
use common::{manual_timer, ms};

#[test]
#[cfg(target_os = "linux")]
fn resetting_the_same_tasks_forever_runs_in_flat_memory() {
    const TASKS: u64 = 10_000;
    let (clock, timer) = manual_timer(ms(1), 8);
    let mut handles: Vec<_> = (0..TASKS).map(|_| timer.schedule(ms(5), || {})).collect();
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut rounds = |count: u64| {
        for round in 0..count {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let delay = match x % 4 {
                0 => ms(x % 7),                                // level 0, or passed (zero)
                1 => ms(100 + x % 900),                        // a level up
                2 => Duration::from_secs(100 + x % 100_000),   // far levels
                _ => Duration::from_micros(1_000 + x % 3_000), // within a few ticks
            };
            let handle = &mut handles[(x % TASKS) as usize];
            if !handle.reset(delay) {
                // It fired (a short delay the clock passed): a new timeout in its place.
                *handle = timer.schedule(delay, || {});
            }
            if round % 50_000 == 0 {
                // The clock moves now and then, so buckets are flushed and cascade under the resets.
                clock.advance(Duration::from_micros(700));
                timer.advance_clock(Duration::ZERO);
            }
        }
    };
    // Warm up: every level in use, every lane and list at its working size.
    rounds(1_000_000);
    let (before, queued_before) = (rss(), timer.stats().queued_buckets);
    rounds(3_000_000);
    let (after, queued_after) = (rss(), timer.stats().queued_buckets);
    assert!(after.saturating_sub(before) < 1 << 20, "3 million resets grew {} bytes", after - before);
    // One queued bucket per non-empty bucket: 8 slots a level, a dozen levels for 28 h at 1 ms.
    assert!(queued_after <= 8 * 12 && queued_before <= 8 * 12, "{queued_before} then {queued_after} queued");
    assert_eq!(timer.len(), handles.iter().filter(|handle| handle.is_pending()).count());
    clock.advance(Duration::from_secs(200_000));
    timer.advance_clock(Duration::ZERO);
    assert!(timer.is_empty(), "each task fired once, at its last deadline");
}
