//! The timer with its own driver thread, on the real clock (generous bounds) and on a manual clock.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use common::{ms, Counter, SplitMix};
use delaywheel::{ManualClock, ScheduleError, TaskExecution, Timer, TimerHandle};

/// Polls `cond` until it holds or `limit` passes.
fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        thread::sleep(ms(1));
    }
    cond()
}

#[test]
fn driver_fires_on_the_real_clock_never_early() {
    let timer = Timer::builder().tick(ms(1)).wheel_size(8).build();
    let (tx, rx) = mpsc::channel();
    let start = Instant::now();
    for d in [0u64, 5, 30, 120] {
        let tx = tx.clone();
        let _ = timer.schedule(ms(d), move || tx.send((d, start.elapsed())).unwrap());
    }
    for _ in 0..4 {
        let (d, at) = rx.recv_timeout(Duration::from_secs(10)).expect("task did not fire");
        assert!(at >= ms(d), "task of {d} ms fired early, at {at:?}");
        assert!(at < ms(d) + Duration::from_secs(2), "task of {d} ms fired at {at:?}");
    }
    assert!(eventually(Duration::from_secs(5), || timer.is_empty()));
}

/// Exactly once under races: several threads cancel every task while the driver fires them.
#[test]
fn cancel_races_the_running_driver_exactly_once() {
    const N: usize = 20_000;
    let timer = Arc::new(Timer::builder().tick(ms(1)).wheel_size(16).build());
    let runs: Arc<Vec<AtomicU8>> = Arc::new((0..N).map(|_| AtomicU8::new(0)).collect());
    let mut rng = SplitMix(5);
    let handles: Arc<Vec<TimerHandle>> = Arc::new(
        (0..N)
            .map(|i| {
                let runs = Arc::clone(&runs);
                timer.schedule(Duration::from_micros(rng.range(0, 30_000)), move || {
                    runs[i].fetch_add(1, Ordering::SeqCst);
                })
            })
            .collect(),
    );
    let cancels: Arc<Vec<AtomicU8>> = Arc::new((0..N).map(|_| AtomicU8::new(0)).collect());
    let barrier = Arc::new(Barrier::new(3));
    let cancellers: Vec<_> = (0..3)
        .map(|t| {
            let (handles, cancels, barrier) =
                (Arc::clone(&handles), Arc::clone(&cancels), Arc::clone(&barrier));
            thread::spawn(move || {
                barrier.wait();
                // Each thread walks the handles in its own order, slowly enough to meet the driver.
                for k in 0..N {
                    let i = (k * (2 * t + 1) + t * 7919) % N;
                    if handles[i].cancel() {
                        cancels[i].fetch_add(1, Ordering::SeqCst);
                    }
                    if k % 2_000 == 0 {
                        thread::sleep(ms(1));
                    }
                }
            })
        })
        .collect();
    for c in cancellers {
        c.join().unwrap();
    }
    assert!(eventually(Duration::from_secs(10), || timer.is_empty()), "len = {}", timer.len());
    thread::sleep(ms(50));
    let (mut ran, mut cancelled) = (0, 0);
    for i in 0..N {
        let r = runs[i].load(Ordering::SeqCst);
        let c = cancels[i].load(Ordering::SeqCst);
        assert_eq!(r + c, 1, "task {i}: ran {r} times, cancelled {c} times");
        ran += r as usize;
        cancelled += c as usize;
    }
    let stats = timer.stats();
    assert_eq!(stats.fired as usize, ran);
    assert_eq!(stats.cancelled as usize, cancelled);
    assert!(ran > 0 && cancelled > 0, "the race was not exercised: ran {ran}, cancelled {cancelled}");
}

#[test]
fn many_threads_schedule_concurrently_and_every_task_fires_once() {
    let timer = Arc::new(Timer::builder().tick(ms(1)).build());
    let counter = Counter::default();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (timer, counter) = (Arc::clone(&timer), counter.clone());
            thread::spawn(move || {
                let mut rng = SplitMix(t);
                for _ in 0..5_000 {
                    let _ = timer.schedule(ms(rng.range(0, 200)), counter.task());
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(eventually(Duration::from_secs(20), || counter.get() == 20_000), "fired {}", counter.get());
    assert!(timer.is_empty());
    thread::sleep(ms(50));
    assert_eq!(counter.get(), 20_000, "a task fired twice");
}

#[test]
fn dropping_a_busy_timer_does_not_hang_and_releases_closures() {
    let resource = Arc::new(());
    let timer = Timer::new();
    for i in 0..100_000u64 {
        let r = Arc::clone(&resource);
        let _ = timer.schedule(Duration::from_secs(3_600) + ms(i), move || drop(r));
    }
    let start = Instant::now();
    drop(timer);
    assert!(start.elapsed() < Duration::from_secs(10), "drop took {:?}", start.elapsed());
    assert_eq!(Arc::strong_count(&resource), 1);
}

#[test]
fn idle_timer_drops_promptly() {
    let timer = Timer::new();
    thread::sleep(ms(20));
    let start = Instant::now();
    drop(timer);
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_driver_on_a_manual_clock_wakes_when_the_clock_moves() {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(ms(1)).clock(clock.clone()).build();
    let counter = Counter::default();
    let _ = timer.schedule(ms(10), counter.task());
    thread::sleep(ms(50));
    assert_eq!(counter.get(), 0, "a manual clock has not moved: nothing may fire");
    clock.advance(ms(9));
    thread::sleep(ms(20));
    assert_eq!(counter.get(), 0);
    clock.advance(ms(1));
    assert!(eventually(Duration::from_secs(10), || counter.get() == 1));
}

#[test]
fn executor_threads_keep_a_slow_task_from_delaying_others() {
    let timer = Timer::builder().tick(ms(1)).execution(TaskExecution::Threads(2)).build();
    let slow_done = Arc::new(AtomicBool::new(false));
    let fast_fired_while_slow_ran = Arc::new(AtomicBool::new(false));
    {
        let slow_done = Arc::clone(&slow_done);
        let _ = timer.schedule(ms(5), move || {
            thread::sleep(Duration::from_millis(1_500));
            slow_done.store(true, Ordering::SeqCst);
        });
    }
    {
        let (slow_done, flag) = (Arc::clone(&slow_done), Arc::clone(&fast_fired_while_slow_ran));
        let _ =
            timer.schedule(ms(50), move || flag.store(!slow_done.load(Ordering::SeqCst), Ordering::SeqCst));
    }
    assert!(eventually(Duration::from_secs(10), || timer.is_empty()));
    assert!(eventually(Duration::from_secs(10), || slow_done.load(Ordering::SeqCst)));
    assert!(fast_fired_while_slow_ran.load(Ordering::SeqCst), "the slow task delayed the fast one");
    assert_eq!(timer.stats().fired, 2);
}

#[test]
fn executor_shutdown_runs_nothing_after_it_returns() {
    let timer = Timer::builder().tick(ms(1)).execution(TaskExecution::Threads(1)).build();
    let counter = Counter::default();
    for i in 0..1_000 {
        let _ = timer.schedule(Duration::from_micros(i * 10), counter.task());
    }
    for _ in 0..10 {
        let _ = timer.schedule(Duration::from_secs(60), counter.task());
    }
    thread::sleep(ms(30));
    let unfired = timer.shutdown();
    let ran = counter.get();
    assert_eq!(ran + unfired.len(), 1_010, "every task ran or was handed back");
    thread::sleep(ms(30));
    assert_eq!(counter.get(), ran, "a task ran after shutdown returned");
}

/// Shutdown racing schedulers: every task ran, was handed back, or its schedule call failed.
#[test]
fn shutdown_racing_schedules_loses_no_task() {
    for round in 0..20 {
        let timer = Arc::new(Timer::builder().tick(ms(1)).wheel_size(4).build());
        let ran = Counter::default();
        let refused = Arc::new(AtomicUsize::new(0));
        let attempted = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let schedulers: Vec<_> = (0..2)
            .map(|t| {
                let (timer, ran, refused, attempted, stop) = (
                    Arc::clone(&timer),
                    ran.clone(),
                    Arc::clone(&refused),
                    Arc::clone(&attempted),
                    Arc::clone(&stop),
                );
                thread::spawn(move || {
                    let mut rng = SplitMix(round * 10 + t);
                    while !stop.load(Ordering::Relaxed) {
                        attempted.fetch_add(1, Ordering::SeqCst);
                        match timer.try_schedule(Duration::from_micros(rng.range(0, 3_000)), ran.task()) {
                            Ok(_) => {}
                            Err(ScheduleError::ShutDown) => {
                                refused.fetch_add(1, Ordering::SeqCst);
                                break;
                            }
                            Err(e) => panic!("{e}"),
                        }
                    }
                })
            })
            .collect();
        thread::sleep(ms(5));
        let unfired = timer.shutdown();
        let ran_at_shutdown = ran.get();
        stop.store(true, Ordering::Relaxed);
        for s in schedulers {
            s.join().unwrap();
        }
        assert_eq!(ran.get(), ran_at_shutdown, "a task ran after shutdown returned");
        assert_eq!(
            ran.get() + unfired.len() + refused.load(Ordering::SeqCst),
            attempted.load(Ordering::SeqCst),
            "round {round}: a task vanished"
        );
        assert!(timer.is_empty());
    }
}
