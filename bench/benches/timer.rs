//! Criterion benchmarks of the core timer operations, delaywheel and its peers side by side in each
//! group (speeds are to be read as ratios within one run):
//!
//! | group | timed | throughput |
//! |---|---|---|
//! | `schedule` | a fresh timer; 10 000 schedules (delays of SPEC W1: [10 s, 70 s), splitmix64 seed 42) | per schedule |
//! | `cancel` | a fresh timer holding those 10 000; cancel all, in insertion order | per cancel |
//! | `schedule_cancel` | one long-lived timer; schedule one (W1 delays) and cancel it at once, repeated | per pair |
//! | `expire` | a fresh timer holding 10 000 due in [1, 1000) ms; move the clock 1000 ms and fire all | per expiry |
//! | `rearm` | one long-lived timer holding 10 000 timeouts of 30 s; re-arm them to 30 s from now in a shuffled round-robin order, 1024 at a time, the clock moved 1 ms (untimed) before each 1024: `reset`, `cancel` (the timed cancel of the same timers, each scheduled again untimed), `cancel_schedule` (a re-arm without `reset`) | per operation |
//!
//! ```sh
//! cargo bench -p delaywheel-bench --bench timer
//! cargo bench -p delaywheel-bench --bench timer -- --warm-up-time 1 --measurement-time 3  # quicker
//! cargo bench -p delaywheel-bench --bench timer -- expire/                                # one group
//! cargo bench -p delaywheel-bench --bench timer -- rearm/                                 # the re-arms
//! ```
//!
//! Every timer is driven by hand on a virtual clock (`benches/spec/manual.rs`, shared with
//! `benches/scaling.rs`): no driver thread or runtime task runs beside the bench, nothing fires until
//! the bench moves the clock, and expiry runs on the bench's thread. Each keeps the form the SPEC
//! workloads (`benches/spec.rs`) measure it in, with the same task (an 8-byte closure incrementing
//! a shared counter, `spec/measure.rs`) and the same delays:
//!
//! * `delaywheel`: a `manual()` timer on a `ManualClock` (default tick 1 ms and wheel size);
//!   `schedule` → `TimerHandle`, `cancel()`; expiry = `ManualClock::advance` + one `advance_clock(0)`.
//! * `tokio-delayqueue`: tokio-util's `DelayQueue<Box<dyn FnOnce() + Send>>` behind a std `Mutex`
//!   (its shared form in the SPEC runs; the uncontended lock is in every operation, as the heap's
//!   and delaywheel's own locks are in theirs), on a current-thread runtime with a paused clock
//!   (tokio's `test-util`) whose context the bench thread holds: `insert` → `Key`, `try_remove(&key)`;
//!   expiry = `tokio::time::advance` and the polling loop of the SPEC runs (`poll_expired` in a
//!   `poll_fn`, each expired closure run), inside `block_on`, yielding when tokio's cooperative
//!   budget runs out.
//! * `binaryheap-mutex`: the SPEC's `BinaryHeap` peer (`spec/heap.rs`: heap + parking_lot `Mutex`,
//!   one `Arc` slot per timer, lazy cancellation) on a virtual ns clock; expiry = pop due entries in
//!   batches of 1024, fire outside the lock.
//! * `hierarchical_hash_wheel_timer`: its `ManualTimer`: the `TimerRef` + message channel + wheel
//!   core of its thread timer (the SPEC runs use that one), advanced by the caller; `u64` ids.
//!   Schedule and cancel only send a message, so each timed loop ends with `advance_by(0)`, which
//!   applies every queued message (as its thread does): the time is the caller's send plus the
//!   timer's apply, on one thread (no cross-thread hand-off, unlike the SPEC runs).
//!
//! Where a peer does an operation differently:
//! * **Cancel results.** hierarchical_hash_wheel_timer's `cancel(&id)` returns nothing (it is a
//!   message; the core's "not found" is dropped), so its `cancel` and `schedule_cancel` times are
//!   for a cancel the caller cannot check. It does take effect: a check before the groups cancels
//!   1000 timers on every system, moves the clock past them, and asserts that none ran and that
//!   every cancel that reports a result reported success.
//! * **Lazy cancellation.** The heap (entry stays in the heap until popped) and
//!   hierarchical_hash_wheel_timer (a `Weak` and the entry's allocation stay in the wheel slot until
//!   the wheel reaches it) cancel lazily; delaywheel and tokio-util remove the entry at once. The
//!   `cancel` group drops that garbage with the timer, untimed; `schedule_cancel` collects it
//!   untimed every 65 536 pairs (heap: purge; hierarchical_hash_wheel_timer: its clock moved past
//!   70 s). So the lazy peers' numbers leave out the deferred cleanup they pay later.
//! * **Zero delays** are left out of `expire` (delays start at 1 ms): hierarchical_hash_wheel_timer
//!   runs a zero-delay task while applying its schedule and tokio-util queues it as already expired,
//!   so it would not measure an expiry.

#[allow(dead_code)] // the driver-thread half serves benches/spec.rs
#[path = "spec/heap.rs"]
mod heap;
#[path = "spec/manual.rs"]
mod manual;
#[allow(dead_code)] // the workload bookkeeping serves benches/spec.rs
#[path = "spec/measure.rs"]
mod measure;
#[allow(dead_code)] // the threaded systems serve benches/spec.rs
#[path = "spec/systems.rs"]
mod systems;

use std::hint::black_box;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use manual::{Manual, ManualDelayWheel, ManualHeap, ManualHhwt, ManualTokio};
use measure::{counting_task, delays_ms, FIRED};

/// Timers per iteration of `schedule`, `cancel` and `expire`.
const BATCH: usize = 10_000;
/// `schedule_cancel`: pairs per timed chunk, and pairs between two (untimed) garbage collections.
const CHUNK: u64 = 1024;
const GC_EVERY: u64 = 65_536;

/// SPEC W1's delays, the same for every system.
fn w1_delays() -> Vec<u64> {
    delays_ms(10_000, 70_000, BATCH)
}

fn schedule_one<S: Manual>(c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    let delays = w1_delays();
    let _context = S::context();
    c.bench_function(S::NAME, |b| {
        b.iter_batched(
            || (S::new(), Vec::with_capacity(BATCH)),
            |(mut timer, mut handles)| {
                for &delay in &delays {
                    handles.push(timer.schedule(delay, counting_task()));
                }
                timer.apply();
                (timer, handles)
            },
            BatchSize::PerIteration,
        )
    });
}

fn schedule(c: &mut Criterion) {
    let mut group = c.benchmark_group("schedule");
    group.throughput(Throughput::Elements(BATCH as u64));
    schedule_one::<ManualDelayWheel>(&mut group);
    schedule_one::<ManualTokio>(&mut group);
    schedule_one::<ManualHeap>(&mut group);
    schedule_one::<ManualHhwt>(&mut group);
    group.finish();
}

fn cancel_one<S: Manual>(c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    let delays = w1_delays();
    let _context = S::context();
    c.bench_function(S::NAME, |b| {
        b.iter_batched(
            || {
                let mut timer = S::new();
                let handles: Vec<_> =
                    delays.iter().map(|&delay| timer.schedule(delay, counting_task())).collect();
                timer.apply();
                (timer, handles)
            },
            |(mut timer, handles)| {
                for handle in &handles {
                    black_box(timer.cancel(handle));
                }
                timer.apply();
                (timer, handles)
            },
            BatchSize::PerIteration,
        )
    });
}

fn cancel(c: &mut Criterion) {
    check_cancel::<ManualDelayWheel>();
    check_cancel::<ManualTokio>();
    check_cancel::<ManualHeap>();
    check_cancel::<ManualHhwt>();
    let mut group = c.benchmark_group("cancel");
    group.throughput(Throughput::Elements(BATCH as u64));
    cancel_one::<ManualDelayWheel>(&mut group);
    cancel_one::<ManualTokio>(&mut group);
    cancel_one::<ManualHeap>(&mut group);
    cancel_one::<ManualHhwt>(&mut group);
    group.finish();
}

/// Cancelled timers do not run (hierarchical_hash_wheel_timer's cancel reports nothing: this is the
/// only evidence that it took effect), and every reported result is a success.
fn check_cancel<S: Manual>() {
    let _context = S::context();
    let mut timer = S::new();
    FIRED.store(0, Ordering::SeqCst);
    let handles: Vec<_> =
        delays_ms(1, 1_000, 1_000).into_iter().map(|d| timer.schedule(d, counting_task())).collect();
    timer.apply();
    for handle in &handles {
        assert_ne!(timer.cancel(handle), Some(false), "{}: a cancel of a pending timer failed", S::NAME);
    }
    timer.apply();
    timer.advance(2_000);
    assert_eq!(FIRED.load(Ordering::SeqCst), 0, "{}: a cancelled timer ran", S::NAME);
    assert_eq!(timer.held().unwrap_or(0), 0, "{}: still holds entries once past their deadlines", S::NAME);
}

fn schedule_cancel_one<S: Manual>(c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    let delays = w1_delays();
    let _context = S::context();
    let mut timer = S::new();
    let (mut next, mut since_gc) = (0usize, 0u64);
    c.bench_function(S::NAME, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let k = left.min(CHUNK);
                let start = Instant::now();
                for _ in 0..k {
                    let handle = timer.schedule(delays[next], counting_task());
                    black_box(timer.cancel(&handle));
                    next = (next + 1) % BATCH;
                }
                timer.apply();
                total += start.elapsed();
                left -= k;
                since_gc += k;
                if since_gc >= GC_EVERY {
                    timer.collect_garbage();
                    since_gc = 0;
                }
            }
            total
        })
    });
}

fn schedule_cancel(c: &mut Criterion) {
    let mut group = c.benchmark_group("schedule_cancel");
    group.throughput(Throughput::Elements(1));
    schedule_cancel_one::<ManualDelayWheel>(&mut group);
    schedule_cancel_one::<ManualTokio>(&mut group);
    schedule_cancel_one::<ManualHeap>(&mut group);
    schedule_cancel_one::<ManualHhwt>(&mut group);
    group.finish();
}

fn expire_one<S: Manual>(c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    let delays = delays_ms(1, 1_000, BATCH);
    let _context = S::context();
    c.bench_function(S::NAME, |b| {
        b.iter_batched(
            || {
                let mut timer = S::new();
                for &delay in &delays {
                    drop(timer.schedule(delay, counting_task()));
                }
                timer.apply();
                FIRED.store(0, Ordering::SeqCst);
                timer
            },
            |mut timer| {
                timer.advance(1_000);
                assert_eq!(FIRED.load(Ordering::Relaxed), BATCH as u64, "{}: not all fired", S::NAME);
                timer
            },
            BatchSize::PerIteration,
        )
    });
}

fn expire(c: &mut Criterion) {
    let mut group = c.benchmark_group("expire");
    group.throughput(Throughput::Elements(BATCH as u64));
    expire_one::<ManualDelayWheel>(&mut group);
    expire_one::<ManualTokio>(&mut group);
    expire_one::<ManualHeap>(&mut group);
    expire_one::<ManualHhwt>(&mut group);
    group.finish();
}

/// What the `rearm` group times on each of its timers.
#[derive(Clone, Copy)]
enum Rearm {
    /// The timer's own re-arm in place.
    Reset,
    /// The cancel alone (each timer is scheduled again after the chunk, untimed).
    Cancel,
    /// A re-arm without `reset`: cancel, then schedule a new timer.
    CancelSchedule,
}

/// `rearm`: 10 000 pending 30 s timeouts on one timer; each timed chunk re-arms (or cancels) 1024 of
/// them, in a shuffled round-robin order (each is re-armed every ten chunks, so none expires), after
/// moving the virtual clock 1 ms (untimed): every re-arm is to a later deadline, as an idle timeout's.
fn rearm_one<S: Manual>(c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>, op: Rearm) {
    const TIMEOUT_MS: u64 = 30_000;
    let name = match op {
        Rearm::Reset => "reset",
        Rearm::Cancel => "cancel",
        Rearm::CancelSchedule => "cancel_schedule",
    };
    let _context = S::context();
    let mut order: Vec<usize> = (0..BATCH).collect();
    let mut rng = measure::SplitMix64::new(42);
    for i in (1..BATCH).rev() {
        order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    let mut timer = S::new();
    let mut handles: Vec<_> = (0..BATCH).map(|_| timer.schedule(TIMEOUT_MS, counting_task())).collect();
    timer.apply();
    let mut next = 0;
    c.bench_function(format!("{}/{name}", S::NAME), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let k = left.min(CHUNK) as usize;
                timer.advance(1);
                let chunk: Vec<usize> = (0..k).map(|j| order[(next + j) % BATCH]).collect();
                next = (next + k) % BATCH;
                let start = Instant::now();
                for &v in &chunk {
                    match op {
                        Rearm::Reset => {
                            let moved = timer.reset(&handles[v], TIMEOUT_MS);
                            assert_eq!(moved, Some(true), "{}: a pending timeout re-arms", S::NAME);
                        }
                        Rearm::Cancel => {
                            black_box(timer.cancel(&handles[v]));
                        }
                        Rearm::CancelSchedule => {
                            black_box(timer.cancel(&handles[v]));
                            handles[v] = timer.schedule(TIMEOUT_MS, counting_task());
                        }
                    }
                }
                timer.apply();
                total += start.elapsed();
                if let Rearm::Cancel = op {
                    for &v in &chunk {
                        handles[v] = timer.schedule(TIMEOUT_MS, counting_task());
                    }
                    timer.apply();
                }
                left -= k as u64;
            }
            total
        })
    });
    assert_eq!(timer.held(), Some(BATCH), "{}: every timeout is still pending", S::NAME);
}

fn rearm(c: &mut Criterion) {
    let mut group = c.benchmark_group("rearm");
    group.throughput(Throughput::Elements(1));
    for op in [Rearm::Reset, Rearm::Cancel, Rearm::CancelSchedule] {
        rearm_one::<ManualDelayWheel>(&mut group, op);
    }
    rearm_one::<ManualTokio>(&mut group, Rearm::Reset);
    rearm_one::<ManualTokio>(&mut group, Rearm::Cancel);
    group.finish();
}

criterion_group!(benches, schedule, cancel, schedule_cancel, expire, rearm);
criterion_main!(benches);
