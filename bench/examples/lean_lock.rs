//! What a contended shard lock of `delaywheel_bench::lean_core` costs its waiters: `THREADS`
//! threads (default 16) take one lock `N` times each (default 20,000), hold it for `HOLD` spin
//! `spin_loop` hints (default 200: about 2 µs on the 2-core host) and work `AWAY` iterations between (default 200). For
//! each lock (parking_lot's, the spin lock that yields, the lock whose waiters back off to sleeps):
//! wall time and process CPU per acquisition, and the time from asking to holding, median, 99th
//! percentile and worst (a waiter's latency, which for the backoff lock includes up to one sleep
//! step past the unlock).
//!
//! ```sh
//! cargo run --release -p delaywheel-bench --example lean_lock
//! ```

use std::time::{Duration, Instant};

use delaywheel_bench::lean_core::wheel::Wheel;
use delaywheel_bench::lean_core::{Backoff, Parked, ShardLock, Spin, BACKOFF_SLEEPS, BACKOFF_WAITS};
use delaywheel_bench::process_cpu_ms;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn work(iterations: usize) {
    for _ in 0..iterations {
        std::hint::spin_loop();
    }
}

fn run<L: ShardLock>(name: &str) {
    let (threads, n) = (env("THREADS", 16), env("N", 20_000));
    let (hold, away) = (env("HOLD", 200), env("AWAY", 200));
    let lock = L::new(Wheel::default());
    let sleeps = BACKOFF_SLEEPS.load(std::sync::atomic::Ordering::Relaxed);
    let waits = BACKOFF_WAITS.load(std::sync::atomic::Ordering::Relaxed);
    let (cpu, start) = (process_cpu_ms(), Instant::now());
    let mut latencies: Vec<Duration> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let lock = &lock;
                s.spawn(move || {
                    let mut latencies = Vec::with_capacity(n);
                    for _ in 0..n {
                        let asked = Instant::now();
                        let guard = lock.lock();
                        latencies.push(asked.elapsed());
                        work(hold);
                        drop(guard);
                        work(away);
                    }
                    latencies
                })
            })
            .collect();
        workers.into_iter().flat_map(|worker| worker.join().expect("a worker")).collect()
    });
    let (wall, cpu) = (start.elapsed(), process_cpu_ms() - cpu);
    latencies.sort_unstable();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
    let total = (threads * n) as f64;
    println!(
        "{name}: {threads} threads, {total} acquisitions: wall {:.1} ms, CPU {:.0} ns per acquisition; \
         waiting p50 {:.2} µs, p99 {:.1} µs, worst {:.0} µs; backoff waits {}, sleeps {}",
        wall.as_secs_f64() * 1e3,
        cpu * 1e6 / total,
        at(0.5),
        at(0.99),
        at(1.0),
        BACKOFF_WAITS.load(std::sync::atomic::Ordering::Relaxed) - waits,
        BACKOFF_SLEEPS.load(std::sync::atomic::Ordering::Relaxed) - sleeps,
    );
}

fn main() {
    match std::env::var("LOCK").as_deref() {
        Ok("parked") => run::<Parked>("parking_lot"),
        Ok("spin") => run::<Spin>("spin, yield"),
        Ok("backoff") => run::<Backoff>("spin, yield, sleep"),
        _ => {
            run::<Parked>("parking_lot");
            run::<Spin>("spin, yield");
            run::<Backoff>("spin, yield, sleep");
        }
    }
}
