//! Shutdowns and drops in the way of user tasks: from inside a task, between timers shutting each
//! other down, beside a task that never returns, and racing resets (in an advance that cannot be
//! waited for, too). Whatever the path, fired + cancelled + returned = scheduled, each task is
//! handed back once, and no shutdown or drop called from a timer's own thread waits for a driver.
//! Real-clock waits only where the behaviour is about threads, with bounds of seconds that a
//! deadlock fails instead of hanging.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::time::Duration;

use common::{manual_timer, ms, Counter};
use delaywheel::{ManualClock, TaskExecution, Timer, TimerStats, UnfiredTask};

/// How long a test waits for a thread before calling it a deadlock.
const DEADLOCK: Duration = Duration::from_secs(20);

/// How the timer of [`shutdown_inside_a_task`] runs its tasks.
#[derive(Clone, Copy, Debug)]
enum Runner {
    /// A manual timer: the test thread's `advance_clock` runs them.
    Advance,
    /// The timer's driver thread.
    Driver,
    /// One executor thread, fed by the test thread's `advance_clock`.
    Executor,
}

/// Ten tasks due at 1 ms (the fourth shuts the timer down) and one at 50 ms, run by `runner`:
/// returns their run counter, what the shutdown returned, and the timer's stats once it settled.
fn shutdown_inside_a_task(runner: Runner) -> (Counter, Vec<UnfiredTask>, TimerStats) {
    let clock = ManualClock::new();
    let builder = Timer::builder().tick(ms(1)).wheel_size(8).clock(clock.clone());
    let timer = Arc::new(match runner {
        Runner::Advance => builder.manual().build(),
        Runner::Driver => builder.build(),
        Runner::Executor => builder.manual().execution(TaskExecution::Threads(1)).build(),
    });
    let counter = Counter::default();
    let (tx, rx) = mpsc::channel();
    for i in 0..10 {
        if i == 3 {
            let (weak, tx, counter) = (Arc::downgrade(&timer), tx.clone(), counter.clone());
            timer.schedule(ms(1), move || {
                counter.task()();
                tx.send(weak.upgrade().unwrap().shutdown()).unwrap();
            });
        } else {
            timer.schedule(ms(1), counter.task());
        }
    }
    timer.schedule(ms(50), counter.task());
    clock.advance(ms(1));
    if !matches!(runner, Runner::Driver) {
        timer.advance_clock(Duration::ZERO);
    }
    let returned = rx.recv_timeout(DEADLOCK).expect("the task shut the timer down");
    // Settle: a second shutdown waits for the advance still running the batch, if any.
    assert!(timer.shutdown().is_empty(), "the first call returned everything");
    let stats = timer.stats();
    (counter, returned, stats)
}

#[test]
fn shutdown_from_inside_a_task_returns_the_rest_of_its_batch() {
    for runner in [Runner::Advance, Runner::Driver, Runner::Executor] {
        let (ran, returned, stats) = shutdown_inside_a_task(runner);
        // Equal deadlines run in scheduling order: tasks 0-3 ran, the fourth shut the timer down.
        assert_eq!(ran.get(), 4, "{runner:?}: nothing runs after the shutdown");
        assert_eq!(stats.fired, 4, "{runner:?}: {stats:?}");
        assert_eq!(returned.len(), 7, "{runner:?}: the batch's six others and the later task");
        assert_eq!(stats.fired + stats.cancelled + returned.len() as u64, stats.scheduled, "{runner:?}");
        assert_eq!(stats.pending, 0, "{runner:?}");
        let deadlines: Vec<Duration> = returned.iter().map(|task| task.deadline()).collect();
        assert_eq!(deadlines, [vec![ms(1); 6], vec![ms(50)]].concat(), "{runner:?}: in deadline order");
        for task in returned {
            task.run();
        }
        assert_eq!(ran.get(), 11, "{runner:?}: the returned closures are the unrun ones");
    }
}

/// Two timers made by `build`, each with a task that waits until both tasks run (each on its own
/// timer's threads), then shuts the other timer down: both tasks must return.
fn shut_each_other_down_from_their_tasks(build: fn() -> Timer) {
    let (a, b) = (Arc::new(build()), Arc::new(build()));
    let (tx, rx) = mpsc::channel();
    let both_running = Arc::new(Barrier::new(2));
    for (me, other) in [(&a, &b), (&b, &a)] {
        let (other, tx, barrier) = (Arc::downgrade(other), tx.clone(), Arc::clone(&both_running));
        me.schedule(ms(5), move || {
            barrier.wait();
            if let Some(other) = other.upgrade() {
                other.shutdown();
            }
            tx.send(()).unwrap();
        });
    }
    for _ in 0..2 {
        rx.recv_timeout(DEADLOCK).expect("both tasks returned");
    }
    drop((a, b));
}

#[test]
fn two_timers_shutting_each_other_down_from_their_tasks_do_not_deadlock() {
    shut_each_other_down_from_their_tasks(Timer::new);
}

#[test]
fn two_timers_shutting_each_other_down_from_their_executor_threads_do_not_deadlock() {
    shut_each_other_down_from_their_tasks(|| Timer::builder().execution(TaskExecution::Threads(1)).build());
}

#[test]
fn a_timer_dropped_from_inside_its_own_task_does_not_wait_for_itself() {
    for execution in [TaskExecution::OnDriver, TaskExecution::Threads(1)] {
        let timer = Arc::new(Timer::builder().execution(execution).build());
        let (give_tx, give_rx) = mpsc::channel::<Arc<Timer>>();
        let (done_tx, done_rx) = mpsc::channel();
        timer.schedule(ms(5), move || {
            let last = give_rx.recv().unwrap();
            assert_eq!(Arc::strong_count(&last), 1, "the task holds the last reference");
            drop(last); // drops the timer on its own driver or executor thread
            done_tx.send(()).unwrap();
        });
        give_tx.send(timer).unwrap();
        let returned = done_rx.recv_timeout(DEADLOCK);
        returned.unwrap_or_else(|_| panic!("{execution:?}: the drop inside the task returned"));
    }
}

#[test]
fn drop_does_not_wait_for_a_task_that_never_returns_and_shutdown_timeout_is_bounded() {
    let (started_tx, started_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let release_rx = Arc::new(Mutex::new(release_rx));
    let clock = ManualClock::new();
    for bounded in [false, true] {
        let timer = Timer::builder().tick(ms(1)).clock(clock.clone()).build();
        let (started, release) = (started_tx.clone(), Arc::clone(&release_rx));
        let (finished_tx, finished_rx) = mpsc::channel();
        timer.schedule(ms(1), move || {
            started.send(()).unwrap();
            let _ = release.lock().unwrap().recv(); // blocks until the test ends it
            finished_tx.send(()).unwrap();
        });
        let later = Counter::default();
        timer.schedule(ms(1), later.task());
        timer.schedule(ms(100), later.task());
        clock.advance(ms(1));
        started_rx.recv_timeout(DEADLOCK).expect("the driver runs the blocking task");
        let (done_tx, done_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let returned = if bounded { timer.shutdown_timeout(ms(50)).len() } else { 0 };
            drop(timer);
            done_tx.send(returned).unwrap();
        });
        let returned = done_rx.recv_timeout(DEADLOCK).expect("drop and shutdown_timeout return");
        if bounded {
            assert_eq!(returned, 2, "the batch's other task and the later one, unstarted");
        }
        // Released, the task returns to its driver, which must not go on with its batch.
        release_tx.send(()).unwrap();
        finished_rx.recv_timeout(DEADLOCK).expect("the released task returned");
        std::thread::sleep(ms(100));
        assert_eq!(later.get(), 0, "nothing starts after the drop, also once the driver is free");
    }
}

/// Two threads re-arm 200 pending tasks each, earlier (out of their buckets) and later by turns,
/// many levels apart, while `shut_down` runs after `pause`: every task comes back exactly once
/// (none is held out of the accounting by a reset in flight), with the deadline of its last `true`
/// reset or its schedule. `now` is the clock's reading, which does not move meanwhile. Returns
/// what came back.
fn resets_racing(
    timer: &Timer,
    now: Duration,
    pause: Duration,
    shut_down: impl FnOnce() -> Vec<UnfiredTask>,
) -> Vec<UnfiredTask> {
    let done = Arc::new(AtomicBool::new(false));
    let resetters: Vec<_> = (0..2)
        .map(|t| {
            let handles: Vec<_> = (0..200).map(|_| timer.schedule(ms(60_000), || {})).collect();
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let mut last = vec![ms(60_000); handles.len()];
                for pass in 0u64.. {
                    for (i, handle) in handles.iter().enumerate() {
                        // Earlier and later by turns, many levels apart.
                        let to = ms(1 + (pass * 7 + i as u64 + t) % 3 * 20_000);
                        if handle.reset(to) {
                            last[i] = to;
                        }
                    }
                    if done.load(Ordering::SeqCst) && pass > 1 {
                        return last;
                    }
                }
                unreachable!()
            })
        })
        .collect();
    std::thread::sleep(pause);
    let unfired = shut_down();
    done.store(true, Ordering::SeqCst);
    let last: Vec<Duration> = resetters.into_iter().flat_map(|r| r.join().unwrap()).collect();
    assert_eq!(unfired.len(), 400, "every task handed back once");
    let mut returned: Vec<Duration> = unfired.iter().map(|task| task.deadline()).collect();
    let mut expected: Vec<Duration> = last.into_iter().map(|delay| now + delay).collect();
    returned.sort();
    expected.sort();
    assert_eq!(returned, expected, "each with its last moved-to deadline");
    unfired
}

#[test]
fn resets_racing_shutdown_lose_no_task() {
    for round in 0..20 {
        let (_clock, timer) = manual_timer(ms(1), 4);
        let pause = Duration::from_micros(200 * (round % 5));
        resets_racing(&timer, Duration::ZERO, pause, || timer.shutdown());
        let stats = timer.stats();
        assert_eq!((stats.fired, stats.cancelled, stats.scheduled), (0, 0, 400), "round {round}: {stats:?}");
    }
}

/// How a shutdown that cannot wait for the driver's advance (blocked inside a task) is made.
#[derive(Clone, Copy, Debug)]
enum Detached {
    /// `shutdown_timeout(Duration::ZERO)` on the test thread, then the task is released.
    Timeout,
    /// The blocked task, released, calls `shutdown()` on its own timer.
    InsideTask,
}

/// The drain that scans the arena (the advance in progress cannot be waited for) racing resets
/// that take entries out of their buckets and re-add them: each task still comes back once.
#[test]
fn resets_racing_a_shutdown_beside_a_blocked_driver_lose_no_task() {
    for round in 0..20 {
        let how = if round % 2 == 0 { Detached::Timeout } else { Detached::InsideTask };
        let clock = ManualClock::new();
        let timer = Arc::new(Timer::builder().tick(ms(1)).wheel_size(4).clock(clock.clone()).build());
        let (started_tx, started_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let (shut_tx, shut_rx) = mpsc::channel();
        let weak = Arc::downgrade(&timer);
        timer.schedule(ms(1), move || {
            started_tx.send(()).unwrap();
            go_rx.recv().unwrap();
            if matches!(how, Detached::InsideTask) {
                shut_tx.send(weak.upgrade().unwrap().shutdown()).unwrap();
            }
        });
        clock.advance(ms(1));
        started_rx.recv_timeout(DEADLOCK).expect("the driver runs the blocking task");
        let pause = Duration::from_micros(200 * (round % 5));
        let unfired = resets_racing(&timer, ms(1), pause, || match how {
            Detached::Timeout => {
                let unfired = timer.shutdown_timeout(Duration::ZERO);
                go_tx.send(()).unwrap();
                unfired
            }
            Detached::InsideTask => {
                go_tx.send(()).unwrap();
                shut_rx.recv_timeout(DEADLOCK).expect("the task shut its timer down")
            }
        });
        // Settle: a second shutdown waits for the advance still running the blocked task's batch.
        assert!(timer.shutdown().is_empty(), "{how:?}: the first call returned everything");
        let stats = timer.stats();
        assert_eq!((stats.fired, stats.cancelled, stats.scheduled), (1, 0, 401), "{how:?}: {stats:?}");
        assert_eq!(stats.fired + stats.cancelled + unfired.len() as u64, stats.scheduled);
        assert_eq!(stats.pending, 0, "{how:?}");
    }
}

/// Two threads call `shutdown()` at once while an executor thread runs a task that waits to be
/// released, with another task queued behind it: neither call returns before both tasks ran,
/// whichever of them took the executor's threads to join: the other, finding none left to join,
/// still waits for their exits.
#[test]
fn concurrent_shutdowns_each_wait_for_the_executor_tasks_handed_over() {
    let clock = ManualClock::new();
    let timer =
        Arc::new(Timer::builder().clock(clock.clone()).manual().execution(TaskExecution::Threads(1)).build());
    let (started, release) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
    let running = Arc::new(AtomicBool::new(false));
    let ran = Counter::default();
    let (s, r, flag) = (Arc::clone(&started), Arc::clone(&release), Arc::clone(&running));
    timer.schedule(ms(1), move || {
        flag.store(true, Ordering::SeqCst);
        s.wait();
        r.wait();
        flag.store(false, Ordering::SeqCst);
    });
    timer.schedule(ms(1), ran.task());
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    started.wait();
    let (done, returned) = mpsc::channel();
    for _ in 0..2 {
        let (timer, running, ran, done) =
            (Arc::clone(&timer), Arc::clone(&running), ran.clone(), done.clone());
        std::thread::spawn(move || {
            let unfired = timer.shutdown();
            done.send((unfired.len(), running.load(Ordering::SeqCst), ran.get())).unwrap();
        });
    }
    // A shutdown that returns now returns while the first task still runs.
    let early = returned.recv_timeout(Duration::from_millis(500));
    assert_eq!(
        early,
        Err(mpsc::RecvTimeoutError::Timeout),
        "a shutdown returned before the executor's tasks ran"
    );
    release.wait();
    for _ in 0..2 {
        let (unfired, still_running, queued_ran) =
            returned.recv_timeout(DEADLOCK).expect("shutdown returned");
        assert_eq!((unfired, still_running, queued_ran), (0, false, 1));
    }
}
