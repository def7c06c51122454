//! Scheduling on the core: a task made into its payload (`InlineTask`, in the timer's task slab
//! when over 16 bytes), a stamp drawn as `entry/stamps.rs` says, and one [`Core::schedule_with`]
//! into the calling thread's shard.
//!
//! **Shutdown.** The core's shard reads its closed flag in the insert's critical section
//! (`shard/core/shutdown.rs`): a schedule racing `Timer::stop`'s `Core::close` is drained by it
//! or refused with its payload handed back, never stranded. The timer's own flag is read first,
//! as a shortcut only.
//!
//! **A bounded timer** raises its gauge before the insert (a CAS loop: never past
//! `max_pending`), lowers it again if the insert is refused; whoever takes the entry out lowers
//! it (a cancel under the shard's lock, a claim or a drain after).
//!
//! **Before the origin.** A deadline at an instant before the clock's origin has the origin's word;
//! its instant is kept by stamp in the shard's extra, in the insert's critical section, for the
//! handle's `deadline` and the batch's order.
//!
//! [`Core::schedule_with`]: crate::shard::core::Core::schedule_with

#[cfg(feature = "async")]
use super::handle::LentHandle;
use super::handle::{self, TimerHandle};
use super::{CoreHandle, Payload, Shared};
use crate::deadline::Deadline;
use crate::entry::StampBy;
use crate::shard::wheel::{Refusal, Refused};
use crate::sync::Ordering;
use crate::timer::{ScheduleError, When};

impl Shared {
    /// The one way a task enters the timer ([`Timer::try_schedule`](crate::Timer::try_schedule),
    /// [`try_schedule_at`](crate::Timer::try_schedule_at)): refused after shutdown, else due at the
    /// deadline of `when` on one reading of the clock.
    #[inline]
    pub(crate) fn schedule<F>(&self, when: When, task: F) -> Result<TimerHandle, ScheduleError>
    where
        F: FnOnce() + Send + 'static,
    {
        self.schedule_reading(when, task, false).1.map(TimerHandle::new)
    }

    /// [`schedule`](Shared::schedule) for a future (`weak.rs`, `LiveTimer::try_schedule_reading`):
    /// its handle a [`LentHandle`], `task` marked as one that only hands a waker over; with the
    /// clock reading it used.
    #[cfg(feature = "async")]
    #[inline]
    pub(crate) fn schedule_lent<F>(&self, when: When, task: F) -> (u64, Result<LentHandle, ScheduleError>)
    where
        F: FnOnce() + Send + 'static,
    {
        let (now, scheduled) = self.schedule_reading(when, task, true);
        (now, scheduled.map(|handle| LentHandle(Some(handle))))
    }

    /// Reads the clock once and schedules `task` at `when` on that reading (`wake`: it only hands
    /// a waker over when run): the reading, and the handle or the refusal.
    #[inline]
    fn schedule_reading<F>(&self, when: When, task: F, wake: bool) -> (u64, Result<CoreHandle, ScheduleError>)
    where
        F: FnOnce() + Send + 'static,
    {
        let now = self.time.clock.now_nanos();
        if self.is_shut_down() {
            return (now, Err(ScheduleError::ShutDown));
        }
        let deadline = match self.time.deadline_on(now, when) {
            Ok(deadline) => deadline,
            Err(refused) => return (now, Err(refused)),
        };
        let Some(payload) = self.make_task(task, wake) else {
            return (now, Err(self.full()));
        };
        let before = self.before_origin(when);
        (
            now,
            self.insert((deadline, self.time.stamp_by(when)), payload, before).map_err(|(task, error)| {
                drop(task);
                error
            }),
        )
    }

    /// `task` made into a payload (in the task slab if over 16 bytes): `None` when the slab's
    /// class for it has no block left (the task dropped).
    #[inline]
    pub(super) fn make_task<F>(&self, task: F, wake: bool) -> Option<Payload>
    where
        F: FnOnce() + Send + 'static,
    {
        Payload::new_in_as(task, &self.slab, wake)
    }

    /// The refusal of a full timer (its slots or its task slab's blocks).
    pub(super) fn full(&self) -> ScheduleError {
        ScheduleError::TooManyPending { max: crate::builder::MAX_CAPACITY }
    }

    /// The instant of `when` as signed nanoseconds from the clock's base, if it is before the
    /// clock's origin (module docs, "Before the origin").
    #[inline]
    pub(super) fn before_origin(&self, when: When) -> Option<i64> {
        match when {
            When::At(_) => handle::before_origin(&self.time, when),
            When::After(_) => None,
        }
    }

    /// The insert every schedule makes (module docs): `payload` at `deadline`, its stamp drawn
    /// `by`, into the calling thread's shard; a counted payload raises a bounded timer's gauge
    /// first; `before` is kept by stamp in the shard's extra. The payload back with the refusal.
    #[inline]
    pub(super) fn insert(
        &self,
        (deadline, by): (Deadline, StampBy),
        payload: Payload,
        before: Option<i64>,
    ) -> Result<CoreHandle, (Payload, ScheduleError)> {
        let counted = payload.is_counted();
        if counted && !self.raise_bound() {
            return Err((payload, ScheduleError::TooManyPending { max: self.max_pending }));
        }
        let stamp = match by {
            StampBy::Timer => self.stamps.shared(),
            StampBy::Thread => self.stamps.thread(),
        };
        let scheduled = match before {
            None => self.core.schedule(deadline, stamp, payload),
            Some(exact) => self.core.schedule_with(deadline, stamp, payload, |extra| {
                extra.before_origin.insert(stamp, exact);
            }),
        };
        scheduled.map_err(|Refused { payload, reason }| {
            if counted {
                self.lower_bound(1);
            }
            let error = match reason {
                Refusal::Closed => ScheduleError::ShutDown,
                Refusal::Full | Refusal::Stamp => self.full(),
            };
            (payload, error)
        })
    }

    /// Raises a bounded timer's gauge by one unless it is at `max_pending` (`false`): a CAS loop,
    /// so a refused attempt never shows. `true` on an unbounded timer.
    #[inline]
    pub(super) fn raise_bound(&self) -> bool {
        let Some(bound) = &self.bound else { return true };
        let max = self.max_pending;
        bound
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |pending| {
                (pending < max).then_some(pending + 1)
            })
            .is_ok()
    }

    /// Lowers a bounded timer's gauge by `n` (entries out of the core, or never in it).
    #[inline]
    pub(super) fn lower_bound(&self, n: usize) {
        if let (Some(bound), true) = (&self.bound, n > 0) {
            bound.fetch_sub(n, Ordering::Relaxed);
        }
    }
}
