//! tokio's own tests of `Interval`, `Sleep` and `Timeout` (`tokio/tests/time_interval.rs`,
//! `time_sleep.rs`, `time_timeout.rs`), ported to delaywheel's futures on a manual clock, where
//! they are exact: the same instants, the same results. Where delaywheel differs by design, the
//! port says so: a deadline already passed completes by the next advance of the timer (not at the
//! poll), a limit counts from the first pending poll, and a zero period is raised to one tick.
//! Then the cases that need a real driver, under both tokio runtime flavours.
#![cfg(feature = "async")]

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use common::waker::{poll, CountingWaker};
use common::{manual_timer, ms};
use delaywheel::{ManualClock, MissedTickBehavior, Sleep, Timer};

fn advance(clock: &ManualClock, timer: &Timer, by: Duration) {
    clock.advance(by);
    timer.advance_clock(Duration::ZERO);
}

fn noop() -> Context<'static> {
    Context::from_waker(futures::task::noop_waker_ref())
}

/// One step of a port of tokio's interval tests: move the clock by `by` ms (or reset the interval
/// first, `None`), then expect exactly the ticks due at these offsets (ms from the start).
type Step = (Option<u64>, &'static [u64]);

/// tokio's `burst`, `delay`, `skip` and `reset`: a 300 ms interval started 1 ms in the past.
fn run_interval(missed: MissedTickBehavior, steps: &[Step]) {
    let (clock, timer) = manual_timer(ms(1), 8);
    let start = timer.now();
    clock.advance(ms(1));
    let mut interval = timer.interval_at(start, ms(300));
    interval.set_missed_tick_behavior(missed);
    for (k, &(by, ticks)) in steps.iter().enumerate() {
        match by {
            Some(by) => advance(&clock, &timer, ms(by)),
            None => interval.reset(),
        }
        for &tick in ticks {
            assert_eq!(interval.poll_tick(&mut noop()), Poll::Ready(start + ms(tick)), "{missed:?} step {k}");
        }
        assert!(interval.poll_tick(&mut noop()).is_pending(), "{missed:?} step {k}: a tick too many");
    }
}

#[test]
fn tokios_interval_burst() {
    let steps: &[Step] = &[
        (Some(0), &[0]),
        (Some(100), &[]),
        (Some(200), &[300]),
        (Some(650), &[600, 900]),
        (Some(200), &[]),
        (Some(100), &[1200]),
        (Some(250), &[1500]),
        (Some(300), &[1800]),
    ];
    run_interval(MissedTickBehavior::Burst, steps);
}

#[test]
fn tokios_interval_delay() {
    let steps: &[Step] = &[
        (Some(0), &[0]),
        (Some(100), &[]),
        (Some(200), &[300]),
        (Some(650), &[600]),
        (Some(100), &[]),
        (Some(201), &[1251]),
        (Some(300), &[1551]),
        (Some(300), &[1851]),
    ];
    run_interval(MissedTickBehavior::Delay, steps);
}

#[test]
fn tokios_interval_skip() {
    let steps: &[Step] = &[
        (Some(0), &[0]),
        (Some(100), &[]),
        (Some(200), &[300]),
        (Some(650), &[600]),
        (Some(250), &[1200]),
        (Some(300), &[1500]),
        (Some(300), &[1800]),
    ];
    run_interval(MissedTickBehavior::Skip, steps);
}

#[test]
fn tokios_interval_reset() {
    let steps: &[Step] = &[
        (Some(0), &[0]),
        (Some(100), &[]),
        (Some(200), &[300]),
        (Some(100), &[]),
        (None, &[]),
        (Some(250), &[]),
        (Some(50), &[701]),
        (Some(300), &[1001]),
    ];
    run_interval(MissedTickBehavior::Burst, steps);
}

/// An `interval_at` whose start is more than a period in the past: the start comes first, then
/// each behaviour's next tick, as in tokio (whose first tick is the start, however late).
#[test]
fn interval_at_a_start_periods_in_the_past() {
    for (missed, next) in [
        (MissedTickBehavior::Burst, [0, 300, 600, 900, 1200]),
        (MissedTickBehavior::Delay, [0, 1000, 1300, 1600, 1900]),
        (MissedTickBehavior::Skip, [0, 900, 1200, 1500, 1800]),
    ] {
        let (clock, timer) = manual_timer(ms(1), 8);
        let start = timer.now();
        clock.advance(ms(700));
        let mut interval = timer.interval_at(start, ms(300));
        interval.set_missed_tick_behavior(missed);
        let mut ticks = Vec::new();
        while ticks.len() < next.len() {
            match interval.poll_tick(&mut noop()) {
                Poll::Ready(at) => ticks.push((at - start).as_millis() as u64),
                Poll::Pending => advance(&clock, &timer, ms(1)),
            }
            assert!(timer.now() - start <= ms(2100), "{missed:?}: {ticks:?}");
        }
        assert_eq!(ticks, next, "{missed:?}");
    }
}

/// tokio's `interval_doesnt_panic_max_duration_when_polling`: the first tick, then no more (the
/// second is beyond the timer's range), and never a panic.
#[test]
fn an_interval_of_duration_max_ticks_once_without_a_panic() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let mut interval = timer.interval(Duration::MAX);
    assert_eq!(interval.poll_tick(&mut noop()), Poll::Ready(timer.now()));
    advance(&clock, &timer, Duration::from_secs(1 << 40));
    assert!(interval.poll_tick(&mut noop()).is_pending());
    assert!(timer.is_empty());
}

/// tokio's `reset_future_sleep_before_fire`, `reset_past_sleep_before_turn`,
/// `reset_past_sleep_before_fire` and `reset_future_sleep_after_fire`: after a reset, only the new
/// deadline counts, exactly.
#[test]
fn tokios_sleep_resets() {
    // (reset after ms, reset to ms): the sleep is due at 100 ms, and completes at the new deadline.
    for (after, to) in [(0, 200), (0, 80), (10, 80), (100, 110)] {
        let (clock, timer) = manual_timer(ms(1), 8);
        let now = timer.now();
        let (counter, waker) = CountingWaker::new();
        let mut sleep = Box::pin(timer.sleep_until(now + ms(100)));
        assert!(poll(sleep.as_mut(), &waker).is_pending());
        advance(&clock, &timer, ms(after));
        sleep.as_mut().reset(now + ms(to));
        for at in after + 1..to {
            advance(&clock, &timer, ms(1));
            assert!(!sleep.is_elapsed(), "reset at {after} to {to}: completed at {at} ms");
        }
        advance(&clock, &timer, ms(1));
        assert_eq!(poll(sleep.as_mut(), &waker), Poll::Ready(()), "reset at {after} to {to}");
        assert_eq!(counter.count(), if after == 100 { 2 } else { 1 });
        assert!(timer.is_empty());
    }
}

/// tokio's `reset_sleep_to_past`: tokio completes it at the poll after the reset; delaywheel by the
/// next advance, never before the poll sees it pending, and the waker of the last poll is woken.
#[test]
fn a_sleep_reset_into_the_past_completes_by_the_next_advance() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let now = timer.now();
    let (counter, waker) = CountingWaker::new();
    let mut sleep = Box::pin(timer.sleep_until(now + ms(100)));
    assert!(poll(sleep.as_mut(), &waker).is_pending());
    advance(&clock, &timer, ms(50));
    assert_eq!(counter.count(), 0);
    sleep.as_mut().reset(now + ms(40));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(counter.count(), 1);
    assert_eq!(poll(sleep.as_mut(), &waker), Poll::Ready(()));
}

/// tokio's `sub_ms_delayed_sleep`, `long_sleeps`, `greater_than_max`, `exactly_max`,
/// `no_out_of_bounds_close_to_max` and `issue_5183`: never early by a nanosecond, ten years
/// exactly, and sleeps beyond the timer's range are dead, never a panic.
#[test]
fn tokios_sleep_extremes() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let mut sleep = timer.sleep(ms(1) + Duration::from_nanos(1));
    advance(&clock, &timer, ms(1));
    assert!(!sleep.is_elapsed(), "a nanosecond early");
    advance(&clock, &timer, ms(1));
    assert!(Pin::new(&mut sleep).poll(&mut noop()).is_ready());

    let ten_years = Duration::from_secs(10 * 365 * 24 * 3600);
    let deadline = timer.now() + ten_years;
    let sleep = timer.sleep_until(deadline);
    advance(&clock, &timer, ten_years - ms(1));
    assert!(!sleep.is_elapsed());
    advance(&clock, &timer, ms(1));
    assert!(sleep.is_elapsed() && timer.now() == deadline);

    for huge in [Duration::MAX, Duration::MAX - ms(1), Duration::from_secs(u64::MAX / 10)] {
        let mut huge = Box::pin(timer.sleep(huge));
        assert!(huge.error().is_some() && poll(huge.as_mut(), &CountingWaker::new().1).is_pending());
    }
    let mut small = Box::pin(timer.sleep(Duration::from_nanos(1)));
    advance(&clock, &timer, ms(1));
    assert!(poll(small.as_mut(), &CountingWaker::new().1).is_ready());
}

/// tokio's `drop_after_reschedule_at_new_scheduled_time` and `drop_from_wake`: a wake that drops
/// sleeps of the same timer (some fired in its batch, some still pending) deadlocks nothing and
/// leaves nothing in the wheel.
#[test]
fn sleeps_dropped_from_a_wake_and_after_a_reschedule() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let start = timer.now();
    let waker = CountingWaker::new().1;
    let mut a = Box::pin(timer.sleep(ms(5)));
    let mut b = Box::pin(timer.sleep(ms(5)));
    let mut c = Box::pin(timer.sleep(ms(10)));
    for s in [&mut a, &mut b, &mut c] {
        assert!(poll(s.as_mut(), &waker).is_pending());
    }
    b.as_mut().reset(start + ms(10));
    advance(&clock, &timer, ms(5));
    assert!(a.is_elapsed() && !b.is_elapsed());
    drop(b);
    assert_eq!(timer.len(), 1);

    struct DropAll(Mutex<Vec<Pin<Box<Sleep>>>>);
    impl Wake for DropAll {
        fn wake(self: Arc<Self>) {
            self.0.lock().unwrap().clear();
        }
    }
    let list = Arc::new(DropAll(Mutex::new(Vec::new())));
    let dropper = Waker::from(Arc::clone(&list));
    for i in 0..100 {
        let mut sleep = Box::pin(timer.sleep(ms(5 + i % 4)));
        assert!(poll(sleep.as_mut(), &dropper).is_pending());
        list.0.lock().unwrap().push(sleep);
    }
    // At 10 ms, c and a quarter of the hundred fire; the first wake drops all hundred.
    advance(&clock, &timer, ms(5));
    assert!(list.0.lock().unwrap().is_empty());
    assert!(c.is_elapsed() && timer.is_empty(), "{} left in the wheel", timer.len());
    advance(&clock, &timer, ms(10));
    assert_eq!(timer.stats().fired, 27, "a, c and the quarter of the hundred");
}

/// A future that is never ready and wakes itself at every poll (tokio's
/// `timeout_is_not_exhausted_by_future` busy-loops the same way).
struct Busy;

impl Future for Busy {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// tokio's `simultaneous_deadline_future_completion`, `completed_future_past_deadline`,
/// `future_and_deadline_in_future`, `very_large_timeout`, `deadline_now_elapses` and
/// `deadline_future_elapses`.
#[test]
fn tokios_timeouts() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (counter, waker) = CountingWaker::new();
    let mut now = Box::pin(timer.timeout_at(timer.now(), async { 1 }));
    assert_eq!(poll(now.as_mut(), &waker), Poll::Ready(Ok(1)));
    let mut past = Box::pin(timer.timeout_at(timer.now() - ms(1000), async { 2 }));
    assert_eq!(poll(past.as_mut(), &waker), Poll::Ready(Ok(2)));
    assert_eq!(timer.stats().scheduled, 0, "ready futures never touch the wheel");

    for limited in [true, false] {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let mut t = match limited {
            true => Box::pin(timer.timeout_at(timer.now() + ms(100), rx)),
            false => Box::pin(timer.timeout(Duration::MAX, rx)), // beyond the range: no limit
        };
        assert!(poll(t.as_mut(), &waker).is_pending());
        advance(&clock, &timer, ms(90));
        assert!(poll(t.as_mut(), &waker).is_pending());
        let before = counter.count();
        tx.send(()).unwrap();
        assert_eq!(counter.count(), before + 1, "woken by the inner future");
        assert!(matches!(poll(t.as_mut(), &waker), Poll::Ready(Ok(Ok(())))));
    }

    // A deadline that passed before the first poll: pending at that poll, elapsed by the next advance.
    let mut t = Box::pin(timer.timeout_at(timer.now(), std::future::pending::<()>()));
    advance(&clock, &timer, ms(1));
    assert!(poll(t.as_mut(), &waker).is_pending());
    timer.advance_clock(Duration::ZERO);
    assert!(matches!(poll(t.as_mut(), &waker), Poll::Ready(Err(_))));
    let mut t = Box::pin(timer.timeout_at(timer.now() + ms(300), Busy));
    assert!(poll(t.as_mut(), &CountingWaker::new().1).is_pending());
    advance(&clock, &timer, ms(299));
    assert!(poll(t.as_mut(), &waker).is_pending(), "early");
    let before = counter.count();
    advance(&clock, &timer, ms(1));
    assert_eq!(counter.count(), before + 1, "the limit woke the last poller");
    assert!(matches!(poll(t.as_mut(), &waker), Poll::Ready(Err(_))));
}

/// tokio's `short_sleeps` and `timeout_is_not_exhausted_by_future`, on a real driver: zero sleeps
/// complete, a busy inner future does not keep its limit from elapsing, never early.
async fn on_a_real_driver() {
    let timer = Timer::new();
    for _ in 0..200 {
        timer.sleep(Duration::ZERO).await;
    }
    let before = Instant::now();
    let mut limited = std::pin::pin!(timer.timeout(ms(5), Busy));
    assert!((&mut limited).await.is_err());
    assert!(Instant::now() >= limited.deadline() && limited.deadline() >= before + ms(5), "early");
    assert!(timer.is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn on_a_real_driver_current_thread() {
    on_a_real_driver().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_real_driver_multi_thread() {
    tokio::spawn(on_a_real_driver()).await.unwrap();
}
