//! The broker workload: the mix of timer operations a broker-like server's request threads perform,
//! run against delaywheel and its peers in one process, so that ratios from one run can be compared.
//! The SPEC workloads (`spec.rs`, `rearm.rs`) each isolate one operation with an 8-byte task; this
//! one measures them together, with the state a server's timeouts capture.
//!
//! ```sh
//! cargo bench -p delaywheel-bench --bench broker                                   # everything
//! BROKER_SYSTEMS=delaywheel,heap BROKER_THREADS=1,16 cargo bench -p delaywheel-bench --bench broker
//! ```
//!
//! # The workload
//! * T ∈ {1, 2, 4, 16} request threads share one timer (a fresh timer per T); each owns C = 2,000
//!   connections, each with an **idle timeout** of 60 s (armed before the clock starts).
//! * M = 2,000,000 messages in all, split evenly over the threads. Per message, on its connection
//!   (drawn uniformly among the thread's C): the connection's idle timeout is **re-armed** to 60 s
//!   from now; a **request timeout** of 30 s is armed, its task capturing 40 bytes (an `Arc` to the
//!   connection, a `u64` request id, the `Instant` the request was received, a `u64` size), which it
//!   reads when it runs; the response to a request arrives W = 64 answered requests later on the
//!   same thread (a FIFO window) and **cancels** its timeout.
//! * 1 request in 100 is never answered: its timeout is 5–50 ms, it stays out of the window (its
//!   handle is dropped: fire-and-forget) and its task **runs** during the run. Each run checks that
//!   every unanswered request's task runs exactly once and no other request's or idle task runs
//!   (a ledger bit per request id), and that every cancel and re-arm wins; a failed check makes
//!   the run exit with an error.
//! * The plan (connection, answered or not, short timeout, size of every message) is drawn before
//!   the clock starts: splitmix64 seeded with 42, thread `t` takes the `t`-th share.
//!
//! Measured per T: wall ns per message (first thread's start to last thread's end, over M), process
//! CPU ns per message (every thread, the timer's own included, from spawn to join: the figure to
//! read on a loaded host), the throughput at T over the throughput at T = 1 (`scaling`), the timeouts
//! that ran against the unanswered requests once the run has drained (up to 10 s after the last
//! thread's end), the entries the timer holds then (`held`: the idle timeouts, T × C, plus what a
//! lazy system keeps) and the RSS growth from before the timer started to then (read after
//! `malloc_trim(0)`): in all (`rss_kib`: the timer's fixed cost included, the connections too, some
//! 40 bytes each) and per idle timeout still pending (`rss_per_idle`; not for `tokio-timer`, whose
//! request tasks drop their sleeps when they end, before the read). Each system and T runs in a
//! fresh child process (this binary, `BROKER_CHILD` set), so that its RSS growth is its own; each T
//! runs every system in turn, the order rotated from one T to the next.
//!
//! Environment: `BROKER_SYSTEMS` (any of `delaywheel`, `tokio` (`tokio-delayqueue`), `heap`
//! (`binaryheap-mutex`), `tokio-timer`; default all, in that order), `BROKER_THREADS` (default
//! `1,2,4,16`), `BROKER_M`, `BROKER_CONNS`, `BROKER_WINDOW`; delaywheel's builder variables of
//! `spec.rs` apply too (`SPEC_LANES`, `SPEC_WHEEL_SIZE`, `SPEC_CAPACITY`). `cargo test --benches` runs a
//! small M.
//!
//! # The systems
//! The `System`s of `spec/systems.rs`, driven as `spec.rs` describes: delaywheel (its own driver
//! thread, tick 1 ms; re-arm by `TimerHandle::reset`), tokio-util's `DelayQueue` behind a mutex,
//! polled on a 2-worker runtime (`DelayQueue::reset`), the `BinaryHeap` behind a mutex with its
//! driver thread (a re-arm is a cancel and an insert of a new task, as SPEC W8 has it; cancels are
//! lazy), and tokio's own timer (`broker/tokio_timer.rs`): T unconstrained tasks on a T-worker
//! runtime, a pinned `Sleep` per connection re-armed by `Sleep::reset`, and per request a boxed
//! future that sleeps then runs the task, polled once to register; the response drops it, an
//! unanswered one is spawned.
//!
//! stdout: one line per system and T,
//! `<system> broker threads=<t> msg_ns=<x> cpu_ns=<x> scaling=<x> fired=<n>/<unanswered> held=<n>
//! rss_kib=<x> rss_per_idle=<b>`; stderr: checks and the ratios peer ÷ delaywheel.

#[allow(dead_code)] // `HeapCore::advance` and `purge_cancelled` serve other benches
#[path = "spec/heap.rs"]
mod heap;
#[allow(dead_code)] // the W4 bookkeeping serves spec.rs
#[path = "spec/measure.rs"]
mod measure;
#[path = "broker/state.rs"]
mod state;
#[allow(dead_code)] // hierarchical_hash_wheel_timer and the pieces the manual forms use
#[path = "spec/systems.rs"]
mod systems;
#[path = "spec/tokio_tasks.rs"]
mod tokio_tasks;
#[path = "broker/tokio_timer.rs"]
mod tokio_timer;

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use delaywheel_bench::process_cpu_ms;
use measure::{now_ns, rss_bytes};
use state::{Conn, Msg};
use systems::{DelayWheel, HeapTimer, System, TokioDelayQueue};

const IDLE: Duration = Duration::from_secs(60);
const REQUEST: Duration = Duration::from_secs(30);
const TOKIO_TIMER: &str = "tokio-timer";

/// The workload's parameters, from the environment.
pub struct Config {
    systems: Vec<&'static str>,
    threads: Vec<usize>,
    messages: usize,
    pub conns: usize,
    pub window: usize,
}

fn env_list(name: &str) -> Option<Vec<String>> {
    let list = std::env::var(name).ok().filter(|l| !l.trim().is_empty())?;
    Some(list.split(',').map(|s| s.trim().to_string()).collect())
}

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name).ok().map_or(default, |v| v.replace('_', "").parse().expect("a number"))
}

impl Config {
    fn from_env(quick: bool) -> Config {
        let all = [DelayWheel::NAME, TokioDelayQueue::NAME, HeapTimer::NAME, TOKIO_TIMER];
        let systems = env_list("BROKER_SYSTEMS").map_or(all.to_vec(), |names| {
            names.iter().map(|n| canonical(n).unwrap_or_else(|| panic!("unknown system {n:?}"))).collect()
        });
        let threads = env_list("BROKER_THREADS").map_or(vec![1, 2, 4, 16], |list| {
            list.iter().map(|t| t.parse().expect("BROKER_THREADS: numbers")).collect()
        });
        let messages = env_num("BROKER_M", if quick { 40_000 } else { 2_000_000 });
        let conns = env_num("BROKER_CONNS", if quick { 200 } else { 2_000 });
        Config { systems, threads, messages, conns, window: env_num("BROKER_WINDOW", 64) }
    }
}

fn canonical(name: &str) -> Option<&'static str> {
    Some(match name {
        "delaywheel" => DelayWheel::NAME,
        "tokio" | "tokio-delayqueue" | "tokio-util" => TokioDelayQueue::NAME,
        "heap" | "binaryheap" | "binaryheap-mutex" => HeapTimer::NAME,
        "tokio-timer" => TOKIO_TIMER,
        _ => return None,
    })
}

/// One thread's part: its first and last clock readings, the cancels that did not win.
pub struct Span {
    pub start: u64,
    pub end: u64,
    pub lost: usize,
}

/// What one system measured at one thread count.
struct Run {
    threads: usize,
    msg_ns: f64,
    cpu_ns: f64,
    fired: u64,
    unanswered: u64,
    held: Option<usize>,
    /// RSS growth from before the timer started to the end of the drain.
    rss_bytes: u64,
    /// Whether the run's checks passed (exactly once, no cancel lost).
    passed: bool,
}

/// Everything a run needs: the plan and the shares of it.
pub struct Workload<'a> {
    pub cfg: &'a Config,
    pub threads: usize,
    pub per_thread: usize,
    pub plan: Arc<Vec<Msg>>,
}

impl Workload<'_> {
    /// Thread `t`'s messages: indices into the plan, which are also their requests' ids.
    pub fn share(&self, t: usize) -> std::ops::Range<usize> {
        t * self.per_thread..(t + 1) * self.per_thread
    }

    /// Waits until the timeouts of every unanswered request ran (or 10 s passed), checks the
    /// ledger, and sums up a run of `spans` that took `cpu_ms`, from an RSS of `rss_before`.
    fn finish(
        &self,
        name: &str,
        spans: &[Span],
        cpu_ms: f64,
        rss_before: u64,
        held: impl FnOnce() -> Option<usize>,
    ) -> Run {
        let unanswered = self.plan.iter().filter(|m| m.short_ms != 0).count() as u64;
        let limit = Instant::now() + Duration::from_secs(10);
        while state::REQUESTS_FIRED.load(Ordering::Acquire) < unanswered && Instant::now() < limit {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(60)); // a late duplicate would show
        let fired = state::REQUESTS_FIRED.load(Ordering::Acquire);
        let threads = self.threads;
        let lost: usize = spans.iter().map(|s| s.lost).sum();
        let (duplicates, idle) =
            (state::DUPLICATES.load(Ordering::Relaxed), state::IDLE_FIRED.load(Ordering::Relaxed));
        let passed = lost == 0
            && duplicates == 0
            && idle == 0
            && fired == unanswered
            && state::ledger_matches(&self.plan);
        if !passed {
            note(format!(
                "{name} threads={threads}: CHECK FAILED: {lost} cancels lost, {duplicates} duplicate runs, \
                 {idle} idle timeouts ran, {fired} of {unanswered} timeouts ran, ledger matches: {}",
                state::ledger_matches(&self.plan)
            ));
        }
        let held = held();
        let rss_bytes = rss_bytes().saturating_sub(rss_before);
        let first = spans.iter().map(|s| s.start).min().unwrap_or(0);
        let end = spans.iter().map(|s| s.end).max().unwrap_or(0);
        let total = (self.per_thread * threads).max(1) as f64;
        let (msg_ns, cpu_ns) = ((end - first) as f64 / total, cpu_ms * 1e6 / total);
        Run { threads, msg_ns, cpu_ns, fired, unanswered, held, rss_bytes, passed }
    }
}

/// One request thread on a [`System`]: its connections, their idle timeouts, its window.
fn request_thread<S: System>(sys: &S, work: &Workload<'_>, t: usize, barrier: &Barrier) -> Span {
    let mut local = sys.local();
    let conns: Vec<Arc<Conn>> =
        (0..work.cfg.conns).map(|c| Conn::new((t * work.cfg.conns + c) as u64)).collect();
    let mut idle: Vec<S::Handle> =
        conns.iter().map(|conn| sys.schedule(&mut local, IDLE, state::idle_task(Arc::clone(conn)))).collect();
    let mut window = VecDeque::with_capacity(work.cfg.window);
    let mut lost = 0;
    let share = work.share(t);
    barrier.wait();
    let start = now_ns();
    for (id, msg) in share.clone().zip(&work.plan[share]) {
        let (c, conn) = (msg.conn as usize, &conns[msg.conn as usize]);
        sys.rearm(&mut local, &mut idle[c], IDLE, || state::idle_task(Arc::clone(conn)));
        let delay = if msg.short_ms == 0 { REQUEST } else { Duration::from_millis(u64::from(msg.short_ms)) };
        let task = state::request_task(Arc::clone(conn), id as u64, Instant::now(), msg.bytes);
        let handle = sys.schedule(&mut local, delay, task);
        if msg.short_ms != 0 {
            continue; // never answered: the handle is dropped, the timeout fires
        }
        if window.len() == work.cfg.window {
            let oldest = window.pop_front().expect("a full window");
            lost += usize::from(!sys.cancel(&mut local, &oldest));
        }
        window.push_back(handle);
    }
    sys.sync(&mut local);
    let end = now_ns();
    for handle in window.drain(..) {
        lost += usize::from(!sys.cancel(&mut local, &handle));
    }
    sys.sync(&mut local);
    Span { start, end, lost }
}

fn run_system<S: System>(work: &Workload<'_>) -> Run {
    let rss_before = rss_bytes();
    let sys = Arc::new(S::start());
    let barrier = Arc::new(Barrier::new(work.threads));
    let cpu_before = process_cpu_ms();
    let spans: Vec<Span> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..work.threads)
            .map(|t| {
                let (sys, barrier) = (&sys, &barrier);
                scope.spawn(move || request_thread(&**sys, work, t, barrier))
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("request thread")).collect()
    });
    let cpu_ms = process_cpu_ms() - cpu_before;
    let run = work.finish(S::NAME, &spans, cpu_ms, rss_before, || Some(sys.pending()));
    let sys = Arc::try_unwrap(sys).unwrap_or_else(|_| unreachable!("request threads joined"));
    sys.shutdown();
    run
}

fn run_one(name: &str, work: &Workload<'_>) -> Run {
    state::arm(work.plan.len());
    match name {
        n if n == DelayWheel::NAME => run_system::<DelayWheel>(work),
        n if n == TokioDelayQueue::NAME => run_system::<TokioDelayQueue>(work),
        n if n == HeapTimer::NAME => run_system::<HeapTimer>(work),
        TOKIO_TIMER => {
            let rss_before = rss_bytes();
            let (spans, cpu_ms) = tokio_timer::run(work, IDLE, REQUEST);
            work.finish(TOKIO_TIMER, &spans, cpu_ms, rss_before, || None)
        }
        _ => unreachable!("canonical names only"),
    }
}

fn note(text: String) {
    eprintln!("# {text}");
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing: run small then.
    let quick = !std::env::args().any(|a| a == "--bench");
    let cfg = Config::from_env(quick);
    if let Ok(name) = std::env::var("BROKER_CHILD") {
        let (name, threads) = (canonical(&name).expect("BROKER_CHILD: a system"), cfg.threads[0]);
        let per_thread = cfg.messages / threads;
        let plan = Arc::new(state::plan(per_thread * threads, cfg.conns));
        let run = run_one(name, &Workload { cfg: &cfg, threads, per_thread, plan });
        let held = run.held.map_or(-1, |h| h as i64);
        let Run { msg_ns, cpu_ns, fired, unanswered, rss_bytes, passed, .. } = run;
        println!("raw {threads} {msg_ns} {cpu_ns} {fired} {unanswered} {held} {rss_bytes}");
        // A failed check fails the parent's run (and `cargo test --benches`).
        std::process::exit(if passed { 0 } else { 1 });
    }
    let probe = state::request_task(Conn::new(0), 0, Instant::now(), 0);
    note(format!(
        "broker: M={} C={} W={} threads={:?} systems={}; request task {} bytes",
        cfg.messages,
        cfg.conns,
        cfg.window,
        cfg.threads,
        cfg.systems.join(","),
        std::mem::size_of_val(&probe)
    ));
    drop(probe);
    let mut all: Vec<(&str, Vec<Run>)> = cfg.systems.iter().map(|&name| (name, Vec::new())).collect();
    for (round, &threads) in cfg.threads.iter().enumerate() {
        // Each thread count runs every system in turn, the order rotated from one count to the next.
        for k in 0..all.len() {
            let (name, runs) = &mut all[(round + k) % cfg.systems.len()];
            let run = run_child(name, threads);
            let one = runs.iter().chain(std::iter::once(&run)).find(|r| r.threads == 1).map(|r| r.msg_ns);
            let held = run.held.map_or("-".to_string(), |h| h.to_string());
            println!(
                "{name} broker threads={threads} msg_ns={:.1} cpu_ns={:.1} scaling={:.2} fired={}/{} held={held} \
                 rss_kib={:.0} rss_per_idle={:.0}",
                run.msg_ns,
                run.cpu_ns,
                one.map_or(f64::NAN, |one| one / run.msg_ns),
                run.fired,
                run.unanswered,
                run.rss_bytes as f64 / 1024.0,
                run.rss_bytes as f64 / (threads * cfg.conns) as f64,
            );
            runs.push(run);
        }
    }
    print_ratios(&all);
    let failed: Vec<String> = all
        .iter()
        .flat_map(|(name, runs)| {
            runs.iter().filter(|r| !r.passed).map(move |r| format!("{name} threads={}", r.threads))
        })
        .collect();
    assert!(failed.is_empty(), "checks failed (stderr above): {}", failed.join(", "));
}

/// Runs `name` at `threads` in a fresh child process (this binary, `BROKER_CHILD` set), so that
/// its RSS growth is its own and not memory a previous run left to the allocator.
fn run_child(name: &str, threads: usize) -> Run {
    let output = std::process::Command::new(std::env::current_exe().expect("current_exe"))
        .args(std::env::args().skip(1))
        .env("BROKER_CHILD", name)
        .env("BROKER_THREADS", threads.to_string())
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let raw =
        stdout.lines().find_map(|l| l.strip_prefix("raw ")).unwrap_or_else(|| panic!("{name}: {stdout}"));
    let f: Vec<f64> = raw.split(' ').map(|v| v.parse().expect("a number")).collect();
    let held = (f[5] >= 0.0).then_some(f[5] as usize);
    Run {
        threads,
        msg_ns: f[1],
        cpu_ns: f[2],
        fired: f[3] as u64,
        unanswered: f[4] as u64,
        held,
        rss_bytes: f[6] as u64,
        passed: output.status.success(),
    }
}

/// peer ÷ delaywheel, wall and CPU per message, at each thread count both ran.
fn print_ratios(all: &[(&str, Vec<Run>)]) {
    let Some((_, ours)) = all.iter().find(|(name, _)| *name == DelayWheel::NAME) else { return };
    for (name, theirs) in all.iter().filter(|(name, _)| *name != DelayWheel::NAME) {
        let ratios: Vec<String> = theirs
            .iter()
            .filter_map(|run| {
                let base = ours.iter().find(|r| r.threads == run.threads)?;
                Some(format!(
                    "T={} wall {:.2}x cpu {:.2}x",
                    run.threads,
                    run.msg_ns / base.msg_ns,
                    run.cpu_ns / base.cpu_ns
                ))
            })
            .collect();
        note(format!("ratio {name} / delaywheel: {}", ratios.join(", ")));
    }
}
