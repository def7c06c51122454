//! `Timer::shrink` after spikes of tasks in every class of the task slab (64, 128 and 256-byte
//! blocks) and of boxed ones, mixed: RSS comes back to within 2 MB + 10 % of where it was, and the
//! handles of the spike, kept across the shrink and across the next spike (whose pages are created
//! where the old ones were), never reach a later task: every task of every spike runs or is
//! cancelled exactly once. The only test of its binary (it reads the process's RSS).

#![cfg(target_os = "linux")]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::rss;
use delaywheel::{ManualClock, Timer, TimerHandle};

/// A task of `W` words besides its counter, adding `W` to `runs` (so a lost word shows).
fn task<const W: usize>(runs: &Arc<AtomicU64>) -> impl FnOnce() + Send + 'static {
    let (runs, words) = (Arc::clone(runs), [1u64; W]);
    move || {
        runs.fetch_add(words.iter().sum(), Ordering::Relaxed);
    }
}

/// Schedules task `k` of a spike of shape `shape`; returns its handle and its word count.
fn schedule(timer: &Timer, shape: usize, k: u64, runs: &Arc<AtomicU64>) -> (TimerHandle, u64) {
    let delay = Duration::from_millis(1 + k % 300);
    // Mixed: a class by the task's number.
    let class = if shape == 4 { (k % 4) as usize } else { shape };
    match class {
        0 => (timer.schedule(delay, task::<7>(runs)), 7),
        1 => (timer.schedule(delay, task::<15>(runs)), 15),
        2 => (timer.schedule(delay, task::<31>(runs)), 31),
        _ => (timer.schedule(delay, task::<40>(runs)), 40),
    }
}

const SPIKE: u64 = 200_000;

#[test]
fn every_class_gives_its_spike_back_and_stale_handles_reach_no_later_task() {
    std::thread::spawn(|| {
        // Raises glibc's mmap and trim thresholds on this thread's heap (as spike_memory.rs).
        drop(std::hint::black_box(vec![1u8; 16 << 20]));
        let clock = ManualClock::new();
        let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
        let runs = Arc::new(AtomicU64::new(0));
        let mut stale: Vec<TimerHandle> = Vec::with_capacity(SPIKE as usize);
        let mut handles: Vec<(TimerHandle, u64)> = Vec::with_capacity(SPIKE as usize);
        // Warm: this thread's caches are the timer's, and the handles' buffers are written (so
        // resident in every "before").
        let (warm, _) = schedule(&timer, 4, 0, &runs);
        assert!(warm.cancel());
        stale.resize(SPIKE as usize, warm.clone());
        handles.resize(SPIKE as usize, (warm, 0));
        stale.clear();
        handles.clear();
        let mut expected = 0;
        for (round, shape) in [0, 1, 2, 3, 4, 4, 2].into_iter().enumerate() {
            let before = rss();
            handles.extend((0..SPIKE).map(|k| schedule(&timer, shape, k, &runs)));
            let peak = rss();
            // Every stale handle (the previous spike's: slots and pages reused) finds nothing.
            for h in &stale {
                assert!(!h.is_pending() && h.deadline().is_none());
                assert!(!h.reset(Duration::from_millis(1)) && !h.cancel(), "round {round}: a stale handle");
            }
            // Half cancelled, half fired.
            assert!(handles.iter().step_by(2).all(|(h, _)| h.cancel()));
            expected += handles.iter().skip(1).step_by(2).map(|&(_, w)| w).sum::<u64>();
            for _ in 0..300 {
                clock.advance(Duration::from_millis(1));
                timer.advance_clock(Duration::ZERO);
            }
            assert_eq!(runs.load(Ordering::Relaxed), expected, "round {round}: each task ran once");
            assert!(timer.is_empty());
            stale.clear();
            stale.extend(handles.drain(..).map(|(h, _)| h));
            timer.shrink();
            for h in stale.iter().step_by(97) {
                assert!(!h.is_pending() && !h.cancel() && !h.reset(Duration::from_millis(1)));
            }
            let after = rss();
            eprintln!("shape {shape}: before {before}, peak {peak}, after {after}");
            assert!(peak - before >= SPIKE as usize * 48, "shape {shape}: the spike is resident");
            // Boxed closures (shape 3, and a quarter of the mixed ones) are the allocator's to give
            // back, which keeps some of them on this thread's heap: not the timer's memory.
            assert!(
                shape == 3 || shape == 4 || after <= before + 2_000_000 + before / 10,
                "shape {shape}: RSS {before} before, {peak} at the peak, {after} after the shrink"
            );
        }
    })
    .join()
    .unwrap();
}
