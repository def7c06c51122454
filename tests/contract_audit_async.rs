//! The `async` contract pushed with the inputs a demanding user tries: sleeps reset after they
//! elapsed or into the past, refused and orphaned futures polled, zero periods, missed ticks, and
//! the delay queue's stream, each checked for exact instants on a manual clock.
#![cfg(feature = "async")]

mod common;

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use common::waker::{ignored_waker, poll as poll_with};
use common::{manual_timer, ms};
use delaywheel::queue::DelayQueue;
use delaywheel::{Interval, MissedTickBehavior, ScheduleError, Sleep, Timeout, Timer};

fn poll<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    poll_with(Pin::new(f), &ignored_waker())
}

fn step(clock: &delaywheel::ManualClock, timer: &Timer, by: Duration) {
    clock.advance(by);
    timer.advance_clock(Duration::ZERO);
}

fn bounds<T: Send + Sync + Unpin + 'static>() {}

#[test]
fn the_async_names_have_the_contract_bounds() {
    bounds::<Sleep>();
    bounds::<Interval>();
    bounds::<DelayQueue<u32>>();
    fn stream<S: futures_core::Stream + Unpin>() {}
    stream::<Interval>();
    stream::<DelayQueue<std::cell::Cell<u8>>>();
    assert_eq!(MissedTickBehavior::default(), MissedTickBehavior::Burst);
    let _t: Option<Timeout<std::future::Ready<()>>> = None;
}

#[test]
fn a_sleep_never_fires_early_and_re_arms_after_it_elapsed() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let mut s = timer.sleep(Duration::from_micros(2_500));
    assert_eq!(timer.len(), 1, "a sleep registers at creation");
    step(&clock, &timer, ms(2));
    assert!(poll(&mut s).is_pending());
    step(&clock, &timer, ms(1));
    assert!(poll(&mut s).is_ready(), "at the first tick boundary after its deadline");
    assert!(poll(&mut s).is_ready(), "stays ready");
    let due = timer.now() + ms(4);
    s.reset(due);
    assert_eq!(s.deadline(), due);
    assert!(poll(&mut s).is_pending(), "an elapsed sleep re-armed");
    step(&clock, &timer, ms(3));
    assert!(poll(&mut s).is_pending());
    step(&clock, &timer, ms(1));
    assert!(poll(&mut s).is_ready());
    s.reset(timer.now() - ms(2));
    timer.advance_clock(Duration::ZERO);
    assert!(poll(&mut s).is_ready(), "reset into the past: by the next advance");
    drop(s);
    let s2 = timer.sleep(ms(50));
    assert_eq!(timer.len(), 1);
    drop(s2);
    assert_eq!(timer.len(), 0, "dropping a sleep cancels its task");
}

#[test]
fn sleep_until_reads_the_timers_own_clock() {
    let (clock, timer) = manual_timer(ms(1), 8);
    clock.advance(Duration::from_secs(3600)); // far from wall time
    let mut s = timer.sleep_until(timer.now() + ms(10));
    step(&clock, &timer, ms(9));
    assert!(poll(&mut s).is_pending());
    step(&clock, &timer, ms(1));
    assert!(poll(&mut s).is_ready());
}

#[test]
fn refused_and_orphaned_futures_never_panic_when_polled() {
    let (clock, timer) = manual_timer(ms(1), 8);
    assert!(matches!(timer.try_sleep(Duration::MAX), Err(ScheduleError::DelayTooLong { .. })));
    let mut far = timer.sleep(Duration::MAX);
    assert!(poll(&mut far).is_pending() && far.error().is_some());
    let mut orphan = timer.sleep(ms(5));
    let mut iv = timer.interval(ms(5));
    assert!(poll(&mut Box::pin(iv.tick())).is_ready());
    drop(timer.shutdown());
    assert_eq!(timer.try_sleep(ms(1)).unwrap_err(), ScheduleError::ShutDown);
    assert!(timer.try_timeout(ms(1), std::future::pending::<()>()).is_err());
    step(&clock, &timer, ms(10));
    assert!(poll(&mut orphan).is_pending());
    assert!(poll(&mut Box::pin(iv.tick())).is_pending());
    let mut late = timer.sleep(ms(1));
    assert!(poll(&mut late).is_pending());
    drop(timer);
    orphan.reset(orphan.deadline() + ms(1));
    assert!(poll(&mut orphan).is_pending(), "the timer is gone: still no panic");
    iv.reset();
    assert!(poll(&mut Box::pin(iv.tick())).is_pending());
}

#[test]
fn a_timeout_ready_at_once_never_touches_the_wheel_and_a_late_one_elapses_on_time() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let before = timer.stats().scheduled;
    let mut quick = timer.timeout(ms(5), std::future::ready(7));
    assert_eq!(poll(&mut quick), Poll::Ready(Ok(7)));
    assert_eq!((timer.len(), timer.stats().scheduled), (0, before));
    let registered = timer.try_timeout(ms(5), std::future::pending::<()>()).unwrap();
    assert_eq!(timer.len(), 1, "try_timeout registers at once");
    drop(registered);
    assert_eq!(timer.len(), 0, "dropping a timeout cancels its task");
    let mut slow = timer.timeout_at(timer.now() + ms(5), std::future::pending::<()>());
    assert_eq!(slow.deadline(), timer.now() + ms(5));
    step(&clock, &timer, ms(4));
    assert!(poll(&mut slow).is_pending());
    step(&clock, &timer, ms(1));
    assert!(matches!(poll(&mut slow), Poll::Ready(Err(_))));
}

/// The instants of the next `n` ticks, each polled once the clock reached it.
fn ticks(clock: &delaywheel::ManualClock, timer: &Timer, iv: &mut Interval, n: usize) -> Vec<Duration> {
    let start = timer.now() - clock.now();
    let mut out = Vec::new();
    while out.len() < n {
        match poll(&mut Box::pin(iv.tick())) {
            Poll::Ready(at) => out.push(at - start),
            Poll::Pending => step(clock, timer, ms(1)),
        }
    }
    out
}

#[test]
fn missed_ticks_burst_delay_or_skip_as_tokio() {
    let cases = [
        (MissedTickBehavior::Burst, [0, 10, 20, 30, 40, 50]),
        (MissedTickBehavior::Delay, [0, 10, 20, 30, 55, 65]),
        (MissedTickBehavior::Skip, [0, 10, 20, 30, 50, 60]),
    ];
    for (behavior, want) in cases {
        let (clock, timer) = manual_timer(ms(1), 8);
        let mut iv = timer.interval(ms(10));
        iv.set_missed_tick_behavior(behavior);
        assert_eq!(iv.missed_tick_behavior(), behavior);
        let mut got = ticks(&clock, &timer, &mut iv, 3);
        step(&clock, &timer, ms(25)); // the task is busy: the tick at 30 is missed by 15 ms
        got.extend(ticks(&clock, &timer, &mut iv, 3));
        let want: Vec<Duration> = want.iter().map(|&m| ms(m)).collect();
        assert_eq!(got, want, "{behavior:?}");
    }
}

#[test]
fn a_tick_returns_the_instant_it_was_due_also_between_ticks_of_the_timer() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let mut iv = timer.interval(Duration::from_micros(1_500));
    let start = timer.now() - clock.now();
    let mut got = Vec::new();
    while got.len() < 5 {
        match poll(&mut Box::pin(iv.tick())) {
            Poll::Ready(at) => got.push((at - start, clock.now())),
            Poll::Pending => step(&clock, &timer, Duration::from_micros(250)),
        }
    }
    let us = Duration::from_micros;
    // Due at 0, 1.5, 3, 4.5, 6 ms; each taken at the first tick boundary at or after it.
    let want = [(us(0), us(0)), (us(1_500), ms(2)), (ms(3), ms(3)), (us(4_500), ms(5)), (ms(6), ms(6))];
    assert_eq!(got, want);
}

#[test]
fn a_zero_period_ticks_once_per_tick_and_reset_restarts_the_period() {
    let (clock, timer) = manual_timer(ms(2), 8);
    let mut iv = timer.interval(Duration::ZERO);
    assert_eq!(ticks(&clock, &timer, &mut iv, 4), vec![ms(0), ms(2), ms(4), ms(6)]);
    let (clock, timer) = manual_timer(ms(1), 8);
    let mut iv = timer.interval_at(timer.now() + ms(3), ms(10));
    assert_eq!(ticks(&clock, &timer, &mut iv, 1), vec![ms(3)]);
    step(&clock, &timer, ms(4));
    iv.reset();
    assert_eq!(ticks(&clock, &timer, &mut iv, 1), vec![ms(17)], "a period after the reset");
    drop(iv);
    assert_eq!(timer.len(), 0, "dropping an interval cancels its task");
}

#[test]
fn the_queue_stream_ends_when_empty_and_yields_each_value_once_on_time() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let mut q = DelayQueue::with_timer(timer);
    let waker = ignored_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    assert!(matches!(q.poll_expired(&mut cx), Poll::Ready(None)), "nothing pending: the end");
    q.insert(2, ms(4));
    q.insert(1, ms(3));
    assert!(q.poll_expired(&mut cx).is_pending());
    clock.advance(ms(3));
    q.advance_clock(Duration::ZERO);
    let first = futures::executor::block_on(q.next_expired()).unwrap();
    assert_eq!(first.into_inner(), 1);
    assert!(q.poll_expired(&mut cx).is_pending(), "never early");
    clock.advance(ms(1));
    q.advance_clock(Duration::ZERO);
    let rest: Vec<u32> = futures::executor::block_on_stream(&mut q).map(|e| e.into_inner()).collect();
    assert_eq!(rest, vec![2]);
}
