//! The timer's constructors of sleeps: [`Timer::sleep`], [`Timer::sleep_until`] and their `try_`
//! forms, each a [`Sleep`] armed at once on the timer's clock (the parent module has how).

use std::time::{Duration, Instant};

use super::Sleep;
use crate::{ScheduleError, Timer};

impl Timer {
    /// A future that completes `duration` from now on this timer's clock.
    ///
    /// The wake-up is scheduled at once: the deadline is [`now()`](Timer::now) `+ duration` at this
    /// call, not at the first poll. It never completes before that deadline, and completes at the
    /// first tick boundary at or after it (by the next advance if it has passed). This never panics,
    /// and neither does polling: if the timer refuses the wake-up (it is shut down, holds its
    /// [`max_pending`](crate::TimerBuilder::max_pending) tasks, or `duration` is beyond the
    /// timer's range, a second past [`max_delay`](Timer::max_delay), e.g. `Duration::MAX`), the
    /// sleep never completes and [`Sleep::error`] says why. Use [`try_sleep`](Timer::try_sleep) to
    /// get that error at once.
    ///
    /// # Cancellation
    ///
    /// Dropping the future cancels the wake-up task.
    ///
    /// # Wake-ups come after their tick's tasks
    ///
    /// The sleeps due at one tick are woken together, once every task of that tick has run: a
    /// timer task must not block waiting for an async task that such a sleep wakes.
    ///
    /// ```
    /// use delaywheel::Timer;
    /// use std::time::{Duration, Instant};
    ///
    /// let timer = Timer::new();
    /// let start = Instant::now();
    /// futures::executor::block_on(timer.sleep(Duration::from_millis(20)));
    /// assert!(start.elapsed() >= Duration::from_millis(20)); // never early
    /// ```
    pub fn sleep(&self, duration: Duration) -> Sleep {
        Sleep::after(self.local_ref(), self.live(), duration)
    }

    /// A future that completes `duration` from now, or the reason the timer refused it.
    ///
    /// As [`sleep`](Timer::sleep), with the wake-up registered at once.
    ///
    /// # Errors
    ///
    /// The errors of [`try_schedule`](Timer::try_schedule): [`ScheduleError::ShutDown`],
    /// [`ScheduleError::TooManyPending`], [`ScheduleError::DelayTooLong`].
    ///
    /// ```
    /// use delaywheel::{ManualClock, ScheduleError, Timer};
    /// use std::time::Duration;
    ///
    /// let timer = Timer::builder().clock(ManualClock::new()).manual().build();
    /// assert!(timer.try_sleep(Duration::from_millis(5)).is_ok());
    /// assert!(matches!(timer.try_sleep(Duration::MAX), Err(ScheduleError::DelayTooLong { .. })));
    /// timer.shutdown();
    /// assert_eq!(timer.try_sleep(Duration::from_millis(5)).unwrap_err(), ScheduleError::ShutDown);
    /// ```
    pub fn try_sleep(&self, duration: Duration) -> Result<Sleep, ScheduleError> {
        self.sleep(duration).into_result()
    }

    /// A future that completes at `deadline` on this timer's clock.
    ///
    /// `deadline` is read on the timer's own clock, the mapping of [`now()`](Timer::now): on the
    /// system clock it is the same instant as for `std`, on a [`ManualClock`](crate::ManualClock)
    /// its base instant plus a reading. A deadline already passed (or before the clock's origin)
    /// completes by the next advance. Otherwise as [`sleep`](Timer::sleep): never early, never a
    /// panic, dropping it cancels the wake-up.
    ///
    /// ```
    /// use delaywheel::{ManualClock, Timer};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let timer = Timer::builder().clock(clock.clone()).manual().build();
    /// let sleep = timer.sleep_until(timer.now() + Duration::from_millis(5));
    /// clock.advance(Duration::from_millis(5));
    /// timer.advance_clock(Duration::ZERO);
    /// assert!(sleep.is_elapsed());
    /// ```
    pub fn sleep_until(&self, deadline: Instant) -> Sleep {
        Sleep::at(self.local_ref(), self.live(), deadline)
    }

    /// A future that completes at `deadline`, or the reason the timer refused it; as
    /// [`sleep_until`](Timer::sleep_until) and [`try_sleep`](Timer::try_sleep).
    ///
    /// # Errors
    ///
    /// As [`try_sleep`](Timer::try_sleep).
    pub fn try_sleep_until(&self, deadline: Instant) -> Result<Sleep, ScheduleError> {
        self.sleep_until(deadline).into_result()
    }
}
