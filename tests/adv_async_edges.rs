//! The `async` futures at their edges, polled by hand with counting wakers on a `ManualClock`:
//! a sleep reset after it completed (earlier, later, into the past) completes once at the new
//! deadline and wakes the waker it kept; deadlines far away and before the clock's origin;
//! refusals as errors (max_pending, range, shutdown) and never panics; shutdown and drop of the
//! timer under pending futures; drops cancel (`len`); an interval's instants through every missed
//! tick behaviour after a stall that ends exactly on, and a nanosecond past, a tick.
#![cfg(feature = "async")]

mod common;

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use common::waker::{poll, CountingWaker};
use delaywheel::{ManualClock, MissedTickBehavior, ScheduleError, Timer};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn manual(max_pending: Option<usize>) -> (ManualClock, Timer) {
    let clock = ManualClock::new();
    let mut builder = Timer::builder().tick(ms(1)).wheel_size(4).clock(clock.clone()).manual();
    if let Some(max) = max_pending {
        builder = builder.max_pending(max);
    }
    (clock, builder.build())
}

fn step(clock: &ManualClock, timer: &Timer, by: Duration) {
    clock.advance(by);
    timer.advance_clock(Duration::ZERO);
}

/// A completed sleep reset again and again: each time it is pending until the new deadline
/// exactly, then ready; the waker of the last poll is woken once per completion without polling
/// again in between; the old deadline counts for nothing; `len` is one while it waits, zero after.
#[test]
fn a_sleep_reset_after_it_completed_completes_once_at_each_new_deadline() {
    let (clock, timer) = manual(None);
    let (count, waker) = CountingWaker::new();
    let mut sleep = timer.sleep(ms(5));
    assert!(poll(Pin::new(&mut sleep), &waker).is_pending());
    step(&clock, &timer, ms(5));
    assert_eq!(count.count(), 1);
    assert!(poll(Pin::new(&mut sleep), &waker).is_ready());
    assert!(poll(Pin::new(&mut sleep), &waker).is_ready(), "stays ready until reset");
    for (i, later) in [7u64, 1, 30, 2].into_iter().enumerate() {
        let due = timer.now() + ms(later);
        sleep.reset(due);
        assert_eq!(sleep.deadline(), due);
        assert!(!sleep.is_elapsed(), "round {i}");
        assert_eq!(timer.len(), 1, "round {i}");
        // No poll in between: the waker of the last poll is kept.
        step(&clock, &timer, ms(later) - Duration::from_nanos(1));
        assert_eq!(count.count(), 1 + i, "round {i}: never early");
        step(&clock, &timer, Duration::from_nanos(1));
        assert_eq!(count.count(), 2 + i, "round {i}: woken at the new deadline");
        assert!(sleep.is_elapsed() && sleep.error().is_none());
        assert_eq!(poll(Pin::new(&mut sleep), &waker), Poll::Ready(()));
        assert_eq!(timer.len(), 0);
    }
    // Into the past: completes by the next advance, once.
    sleep.reset(timer.now() - ms(3));
    assert_eq!(timer.len(), 1);
    timer.advance_clock(Duration::ZERO);
    assert!(sleep.is_elapsed());
    assert_eq!(poll(Pin::new(&mut sleep), &waker), Poll::Ready(()));
    assert_eq!(count.count(), 6);
    step(&clock, &timer, ms(100));
    assert_eq!(count.count(), 6, "no stray wake-up from any old deadline");
}

/// Deadlines before the clock's origin complete at the next advance and read back as given; one
/// beyond the range is an error from `try_sleep_until` and a sleep that never completes (and
/// never panics) from `sleep_until`; a reset of that dead sleep to a reachable deadline revives it.
#[test]
fn sleeps_until_instants_before_the_origin_and_beyond_the_range() {
    let (clock, timer) = manual(None);
    let origin = timer.now();
    let (count, waker) = CountingWaker::new();
    if let Some(before) = origin.checked_sub(ms(250)) {
        let mut s = timer.sleep_until(before);
        assert_eq!(s.deadline(), before);
        timer.advance_clock(Duration::ZERO);
        assert_eq!(poll(Pin::new(&mut s), &waker), Poll::Ready(()));
    }
    let far = origin + Duration::from_secs(3_600 * 24 * 365 * 100_000);
    assert!(matches!(timer.try_sleep_until(far), Err(ScheduleError::DelayTooLong { .. })));
    let mut dead = timer.sleep_until(far);
    assert!(matches!(dead.error(), Some(ScheduleError::DelayTooLong { .. })));
    assert_eq!(timer.len(), 0);
    for _ in 0..3 {
        step(&clock, &timer, Duration::from_secs(3_600));
        assert!(poll(Pin::new(&mut dead), &waker).is_pending());
    }
    let due = timer.now() + ms(2);
    dead.reset(due);
    assert_eq!((dead.error(), dead.deadline(), timer.len()), (None, due, 1));
    step(&clock, &timer, ms(2));
    assert_eq!(count.count(), 1);
    assert!(poll(Pin::new(&mut dead), &waker).is_ready());
}

/// `max_pending(1)`: a second `try_sleep`, `try_timeout` and the interval's armed tick are refused
/// as errors (never a panic on poll); dropping the first sleep frees the room at once.
#[test]
fn refusals_by_max_pending_are_errors_and_a_drop_frees_the_room() {
    let (clock, timer) = manual(Some(1));
    let first = timer.try_sleep(ms(10)).unwrap();
    assert_eq!(timer.len(), 1);
    assert!(matches!(timer.try_sleep(ms(1)), Err(ScheduleError::TooManyPending { max: 1 })));
    assert!(matches!(
        timer.try_timeout(ms(1), std::future::pending::<()>()),
        Err(ScheduleError::TooManyPending { max: 1 })
    ));
    let (_, waker) = CountingWaker::new();
    let mut dead = timer.sleep(ms(1));
    assert!(matches!(dead.error(), Some(ScheduleError::TooManyPending { .. })));
    step(&clock, &timer, ms(3));
    assert!(poll(Pin::new(&mut dead), &waker).is_pending());
    drop(first);
    assert_eq!(timer.len(), 0);
    let mut t = timer.try_timeout(ms(2), std::future::pending::<()>()).unwrap();
    assert_eq!(timer.len(), 1);
    step(&clock, &timer, ms(2));
    assert!(matches!(poll(Pin::new(&mut t), &waker), Poll::Ready(Err(_))));
    assert_eq!(timer.len(), 0);
}

/// Pending futures when their timer shuts down, then when it is dropped: each is woken at most
/// once, stays pending (the sleep, the timeout's limit, the interval) and never panics; a
/// `try_` form after that is `ShutDown`.
#[test]
fn pending_futures_outlive_a_shutdown_and_the_timers_drop_without_panics() {
    for drop_timer in [false, true] {
        let (clock, timer) = manual(None);
        let (count, waker) = CountingWaker::new();
        let mut sleep = timer.sleep(ms(10));
        let mut timeout = timer.timeout(ms(10), std::future::pending::<()>());
        let mut interval = timer.interval(ms(10));
        assert!(poll(Pin::new(&mut sleep), &waker).is_pending());
        assert!(poll(Pin::new(&mut timeout), &waker).is_pending());
        assert_eq!(interval.poll_tick(&mut std::task::Context::from_waker(&waker)), Poll::Ready(timer.now()));
        assert!(interval.poll_tick(&mut std::task::Context::from_waker(&waker)).is_pending());
        assert_eq!(timer.len(), 3);
        if drop_timer {
            drop(timer);
        } else {
            let _ = timer.shutdown();
            assert!(matches!(timer.try_sleep(ms(1)), Err(ScheduleError::ShutDown)));
            step(&clock, &timer, ms(50));
        }
        assert!(count.count() <= 3, "woken at most once each");
        clock.advance(ms(50));
        for _ in 0..2 {
            assert!(poll(Pin::new(&mut sleep), &waker).is_pending());
            assert!(poll(Pin::new(&mut timeout), &waker).is_pending());
            assert!(interval.poll_tick(&mut std::task::Context::from_waker(&waker)).is_pending());
        }
        assert_eq!(sleep.error(), Some(ScheduleError::ShutDown));
        sleep.reset(sleep.deadline() + ms(1));
        assert!(poll(Pin::new(&mut sleep), &waker).is_pending());
        interval.reset();
        assert!(interval.poll_tick(&mut std::task::Context::from_waker(&waker)).is_pending());
    }
}

/// An interval stalled until exactly a tick's instant, and until a nanosecond past it: the
/// instants each behaviour returns, against tokio's arithmetic (a tick due at the instant the
/// stall ends is on time for every behaviour).
#[test]
fn interval_instants_after_stalls_ending_on_and_just_past_a_tick() {
    for behavior in [MissedTickBehavior::Burst, MissedTickBehavior::Delay, MissedTickBehavior::Skip] {
        for past in [0u64, 1] {
            let (clock, timer) = manual(None);
            let t0 = timer.now();
            let (_, waker) = CountingWaker::new();
            let mut cx = std::task::Context::from_waker(&waker);
            let mut iv = timer.interval_at(t0 + ms(10), ms(10));
            iv.set_missed_tick_behavior(behavior);
            assert!(iv.poll_tick(&mut cx).is_pending());
            // Stall to 40 ms (+ past ns), taking nothing meanwhile.
            step(&clock, &timer, ms(40) + Duration::from_nanos(past));
            let mut got = Vec::new();
            while let Poll::Ready(at) = iv.poll_tick(&mut cx) {
                got.push(at - t0);
                if got.len() > 6 {
                    break;
                }
            }
            let expected_ready: Vec<Duration> = match behavior {
                MissedTickBehavior::Burst => vec![ms(10), ms(20), ms(30), ms(40)],
                _ => vec![ms(10)],
            };
            assert_eq!(got, expected_ready, "{behavior:?} +{past} ns");
            // The next tick, as tokio computes it from the late tick at 10 ms taken at `now`:
            // Burst keeps the grid, Delay restarts it at `now`, Skip takes the first grid point
            // after `now` (`now + period - (now - 10 ms) % period`).
            let now = ms(40) + Duration::from_nanos(past);
            let expected_next = match behavior {
                MissedTickBehavior::Burst | MissedTickBehavior::Skip => ms(50),
                MissedTickBehavior::Delay => now + ms(10),
            };
            step(&clock, &timer, expected_next - now - Duration::from_nanos(1));
            if expected_next > clock.now() {
                assert!(iv.poll_tick(&mut cx).is_pending(), "{behavior:?} +{past} ns: early");
            }
            clock.advance_to(expected_next.max(clock.now()));
            step(&clock, &timer, ms(1));
            assert_eq!(
                iv.poll_tick(&mut cx).map(|at| at - t0),
                Poll::Ready(expected_next),
                "{behavior:?} +{past} ns"
            );
        }
    }
}

/// Dropping a pending sleep, an armed timeout and an interval leaves `len` at zero at once, and
/// the wakers are never called afterwards.
#[test]
fn dropping_futures_cancels_their_tasks_at_once() {
    let (clock, timer) = manual(None);
    let (count, waker) = CountingWaker::new();
    let mut sleep = timer.sleep(ms(5));
    let mut timeout = timer.timeout_at(timer.now() + ms(5), std::future::pending::<()>());
    let mut interval = timer.interval_at(timer.now() + ms(5), ms(5));
    assert!(poll(Pin::new(&mut sleep), &waker).is_pending());
    assert!(Pin::new(&mut timeout).poll(&mut std::task::Context::from_waker(&waker)).is_pending());
    assert!(interval.poll_tick(&mut std::task::Context::from_waker(&waker)).is_pending());
    assert_eq!(timer.len(), 3);
    drop(sleep);
    assert_eq!(timer.len(), 2);
    drop(timeout);
    assert_eq!(timer.len(), 1);
    drop(interval);
    assert_eq!(timer.len(), 0);
    step(&clock, &timer, ms(20));
    assert_eq!(count.count(), 0);
}
