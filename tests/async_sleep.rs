//! The `async` feature: `Timer::sleep`, `sleep_until` and `timeout`, polled by hand on a manual
//! clock (deterministic), under tokio (both runtime flavours) and under `futures::executor`.
#![cfg(feature = "async")]

mod common;

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use common::{manual_timer, ms};
use delaywheel::{Elapsed, ScheduleError, Timer};

/// A waker that counts its wake-ups.
#[derive(Default)]
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl CountingWaker {
    fn new() -> (Arc<CountingWaker>, Waker) {
        let counter = Arc::new(CountingWaker::default());
        let waker = Waker::from(Arc::clone(&counter));
        (counter, waker)
    }
    fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

fn poll<F: Future>(future: Pin<&mut F>, waker: &Waker) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(waker))
}

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
fn timeout_elapses_or_yields_the_output() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (counter, waker) = CountingWaker::new();

    let mut never = pin!(timer.timeout(ms(10), std::future::pending::<u32>()));
    assert!(poll(never.as_mut(), &waker).is_pending());
    advance(&clock, &timer, ms(9));
    assert!(poll(never.as_mut(), &waker).is_pending());
    advance(&clock, &timer, ms(1));
    assert_eq!(counter.count(), 1);
    assert_eq!(poll(never.as_mut(), &waker), Poll::Ready(Err(elapsed())));

    let mut ready = Box::pin(timer.timeout(ms(10), async { 7 }));
    assert_eq!(poll(ready.as_mut(), &waker), Poll::Ready(Ok(7)));
    assert_eq!(timer.len(), 1, "its task is cancelled only when the Timeout is dropped");
    drop(ready);
    assert_eq!(timer.len(), 0);
}

/// An `Elapsed` value, obtained the only public way.
fn elapsed() -> Elapsed {
    let (clock, timer) = manual_timer(ms(1), 8);
    let mut t = pin!(timer.timeout(ms(1), std::future::pending::<()>()));
    advance(&clock, &timer, ms(1));
    match poll(t.as_mut(), &CountingWaker::new().1) {
        Poll::Ready(Err(e)) => e,
        other => panic!("{other:?}"),
    }
}

#[test]
fn timeout_prefers_an_inner_future_ready_at_the_deadline() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (_c, waker) = CountingWaker::new();
    let gate = timer.sleep(ms(5));
    let mut raced = pin!(timer.timeout(ms(5), gate));
    assert!(poll(raced.as_mut(), &waker).is_pending());
    advance(&clock, &timer, ms(5));
    assert_eq!(poll(raced.as_mut(), &waker), Poll::Ready(Ok(())));
    assert_eq!(elapsed().to_string(), "deadline has elapsed");
}

#[test]
fn timeout_gives_access_to_the_inner_future() {
    let (_clock, timer) = manual_timer(ms(1), 8);
    let mut t = timer.timeout(ms(5), std::future::ready(3));
    let inner: &std::future::Ready<i32> = t.get_ref();
    assert!(format!("{inner:?}").starts_with("Ready"));
    let inner: &mut std::future::Ready<i32> = t.get_mut();
    assert!(format!("{inner:?}").starts_with("Ready"));
    assert_eq!(timer.len(), 1);
    let inner = t.into_inner();
    assert_eq!(timer.len(), 0, "into_inner drops the time limit");
    assert_eq!(futures::executor::block_on(inner), 3);
}

#[test]
fn sleep_until_reads_an_instant_on_the_timers_clock() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (counter, waker) = CountingWaker::new();
    // Wall time passing does not move a manual clock's instants.
    let deadline = timer.now() + ms(5);
    std::thread::sleep(ms(2));
    let mut sleep = pin!(timer.sleep_until(deadline));
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

fn panic_message(result: std::thread::Result<()>) -> String {
    let payload = result.expect_err("polling should panic");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn shutdown_before_the_deadline_wakes_the_sleep_and_polling_panics() {
    let (_clock, timer) = manual_timer(ms(1), 8);
    let (counter, waker) = CountingWaker::new();
    let mut sleep = Box::pin(timer.sleep(ms(5)));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    let unfired = timer.shutdown();
    assert_eq!(unfired.len(), 1);
    drop(unfired); // dropping the unrun task abandons the sleep
    assert_eq!(counter.count(), 1, "woken so that its task notices");
    let message = panic_message(catch_unwind(AssertUnwindSafe(|| {
        let _ = poll(sleep.as_mut(), &waker);
    })));
    assert!(message.contains("shut down"), "{message}");
}

#[test]
fn a_refused_sleep_panics_when_polled_with_the_reason() {
    let clock = delaywheel::ManualClock::new();
    let timer = Timer::builder().clock(clock).manual().max_pending(1).build();
    let _held = timer.sleep(ms(5));
    let mut refused = Box::pin(timer.sleep(ms(5)));
    let message = panic_message(catch_unwind(AssertUnwindSafe(|| {
        let _ = poll(refused.as_mut(), &CountingWaker::new().1);
    })));
    assert!(message.contains(&ScheduleError::TooManyPending { max: 1 }.to_string()), "{message}");

    let shut = Timer::builder().manual().build();
    shut.shutdown();
    let mut refused = Box::pin(shut.sleep(ms(5)));
    let message = panic_message(catch_unwind(AssertUnwindSafe(|| {
        let _ = poll(refused.as_mut(), &CountingWaker::new().1);
    })));
    assert!(message.contains("shut down"), "{message}");
}

#[test]
fn futures_executor_block_on() {
    let timer = Timer::new();
    let start = Instant::now();
    futures::executor::block_on(timer.sleep(ms(30)));
    assert!(start.elapsed() >= ms(30));

    let sleeps: Vec<_> = (1..=20).map(|i| timer.sleep(ms(i))).collect();
    let start = Instant::now();
    futures::executor::block_on(futures::future::join_all(sleeps));
    assert!(start.elapsed() >= ms(20));

    let result = futures::executor::block_on(timer.timeout(ms(10), std::future::pending::<()>()));
    assert!(result.is_err());
    assert!(timer.is_empty());
}

#[test]
fn the_global_timer_sleeps_too() {
    let start = Instant::now();
    futures::executor::block_on(delaywheel::global().sleep(ms(10)));
    assert!(start.elapsed() >= ms(10));
}

#[tokio::test(flavor = "current_thread")]
async fn tokio_current_thread() {
    let timer = Timer::new();
    let start = Instant::now();
    timer.sleep(ms(25)).await;
    assert!(start.elapsed() >= ms(25));

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
                let start = Instant::now();
                timer.sleep(ms(i % 25)).await;
                start.elapsed() >= ms(i % 25)
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
