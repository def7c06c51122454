//! The timer's side of the timeouts' tick groups on the core (`sleep/group/`, feature `async`;
//! the facade's half, `timer/groups.rs`, has the protocol): the group's **uncounted** entry, a
//! tick's first timeout's own sleep, and the members' counts.
//!
//! **How each works on the core** (what this file implements):
//!
//! * [`Members`]: the members' counts, beside the core's. `Shared::len` adds
//!   [`Members::pending`] to the core's count; `Shared::stats` adds [`Members::totals`] to the
//!   core's totals (`scheduled`, `fired`, `cancelled`, `abandoned`). A member counts itself in
//!   before it joins and out as it leaves, on the calling thread's stripe of a striped count of
//!   ins and outs (`sync/striped.rs`): a read loads every
//!   out before any in, so `pending` counts every member pending throughout the read and is never
//!   negative (the premise holds: a member's count-in happens-before its count-out, which its
//!   group's firing, its cancel or its group's abandonment makes after it joined).
//! * `schedule_group` and `schedule_solo` go through `insert_lent`: refused after shutdown
//!   before their payload is made (a shut-down timer allocates nothing), then the payload made
//!   (by a closure the caller hands it) and [`Shared::insert`] with before-origin `None`.
//! * `schedule_group`: the group's task made uncounted
//!   (`InlineTask::new_uncounted_in(task, &self.slab)`), inserted at the boundary
//!   word with its stamp drawn `by`. An uncounted payload
//!   (`InlineTask::is_counted` false) raises no bound, and the core counts it neither in `len` nor
//!   in its totals, in every move (insert, claim, cancel, drain: `shard/core/state.rs`, the
//!   timer's `Extra` answers `counts` by the payload). A refusal drops the task here.
//! * `schedule_solo`: the task made with [`Shared::make_task`] (`wake` true), inserted at the
//!   member's own word, counted as any task.
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
#[cfg(feature = "async")]
use super::Payload;
use super::Shared;
#[cfg(feature = "async")]
use crate::deadline::Deadline;
#[cfg(feature = "async")]
use crate::entry::StampBy;
use crate::sync::striped::{InOut, Striped};
use crate::sync::AtomicU64;
#[cfg(feature = "async")]
use crate::sync::Ordering;
#[cfg(feature = "async")]
use crate::ScheduleError;

/// The kind of count-out of a member that left before its group's tick.
const CANCELLED: usize = 0;
/// The kind of count-out of a member whose group fired or was abandoned.
const LEFT: usize = 1;

/// The tick groups' members' counts (module docs).
#[derive(Debug)]
pub(crate) struct Members {
    stripes: Striped<MemberStripe>,
}

/// One stripe of the members' counts. Aligned so that no two stripes share a cache line (128
/// bytes: adjacent-line prefetching pairs lines).
#[derive(Debug)]
#[repr(align(128))]
struct MemberStripe {
    /// Members in (`scheduled`); out as [`CANCELLED`] or [`LEFT`].
    pending: InOut<2>,
    /// Members counted out with their group's firing.
    fired: AtomicU64,
    /// Members counted out with their group's abandonment: `left` = `fired` + `abandoned`.
    abandoned: AtomicU64,
}

/// The members' monotonic totals, added to the core's by `Shared::stats`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MemberTotals {
    pub(crate) scheduled: u64,
    pub(crate) fired: u64,
    pub(crate) cancelled: u64,
    pub(crate) abandoned: u64,
}

impl Default for Members {
    fn default() -> Self {
        let stripe =
            || MemberStripe { pending: InOut::new(), fired: AtomicU64::new(0), abandoned: AtomicU64::new(0) };
        Members { stripes: Striped::new(stripe) }
    }
}

impl Members {
    /// The members pending: every member counted in and not yet out (module docs).
    pub(crate) fn pending(&self) -> usize {
        self.stripes.count(|stripe| &stripe.pending)
    }

    /// The members' totals.
    pub(crate) fn totals(&self) -> MemberTotals {
        use crate::sync::Ordering::Relaxed;
        MemberTotals {
            scheduled: self.stripes.ins(|stripe| &stripe.pending),
            fired: self.stripes.sum(|stripe| &stripe.fired, Relaxed),
            cancelled: self.stripes.total_out(|stripe| &stripe.pending, CANCELLED),
            abandoned: self.stripes.sum(|stripe| &stripe.abandoned, Relaxed),
        }
    }
}

#[cfg(feature = "async")]
impl Members {
    /// Counts one member in, before it joins its group.
    fn count_in(&self) {
        self.stripes.local().pending.count_in();
    }

    /// Undoes [`count_in`](Members::count_in) for a member no one could count out.
    fn uncount_in(&self) {
        self.stripes.local().pending.uncount_in();
    }

    /// Counts `n` members out: cancelled, or with their group, fired or abandoned.
    fn count_out(&self, n: u64, cancelled: bool, fired: bool) {
        let stripe = self.stripes.local();
        stripe.pending.count_out(if cancelled { CANCELLED } else { LEFT }, n);
        if fired {
            stripe.fired.fetch_add(n, Ordering::Relaxed);
        } else if !cancelled {
            stripe.abandoned.fetch_add(n, Ordering::Relaxed);
        }
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
        // (The core files the word as it is: the reading mattered to the word, made already.)
        let _ = now;
        self.insert_lent((at, by), || Payload::new_uncounted_in(task, &self.slab))
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
        let _ = now;
        self.insert_lent(due, || self.make_task(task, true))
    }

    /// [`Shared::insert`] of a future's payload, which `make` makes once the timer is found not
    /// shut down (so that a refused schedule allocates nothing; `None`: its class in the task slab
    /// is full) with no instant before the origin (a timeout's deadline is its word): its
    /// handle, or the refusal with the payload dropped.
    fn insert_lent(
        &self,
        due: (Deadline, StampBy),
        make: impl FnOnce() -> Option<Payload>,
    ) -> Result<LentHandle, ScheduleError> {
        if self.is_shut_down() {
            return Err(ScheduleError::ShutDown);
        }
        let Some(payload) = make() else { return Err(self.full()) };
        match self.insert(due, payload, None) {
            Ok(handle) => Ok(LentHandle(Some(handle))),
            Err((payload, refused)) => {
                drop(payload);
                Err(refused)
            }
        }
    }

    /// Counts a member in before it joins its group; refused by a bounded timer that is full.
    pub(crate) fn count_member_in(&self) -> Result<(), ScheduleError> {
        if !self.raise_bound() {
            return Err(ScheduleError::TooManyPending { max: self.max_pending });
        }
        self.members.count_in();
        Ok(())
    }

    /// Undoes [`count_member_in`](Shared::count_member_in) for a member that never joined.
    pub(crate) fn uncount_member_in(&self) {
        self.members.uncount_in();
        self.lower_bound(1);
    }

    /// Counts `n` members of a group that fired out, and records their lateness from `tick`.
    pub(crate) fn members_fired(&self, n: u64, tick: u64) {
        if n > 0 {
            self.members_out(n, false, true);
            self.lateness.record_n(self.time.ticks, tick, self.time.clock.now_nanos(), n);
        }
    }

    /// Counts `n` members out: left before the tick (`cancelled`), or with their group, fired
    /// (`fired`) or abandoned.
    pub(crate) fn members_out(&self, n: u64, cancelled: bool, fired: bool) {
        if n > 0 {
            self.members.count_out(n, cancelled, fired);
            self.lower_bound(n as usize);
        }
    }
}

#[cfg(all(test, feature = "async"))]
#[path = "group_entries_tests.rs"]
mod tests;
