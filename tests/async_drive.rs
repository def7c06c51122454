//! `Timer::drive`: a timer without a driver thread, advanced by a future on tokio's workers with
//! tokio's own `sleep_until` (both runtime flavours), and polled by hand on a manual clock. Sleeps
//! and callbacks fire never early and in order; a schedule that makes an earlier bucket the head
//! wakes a drive future sleeping on a far one; a shutdown completes it; dropping it and driving
//! again loses nothing. Every runtime scenario runs under a watchdog; nothing asserts a speed.
#![cfg(feature = "async")]

mod common;

use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use common::hand_sleep::HandSleep;
use common::waker::{poll, CountingWaker};
use common::{manual_timer, ms, watched, SplitMix};
use delaywheel::{Drive, Timer};

type TokioSleep = fn(Instant) -> tokio::time::Sleep;

/// tokio's sleep to an instant, as the drive future takes it.
fn tokio_sleep(at: Instant) -> tokio::time::Sleep {
    tokio::time::sleep_until(at.into())
}

/// A timer with no driver thread on the system clock, and its drive future on tokio's sleep.
fn driven() -> (Arc<Timer>, Drive<TokioSleep, tokio::time::Sleep>) {
    let timer = Arc::new(Timer::builder().tick(ms(1)).manual().build());
    let drive = timer.drive(tokio_sleep as TokioSleep);
    (timer, drive)
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap()
}

fn multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_time().build().unwrap()
}

/// 40 sleeps (deadlines 1 ms apart, created in shuffled order) and as many callbacks,
/// on a timer driven from `rt`: each completes once, never before its deadline; the callbacks run
/// on the runtime's threads in deadline order, and so do the sleeps on a current-thread runtime.
fn sleeps_and_callbacks(rt: tokio::runtime::Runtime, ordered_sleeps: bool) {
    let (timer, drive) = driven();
    let mut rng = SplitMix(7);
    // Distinct whole milliseconds: due at distinct ticks.
    let mut delays: Vec<u64> = (1..=40).collect();
    for i in (1..delays.len()).rev() {
        delays.swap(i, rng.range(0, i as u64 + 1) as usize);
    }
    let fired = Arc::new(Mutex::new(Vec::new()));
    let woke = Arc::new(Mutex::new(Vec::new()));
    let runtime_thread = rt.block_on(async { std::thread::current().id() });
    let (fired_in, woke_in, delays_in) = (Arc::clone(&fired), Arc::clone(&woke), delays.clone());
    rt.block_on(async move {
        let (fired, woke, delays) = (fired_in, woke_in, delays_in);
        let driver = tokio::spawn(drive);
        let base = timer.now();
        let mut sleeps = Vec::new();
        for &d in &delays {
            let due = base + ms(d);
            let fired = Arc::clone(&fired);
            timer.schedule_at(due, move || {
                fired.lock().unwrap().push((due, Instant::now(), std::thread::current()))
            });
            let (sleep, woke) = (timer.sleep_until(due), Arc::clone(&woke));
            sleeps.push(tokio::spawn(async move {
                sleep.await;
                woke.lock().unwrap().push((due, Instant::now()));
            }));
        }
        for sleep in sleeps {
            sleep.await.unwrap();
        }
        // The sleep's waker wakes the last sleep and leaves the callback due with it to the drive
        // future's poll, which may come after the sleep's task has run.
        until_ran(&fired, delays.len()).await;
        assert!(timer.is_empty(), "every task fired");
        timer.shutdown();
        driver.await.unwrap();
    });
    let fired = fired.lock().unwrap();
    assert_eq!(fired.len(), delays.len());
    for (i, (due, at, thread)) in fired.iter().enumerate() {
        assert!(at >= due, "callback {i} ran {:?} early", *due - *at);
        assert!(i == 0 || fired[i - 1].0 < *due, "callback {i} ran out of deadline order");
        if ordered_sleeps {
            assert_eq!(thread.id(), runtime_thread, "the callback ran off the runtime's thread");
        } else {
            assert!(
                thread.name().is_some_and(|name| name.starts_with("tokio-rt-worker")),
                "{:?}",
                thread.name()
            );
        }
    }
    let woke = woke.lock().unwrap();
    assert_eq!(woke.len(), delays.len());
    for (i, (due, at)) in woke.iter().enumerate() {
        assert!(at >= due, "sleep {i} completed {:?} early", *due - *at);
        assert!(!ordered_sleeps || i == 0 || woke[i - 1].0 < *due, "sleep {i} completed out of order");
    }
}

#[test]
fn on_a_current_thread_runtime_sleeps_and_callbacks_fire_never_early_and_in_order() {
    watched("current thread", || sleeps_and_callbacks(current_thread(), true));
}

#[test]
fn on_a_multi_thread_runtime_sleeps_and_callbacks_fire_never_early_and_in_order() {
    watched("multi thread", || sleeps_and_callbacks(multi_thread(), false));
}

/// The lost wake-up: the drive future sleeps on a bucket an hour away; a task scheduled from
/// another thread 10 ms out makes an earlier bucket the head. Only the wake of the drive future's
/// registration (`delay_queue/watchers.rs`) gets it to fire before the watchdog ends the test.
#[test]
fn an_earlier_schedule_wakes_a_drive_sleeping_on_a_far_deadline() {
    for rt in [current_thread(), multi_thread()] {
        watched("earlier schedule", move || {
            let (timer, drive) = driven();
            let far = timer.schedule(Duration::from_secs(3_600), || {});
            rt.block_on(async move {
                let driver = tokio::spawn(drive);
                // Let the drive future settle into its sleep on the far bucket.
                tokio::time::sleep(ms(20)).await;
                let (tx, rx) = tokio::sync::oneshot::channel();
                let scheduler = Arc::clone(&timer);
                let due = std::thread::spawn(move || {
                    let due = scheduler.now() + ms(10);
                    scheduler.schedule_at(due, move || tx.send(Instant::now()).unwrap());
                    due
                })
                .join()
                .unwrap();
                let at = rx.await.expect("the task ran");
                assert!(at >= due, "ran early");
                assert!(far.cancel());
                drop(timer);
                driver.await.unwrap();
            });
        });
    }
}

/// The same hand-shake on a manual clock, polled by hand: the drive future registers its waker
/// with the queue's head at 100 ms; a schedule at 5 ms lowers the head and wakes it; one at 50 ms
/// does not (the head is earlier); the clock moving wakes it; it fires the task at 5 ms then.
#[test]
fn a_schedule_lowering_the_head_wakes_the_drive_future() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (counter, waker) = CountingWaker::new();
    let mut drive =
        pin!(timer.drive(|_: Instant| -> std::future::Pending<()> { unreachable!("manual clock") }));
    timer.schedule(ms(100), || {});
    assert!(poll(drive.as_mut(), &waker).is_pending());
    assert_eq!(counter.count(), 0);
    let early = common::Counter::default();
    timer.schedule(ms(5), early.task());
    assert_eq!(counter.count(), 1, "an earlier head wakes the drive future");
    assert!(poll(drive.as_mut(), &waker).is_pending());
    timer.schedule(ms(50), || {});
    assert_eq!(counter.count(), 1, "a later bucket does not");
    clock.advance(ms(4));
    assert_eq!(counter.count(), 2, "the clock moving wakes it");
    assert!(poll(drive.as_mut(), &waker).is_pending());
    assert_eq!(early.get(), 0, "never early");
    clock.advance(ms(1));
    assert!(poll(drive.as_mut(), &waker).is_pending());
    assert_eq!(early.get(), 1);
    assert_eq!(timer.len(), 2);
    drop(timer.shutdown());
    assert!(counter.count() >= 4, "the shutdown wakes it");
    assert_eq!(poll(drive.as_mut(), &waker), Poll::Ready(()));
}

/// `shutdown()` and the drop of the timer both complete a drive future, while it sleeps on a
/// pending task and while nothing is pending.
#[test]
fn a_shutdown_completes_the_drive_future() {
    for (pending, by_drop) in [(true, false), (false, false), (true, true), (false, true)] {
        watched("shutdown", move || {
            multi_thread().block_on(async move {
                let (timer, drive) = driven();
                if pending {
                    timer.schedule(Duration::from_secs(60), || {});
                }
                let driver = tokio::spawn(drive);
                tokio::time::sleep(ms(5)).await;
                if by_drop {
                    drop(Arc::into_inner(timer).expect("the only reference"));
                } else {
                    assert_eq!(timer.shutdown().len(), usize::from(pending));
                }
                driver.await.unwrap();
            });
        });
    }
}

/// Waits (under the test's watchdog) until `runs` holds `n` records, not until the timer is empty:
/// a task leaves `len()` when it is claimed, a moment before it runs and records itself.
async fn until_ran<T>(runs: &Mutex<Vec<T>>, n: usize) {
    while runs.lock().unwrap().len() < n {
        tokio::time::sleep(ms(1)).await;
    }
}

/// A drive future dropped (its task aborted) stops the timer: what comes due meanwhile waits;
/// a drive future spawned later fires all of it, each task once and never early.
#[test]
fn dropping_the_drive_future_then_driving_again_loses_nothing() {
    watched("respawn", || {
        multi_thread().block_on(async {
            let (timer, drive) = driven();
            let first = tokio::spawn(drive);
            first.abort();
            assert!(first.await.unwrap_err().is_cancelled());
            let fired = Arc::new(Mutex::new(Vec::new()));
            let base = timer.now();
            for d in 1..=20 {
                let (due, fired) = (base + ms(d), Arc::clone(&fired));
                timer.schedule_at(due, move || fired.lock().unwrap().push((due, Instant::now())));
            }
            tokio::time::sleep(ms(40)).await;
            assert!(fired.lock().unwrap().is_empty(), "nothing advances the timer");
            assert_eq!(timer.len(), 20);
            let second = tokio::spawn(timer.drive(tokio_sleep));
            until_ran(&fired, 20).await;
            assert!(timer.is_empty(), "every task fired");
            let fired = fired.lock().unwrap().clone();
            assert_eq!(fired.len(), 20, "each once");
            assert!(fired.iter().all(|(due, at)| at >= due), "never early");
            timer.shutdown();
            second.await.unwrap();
        });
    });
}

/// Two drive futures at once on two workers, and callbacks scheduled from both: each runs once,
/// never early; both futures complete at the shutdown.
#[test]
fn two_drive_futures_at_once_fire_each_task_once() {
    watched("two drives", || {
        multi_thread().block_on(async {
            let (timer, drive) = driven();
            let drives = [tokio::spawn(drive), tokio::spawn(timer.drive(tokio_sleep))];
            let runs = Arc::new(Mutex::new(Vec::new()));
            let mut rng = SplitMix(11);
            let base = timer.now();
            for id in 0..300 {
                let (due, runs) = (base + Duration::from_micros(rng.range(0, 30_000)), Arc::clone(&runs));
                timer.schedule_at(due, move || runs.lock().unwrap().push((id, due, Instant::now())));
            }
            until_ran(&runs, 300).await;
            assert!(timer.is_empty(), "every task fired");
            let mut runs = runs.lock().unwrap().clone();
            assert!(runs.iter().all(|(_, due, at)| at >= due), "never early");
            runs.sort_by_key(|run| run.0);
            runs.dedup_by_key(|run| run.0);
            assert_eq!(runs.len(), 300, "each once");
            assert_eq!(timer.stats().fired, 300);
            timer.shutdown();
            for drive in drives {
                drive.await.unwrap();
            }
        });
    });
}

/// The drive future of [`hand_driven`]: its runtime's sleep is fired by hand.
type HandDrive = Pin<Box<Drive<Box<dyn FnMut(Instant) -> HandSleep + Send>, HandSleep>>>;

/// A timer with no driver thread on the system clock, with tick `tick` and one task an hour out,
/// and its drive future on a sleep fired by hand ([`HandSleep`]), polled once with a counting
/// waker: it sleeps on that task.
struct HandDriven {
    timer: Arc<Timer>,
    sleep: HandSleep,
    drive: HandDrive,
    woken: Arc<CountingWaker>,
    waker: std::task::Waker,
}

fn hand_driven(tick: Duration) -> HandDriven {
    let timer = Arc::new(Timer::builder().tick(tick).manual().build());
    let sleep = HandSleep::default();
    let made = sleep.clone();
    let (woken, waker) = CountingWaker::new();
    let sleep_until: Box<dyn FnMut(Instant) -> HandSleep + Send> = Box::new(move |_| made.clone());
    let mut drive = Box::pin(timer.drive(sleep_until));
    timer.schedule(Duration::from_secs(3_600), || {});
    assert!(poll(drive.as_mut(), &waker).is_pending(), "sleeping on the far task");
    HandDriven { timer, sleep, drive, woken, waker }
}

/// The runtime's sleep, fired, advances the timer in its waker (where the runtime's timer fires
/// it) and wakes the drive future: that advance wakes the timer's own sleeps but runs no closure,
/// which waits for the drive future's poll (user code inside a runtime's timer may block it or
/// call into it). With the advance lock held elsewhere (a task of an advance on another thread,
/// blocked), the waker does not wait for it: it wakes the drive future, whose poll advances once
/// the lock is free.
#[test]
fn the_sleeps_waker_wakes_sleeps_and_leaves_closures_to_the_drive_future() {
    watched("tick waker", || {
        let HandDriven { timer, sleep, mut drive, woken: counter, waker } = hand_driven(ms(1));
        // Due at once, but the drive future is not polled: a closure and a sleep of the timer's.
        let in_waker = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let ran_in_waker = Arc::new(Mutex::new(Vec::new()));
        let (flag, ran) = (Arc::clone(&in_waker), Arc::clone(&ran_in_waker));
        timer.schedule(Duration::ZERO, move || ran.lock().unwrap().push(flag.load(Ordering::SeqCst)));
        let (sleep_woken, sleep_waker) = CountingWaker::new();
        let mut due_sleep = Box::pin(timer.sleep(Duration::ZERO));
        assert!(poll(due_sleep.as_mut(), &sleep_waker).is_pending(), "not fired yet");
        let woken = counter.count();
        in_waker.store(true, Ordering::SeqCst);
        sleep.fire();
        in_waker.store(false, Ordering::SeqCst);
        assert_eq!(sleep_woken.count(), 1, "the sleep due was woken in the runtime sleep's waker");
        assert!(ran_in_waker.lock().unwrap().is_empty(), "the closure did not run in the waker");
        assert_eq!(counter.count(), woken + 1, "and the drive future was woken");
        assert_eq!(timer.len(), 2, "the closure is still pending, beside the far task");
        sleep.rearm();
        assert!(poll(drive.as_mut(), &waker).is_pending());
        assert_eq!(*ran_in_waker.lock().unwrap(), [false], "the drive future's poll ran the closure, once");
        assert_eq!(poll(due_sleep.as_mut(), &sleep_waker), Poll::Ready(()));

        // The drive future sleeping on the far task with a fresh sleep; then the advance lock held
        // by a task of an advance on another thread.
        let (entered, blocked) = (std::sync::mpsc::channel(), std::sync::mpsc::channel::<()>());
        let (entered_tx, release) = (Mutex::new(entered.0), Mutex::new(blocked.1));
        timer.schedule(Duration::ZERO, move || {
            entered_tx.lock().unwrap().send(()).unwrap();
            release.lock().unwrap().recv().unwrap();
        });
        let later = common::Counter::default();
        let advancer = {
            let timer = Arc::clone(&timer);
            std::thread::spawn(move || timer.advance_clock(Duration::ZERO))
        };
        entered.1.recv().unwrap();
        timer.schedule(Duration::ZERO, later.task());
        let woken = counter.count();
        sleep.fire();
        assert_eq!(later.get(), 0, "the advance lock is held: the waker left the task");
        assert_eq!(counter.count(), woken + 1, "and woke the drive future");
        blocked.0.send(()).unwrap();
        assert!(advancer.join().unwrap());
        while later.get() == 0 {
            assert!(poll(drive.as_mut(), &waker).is_pending());
        }
        assert_eq!(later.get(), 1);
        drop(timer.shutdown());
        assert_eq!(poll(drive.as_mut(), &waker), Poll::Ready(()));
    });
}

/// A callback that blocks in `tokio::task::block_in_place`, and one that blocks its thread outright,
/// on a timer driven on tokio's multi-thread runtime beside sleeps of its own: each runs once, on a
/// worker, in the drive future's poll (in the runtime's timer, `block_in_place` would abort the
/// process), and every sleep completes.
#[test]
fn callbacks_that_block_run_outside_the_runtimes_timer() {
    watched("blocking callbacks", || {
        let rt = multi_thread();
        let (timer, drive) = driven();
        let ran = Arc::new(AtomicUsize::new(0));
        rt.block_on(async {
            let driver = tokio::spawn(drive);
            let mut sleeps = Vec::new();
            for i in 1..=20u64 {
                let ran = Arc::clone(&ran);
                timer.schedule(ms(i), move || {
                    if i % 2 == 0 {
                        tokio::task::block_in_place(|| std::thread::sleep(ms(2)));
                    } else {
                        std::thread::sleep(ms(1));
                    }
                    ran.fetch_add(1, Ordering::SeqCst);
                });
                sleeps.push(tokio::spawn(timer.sleep(ms(i))));
            }
            for sleep in sleeps {
                sleep.await.unwrap();
            }
            while ran.load(Ordering::SeqCst) < 20 {
                tokio::time::sleep(ms(1)).await;
            }
            timer.shutdown();
            driver.await.unwrap();
        });
        assert_eq!(ran.load(Ordering::SeqCst), 20, "each callback ran once");
    });
}

/// A closure that the sleep's waker set aside is pending and not due: a reset moves it (to a later
/// deadline, past the drive future's next poll; then back to now, and that poll runs it), as it
/// would move one still in its bucket.
#[test]
fn a_closure_set_aside_by_the_sleeps_waker_can_be_reset() {
    watched("reset after set-aside", || {
        let HandDriven { timer, sleep, mut drive, woken: _, waker } = hand_driven(ms(1));
        let ran = common::Counter::default();
        let handle = timer.schedule(Duration::ZERO, ran.task());
        sleep.fire();
        assert_eq!(ran.get(), 0, "set aside by the waker");
        assert!(handle.reset(Duration::from_secs(60)), "pending, not firing: the reset moves it");
        sleep.rearm();
        assert!(poll(drive.as_mut(), &waker).is_pending());
        assert_eq!(ran.get(), 0, "due in a minute");
        assert!(handle.reset(Duration::ZERO));
        assert!(poll(drive.as_mut(), &waker).is_pending());
        assert_eq!(ran.get(), 1, "due at once, run by the poll");
        assert!(!handle.reset(Duration::ZERO), "fired");
        assert_eq!(timer.len(), 1);
        drop(timer.shutdown());
        assert_eq!(poll(drive.as_mut(), &waker), Poll::Ready(()));
    });
}

/// A sleep whose deadline passed mid-tick, woken by the runtime sleep's waker, takes the closures
/// of the tick under way due by then into its batch: that advance runs none of them, nor does a
/// second one of the waker before the drive future is polled; the drive future's poll runs them
/// at once, in deadline then scheduling order, not at the tick's end, and leaves the one due after
/// the sleep's deadline to its tick. With a one-second tick: closures 10–30 ms out (two equal,
/// scheduled in reverse), one 900 ms out, and a zero-delay sleep made once 35 ms have passed.
#[test]
fn closures_taken_beside_a_passed_deadline_run_in_the_next_poll_in_order() {
    watched("passed mid-tick", || {
        let HandDriven { timer, sleep, mut drive, woken, waker } = hand_driven(Duration::from_secs(1));
        let ran = Arc::new(Mutex::new(Vec::new()));
        let base = timer.now();
        for (name, at) in [("d", 30), ("c", 20), ("b", 20), ("a", 10), ("late", 900)] {
            let ran = Arc::clone(&ran);
            timer.schedule_at(base + ms(at), move || ran.lock().unwrap().push(name));
        }
        while timer.now() < base + ms(35) {
            std::thread::sleep(ms(1));
        }
        let (sleep_woken, sleep_waker) = CountingWaker::new();
        let mut passed = Box::pin(timer.sleep(Duration::ZERO));
        assert!(poll(passed.as_mut(), &sleep_waker).is_pending());
        let before = woken.count();
        sleep.fire();
        assert_eq!(sleep_woken.count(), 1, "the sleep was woken in the waker");
        sleep.fire();
        assert!(ran.lock().unwrap().is_empty(), "no closure ran in the waker");
        assert_eq!(woken.count(), before + 2, "each firing woke the drive future");
        sleep.rearm();
        assert!(poll(drive.as_mut(), &waker).is_pending());
        if timer.now() < base + ms(900) {
            assert_eq!(
                *ran.lock().unwrap(),
                ["a", "c", "b", "d"],
                "at once, in deadline then scheduling order"
            );
            assert_eq!(timer.len(), 2, "the far task and the closure due after the sleep");
        }
        drop(timer.shutdown());
        assert_eq!(poll(drive.as_mut(), &waker), Poll::Ready(()));
    });
}
