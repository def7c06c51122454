//! The `async` feature's [`Interval`]: ticks at a fixed period, on a [`Sleep`].
//!
//! ## State
//!
//! An interval knows the instant its next tick is due (`next`), and holds a [`Sleep`] armed at
//! `next` only while `next` is ahead of the timer's clock: a tick already due (the first tick of
//! [`Timer::interval`], the missed ticks of a `Burst`) is delivered at the next poll without the
//! wheel. Taking a tick due at `due` at the clock reading `now` moves `next` to
//! `due + offset`, the offset of its [`MissedTickBehavior`] (`missed_tick.rs`), and re-arms the
//! sleep there ([`Sleep::reset`]), before the poll returns `Ready(due)`.
//!
//! Taking a tick happens inside one `poll_tick` call, with `&mut self`: a `tick()` future dropped
//! before it completes has taken nothing, so `tick()` is cancel-safe (as tokio's).
//!
//! ## Time
//!
//! Every tick obeys the sleep's rules: never before its due time on the timer's clock, at most a
//! tick after when the interval is polled in time. The instant returned is the due time, not the
//! time of the poll. Once the timer has shut down (or is gone), an interval yields no more ticks:
//! `poll_tick` returns `Pending` for good (never a panic), as a dead [`Sleep`] does. So does an
//! interval whose next tick's sleep the timer refuses (its
//! [`max_pending`](crate::TimerBuilder::max_pending) reached, or the tick beyond its range), as a
//! refused re-arm ends a [`Repeat`](crate::Repeat): the sleep is dead, and nothing but a
//! [`reset`](Interval::reset) re-arms it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::clock::{nanos_to_duration, saturating_add};
use crate::missed_tick::MissedTickBehavior;
use crate::sleep::Sleep;
use crate::sync::Arc;
use crate::timer::refs::TimerRef;
use crate::timer::When;
use crate::{ScheduleError, Timer};

impl Timer {
    /// An interval whose first tick is due now and whose ticks are `period` apart, on this timer's
    /// clock; see [`Interval`]. The first [`tick`](Interval::tick) completes at once.
    ///
    /// A `period` shorter than the timer's tick (including zero) is raised to one tick: the timer
    /// cannot tick more often (tokio panics on a zero period; this does not).
    ///
    /// ```
    /// use delaywheel::Timer;
    /// use std::time::Duration;
    ///
    /// let timer = Timer::new();
    /// futures::executor::block_on(async {
    ///     let mut interval = timer.interval(Duration::from_millis(10));
    ///     let first = interval.tick().await; // at once
    ///     let second = interval.tick().await;
    ///     assert_eq!(second - first, Duration::from_millis(10));
    /// });
    /// ```
    pub fn interval(&self, period: Duration) -> Interval {
        self.interval_at(self.now(), period)
    }

    /// An interval whose first tick is due at `start` (on this timer's clock, the mapping of
    /// [`now()`](Timer::now)) and whose ticks are `period` apart; see [`Interval`]. A `start`
    /// already passed is due at once.
    ///
    /// ```
    /// use delaywheel::{ManualClock, Timer};
    /// use std::future::Future;
    /// use std::pin::pin;
    /// use std::task::{Context, Poll};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let timer = Timer::builder().clock(clock.clone()).manual().build();
    /// let ms = Duration::from_millis;
    /// let start = timer.now() + ms(5);
    /// let mut interval = timer.interval_at(start, ms(10));
    /// let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    /// assert!(interval.poll_tick(&mut cx).is_pending());
    /// clock.advance(ms(5));
    /// timer.advance_clock(Duration::ZERO);
    /// assert_eq!(interval.poll_tick(&mut cx), Poll::Ready(start));
    /// clock.advance(ms(10));
    /// timer.advance_clock(Duration::ZERO);
    /// assert_eq!(interval.poll_tick(&mut cx), Poll::Ready(start + ms(10)));
    /// ```
    pub fn interval_at(&self, start: Instant, period: Duration) -> Interval {
        let period = period.max(self.tick());
        let mut interval = Interval {
            timer: self.local_ref(),
            next: start,
            sleep: None,
            period,
            missed: MissedTickBehavior::default(),
            tolerance: crate::missed_tick::on_time(self.tick()),
        };
        interval.arm(self.now(), Taken::Reset);
        interval
    }
}

/// Ticks at a fixed period on a [`Timer`]; created by [`Timer::interval`] and
/// [`Timer::interval_at`]. Needs the `async` feature.
///
/// Each [`tick`](Interval::tick) completes once per period and returns the instant that tick was
/// due; what happens after a late tick is its [`MissedTickBehavior`] (`Burst` by default: missed
/// ticks are delivered back to back, and the original grid kept).
///
/// * **Never early**: a tick completes only once its due time has passed on the timer's clock.
/// * **Exactly once**: each due instant is returned once (with `Skip`, missed ones never).
/// * **Cancel-safe**: dropping a `tick()` future before it completes loses no tick.
/// * **Never a panic**: after its timer shuts down, it yields no more ticks; nor after the timer
///   refuses a tick's wake-up ([`max_pending`](crate::TimerBuilder::max_pending) reached, or the
///   tick beyond the timer's range).
///
/// It is a [`Stream`](futures_core::Stream) of those instants too (never ending). It is `'static`,
/// `Send`, `Sync` and `Unpin`, and holds the timer's shared state, not the timer: kept after its
/// timer is dropped, it keeps the timer's remains (not its tasks' pages) until it is dropped, as a
/// [`Sleep`] does.
///
/// # Cancellation
///
/// Dropping an `Interval` cancels its pending timer task.
///
/// ```
/// use delaywheel::{MissedTickBehavior, Timer};
/// use std::time::Duration;
///
/// let timer = Timer::new();
/// futures::executor::block_on(async {
///     let mut heartbeat = timer.interval(Duration::from_millis(5));
///     heartbeat.set_missed_tick_behavior(MissedTickBehavior::Skip);
///     for _ in 0..3 {
///         heartbeat.tick().await; // at 0, 5 and 10 ms
///     }
/// });
/// ```
#[derive(Debug)]
pub struct Interval {
    timer: Arc<TimerRef>,
    /// When the next tick is due.
    next: Instant,
    /// Armed at `next` while `next` is ahead of the clock; `None` when it is due already.
    sleep: Option<Sleep>,
    period: Duration,
    missed: MissedTickBehavior,
    /// The timer's tick: a tick this late is not missed (`missed_tick.rs`).
    tolerance: Duration,
}

impl Interval {
    /// Completes when the next tick is due, with the instant it was due at.
    ///
    /// Cancel-safe: if the returned future is dropped before it completes, no tick is lost.
    pub async fn tick(&mut self) -> Instant {
        std::future::poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick: `Ready(due)` with the instant it was due at, or `Pending` (with
    /// `cx`'s waker stored, to be woken when it is due).
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        if let Some(sleep) = &mut self.sleep {
            if Pin::new(&mut *sleep).poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
        let Some(live) = self.timer.upgrade().filter(|live| !live.is_shut_down()) else {
            self.die();
            return Poll::Pending;
        };
        let due = self.next;
        let now = live.now();
        let late = now.saturating_duration_since(due).as_nanos();
        let offset = self.missed.next_offset(late, self.period.as_nanos(), self.tolerance.as_nanos());
        self.next = saturating_add(due, nanos_to_duration(offset));
        self.arm(now, Taken::Tick);
        Poll::Ready(due)
    }

    /// Restarts the interval: the next tick is due one period from now (as tokio's
    /// `Interval::reset`), whatever was due before.
    pub fn reset(&mut self) {
        let period = self.period;
        self.restart(|now| saturating_add(now, period));
    }

    /// Restarts the interval with a tick due at once: the next [`tick`](Interval::tick) completes
    /// without waiting, with the instant of this call on the timer's clock, and the ticks after it
    /// follow a period apart (as tokio's `Interval::reset_immediately`; the same as
    /// [`reset_at`](Interval::reset_at)`(timer.now())`).
    pub fn reset_immediately(&mut self) {
        self.restart(|now| now);
    }

    /// Restarts the interval with the next tick due `after` from now, and the ticks after it a
    /// period apart (as tokio's `Interval::reset_after`).
    pub fn reset_after(&mut self, after: Duration) {
        self.restart(|now| saturating_add(now, after));
    }

    /// Restarts the interval with the next tick due at `deadline` on the timer's clock, even if
    /// that is more than a period away, and the ticks after it a period apart (as tokio's
    /// `Interval::reset_at`). Missed ticks from before are dropped. A `deadline` already passed is
    /// a late tick: the next `tick` returns it at once, and the
    /// [`MissedTickBehavior`] decides what follows.
    ///
    /// The task waiting on the last pending poll keeps waiting, for the new deadline; it is woken
    /// at once if that has passed. As after any tick, never early: the tick completes only once
    /// `deadline` has passed.
    ///
    /// ```
    /// use delaywheel::{ManualClock, Timer};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let timer = Timer::builder().clock(clock.clone()).manual().build();
    /// let ms = Duration::from_millis;
    /// let start = timer.now();
    /// futures::executor::block_on(async {
    ///     let mut poll = timer.interval(ms(10));
    ///     assert_eq!(poll.tick().await, start);
    ///     poll.reset_at(start + ms(25)); // back off: the ticks at 10 and 20 ms are dropped
    ///     clock.advance(ms(25));
    ///     timer.advance_clock(Duration::ZERO);
    ///     assert_eq!(poll.tick().await, start + ms(25)); // then 35, 45 ms …
    /// });
    /// ```
    pub fn reset_at(&mut self, deadline: Instant) {
        self.restart(|_| deadline);
    }

    /// Makes the next tick due at what `next` makes of the timer's clock reading.
    fn restart(&mut self, next: impl FnOnce(Instant) -> Instant) {
        let Some(live) = self.timer.upgrade() else {
            self.die();
            return;
        };
        let now = live.now();
        self.next = next(now);
        self.arm(now, Taken::Reset);
    }

    /// What the interval does after a late tick; `Burst` unless set.
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.missed
    }

    /// Sets what the interval does after a late tick, from the next tick taken on.
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.missed = behavior;
    }

    /// The period between ticks (at least the timer's tick).
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Arms the sleep at `next` if that is after `now`; leaves no sleep if it is due already.
    /// After a tick is taken (`Taken::Tick`) the sleep keeps no waker: the task that polls for the
    /// next tick registers its own, as tokio's `Interval` re-arms without re-registering. A
    /// reset keeps the waker of the last pending poll, and wakes it if the tick is due already.
    fn arm(&mut self, now: Instant, after: Taken) {
        if self.next <= now {
            if let Some(mut sleep) = self.sleep.take() {
                if after == Taken::Reset {
                    sleep.wake_registered();
                }
            }
            return;
        }
        match &mut self.sleep {
            Some(sleep) if after == Taken::Tick => sleep.reset_unregistered(self.next),
            Some(sleep) => sleep.reset(self.next),
            None => {
                self.sleep = Some(Sleep::on(Arc::clone(&self.timer), When::At(self.next)));
            }
        }
    }

    /// The timer is gone or shut down: no more ticks.
    fn die(&mut self) {
        let timer = Arc::clone(&self.timer);
        self.sleep = Some(Sleep::dead(timer, self.next, ScheduleError::ShutDown));
    }
}

/// What the interval re-arms its sleep after (`Interval::arm`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Taken {
    /// A tick was taken: the next one wakes only a task that polls for it.
    Tick,
    /// A reset (`Interval::reset` and its kin): the task waiting for a tick stays registered.
    Reset,
}

impl futures_core::Stream for Interval {
    type Item = Instant;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Instant>> {
        self.get_mut().poll_tick(cx).map(Some)
    }
}
