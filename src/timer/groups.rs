//! The timer's side of the timeouts' tick groups (`sleep/group/`, feature `async`): a deadline
//! filed as the timer files a task, the group's uncounted entry, the sleep of a tick's first
//! timeout on its thread (scheduled on its arming's clock reading), and the members' counts.
//!
//! A tick group is one timer entry whose task wakes every timeout of one thread due in the same
//! tick. The tick is the one the timer would file each member's own entry at
//! ([`TickDue::key`]: `Time::deadline_on`, the schedule's own arithmetic), and the group's entry
//! is filed at that tick's boundary itself (the latest deadline the tick holds,
//! `TickLength::boundary`), so it fires at the advance that reaches the boundary, as any member's own
//! entry would at the latest. Filed with the deadline of the member that made it instead, it could
//! fire before a later member's deadline in the same tick: an advance run mid-tick for a deadline
//! passed there fires the tick's entries whose exact deadlines have passed (`advance.rs`, "Passed
//! deadlines mid-tick"). Its entry is **not counted**
//! (`InlineTask::is_counted`): no count-in at the schedule, no count-out at its claim (a fire, a
//! cancel, an abandonment). Each member counts itself instead, on the calling thread's stripe:
//! in as it joins ([`count_member_in`](LiveTimer::count_member_in), which a bounded timer's
//! `max_pending` admits), out as it leaves before the tick (cancelled), or with the whole group
//! when it fires (fired) or is abandoned ([`members_out`](LiveTimer::members_out)). So `len()`
//! counts every armed timeout once, a group left empty counts nothing, and `stats()` counts the
//! members as `scheduled`, `cancelled` and `fired`, never the group's entry; the group's firing
//! records each member's lateness ([`members_fired`](LiveTimer::members_fired): its claim is not
//! counted) from the first tick boundary at or after their deadlines, which they share (a group
//! holds deadlines passed within the tick under way, filed a tick early, or none:
//! [`TickDue::key`]), as a task's own entry would, and `pending_per_level`, a walk of the
//! buckets, counts its entry there as any other.

use super::{LentHandle, LiveTimer, When};
use crate::deadline::Deadline;
use crate::entry::StampBy;
use crate::ScheduleError;

/// A lazily armed timeout's deadline on one clock reading, as the timer files it, and the
/// deadline of its tick group's entry: the boundary of the tick the timer files it at.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TickDue {
    own: Deadline,
    boundary: Deadline,
    by: StampBy,
}

impl TickDue {
    /// The tick group the member belongs in: the tick the timer files it at, and whether its
    /// deadline passed within the tick under way (filed at the tick before its own: `deadline.rs`,
    /// `P`). The members of one group share both, so they share the first tick boundary at or
    /// after their deadlines too ([`late_from`](TickDue::late_from)), as their lateness needs.
    #[inline]
    pub(crate) fn key(self) -> u64 {
        // (A deadline tick has bits to spare: `deadline::MAX_DEADLINE_TICK`.)
        self.own.tick() << 1 | u64::from(self.own.passed_mid_tick())
    }

    /// The first tick boundary at or after the member's deadline: what its firing's lateness
    /// counts from, as a task's (`stats.rs`; one tick after [`key`](TickDue::key)'s for a deadline
    /// passed within the tick under way).
    #[inline]
    pub(crate) fn late_from(self) -> u64 {
        self.own.rounded_up_tick()
    }
}

impl LiveTimer {
    /// The deadline `when` names on one reading of the clock (returned, nanoseconds, as
    /// [`try_schedule_reading`](LiveTimer::try_schedule_reading) returns it), or the refusal a
    /// schedule at it would meet: shut down, or beyond the timer's range.
    #[inline]
    pub(crate) fn tick_due(&self, when: When) -> (u64, Result<TickDue, ScheduleError>) {
        let (shared, time) = (&self.0, self.0.time());
        let now = time.clock.now_nanos();
        if shared.is_shut_down() {
            return (now, Err(ScheduleError::ShutDown));
        }
        let due = time.deadline_on(now, when).map(|own| {
            // The boundary word of the member's tick: the latest deadline of that tick, so that
            // no advance fires the group before any member's deadline (module docs). (A tick a
            // deadline is filed at always has one: the member's own word is never used.)
            let boundary = time.ticks.boundary(own.tick()).unwrap_or(own);
            TickDue { own, boundary, by: time.stamp_by(when) }
        });
        (now, due)
    }

    /// Schedules a tick group's `task` at `due` (read at `now`), **uncounted** (module docs).
    /// Refused only by a shutdown (or a full timer: `MAX_CAPACITY`); `task` is then dropped here.
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
        self.0.schedule_group(now, (due.boundary, due.by), task)
    }

    /// Schedules the waker's `task` of a timeout armed with a sleep of its own (the first of its
    /// tick on its thread: `sleep/group/member.rs`) at its own deadline `due` (read at `now`),
    /// counted as any task: what [`try_schedule_reading`](LiveTimer::try_schedule_reading) does
    /// after its clock reading, on the reading the arming made.
    #[inline]
    pub(crate) fn schedule_solo<F>(
        &self,
        now: u64,
        due: TickDue,
        task: F,
    ) -> Result<LentHandle, ScheduleError>
    where
        F: FnOnce() + Send + 'static,
    {
        self.0.schedule_solo(now, (due.own, due.by), task)
    }

    /// Counts a member in on the calling thread's stripe, before it joins its group; refused by a
    /// bounded timer that is full.
    #[inline]
    pub(crate) fn count_member_in(&self) -> Result<(), ScheduleError> {
        self.0.count_member_in()
    }

    /// Undoes [`count_member_in`](LiveTimer::count_member_in) on the same thread, for a member
    /// that never joined (its group had fired, or could not be scheduled).
    #[inline]
    pub(crate) fn uncount_member_in(&self) {
        self.0.uncount_member_in();
    }

    /// Counts `n` members of a group that fired out on the calling thread's stripe, and records
    /// their lateness from `tick`, the first tick boundary at or after each one's deadline
    /// ([`TickDue::late_from`], `stats.rs`).
    #[inline]
    pub(crate) fn members_fired(&self, n: u64, tick: u64) {
        self.0.members_fired(n, tick);
    }

    /// Counts `n` members out on the calling thread's stripe: left before the tick (`cancelled`),
    /// or with their group, fired (`fired`) or abandoned.
    #[inline]
    pub(crate) fn members_out(&self, n: u64, cancelled: bool, fired: bool) {
        self.0.members_out(n, cancelled, fired);
    }
}
