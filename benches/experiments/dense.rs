//! EXPERIMENT: how far dense entry storage (a slab addressed by index + generation) takes the
//! schedule / cancel path, measured on SPEC W1, W2 and W6 against today's `delaywheel::Timer` and
//! tokio-util's `DelayQueue` in the same run. Write-up: `docs/experiments/dense-entries.md`.
//!
//! ```sh
//! cargo bench --bench dense                                   # all systems, N = 1,000,000
//! DENSE_SYSTEMS=dense-boxed DENSE_N=100000 DENSE_WORKLOADS=W1,W2 cargo bench --bench dense
//! DENSE_SELFTEST=1 cargo bench --bench dense                  # fire / cancel semantics check
//! ```
//!
//! Systems (`DENSE_SYSTEMS`, comma-separated; default all, in this order):
//! * `dense-boxed`: the prototype (`dense_proto.rs`), 8 shards, each task a
//!   `Box<dyn FnOnce() + Send>` in its slot: what is reachable **without** `unsafe`.
//! * `dense-inline`: the same prototype storing the task **inline** in the slot, as a 16-byte
//!   struct (the 8-byte captured reference of the SPEC's task plus an 8-byte word standing in for
//!   the vtable pointer that type-erased inline storage needs). A model of what `unsafe` inline
//!   storage (a small-box in the slot) would give for closures of ≤ 8 bytes; it is *not*
//!   type-erased (the workloads' task is always the same closure, so this is equivalent for them).
//! * `delaywheel`: today's `Timer` exactly as `benches/spec.rs` drives it (system clock, driver
//!   thread, tick 1 ms, default wheel size 512).
//! * `tokio-delayqueue`: exactly as `benches/spec.rs` drives it.
//!
//! Workloads (`DENSE_WORKLOADS`, default `W1,W2,W6,floors`; W2 runs W1): the SPEC's, with the same code
//! shape as `benches/spec.rs` (delays drawn beforehand, handles kept in a reserved vector, W6 in a
//! fresh child process with `malloc_trim` before each RSS reading). `DENSE_N` (default 1,000,000).
//! `floors` (last, after the systems): the wall cost of the primitives a schedule cannot avoid
//! (see [`floors`]).

#[path = "../spec/heap.rs"]
#[allow(dead_code)]
mod heap;
#[path = "../spec/measure.rs"]
#[allow(dead_code)]
mod measure;
#[path = "../spec/systems.rs"]
#[allow(dead_code)]
mod systems;

#[path = "dense_proto.rs"]
mod dense_proto;

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dense_proto::{BoxedTask, DenseHandle, DenseTimer, Run};
use measure::{counting_task, delays_ms, rss_bytes, FIRED};
use systems::{DelayWheel, System, TokioDelayQueue};

const SHARDS: usize = 8;

/// The prototype, type-erased tasks boxed.
struct DenseBoxed(DenseTimer<BoxedTask>);

impl System for DenseBoxed {
    const NAME: &'static str = "dense-boxed";
    type Handle = Option<DenseHandle<BoxedTask>>;
    type Local<'a> = ();

    fn start() -> Self {
        DenseBoxed(DenseTimer::new(Duration::from_millis(1), SHARDS))
    }
    fn local(&self) {}
    #[inline]
    fn schedule<F>(&self, _: &mut (), delay: Duration, task: F) -> Self::Handle
    where
        F: FnOnce() + Send + 'static,
    {
        self.0.schedule(delay, Box::new(task))
    }
    fn cancel(&self, _: &mut (), handle: &Self::Handle) -> bool {
        handle.as_ref().is_some_and(DenseHandle::cancel)
    }
    fn pending(&self) -> usize {
        self.0.len()
    }
    fn shutdown(self) {
        self.0.shutdown()
    }
}

/// The SPEC task stored inline: its 8-byte capture plus a stand-in for a vtable pointer.
struct InlineTask {
    counter: &'static AtomicU64,
    _vtable: usize,
}

impl Run for InlineTask {
    fn run(self) {
        self.counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// The prototype with the task inline in the slot (models unsafe small-box storage).
struct DenseInline(DenseTimer<InlineTask>);

impl System for DenseInline {
    const NAME: &'static str = "dense-inline";
    type Handle = Option<DenseHandle<InlineTask>>;
    type Local<'a> = ();

    fn start() -> Self {
        DenseInline(DenseTimer::new(Duration::from_millis(1), SHARDS))
    }
    fn local(&self) {}
    #[inline]
    fn schedule<F>(&self, _: &mut (), delay: Duration, task: F) -> Self::Handle
    where
        F: FnOnce() + Send + 'static,
    {
        // The workloads' task is always `counting_task()` (8 bytes: `&'static AtomicU64`).
        debug_assert_eq!(std::mem::size_of::<F>(), 8);
        drop(task);
        self.0.schedule(delay, InlineTask { counter: &FIRED, _vtable: 0 })
    }
    fn cancel(&self, _: &mut (), handle: &Self::Handle) -> bool {
        handle.as_ref().is_some_and(DenseHandle::cancel)
    }
    fn pending(&self) -> usize {
        self.0.len()
    }
    fn shutdown(self) {
        self.0.shutdown()
    }
}

struct Config {
    n: usize,
    systems: Vec<String>,
    workloads: Vec<String>,
}

impl Config {
    fn from_env() -> Config {
        let list = |var: &str, default: &str| -> Vec<String> {
            std::env::var(var)
                .unwrap_or_else(|_| default.to_string())
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        };
        Config {
            n: std::env::var("DENSE_N").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000),
            systems: list("DENSE_SYSTEMS", "dense-boxed,dense-inline,delaywheel,tokio-delayqueue"),
            workloads: list("DENSE_WORKLOADS", "W1,W2,W6,floors"),
        }
    }
    fn runs(&self, w: &str) -> bool {
        self.workloads.iter().any(|x| x.eq_ignore_ascii_case(w))
    }
}

type Results = BTreeMap<&'static str, f64>;

fn ns_per(total: Duration, ops: usize) -> f64 {
    total.as_nanos() as f64 / ops.max(1) as f64
}

/// W1's loop, not inlined so that callgrind can attribute the schedule path to it.
#[inline(never)]
fn w1_loop<S: System>(sys: &S, local: &mut S::Local<'_>, delays: &[u64], handles: &mut Vec<S::Handle>) {
    for &delay in delays {
        handles.push(sys.schedule(local, Duration::from_millis(delay), counting_task()));
    }
}

/// W2's loop, not inlined (callgrind).
#[inline(never)]
fn w2_loop<S: System>(sys: &S, local: &mut S::Local<'_>, handles: &[S::Handle]) -> usize {
    let mut cancelled = 0;
    for handle in handles {
        cancelled += usize::from(sys.cancel(local, handle));
    }
    cancelled
}

fn w1_w2<S: System>(cfg: &Config, results: &mut Results) {
    let delays = delays_ms(10_000, 70_000, cfg.n);
    FIRED.store(0, Ordering::SeqCst);
    let sys = S::start();
    let mut local = sys.local();
    let mut handles = Vec::with_capacity(cfg.n);

    let start = Instant::now();
    w1_loop(&sys, &mut local, &delays, &mut handles);
    let w1 = start.elapsed();
    println!("{} W1 insert ns_per_op={:.1}", S::NAME, ns_per(w1, cfg.n));
    results.insert("W1 ns", ns_per(w1, cfg.n));
    if !cfg.runs("W2") {
        drop(local);
        drop(handles);
        return sys.shutdown();
    }
    let start = Instant::now();
    let cancelled = w2_loop(&sys, &mut local, &handles);
    let w2 = start.elapsed();
    drop(local);
    let pending = sys.pending();
    println!("{} W2 cancel ns_per_op={:.1} pending_after={}", S::NAME, ns_per(w2, cfg.n), pending);
    results.insert("W2 ns", ns_per(w2, cfg.n));
    if cancelled != cfg.n {
        eprintln!("# {} W2: only {cancelled} of {} cancels reported success", S::NAME, cfg.n);
    }
    drop(black_box(handles));
    sys.shutdown();
}

fn w6_here<S: System>(n: usize) {
    let delays = delays_ms(10_000, 70_000, n);
    let sys = S::start();
    let mut local = sys.local();
    std::thread::sleep(Duration::from_millis(50));
    let before = rss_bytes();
    for &delay in &delays {
        drop(sys.schedule(&mut local, Duration::from_millis(delay), counting_task()));
    }
    let after = rss_bytes();
    drop(local);
    let held = sys.pending();
    if held != n {
        eprintln!("# {} W6: holds {held} timers, expected {n}", S::NAME);
    }
    let bytes = after.saturating_sub(before) as f64 / n as f64;
    println!("{} W6 memory bytes_per_timer={bytes:.1} method=rss", S::NAME);
    sys.shutdown();
}

fn w6(name: &str, cfg: &Config, results: &mut Results) {
    let exe = std::env::current_exe().expect("current_exe");
    let output = std::process::Command::new(exe)
        .env("DENSE_W6_CHILD", name)
        .env("DENSE_N", cfg.n.to_string())
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("run the W6 child");
    for text in String::from_utf8_lossy(&output.stdout).lines() {
        println!("{text}");
        if let Some(v) = text.split("bytes_per_timer=").nth(1).and_then(|v| v.split(' ').next()) {
            results.insert("W6 bytes", v.parse().unwrap_or(f64::NAN));
        }
    }
}

fn run<S: System>(cfg: &Config) -> Results {
    let mut results = Results::new();
    if cfg.runs("W1") || cfg.runs("W2") {
        w1_w2::<S>(cfg, &mut results);
    }
    if cfg.runs("W6") {
        w6(S::NAME, cfg, &mut results);
    }
    results
}

fn dispatch(name: &str, cfg: &Config) -> Results {
    match name {
        "dense-boxed" => run::<DenseBoxed>(cfg),
        "dense-inline" => run::<DenseInline>(cfg),
        "delaywheel" => run::<DelayWheel>(cfg),
        "tokio" | "tokio-delayqueue" => run::<TokioDelayQueue>(cfg),
        other => panic!("unknown system {other:?}"),
    }
}

/// Fire / cancel semantics of the prototype on a real clock: never early, at most a few ticks
/// late here, exactly once against concurrent cancels, pending 0 at the end.
fn selftest() {
    use std::sync::Arc;
    let timer = Arc::new(DenseTimer::<BoxedTask>::new(Duration::from_millis(1), 4));
    let origin = Instant::now();
    let fired = Arc::new(AtomicU64::new(0));
    let early = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    // Level 0, level 1 (cascade), past due, and beyond level 1 is not tested (262 s).
    for i in 0..20_000u64 {
        let delay = Duration::from_micros((i * 7919) % 1_500_000);
        let (f, e) = (Arc::clone(&fired), Arc::clone(&early));
        let h = timer
            .schedule(
                delay,
                Box::new(move || {
                    if origin.elapsed() < delay {
                        e.fetch_add(1, Ordering::Relaxed);
                    }
                    f.fetch_add(1, Ordering::Relaxed);
                }),
            )
            .unwrap();
        handles.push(h);
    }
    // Cancel every third from two threads racing each other and the driver.
    let handles = Arc::new(handles);
    let won = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let (h, w) = (Arc::clone(&handles), Arc::clone(&won));
            std::thread::spawn(move || {
                for (i, h) in h.iter().enumerate() {
                    if i % 3 == 0 && h.cancel() {
                        w.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let deadline = Instant::now() + Duration::from_secs(10);
    while timer.len() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(50));
    let (f, w) = (fired.load(Ordering::SeqCst), won.load(Ordering::SeqCst));
    println!(
        "selftest: fired {f} + cancelled {w} = {} of 20000; early {}; pending {}",
        f + w,
        early.load(Ordering::SeqCst),
        timer.len()
    );
    assert_eq!(f + w, 20_000, "exactly once");
    assert_eq!(early.load(Ordering::SeqCst), 0, "never early");
    assert_eq!(timer.len(), 0);
    assert!(handles.iter().all(|h| !h.cancel()), "nothing left to cancel");
}

/// What a schedule cannot avoid, measured in the same run (wall ns per op, N ops each): the clock
/// read, pushing a 16-byte handle into a reserved (fresh) vector (every system pays it in W1),
/// boxing the SPEC's 8-byte closure into fresh memory (net of that push), and freeing those boxes in
/// insertion order (W2's order).
fn floors(n: usize) {
    let timer = DenseTimer::<BoxedTask>::new(Duration::from_millis(1), 1);
    let start = Instant::now();
    for _ in 0..n {
        black_box(timer.now_ns());
    }
    let clock = ns_per(start.elapsed(), n);
    let mut v: Vec<(u64, u64)> = Vec::with_capacity(n);
    let start = Instant::now();
    for i in 0..n as u64 {
        v.push(black_box((i, i)));
    }
    let push16 = ns_per(start.elapsed(), n);
    drop(black_box(v));
    let mut v: Vec<BoxedTask> = Vec::with_capacity(n);
    let start = Instant::now();
    for _ in 0..n {
        v.push(black_box(Box::new(counting_task())));
    }
    let boxed = ns_per(start.elapsed(), n) - push16;
    let start = Instant::now();
    for b in v.drain(..) {
        drop(black_box(b));
    }
    let freed = ns_per(start.elapsed(), n);
    println!(
        "floors clock_read_ns={clock:.1} handle_push16_ns={push16:.1} box8_alloc_fresh_ns={boxed:.1} box8_free_ns={freed:.1}"
    );
}

fn main() {
    measure::check_splitmix();
    if let Ok(name) = std::env::var("DENSE_W6_CHILD") {
        let n = Config::from_env().n;
        match name.as_str() {
            "dense-boxed" => w6_here::<DenseBoxed>(n),
            "dense-inline" => w6_here::<DenseInline>(n),
            "delaywheel" => w6_here::<DelayWheel>(n),
            "tokio-delayqueue" => w6_here::<TokioDelayQueue>(n),
            other => panic!("unknown child {other:?}"),
        }
        return;
    }
    if std::env::var("DENSE_SELFTEST").is_ok() {
        return selftest();
    }
    let cfg = Config::from_env();
    eprintln!(
        "# dense-entries experiment: N={} systems={} workloads={}; sizes: Slot<Box<dyn FnOnce>> {} B, \
         Slot<inline 16 B> {} B, handle {} B, Option<Box<dyn FnOnce>> {} B",
        cfg.n,
        cfg.systems.join(","),
        cfg.workloads.join(","),
        std::mem::size_of::<dense_proto::Slot<BoxedTask>>(),
        std::mem::size_of::<dense_proto::Slot<InlineTask>>(),
        std::mem::size_of::<DenseHandle<BoxedTask>>(),
        std::mem::size_of::<Option<BoxedTask>>(),
    );
    let mut all: Vec<(String, Results)> = Vec::new();
    for name in &cfg.systems {
        all.push((name.clone(), dispatch(name, &cfg)));
    }
    // Last: the floors allocate and free memory that would otherwise be reused by a W1 after them.
    if cfg.runs("floors") {
        floors(cfg.n);
    }
    // Ratios: each system ÷ the prototype (dense-boxed) and ÷ today's delaywheel.
    for base in ["dense-boxed", "delaywheel"] {
        let Some((_, b)) = all.iter().find(|(n, _)| n == base) else { continue };
        for (name, r) in all.iter().filter(|(n, _)| n != base) {
            let ratios: Vec<String> =
                r.iter().filter_map(|(m, v)| Some(format!("{m} {:.2}x", v / b.get(m)?))).collect();
            eprintln!("# ratio {name} / {base}: {}", ratios.join(", "));
        }
    }
}
