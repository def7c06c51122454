//! Purgatory throughput, in the shape of Kafka's `TestPurgatoryPerformance`: target request rate vs
//! achieved rate vs CPU time.
//!
//! A generator thread registers requests at the target rate (evenly spaced, in small batches). Each
//! request is watched under its own key plus `--shared-keys` keys drawn from `--key-space` (Kafka's
//! default: 3 keys from 100) and arms a timeout. Its completion latency is drawn from a log-normal
//! distribution given by its median and 75th percentile; if that is shorter than the timeout, a
//! completer thread acknowledges it at that time and calls `check_and_complete` on its own key
//! (Kafka's harness calls `forceComplete` directly; we go through the purgatory). Otherwise the
//! purgatory's reaper expires it. The completer keeps its schedule in a 1 ms calendar ring, so the
//! harness adds O(1) per request.
//!
//! ```text
//! cargo run --release --example purgatory_perf -- --mix low  --rates 250000,500000,1000000
//! cargo run --release --example purgatory_perf -- --mix high --rates 1000000 --duration 10
//! ```
//!
//! One line per rate: target and achieved rate, process CPU (and each thread's), how late the
//! expirations ran (expiry time minus registration time plus timeout), how long a check took to
//! complete an acknowledged request after the ack was due, pending operations and resident memory
//! at the end of the arrivals.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use delaywheel::purgatory::{DelayedOperation, Purgatory};
use delaywheel::Timer;
use hdrhistogram::Histogram;

mod support;
use support::flags::Flags;
use support::{
    build_timer, mib, proc_status_bytes, process_cpu, thread_cpu, Calendar, Latencies, Pacer, SplitMix,
};

#[derive(Clone, Copy, Debug)]
enum Mix {
    /// Median 20 ms, p75 60 ms, timeout 200 ms.
    Low,
    /// Median 200 ms, p75 400 ms, timeout 1000 ms.
    High,
}

impl std::str::FromStr for Mix {
    type Err = ();
    fn from_str(s: &str) -> Result<Mix, ()> {
        match s {
            "low" => Ok(Mix::Low),
            "high" => Ok(Mix::High),
            _ => Err(()),
        }
    }
}

impl std::fmt::Display for Mix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mix::Low => "low",
            Mix::High => "high",
        })
    }
}

#[derive(Debug)]
struct Args {
    mix: Mix,
    rates: Vec<f64>,
    duration: f64,
    pct50_ms: Option<f64>,
    pct75_ms: Option<f64>,
    timeout_ms: Option<u64>,
    shared_keys: usize,
    key_space: u64,
    tick_us: u64,
    wheel_size: Option<usize>,
    single_thread: Option<u64>,
    window: usize,
}

impl Args {
    fn parse() -> Args {
        let mut f = Flags::from_env("Purgatory throughput (Kafka TestPurgatoryPerformance shape)");
        let args = Args {
            mix: f.value(
                "mix",
                Mix::Low,
                "Latency/timeout mix: low (median 20 ms, p75 60 ms, timeout 200 ms) or high (200, 400, 1000 ms).",
            ),
            rates: f.list(
                "rates",
                "250000,500000,1000000",
                "Target request rates to run, one after the other (requests per second).",
            ),
            duration: f.value("duration", 5.0, "Seconds of arrivals per rate."),
            pct50_ms: f.option("pct50-ms", "Override the mix's median latency (ms)."),
            pct75_ms: f.option("pct75-ms", "Override the mix's 75th percentile latency (ms)."),
            timeout_ms: f.option("timeout-ms", "Override the mix's timeout (ms)."),
            shared_keys: f.value("shared-keys", 2, "Shared keys per request, on top of its own key."),
            key_space: f.value("key-space", 100, "Number of distinct shared keys."),
            tick_us: f.value("tick-us", 1_000, "Timer tick (µs)."),
            wheel_size: f.option("wheel-size", "Slots per wheel level (default: the crate's)."),
            single_thread: f.option(
                "single-thread",
                "Instead of the rate runs: on one thread, register this many requests and complete each one \
                 --window registrations later through a check of its own key (no timeouts fire).",
            ),
            window: f.value("window", 20_000, "Live requests in the single-thread run."),
        };
        f.require(args.rates.iter().all(|&rate| rate > 0.0), "every rate of --rates must be positive");
        f.require(args.duration > 0.0, "--duration must be positive");
        f.require(args.key_space > 0, "--key-space must be at least 1");
        f.require(args.single_thread != Some(0), "--single-thread must be at least 1");
        f.finish();
        args
    }
}

/// Per-run counters and histograms, leaked so operations reach them without a shared refcount.
struct Stats {
    start: Instant,
    /// `on_complete` calls (expired requests included).
    completed: AtomicU64,
    expired: AtomicU64,
    violations: AtomicU64,
    /// Expiry lateness, µs.
    late_expiry: Mutex<Histogram<u64>>,
    /// From the due ack to `on_complete`, µs.
    ack_to_complete: Mutex<Histogram<u64>>,
}

impl Stats {
    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
}

struct FakeOperation {
    acked: AtomicBool,
    done: AtomicBool,
    /// When the ack is due (ns since start), or `u64::MAX` if it never comes.
    ack_due_ns: u64,
    /// Registration time plus timeout (ns since start).
    deadline_ns: u64,
    stats: &'static Stats,
}

impl DelayedOperation for FakeOperation {
    fn try_complete(&self) -> bool {
        self.acked.load(Ordering::Acquire)
    }

    fn on_complete(&self) {
        if self.done.swap(true, Ordering::AcqRel) {
            self.stats.violations.fetch_add(1, Ordering::Relaxed);
        }
        self.stats.completed.fetch_add(1, Ordering::Relaxed);
        if self.acked.load(Ordering::Acquire) {
            let late = self.stats.now_ns().saturating_sub(self.ack_due_ns) / 1_000;
            let _ = self.stats.ack_to_complete.lock().unwrap().record(late.max(1));
        }
    }

    fn on_expiration(&self) {
        if !self.done.load(Ordering::Acquire) {
            self.stats.violations.fetch_add(1, Ordering::Relaxed);
        }
        self.stats.expired.fetch_add(1, Ordering::Relaxed);
        let late = self.stats.now_ns().saturating_sub(self.deadline_ns) / 1_000;
        let _ = self.stats.late_expiry.lock().unwrap().record(late.max(1));
    }
}

/// An acknowledgement the completer delivers: at `due_ms`, to the request with key `key`.
type Ack = (u64, u64, Arc<FakeOperation>);

struct RunResult {
    target: f64,
    achieved: f64,
    requests: u64,
    completed: u64,
    expired: u64,
    violations: u64,
    wall: Duration,
    cpu: Duration,
    generator_cpu: Duration,
    completer_cpu: Duration,
    late_expiry: Histogram<u64>,
    ack_to_complete: Histogram<u64>,
    pending_at_end_of_arrivals: usize,
    rss_at_end_of_arrivals: u64,
}

fn main() {
    let args = Args::parse();
    let (p50, p75, timeout) = match args.mix {
        Mix::Low => (20.0, 60.0, 200),
        Mix::High => (200.0, 400.0, 1_000),
    };
    let p50 = args.pct50_ms.unwrap_or(p50);
    let p75 = args.pct75_ms.unwrap_or(p75);
    if !(0.0 < p50 && p50 < p75) {
        eprintln!("error: need 0 < median < p75 (--pct50-ms {p50}, --pct75-ms {p75})");
        std::process::exit(2);
    }
    let timeout = Duration::from_millis(args.timeout_ms.unwrap_or(timeout));

    println!(
        "# purgatory_perf: delaywheel {}, mix {:?}: latency median {p50} ms, p75 {p75} ms, timeout {} ms; \
         keys per request: 1 own + {} of {}; tick {} µs",
        env!("CARGO_PKG_VERSION"),
        args.mix,
        timeout.as_millis(),
        args.shared_keys,
        args.key_space,
        args.tick_us
    );
    if let Some(n) = args.single_thread {
        single_thread(&args, n, timeout);
        return;
    }
    println!(
        "# {:>9} {:>9} {:>9} {:>7} {:>6} {:>6} {:>6} {:>8} {:>7} {:>7} {:>7} {:>7} {:>8} {:>7}",
        "target/s",
        "achieved",
        "requests",
        "expired",
        "cpu_s",
        "gen_s",
        "cmp_s",
        "cpu_us/r",
        "exp_p50",
        "exp_p99",
        "exp_max",
        "ack_p99",
        "pending",
        "rss_MiB"
    );
    for &rate in &args.rates {
        let r = run(&args, rate, timeout, Latencies::new(p50, p75, 42));
        let ms = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1_000.0;
        println!(
            "  {:>9.0} {:>9.0} {:>9} {:>7} {:>6.2} {:>6.2} {:>6.2} {:>8.3} {:>7.3} {:>7.3} {:>7.3} {:>7.3} {:>8} {:>7.1}",
            r.target,
            r.achieved,
            r.requests,
            r.expired,
            r.cpu.as_secs_f64(),
            r.generator_cpu.as_secs_f64(),
            r.completer_cpu.as_secs_f64(),
            r.cpu.as_secs_f64() * 1e6 / r.requests as f64,
            ms(&r.late_expiry, 0.5),
            ms(&r.late_expiry, 0.99),
            r.late_expiry.max() as f64 / 1_000.0,
            ms(&r.ack_to_complete, 0.99),
            r.pending_at_end_of_arrivals,
            mib(r.rss_at_end_of_arrivals),
        );
        assert_eq!(r.violations, 0, "exactly-once violated");
        assert_eq!(r.completed, r.requests, "every request completed once (by its ack or its expiry)");
        let _ = r.wall;
    }
}

fn run(args: &Args, rate: f64, timeout: Duration, latencies: Latencies) -> RunResult {
    let mut builder = Timer::builder().tick(Duration::from_micros(args.tick_us)).thread_name("reaper");
    if let Some(size) = args.wheel_size {
        builder = builder.wheel_size(size);
    }
    let purgatory: Arc<Purgatory<u64, FakeOperation>> = Arc::new(Purgatory::with_timer(build_timer(builder)));
    let stats: &'static Stats = Box::leak(Box::new(Stats {
        start: Instant::now(),
        completed: AtomicU64::new(0),
        expired: AtomicU64::new(0),
        violations: AtomicU64::new(0),
        late_expiry: Mutex::new(Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap()),
        ack_to_complete: Mutex::new(Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap()),
    }));
    let total = (rate * args.duration) as u64;
    let arriving = Arc::new(AtomicBool::new(true));
    let (ack_tx, ack_rx) = crossbeam_channel::unbounded::<Vec<Ack>>();
    let cpu_start = process_cpu();

    let completer = {
        let (purgatory, arriving) = (Arc::clone(&purgatory), Arc::clone(&arriving));
        thread::Builder::new()
            .name("completer".into())
            .spawn(move || complete(&purgatory, stats, &ack_rx, timeout, &arriving))
            .unwrap()
    };
    let generator = {
        let purgatory = Arc::clone(&purgatory);
        let (shared, key_space) = (args.shared_keys, args.key_space);
        thread::Builder::new()
            .name("generator".into())
            .spawn(move || {
                generate(&purgatory, stats, &ack_tx, latencies, rate, total, timeout, shared, key_space)
            })
            .unwrap()
    };
    let (requests, arrival_secs, generator_cpu) = generator.join().unwrap();
    let pending_at_end_of_arrivals = purgatory.delayed();
    let rss_at_end_of_arrivals = proc_status_bytes("VmRSS:");
    arriving.store(false, Ordering::Release);
    let completer_cpu = completer.join().unwrap();
    let give_up = Instant::now() + timeout * 2 + Duration::from_secs(5);
    // All three counts, not `delayed()` alone: an expired operation leaves `delayed()` when the timer
    // claims its timeout, a moment before its task takes its watches off their lists.
    let drained = || (purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()) == (0, 0, 0);
    while !drained() && Instant::now() < give_up {
        thread::sleep(Duration::from_millis(2));
    }
    let wall = stats.start.elapsed();
    let cpu = process_cpu() - cpu_start;
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (0, 0, 0));
    drop(purgatory);
    RunResult {
        target: rate,
        achieved: requests as f64 / arrival_secs,
        requests,
        completed: stats.completed.load(Ordering::Relaxed),
        expired: stats.expired.load(Ordering::Relaxed),
        violations: stats.violations.load(Ordering::Relaxed),
        wall,
        cpu,
        generator_cpu,
        completer_cpu,
        late_expiry: stats.late_expiry.lock().unwrap().clone(),
        ack_to_complete: stats.ack_to_complete.lock().unwrap().clone(),
        pending_at_end_of_arrivals,
        rss_at_end_of_arrivals,
    }
}

/// Registers and completes `n` requests on this thread, `window` of them live at a time.
fn single_thread(args: &Args, n: u64, timeout: Duration) {
    let purgatory: Purgatory<u64, FakeOperation> = Purgatory::new();
    let stats: &'static Stats = Box::leak(Box::new(Stats {
        start: Instant::now(),
        completed: AtomicU64::new(0),
        expired: AtomicU64::new(0),
        violations: AtomicU64::new(0),
        late_expiry: Mutex::new(Histogram::new(3).unwrap()),
        ack_to_complete: Mutex::new(Histogram::new(3).unwrap()),
    }));
    let mut rng = SplitMix(7);
    let mut live = std::collections::VecDeque::with_capacity(args.window + 1);
    let (cpu, start) = (thread_cpu(), Instant::now());
    for id in 0..n {
        let op = Arc::new(FakeOperation {
            acked: AtomicBool::new(false),
            done: AtomicBool::new(false),
            ack_due_ns: u64::MAX,
            deadline_ns: u64::MAX,
            stats,
        });
        let shared = (0..args.shared_keys).map(|_| (1 << 63) | (rng.next() % args.key_space));
        purgatory.try_complete_else_watch(Arc::clone(&op), timeout * 100, std::iter::once(id).chain(shared));
        live.push_back((id, op));
        if live.len() > args.window {
            let (key, op) = live.pop_front().unwrap();
            op.acked.store(true, Ordering::Release);
            purgatory.check_and_complete(&key);
        }
    }
    let (cpu, wall) = (thread_cpu() - cpu, start.elapsed());
    println!(
        "single thread: {n} requests, {} keys each, {} live: {:.0} ns CPU ({:.0} ns wall) per register + check",
        1 + args.shared_keys,
        args.window,
        cpu.as_nanos() as f64 / n as f64,
        wall.as_nanos() as f64 / n as f64
    );
}

/// Registers `total` requests at `rate` per second (fewer if the rate is out of reach: `Pacer`);
/// returns how many, the arrival time and its own CPU time.
#[allow(clippy::too_many_arguments)]
fn generate(
    purgatory: &Purgatory<u64, FakeOperation>,
    stats: &'static Stats,
    acks: &Sender<Vec<Ack>>,
    mut latencies: Latencies,
    rate: f64,
    total: u64,
    timeout: Duration,
    shared_keys: usize,
    key_space: u64,
) -> (u64, f64, Duration) {
    let mut rng = SplitMix(7);
    let timeout_ns = timeout.as_nanos() as u64;
    let mut pacer = Pacer::new(stats.start, rate, total);
    let mut batch = Vec::with_capacity(4096);
    while let Some(due) = pacer.next_due(Duration::from_micros(50)) {
        for id in due {
            let now = stats.now_ns();
            let latency_ns = latencies.next_nanos();
            let acked_in_time = latency_ns < timeout_ns;
            let op = Arc::new(FakeOperation {
                acked: AtomicBool::new(false),
                done: AtomicBool::new(false),
                ack_due_ns: if acked_in_time { now + latency_ns } else { u64::MAX },
                deadline_ns: now + timeout_ns,
                stats,
            });
            let shared = (0..shared_keys).map(|_| (1 << 63) | (rng.next() % key_space));
            let keys = std::iter::once(id).chain(shared);
            if acked_in_time {
                batch.push(((now + latency_ns) / 1_000_000, id, Arc::clone(&op)));
            }
            purgatory.try_complete_else_watch(op, timeout, keys);
        }
        if !batch.is_empty() {
            let _ = acks.send(std::mem::replace(&mut batch, Vec::with_capacity(4096)));
        }
    }
    (pacer.sent(), stats.start.elapsed().as_secs_f64(), thread_cpu())
}

/// Delivers acknowledgements when due: sets the flag, then checks the request's own key.
fn complete(
    purgatory: &Purgatory<u64, FakeOperation>,
    stats: &'static Stats,
    acks: &Receiver<Vec<Ack>>,
    timeout: Duration,
    arriving: &AtomicBool,
) -> Duration {
    let mut calendar = Calendar::new(timeout * 4);
    loop {
        let done_arriving = !arriving.load(Ordering::Acquire);
        for batch in acks.try_iter() {
            for (due_ms, key, op) in batch {
                calendar.insert(due_ms, (key, op));
            }
        }
        let delivered = calendar.deliver_due(stats.now_ns() / 1_000_000, |(key, op)| {
            op.acked.store(true, Ordering::Release);
            purgatory.check_and_complete(&key);
        });
        if done_arriving && calendar.is_empty() && acks.is_empty() {
            return thread_cpu();
        }
        if delivered == 0 {
            thread::sleep(Duration::from_micros(200));
        }
    }
}
