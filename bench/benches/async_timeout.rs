//! Criterion benchmarks of the `async` feature's `Timeout` beside `tokio::time::timeout`, in the
//! shape of a server: a 2-worker tokio runtime, 64 tasks each awaiting timeouts in a loop.
//!
//! | group | each timed operation | peers |
//! |---|---|---|
//! | `timeout_ready` | `timeout(30 s, future ready at once).await` | `delaywheel` (lazy: never touches the wheel), `tokio`, `pingora` |
//! | `timeout_pending_once` | `timeout(30 s, future pending at its first poll, woken at once).await` | `delaywheel` (armed at the pending poll, cancelled on completion), `tokio`, `pingora` |
//!
//! ```sh
//! cargo bench -p delaywheel-bench --bench async_timeout
//! cargo bench -p delaywheel-bench --bench async_timeout -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! One iteration batch of `n` operations: the 64 tasks are spawned, each runs `n / 64` timeouts
//! back to back, and the batch's wall time (spawn to the last join) divided by `n` is the time per
//! operation: a throughput figure for the two workers together (figures go to docs/benchmarks.md,
//! with the host and versions, measured on a quiet host). delaywheel's timer is a
//! default one (1 ms tick) with its own driver thread, shared by the 64 tasks as a server shares
//! one; tokio's timer is the runtime's; `pingora` is
//! pingora-timeout's `fast_timeout` (Cloudflare's lazy timeout: registered at the first pending
//! poll, on its own timer thread with 10 ms ticks, timers shared by deadline, a completed timeout
//! leaving its timer in place until the deadline; it can fire up to a tick early, which the others
//! never do).

use std::future::Future;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use delaywheel::Timer;
use delaywheel_bench::PendingOnce;
use pingora_timeout::fast_timeout::fast_timeout;

const TASKS: u64 = 64;
const LIMIT: Duration = Duration::from_secs(30);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_time().build().expect("a runtime")
}

/// The wall time of `iters` timeouts split over the 64 tasks: `task(n)` is a task awaiting `n`
/// timeouts in a loop (holding what it needs: the per-operation work is only the timeout).
fn timed<F, Fut>(rt: &tokio::runtime::Runtime, iters: u64, task: F) -> Duration
where
    F: Fn(u64) -> Fut,
    Fut: Future<Output = u64> + Send + 'static,
{
    let per_task = iters.div_ceil(TASKS);
    rt.block_on(async move {
        let start = Instant::now();
        let tasks: Vec<_> = (0..TASKS).map(|_| tokio::spawn(task(per_task))).collect();
        for task in tasks {
            black_box(task.await.expect("a bench task panicked"));
        }
        start.elapsed()
    })
}

/// A task awaiting `n` timeouts of `$timeout` (an expression of `$timer`, a `&Timer`) in a loop.
macro_rules! delaywheel_task {
    ($timer:ident, |$t:ident| $timeout:expr) => {{
        let $timer = Arc::clone(&$timer);
        move |n: u64| {
            let $timer = Arc::clone(&$timer);
            async move {
                let $t: &Timer = &$timer;
                let mut sum = 0;
                for _ in 0..n {
                    sum += $timeout.await.unwrap_or(0);
                }
                sum
            }
        }
    }};
}

/// A task awaiting `n` tokio timeouts of `$timeout` in a loop.
macro_rules! tokio_task {
    ($timeout:expr) => {
        |n: u64| async move {
            let mut sum = 0;
            for _ in 0..n {
                sum += $timeout.await.unwrap_or(0);
            }
            sum
        }
    };
}

fn timeout_ready(c: &mut Criterion) {
    let rt = runtime();
    let timer = Arc::new(Timer::new());
    let mut group = c.benchmark_group("timeout_ready");
    group.throughput(Throughput::Elements(1));
    group.bench_function("delaywheel", |b| {
        b.iter_custom(|iters| {
            timed(&rt, iters, delaywheel_task!(timer, |t| t.timeout(LIMIT, std::future::ready(1))))
        })
    });
    group.bench_function("tokio", |b| {
        b.iter_custom(|iters| {
            timed(&rt, iters, tokio_task!(tokio::time::timeout(LIMIT, std::future::ready(1))))
        })
    });
    group.bench_function("pingora", |b| {
        b.iter_custom(|iters| timed(&rt, iters, tokio_task!(fast_timeout(LIMIT, std::future::ready(1)))))
    });
    group.finish();
    assert_eq!(timer.stats().scheduled, 0, "a ready future never touches the wheel");
}

fn timeout_pending_once(c: &mut Criterion) {
    let rt = runtime();
    let timer = Arc::new(Timer::new());
    let mut group = c.benchmark_group("timeout_pending_once");
    group.throughput(Throughput::Elements(1));
    group.bench_function("delaywheel", |b| {
        b.iter_custom(|iters| {
            timed(&rt, iters, delaywheel_task!(timer, |t| t.timeout(LIMIT, PendingOnce::new())))
        })
    });
    group.bench_function("tokio", |b| {
        b.iter_custom(|iters| timed(&rt, iters, tokio_task!(tokio::time::timeout(LIMIT, PendingOnce::new()))))
    });
    group.bench_function("pingora", |b| {
        b.iter_custom(|iters| timed(&rt, iters, tokio_task!(fast_timeout(LIMIT, PendingOnce::new()))))
    });
    group.finish();
    assert!(timer.is_empty(), "every armed limit was cancelled");
}

criterion_group!(benches, timeout_ready, timeout_pending_once);
criterion_main!(benches);
