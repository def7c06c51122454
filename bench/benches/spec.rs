//! The standard timer workloads W1–W6 of `timer-bench workload spec v1` (`shared/bench/SPEC.md`), run
//! against delaywheel and its peers in one process, so that ratios from one run can be compared.
//!
//! ```sh
//! cargo bench -p delaywheel-bench --bench spec # everything, N = 1,000,000 SPEC_SYSTEMS=delaywheel,heap
//! SPEC_N=100000 cargo bench -p delaywheel-bench --bench spec # a quick run SPEC_WORKLOADS=W1,W2
//! SPEC_SYSTEMS=delaywheel cargo bench -p delaywheel-bench --bench spec
//! ```
//!
//! Environment:
//! * `SPEC_SYSTEMS`: comma-separated, any of `delaywheel`, `tokio` (`tokio-delayqueue`), `heap`
//!   (`binaryheap-mutex`), `hhwt` (`hierarchical_hash_wheel_timer`), `tokio-timer` (tokio's own
//!   timer: W7 only); default all, in that order. hhwt runs no W7 (its cancel is a message). Also,
//!   by name only, `lean`, `lean-arc`, `lean-spin`, `lean-arc-spin`, `lean-backoff`, `lean-pool`,
//!   `lean-pool-spin` and `lean-pool-backoff`: the measurement prototype of `spec/lean.rs`.
//! * `SPEC_N`: timers per workload (default 1,000,000; W3 gives each of its 2 threads N/2).
//! * `SPEC_WORKLOADS`: any of `W1`…`W7` and `W4s` (W2 needs W1 and runs it too); default all. W7
//!   (threads sharing one timer) is `spec/threads.rs`, with its own variables `SPEC_W7_THREADS`,
//!   `SPEC_W7_N`.
//! * `SPEC_W4S_BYTES`: W4s's captured-state sizes (default the SPEC's `8,32,64,128,256`).
//! * `SPEC_W5_MS`: W5's idle window (default the SPEC's 5000 ms).
//! * `SPEC_WHEEL_SIZE`: delaywheel's wheel size instead of its default (for comparing sizes;
//!   the figures in docs/benchmarks.md use the default, as the SPEC says).
//! * `SPEC_CAPACITY`: delaywheel built with `TimerBuilder::capacity(n)` (its arena allocated and
//!   written before the clock starts: a warmed timer against the default cold one), and the lean
//!   core's systems with `n` free slots written into the scheduling thread's shard; the peers are
//!   never reserved.
//! * `SPEC_LANES`: delaywheel built with `TimerBuilder::bucket_lanes(n)` instead of the host's
//!   default (the cores rounded up to a power of two, 8 to 16: what a bigger host gets).
//!
//! stdout carries exactly the SPEC lines; comments (`# …`: caller-side times of asynchronous peers,
//! checks, ratios) go to stderr.
//!
//! # The workloads (as SPEC.md defines them)
//! Delays are whole milliseconds from splitmix64 seeded with 42 at each workload's start, drawn into
//! a vector before the clock starts (every system gets the same sequence; the PRNG is not timed).
//! Tick 1 ms wherever a timer takes one, each timer's default wheel size. A task increments a shared
//! atomic counter (an 8-byte closure holding `&'static AtomicU64`); in W4 it also stores its lateness.
//! * W1: one thread inserts N timers (delays in [10000, 70000) ms), keeping the handles in a vector
//!   reserved beforehand; wall ns per insert.
//! * W2: right after, on the same timer, cancels all N in insertion order; wall ns per cancel and
//!   the pending count afterwards (what the timer still holds, see below).
//! * W3: fresh timer, 2 threads (released by a barrier) insert N/2 each; N / (last end − first start).
//! * W4: fresh timer, one thread inserts N timers with delays in [0, 1000) ms, handles dropped; waits
//!   until all fired. Lateness = fire time − (time read just before the insert call + delay), into
//!   an HDR histogram (ns, 3 significant digits); process CPU (`getrusage`, user + sys, all threads)
//!   from the first insert to the last fire.
//! * W4s: W4 once per captured-state size (8, 32, 64, 128, 256 bytes), each on a fresh timer; the
//!   task captures that many bytes and reads them all when it fires (`spec/expire.rs`). stderr
//!   gives each size's CPU and p99 against the 8-byte run.
//! * W5: fresh timer, one task due in 60 s, then 5 s of sleep; process CPU over those 5 s.
//! * W6: fresh timer; inserts N timers (delays in [10000, 70000) ms, handles dropped);
//!   (RSS after − RSS before) / N, RSS from `/proc/self/statm`, `method=rss`, each reading taken
//!   after `malloc_trim(0)` (so free memory glibc retains, such as a drained channel backlog, is not
//!   counted as held by the timer). Each system's W6 runs in a **fresh child process** (this binary
//!   re-invoked with `SPEC_W6_CHILD=<system>`): after W1–W5 the allocator holds freed memory that
//!   would absorb the inserts and hide them from the delta.
//!
//! For peers whose schedule/cancel only enqueue a message for the timer's own thread
//! (`hierarchical_hash_wheel_timer`), W1–W3 and W6 stop the clock (take the RSS) once the timer
//! has *applied* every operation: an insert is done when the timer holds it. The caller-side time
//! alone is printed as a comment.
//!
//! # The systems and how each is driven
//! * `delaywheel`: `Timer::builder().tick(1 ms).build()`: its own driver thread, default wheel
//!   size. `schedule` returns a `TimerHandle`; `cancel()`; `len()`. W3 shares an `Arc<Timer>`.
//! * `tokio-delayqueue`: tokio-util's `DelayQueue<Box<dyn FnOnce() + Send>>` in an
//!   `Arc<std::sync::Mutex<_>>`, polled by one task on a default multi-thread runtime (2 workers
//!   here) that runs each expired closure. This is how it is used when several parts of a program
//!   insert and remove: the queue is `!Sync` and needs `&mut` for everything, so it is shared
//!   behind a mutex (std's, as tokio's docs recommend for short critical sections) and one task owns
//!   the polling. Inserting threads enter the runtime context once (`Runtime::enter`), as code
//!   on the runtime is in. The alternative (a task that owns the queue and receives commands over a
//!   channel) returns no `Key` to the inserter without a reply channel, so cancelling needs a
//!   second map inside the task; the mutex form gives the same synchronous insert/cancel/len as the
//!   other systems. `try_remove` frees the entry at once, so `pending_after` is exact.
//! * `binaryheap-mutex`: `std::collections::BinaryHeap` of (deadline ns, seq, task slot) behind a
//!   parking_lot `Mutex`, one driver thread sleeping on a `Condvar` until the head is due (notified
//!   only when an insert becomes the new head), firing outside the lock. One allocation per timer
//!   (the slot holding the closure, shared by handle and heap). Cancellation is lazy: `cancel` takes
//!   the closure out of the slot (dropped at once, exactly-once with firing), the heap entry stays
//!   until popped, so `pending_after` is the heap length: N.
//! * `hierarchical_hash_wheel_timer`: its `TimerWithThread` (four 256-slot byte wheels of 1 ms, own
//!   thread), used through `TimerRef`s (one clone per thread) with `u64` ids unique per thread:
//!   `schedule_action_once` and `cancel(&id)` send messages over its crossbeam channel. Its cancel
//!   removes the id from a hash map and leaves a `Weak` in the wheel slot (with the `Rc` allocation
//!   it points to) until the wheel reaches that slot, so right after W2 all N are still held:
//!   `pending_after` reports scheduled − fired, the held count (the crate exposes no length).

#[path = "spec/expire.rs"]
mod expire;
#[allow(dead_code)] // `HeapCore::advance` serves benches/scaling.rs
#[path = "spec/heap.rs"]
mod heap;
#[path = "spec/lean.rs"]
mod lean;
#[path = "spec/measure.rs"]
mod measure;
#[path = "spec/systems.rs"]
mod systems;
#[path = "spec/threads.rs"]
mod threads;
#[path = "spec/tokio_tasks.rs"]
mod tokio_tasks;

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use delaywheel_bench::lean_core::{Backoff, Parked, Spin};
use delaywheel_bench::process_cpu_ms;
use measure::{counting_task, delays_ms, now_ns, rss_bytes, FIRED};
use systems::{DelayWheel, HeapTimer, Hhwt, System, TokioDelayQueue};

const SYSTEMS: [&str; 5] =
    [DelayWheel::NAME, TokioDelayQueue::NAME, HeapTimer::NAME, Hhwt::NAME, threads::TOKIO_TIMER];

struct Config {
    systems: Vec<&'static str>,
    n: usize,
    workloads: Vec<String>,
    w5: Duration,
    /// W4s's captured-state sizes, in bytes.
    w4s: Vec<usize>,
    w7: threads::W7,
}

impl Config {
    fn from_env() -> Config {
        let systems = match std::env::var("SPEC_SYSTEMS") {
            Ok(list) if !list.trim().is_empty() => list
                .split(',')
                .map(|name| canonical(name.trim()).unwrap_or_else(|| panic!("unknown system {name:?}")))
                .collect(),
            _ => SYSTEMS.to_vec(),
        };
        let n = std::env::var("SPEC_N")
            .ok()
            .map(|n| n.replace('_', "").parse().expect("SPEC_N: a number"))
            .unwrap_or(1_000_000);
        let workloads = match std::env::var("SPEC_WORKLOADS") {
            Ok(list) if !list.trim().is_empty() => list.split(',').map(|w| w.trim().to_uppercase()).collect(),
            _ => ["W1", "W2", "W3", "W4", "W4S", "W5", "W6", "W7"].map(String::from).to_vec(),
        };
        let w5 = std::env::var("SPEC_W5_MS")
            .ok()
            .map(|ms| Duration::from_millis(ms.parse().expect("SPEC_W5_MS: milliseconds")))
            .unwrap_or(Duration::from_secs(5));
        let w4s = match std::env::var("SPEC_W4S_BYTES") {
            Ok(list) if !list.trim().is_empty() => {
                list.split(',').map(|b| b.trim().parse().expect("SPEC_W4S_BYTES: sizes in bytes")).collect()
            }
            _ => expire::SIZES.to_vec(),
        };
        Config { systems, n, workloads, w5, w4s, w7: threads::W7::from_env(n) }
    }

    fn runs(&self, workload: &str) -> bool {
        self.workloads.iter().any(|w| w == workload)
    }
}

fn canonical(name: &str) -> Option<&'static str> {
    Some(match name {
        "delaywheel" => DelayWheel::NAME,
        "tokio" | "tokio-delayqueue" | "tokio-util" => TokioDelayQueue::NAME,
        "heap" | "binaryheap" | "binaryheap-mutex" => HeapTimer::NAME,
        "hhwt" | "hierarchical_hash_wheel_timer" => Hhwt::NAME,
        "tokio-timer" => threads::TOKIO_TIMER,
        "lean" | "lean-core" => lean::LeanKeys::<Parked>::NAME,
        "lean-arc" | "lean-core-arc" => lean::LeanArc::<Parked>::NAME,
        "lean-spin" | "lean-core-spin" => lean::LeanKeys::<Spin>::NAME,
        "lean-arc-spin" | "lean-core-arc-spin" => lean::LeanArc::<Spin>::NAME,
        "lean-backoff" | "lean-core-backoff" => lean::LeanKeys::<Backoff>::NAME,
        "lean-pool" | "lean-core-pool" => lean::LeanPool::<Parked>::NAME,
        "lean-pool-spin" | "lean-core-pool-spin" => lean::LeanPool::<Spin>::NAME,
        "lean-pool-backoff" | "lean-core-pool-backoff" => lean::LeanPool::<Backoff>::NAME,
        _ => return None,
    })
}

/// The numbers of one system, kept for the ratio summary.
type Results = BTreeMap<&'static str, f64>;

fn line(text: String) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

fn note(text: String) {
    eprintln!("# {text}");
}

fn ns_per(total: Duration, ops: usize) -> f64 {
    total.as_nanos() as f64 / ops.max(1) as f64
}

/// Drops a timer that still holds many entries, outside every measurement.
fn stop<S: System>(sys: S) {
    sys.shutdown();
}

fn w1_w2<S: System>(cfg: &Config, results: &mut Results) {
    let delays = delays_ms(10_000, 70_000, cfg.n);
    FIRED.store(0, Ordering::SeqCst);
    let sys = S::start();
    let mut local = sys.local();
    let mut handles = Vec::with_capacity(cfg.n);

    let start = Instant::now();
    for &delay in &delays {
        handles.push(sys.schedule(&mut local, Duration::from_millis(delay), counting_task()));
    }
    let caller = start.elapsed();
    sys.sync(&mut local);
    let w1 = start.elapsed();
    line(format!("{} W1 insert ns_per_op={:.1}", S::NAME, ns_per(w1, cfg.n)));
    results.insert("W1 ns", ns_per(w1, cfg.n));
    if S::ASYNC {
        note(format!("{} W1 caller side only: {:.1} ns per insert", S::NAME, ns_per(caller, cfg.n)));
    }
    if !cfg.runs("W2") {
        drop(local);
        drop(handles);
        return stop(sys);
    }

    let start = Instant::now();
    let mut cancelled = 0usize;
    for handle in &handles {
        cancelled += usize::from(sys.cancel(&mut local, handle));
    }
    let caller = start.elapsed();
    sys.sync(&mut local);
    let w2 = start.elapsed();
    drop(local);
    let pending = sys.pending();
    line(format!("{} W2 cancel ns_per_op={:.1} pending_after={}", S::NAME, ns_per(w2, cfg.n), pending));
    results.insert("W2 ns", ns_per(w2, cfg.n));
    if S::ASYNC {
        note(format!("{} W2 caller side only: {:.1} ns per cancel", S::NAME, ns_per(caller, cfg.n)));
    }
    if cancelled != cfg.n {
        note(format!("{} W2: only {cancelled} of {} cancels reported success", S::NAME, cfg.n));
    }
    drop(handles);
    stop(sys);
}

fn w3<S: System>(cfg: &Config, results: &mut Results) {
    const THREADS: usize = 2;
    let delays = Arc::new(delays_ms(10_000, 70_000, cfg.n));
    FIRED.store(0, Ordering::SeqCst);
    let sys = Arc::new(S::start());
    let barrier = Arc::new(Barrier::new(THREADS));
    let per_thread = cfg.n / THREADS;
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (sys, barrier, delays) = (Arc::clone(&sys), Arc::clone(&barrier), Arc::clone(&delays));
            std::thread::spawn(move || {
                let mut local = sys.local();
                let mut handles = Vec::with_capacity(per_thread);
                barrier.wait();
                let start = now_ns();
                for &delay in &delays[t * per_thread..(t + 1) * per_thread] {
                    handles.push(sys.schedule(&mut local, Duration::from_millis(delay), counting_task()));
                }
                let caller_end = now_ns();
                sys.sync(&mut local);
                let end = now_ns();
                drop(local);
                (start, caller_end, end, handles)
            })
        })
        .collect();
    let spans: Vec<_> = threads.into_iter().map(|t| t.join().expect("W3 thread")).collect();
    let first = spans.iter().map(|s| s.0).min().unwrap_or(0);
    let caller_end = spans.iter().map(|s| s.1).max().unwrap_or(0);
    let end = spans.iter().map(|s| s.2).max().unwrap_or(0);
    let total = per_thread * THREADS;
    let ns = (end - first) as f64 / total as f64;
    line(format!("{} W3 insert2 ns_per_op={ns:.1}", S::NAME));
    results.insert("W3 ns", ns);
    if S::ASYNC {
        let caller = (caller_end - first) as f64 / total as f64;
        note(format!("{} W3 caller side only: {caller:.1} ns per insert", S::NAME));
    }
    drop(spans);
    match Arc::try_unwrap(sys) {
        Ok(sys) => stop(sys),
        Err(_) => unreachable!("W3 threads joined"),
    }
}

fn w5<S: System>(cfg: &Config, results: &mut Results) {
    let sys = S::start();
    let mut local = sys.local();
    let handle = sys.schedule(&mut local, Duration::from_secs(60), counting_task());
    let before = process_cpu_ms();
    std::thread::sleep(cfg.w5);
    let cpu = process_cpu_ms() - before;
    drop(local);
    line(format!("{} W5 idle cpu_ms={cpu:.1}", S::NAME));
    results.insert("W5 cpu ms", cpu);
    if cfg.w5 != Duration::from_secs(5) {
        note(format!("{} W5 over {} ms, not the SPEC's 5000 ms", S::NAME, cfg.w5.as_millis()));
    }
    drop(handle);
    stop(sys);
}

/// W6 in this process: what a child (`SPEC_W6_CHILD`) runs.
fn w6_here<S: System>(n: usize) -> f64 {
    let delays = delays_ms(10_000, 70_000, n);
    let sys = S::start();
    let mut local = sys.local();
    std::thread::sleep(Duration::from_millis(50)); // let the driver threads start and settle
    let before = rss_bytes();
    for &delay in &delays {
        drop(sys.schedule(&mut local, Duration::from_millis(delay), counting_task()));
    }
    sys.sync(&mut local);
    let after = rss_bytes();
    drop(local);
    let held = sys.pending();
    if held != n {
        note(format!("{} W6: holds {held} timers, expected {n}", S::NAME));
    }
    let bytes = after.saturating_sub(before) as f64 / n as f64;
    line(format!("{} W6 memory bytes_per_timer={bytes:.1} method=rss", S::NAME));
    stop(sys);
    bytes
}

/// W6 in a fresh child process, its SPEC line passed through.
fn w6<S: System>(cfg: &Config, results: &mut Results) {
    let exe = std::env::current_exe().expect("current_exe");
    let output = std::process::Command::new(exe)
        .env("SPEC_W6_CHILD", S::NAME)
        .env("SPEC_N", cfg.n.to_string())
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("run the W6 child");
    let stdout = String::from_utf8_lossy(&output.stdout);
    for text in stdout.lines() {
        line(text.to_string());
        if let Some(bytes) = text.split("bytes_per_timer=").nth(1).and_then(|v| v.split(' ').next()) {
            results.insert("W6 bytes", bytes.parse().unwrap_or(f64::NAN));
        }
    }
    if !output.status.success() {
        note(format!("{} W6 child failed: {}", S::NAME, output.status));
    }
}

fn run<S: System>(cfg: &Config) -> Results {
    let mut results = Results::new();
    if cfg.runs("W1") || cfg.runs("W2") {
        w1_w2::<S>(cfg, &mut results);
    }
    if cfg.runs("W3") {
        w3::<S>(cfg, &mut results);
    }
    if cfg.runs("W4") {
        expire::w4::<S>(cfg, &mut results);
    }
    if cfg.runs("W4S") {
        expire::w4s::<S>(&cfg.w4s, cfg, &mut results);
    }
    if cfg.runs("W5") {
        w5::<S>(cfg, &mut results);
    }
    if cfg.runs("W6") {
        w6::<S>(cfg, &mut results);
    }
    // hierarchical_hash_wheel_timer's cancel is a message applied later: no pair to time.
    if cfg.runs("W7") && S::NAME != Hhwt::NAME {
        threads::w7::<S>(&cfg.w7, &mut results);
    }
    results
}

fn run_named(name: &str, cfg: &Config) -> Results {
    match name {
        n if n == DelayWheel::NAME => run::<DelayWheel>(cfg),
        n if n == TokioDelayQueue::NAME => run::<TokioDelayQueue>(cfg),
        n if n == HeapTimer::NAME => run::<HeapTimer>(cfg),
        n if n == Hhwt::NAME => run::<Hhwt>(cfg),
        n if n == lean::LeanKeys::<Parked>::NAME => run::<lean::LeanKeys<Parked>>(cfg),
        n if n == lean::LeanArc::<Parked>::NAME => run::<lean::LeanArc<Parked>>(cfg),
        n if n == lean::LeanKeys::<Spin>::NAME => run::<lean::LeanKeys<Spin>>(cfg),
        n if n == lean::LeanArc::<Spin>::NAME => run::<lean::LeanArc<Spin>>(cfg),
        n if n == lean::LeanKeys::<Backoff>::NAME => run::<lean::LeanKeys<Backoff>>(cfg),
        n if n == lean::LeanPool::<Parked>::NAME => run::<lean::LeanPool<Parked>>(cfg),
        n if n == lean::LeanPool::<Spin>::NAME => run::<lean::LeanPool<Spin>>(cfg),
        n if n == lean::LeanPool::<Backoff>::NAME => run::<lean::LeanPool<Backoff>>(cfg),
        // tokio's own timer has no handle to cancel but its `Sleep`: W7 only.
        n if n == threads::TOKIO_TIMER => match cfg.runs("W7") {
            true => threads::w7_tokio_timer(&cfg.w7),
            false => Results::new(),
        },
        _ => unreachable!("canonical names only"),
    }
}

/// peer ÷ delaywheel for every number both have: above 1, delaywheel is faster / leaner.
fn print_ratios(all: &[(&'static str, Results)]) {
    let Some((_, ours)) = all.iter().find(|(name, _)| *name == DelayWheel::NAME) else { return };
    for (name, theirs) in all.iter().filter(|(name, _)| *name != DelayWheel::NAME) {
        let ratios: Vec<String> = theirs
            .iter()
            .filter_map(|(metric, &value)| {
                let base = *ours.get(metric)?;
                Some(format!("{metric} {:.2}x", value / base))
            })
            .collect();
        if !ratios.is_empty() {
            note(format!("ratio {name} / delaywheel: {}", ratios.join(", ")));
        }
    }
}

fn main() {
    measure::check_splitmix();
    if let Ok(child) = std::env::var("SPEC_W6_CHILD") {
        let n = Config::from_env().n;
        match canonical(&child) {
            Some(n_) if n_ == DelayWheel::NAME => w6_here::<DelayWheel>(n),
            Some(n_) if n_ == TokioDelayQueue::NAME => w6_here::<TokioDelayQueue>(n),
            Some(n_) if n_ == HeapTimer::NAME => w6_here::<HeapTimer>(n),
            Some(n_) if n_ == Hhwt::NAME => w6_here::<Hhwt>(n),
            _ => panic!("unknown SPEC_W6_CHILD {child:?}"),
        };
        return;
    }
    let cfg = Config::from_env();
    note(format!(
        "timer-bench workload spec v1: N={} systems={} workloads={}",
        cfg.n,
        cfg.systems.join(","),
        cfg.workloads.join(",")
    ));
    let mut all = Vec::new();
    for &name in &cfg.systems {
        all.push((name, run_named(name, &cfg)));
    }
    print_ratios(&all);
}
