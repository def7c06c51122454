//! SPEC W7 (threads): T threads share one timer; each loops "schedule a timeout with a delay in
//! [20000, 40000) ms, keep a FIFO window of its last 512 handles, cancel the oldest when the window
//! is full"; 2,000,000 schedules in all, split evenly. Measured: wall ns per schedule+cancel pair
//! (from the first thread's start to the last thread's end, divided by the schedules of all
//! threads) and the throughput at T over the throughput at T = 1 (`scaling`).
//!
//! ```sh
//! SPEC_WORKLOADS=W7 cargo bench -p delaywheel-bench --bench spec
//! SPEC_WORKLOADS=W7 SPEC_W7_THREADS=1,2 SPEC_SYSTEMS=delaywheel,heap cargo bench -p delaywheel-bench --bench
//! spec
//! ```
//!
//! * `SPEC_W7_THREADS`: the thread counts, default `1,2,4,16` (the scaling needs 1 among them).
//! * `SPEC_W7_N`: schedules in all (default twice `SPEC_N`: the SPEC's 2,000,000).
//!
//! Each thread count gets a fresh timer. The delays are drawn before the clock starts (splitmix64,
//! seed 42; thread `t` takes the `t`-th share), the threads wait on a barrier, and each takes its
//! start and end on the one clock of `measure::now_ns`. The 512 handles left in each window are
//! cancelled after the clock stops; every cancel must win (nothing is due within the run), and a
//! system that frees at once must hold nothing afterwards (both checked, anomalies on stderr).
//!
//! The systems are the `System`s of `systems.rs` (delaywheel, tokio-util's `DelayQueue` behind a
//! mutex, the heap; not hierarchical_hash_wheel_timer, whose cancel is a message applied later) and
//! **tokio's own timer** (`tokio-timer`, this file): T tasks on a multi-thread runtime with T
//! workers, each creating `tokio::time::sleep(delay)` futures, boxed and pinned (a window needs them
//! movable), polled once so that they register with the runtime's timer (an unpolled `Sleep` never
//! touches it), and dropped to cancel. The tasks are `unconstrained` (tokio's cooperative budget
//! would otherwise make every poll after the 128th return `Pending` without registering), and wait
//! on a `tokio::sync::Barrier` (an async one: a blocking wait could hold a worker another task needs).

use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::sync::{Arc, Barrier};
use std::task::Poll;
use std::time::Duration;

use crate::measure::{counting_task, delays_ms, now_ns};
use crate::systems::System;
use crate::tokio_tasks;
use crate::{line, note, Results};
use delaywheel_bench::process_cpu_ms;

/// The name of tokio's own timer on the SPEC lines (W7 only).
pub const TOKIO_TIMER: &str = "tokio-timer";

/// Handles each thread keeps before it cancels the oldest.
const WINDOW: usize = 512;

/// W7's parameters, from the environment.
pub struct W7 {
    threads: Vec<usize>,
    total: usize,
}

impl W7 {
    /// `SPEC_W7_THREADS` and `SPEC_W7_N` (default `2 × n`, `n` being `SPEC_N`).
    pub fn from_env(n: usize) -> W7 {
        let threads = match std::env::var("SPEC_W7_THREADS") {
            Ok(list) if !list.trim().is_empty() => {
                list.split(',').map(|t| t.trim().parse().expect("SPEC_W7_THREADS: numbers")).collect()
            }
            _ => vec![1, 2, 4, 16],
        };
        let total = std::env::var("SPEC_W7_N")
            .ok()
            .map(|n| n.replace('_', "").parse().expect("SPEC_W7_N: a number"))
            .unwrap_or(2 * n);
        W7 { threads, total }
    }
}

/// One thread's part: its first and last clock readings, the cancels that did not win.
struct Span {
    start: u64,
    end: u64,
    lost: usize,
}

/// What one thread count measured.
#[derive(Clone, Copy)]
struct Run {
    threads: usize,
    /// Wall ns per schedule+cancel pair (all threads' pairs over the wall time).
    pair_ns: f64,
    /// Process CPU (every thread, the timer's own included) per pair, in ns: on a loaded host the
    /// steadier figure, as it does not count the time the threads wait for a core.
    cpu_ns: f64,
}

impl Run {
    /// A run of `spans` over `total` schedules, `cpu_ms` of process CPU from spawn to join.
    fn new(threads: usize, spans: &[Span], total: usize, cpu_ms: f64) -> Run {
        let first = spans.iter().map(|s| s.start).min().unwrap_or(0);
        let end = spans.iter().map(|s| s.end).max().unwrap_or(0);
        let total = total.max(1) as f64;
        Run { threads, pair_ns: (end - first) as f64 / total, cpu_ns: cpu_ms * 1e6 / total }
    }
}

/// Prints the SPEC lines of one system's W7 runs (in the order run) and keeps them for the ratio
/// summary.
fn report(name: &str, runs: &[Run], results: &mut Results) {
    let one = runs.iter().find(|r| r.threads == 1).map(|r| r.pair_ns);
    for run in runs {
        let (threads, ns) = (run.threads, run.pair_ns);
        let scaling = one.map_or(f64::NAN, |one| one / ns);
        line(format!("{name} W7 threads={threads} pair_ns={ns:.1} scaling={scaling:.2}"));
        note(format!("{name} W7 threads={threads}: process CPU {:.1} ns per pair", run.cpu_ns));
        results.insert(metric(format!("W7 t={threads} pair ns")), ns);
        results.insert(metric(format!("W7 t={threads} cpu ns")), run.cpu_ns);
    }
}

/// A key of [`Results`] (leaked: a handful per run).
fn metric(name: String) -> &'static str {
    Box::leak(name.into_boxed_str())
}

/// W7 on a [`System`].
pub fn w7<S: System>(cfg: &W7, results: &mut Results) {
    let mut runs = Vec::new();
    for &threads in &cfg.threads {
        runs.push(w7_run::<S>(threads, cfg.total));
    }
    report(S::NAME, &runs, results);
}

fn w7_run<S: System>(threads: usize, total: usize) -> Run {
    let per_thread = total / threads;
    let delays = Arc::new(delays_ms(20_000, 40_000, per_thread * threads));
    let sys = Arc::new(S::start());
    let cpu_before = process_cpu_ms();
    let barrier = Arc::new(Barrier::new(threads));
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (sys, barrier, delays) = (Arc::clone(&sys), Arc::clone(&barrier), Arc::clone(&delays));
            std::thread::spawn(move || {
                let mut local = sys.local();
                let mut window = VecDeque::with_capacity(WINDOW);
                let mut lost = 0;
                barrier.wait();
                let start = now_ns();
                for &delay in &delays[t * per_thread..(t + 1) * per_thread] {
                    if window.len() == WINDOW {
                        let oldest = window.pop_front().expect("a full window");
                        lost += usize::from(!sys.cancel(&mut local, &oldest));
                    }
                    window.push_back(sys.schedule(&mut local, Duration::from_millis(delay), counting_task()));
                }
                sys.sync(&mut local);
                let end = now_ns();
                for handle in window.drain(..) {
                    lost += usize::from(!sys.cancel(&mut local, &handle));
                }
                sys.sync(&mut local);
                drop(local);
                Span { start, end, lost }
            })
        })
        .collect();
    let spans: Vec<Span> = workers.into_iter().map(|w| w.join().expect("W7 thread")).collect();
    let cpu_ms = process_cpu_ms() - cpu_before;
    let lost: usize = spans.iter().map(|s| s.lost).sum();
    if lost > 0 {
        note(format!("{} W7 threads={threads}: {lost} cancels did not win", S::NAME));
    }
    let sys = Arc::try_unwrap(sys).unwrap_or_else(|_| unreachable!("W7 threads joined"));
    let held = sys.pending();
    if held != 0 {
        note(format!(
            "{} W7 threads={threads}: holds {held} entries after all cancels (what a lazy cancel keeps)",
            S::NAME
        ));
    }
    sys.shutdown();
    Run::new(threads, &spans, per_thread * threads, cpu_ms)
}

/// W7 on tokio's own timer: the whole of that system's run.
pub fn w7_tokio_timer(cfg: &W7) -> Results {
    let mut results = Results::new();
    let runs: Vec<_> = cfg.threads.iter().map(|&threads| tokio_run(threads, cfg.total)).collect();
    report(TOKIO_TIMER, &runs, &mut results);
    results
}

fn tokio_run(threads: usize, total: usize) -> Run {
    let per_thread = total / threads;
    let delays = Arc::new(delays_ms(20_000, 40_000, per_thread * threads));
    let (runtime, spans, cpu_ms) = tokio_tasks::run(threads, |t, barrier| {
        let delays = Arc::clone(&delays);
        async move {
            let mut window = VecDeque::with_capacity(WINDOW);
            barrier.wait().await;
            let start = now_ns();
            for &delay in &delays[t * per_thread..(t + 1) * per_thread] {
                if window.len() == WINDOW {
                    drop(window.pop_front());
                }
                let mut sleep = Box::pin(tokio::time::sleep(Duration::from_millis(delay)));
                // The first poll registers the sleep with the runtime's timer.
                let registered = poll_fn(|cx| Poll::Ready(sleep.as_mut().poll(cx).is_pending())).await;
                window.push_back(sleep);
                if !registered {
                    return Span { start, end: now_ns(), lost: 1 };
                }
            }
            let end = now_ns();
            window.clear();
            Span { start, end, lost: 0 }
        }
    });
    if spans.iter().any(|s| s.lost > 0) {
        note(format!("{TOKIO_TIMER} W7 threads={threads}: a sleep was ready at its first poll"));
    }
    runtime.shutdown_timeout(Duration::from_secs(10));
    Run::new(threads, &spans, per_thread * threads, cpu_ms)
}
