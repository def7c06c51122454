//! SPEC W8 (re-arm, `shared/bench/SPEC.md`): 100,000 pending 30 s timeouts, then 2,000,000 re-arms,
//! each of a random one of them to 30 s from now, one thread; wall ns per re-arm and the entries held
//! afterwards. Beside it, on the same timer shape, the cancel of every one of the 100,000 (the cost a
//! re-arm is compared with) and the re-arm a timer without one offers: cancel and schedule anew.
//!
//! ```sh
//! cargo bench -p delaywheel-bench --bench rearm
//! REARM_N=20000 REARM_OPS=400000 cargo bench -p delaywheel-bench --bench rearm   # quicker
//! REARM_SYSTEMS=delaywheel cargo bench -p delaywheel-bench --bench rearm           # some systems
//! ```
//!
//! `REARM_SYSTEMS` takes a comma-separated list of the system names below (default: all); with one
//! system the process is small enough for `valgrind --tool=callgrind`. stderr gets the ratios of
//! the run: delaywheel's reset against its own random-order cancel and against tokio-util's reset.
//!
//! Systems, each driven as its users drive it (a driver thread, or a runtime):
//! * `delaywheel`: `Timer::new()` (1 ms tick, its driver thread); `TimerHandle::reset`.
//! * `delaywheel-cancel-schedule`: the same timer; `cancel()` then `schedule` (a new handle).
//! * `tokio-delayqueue`: tokio-util's `DelayQueue<u64>` behind a std `Mutex`, in the context of a
//!   2-worker runtime whose task polls `poll_expired` (nothing expires during the run);
//!   `DelayQueue::reset`.
//!
//! Output, one line per system: `<system> W8 rearm ns_per_op=<x> held_after=<n>` and
//! `<system> W8 cancel ns_per_op=<x>` (the cancel of all N after the re-arms, in a random order).

#[allow(dead_code)]
#[path = "spec/measure.rs"]
mod measure;

use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use delaywheel::{Timer, TimerHandle};
use tokio_util::time::DelayQueue;

const TIMEOUT: Duration = Duration::from_secs(30);

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The index of the timeout each re-arm moves: splitmix64, seed 42.
fn victims(n: usize, ops: usize) -> Vec<usize> {
    let mut rng = measure::SplitMix64::new(42);
    (0..ops).map(|_| (rng.next_u64() % n as u64) as usize).collect()
}

/// Every index once, in a random order (Fisher-Yates on splitmix64, seed 7): the cancels touch the
/// timeouts as randomly as the re-arms do.
fn shuffled(n: usize) -> Vec<usize> {
    let mut rng = measure::SplitMix64::new(7);
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    order
}

fn ns_per(elapsed: Duration, ops: usize) -> f64 {
    elapsed.as_nanos() as f64 / ops as f64
}

fn delaywheel(n: usize, victims: &[usize], in_place: bool) -> (f64, f64) {
    let name = if in_place { "delaywheel" } else { "delaywheel-cancel-schedule" };
    let timer = Timer::new();
    let mut handles: Vec<TimerHandle> = (0..n)
        .map(|i| {
            timer.schedule(TIMEOUT, move || {
                std::hint::black_box(i);
            })
        })
        .collect();
    let start = Instant::now();
    for &v in victims {
        if in_place {
            assert!(handles[v].reset(TIMEOUT), "a pending timeout re-arms");
        } else {
            assert!(handles[v].cancel(), "a pending timeout cancels");
            handles[v] = timer.schedule(TIMEOUT, move || {
                std::hint::black_box(v);
            });
        }
    }
    let rearm = start.elapsed();
    let held = timer.len();
    let rearm = ns_per(rearm, victims.len());
    println!("{name} W8 rearm ns_per_op={rearm:.1} held_after={held}");
    let order = shuffled(n);
    let start = Instant::now();
    for &i in &order {
        assert!(handles[i].cancel());
    }
    let cancel = ns_per(start.elapsed(), n);
    println!("{name} W8 cancel ns_per_op={cancel:.1}");
    assert!(timer.is_empty());
    (rearm, cancel)
}

fn tokio_delay_queue(n: usize, victims: &[usize]) -> f64 {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_time().build().unwrap();
    let _context = rt.enter();
    let queue = Arc::new(Mutex::new(DelayQueue::<u64>::new()));
    let keys: Vec<_> = {
        let mut q = queue.lock().unwrap();
        (0..n as u64).map(|i| q.insert(i, TIMEOUT)).collect()
    };
    let poller = Arc::clone(&queue);
    let task = rt.spawn(std::future::poll_fn(move |cx| {
        while let Poll::Ready(Some(expired)) = poller.lock().unwrap().poll_expired(cx) {
            std::hint::black_box(expired.into_inner());
        }
        Poll::<()>::Pending
    }));
    let start = Instant::now();
    for &v in victims {
        queue.lock().unwrap().reset(&keys[v], TIMEOUT);
    }
    let rearm = ns_per(start.elapsed(), victims.len());
    let held = queue.lock().unwrap().len();
    println!("tokio-delayqueue W8 rearm ns_per_op={rearm:.1} held_after={held}");
    let order = shuffled(n);
    let start = Instant::now();
    for &i in &order {
        queue.lock().unwrap().remove(&keys[i]);
    }
    println!("tokio-delayqueue W8 cancel ns_per_op={:.1}", ns_per(start.elapsed(), n));
    task.abort();
    rearm
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing: run small then.
    let quick = !std::env::args().any(|a| a == "--bench");
    let n = env("REARM_N", if quick { 1_000 } else { 100_000 });
    let ops = env("REARM_OPS", if quick { 20_000 } else { 2_000_000 });
    let victims = victims(n, ops);
    let systems = std::env::var("REARM_SYSTEMS").unwrap_or_default();
    let run = |name: &str| systems.is_empty() || systems.split(',').any(|s| s.trim() == name);
    let ours = run("delaywheel").then(|| delaywheel(n, &victims, true));
    if run("delaywheel-cancel-schedule") {
        delaywheel(n, &victims, false);
    }
    let tokio = run("tokio-delayqueue").then(|| tokio_delay_queue(n, &victims));
    if let Some((reset, cancel)) = ours {
        eprintln!("# delaywheel reset / its random-order cancel: {:.2}", reset / cancel);
        if let Some(tokio) = tokio {
            eprintln!("# tokio-util reset / delaywheel reset: {:.2}", tokio / reset);
        }
    }
}
