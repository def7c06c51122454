//! Resident memory around a spike of pending timers: `N` timers (default 1,000,000) scheduled on a
//! manual timer that already holds `BASE` (default 10,000), then all cancelled or all fired, then
//! `Timer::shrink`. Prints RSS before the spike, at its peak (handles included), once it drained
//! (handles dropped) and after the shrink, in MB (`/proc/self/statm`), and how long the shrink took
//! (all its steps, taken at once: the longest single step is measured by the library's test
//! `each_step_is_bounded_and_the_round_gives_every_empty_page_back`), for each of `MODES` in turn
//! (default `cancel8,fire8,cancel64,fire64`: cancelled or fired, tasks capturing 8 bytes, inline,
//! or 64, a task-slab block), then tokio-util's `DelayQueue` through the same spike (inserted, all
//! removed, then `compact()`), in the same process. `THREAD=1` runs it all on a spawned thread,
//! where glibc keeps what is freed at the top of that thread's heap resident: what a shrink gives
//! back must go to the kernel (see docs/benchmarks.md).
//!
//! Last, the spike on a timer of its own that is then dropped while one `Sleep` of it (or one
//! `TimerHandle`) stays: RSS before the timer was built, at the peak, after the drop, and after the
//! sleep's drop too. `DROP=0` leaves this out.
//!
//! ```sh
//! cargo run --release -p delaywheel-bench --example spike_memory
//! ```

use std::time::Duration;

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use delaywheel::{ManualClock, Timer, TimerHandle};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Resident memory of this process, in MB.
fn rss_mb() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: f64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).expect("statm's rss");
    pages * 4096.0 / 1e6
}

fn schedule(timer: &Timer, delay: Duration, bytes: u64, seed: u64) -> TimerHandle {
    if bytes > 16 {
        let words = [seed; 8];
        timer.schedule(delay, move || {
            std::hint::black_box(words);
        })
    } else {
        timer.schedule(delay, move || {
            std::hint::black_box(seed);
        })
    }
}

fn main() {
    if env("THREAD", 0) == 1 {
        std::thread::spawn(body).join().expect("the measuring thread");
    } else {
        body();
    }
}

fn body() {
    let (n, base) = (env("N", 1_000_000), env("BASE", 10_000));
    let modes = std::env::var("MODES").unwrap_or_else(|_| "cancel8,fire8,cancel64,fire64".into());
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
    let _base: Vec<TimerHandle> =
        (0..base).map(|k| schedule(&timer, Duration::from_secs(3600), 8, k)).collect();
    for mode in modes.split(',') {
        let (fire, bytes) = (mode.starts_with("fire"), if mode.ends_with("64") { 64 } else { 8 });
        let before = rss_mb();
        let spike: Vec<TimerHandle> =
            (0..n).map(|k| schedule(&timer, Duration::from_millis(1 + k % 1000), bytes, k)).collect();
        let peak = rss_mb();
        if fire {
            for _ in 0..1000 {
                clock.advance(Duration::from_millis(1));
                timer.advance_clock(Duration::ZERO);
            }
        } else {
            spike.iter().for_each(|h| assert!(h.cancel()));
        }
        drop(spike);
        assert_eq!(timer.len() as u64, base);
        let drained = rss_mb();
        let start = std::time::Instant::now();
        timer.shrink();
        let took = start.elapsed();
        let shrunk = rss_mb();
        println!(
            "delaywheel {:9} {n} ({bytes:2}-byte tasks) over {base}: RSS MB before {before:6.1}, peak {peak:6.1}, \
             drained {drained:6.1}, after shrink {shrunk:6.1} (the shrink's steps took {:.1} ms in all)",
            if fire { "fired" } else { "cancelled" },
            took.as_secs_f64() * 1e3,
        );
    }
    drop(_base);
    drop(timer);
    if env("DROP", 1) == 1 {
        for (keep, bytes) in [("Sleep", 8), ("Sleep", 64), ("TimerHandle", 64)] {
            dropped(n, keep, bytes);
        }
    }
    peer(n, base);
}

/// A waker that does nothing: the sleep is polled once, to register it.
struct Noop;

impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

/// A spike of `n` tasks of `bytes` on a timer of its own, dropped while one sleep (or one handle)
/// of it stays.
fn dropped(n: u64, keep: &str, bytes: u64) {
    let before = rss_mb();
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
    let spike: Vec<TimerHandle> =
        (0..n).map(|k| schedule(&timer, Duration::from_millis(1 + k % 1000), bytes, k)).collect();
    let mut sleep = timer.sleep(Duration::from_secs(5));
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    assert_eq!(std::pin::Pin::new(&mut sleep).poll(&mut cx), Poll::Pending);
    let handle = spike[0].clone();
    let peak = rss_mb();
    drop(spike);
    let kept: Box<dyn std::any::Any> = match keep {
        "Sleep" => {
            let _ = handle; // not kept
            Box::new(sleep)
        }
        _ => {
            drop(sleep);
            Box::new(handle)
        }
    };
    drop(timer);
    let after_drop = rss_mb();
    drop(kept);
    let after_all = rss_mb();
    println!(
        "delaywheel timer dropped, one {keep:11} kept, {n} ({bytes:2}-byte tasks): RSS MB before {before:6.1}, \
         peak {peak:6.1}, after the timer's drop {after_drop:6.1}, after the {keep}'s too {after_all:6.1}",
    );
}

/// tokio-util's `DelayQueue` through the same spike (values removed, then `compact`).
fn peer(n: u64, base: u64) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("a runtime");
    let _entered = runtime.enter();
    let mut queue = tokio_util::time::DelayQueue::new();
    let _base: Vec<_> = (0..base).map(|k| queue.insert(k, Duration::from_secs(3600))).collect();
    let before = rss_mb();
    let keys: Vec<_> = (0..n).map(|k| queue.insert(k, Duration::from_millis(1 + k % 1000))).collect();
    let peak = rss_mb();
    keys.iter().for_each(|key| {
        queue.remove(key);
    });
    drop(keys);
    let drained = rss_mb();
    queue.compact();
    let shrunk = rss_mb();
    println!(
        "tokio-util removed   {n} (8-byte values) over {base}: RSS MB before {before:6.1}, peak {peak:6.1}, \
         drained {drained:6.1}, after compact {shrunk:6.1}"
    );
}
