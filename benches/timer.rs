//! Criterion benchmarks of the core operations on one timer: schedule, cancel, schedule+cancel,
//! and expiry (advance through due buckets on a manual clock).
//!
//! Peers (tokio-util's `DelayQueue`, a `BinaryHeap`, `hierarchical_hash_wheel_timer`) join these
//! groups with the performance issue; speeds are to be read as ratios within one run.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use delaywheel::{ManualClock, Timer};

const BATCH: u64 = 10_000;

fn manual_timer() -> (ManualClock, Timer) {
    let clock = ManualClock::new();
    let timer = Timer::builder().clock(clock.clone()).manual().build();
    (clock, timer)
}

/// Delays spread like the SPEC's W1: 10 s to 70 s.
fn delay(i: u64) -> Duration {
    Duration::from_millis(10_000 + (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) % 60_000)
}

fn schedule(c: &mut Criterion) {
    let mut group = c.benchmark_group("schedule");
    group.throughput(Throughput::Elements(BATCH));
    group.bench_function("delaywheel", |b| {
        b.iter_batched(
            manual_timer,
            |(_clock, timer)| {
                for i in 0..BATCH {
                    let _ = black_box(timer.schedule(delay(i), || {}));
                }
                timer
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

fn cancel(c: &mut Criterion) {
    let mut group = c.benchmark_group("cancel");
    group.throughput(Throughput::Elements(BATCH));
    group.bench_function("delaywheel", |b| {
        b.iter_batched(
            || {
                let (clock, timer) = manual_timer();
                let handles: Vec<_> = (0..BATCH).map(|i| timer.schedule(delay(i), || {})).collect();
                (clock, timer, handles)
            },
            |(_clock, timer, handles)| {
                for h in &handles {
                    black_box(h.cancel());
                }
                (timer, handles)
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

fn schedule_cancel(c: &mut Criterion) {
    let mut group = c.benchmark_group("schedule_cancel");
    group.throughput(Throughput::Elements(1));
    let (_clock, timer) = manual_timer();
    let mut i = 0;
    group.bench_function("delaywheel", |b| {
        b.iter(|| {
            i += 1;
            black_box(timer.schedule(delay(i), || {}).cancel())
        })
    });
    group.finish();
}

fn expire(c: &mut Criterion) {
    let mut group = c.benchmark_group("expire");
    group.throughput(Throughput::Elements(BATCH));
    group.bench_function("delaywheel", |b| {
        b.iter_batched(
            || {
                let (clock, timer) = manual_timer();
                for i in 0..BATCH {
                    let _ = timer.schedule(Duration::from_millis(i % 1_000), || {});
                }
                (clock, timer)
            },
            |(clock, timer)| {
                clock.advance(Duration::from_millis(1_000));
                while timer.advance_clock(Duration::ZERO) {}
                assert!(timer.is_empty());
                timer
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, schedule, cancel, schedule_cancel, expire);
criterion_main!(benches);
