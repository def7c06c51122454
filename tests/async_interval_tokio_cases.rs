//! The cases of tokio's own `Interval` tests (tokio/tests/time_interval.rs: burst, delay, skip,
//! reset, reset_immediately, reset_after, reset_at), step for step on a manual clock with 1 ms
//! ticks: the same instants come out, tick for tick. As there, the clock starts 1 ms after the
//! interval's start, and each step advances the clock, then takes every tick that is ready.
#![cfg(feature = "async")]

mod common;

use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use common::{manual_timer, ms};
use delaywheel::{Interval, ManualClock, MissedTickBehavior, Timer};
use futures::task::noop_waker_ref;

/// An interval of 300 ms from `start`, on a manual timer whose clock is 1 ms past `start`.
struct Case {
    clock: ManualClock,
    timer: Timer,
    start: Instant,
    interval: Interval,
}

impl Case {
    fn new(missed: MissedTickBehavior) -> Case {
        let (clock, timer) = manual_timer(ms(1), 8);
        let start = timer.now();
        clock.advance(ms(1));
        timer.advance_clock(Duration::ZERO);
        let mut interval = timer.interval_at(start, ms(300));
        interval.set_missed_tick_behavior(missed);
        Case { clock, timer, start, interval }
    }

    /// The ticks ready now, in ms after `start`.
    fn ready(&mut self) -> Vec<u64> {
        let mut cx = Context::from_waker(noop_waker_ref());
        let mut ticks = Vec::new();
        while let Poll::Ready(at) = self.interval.poll_tick(&mut cx) {
            ticks.push((at - self.start).as_millis() as u64);
            assert!(ticks.len() < 100, "an endless burst");
        }
        ticks
    }

    /// Advances the clock by `by` ms, then takes the ticks ready.
    fn after(&mut self, by: u64) -> Vec<u64> {
        self.clock.advance(ms(by));
        self.timer.advance_clock(Duration::ZERO);
        self.ready()
    }

    /// The first steps every reset case of tokio's shares: ticks at 0 and 300 ms, then 100 ms on.
    fn to_400_ms() -> Case {
        let mut case = Case::new(MissedTickBehavior::Burst);
        assert_eq!(case.ready(), [0]);
        assert_eq!(case.after(100), [0; 0]);
        assert_eq!(case.after(200), [300]);
        assert_eq!(case.after(100), [0; 0]);
        case
    }
}

/// tokio's steps for `missed`: how far the clock moves before each look at the ticks.
fn steps(missed: MissedTickBehavior) -> Vec<(u64, Vec<u64>)> {
    let none = Vec::new;
    match missed {
        MissedTickBehavior::Burst => vec![
            (100, none()),
            (200, vec![300]),
            (650, vec![600, 900]),
            (200, none()),
            (100, vec![1200]),
            (250, vec![1500]),
            (300, vec![1800]),
        ],
        MissedTickBehavior::Delay => vec![
            (100, none()),
            (200, vec![300]),
            (650, vec![600]),
            (100, none()),
            (201, vec![1251]),
            (300, vec![1551]),
            (300, vec![1851]),
        ],
        MissedTickBehavior::Skip => vec![
            (100, none()),
            (200, vec![300]),
            (650, vec![600]),
            (250, vec![1200]),
            (300, vec![1500]),
            (300, vec![1800]),
        ],
    }
}

#[test]
fn burst_delay_and_skip_tick_at_tokios_instants() {
    for missed in [MissedTickBehavior::Burst, MissedTickBehavior::Delay, MissedTickBehavior::Skip] {
        let mut case = Case::new(missed);
        assert_eq!(case.ready(), [0], "{missed:?}");
        for (step, (by, ticks)) in steps(missed).into_iter().enumerate() {
            assert_eq!(case.after(by), ticks, "{missed:?}, step {step}");
        }
    }
}

#[test]
fn reset_ticks_a_period_after_the_reset() {
    let mut case = Case::to_400_ms();
    case.interval.reset();
    assert_eq!(case.after(250), [0; 0]);
    assert_eq!(case.after(50), [701]);
    assert_eq!(case.after(300), [1001]);
}

#[test]
fn reset_immediately_ticks_at_once_then_a_period_apart() {
    let mut case = Case::to_400_ms();
    case.interval.reset_immediately();
    assert_eq!(case.ready(), [401]);
    assert_eq!(case.after(299), [0; 0]);
    assert_eq!(case.after(1), [701]);
}

#[test]
fn reset_after_ticks_after_the_delay_then_a_period_apart() {
    let mut case = Case::to_400_ms();
    case.interval.reset_after(ms(20));
    assert_eq!(case.after(19), [0; 0]);
    assert_eq!(case.after(1), [421]);
    assert_eq!(case.after(300), [721]);
}

#[test]
fn reset_at_ticks_at_the_instant_also_beyond_a_period_then_a_period_apart() {
    let mut case = Case::to_400_ms();
    case.interval.reset_at(case.start + ms(500));
    assert_eq!(case.after(98), [0; 0]);
    assert_eq!(case.after(1), [500]);
    assert_eq!(case.after(300), [800]);
    // Beyond a period: no tick until then.
    case.interval.reset_at(case.start + ms(1_500));
    assert_eq!(case.after(300), [0; 0]);
    assert_eq!(case.after(300), [0; 0]);
    assert_eq!(case.after(99), [0; 0]);
    assert_eq!(case.after(1), [1500]);
    assert_eq!(case.after(300), [1800]);
}
