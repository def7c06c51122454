//! [`LiveTimer`] and [`WeakTimer`]: how the crate's extras reach a timer they do not own.
//!
//! A future (`sleep.rs`, `interval.rs`, `timeout.rs`) or a repetition (`repeating.rs`) needs its
//! timer after the call that made it returned, and must not keep the timer running: dropping a
//! [`Timer`] stops its driver and drops its tasks. What an extra reaches is a [`LiveTimer`]: the
//! operations of the public [`Timer`] API that need no ownership of the timer (`now`, `tick`,
//! `max_delay`, `try_schedule`, `try_schedule_at`), with the meaning they have there, plus whether
//! the timer is shutting down. `Timer`'s own methods of those names call these (a `Timer` holds its
//! `LiveTimer`), so each is written once. Nothing else of the timer's state is reachable through
//! it: the extras stand on the public API. A repetition holds a [`WeakTimer`] and upgrades it (its
//! closure lives in the timer's entries, where a strong reference would be a cycle: timer → wheel →
//! entry → closure → timer); the futures hold a strong one, lent only until the timer shuts down
//! (`refs.rs`).
//!
//! The whole seam between `timer/` and the extras: `Timer::live` and the two types here, the
//! futures' per-thread references (`refs.rs`, `Timer::local_ref`), the inert handle a refused
//! schedule returns (`TimerHandle::refused`), the futures' handles (`handle.rs`,
//! `LentHandle`: a ticket, cancelled or reset through the `LiveTimer` the future holds), the
//! timer's identity a sleep's task keeps to know whether it runs as an unfired task
//! (`unfired.rs`, `TimerId`), and the timeouts' tick groups' deadlines, uncounted entries and
//! member counts (`groups.rs`).
//!
//! This seam is crate-internal. A public weak timer would be a second public timer type with a
//! contract of its own (what `schedule` on a dropped timer means, what an upgraded one may do), for
//! needs the crate's own extras already serve; users hold a `Timer` (or an `Arc` of one).

use std::time::{Duration, Instant};

#[cfg(feature = "async")]
use super::LentHandle;
use super::{Shared, When};
use crate::sync::{downgrade, Arc, Weak};
use crate::{ScheduleError, TimerHandle};

#[cfg(doc)]
use super::Timer;

/// A timer that is alive: the part of the [`Timer`] API that an extra may use without owning it.
pub(crate) struct LiveTimer(pub(super) Arc<Shared>);

impl LiveTimer {
    /// [`Timer::now`].
    #[inline]
    pub(crate) fn now(&self) -> Instant {
        self.0.time().clock.now_instant()
    }

    /// The timer's identity: a wake-up task keeps it to tell a run by the timer from a run of its
    /// [`UnfiredTask`](crate::UnfiredTask) after a shutdown (`unfired.rs`).
    #[cfg(feature = "async")]
    pub(crate) fn id(&self) -> super::unfired::TimerId {
        self.0.timer_id()
    }

    /// Under loom: moves the system clock's reading by `by` (`ClockSource::advance_model`).
    #[cfg(delaywheel_loom)]
    pub(crate) fn advance_model_clock(&self, by: Duration) {
        self.0.time().clock.advance_model(by);
    }

    /// [`Timer::tick`].
    pub(crate) fn tick(&self) -> Duration {
        self.0.time().ticks.as_duration()
    }

    /// [`Timer::max_delay`].
    pub(crate) fn max_delay(&self) -> Duration {
        let time = self.0.time();
        time.ticks.max_delay(time.clock.now_nanos())
    }

    /// Whether [`Timer::shutdown`] (or the drop of the timer) has begun: every schedule is refused.
    #[cfg(feature = "async")]
    pub(crate) fn is_shut_down(&self) -> bool {
        self.0.is_shut_down()
    }

    /// [`Timer::try_schedule`].
    #[inline]
    pub(crate) fn try_schedule<F>(&self, delay: Duration, task: F) -> Result<TimerHandle, ScheduleError>
    where
        F: FnOnce() + Send + 'static,
    {
        self.0.schedule(When::After(delay), task)
    }

    /// [`Timer::try_schedule_at`].
    #[inline]
    pub(crate) fn try_schedule_at<F>(&self, deadline: Instant, task: F) -> Result<TimerHandle, ScheduleError>
    where
        F: FnOnce() + Send + 'static,
    {
        self.0.schedule(When::At(deadline), task)
    }

    /// [`Timer::try_schedule`] or [`Timer::try_schedule_at`] as `when` says, for a future: its
    /// handle is a [`LentHandle`] (no reference count of its own), with the clock reading the
    /// schedule used (nanoseconds; [`reading_instant`](LiveTimer::reading_instant) makes it the
    /// instant [`Timer::now`] would have returned): one reading for both. `task` only hands the
    /// future's waker over when run (it is marked so: the waker of a drive future's sleep may fire
    /// it, `timer/advance.rs`).
    #[cfg(feature = "async")]
    #[inline]
    pub(crate) fn try_schedule_reading<F>(
        &self,
        when: When,
        task: F,
    ) -> (u64, Result<LentHandle, ScheduleError>)
    where
        F: FnOnce() + Send + 'static,
    {
        self.0.schedule_lent(when, task)
    }

    /// The instant of a reading of this timer's clock in nanoseconds (as
    /// [`try_schedule_reading`](LiveTimer::try_schedule_reading) returns one).
    #[cfg(feature = "async")]
    pub(crate) fn reading_instant(&self, reading: u64) -> Instant {
        self.0.time().clock.reading_instant(reading)
    }

    /// A weak reference to this timer.
    pub(crate) fn downgrade(&self) -> WeakTimer {
        WeakTimer(downgrade(&self.0))
    }
}

/// A reference to a timer that does not keep it alive.
pub(crate) struct WeakTimer(Weak<Shared>);

impl WeakTimer {
    /// The timer, while its state is alive: until it is dropped and its driver has exited.
    #[inline]
    pub(crate) fn upgrade(&self) -> Option<LiveTimer> {
        self.0.upgrade().map(LiveTimer)
    }
}
