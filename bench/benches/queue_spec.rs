//! SPEC-style workloads for delay queues of values (`delaywheel::queue::DelayQueue` beside
//! tokio-util's `DelayQueue`), in one process so that ratios from one run can be compared.
//!
//! ```sh
//! cargo bench -p delaywheel-bench --bench queue_spec                          # everything, N = 1,000,000
//! QSPEC_N=100000 QSPEC_WORKLOADS=Q1,Q2 cargo bench -p delaywheel-bench --bench queue_spec
//! QSPEC_SYSTEMS=delaywheel cargo bench -p delaywheel-bench --bench queue_spec
//! ```
//!
//! Environment: `QSPEC_SYSTEMS` (any of `delaywheel`, `delaywheel-batch`, `tokio`; default all), `QSPEC_N`
//! (values per workload, default 1,000,000), `QSPEC_WORKLOADS` (any of `Q1`…`Q5`; Q2 runs Q1 first).
//!
//! # The workloads
//! Values are `u64` (8 bytes). Delays are whole milliseconds from splitmix64 seeded with 42 at each
//! workload's start (`spec/measure.rs`), drawn before the clock starts. Tick 1 ms.
//! * Q1 insert: one thread inserts N values, delays in [10000, 70000) ms; wall ns per insert.
//! * Q2 remove: right after, removes all N in insertion order (each must hand its value back);
//!   wall ns per remove, values held afterwards.
//! * Q3 expire (SPEC W4's shape): fresh queue, one consumer; one thread inserts N values with
//!   delays in [0, 1000) ms; wall ms from the first insert to the last value taken; lateness (the
//!   time the consumer took the value minus its insert time plus delay) p50/p99/max ms; process CPU.
//! * Q4 memory: fresh queue in a fresh child process; N pending values, delays in
//!   [10000, 70000) ms; RSS delta / N (`spec/measure.rs`'s `rss_bytes`).
//! * Q5 producers: fresh queue; 2 producer threads insert N/2 values each, delays in [0, 10) ms;
//!   1 consumer takes them all; wall ns per value (N / (last take − first insert)).
//!
//! # The systems
//! * `delaywheel`: `DelayQueue::with_timer(Timer::builder().tick(1 ms).build())`: its own driver
//!   thread; shared by `&` (an `Arc`); the consumer is a thread looping on `recv_timeout`.
//! * `delaywheel-batch`: the same, with a consumer that takes what has expired in batches
//!   (`try_recv_many`, up to 1024 at a time) and waits in `recv_timeout` when there is none.
//! * `tokio-delayqueue`: tokio-util's `DelayQueue<u64>` in an `Arc<std::sync::Mutex<_>>` (it needs
//!   `&mut` for everything), inserting threads in the runtime's context, and one task on a
//!   multi-thread runtime (2 workers) polling `poll_expired` under the lock, as `benches/spec.rs`
//!   drives it.
//!
//! stdout carries one line per workload: `<system> Q1 insert ns_per_op=<x>`,
//! `<system> Q2 remove ns_per_op=<x> held_after=<n>`, `<system> Q3 expire wall_ms=<x> late_p50_ms=<x>
//! late_p99_ms=<x> late_max_ms=<x> cpu_ms=<x>`, `<system> Q4 memory bytes_per_value=<x> method=rss`,
//! `<system> Q5 producers ns_per_op=<x>`.

#[allow(dead_code)] // the timer workloads' helpers serve benches/spec.rs
#[path = "spec/measure.rs"]
mod measure;

use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::task::Poll;
use std::time::{Duration, Instant};

use delaywheel::queue::DelayQueue;
use delaywheel::Timer;
use delaywheel_bench::process_cpu_ms;
use measure::{delays_ms, now_ns, rss_bytes, Expiry};

/// Due times (on [`now_ns`]) of the values of Q3 and Q5, by value.
static DUE_NS: OnceLock<Box<[AtomicU64]>> = OnceLock::new();

fn due(n: usize) -> &'static [AtomicU64] {
    let slots = DUE_NS.get_or_init(|| (0..n).map(|_| AtomicU64::new(0)).collect());
    assert!(slots.len() >= n, "QSPEC_N cannot grow within one run");
    slots
}

/// What a consumer does with each value it takes: records its lateness and counts it
/// (`spec/measure.rs`'s W4 bookkeeping, which wakes the bench at the last one).
fn take(value: u64) {
    let i = value as usize;
    Expiry::task(i, due(i + 1)[i].load(Ordering::Relaxed))();
}

/// A delay queue of `u64` values, as the workloads use it.
trait ValueQueue: Send + Sync + Sized + 'static {
    const NAME: &'static str;
    type Key: Send;
    /// What an inserting thread holds (tokio: the runtime context).
    type Local<'a>;
    fn start() -> Arc<Self>;
    fn local(&self) -> Self::Local<'_>;
    fn insert(&self, local: &mut Self::Local<'_>, value: u64, delay: Duration) -> Self::Key;
    fn remove(&self, local: &mut Self::Local<'_>, key: &Self::Key) -> Option<u64>;
    fn len(&self) -> usize;
    /// Starts the one consumer: it passes every value it takes to [`take`] until `stop` is set.
    fn consume(this: &Arc<Self>, stop: Arc<AtomicBool>);
}

/// delaywheel's queue; `BATCH`: its consumer takes values with `try_recv_many`.
struct Wheel<const BATCH: bool>(DelayQueue<u64>);

impl<const BATCH: bool> ValueQueue for Wheel<BATCH> {
    const NAME: &'static str = if BATCH { "delaywheel-batch" } else { "delaywheel" };
    type Key = delaywheel::queue::Key;
    type Local<'a> = ();

    fn start() -> Arc<Self> {
        let timer = Timer::builder().tick(Duration::from_millis(1)).thread_name("qspec-driver").build();
        Arc::new(Wheel(DelayQueue::with_timer(timer)))
    }
    fn local(&self) {}
    fn insert(&self, _: &mut (), value: u64, delay: Duration) -> Self::Key {
        self.0.insert(value, delay)
    }
    fn remove(&self, _: &mut (), key: &Self::Key) -> Option<u64> {
        self.0.remove(key)
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn consume(this: &Arc<Self>, stop: Arc<AtomicBool>) {
        let this = Arc::clone(this);
        std::thread::spawn(move || {
            let mut batch = Vec::with_capacity(if BATCH { 1024 } else { 0 });
            while !stop.load(Ordering::Relaxed) {
                if BATCH && this.0.try_recv_many(&mut batch, 1024) != 0 {
                    batch.drain(..).for_each(|expired| take(expired.into_inner()));
                } else if let Some(expired) = this.0.recv_timeout(Duration::from_millis(20)) {
                    take(expired.into_inner());
                }
            }
        });
    }
}

type TokioQueue = std::sync::Mutex<tokio_util::time::DelayQueue<u64>>;

struct Tokio {
    runtime: tokio::runtime::Runtime,
    queue: Arc<TokioQueue>,
}

impl Tokio {
    fn queue(&self) -> std::sync::MutexGuard<'_, tokio_util::time::DelayQueue<u64>> {
        self.queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl ValueQueue for Tokio {
    const NAME: &'static str = "tokio-delayqueue";
    type Key = tokio_util::time::delay_queue::Key;
    type Local<'a> = tokio::runtime::EnterGuard<'a>;

    fn start() -> Arc<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_time().build().expect("runtime");
        Arc::new(Tokio { runtime, queue: Arc::new(TokioQueue::new(tokio_util::time::DelayQueue::new())) })
    }
    fn local(&self) -> Self::Local<'_> {
        self.runtime.enter()
    }
    fn insert(&self, _: &mut Self::Local<'_>, value: u64, delay: Duration) -> Self::Key {
        self.queue().insert(value, delay)
    }
    fn remove(&self, _: &mut Self::Local<'_>, key: &Self::Key) -> Option<u64> {
        self.queue().try_remove(key).map(|expired| expired.into_inner())
    }
    fn len(&self) -> usize {
        self.queue().len()
    }
    fn consume(this: &Arc<Self>, stop: Arc<AtomicBool>) {
        let queue = Arc::clone(&this.queue);
        this.runtime.spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let value = poll_fn(|cx| {
                    let mut queue = queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                    match queue.poll_expired(cx) {
                        Poll::Ready(Some(expired)) => Poll::Ready(Some(expired.into_inner())),
                        // Empty: the waker is registered and the next insert wakes this task; a
                        // stop is noticed at the next value (the bench ends with none pending).
                        Poll::Ready(None) | Poll::Pending => Poll::Pending,
                    }
                })
                .await;
                value.into_iter().for_each(take);
            }
        });
    }
}

struct Config {
    n: usize,
    systems: Vec<String>,
    workloads: Vec<String>,
}

impl Config {
    fn from_env() -> Self {
        let list = |var: &str, default: &str| -> Vec<String> {
            std::env::var(var)
                .unwrap_or_else(|_| default.to_string())
                .split(',')
                .map(str::to_string)
                .collect()
        };
        let n = std::env::var("QSPEC_N").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
        Config {
            n,
            systems: list("QSPEC_SYSTEMS", "delaywheel,delaywheel-batch,tokio"),
            workloads: list("QSPEC_WORKLOADS", "Q1,Q2,Q3,Q4,Q5"),
        }
    }
    fn wants(&self, workload: &str) -> bool {
        self.workloads.iter().any(|w| w == workload)
    }
}

fn q1_q2<Q: ValueQueue>(cfg: &Config) {
    let delays = delays_ms(10_000, 70_000, cfg.n);
    let queue = Q::start();
    let mut local = queue.local();
    let mut keys = Vec::with_capacity(cfg.n);
    let started = Instant::now();
    for (i, &delay) in delays.iter().enumerate() {
        keys.push(queue.insert(&mut local, i as u64, Duration::from_millis(delay)));
    }
    let ns = started.elapsed().as_nanos() as f64 / cfg.n as f64;
    println!("{} Q1 insert ns_per_op={ns:.1}", Q::NAME);
    if !cfg.wants("Q2") {
        return;
    }
    let started = Instant::now();
    for (i, key) in keys.iter().enumerate() {
        let back = queue.remove(&mut local, key);
        assert_eq!(back, Some(i as u64), "{}: value not handed back", Q::NAME);
    }
    let ns = started.elapsed().as_nanos() as f64 / cfg.n as f64;
    println!("{} Q2 remove ns_per_op={ns:.1} held_after={}", Q::NAME, queue.len());
}

/// Inserts value `i` with `delay`, recording its due time first.
fn insert_due<Q: ValueQueue>(queue: &Q, local: &mut Q::Local<'_>, i: usize, delay: u64) {
    due(i + 1)[i].store(now_ns() + delay * 1_000_000, Ordering::Relaxed);
    drop(queue.insert(local, i as u64, Duration::from_millis(delay)));
}

fn q3<Q: ValueQueue>(cfg: &Config) {
    let delays = delays_ms(0, 1_000, cfg.n);
    due(cfg.n);
    let queue = Q::start();
    let stop = Arc::new(AtomicBool::new(false));
    Expiry::arm(cfg.n);
    Q::consume(&queue, Arc::clone(&stop));
    let mut local = queue.local();
    let (cpu_before, first) = (process_cpu_ms(), now_ns());
    for (i, &delay) in delays.iter().enumerate() {
        insert_due(&*queue, &mut local, i, delay);
    }
    let last = Expiry::wait(Duration::from_secs(120)).expect("every value taken within 120 s");
    let cpu = process_cpu_ms() - cpu_before;
    stop.store(true, Ordering::Relaxed);
    let mut late: Vec<i64> = Expiry::lateness(cfg.n).map(|l| l.expect("taken")).collect();
    late.sort_unstable();
    let ms = |ns: i64| ns as f64 / 1e6;
    let at = |q: f64| ms(late[((late.len() - 1) as f64 * q) as usize]);
    println!(
        "{} Q3 expire wall_ms={:.1} late_p50_ms={:.3} late_p99_ms={:.3} late_max_ms={:.3} cpu_ms={cpu:.0}",
        Q::NAME,
        ms((last - first) as i64),
        at(0.5),
        at(0.99),
        ms(*late.last().unwrap())
    );
    assert!(late[0] >= 0, "{}: a value came out early", Q::NAME);
}

fn q4_here<Q: ValueQueue>(n: usize) {
    let delays = delays_ms(10_000, 70_000, n);
    let queue = Q::start();
    let mut local = queue.local();
    std::thread::sleep(Duration::from_millis(50)); // let the driver threads start and settle
    let before = rss_bytes();
    for (i, &delay) in delays.iter().enumerate() {
        drop(queue.insert(&mut local, i as u64, Duration::from_millis(delay)));
    }
    let after = rss_bytes();
    assert_eq!(queue.len(), n);
    println!("{} Q4 memory bytes_per_value={:.1} method=rss", Q::NAME, (after - before) as f64 / n as f64);
}

fn q4<Q: ValueQueue>(cfg: &Config) {
    let status = std::process::Command::new(std::env::current_exe().expect("current_exe"))
        .env("QSPEC_Q4_CHILD", Q::NAME)
        .env("QSPEC_N", cfg.n.to_string())
        .status()
        .expect("run the Q4 child");
    assert!(status.success(), "the Q4 child failed");
}

fn q5<Q: ValueQueue>(cfg: &Config) {
    let per_producer = cfg.n / 2;
    let n = per_producer * 2;
    let delays = delays_ms(0, 10, n);
    due(n);
    let queue = Q::start();
    let stop = Arc::new(AtomicBool::new(false));
    Expiry::arm(n);
    Q::consume(&queue, Arc::clone(&stop));
    let barrier = Barrier::new(3);
    let first = std::thread::scope(|s| {
        for (producer, delays) in delays.chunks(per_producer).enumerate() {
            let (queue, barrier) = (&queue, &barrier);
            s.spawn(move || {
                let mut local = queue.local();
                barrier.wait();
                for (j, &delay) in delays.iter().enumerate() {
                    insert_due(&**queue, &mut local, producer * per_producer + j, delay);
                }
            });
        }
        barrier.wait();
        now_ns()
    });
    let last = Expiry::wait(Duration::from_secs(120)).expect("every value taken within 120 s");
    stop.store(true, Ordering::Relaxed);
    println!("{} Q5 producers ns_per_op={:.1}", Q::NAME, (last - first) as f64 / n as f64);
}

fn run<Q: ValueQueue>(cfg: &Config) {
    if cfg.wants("Q1") || cfg.wants("Q2") {
        q1_q2::<Q>(cfg);
    }
    if cfg.wants("Q3") {
        q3::<Q>(cfg);
    }
    if cfg.wants("Q4") {
        q4::<Q>(cfg);
    }
    if cfg.wants("Q5") {
        q5::<Q>(cfg);
    }
}

fn main() {
    measure::check_splitmix();
    let cfg = Config::from_env();
    if let Ok(child) = std::env::var("QSPEC_Q4_CHILD") {
        match child.as_str() {
            Wheel::<false>::NAME => q4_here::<Wheel<false>>(cfg.n),
            Wheel::<true>::NAME => q4_here::<Wheel<true>>(cfg.n),
            Tokio::NAME => q4_here::<Tokio>(cfg.n),
            other => panic!("unknown QSPEC_Q4_CHILD {other:?}"),
        }
        return;
    }
    eprintln!("# queue workloads: N={} systems={:?} workloads={:?}", cfg.n, cfg.systems, cfg.workloads);
    for system in &cfg.systems {
        match system.as_str() {
            "delaywheel" => run::<Wheel<false>>(&cfg),
            "delaywheel-batch" => run::<Wheel<true>>(&cfg),
            "tokio" | "tokio-delayqueue" => run::<Tokio>(&cfg),
            other => panic!("unknown system {other:?} (QSPEC_SYSTEMS: delaywheel, delaywheel-batch, tokio)"),
        }
    }
}
