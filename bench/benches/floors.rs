//! The floor under one schedule: what the primitives a schedule cannot avoid cost on the host,
//! measured in the same run as `delaywheel`'s own schedule, so that docs/benchmarks.md can say where
//! a per-insert target sits against them ("Design decisions and what they cost").
//!
//! ```sh
//! cargo bench -p delaywheel-bench --bench floors
//! ```
//!
//! The primitives a schedule + cancel pair pays: read the monotonic clock (`Instant::now`, a vDSO
//! `clock_gettime`; every schedule on the system clock), take and release an uncontended lock (a
//! schedule and a cancel each take their shard's, a test-and-set lock; here a parking_lot `Mutex`),
//! and one uncontended atomic add (a stamp drawn one at a time from the timer's counter, as on a
//! manual clock). Beside them, two that the core does not pay per timer: allocating and freeing a
//! heap block (`alloc_free_96B`; a timer's 48-byte slot comes from its shard's slab) and cloning
//! and dropping an `Arc` (a handle holds no reference count). `schedule` is a whole schedule on a
//! manual clock (no clock read cost), `schedule_system_clock` the same on the system clock, and
//! `schedule_cancel` a schedule and its cancel; each batch of 10 000 runs on a fresh timer.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use delaywheel::{ManualClock, Timer};
use parking_lot::Mutex;

const BATCH: u64 = 10_000;

/// Delays spread like the SPEC's W1: 10 s to 70 s.
fn delay(i: u64) -> Duration {
    Duration::from_millis(10_000 + (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) % 60_000)
}

fn primitives(c: &mut Criterion) {
    let mut group = c.benchmark_group("floors");
    group.bench_function("clock_read", |b| b.iter(|| black_box(Instant::now())));
    group.bench_function("alloc_free_96B", |b| b.iter(|| drop(black_box(Box::new([0u64; 12])))));
    let lock = Mutex::new(0u64);
    group.bench_function("lock_unlock", |b| b.iter(|| *black_box(&lock).lock() += 1));
    let arc = Arc::new(0u64);
    group.bench_function("arc_clone_drop", |b| b.iter(|| drop(black_box(Arc::clone(&arc)))));
    let counter = AtomicU64::new(0);
    group.bench_function("atomic_add", |b| b.iter(|| black_box(&counter).fetch_add(1, Ordering::Relaxed)));
    group.finish();

    let mut group = c.benchmark_group("floors_schedule");
    group.throughput(Throughput::Elements(BATCH));
    let manual = || Timer::builder().clock(ManualClock::new()).manual().build();
    let system = || Timer::builder().manual().build();
    group.bench_function("schedule", |b| {
        b.iter_batched(
            manual,
            |timer| {
                for i in 0..BATCH {
                    let _ = black_box(timer.schedule(delay(i), || {}));
                }
                timer
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function("schedule_system_clock", |b| {
        b.iter_batched(
            system,
            |timer| {
                for i in 0..BATCH {
                    let _ = black_box(timer.schedule(delay(i), || {}));
                }
                timer
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function("schedule_cancel", |b| {
        b.iter_batched(
            manual,
            |timer| {
                for i in 0..BATCH {
                    black_box(timer.schedule(delay(i), || {}).cancel());
                }
                timer
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, primitives);
criterion_main!(benches);
