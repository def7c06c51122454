//! The deadlines of the `async` futures made or armed on a timer that is shut down or dropped:
//! still on the timer's own clock (a `ManualClock` far from `Instant::now()` here), as the
//! futures' docs say, never on the system's.
#![cfg(feature = "async")]

mod common;

use std::time::Duration;

use common::waker::{poll, CountingWaker};
use common::{manual_timer, ms};

/// A manual timer whose clock runs an hour ahead of the system's.
fn timer_an_hour_ahead() -> (delaywheel::ManualClock, delaywheel::Timer) {
    let (clock, timer) = manual_timer(ms(1), 8);
    clock.advance(Duration::from_secs(3600));
    timer.advance_clock(Duration::ZERO);
    (clock, timer)
}

/// A lazy `timeout` (not yet armed) reads its would-be deadline on the timer's clock, also once
/// the timer is shut down, and once it is dropped.
#[test]
fn a_lazy_timeout_reads_its_deadline_on_the_timers_clock_after_shutdown_and_drop() {
    let (_clock, timer) = timer_an_hour_ahead();
    let now = timer.now();
    let t = timer.timeout(ms(10), std::future::pending::<()>());
    assert_eq!(t.deadline(), now + ms(10));
    drop(timer.shutdown());
    assert_eq!(t.deadline(), now + ms(10), "after the shutdown");
    drop(timer);
    assert_eq!(t.deadline(), now + ms(10), "after the drop");
}

/// A sleep made, or a timeout armed, on a shut-down timer never completes; its deadline is on
/// the timer's clock.
#[test]
fn a_sleep_refused_by_a_shut_down_timer_reads_its_deadline_on_the_timers_clock() {
    let (_clock, timer) = timer_an_hour_ahead();
    let now = timer.now();
    let mut t = Box::pin(timer.timeout(ms(10), std::future::pending::<()>()));
    drop(timer.shutdown());
    let sleep = timer.sleep(ms(4));
    assert_eq!(sleep.deadline(), now + ms(4));
    let (_woken, waker) = CountingWaker::new();
    assert!(poll(t.as_mut(), &waker).is_pending(), "a refused limit never elapses");
    assert_eq!(t.deadline(), now + ms(10), "armed after the shutdown");
}
