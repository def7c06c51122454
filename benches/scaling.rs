//! Scaling sweep (issue 5, item 2): the cost of one schedule and of one expiry as the number of
//! pending timers grows from 10^4 to 10^7, for delaywheel and the `BinaryHeap` peer of
//! `benches/spec.rs`. A timing wheel should stay flat; a heap grows with log(pending).
//!
//! ```sh
//! cargo bench --bench scaling                      # 10^4, 10^5, 10^6 pending (quick)
//! SCALING_MAX_EXP=7 cargo bench --bench scaling    # up to 10^7 (about 1.5 GB for delaywheel)
//! ```
//!
//! Both timers are driven by hand on a virtual clock, so that nothing but the operation is timed
//! and the background never fires:
//! * **schedule**: with P timers pending (delays in [10 s, 70 s), like SPEC W1), schedule chunks of
//!   1024 more (same range), timed; each chunk is cancelled again untimed, so P stays constant
//!   (the heap cancels lazily: its cancelled entries are purged, untimed, once they reach 10% of P).
//! * **expire**: with P timers pending far away (delays in [1 h, 2 h), never reached), schedule a
//!   chunk of 1024 due within the next 8 ms (untimed), move the clock 8 ms and time the advance that
//!   fires them: cost per expiry, bucket pops and cascades included.
//!
//! delaywheel: a `manual()` timer on a `ManualClock`, default tick (1 ms) and wheel size.
//! heap: `HeapCore` (the SPEC peer's heap and lock) advanced on a virtual nanosecond clock.

#[allow(dead_code)] // the driver-thread half serves benches/spec.rs
#[path = "spec/heap.rs"]
mod heap;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use delaywheel::{ManualClock, Timer};
use heap::HeapCore;

const CHUNK: u64 = 1024;

fn sizes() -> Vec<u64> {
    let max_exp: u32 = std::env::var("SCALING_MAX_EXP").ok().and_then(|e| e.parse().ok()).unwrap_or(6);
    (4..=max_exp.clamp(4, 8)).map(|e| 10u64.pow(e)).collect()
}

/// splitmix64, one stream per prefill: the same background for both timers.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn delay_ms(state: &mut u64, lo: u64, hi: u64) -> u64 {
    lo + splitmix(state) % (hi - lo)
}

fn noop() -> impl FnOnce() + Send + 'static {
    let tag = black_box(1u64);
    move || {
        black_box(tag);
    }
}

const W1_RANGE: (u64, u64) = (10_000, 70_000);
const FAR_RANGE: (u64, u64) = (3_600_000, 7_200_000);

fn delaywheel_with(pending: u64, (lo, hi): (u64, u64)) -> (ManualClock, Timer, Vec<delaywheel::TimerHandle>) {
    let clock = ManualClock::new();
    let timer = Timer::builder().clock(clock.clone()).manual().build();
    let mut rng = 42;
    let background = (0..pending)
        .map(|_| timer.schedule(Duration::from_millis(delay_ms(&mut rng, lo, hi)), noop()))
        .collect();
    (clock, timer, background)
}

fn heap_with(pending: u64, (lo, hi): (u64, u64)) -> HeapCore {
    let heap = HeapCore::default();
    let mut rng = 42;
    for _ in 0..pending {
        drop(heap.insert(delay_ms(&mut rng, lo, hi) * 1_000_000, noop()));
    }
    heap
}

fn schedule(c: &mut Criterion) {
    let mut group = c.benchmark_group("scaling_schedule");
    group.throughput(Throughput::Elements(1));
    group.sample_size(10).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1));
    for pending in sizes() {
        let (_clock, timer, background) = delaywheel_with(pending, W1_RANGE);
        group.bench_with_input(BenchmarkId::new("delaywheel", pending), &pending, |b, _| {
            let mut rng = 7;
            let mut chunk = Vec::with_capacity(CHUNK as usize);
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut left = iters;
                while left > 0 {
                    let k = left.min(CHUNK);
                    let (lo, hi) = W1_RANGE;
                    let start = Instant::now();
                    for _ in 0..k {
                        chunk.push(timer.schedule(Duration::from_millis(delay_ms(&mut rng, lo, hi)), noop()));
                    }
                    total += start.elapsed();
                    chunk.drain(..).for_each(|h| assert!(h.cancel()));
                    left -= k;
                }
                total
            })
        });
        drop((background, timer));

        let heap = heap_with(pending, W1_RANGE);
        group.bench_with_input(BenchmarkId::new("binaryheap-mutex", pending), &pending, |b, _| {
            let mut rng = 7;
            let mut chunk = Vec::with_capacity(CHUNK as usize);
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut left = iters;
                while left > 0 {
                    let k = left.min(CHUNK);
                    let (lo, hi) = W1_RANGE;
                    let start = Instant::now();
                    for _ in 0..k {
                        chunk.push(heap.insert(delay_ms(&mut rng, lo, hi) * 1_000_000, noop()));
                    }
                    total += start.elapsed();
                    // Lazy cancellation leaves the entries in the heap: purge (untimed) once they
                    // are 10% of P, so the heap holds P to 1.1 P + one chunk while measured.
                    chunk.drain(..).for_each(|h| assert!(h.cancel()));
                    if heap.len() as u64 > pending + pending / 10 {
                        heap.purge_cancelled();
                    }
                    left -= k;
                }
                total
            })
        });
        drop(heap);
    }
    group.finish();
}

fn expire(c: &mut Criterion) {
    let mut group = c.benchmark_group("scaling_expire");
    group.throughput(Throughput::Elements(1));
    group.sample_size(10).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1));
    for pending in sizes() {
        let (clock, timer, background) = delaywheel_with(pending, FAR_RANGE);
        group.bench_with_input(BenchmarkId::new("delaywheel", pending), &pending, |b, _| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut left = iters;
                while left > 0 {
                    let k = left.min(CHUNK);
                    for i in 0..k {
                        drop(timer.schedule(Duration::from_millis(1 + i % 8), noop()));
                    }
                    clock.advance(Duration::from_millis(8));
                    let start = Instant::now();
                    timer.advance_clock(Duration::ZERO);
                    total += start.elapsed();
                    left -= k;
                }
                total
            })
        });
        assert_eq!(timer.len() as u64, pending, "only the chunks fired");
        drop((background, timer));

        let heap = heap_with(pending, FAR_RANGE);
        let mut now_ns = 0u64;
        group.bench_with_input(BenchmarkId::new("binaryheap-mutex", pending), &pending, |b, _| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut left = iters;
                while left > 0 {
                    let k = left.min(CHUNK);
                    for i in 0..k {
                        drop(heap.insert(now_ns + (1 + i % 8) * 1_000_000, noop()));
                    }
                    now_ns += 8_000_000;
                    let start = Instant::now();
                    black_box(heap.advance(now_ns));
                    total += start.elapsed();
                    left -= k;
                }
                total
            })
        });
        assert_eq!(heap.len() as u64, pending, "only the chunks fired");
        drop(heap);
    }
    group.finish();
}

criterion_group!(benches, schedule, expire);
criterion_main!(benches);
