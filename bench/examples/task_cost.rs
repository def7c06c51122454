//! One thread's cost per task on a manual timer, for instruction counts under callgrind (which count
//! repeatably where timings on a shared host do not): `N` tasks capturing `BYTES` bytes, delays in
//! [0, 1000) ms (splitmix64, seed 42), fired by advancing a manual clock 1 ms at a time; or, with
//! `MODE=insert`, the W1/W2 shape: `N` tasks 10–70 s out, scheduled, then all cancelled; or, with
//! `MODE=window`, W7's shape on one thread: `N` timeouts 20–40 s out, each cancelled once 512 newer
//! ones are pending (most timeouts are cancelled, and their slots and blocks reused).
//!
//! ```sh
//! cargo build --release -p delaywheel-bench --example task_cost
//! BYTES=64 N=100000 valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.64 \
//!     target/release/examples/task_cost
//! ```
//!
//! Prints the tasks' checksum (so that the captured bytes are read) and, on stderr, the wall time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use delaywheel::{ManualClock, Timer};
use delaywheel_bench::splitmix;

static SUM: AtomicU64 = AtomicU64::new(0);

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A task capturing `W` words, which adds them up when it runs.
fn task<const W: usize>(seed: u64) -> impl FnOnce() + Send + 'static {
    let words: [u64; W] = std::array::from_fn(|k| seed.wrapping_add(k as u64));
    move || {
        let words = std::hint::black_box(words);
        SUM.fetch_add(words.iter().fold(0, |a: u64, &w| a.wrapping_add(w)), Ordering::Relaxed);
    }
}

fn run<const W: usize>(timer: &Timer, clock: &ManualClock, n: u64, mode: &str) {
    let mut state = 42;
    if mode == "window" {
        let mut window = std::collections::VecDeque::with_capacity(512);
        for i in 0..n {
            if window.len() == 512 {
                let oldest: delaywheel::TimerHandle = window.pop_front().expect("a full window");
                assert!(oldest.cancel());
            }
            window.push_back(
                timer.schedule(Duration::from_millis(20_000 + splitmix(&mut state) % 20_000), task::<W>(i)),
            );
        }
        return;
    }
    if mode == "insert" {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                timer.schedule(Duration::from_millis(10_000 + splitmix(&mut state) % 60_000), task::<W>(i))
            })
            .collect();
        assert!(handles.iter().all(|h| h.cancel()));
        return;
    }
    for i in 0..n {
        let _ = timer.schedule(Duration::from_millis(splitmix(&mut state) % 1_000), task::<W>(i));
    }
    while !timer.is_empty() {
        clock.advance(Duration::from_millis(1));
        timer.advance_clock(Duration::ZERO);
    }
}

fn main() {
    let (bytes, n) = (env("BYTES", 8), env("N", 100_000));
    let mode = std::env::var("MODE").unwrap_or_default();
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
    let start = Instant::now();
    match bytes {
        8 => run::<1>(&timer, &clock, n, &mode),
        32 => run::<4>(&timer, &clock, n, &mode),
        64 => run::<8>(&timer, &clock, n, &mode),
        128 => run::<16>(&timer, &clock, n, &mode),
        256 => run::<32>(&timer, &clock, n, &mode),
        _ => panic!("BYTES: one of 8, 32, 64, 128, 256"),
    }
    eprintln!("{} tasks of {bytes} bytes: {:?}", n, start.elapsed());
    println!("checksum {}", SUM.load(Ordering::Relaxed));
}
