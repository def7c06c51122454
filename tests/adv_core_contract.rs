//! The core timer's promises in combinations the other suites leave out: executor threads with
//! shutdowns, resets and cancels of queued tasks, shrinks and stale handles, the global timer
//! from many threads, and the real clock's instants and timed advances.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use common::{manual_with_executors, ms, watched};
use delaywheel::{ManualClock, TaskExecution, Timer, TimerHandle};

fn step(clock: &ManualClock, timer: &Timer, by: Duration) {
    clock.advance(by);
    timer.advance_clock(Duration::ZERO);
}

fn eventually(done: impl FnMut() -> bool) {
    assert!(settled(done), "not done within {QUIET:?}");
}

/// How long a loaded host may take to finish what the tests wait for (a bound, not a speed).
const QUIET: Duration = Duration::from_secs(60);

/// Waits until `done` holds or [`QUIET`] passes; returns whether it holds.
fn settled(mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + QUIET;
    while !done() {
        if Instant::now() >= until {
            return false;
        }
        thread::sleep(Duration::from_micros(200));
    }
    true
}

/// A task that signals its start (the receiver) and then blocks until the sender is dropped or
/// sends, or `limit` passes.
fn blocker(limit: Duration) -> (impl FnOnce() + Send + 'static, mpsc::Receiver<()>, mpsc::Sender<()>) {
    let (started, has_started) = mpsc::channel::<()>();
    let (release, wait) = mpsc::channel::<()>();
    let task = move || {
        started.send(()).unwrap();
        let _ = wait.recv_timeout(limit);
    };
    (task, has_started, release)
}

/// Executor tasks that cancel and reset siblings still waiting in the executor's queue, and their
/// own handles: each sibling either runs once or is cancelled once, never both, and a reset of a
/// task already handed over reports `false`.
#[test]
fn executor_tasks_cancelling_and_resetting_queued_siblings_are_exactly_once() {
    let (clock, timer) = manual_with_executors(1);
    let (task, has_started, release) = blocker(Duration::MAX);
    timer.schedule(ms(1), task);
    let runs: Arc<Vec<AtomicUsize>> = Arc::new((0..20).map(|_| AtomicUsize::new(0)).collect());
    let handles: Arc<Vec<OnceLock<TimerHandle>>> = Arc::new((0..20).map(|_| OnceLock::new()).collect());
    let verdicts = Arc::new(Mutex::new(Vec::new()));
    for i in 0..20 {
        let (runs, all, verdicts) = (Arc::clone(&runs), Arc::clone(&handles), Arc::clone(&verdicts));
        let h = timer.schedule(ms(2), move || {
            runs[i].fetch_add(1, Ordering::SeqCst);
            let own = all[i].get().unwrap();
            let mut v = verdicts.lock().unwrap();
            v.push(("own reset", i, own.reset(ms(5))));
            v.push(("own cancel", i, own.cancel()));
            if i % 2 == 0 && i + 1 < 20 {
                let next = all[i + 1].get().unwrap();
                v.push(if i % 4 == 0 {
                    ("cancel", i + 1, next.cancel())
                } else {
                    ("reset", i + 1, next.reset(ms(3)))
                });
            }
        });
        handles[i].set(h).ok().unwrap();
    }
    step(&clock, &timer, ms(2));
    has_started.recv().unwrap();
    release.send(()).unwrap();
    eventually(|| timer.is_empty() && verdicts.lock().unwrap().len() >= 40);
    step(&clock, &timer, ms(10));
    thread::sleep(ms(20));
    let v = verdicts.lock().unwrap().clone();
    let mut cancelled = 0;
    for (what, i, got) in &v {
        match *what {
            "own reset" | "own cancel" => assert!(!got, "{what} of {i} while it runs"),
            "cancel" => {
                assert_eq!(*got, runs[*i].load(Ordering::SeqCst) == 0, "cancel of {i}");
                cancelled += *got as u64;
            }
            _ => assert!(!got, "a reset of a task handed to the executor: {i}"),
        }
    }
    for (i, r) in runs.iter().enumerate() {
        assert!(r.load(Ordering::SeqCst) <= 1, "task {i} ran twice");
    }
    let ran: usize = runs.iter().map(|r| r.load(Ordering::SeqCst)).sum();
    let s = timer.stats();
    assert_eq!(s.scheduled, 21);
    assert_eq!(s.fired, ran as u64 + 1, "{s:?}");
    assert_eq!(s.cancelled, cancelled, "{s:?}");
    assert_eq!(s.fired + s.cancelled, s.scheduled, "{s:?}");
    assert_eq!((s.pending, timer.len()), (0, 0));
}

/// With executor threads, panicking tasks and cancels: once quiescent, `len()` is exact and
/// scheduled = fired + cancelled + pending; the panics are counted and nothing is lost.
#[test]
fn executor_threads_with_panics_keep_the_accounting_exact() {
    let (clock, timer) = manual_with_executors(2);
    let ran = Arc::new(AtomicUsize::new(0));
    let mut handles = Vec::new();
    for i in 0..300u64 {
        let ran = Arc::clone(&ran);
        handles.push(timer.schedule(ms(1 + i % 37), move || {
            ran.fetch_add(1, Ordering::SeqCst);
            if i % 7 == 0 {
                panic!("task {i} panics");
            }
        }));
    }
    let cancelled = handles.iter().step_by(5).filter(|h| h.cancel()).count();
    assert_eq!(cancelled, 60);
    assert_eq!(timer.len(), 240);
    for _ in 0..40 {
        step(&clock, &timer, ms(1));
    }
    eventually(|| ran.load(Ordering::SeqCst) == 240);
    let panics = (0..300u64).filter(|i| i % 7 == 0 && i % 5 != 0).count() as u64;
    // A panic is counted once caught, after the task's own count.
    eventually(|| timer.stats().panicked == panics);
    let s = timer.stats();
    assert_eq!((s.pending, timer.len()), (0, 0));
    assert_eq!((s.scheduled, s.fired, s.cancelled, s.panicked), (300, 240, 60, panics), "{s:?}");
    assert_eq!(s.lateness.count, 240);
    assert!(handles.iter().all(|h| !h.cancel() && !h.reset(ms(1)) && h.deadline().is_none()));
}

/// A timed shutdown beside executor threads busy with long tasks: it returns without them,
/// hands back the queued tasks in firing order, and the counts add up; the tasks handed back run.
#[test]
fn a_timed_shutdown_beside_busy_executors_hands_back_the_queue_in_order() {
    let (clock, timer) = manual_with_executors(2);
    let (started, has_started) = mpsc::channel::<()>();
    let (release, wait) = mpsc::channel::<()>();
    let wait = Arc::new(Mutex::new(wait));
    for _ in 0..2 {
        let (started, wait) = (started.clone(), Arc::clone(&wait));
        timer.schedule(ms(1), move || {
            started.send(()).unwrap();
            let _ = wait.lock().unwrap().recv();
        });
    }
    let order = Arc::new(Mutex::new(Vec::new()));
    for i in 0..30u64 {
        let order = Arc::clone(&order);
        timer.schedule(ms(2 + (30 - i) % 4), move || order.lock().unwrap().push(i));
    }
    step(&clock, &timer, ms(3));
    has_started.recv().unwrap();
    // One task holds the lock while it waits; the other waits for the lock: both executors busy
    // (each signals before it takes the lock).
    has_started.recv().unwrap();
    let unfired = watched("timed shutdown", move || {
        let unfired = timer.shutdown_timeout(ms(20));
        (timer, unfired)
    });
    let (timer, unfired) = unfired;
    let s = timer.stats();
    assert_eq!(s.fired + s.cancelled + unfired.len() as u64, s.scheduled, "{s:?}");
    assert_eq!(s.fired, 2, "only the two blocked tasks started: {s:?}");
    let deadlines: Vec<_> = unfired.iter().map(|u| u.deadline()).collect();
    assert!(deadlines.windows(2).all(|w| w[0] <= w[1]), "{deadlines:?}");
    unfired.into_iter().for_each(|u| u.run());
    let got = order.lock().unwrap().clone();
    let mut want: Vec<u64> = (0..30).collect();
    want.sort_by_key(|i| (2 + (30 - i) % 4, *i));
    assert_eq!(got, want, "handed back in deadline, then scheduling order");
    drop(release);
}

/// Shrinks racing executor threads that run a burst: every task runs once; afterwards the
/// handles are stale and say so, also once their slots are reused by later tasks.
#[test]
fn shrinks_racing_executor_threads_lose_nothing_and_leave_stale_handles_inert() {
    let (clock, timer) = manual_with_executors(2);
    let timer = Arc::new(timer);
    let ran = Arc::new(AtomicUsize::new(0));
    let mut old = Vec::new();
    for round in 0..4 {
        let handles: Vec<_> = (0..40_000)
            .map(|i| {
                let ran = Arc::clone(&ran);
                timer.schedule(ms(1 + i % 3), move || {
                    ran.fetch_add(1, Ordering::Relaxed);
                })
            })
            .collect();
        let shrinker = {
            let timer = Arc::clone(&timer);
            thread::spawn(move || {
                for _ in 0..20 {
                    timer.shrink();
                }
            })
        };
        for _ in 0..4 {
            step(&clock, &timer, ms(1));
        }
        shrinker.join().unwrap();
        eventually(|| ran.load(Ordering::Relaxed) == 40_000 * (round + 1));
        eventually(|| timer.is_empty());
        timer.shrink();
        old.extend(handles.into_iter().step_by(97));
    }
    let fresh: Vec<_> = (0..5_000).map(|_| timer.schedule(ms(50), || {})).collect();
    for h in &old {
        assert!(!h.is_pending() && !h.cancel() && !h.reset(ms(1)) && !h.reset_at(timer.now()));
        assert_eq!(h.deadline(), None);
        assert!(!h.is_cancelled());
    }
    assert_eq!(timer.len(), 5_000);
    assert!(fresh.iter().all(|h| h.is_pending() && h.deadline().is_some()));
    let s = timer.stats();
    assert_eq!((s.scheduled, s.fired, s.cancelled, s.pending), (165_000, 160_000, 0, 5_000), "{s:?}");
}

/// A capacity, a spike beyond it, a shrink: the timer keeps working, the counts are exact, and a
/// second spike within the capacity needs nothing new.
#[test]
fn capacity_then_spike_then_shrink_keeps_every_promise() {
    let clock = ManualClock::new();
    let timer = Timer::builder().clock(clock.clone()).manual().capacity(10_000).build();
    let hs: Vec<_> = (0..30_000).map(|i| timer.schedule(ms(1 + i % 50), || {})).collect();
    assert!(hs.iter().all(|h| h.cancel()));
    timer.shrink();
    assert!(timer.is_empty());
    let ran = Arc::new(AtomicUsize::new(0));
    for i in 0..10_000u64 {
        let ran = Arc::clone(&ran);
        timer.schedule(ms(1 + i % 50), move || {
            ran.fetch_add(1, Ordering::Relaxed);
        });
    }
    step(&clock, &timer, ms(49));
    assert_eq!(ran.load(Ordering::Relaxed), 9_800);
    step(&clock, &timer, ms(1));
    assert_eq!(ran.load(Ordering::Relaxed), 10_000);
    assert!(hs.iter().all(|h| !h.cancel() && h.deadline().is_none()));
    let s = timer.stats();
    assert_eq!((s.scheduled, s.fired, s.cancelled, s.pending), (40_000, 10_000, 30_000, 0));
}

/// The global timer from many threads at once: one timer, every task once, none early.
#[test]
fn the_global_timer_from_many_threads_fires_each_task_once_never_early() {
    let early = Arc::new(AtomicUsize::new(0));
    let ran = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let (early, ran) = (Arc::clone(&early), Arc::clone(&ran));
            thread::spawn(move || {
                let timer = delaywheel::global();
                for i in 0..100u64 {
                    let (early, ran) = (Arc::clone(&early), Arc::clone(&ran));
                    let at = timer.now() + Duration::from_micros((t * 100 + i) * 37 % 20_000);
                    let h = timer.schedule_at(at, move || {
                        if Instant::now() < at {
                            early.fetch_add(1, Ordering::SeqCst);
                        }
                        ran.fetch_add(1, Ordering::SeqCst);
                    });
                    // Due within 20 ms on the real clock: by this read it may have fired
                    // (its deadline then reads `None`), never before its instant.
                    match h.deadline() {
                        Some(deadline) => assert_eq!(deadline, at),
                        None => assert!(Instant::now() >= at, "no deadline before {at:?}"),
                    }
                }
                timer as *const Timer as usize
            })
        })
        .collect();
    let ids: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(ids.iter().all(|&id| id == ids[0]));
    eventually(|| ran.load(Ordering::SeqCst) >= 800);
    thread::sleep(ms(30));
    assert_eq!(ran.load(Ordering::SeqCst), 800);
    assert_eq!(early.load(Ordering::SeqCst), 0);
}

/// `now()` on the system clock is `Instant::now()`; an instant before the timer's origin is a
/// deadline passed; `advance_clock(timeout)` on a manual timer with the system clock waits for
/// the first bucket, fires it never early, and waits out its timeout when nothing is due.
#[test]
fn the_system_clock_reads_instants_and_a_timed_advance_waits_for_its_bucket() {
    let timer = Timer::builder().tick(ms(1)).manual().build();
    for _ in 0..1000 {
        let before = Instant::now();
        let now = timer.now();
        let after = Instant::now();
        assert!(before <= now && now <= after, "{before:?} {now:?} {after:?}");
    }
    let ran = Arc::new(Mutex::new(Vec::new()));
    let log = |id: u32| {
        let ran = Arc::clone(&ran);
        move || ran.lock().unwrap().push((id, Instant::now()))
    };
    if let Some(long_ago) = timer.now().checked_sub(Duration::from_secs(1)) {
        let h = timer.schedule_at(long_ago, log(0));
        assert_eq!(h.deadline(), Some(long_ago));
    }
    let at = timer.now() + ms(30);
    timer.schedule_at(at, log(1));
    let start = Instant::now();
    // The passed deadline first, then the one 30 ms out, each long before the advance's timeout.
    let mut advances = 0;
    while ran.lock().unwrap().iter().all(|&(id, _)| id != 1) {
        assert!(timer.advance_clock(QUIET) || start.elapsed() < QUIET);
        advances += 1;
        assert!(advances < 10);
    }
    let runs = ran.lock().unwrap().clone();
    let fired_at = runs.iter().find(|&&(id, _)| id == 1).unwrap().1;
    assert!(fired_at >= at, "early by {:?}", at - fired_at);
    assert!(start.elapsed() < QUIET, "the wait ended when the bucket was due");
    let idle = Instant::now();
    assert!(!timer.advance_clock(ms(40)));
    assert!(idle.elapsed() >= ms(40), "an idle timed advance waits out its timeout");
}

/// A timed shutdown from outside racing executor threads, panicking tasks, cancels and resets on
/// the real clock: each task has exactly one outcome (ran, a `cancel` returned `true`, or handed
/// back), and the stats say the same: scheduled = fired + cancelled + handed back, every panic
/// counted.
#[test]
fn a_timed_shutdown_racing_executors_and_panics_adds_up_in_the_stats() {
    for seed in 0..12u64 {
        let timer =
            Arc::new(Timer::builder().tick(ms(1)).wheel_size(8).execution(TaskExecution::Threads(2)).build());
        let n = 6_000;
        let runs: Arc<Vec<AtomicUsize>> = Arc::new((0..n).map(|_| AtomicUsize::new(0)).collect());
        let panics = Arc::new(AtomicUsize::new(0));
        let mut rng = common::SplitMix(seed);
        let mut handles = Vec::new();
        let mut cancelled = vec![false; n];
        let mut unfired = Vec::new();
        for id in 0..n {
            let (runs, panics) = (Arc::clone(&runs), Arc::clone(&panics));
            let boom = rng.range(0, 10) == 0;
            let h = timer.schedule(Duration::from_micros(rng.range(0, 3_000)), move || {
                runs[id].fetch_add(1, Ordering::SeqCst);
                if boom {
                    panics.fetch_add(1, Ordering::SeqCst);
                    panic!("task {id}");
                }
            });
            handles.push(h);
            let k = rng.range(0, handles.len() as u64) as usize;
            match rng.range(0, 4) {
                0 => cancelled[k] |= handles[k].cancel(),
                1 => {
                    handles[k].reset(Duration::from_micros(rng.range(0, 3_000)));
                }
                _ => {}
            }
            if id == n / 2 + seed as usize * 100 {
                unfired = timer.shutdown_timeout(Duration::ZERO);
                break;
            }
        }
        let n = handles.len();
        let n_unfired = unfired.len() as u64;
        // A task the driver or an executor had claimed as the shutdown returned leaves `len()`
        // once that thread counts it out, just after its claim (the `shutdown_timeout` rustdoc).
        settled(|| timer.stats().pending == 0);
        let s = timer.stats();
        assert_eq!(s.pending, 0, "seed {seed}: {s:?}");
        // The handed-back tasks' panics, caught here: the stats count none of them.
        let panics_here = unfired
            .into_iter()
            .map(|u| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| u.run())).is_err())
            .filter(|&panicked| panicked)
            .count() as u64;
        // Tasks an executor claimed before the shutdown may still be running: wait until every
        // claimed task ran and every panic of theirs is counted (the asserts below say what not).
        settled(|| {
            let s = timer.stats();
            let ran: usize = runs.iter().map(|r| r.load(Ordering::SeqCst)).sum();
            ran as u64 == s.fired + n_unfired
                && panics.load(Ordering::SeqCst) as u64 == s.panicked + panics_here
        });
        let s = timer.stats();
        assert_eq!(s.fired + s.cancelled + n_unfired, s.scheduled, "seed {seed}: {s:?}");
        assert_eq!(s.cancelled, cancelled.iter().filter(|&&c| c).count() as u64, "seed {seed}");
        let mut ran = 0;
        for id in 0..n {
            let r = runs[id].load(Ordering::SeqCst);
            assert_eq!(
                r + cancelled[id] as usize,
                1,
                "seed {seed}: task {id} ran {r}, cancelled {}",
                cancelled[id]
            );
            ran += r;
        }
        assert_eq!(ran as u64, s.fired + n_unfired, "seed {seed}");
        let handed_back_panics = panics.load(Ordering::SeqCst) as u64 - s.panicked;
        assert!(handed_back_panics <= n_unfired, "seed {seed}: {s:?}");
    }
}

/// Handed-back deadlines are exact: mid-tick deadlines, re-armed ones, ones queued on an
/// executor, and ones before the clock's origin (zero).
#[test]
fn handed_back_deadlines_are_the_handles_deadlines() {
    let (clock, timer) = manual_with_executors(1);
    let origin = timer.now();
    let (task, has_started, release) = blocker(Duration::MAX);
    timer.schedule(ms(1), task);
    let queued = timer.schedule(Duration::from_micros(1_500), || {});
    let mid = timer.schedule(Duration::from_micros(2_500), || {});
    let reset = timer.schedule(ms(40), || {});
    step(&clock, &timer, ms(2));
    has_started.recv().unwrap();
    let past = timer.schedule_at(origin.checked_sub(ms(5)).unwrap(), || {});
    assert!(reset.reset_at(origin + Duration::from_micros(7_300)));
    let want: Vec<_> = [&past, &queued, &mid, &reset].iter().map(|h| h.deadline().unwrap()).collect();
    assert_eq!(want[0], origin.checked_sub(ms(5)).unwrap());
    assert_eq!(want[1], origin + Duration::from_micros(1_500), "queued on the executor, still pending");
    let unfired = timer.shutdown_timeout(Duration::ZERO);
    let got: Vec<_> = unfired.iter().map(|u| u.deadline()).collect();
    let expect = vec![
        Duration::ZERO,
        Duration::from_micros(1_500),
        Duration::from_micros(2_500),
        Duration::from_micros(7_300),
    ];
    assert_eq!(got, expect);
    for h in [&past, &queued, &mid, &reset] {
        assert!(!h.is_pending() && !h.is_fired() && !h.is_cancelled() && h.deadline().is_none());
        assert!(!h.cancel() && !h.reset(ms(1)));
    }
    drop(release);
}

/// A timed shutdown waits for an advance in progress on another thread of a manual timer as it
/// waits for the driver's: the batch under way runs once its slow task returns, and only the
/// tasks due later come back. A wait that runs out hands the rest of the batch back.
#[test]
fn a_timed_shutdown_waits_for_a_manual_timers_advance_as_for_the_driver() {
    // The slow task returns after 30 ms where the shutdown is to wait for it (a limit no loaded
    // host reaches), and only once the shutdown returned where its wait is to run out.
    for (driver, limit, ran_expected, back_expected) in
        [(true, QUIET, 10, 1), (false, QUIET, 10, 1), (false, ms(1), 0, 11)]
    {
        let slow = if limit == QUIET { ms(30) } else { QUIET };
        let clock = ManualClock::new();
        let builder = Timer::builder().tick(ms(1)).wheel_size(8);
        let timer =
            Arc::new(if driver { builder.build() } else { builder.clock(clock.clone()).manual().build() });
        let (task, has_started, release) = blocker(slow);
        // One instant for the slow task and the ten behind it, so that they are one batch also on
        // the system clock, however long the schedules take on a loaded host (a relative delay
        // each put the ten in the next tick when a tick boundary fell between the schedules).
        let at = timer.now() + if driver { ms(50) } else { ms(1) };
        timer.schedule_at(at, task);
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..10 {
            let ran = Arc::clone(&ran);
            timer.schedule_at(at, move || {
                ran.fetch_add(1, Ordering::SeqCst);
            });
        }
        timer.schedule(ms(500), || {});
        let advance = (!driver).then(|| {
            clock.advance(ms(2));
            let timer = Arc::clone(&timer);
            thread::spawn(move || timer.advance_clock(Duration::ZERO))
        });
        has_started.recv().unwrap();
        let unfired = timer.shutdown_timeout(limit);
        let what = format!("driver {driver}, wait {limit:?}");
        assert_eq!((ran.load(Ordering::SeqCst), unfired.len()), (ran_expected, back_expected), "{what}");
        drop(release);
        if let Some(advance) = advance {
            assert!(advance.join().unwrap());
        }
        let s = timer.stats();
        assert_eq!(ran.load(Ordering::SeqCst), ran_expected, "{what}: no handed-back task ran");
        assert_eq!(s.fired + s.cancelled + unfired.len() as u64, s.scheduled, "{what}: {s:?}");
    }
}
