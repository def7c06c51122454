//! Criterion benchmarks of the delay queue of values, `delaywheel::queue::DelayQueue` beside
//! tokio-util's `DelayQueue` in each group (read speeds as ratios within one run):
//!
//! | group | timed | throughput |
//! |---|---|---|
//! | `queue_insert` | a fresh queue; 10 000 `u64` inserts (delays of SPEC W1: [10 s, 70 s), splitmix64 seed 42) | per insert |
//! | `queue_remove` | a fresh queue holding those 10 000; remove all in insertion order, each value handed back | per remove |
//! | `queue_expire` | a fresh queue holding 10 000 due in [1, 1000) ms; move the clock 1000 ms, take every value | per value |
//!
//! ```sh
//! cargo bench -p delaywheel-bench --bench queue
//! cargo bench -p delaywheel-bench --bench queue -- --warm-up-time 1 --measurement-time 3   # quicker
//! ```
//!
//! Both run on a virtual clock, driven on the bench's thread:
//!
//! * `delaywheel`: `DelayQueue::with_timer` of a `manual()` timer (1 ms tick) on a `ManualClock`;
//!   expiry = `ManualClock::advance` + `advance_clock(0)`, then `try_recv` until `None`.
//! * `tokio-delayqueue`: tokio-util's `DelayQueue<u64>` behind a std `Mutex` (its form when shared,
//!   as in `benches/queue_spec.rs`), on a current-thread runtime with a paused clock whose context
//!   the bench thread holds; expiry = `tokio::time::advance` and a `poll_expired` loop under the
//!   lock inside `block_on`, yielding when tokio's cooperative budget runs out.

#[allow(dead_code)] // the timer workloads' helpers serve benches/spec.rs
#[path = "spec/measure.rs"]
mod measure;

use std::future::poll_fn;
use std::sync::{Mutex, OnceLock};
use std::task::Poll;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkGroup, Criterion, Throughput};
use delaywheel::queue::DelayQueue;
use delaywheel::{ManualClock, Timer};
use measure::delays_ms;

/// Values per iteration.
const BATCH: usize = 10_000;

type Group<'a> = BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// A queue of `u64` values on a virtual clock, as these benches use it.
trait Bench: Sized {
    const NAME: &'static str;
    type Key;
    fn new() -> Self;
    fn insert(&self, value: u64, delay_ms: u64) -> Self::Key;
    fn remove(&self, key: &Self::Key) -> Option<u64>;
    /// Moves the clock `ms` forward and takes every value due by then; returns how many.
    fn expire(&self, ms: u64) -> usize;
}

struct Wheel {
    clock: ManualClock,
    queue: DelayQueue<u64>,
}

impl Bench for Wheel {
    const NAME: &'static str = "delaywheel";
    type Key = delaywheel::queue::Key;

    fn new() -> Self {
        let clock = ManualClock::new();
        let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
        Wheel { clock, queue: DelayQueue::with_timer(timer) }
    }
    fn insert(&self, value: u64, delay_ms: u64) -> Self::Key {
        self.queue.insert(value, Duration::from_millis(delay_ms))
    }
    fn remove(&self, key: &Self::Key) -> Option<u64> {
        self.queue.remove(key)
    }
    fn expire(&self, ms: u64) -> usize {
        self.clock.advance(Duration::from_millis(ms));
        self.queue.advance_clock(Duration::ZERO);
        let mut taken = 0;
        while let Some(expired) = self.queue.try_recv() {
            std::hint::black_box(expired.into_inner());
            taken += 1;
        }
        taken
    }
}

/// The paused current-thread runtime every `Tokio` runs on.
fn paused_runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("paused current-thread runtime")
    })
}

struct Tokio(Mutex<tokio_util::time::DelayQueue<u64>>);

impl Tokio {
    fn queue(&self) -> std::sync::MutexGuard<'_, tokio_util::time::DelayQueue<u64>> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Bench for Tokio {
    const NAME: &'static str = "tokio-delayqueue";
    type Key = tokio_util::time::delay_queue::Key;

    fn new() -> Self {
        Tokio(Mutex::new(tokio_util::time::DelayQueue::new()))
    }
    fn insert(&self, value: u64, delay_ms: u64) -> Self::Key {
        self.queue().insert(value, Duration::from_millis(delay_ms))
    }
    fn remove(&self, key: &Self::Key) -> Option<u64> {
        self.queue().try_remove(key).map(|expired| expired.into_inner())
    }
    fn expire(&self, ms: u64) -> usize {
        paused_runtime().block_on(async {
            tokio::time::advance(Duration::from_millis(ms)).await;
            let mut taken = 0;
            loop {
                match poll_fn(|cx| Poll::Ready(self.queue().poll_expired(cx))).await {
                    Poll::Ready(Some(expired)) => {
                        std::hint::black_box(expired.into_inner());
                        taken += 1;
                    }
                    Poll::Ready(None) => return taken,
                    Poll::Pending if tokio::task::coop::has_budget_remaining() => return taken,
                    Poll::Pending => tokio::task::yield_now().await,
                }
            }
        })
    }
}

fn insert_one<B: Bench>(group: &mut Group<'_>) {
    let delays = delays_ms(10_000, 70_000, BATCH);
    let _context = paused_runtime().enter();
    group.bench_function(B::NAME, |b| {
        b.iter_batched(
            || (B::new(), Vec::with_capacity(BATCH)),
            |(queue, mut keys)| {
                for (i, &delay) in delays.iter().enumerate() {
                    keys.push(queue.insert(i as u64, delay));
                }
                (queue, keys)
            },
            BatchSize::PerIteration,
        )
    });
}

fn remove_one<B: Bench>(group: &mut Group<'_>) {
    let delays = delays_ms(10_000, 70_000, BATCH);
    let _context = paused_runtime().enter();
    group.bench_function(B::NAME, |b| {
        b.iter_batched(
            || {
                let queue = B::new();
                let keys: Vec<_> =
                    delays.iter().enumerate().map(|(i, &d)| queue.insert(i as u64, d)).collect();
                (queue, keys)
            },
            |(queue, keys)| {
                for (i, key) in keys.iter().enumerate() {
                    assert_eq!(queue.remove(key), Some(i as u64), "{}: value not handed back", B::NAME);
                }
                queue
            },
            BatchSize::PerIteration,
        )
    });
}

fn expire_one<B: Bench>(group: &mut Group<'_>) {
    let delays = delays_ms(1, 1_000, BATCH);
    let _context = paused_runtime().enter();
    group.bench_function(B::NAME, |b| {
        b.iter_batched(
            || {
                let queue = B::new();
                for (i, &delay) in delays.iter().enumerate() {
                    drop(queue.insert(i as u64, delay));
                }
                queue
            },
            |queue| {
                assert_eq!(queue.expire(1_000), BATCH, "{}: not every value came out", B::NAME);
                queue
            },
            BatchSize::PerIteration,
        )
    });
}

fn queue_insert(c: &mut Criterion) {
    let mut group = c.benchmark_group("queue_insert");
    group.throughput(Throughput::Elements(BATCH as u64));
    insert_one::<Wheel>(&mut group);
    insert_one::<Tokio>(&mut group);
    group.finish();
}

fn queue_remove(c: &mut Criterion) {
    let mut group = c.benchmark_group("queue_remove");
    group.throughput(Throughput::Elements(BATCH as u64));
    remove_one::<Wheel>(&mut group);
    remove_one::<Tokio>(&mut group);
    group.finish();
}

fn queue_expire(c: &mut Criterion) {
    let mut group = c.benchmark_group("queue_expire");
    group.throughput(Throughput::Elements(BATCH as u64));
    expire_one::<Wheel>(&mut group);
    expire_one::<Tokio>(&mut group);
    group.finish();
}

criterion_group!(benches, queue_insert, queue_remove, queue_expire);
criterion_main!(benches);
