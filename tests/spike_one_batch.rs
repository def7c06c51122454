//! `Timer::shrink` in resident memory after a spike that fires in one batch (a million tasks due
//! on the same tick, then 400,000: the batch's vectors are then below glibc's largest mmap
//! threshold, in the thread's heap), on a manual timer whose thread also schedules: RSS comes back to within
//! 2 MB + 10 % of where it was before, as in `spike_memory.rs` (whose spikes fire 2,000 a tick).
//! 64-byte tasks (slot and block caches); `SMALL=1`: 8-byte tasks (the slot cache alone). The only
//! test of its binary, so that no other test's memory moves the process's RSS.

#![cfg(target_os = "linux")]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::rss;
use delaywheel::{ManualClock, Timer};

fn spike(big: bool, tasks: usize) -> (usize, usize, usize) {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
    let runs = Arc::new(AtomicU64::new(0));
    // Warm: this thread owns its caches (it schedules), as a manual timer's thread does.
    for _ in 0..1_000 {
        let (runs, words) = (Arc::clone(&runs), [1u64; 6]);
        timer.schedule(Duration::from_secs(3600), move || drop((runs, words))).cancel();
    }
    let before = rss();
    for _ in 0..tasks {
        let runs = Arc::clone(&runs);
        if big {
            let words = [1u64; 6];
            let _ = timer.schedule(Duration::from_millis(5), move || {
                runs.fetch_add(words[5], Ordering::Relaxed);
            });
        } else {
            let _ = timer.schedule(Duration::from_millis(5), move || {
                runs.fetch_add(1, Ordering::Relaxed);
            });
        }
    }
    let peak = rss();
    clock.advance(Duration::from_millis(10));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(runs.load(Ordering::Relaxed), tasks as u64);
    timer.shrink();
    (before, peak, rss())
}

#[test]
fn rss_comes_back_after_a_spike_fired_in_one_batch() {
    std::thread::spawn(|| {
        // Raises glibc's mmap and trim thresholds on this thread's heap (to 16 and 32 MB).
        drop(std::hint::black_box(vec![1u8; 16 << 20]));
        let big = std::env::var("SMALL").is_err();
        for tasks in [1_000_000, 400_000] {
            let (before, peak, after) = spike(big, tasks);
            eprintln!(
                "big={big}, {tasks} tasks: before {before}, peak {peak}, after {after} (+{} KiB)",
                (after as isize - before as isize) / 1024
            );
            assert!(
                after <= before + 2_000_000 + before / 10,
                "big={big}, {tasks} tasks: {before} before, {peak} peak, {after} after"
            );
        }
    })
    .join()
    .unwrap();
}
