//! The timer's side of the timeouts' tick groups on the core (`sleep/group/`, feature `async`;
//! the facade's half, `timer/groups.rs`, has the protocol): the group's **uncounted** entry, a
//! tick's first timeout's own sleep, and the members' counts.
//!
//! **How each works on the core** (what this file implements):
//!
//! * [`Members`]: the members' counts, beside the core's. `Shared::len` adds
//!   [`Members::pending`] to the core's count; `Shared::stats` adds [`Members::totals`] to the
//!   core's totals (`scheduled`, `fired`, `cancelled`, `abandoned`). A member counts itself in
//!   before it joins and out as it leaves, so `pending` counts every member pending throughout a
//!   read (striped in and out counts, `sync/striped.rs`, as `counters.rs` keeps them, or one pair
//!   of atomics: the members' own choice).
//! * `schedule_group`: the group's task made uncounted
//!   (`InlineTask::new_uncounted_in(task, &self.slab)`), then [`Shared::insert`] at the boundary
//!   word with its stamp drawn `by`, before-origin `None`. An uncounted payload
//!   (`InlineTask::is_counted` false) raises no bound, and the core counts it neither in `len` nor
//!   in its totals, in every move (insert, claim, cancel, drain: `shard/core/state.rs`, the
//!   timer's `Extra` answers `counts` by the payload). A refusal drops the task here.
//! * `schedule_solo`: the task made with [`Shared::make_task`] (`wake` true), then
//!   [`Shared::insert`] at the member's own word, counted as any task.
//! * `count_member_in` / `uncount_member_in`: the members' count in (refused on a bounded timer
//!   whose gauge, `Shared::bound`, is at `max_pending`: raise it with a CAS loop as
//!   `Shared::insert` does) and its undo (the gauge lowered too).
//! * `members_fired`: `members_out(n, false, true)`, and their lateness from `tick`
//!   (`self.lateness.record_n(self.time.ticks, tick, self.time.clock.now_nanos(), n)`).
//! * `members_out`: counted out as cancelled, fired or abandoned; the bounded gauge lowered by
//!   `n`.
//!
//! The group's entry is cancelled through its `LentHandle` (`handle.rs`), claimed by the advance
//! and drained by the stop as any entry: none of those counts it, as it was never counted.
//!
//! Core and `Shared` calls this file may use: `Shared::insert`, `Shared::make_task`,
//! `self.slab`, `self.bound`, `self.max_pending`, `self.lateness`, `self.time`. Nothing here takes
//! a shard's lock itself.

#[cfg(feature = "async")]
use super::handle::LentHandle;
use super::Shared;
#[cfg(feature = "async")]
use crate::deadline::Deadline;
#[cfg(feature = "async")]
use crate::entry::StampBy;
#[cfg(feature = "async")]
use crate::ScheduleError;

/// The tick groups' members' counts (module docs).
#[derive(Debug, Default)]
pub(crate) struct Members {}

/// The members' monotonic totals, added to the core's by `Shared::stats`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MemberTotals {
    pub(crate) scheduled: u64,
    pub(crate) fired: u64,
    pub(crate) cancelled: u64,
    pub(crate) abandoned: u64,
}

impl Members {
    /// The members pending: every member counted in and not yet out (module docs).
    pub(crate) fn pending(&self) -> usize {
        0
    }

    /// The members' totals.
    pub(crate) fn totals(&self) -> MemberTotals {
        MemberTotals::default()
    }
}

#[cfg(feature = "async")]
impl Shared {
    /// A tick group's entry (`groups.rs`, `LiveTimer::schedule_group`): `task` at `at`, its stamp
    /// drawn `by`, on the reading `now`, **uncounted**. Refused only by a shutdown (or a full
    /// core); `task` is then dropped here.
    pub(crate) fn schedule_group<F>(
        &self,
        now: u64,
        (at, by): (Deadline, StampBy),
        task: F,
    ) -> Result<LentHandle, ScheduleError>
    where
        F: FnOnce() + Send + 'static,
    {
        let _ = (now, at, by, task);
        todo!("on_core groups: schedule_group")
    }

    /// A timeout's own sleep (`LiveTimer::schedule_solo`): `task`, counted, at the deadline filed
    /// as `due` says on the reading `now`.
    pub(crate) fn schedule_solo<F>(
        &self,
        now: u64,
        due: (Deadline, StampBy),
        task: F,
    ) -> Result<LentHandle, ScheduleError>
    where
        F: FnOnce() + Send + 'static,
    {
        let _ = (now, due, task);
        todo!("on_core groups: schedule_solo")
    }

    /// Counts a member in before it joins its group; refused by a bounded timer that is full.
    pub(crate) fn count_member_in(&self) -> Result<(), ScheduleError> {
        todo!("on_core groups: count_member_in")
    }

    /// Undoes [`count_member_in`](Shared::count_member_in) for a member that never joined.
    pub(crate) fn uncount_member_in(&self) {
        todo!("on_core groups: uncount_member_in")
    }

    /// Counts `n` members of a group that fired out, and records their lateness from `tick`.
    pub(crate) fn members_fired(&self, n: u64, tick: u64) {
        let _ = (n, tick);
        todo!("on_core groups: members_fired")
    }

    /// Counts `n` members out: left before the tick (`cancelled`), or with their group, fired
    /// (`fired`) or abandoned.
    pub(crate) fn members_out(&self, n: u64, cancelled: bool, fired: bool) {
        let _ = (n, cancelled, fired);
        todo!("on_core groups: members_out")
    }
}
