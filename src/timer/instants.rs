//! Deadlines as instants: [`Timer::now`], [`Timer::schedule_at`], [`Timer::next_wakeup`].
//!
//! The timer's clock counts nanoseconds from its origin; an [`Instant`] is mapped onto that count
//! through the clock's base instant (`clock/`, "Instants"): the system clock's origin, or the
//! instant a `ManualClock` was created. So instants read from [`Timer::now`] and the deadlines
//! built from them agree on both kinds of clock, and a manual clock stays deterministic (the base
//! only names its readings). An instant before the base is a deadline already passed.

use std::time::Instant;

use super::Timer;
use crate::{ScheduleError, TimerHandle};

impl Timer {
    /// The timer's clock, as an [`Instant`]: with the system clock, `Instant::now()`; with a
    /// [`ManualClock`](crate::ManualClock), the instant it was created plus its reading. Deadlines
    /// given as instants ([`schedule_at`](Timer::schedule_at),
    /// [`TimerHandle::reset_at`](crate::TimerHandle::reset_at)) and read back as instants
    /// ([`TimerHandle::deadline`](crate::TimerHandle::deadline), [`next_wakeup`](Timer::next_wakeup))
    /// are on this clock.
    ///
    /// ```
    /// use delaywheel::{ManualClock, Timer};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let timer = Timer::builder().clock(clock.clone()).manual().build();
    /// let start = timer.now();
    /// clock.advance(Duration::from_millis(7));
    /// assert_eq!(timer.now() - start, Duration::from_millis(7));
    /// ```
    pub fn now(&self) -> Instant {
        self.live().now()
    }

    /// Schedules `task` to run once, at `deadline` on the timer's clock ([`now`](Timer::now)).
    ///
    /// It runs at the first tick boundary at or after `deadline`: never early, at most one tick
    /// late (plus the time the driver needs to wake). A deadline already passed (also one before the
    /// clock's origin, however far) runs at the next advance of the clock, never inside this call.
    ///
    /// Like [`schedule`](Timer::schedule) this never panics for any input (only a refused closure's
    /// own `Drop` can, as there): when the task cannot be scheduled
    /// (shut down, [`max_pending`](crate::TimerBuilder::max_pending) reached, or `deadline` beyond the
    /// last representable tick, over a second past `now() + max_delay()`) the task is dropped unrun
    /// and the returned handle is inert. Use [`try_schedule_at`](Timer::try_schedule_at) to learn why.
    ///
    /// ```
    /// use delaywheel::{ManualClock, Timer};
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
    /// let ran = Arc::new(AtomicBool::new(false));
    /// let r = Arc::clone(&ran);
    /// let at = timer.now() + Duration::from_millis(30);
    /// let handle = timer.schedule_at(at, move || r.store(true, Ordering::SeqCst));
    /// assert_eq!(handle.deadline(), Some(at));
    /// clock.advance(Duration::from_millis(29));
    /// timer.advance_clock(Duration::ZERO);
    /// assert!(!ran.load(Ordering::SeqCst)); // never early
    /// clock.advance(Duration::from_millis(1));
    /// timer.advance_clock(Duration::ZERO);
    /// assert!(ran.load(Ordering::SeqCst));
    /// ```
    pub fn schedule_at<F>(&self, deadline: Instant, task: F) -> TimerHandle
    where
        F: FnOnce() + Send + 'static,
    {
        self.try_schedule_at(deadline, task).unwrap_or_else(|_| TimerHandle::refused())
    }

    /// Schedules `task` to run once, at `deadline` on the timer's clock; see
    /// [`schedule_at`](Timer::schedule_at).
    ///
    /// # Errors
    ///
    /// As [`try_schedule`](Timer::try_schedule), in its order: [`ScheduleError::ShutDown`],
    /// [`ScheduleError::DelayTooLong`] for a deadline beyond the last representable tick (its
    /// `delay` is the deadline's distance from now), [`ScheduleError::TooManyPending`]. A deadline in
    /// the past is not an error: it runs at the next advance. The task is dropped unrun on error.
    pub fn try_schedule_at<F>(&self, deadline: Instant, task: F) -> Result<TimerHandle, ScheduleError>
    where
        F: FnOnce() + Send + 'static,
    {
        self.live().try_schedule_at(deadline, task)
    }

    /// The next instant at which [`advance_clock`](Timer::advance_clock) has work: the tick at
    /// which the earliest queued bucket is due, on the timer's clock ([`now`](Timer::now)).
    ///
    /// `None` when no task is pending. Otherwise never later than the tick the earliest pending
    /// task is due at; it may be earlier (a bucket emptied by cancels, or by resets that moved its
    /// tasks later, or a coarse bucket that cascades its tasks before they are due), and it may be
    /// in the past (work is due now). A simulation on a [`ManualClock`](crate::ManualClock) can
    /// jump the clock straight to it, also while another thread advances the timer: during an
    /// advance it is the wheel's cursor (the advance's work is there). A snapshot: a concurrent
    /// schedule, cancel or advance may change it at once. Tasks an advance has taken out of the
    /// wheel (the batch being fired, or tasks waiting for an executor thread) need no further
    /// advance and do not count here; while they are all that is pending, it is the wheel's cursor
    /// ([`current_time`](Timer::current_time)).
    ///
    /// ```
    /// use delaywheel::{ManualClock, Timer};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new();
    /// let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
    /// assert_eq!(timer.next_wakeup(), None);
    /// let at = timer.now() + Duration::from_millis(40);
    /// timer.schedule_at(at, || {});
    /// let next = timer.next_wakeup().unwrap();
    /// assert!(next <= at);
    /// clock.advance(next - timer.now());
    /// timer.advance_clock(Duration::ZERO);
    /// ```
    pub fn next_wakeup(&self) -> Option<Instant> {
        if self.is_empty() {
            return None;
        }
        self.next_work()
    }

    /// [`next_wakeup`](Timer::next_wakeup) whether or not a task is pending (also for
    /// [`DelayQueue::next_deadline`](crate::queue::DelayQueue::next_deadline)): the tick of the
    /// earliest queued bucket, else the wheel's cursor.
    ///
    /// An advance in progress refiles the entries of a coarse bucket into finer ones under their
    /// shard's lock and offers the finer buckets to the queue after the unlock, so in between the
    /// queue's head may be a later bucket: the head alone could then answer past a pending task's
    /// tick, and a simulation jumping the clock there would fire that task late. So the head is
    /// read only while no advance runs; while one does (on another thread, or on this one: a task
    /// calling this), the answer is the wheel's cursor, where that advance's work is
    /// (`Shared::next_work_tick`). The loom model `early_cascade::next_wakeup_racing_a_cascade_in_flight`
    /// races it; no seeded fault reads the head while an advance runs (docs/loom.md).
    pub(crate) fn next_work(&self) -> Option<Instant> {
        let tick = self.shared().next_work_tick();
        let time = self.shared().time();
        time.clock.tick_instant(time.ticks, tick)
    }
}
