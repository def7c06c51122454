//! The `async` feature's `Timeout` (`Timer::timeout`, `timeout_at`, `try_timeout`): lazy arming,
//! where the limit counts from, exact elapse instants on a manual clock, refusal and shutdown, and
//! tokio (both runtime flavours).
#![cfg(feature = "async")]

mod common;

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use common::waker::{poll, CountingWaker};
use common::{manual_timer, ms};
use delaywheel::{Elapsed, ManualClock, ScheduleError, Timeout, Timer};

fn advance(clock: &ManualClock, timer: &Timer, by: Duration) {
    clock.advance(by);
    timer.advance_clock(Duration::ZERO);
}

/// A future that is pending at its first `n` polls (waking itself each time), then ready.
struct PendingFor(usize);

impl Future for PendingFor {
    type Output = usize;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
        if self.0 == 0 {
            return Poll::Ready(7);
        }
        self.0 -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

fn elapsed_error(timer: &Timer, clock: &ManualClock) -> Elapsed {
    let mut t = pin!(timer.timeout(ms(1), std::future::pending::<()>()));
    assert!(poll(t.as_mut(), &CountingWaker::new().1).is_pending());
    advance(clock, timer, ms(1));
    match poll(t.as_mut(), &CountingWaker::new().1) {
        Poll::Ready(Err(e)) => e,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_future_ready_at_its_first_poll_never_touches_the_wheel() {
    let (_clock, timer) = manual_timer(ms(1), 8);
    let (_c, w) = CountingWaker::new();
    for i in 0..100 {
        let mut t = pin!(timer.timeout(ms(10), async move { i }));
        assert_eq!(poll(t.as_mut(), &w), Poll::Ready(Ok(i)));
        let mut at = pin!(timer.timeout_at(timer.now() + ms(10), std::future::ready(i)));
        assert_eq!(poll(at.as_mut(), &w), Poll::Ready(Ok(i)));
    }
    let stats = timer.stats();
    assert_eq!((stats.scheduled, stats.cancelled, stats.pending), (0, 0, 0));
}

#[test]
fn a_duration_limit_counts_from_the_first_pending_poll() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (counter, w) = CountingWaker::new();
    let mut t = pin!(timer.timeout(ms(10), std::future::pending::<()>()));
    advance(&clock, &timer, ms(5)); // created at 0, first polled at 5 ms
    assert_eq!(timer.len(), 0, "not armed before a poll");
    assert_eq!(t.deadline(), timer.now() + ms(10), "not fixed yet: as if armed now");
    assert!(poll(t.as_mut(), &w).is_pending());
    assert_eq!(timer.len(), 1, "armed by the pending poll");
    let due = timer.now() + ms(10);
    assert_eq!(t.deadline(), due);
    for _ in 0..9 {
        advance(&clock, &timer, ms(1));
        assert!(poll(t.as_mut(), &w).is_pending(), "elapsed early at {:?}", clock.now());
    }
    assert_eq!(counter.count(), 0);
    advance(&clock, &timer, ms(1)); // 15 ms: 10 ms after the first poll
    assert_eq!(counter.count(), 1);
    assert!(matches!(poll(t.as_mut(), &w), Poll::Ready(Err(_))));
    assert_eq!(t.deadline(), due);
    assert_eq!(elapsed_error(&timer, &clock).to_string(), "deadline has elapsed");
}

#[test]
fn timeout_at_elapses_exactly_at_its_instant_whenever_polled_first() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (_c, w) = CountingWaker::new();
    let at = timer.now() + ms(8);
    let mut t = pin!(timer.timeout_at(at, std::future::pending::<()>()));
    assert_eq!(t.deadline(), at);
    advance(&clock, &timer, ms(3));
    assert!(poll(t.as_mut(), &w).is_pending());
    advance(&clock, &timer, ms(4));
    assert!(poll(t.as_mut(), &w).is_pending(), "early");
    advance(&clock, &timer, ms(1));
    assert!(matches!(poll(t.as_mut(), &w), Poll::Ready(Err(_))));
    assert_eq!(t.deadline(), at);

    // An instant already passed: the inner future is polled first, then it elapses by the next advance.
    let mut late = pin!(timer.timeout_at(timer.now() - ms(1), PendingFor(1)));
    assert!(poll(late.as_mut(), &w).is_pending());
    assert_eq!(poll(late.as_mut(), &w), Poll::Ready(Ok(7)), "the inner future wins a tie");
    let mut late = pin!(timer.timeout_at(timer.now() - ms(1), std::future::pending::<()>()));
    assert!(poll(late.as_mut(), &w).is_pending());
    timer.advance_clock(Duration::ZERO);
    assert!(matches!(poll(late.as_mut(), &w), Poll::Ready(Err(_))));
}

#[test]
fn a_future_pending_once_arms_once_and_cancels_on_completion() {
    let (_clock, timer) = manual_timer(ms(1), 8);
    let (_c, w) = CountingWaker::new();
    let mut t = Box::pin(timer.timeout(ms(10), PendingFor(1)));
    assert!(poll(t.as_mut(), &w).is_pending());
    assert_eq!(timer.len(), 1);
    assert_eq!(poll(t.as_mut(), &w), Poll::Ready(Ok(7)));
    drop(t);
    let stats = timer.stats();
    assert_eq!((stats.scheduled, stats.cancelled, stats.pending), (1, 1, 0));
}

#[test]
fn try_timeout_arms_at_once_and_counts_from_the_call() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (_c, w) = CountingWaker::new();
    let due = timer.now() + ms(10);
    let mut t = pin!(timer.try_timeout(ms(10), std::future::pending::<()>()).unwrap());
    assert_eq!(timer.len(), 1, "registered at once");
    assert_eq!(t.deadline(), due);
    advance(&clock, &timer, ms(5));
    assert!(poll(t.as_mut(), &w).is_pending());
    advance(&clock, &timer, ms(4));
    assert!(poll(t.as_mut(), &w).is_pending());
    advance(&clock, &timer, ms(1));
    assert!(matches!(poll(t.as_mut(), &w), Poll::Ready(Err(_))));
}

#[test]
fn try_timeout_returns_the_refusal() {
    let timer = Timer::builder().clock(ManualClock::new()).manual().max_pending(1).build();
    let held = timer.try_timeout(ms(5), std::future::pending::<()>()).unwrap();
    assert_eq!(
        timer.try_timeout(ms(5), std::future::pending::<()>()).unwrap_err(),
        ScheduleError::TooManyPending { max: 1 }
    );
    drop(held);
    assert!(matches!(
        timer.try_timeout(Duration::MAX, std::future::ready(())).unwrap_err(),
        ScheduleError::DelayTooLong { .. }
    ));
    timer.shutdown();
    assert_eq!(timer.try_timeout(ms(5), std::future::ready(())).unwrap_err(), ScheduleError::ShutDown);
}

#[test]
fn after_shutdown_a_timeout_is_its_inner_future_without_a_limit() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (_c, w) = CountingWaker::new();
    let mut armed = pin!(timer.timeout(ms(5), PendingFor(3)));
    assert!(poll(armed.as_mut(), &w).is_pending());
    let mut lazy = pin!(timer.timeout(ms(5), PendingFor(2)));
    drop(timer.shutdown());
    clock.advance(ms(10));
    assert!(poll(armed.as_mut(), &w).is_pending(), "never elapses, never panics");
    assert!(poll(armed.as_mut(), &w).is_pending());
    assert_eq!(poll(armed.as_mut(), &w), Poll::Ready(Ok(7)));
    assert!(poll(lazy.as_mut(), &w).is_pending());
    assert!(poll(lazy.as_mut(), &w).is_pending());
    assert_eq!(poll(lazy.as_mut(), &w), Poll::Ready(Ok(7)));
    drop(timer);
    let mut orphan = pin!(Timer::builder().manual().build().timeout(ms(1), PendingFor(1)));
    assert!(poll(orphan.as_mut(), &w).is_pending(), "its timer is gone: no limit, no panic");
    assert_eq!(poll(orphan.as_mut(), &w), Poll::Ready(Ok(7)));
}

#[test]
fn dropping_an_armed_timeout_cancels_its_task_and_into_inner_too() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (counter, w) = CountingWaker::new();
    let mut t = Box::pin(timer.timeout(ms(5), std::future::pending::<()>()));
    assert!(poll(t.as_mut(), &w).is_pending());
    assert_eq!(timer.len(), 1);
    drop(t);
    assert_eq!(timer.len(), 0);
    let t: Timeout<std::future::Ready<i32>> = timer.try_timeout(ms(5), std::future::ready(3)).unwrap();
    assert_eq!(t.get_ref().clone().into_inner(), 3);
    assert_eq!(timer.len(), 1);
    let inner = t.into_inner();
    assert_eq!(timer.len(), 0, "into_inner drops the time limit");
    assert_eq!(futures::executor::block_on(inner), 3);
    advance(&clock, &timer, ms(10));
    assert_eq!(counter.count(), 0);
    assert_eq!(timer.stats().fired, 0);
}

#[tokio::test(flavor = "current_thread")]
async fn tokio_current_thread() {
    let timer = Timer::new();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let _h = timer.schedule(ms(5), move || tx.send(42).unwrap());
    assert_eq!(timer.timeout(ms(1_000), rx).await.unwrap().unwrap(), 42);
    let (_tx, rx) = tokio::sync::oneshot::channel::<u32>();
    let before = timer.now();
    let mut limited = pin!(timer.timeout(ms(10), rx));
    assert!(limited.as_mut().await.is_err());
    assert!(limited.deadline() >= before + ms(10), "the limit counts from the first poll");
    assert!(Instant::now() >= limited.deadline(), "elapsed early");
    assert_eq!(timer.timeout(ms(10), async { 1 }).await, Ok(1));
    assert!(timer.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_multi_thread_many_timeouts() {
    let timer = Arc::new(Timer::new());
    let tasks: Vec<_> = (0..64u64)
        .map(|i| {
            let timer = Arc::clone(&timer);
            tokio::spawn(async move {
                for _ in 0..100 {
                    assert_eq!(timer.timeout(ms(50), async { 1 }).await, Ok(1));
                }
                let before = timer.now();
                let limit = ms(1 + i % 10);
                let mut limited = std::pin::pin!(timer.timeout(limit, std::future::pending::<()>()));
                assert!(limited.as_mut().await.is_err());
                limited.deadline() >= before + limit && Instant::now() >= limited.deadline()
            })
        })
        .collect();
    for task in tasks {
        assert!(task.await.unwrap(), "a timeout elapsed early");
    }
    assert!(timer.is_empty());
    assert_eq!(timer.stats().scheduled, 64, "only the pending timeouts were armed");
}

#[test]
fn a_timeout_is_debug_whatever_its_future_so_try_timeout_unwraps_either_way() {
    let (_clock, timer) = manual_timer(ms(1), 8);
    let armed = timer.try_timeout(ms(5), async { 1 }).unwrap();
    assert!(format!("{armed:?}").starts_with("Timeout { future: "));
    let refused = timer.try_timeout(Duration::MAX, async { 2 }).unwrap_err();
    assert!(matches!(refused, ScheduleError::DelayTooLong { .. }), "{refused:?}");
    timer.shutdown();
    assert_eq!(timer.try_timeout(ms(5), async { 3 }).unwrap_err(), ScheduleError::ShutDown);
}

/// An elapsed timeout converts into an I/O error of kind `TimedOut`, so `?` carries it out of a
/// function returning `std::io::Result`, as tokio's does.
#[test]
fn an_elapsed_timeout_is_an_io_error_of_kind_timed_out() {
    async fn read_with_limit(timer: &Timer) -> std::io::Result<u8> {
        let byte = timer.timeout(ms(5), std::future::pending::<std::io::Result<u8>>()).await??;
        Ok(byte)
    }
    let (clock, timer) = manual_timer(ms(1), 8);
    let (_wakes, waker) = CountingWaker::new();
    let mut read = pin!(read_with_limit(&timer));
    assert!(poll(read.as_mut(), &waker).is_pending());
    clock.advance(ms(5));
    timer.advance_clock(Duration::ZERO);
    let Poll::Ready(Err(error)) = poll(read.as_mut(), &waker) else { panic!("the read did not time out") };
    assert_eq!(error.kind(), std::io::ErrorKind::TimedOut);
    assert_eq!(error.to_string(), "deadline has elapsed");
    assert!(error.get_ref().is_some_and(|inner| inner.is::<Elapsed>()));
}
