//! Request timeouts at broker scale: the shape of Kafka's purgatory benchmark
//! (`TestPurgatoryPerformance`) on this timer.
//!
//! Requests arrive at a target rate. Each arms a timeout on the timer (200 ms by default) and
//! completes after a log-normal service time (median 20 ms, 75th percentile 60 ms by default), which
//! cancels its timeout; the slow ones time out instead. Completions are simulated off the timer, by a
//! separate thread with its own heap, so the lateness figures are the timer's; the process CPU time
//! also includes the request generator and that completer thread (both poll every 100–200 µs).
//!
//! ```text
//! cargo run --release --example request_timeouts
//! cargo run --release --example request_timeouts -- --rate 500000 --duration 10 --timeout-ms 100
//! ```
//!
//! The summary compares the achieved arrival rate with the target, counts completed and timed-out
//! requests, and reports how late the timeouts fired (fire time minus arm time plus timeout), the
//! process CPU time and the peak resident memory.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use delaywheel::{TaskExecution, Timer, TimerHandle};
use hdrhistogram::Histogram;

mod support;
use support::flags::Flags;
use support::progress::Progress;
use support::{build_timer, log_normal, mib, proc_status_bytes, process_cpu, Pacer, SplitMix};

#[derive(Debug)]
struct Args {
    rate: f64,
    duration: f64,
    timeout_ms: u64,
    median_ms: f64,
    p75_ms: f64,
    tick_us: u64,
    wheel_size: Option<usize>,
    executor_threads: Option<usize>,
    no_progress: bool,
}

impl Args {
    fn parse() -> Args {
        let mut f = Flags::from_env(
            "Simulate request timeouts on a delaywheel timer (Kafka purgatory benchmark shape)",
        );
        let args = Args {
            rate: f.value("rate", 100_000.0, "Target request arrival rate, per second."),
            duration: f.value("duration", 5.0, "How long requests keep arriving, in seconds."),
            timeout_ms: f.value("timeout-ms", 200, "The timeout each request arms, in milliseconds."),
            median_ms: f.value("median-ms", 20.0, "Median service time (completion delay), in milliseconds."),
            p75_ms: f.value(
                "p75-ms",
                60.0,
                "75th percentile of the service time, in milliseconds (sets the log-normal spread).",
            ),
            tick_us: f.value("tick-us", 1_000, "Timer tick, in microseconds."),
            wheel_size: f.option("wheel-size", "Slots per wheel level (default: the crate's default)."),
            executor_threads: f.option(
                "executor-threads",
                "Run timeouts on this many executor threads instead of on the driver.",
            ),
            no_progress: f.switch("no-progress", "Do not draw the progress bar."),
        };
        f.require(args.rate > 0.0 && args.duration > 0.0, "--rate and --duration must be positive");
        f.require(0.0 < args.median_ms && args.median_ms < args.p75_ms, "need 0 < --median-ms < --p75-ms");
        f.finish();
        args
    }
}

/// Requests waiting for their simulated completion, earliest first.
type Completions = Mutex<BinaryHeap<Reverse<(Instant, u64, TimerHandleCell)>>>;

/// A handle in the completion heap (ordered by the time and id before it only).
struct TimerHandleCell(TimerHandle);
impl PartialEq for TimerHandleCell {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for TimerHandleCell {}
impl PartialOrd for TimerHandleCell {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for TimerHandleCell {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

#[derive(Default)]
struct Outcome {
    arrived: AtomicU64,
    completed: AtomicU64,
    timed_out: AtomicU64,
}

fn main() {
    let args = Args::parse();
    let service = log_normal(args.median_ms, args.p75_ms);

    let mut builder = Timer::builder().tick(Duration::from_micros(args.tick_us));
    if let Some(size) = args.wheel_size {
        builder = builder.wheel_size(size);
    }
    if let Some(n) = args.executor_threads {
        builder = builder.execution(TaskExecution::Threads(n));
    }
    let timer = Arc::new(build_timer(builder));
    let timeout = Duration::from_millis(args.timeout_ms);
    let total = (args.rate * args.duration) as u64;

    let outcome = Arc::new(Outcome::default());
    let lateness = Arc::new(Mutex::new(Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap()));
    let completions: Arc<Completions> = Arc::new(Mutex::new(BinaryHeap::new()));
    let arriving = Arc::new(AtomicBool::new(true));
    let cpu_start = process_cpu();
    let start = Instant::now();

    // Completer: cancels a request's timeout when its service time has elapsed.
    let completer = {
        let (completions, outcome, arriving) =
            (Arc::clone(&completions), Arc::clone(&outcome), Arc::clone(&arriving));
        thread::spawn(move || loop {
            let now = Instant::now();
            let mut done = Vec::new();
            {
                let mut heap = completions.lock().unwrap();
                while heap.peek().is_some_and(|Reverse((at, _, _))| *at <= now) {
                    done.push(heap.pop().unwrap().0 .2);
                }
                if done.is_empty() && heap.is_empty() && !arriving.load(Ordering::Acquire) {
                    return;
                }
            }
            for TimerHandleCell(handle) in done {
                if handle.cancel() {
                    outcome.completed.fetch_add(1, Ordering::Relaxed);
                }
            }
            thread::sleep(Duration::from_micros(200));
        })
    };

    // Generator: requests arrive at the target rate, each arming a timeout.
    let generator = {
        let (timer, outcome, lateness, completions, arriving) = (
            Arc::clone(&timer),
            Arc::clone(&outcome),
            Arc::clone(&lateness),
            Arc::clone(&completions),
            Arc::clone(&arriving),
        );
        let rate = args.rate;
        thread::spawn(move || {
            let mut rng = SplitMix(42);
            let mut batch = Vec::with_capacity(1024);
            let mut pacer = Pacer::new(start, rate, total);
            while let Some(due) = pacer.next_due(Duration::from_micros(100)) {
                for id in due {
                    let armed = Instant::now();
                    let deadline = armed + timeout;
                    let (outcome, lateness) = (Arc::clone(&outcome), Arc::clone(&lateness));
                    let handle = timer.schedule(timeout, move || {
                        let late = Instant::now().saturating_duration_since(deadline);
                        outcome.timed_out.fetch_add(1, Ordering::Relaxed);
                        let _ = lateness.lock().unwrap().record((late.as_micros() as u64).max(1));
                    });
                    // A request slower than its timeout times out: its completion would find the
                    // timeout already fired, so it is not simulated.
                    let service_time = Duration::from_secs_f64(service.sample(&mut rng) / 1_000.0);
                    if service_time < timeout {
                        batch.push(Reverse((armed + service_time, id, TimerHandleCell(handle))));
                    }
                }
                completions.lock().unwrap().extend(batch.drain(..));
                outcome.arrived.store(pacer.sent(), Ordering::Relaxed);
            }
            arriving.store(false, Ordering::Release);
        })
    };

    let bar = Progress::new(total, args.no_progress);
    while !generator.is_finished() {
        bar.show(outcome.arrived.load(Ordering::Relaxed), &format!("pending timeouts {}", timer.len()));
        thread::sleep(Duration::from_millis(50));
    }
    let arrival_secs = start.elapsed().as_secs_f64();
    generator.join().unwrap();
    bar.show(total, "draining");
    completer.join().unwrap();
    let give_up = Instant::now() + timeout * 4 + Duration::from_secs(5);
    while !timer.is_empty() && Instant::now() < give_up {
        thread::sleep(Duration::from_millis(5));
    }
    bar.finish();
    let cpu = process_cpu() - cpu_start;
    let wall = start.elapsed();

    let arrived = outcome.arrived.load(Ordering::Relaxed);
    let completed = outcome.completed.load(Ordering::Relaxed);
    let timed_out = outcome.timed_out.load(Ordering::Relaxed);
    let late = lateness.lock().unwrap();
    let ms = |us: u64| us as f64 / 1_000.0;
    let stats = timer.stats();
    println!(
        "request_timeouts: delaywheel {} tick {:?}, wheel size {}, tasks run {}",
        env!("CARGO_PKG_VERSION"),
        timer.tick(),
        timer.wheel_size(),
        args.executor_threads.map_or("on the driver".to_owned(), |n| format!("on {n} executor threads"))
    );
    println!(
        "workload: timeout {} ms, service time log-normal median {} ms / p75 {} ms",
        args.timeout_ms, args.median_ms, args.p75_ms
    );
    println!("+--------------------------+------------------+");
    let row = |k: &str, v: String| println!("| {k:<24} | {v:>16} |");
    row("target rate (req/s)", format!("{:.0}", args.rate));
    row("achieved rate (req/s)", format!("{:.0}", arrived as f64 / arrival_secs));
    row("requests", arrived.to_string());
    row("completed", completed.to_string());
    row("timed out", timed_out.to_string());
    row("unresolved at exit", (arrived - completed - timed_out).to_string());
    row("timeout late p50 (ms)", format!("{:.3}", ms(late.value_at_quantile(0.5))));
    row("timeout late p99 (ms)", format!("{:.3}", ms(late.value_at_quantile(0.99))));
    row("timeout late max (ms)", format!("{:.3}", ms(late.max())));
    row("wall time (s)", format!("{:.2}", wall.as_secs_f64()));
    row("process CPU (ms)", format!("{:.0}", cpu.as_secs_f64() * 1_000.0));
    row("CPU per request (µs)", format!("{:.2}", cpu.as_secs_f64() * 1e6 / arrived.max(1) as f64));
    row("peak RSS (MiB)", format!("{:.1}", mib(proc_status_bytes("VmHWM:"))));
    row("timer panicked tasks", stats.panicked.to_string());
    println!("+--------------------------+------------------+");
    if completed + timed_out != arrived {
        eprintln!(
            "warning: {} requests were still unresolved when the drain gave up",
            arrived - completed - timed_out
        );
        std::process::exit(1);
    }
}
