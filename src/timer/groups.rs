//! The timer's side of the timeouts' tick groups (`sleep/group.rs`, feature `async`): a deadline
//! filed as the timer files a task, the group's uncounted entry, and the members' counts.
//!
//! A tick group is one timer entry whose task wakes every timeout of one thread due in the same
//! tick. The tick is the one the timer would file each member's own entry at
//! ([`TickDue::tick`]: `Time::deadline_on`, the schedule's own arithmetic), and the group's entry
//! is filed with the deadline of the member that made it, so it fires at that tick's boundary, at
//! the advance that would fire any member's own entry. Its entry is **not counted**
//! (`InlineTask::is_counted`): no count-in at the schedule, no count-out at its claim (a fire, a
//! cancel, an abandonment). Each member counts itself instead, on the calling thread's stripe:
//! in as it joins ([`count_member_in`](LiveTimer::count_member_in), which a bounded timer's
//! `max_pending` admits), out as it leaves before the tick (cancelled), or with the whole group
//! when it fires (fired) or is abandoned ([`members_out`](LiveTimer::members_out)). So `len()`
//! counts every armed timeout once, a group left empty counts nothing, and `stats()` counts the
//! members as `scheduled`, `cancelled` and `fired`, never the group's entry.

use super::schedule::Refused;
use super::{LentHandle, LiveTimer, When};
use crate::deadline::Deadline;
use crate::entry::{EntryArena, Fresh, StampBy};
use crate::ScheduleError;

/// A deadline as the timer files a task due then, from one clock reading.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TickDue(Deadline, StampBy);

impl TickDue {
    /// The tick the timer files the deadline at: the members of one tick group share it.
    #[inline]
    pub(crate) fn tick(self) -> u64 {
        self.0.tick()
    }
}

impl LiveTimer {
    /// The deadline `when` names on one reading of the clock (returned, nanoseconds, as
    /// [`try_schedule_reading`](LiveTimer::try_schedule_reading) returns it), or the refusal a
    /// schedule at it would meet: shut down, or beyond the timer's range.
    #[inline]
    pub(crate) fn tick_due(&self, when: When) -> (u64, Result<TickDue, ScheduleError>) {
        let shared = &self.0;
        let now = shared.time.clock.now_nanos();
        if shared.is_shut_down() {
            return (now, Err(ScheduleError::ShutDown));
        }
        let due = shared.time.deadline_on(now, when);
        (now, due.map(|deadline| TickDue(deadline, shared.time.stamp_by(when))))
    }

    /// Schedules a tick group's `task` at `due` (read at `now`), **uncounted** (module docs).
    /// Refused only by a shutdown (or a full arena); `task` is then dropped here.
    #[inline]
    pub(crate) fn schedule_group<F>(
        &self,
        now: u64,
        due: TickDue,
        task: F,
    ) -> Result<LentHandle, ScheduleError>
    where
        F: FnOnce() + Send + 'static,
    {
        let TickDue(deadline, by) = due;
        let make = |(), arena: &EntryArena| Fresh::new_uncounted(deadline, task, arena, by).ok_or(());
        match self.0.insert_new(now, (), make, false) {
            Ok((_, ticket)) => Ok(LentHandle::new(ticket)),
            Err(Refused::Payload(_, error) | Refused::Fresh(_, error)) => Err(error),
        }
    }

    /// Counts a member in on the calling thread's stripe, before it joins its group; refused by a
    /// bounded timer that is full.
    #[inline]
    pub(crate) fn count_member_in(&self) -> Result<(), ScheduleError> {
        match self.0.counters.local().try_schedule() {
            true => Ok(()),
            false => Err(ScheduleError::TooManyPending { max: self.0.max_pending }),
        }
    }

    /// Undoes [`count_member_in`](LiveTimer::count_member_in) on the same thread, for a member
    /// that never joined (its group had fired, or could not be scheduled).
    #[inline]
    pub(crate) fn uncount_member_in(&self) {
        self.0.counters.local().unschedule();
    }

    /// Counts `n` members out on the calling thread's stripe: left before the tick (`cancelled`),
    /// or with their group, fired (`fired`) or abandoned.
    #[inline]
    pub(crate) fn members_out(&self, n: u64, cancelled: bool, fired: bool) {
        if n > 0 {
            self.0.counters.local().members_out(n, cancelled, fired);
        }
    }
}
