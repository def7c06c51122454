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

/// Exactly once under races: several threads cancel every task while the driver fires them. A
/// round in which the driver or the cancellers were held off the processor the whole time (all
/// fired, or all cancelled) checks exactly once too but not the race: then another round runs.
#[test]
fn cancel_races_the_running_driver_exactly_once() {
    let mut outcomes = Vec::new();
    for seed in 5..25 {
        let (ran, cancelled) = cancel_race_round(seed);
        outcomes.push((ran, cancelled));
        if ran > 0 && cancelled > 0 {
            return;
        }
    }
    panic!("the race was not exercised in 20 rounds: (ran, cancelled) {outcomes:?}");
}

/// One round of [`cancel_races_the_running_driver_exactly_once`]: what ran and what was cancelled.
fn cancel_race_round(seed: u64) -> (usize, usize) {
    const N: usize = 20_000;
    let timer = Arc::new(Timer::builder().tick(ms(1)).wheel_size(16).build());
    let runs: Arc<Vec<AtomicU8>> = Arc::new((0..N).map(|_| AtomicU8::new(0)).collect());
    let mut rng = SplitMix(seed);
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
    // A task leaves `len()` when the driver claims it, a moment before it runs: wait for every
    // task to be accounted for, then a while more for a second run to show.
    let accounted = |i: usize| runs[i].load(Ordering::SeqCst) + cancels[i].load(Ordering::SeqCst) > 0;
    eventually(Duration::from_secs(10), || (0..N).all(accounted));
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
    (ran, cancelled)
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
    // The slow task runs until the fast one has run (or 30 s): the fast one finds it still
    // running unless the slow one holds it up, however slowly either of them runs.
    let (fast_ran, wait_for_fast) = mpsc::channel::<()>();
    {
        let slow_done = Arc::clone(&slow_done);
        let _ = timer.schedule(ms(5), move || {
            let _ = wait_for_fast.recv_timeout(Duration::from_secs(30));
            slow_done.store(true, Ordering::SeqCst);
        });
    }
    {
        let (slow_done, flag) = (Arc::clone(&slow_done), Arc::clone(&fast_fired_while_slow_ran));
        let _ = timer.schedule(ms(50), move || {
            flag.store(!slow_done.load(Ordering::SeqCst), Ordering::SeqCst);
            let _ = fast_ran.send(());
        });
    }
    assert!(eventually(Duration::from_secs(40), || timer.is_empty()));
    assert!(eventually(Duration::from_secs(40), || slow_done.load(Ordering::SeqCst)));
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

/// Runs `f` on a thread and fails if it does not finish within `limit` (a deadlock check).
fn finishes_within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit).expect("deadlock: did not finish in time")
}

#[test]
fn shutdown_from_a_task_and_from_the_owner_at_once_does_not_deadlock() {
    finishes_within(Duration::from_secs(20), || {
        let timer = Arc::new(Timer::builder().tick(ms(1)).build());
        let weak = Arc::downgrade(&timer);
        let (started, task_started) = mpsc::channel();
        let _ = timer.schedule(ms(1), move || {
            started.send(()).unwrap();
            thread::sleep(ms(200)); // the owner calls shutdown meanwhile
            if let Some(timer) = weak.upgrade() {
                let _ = timer.shutdown();
            }
        });
        let _ = timer.schedule(Duration::from_secs(60), || {});
        // Once the task runs, only the 60 s one is left for a shutdown to hand back.
        task_started.recv_timeout(Duration::from_secs(15)).expect("the task ran");
        let unfired = timer.shutdown();
        assert!(unfired.len() <= 1);
        assert!(timer.is_empty());
    });
}

#[test]
fn shutdown_from_a_task_on_an_executor_thread_works() {
    finishes_within(Duration::from_secs(20), || {
        let timer = Arc::new(Timer::builder().tick(ms(1)).execution(TaskExecution::Threads(2)).build());
        let (tx, rx) = mpsc::channel();
        let weak = Arc::downgrade(&timer);
        // Scheduled first: the task due in 1 ms may run before a later schedule on a busy machine.
        let _ = timer.schedule(Duration::from_secs(60), || {});
        let _ = timer.schedule(ms(1), move || {
            let unfired = weak.upgrade().unwrap().shutdown();
            tx.send(unfired.len()).unwrap();
        });
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 1);
        assert_eq!(timer.stats().panicked, 0, "shutdown must not panic on an executor thread");
    });
}

#[test]
fn dropping_a_timer_with_executor_threads_starts_no_queued_task() {
    let clock = ManualClock::new();
    let timer =
        Timer::builder().tick(ms(1)).clock(clock.clone()).execution(TaskExecution::Threads(1)).build();
    let started = Counter::default();
    let (slow_started_tx, slow_started_rx) = mpsc::channel();
    // The slow task runs until released after the drop (or 30 s): a drop that waits for it
    // returns only after it has ended.
    let (release, released) = mpsc::channel::<()>();
    let slow_done = Arc::new(AtomicBool::new(false));
    let done = Arc::clone(&slow_done);
    let _ = timer.schedule(ms(1), move || {
        slow_started_tx.send(()).unwrap();
        let _ = released.recv_timeout(Duration::from_secs(30));
        done.store(true, Ordering::SeqCst);
    });
    for _ in 0..100 {
        let _ = timer.schedule(ms(1), started.task());
    }
    // All 101 share a bucket on the manual clock: once the slow one runs, the driver has taken
    // them all out of the wheel, and the 100 quick ones queue behind it.
    clock.advance(ms(1));
    slow_started_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    drop(timer);
    assert!(!slow_done.load(Ordering::SeqCst), "drop waited for the slow task");
    let _ = release.send(());
    thread::sleep(ms(500));
    assert_eq!(started.get(), 0, "a queued task started after the timer was dropped");
}

#[test]
fn an_earlier_task_wakes_a_driver_sleeping_toward_a_later_one() {
    let timer = Timer::builder().tick(ms(1)).build();
    let _ = timer.schedule(Duration::from_secs(3_600), || {});
    thread::sleep(ms(30)); // the driver now sleeps toward the hour-long task
    let (tx, rx) = mpsc::channel();
    let start = Instant::now();
    let _ = timer.schedule(ms(20), move || tx.send(start.elapsed()).unwrap());
    let at = rx.recv_timeout(Duration::from_secs(10)).expect("the driver overslept");
    assert!(at >= ms(20));
}

#[test]
fn concurrent_first_use_of_an_overflow_level_creates_it_once_and_loses_nothing() {
    for _ in 0..50 {
        let clock = ManualClock::new();
        let timer = Arc::new(Timer::builder().wheel_size(4).clock(clock.clone()).manual().build());
        let counter = Counter::default();
        let barrier = Arc::new(Barrier::new(4));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let (timer, counter, barrier) = (Arc::clone(&timer), counter.clone(), Arc::clone(&barrier));
                thread::spawn(move || {
                    barrier.wait();
                    // 100..=250 ms with 4 slots of 1 ms: all on level 3 (64..256 ms).
                    for i in 0..25 {
                        let _ = timer.schedule(ms(100 + t * 25 + i * 2), counter.task());
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(timer.stats().levels_in_use, 1);
        assert_eq!(timer.len(), 100);
        clock.advance(ms(300));
        while timer.advance_clock(Duration::ZERO) {}
        assert_eq!(counter.get(), 100);
    }
}

#[test]
fn tasks_running_during_shutdown_cannot_schedule() {
    let clock = ManualClock::new();
    let timer = Arc::new(
        Timer::builder().tick(ms(1)).clock(clock.clone()).execution(TaskExecution::Threads(1)).build(),
    );
    let results = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (gate_tx, gate_rx) = mpsc::channel::<()>();
    let gate_rx = Arc::new(std::sync::Mutex::new(gate_rx));
    let (first_started, first_runs) = mpsc::channel();
    // The first task blocks the executor until shutdown has begun; the rest queue behind it and run
    // while shutdown joins the executor. Each tries to schedule a follow-up.
    for i in 0..5 {
        let (weak, results, gate_rx) = (Arc::downgrade(&timer), Arc::clone(&results), Arc::clone(&gate_rx));
        let first_started = first_started.clone();
        let _ = timer.schedule(ms(1), move || {
            if i == 0 {
                first_started.send(()).unwrap();
                let _ = gate_rx.lock().unwrap().recv_timeout(Duration::from_secs(30));
            }
            if let Some(timer) = weak.upgrade() {
                let r = timer.try_schedule(ms(1), || {});
                results.lock().unwrap().push(r.map(|_| ()));
            }
        });
    }
    // Not due before the shutdown: the shutdown hands it back once it has set its flag.
    let probe = timer.schedule(Duration::from_secs(60), || {});
    // The five share a bucket on the manual clock: once the first runs, the driver has taken
    // them all out of the wheel for the executor.
    clock.advance(ms(1));
    first_runs.recv_timeout(Duration::from_secs(10)).expect("the first task ran");
    let shutting = {
        let timer = Arc::clone(&timer);
        thread::spawn(move || timer.shutdown())
    };
    // Handed back: shutdown has set its flag, joined the driver and is joining the executor.
    assert!(eventually(Duration::from_secs(20), || !probe.is_pending()), "shutdown never drained");
    gate_tx.send(()).unwrap();
    let unfired = shutting.join().unwrap();
    assert_eq!(unfired.len(), 1, "only the task not due was handed back");
    let results = results.lock().unwrap();
    assert_eq!(results.len(), 5, "the due tasks ran before shutdown returned");
    assert!(results.iter().all(|r| *r == Err(ScheduleError::ShutDown)), "{results:?}");
    assert!(timer.is_empty());
}

/// The calling thread's timer slack, from procfs (`None` before Linux 4.6 or without procfs). A
/// thread may read its own entry without privileges (another thread's needs `CAP_SYS_NICE`).
#[cfg(target_os = "linux")]
fn own_timer_slack() -> Option<u64> {
    // `/proc/thread-self` links to `<pid>/task/<tid>`; the slack is under `/proc/<tid>`.
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    let tid = link.file_name()?.to_str()?.to_owned();
    std::fs::read_to_string(format!("/proc/{tid}/timerslack_ns")).ok()?.trim().parse().ok()
}

/// The timer slack a task sees when `timer`'s driver runs it.
#[cfg(target_os = "linux")]
fn slack_seen_by_a_task(timer: &Timer) -> Option<u64> {
    let (tx, rx) = mpsc::channel();
    timer.schedule(Duration::ZERO, move || tx.send(own_timer_slack()).unwrap());
    rx.recv_timeout(Duration::from_secs(10)).expect("the task ran")
}

#[cfg(target_os = "linux")]
#[test]
fn the_driver_lowers_its_timer_slack_to_a_thousandth_of_a_tick_and_never_raises_it() {
    // The driver inherits this thread's slack (50 µs unless the process set another), and the
    // tasks it runs see the driver's (`timer_slack.rs`).
    let Some(inherited) = own_timer_slack() else {
        return; // Linux before 4.6: the slack cannot be read
    };
    let fine = Timer::builder().tick(ms(1)).build();
    assert_eq!(slack_seen_by_a_task(&fine), Some(inherited.min(1_000)), "1 ms tick");
    // A thousandth of 1 s is 1 ms: above the inherited slack, which stays.
    let coarse = Timer::builder().tick(Duration::from_secs(1)).build();
    assert_eq!(slack_seen_by_a_task(&coarse), Some(inherited.min(1_000_000)), "1 s tick");
    let off = Timer::builder().tick(ms(1)).precise_wakeups(false).build();
    assert_eq!(slack_seen_by_a_task(&off), Some(inherited), "precise_wakeups(false)");
}
