//! Soak: two threads schedule and cancel against the real driver, with exact accounting and flat
//! memory. Ignored by default (it runs for a minute); `.ci/run` runs it for a bounded time:
//!
//! ```text
//! DELAYWHEEL_SOAK_SECS=60 DELAYWHEEL_SOAK_RATE=400000 cargo test --release --test soak -- --ignored
//! --nocapture
//! ```
//!
//! The schedulers are paced (`DELAYWHEEL_SOAK_RATE` schedules per second in total, default 300 000;
//! `0` means unpaced). Unpaced on 2 cores, two schedulers out-run a driver that must share the cores
//! with them: the backlog then grows without bound, which is overload, not a leak (`max_pending` is
//! the guard for that), so the memory check is only meaningful paced.

mod common;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::SplitMix;
use delaywheel::{Timer, TimerHandle};

/// Resident set size of this process, in bytes.
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    pages * 4096
}

#[test]
#[ignore = "long-running soak; run with --ignored (see the file's docs)"]
fn soak_schedule_cancel_fire_exact_accounting_flat_memory() {
    let env = |name: &str, default: u64| -> u64 {
        std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
    };
    let secs = env("DELAYWHEEL_SOAK_SECS", 60);
    let per_thread_rate = env("DELAYWHEEL_SOAK_RATE", 300_000) as f64 / 2.0;
    let timer = Arc::new(Timer::builder().tick(Duration::from_millis(1)).build());
    let fired = Arc::new(AtomicU64::new(0));
    let cancelled = Arc::new(AtomicU64::new(0));
    let scheduled = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));

    let workers: Vec<_> = (0..2)
        .map(|t| {
            let (timer, fired, cancelled, scheduled, stop) = (
                Arc::clone(&timer),
                Arc::clone(&fired),
                Arc::clone(&cancelled),
                Arc::clone(&scheduled),
                Arc::clone(&stop),
            );
            thread::spawn(move || {
                let mut rng = SplitMix(1000 + t);
                let mut recent: VecDeque<TimerHandle> = VecDeque::with_capacity(4096);
                let begun = Instant::now();
                let mut done = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if per_thread_rate > 0.0 {
                        let due = Duration::from_secs_f64(done as f64 / per_thread_rate);
                        if let Some(ahead) = due.checked_sub(begun.elapsed()) {
                            thread::sleep(ahead);
                        }
                    }
                    done += 256;
                    for _ in 0..256 {
                        // Mostly request-like timeouts in level 0; one in ten long enough (0.5–3 s)
                        // to sit in level 1 and cascade while the other threads work.
                        let delay = if rng.range(0, 10) == 0 {
                            Duration::from_micros(rng.range(500_000, 3_000_000))
                        } else {
                            Duration::from_micros(rng.range(0, 50_000))
                        };
                        let f = Arc::clone(&fired);
                        let h = timer.schedule(delay, move || {
                            f.fetch_add(1, Ordering::Relaxed);
                        });
                        scheduled.fetch_add(1, Ordering::Relaxed);
                        if recent.len() == 4096 {
                            recent.pop_front();
                        }
                        recent.push_back(h);
                        // Cancel most timeouts, as servers do: some already fired, some not.
                        if rng.range(0, 10) < 7 {
                            let i = rng.range(0, recent.len() as u64) as usize;
                            if recent[i].cancel() {
                                cancelled.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                }
            })
        })
        .collect();

    let start = Instant::now();
    let warm_up = Duration::from_secs(secs.min(10) / 2);
    thread::sleep(warm_up);
    let rss_warm = rss_bytes();
    let mut rss_max = rss_warm;
    while start.elapsed() < Duration::from_secs(secs) {
        thread::sleep(Duration::from_millis(250));
        rss_max = rss_max.max(rss_bytes());
        if std::env::var_os("DELAYWHEEL_SOAK_VERBOSE").is_some() {
            let s = timer.stats();
            println!(
                "t={:?} rss={:.1}MiB pending={} queued_buckets={} levels={}",
                start.elapsed(),
                rss_bytes() as f64 / 1048576.0,
                s.pending,
                s.queued_buckets,
                s.levels_in_use
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while !timer.is_empty() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(10));
    }
    // A task leaves `len()` when the driver claims it, a moment before it runs: wait for the runs.
    let accounted = || fired.load(Ordering::SeqCst) + cancelled.load(Ordering::SeqCst);
    while accounted() < scheduled.load(Ordering::SeqCst) && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(10));
    }

    let (scheduled, fired, cancelled) =
        (scheduled.load(Ordering::SeqCst), fired.load(Ordering::SeqCst), cancelled.load(Ordering::SeqCst));
    let stats = timer.stats();
    println!(
        "soak {secs}s: scheduled {scheduled}, fired {fired}, cancelled {cancelled}, \
         rss after warm-up {:.1} MiB, max {:.1} MiB, panicked {}",
        rss_warm as f64 / 1048576.0,
        rss_max as f64 / 1048576.0,
        stats.panicked
    );
    assert!(timer.is_empty(), "pending left: {}", timer.len());
    assert_eq!(fired + cancelled, scheduled, "every task fired once or was cancelled once");
    assert_eq!(stats.fired, fired);
    assert_eq!(stats.cancelled, cancelled);
    assert_eq!(stats.scheduled, scheduled);
    assert!(scheduled > 100_000, "the soak did too little work: {scheduled}");
    assert!(stats.levels_in_use >= 2, "the soak never cascaded");
    assert!(
        rss_max <= rss_warm + 64 * 1024 * 1024,
        "memory grew after warm-up: {rss_warm} -> {rss_max} bytes"
    );
}
