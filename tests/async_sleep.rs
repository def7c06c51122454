//! The `async` feature's `Sleep` (`Timer::sleep`, `sleep_until`, their `try_` forms, `reset`),
//! polled by hand on a manual clock (exact instants), under tokio (both runtime flavours) and under
//! `futures::executor`. Refusal and shutdown: a dead sleep, never a panic.
#![cfg(feature = "async")]

mod common;

use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use common::waker::{poll, CountingWaker};
use common::{manual_timer, ms};
use delaywheel::{ScheduleError, Sleep, Timer};

fn advance(clock: &delaywheel::ManualClock, timer: &Timer, by: Duration) {
    clock.advance(by);
    timer.advance_clock(Duration::ZERO);
}

#[test]
fn sleep_completes_exactly_at_its_tick_and_wakes_once() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (counter, waker) = CountingWaker::new();
    let mut sleep = pin!(timer.sleep(ms(20)));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    assert_eq!(timer.len(), 1, "scheduled at creation");
    for _ in 0..19 {
        advance(&clock, &timer, ms(1));
        assert_eq!(counter.count(), 0, "woken early at {:?}", clock.now());
    }
    assert!(!sleep.is_elapsed());
    advance(&clock, &timer, ms(1));
    assert_eq!(counter.count(), 1);
    assert!(sleep.is_elapsed());
    assert_eq!(poll(sleep.as_mut(), &waker), Poll::Ready(()));
    assert_eq!(poll(sleep.as_mut(), &waker), Poll::Ready(()), "stays ready");
    assert!(timer.is_empty());
}

#[test]
fn the_latest_waker_is_the_one_woken() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (first, first_waker) = CountingWaker::new();
    let (second, second_waker) = CountingWaker::new();
    let mut sleep = pin!(timer.sleep(ms(3)));
    assert!(poll(sleep.as_mut(), &first_waker).is_pending());
    assert!(poll(sleep.as_mut(), &first_waker).is_pending());
    assert!(poll(sleep.as_mut(), &second_waker).is_pending());
    advance(&clock, &timer, ms(3));
    assert_eq!((first.count(), second.count()), (0, 1));
}

#[test]
fn a_sleep_never_polled_still_completes() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (_counter, waker) = CountingWaker::new();
    let mut sleep = pin!(timer.sleep(ms(3)));
    advance(&clock, &timer, ms(5));
    assert_eq!(poll(sleep.as_mut(), &waker), Poll::Ready(()));
}

#[test]
fn dropping_a_sleep_cancels_its_task_and_never_wakes() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (counter, waker) = CountingWaker::new();
    let mut sleep = Box::pin(timer.sleep(ms(5)));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    assert_eq!(timer.len(), 1);
    drop(sleep);
    assert_eq!(timer.len(), 0, "the entry left the wheel at once");
    assert_eq!(timer.stats().cancelled, 1);
    advance(&clock, &timer, ms(10));
    assert_eq!(counter.count(), 0);
    assert_eq!(timer.stats().fired, 0);
}

#[test]
fn sleep_until_reads_the_instant_on_the_timers_clock() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (counter, waker) = CountingWaker::new();
    std::thread::sleep(ms(20)); // wall time plays no part on a manual clock
    let at = timer.now() + ms(5);
    let mut sleep = pin!(timer.sleep_until(at));
    assert_eq!(sleep.deadline(), at);
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    advance(&clock, &timer, ms(4));
    assert_eq!(counter.count(), 0);
    advance(&clock, &timer, ms(1));
    assert_eq!(poll(sleep.as_mut(), &waker), Poll::Ready(()));
    // A past instant is a zero sleep: ready at the next advance.
    let mut past = pin!(timer.sleep_until(timer.now() - ms(1)));
    assert!(poll(past.as_mut(), &waker).is_pending());
    timer.advance_clock(Duration::ZERO);
    assert_eq!(poll(past.as_mut(), &waker), Poll::Ready(()));
}

#[test]
fn a_sleep_beyond_the_timers_range_never_completes() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (counter, waker) = CountingWaker::new();
    let mut sleep = pin!(timer.sleep(Duration::MAX));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    assert!(timer.is_empty());
    advance(&clock, &timer, Duration::from_secs(1 << 40));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    assert_eq!(counter.count(), 0);
}

const _: () = {
    const fn assert_traits<T: Unpin + Send + Sync + 'static>() {}
    assert_traits::<Sleep>();
};

#[test]
fn deadlines_are_instants_on_the_timers_clock_at_full_precision() {
    let (clock, timer) = manual_timer(ms(1), 8);
    clock.advance(Duration::from_micros(2_500));
    let now = timer.now();
    let sleep = timer.sleep(Duration::from_micros(1_700));
    assert_eq!(sleep.deadline(), now + Duration::from_micros(1_700));
    // Due at 4.2 ms: fires at the 5 ms tick boundary, never at 4 ms.
    advance(&clock, &timer, Duration::from_micros(1_500));
    assert!(!sleep.is_elapsed(), "early at {:?}", clock.now());
    advance(&clock, &timer, Duration::from_micros(1_000));
    assert!(sleep.is_elapsed());
}

#[test]
fn reset_moves_a_waiting_sleep_in_place_later_or_earlier() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (counter, waker) = CountingWaker::new();
    let mut sleep = pin!(timer.sleep(ms(10)));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    let later = timer.now() + ms(25);
    sleep.as_mut().reset(later);
    assert_eq!(sleep.deadline(), later);
    assert_eq!((timer.len(), timer.stats().scheduled), (1, 1), "the same task, moved");
    for _ in 0..24 {
        advance(&clock, &timer, ms(1));
    }
    assert_eq!(counter.count(), 0, "woken before the new deadline");
    advance(&clock, &timer, ms(1));
    assert_eq!(counter.count(), 1);
    assert_eq!(poll(sleep.as_mut(), &waker), Poll::Ready(()));

    let mut sleep = pin!(timer.sleep(ms(30)));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    sleep.as_mut().reset(timer.now() + ms(5));
    advance(&clock, &timer, ms(4));
    assert!(!sleep.is_elapsed());
    advance(&clock, &timer, ms(1));
    assert_eq!(counter.count(), 2, "the waker of the last poll is kept");
    assert!(sleep.is_elapsed());
    assert!(timer.is_empty());
    assert_eq!(timer.stats().fired, 2);
}

#[test]
fn reset_rearms_an_elapsed_sleep() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (counter, waker) = CountingWaker::new();
    let mut sleep = pin!(timer.sleep(ms(3)));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    advance(&clock, &timer, ms(3));
    assert_eq!(poll(sleep.as_mut(), &waker), Poll::Ready(()));
    sleep.as_mut().reset(timer.now() + ms(7));
    assert!(!sleep.is_elapsed());
    assert_eq!(timer.len(), 1);
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    for _ in 0..6 {
        advance(&clock, &timer, ms(1));
    }
    assert_eq!(counter.count(), 1, "only the first deadline so far");
    advance(&clock, &timer, ms(1));
    assert_eq!(counter.count(), 2);
    assert_eq!(poll(sleep.as_mut(), &waker), Poll::Ready(()));
    // Reset to a deadline already passed: completes by the next advance.
    sleep.as_mut().reset(timer.now() - ms(100));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    timer.advance_clock(Duration::ZERO);
    assert_eq!(poll(sleep.as_mut(), &waker), Poll::Ready(()));
}

#[test]
fn reset_without_a_poll_in_between_keeps_the_waker_for_the_new_task() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (counter, waker) = CountingWaker::new();
    let mut sleep = Box::pin(timer.sleep(ms(2)));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    advance(&clock, &timer, ms(2));
    assert_eq!(counter.count(), 1);
    sleep.as_mut().reset(timer.now() + ms(2)); // elapsed: a new task, same waker
    advance(&clock, &timer, ms(2));
    assert_eq!(counter.count(), 2);
    drop(sleep);
    assert!(timer.is_empty());
}

#[test]
fn dropping_a_reset_sleep_cancels_its_current_task() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let mut sleep = timer.sleep(ms(2));
    advance(&clock, &timer, ms(2));
    sleep.reset(timer.now() + ms(50));
    assert_eq!(timer.len(), 1);
    drop(sleep);
    assert_eq!(timer.len(), 0);
    advance(&clock, &timer, ms(100));
    assert_eq!(timer.stats().fired, 1);
}

#[test]
fn shutdown_before_the_deadline_wakes_the_sleep_once_and_it_stays_pending() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (counter, waker) = CountingWaker::new();
    let mut sleep = Box::pin(timer.sleep(ms(5)));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    let unfired = timer.shutdown();
    assert_eq!(unfired.len(), 1);
    assert_eq!(counter.count(), 0, "the unfired task still holds the sleep");
    drop(unfired); // dropping the unrun task abandons the sleep
    assert_eq!(counter.count(), 1, "woken so that its task notices");
    assert_eq!(sleep.error(), Some(ScheduleError::ShutDown));
    assert!(poll(sleep.as_mut(), &waker).is_pending(), "never a panic, never early");
    clock.advance(ms(10));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    assert!(!sleep.is_elapsed());
    // A reset cannot revive it: the timer refuses.
    let deadline = timer.now() + ms(1);
    assert_eq!(sleep.try_reset(deadline), Err(ScheduleError::ShutDown));
    assert_eq!(sleep.deadline(), deadline);
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    assert_eq!(counter.count(), 1);
}

#[test]
fn running_the_unfired_tasks_of_a_shutdown_completes_no_sleep_early() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (counter, waker) = CountingWaker::new();
    let mut sleep = Box::pin(timer.sleep(ms(5)));
    let mut timeout = Box::pin(timer.timeout(ms(5), std::future::pending::<()>()));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    assert!(poll(timeout.as_mut(), &waker).is_pending());
    let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let r = Arc::clone(&ran);
    timer.schedule(ms(5), move || r.store(true, std::sync::atomic::Ordering::SeqCst));
    // An unfired task that advances another timer: that timer's sleeps fire as usual.
    let (other_clock, other) = manual_timer(ms(1), 8);
    let other = Arc::new(other);
    let mut other_sleep = Box::pin(other.sleep(ms(1)));
    assert!(poll(other_sleep.as_mut(), &waker).is_pending());
    let o = Arc::clone(&other);
    timer.schedule(ms(5), move || {
        other_clock.advance(ms(1));
        o.advance_clock(Duration::ZERO);
    });
    let unfired = timer.shutdown();
    assert_eq!(unfired.len(), 4);
    unfired.into_iter().for_each(|task| task.run()); // "run what is left"
    assert!(ran.load(std::sync::atomic::Ordering::SeqCst), "the user's task runs");
    assert_eq!(sleep.error(), Some(ScheduleError::ShutDown), "as if the task were dropped");
    assert!(poll(sleep.as_mut(), &waker).is_pending(), "never early");
    assert!(poll(timeout.as_mut(), &waker).is_pending(), "the limit never elapses early");
    assert!(poll(other_sleep.as_mut(), &waker).is_ready());
    assert_eq!(counter.count(), 3, "each woken once");
    assert_eq!(clock.now(), Duration::ZERO);
}

/// An unfired task of a timer since dropped, run after a new timer was built (which may take the
/// dropped one's memory), advances the new timer: its due sleep completes, as with any other timer.
#[test]
fn an_unfired_task_of_a_dropped_timer_leaves_a_later_timers_sleeps_alone() {
    let (_, waker) = CountingWaker::new();
    for round in 0..20 {
        let later: Arc<std::sync::Mutex<Option<Timer>>> = Arc::default();
        let (_clock, first) = manual_timer(ms(1), 8);
        let l = Arc::clone(&later);
        first.schedule(ms(5), move || {
            l.lock().unwrap().as_ref().unwrap().advance_clock(Duration::ZERO);
        });
        let mut unfired = first.shutdown();
        drop(first);
        let (clock, timer) = manual_timer(ms(1), 8);
        let mut sleep = Box::pin(timer.sleep(ms(5)));
        assert!(poll(sleep.as_mut(), &waker).is_pending());
        clock.advance(ms(5));
        *later.lock().unwrap() = Some(timer);
        unfired.pop().unwrap().run();
        assert_eq!(sleep.error(), None, "round {round}: the later timer's sleep was killed");
        assert!(poll(sleep.as_mut(), &waker).is_ready(), "round {round}: its advance fired it");
    }
}

#[test]
fn dropping_the_timer_wakes_a_pending_sleep_which_stays_pending() {
    let (_clock, timer) = manual_timer(ms(1), 8);
    let (counter, waker) = CountingWaker::new();
    let mut sleep = Box::pin(timer.sleep(ms(5)));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    drop(timer);
    assert_eq!(counter.count(), 1);
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    assert_eq!(sleep.error(), Some(ScheduleError::ShutDown));
    sleep.as_mut().reset(Instant::now()); // the timer is gone: still no panic
    assert_eq!(sleep.error(), Some(ScheduleError::ShutDown));
}

#[test]
fn refusals_are_errors_from_try_sleep_and_dead_sleeps_from_sleep() {
    let clock = delaywheel::ManualClock::new();
    let timer = Timer::builder().clock(clock.clone()).manual().max_pending(1).build();
    let held = timer.try_sleep(ms(5)).expect("room for one");
    assert_eq!(timer.try_sleep(ms(5)).unwrap_err(), ScheduleError::TooManyPending { max: 1 });
    assert_eq!(timer.try_sleep_until(timer.now()).unwrap_err(), ScheduleError::TooManyPending { max: 1 });
    let mut refused = Box::pin(timer.sleep(ms(5)));
    assert_eq!(refused.error(), Some(ScheduleError::TooManyPending { max: 1 }));
    assert!(poll(refused.as_mut(), &CountingWaker::new().1).is_pending(), "never a panic");
    assert_eq!(timer.len(), 1);
    // Room again: a reset revives the dead sleep, at exactly its new deadline.
    drop(held);
    let at = timer.now() + ms(2);
    assert_eq!(refused.try_reset(at), Ok(()));
    assert_eq!(refused.error(), None);
    advance(&clock, &timer, ms(1));
    assert!(!refused.is_elapsed());
    advance(&clock, &timer, ms(1));
    assert!(refused.is_elapsed());

    match timer.try_sleep(Duration::MAX) {
        Err(ScheduleError::DelayTooLong { delay, .. }) => assert_eq!(delay, Duration::MAX),
        other => panic!("{other:?}"),
    }
    assert!(matches!(timer.sleep(Duration::MAX).error(), Some(ScheduleError::DelayTooLong { .. })));
    let far = timer.now() + Duration::from_secs(1 << 62);
    assert!(matches!(timer.try_sleep_until(far), Err(ScheduleError::DelayTooLong { .. })));

    let shut = Timer::builder().manual().build();
    shut.shutdown();
    assert_eq!(shut.try_sleep(ms(5)).unwrap_err(), ScheduleError::ShutDown);
    let mut refused = Box::pin(shut.sleep(ms(5)));
    assert!(poll(refused.as_mut(), &CountingWaker::new().1).is_pending());
    assert_eq!(refused.error(), Some(ScheduleError::ShutDown));
}

/// A reset the timer refuses (beyond its range, or after a shutdown) leaves the sleep dead but
/// keeps the waker of the last poll: a later reset that the timer accepts wakes it at the new
/// deadline, with no poll in between (the task polling it may not be the one resetting it).
#[test]
fn a_refused_reset_keeps_the_waker_for_the_reset_that_revives_the_sleep() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let beyond = |timer: &Timer| timer.now() + Duration::from_secs(1 << 62);
    let (counter, waker) = CountingWaker::new();
    let mut sleep = Box::pin(timer.sleep(ms(10)));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    sleep.as_mut().reset(beyond(&timer)); // waiting: the move in place is refused
    assert!(matches!(sleep.error(), Some(ScheduleError::DelayTooLong { .. })));
    sleep.as_mut().reset(timer.now() + ms(3));
    assert_eq!(sleep.error(), None);
    advance(&clock, &timer, ms(3));
    assert!(sleep.is_elapsed());
    assert_eq!(counter.count(), 1, "the waker of the last poll was lost");

    // Elapsed, then refused twice: the waker stays with the sleep through both dead slots.
    sleep.as_mut().reset(beyond(&timer));
    sleep.as_mut().reset(beyond(&timer));
    sleep.as_mut().reset(timer.now() + ms(2));
    advance(&clock, &timer, ms(2));
    assert_eq!(counter.count(), 2);
    assert!(timer.is_empty());
}

#[test]
fn futures_executor_block_on() {
    let timer = Timer::new();
    let at = timer.now() + ms(30);
    let mut sleep = timer.sleep_until(at);
    assert_eq!(sleep.deadline(), at);
    futures::executor::block_on(&mut sleep);
    assert!(Instant::now() >= at, "never early");
    assert!(sleep.is_elapsed() && sleep.error().is_none());

    let start = timer.now();
    let mut sleeps: Vec<_> = (1..=20).map(|i| timer.sleep_until(start + ms(i))).collect();
    futures::executor::block_on(futures::future::join_all(sleeps.iter_mut()));
    assert!(Instant::now() >= start + ms(20), "never early");
    assert!(sleeps.iter().all(Sleep::is_elapsed));
    assert!(timer.is_empty());
}

#[test]
fn the_global_timer_sleeps_too() {
    let mut sleep = delaywheel::global().sleep(ms(10));
    futures::executor::block_on(&mut sleep);
    assert!(Instant::now() >= sleep.deadline(), "never early");
    assert!(sleep.is_elapsed());
}

#[tokio::test(flavor = "current_thread")]
async fn tokio_current_thread() {
    let timer = Timer::new();
    let mut sleep = timer.sleep(ms(25));
    (&mut sleep).await;
    assert!(Instant::now() >= sleep.deadline(), "never early");
    assert!(sleep.is_elapsed());

    // A timeout around a channel that a timer task answers in time, and one that it does not.
    let (tx, rx) = tokio::sync::oneshot::channel();
    let _h = timer.schedule(ms(5), move || tx.send(42).unwrap());
    assert_eq!(timer.timeout(ms(1_000), rx).await.unwrap().unwrap(), 42);
    let (_tx, rx) = tokio::sync::oneshot::channel::<u32>();
    assert!(timer.timeout(ms(10), rx).await.is_err());

    // select!: the losing sleep is dropped, and its timer task cancelled.
    tokio::select! {
        _ = timer.sleep(ms(5)) => {}
        _ = timer.sleep(Duration::from_secs(3_600)) => panic!("the hour-long sleep won"),
    }
    assert!(timer.is_empty(), "the loser's task was cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_multi_thread_spawned_sleeps() {
    let timer = Arc::new(Timer::new());
    let tasks: Vec<_> = (0..50u64)
        .map(|i| {
            let timer = Arc::clone(&timer);
            tokio::spawn(async move {
                let mut sleep = timer.sleep(ms(i % 25));
                (&mut sleep).await;
                Instant::now() >= sleep.deadline() && sleep.is_elapsed()
            })
        })
        .collect();
    for task in tasks {
        assert!(task.await.unwrap(), "a sleep completed early");
    }
    assert!(timer.is_empty());
    // `fired` is counted when the driver finishes a batch, which may be just after the wake-ups.
    let give_up = Instant::now() + Duration::from_secs(5);
    while timer.stats().fired < 50 && Instant::now() < give_up {
        std::thread::sleep(ms(1));
    }
    assert_eq!(timer.stats().fired, 50);
}
