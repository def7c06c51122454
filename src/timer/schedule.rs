//! Scheduling: a new entry into the wheel, counted in first, and its handle's context.
//!
//! A schedule (any thread, no timer-wide lock), given a delay or an instant ([`When`]), reads the
//! clock once and computes the deadline tick (`Time::deadline`), counts
//! the entry in on the calling thread's counter stripe (`counters.rs`), and adds it to the wheel
//! relative to the *current tick*; it queues the bucket if it lowered its expiration (under the
//! lane lock, before the lowering: `wheel/bucket/expiration.rs`). A task already
//! due goes to the level-0 bucket of its deadline, which is then due, so the next advance fires it
//! (tasks never run inside `schedule`). The insert reads the shutdown flag under the bucket lane's
//! lock (see the parent module's docs on the race with shutdown).

#[cfg(feature = "async")]
use super::LentHandle;
use super::{HandleStripe, Shared, Store, When};
use crate::deadline::Deadline;
use crate::entry::{EntryArena, EntryId, Fresh, StampBy, Ticket};
use crate::sync::Arc;
use crate::wheel::ShutDown;
use crate::{ScheduleError, TimerHandle};

/// Why [`Shared::insert_new`] refused an entry, with what it had of it: the payload it was not
/// yet made from, or the new entry that was not inserted (its task still in it).
pub(crate) enum Refused<P> {
    Payload(P, ScheduleError),
    Fresh(Fresh, ScheduleError),
}

impl Shared {
    /// The one way a task enters the timer ([`Timer::try_schedule`](crate::Timer::try_schedule),
    /// [`try_schedule_at`](crate::Timer::try_schedule_at)): refused after shutdown, else due at the
    /// deadline of `when` on one reading of the clock.
    #[inline(always)]
    pub(crate) fn schedule<F>(&self, when: When, task: F) -> Result<TimerHandle, ScheduleError>
    where
        F: FnOnce() + Send + 'static,
    {
        let (_, scheduled) = self.schedule_reading(when, task, false);
        scheduled.map(|(stripe, ticket)| {
            if let When::At(at) = when {
                // A deadline before the clock's origin is kept for the handle (`before_origin.rs`).
                self.store.before_origin.scheduled(&self.store.arena, &self.time, ticket, at);
            }
            TimerHandle::new(Arc::clone(stripe), ticket)
        })
    }

    /// [`schedule`](Shared::schedule), handing back the counter stripe and the ticket a handle is
    /// made of (a future's handle takes only the ticket: `handle.rs`, `LentHandle`), and the
    /// reading of the clock (nanoseconds) it used, so that a caller that needs "now" too (a
    /// sleep's deadline) reads the clock once. `wake`: the task only hands a waker over when run
    /// (an async sleep's, [`InlineTask::new_in_as`](crate::entry::InlineTask::new_in_as)).
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    pub(crate) fn schedule_reading<F>(
        &self,
        when: When,
        task: F,
        wake: bool,
    ) -> (u64, Result<(&Arc<HandleStripe>, Ticket), ScheduleError>)
    where
        F: FnOnce() + Send + 'static,
    {
        let now = self.time.clock.now_nanos();
        if self.is_shut_down() {
            return (now, Err(ScheduleError::ShutDown));
        }
        let scheduled = match self.time.deadline_on(now, when) {
            Ok(deadline) => self.schedule_filed(now, (deadline, self.time.stamp_by(when)), task, wake),
            Err(refused) => Err(refused),
        };
        (now, scheduled)
    }

    /// [`schedule_reading`](Shared::schedule_reading) for a future (`weak.rs`,
    /// `LiveTimer::try_schedule_reading`): its handle a [`LentHandle`], `task` marked as one that
    /// only hands a waker over.
    #[cfg(feature = "async")]
    #[inline]
    pub(crate) fn schedule_lent<F>(&self, when: When, task: F) -> (u64, Result<LentHandle, ScheduleError>)
    where
        F: FnOnce() + Send + 'static,
    {
        let (now, scheduled) = self.schedule_reading(when, task, true);
        (now, scheduled.map(|(_, ticket)| LentHandle::new(ticket)))
    }

    /// A timeout's own sleep (`groups.rs`, `LiveTimer::schedule_solo`): `task`, counted, at the
    /// deadline filed as `due` says (its word, how its stamp is drawn) on the reading `now`.
    #[cfg(feature = "async")]
    #[inline]
    pub(crate) fn schedule_solo<F>(
        &self,
        now: u64,
        due: (Deadline, StampBy),
        task: F,
    ) -> Result<LentHandle, ScheduleError>
    where
        F: FnOnce() + Send + 'static,
    {
        self.schedule_filed(now, due, task, true).map(|(_, ticket)| LentHandle::new(ticket))
    }

    /// A tick group's entry (`groups.rs`, `LiveTimer::schedule_group`): `task` at `at`, its stamp
    /// drawn `by`, on the reading `now`, **uncounted**. Refused only by a shutdown (or a full
    /// arena); `task` is then dropped here.
    #[cfg(feature = "async")]
    #[inline]
    pub(crate) fn schedule_group<F>(
        &self,
        now: u64,
        (at, by): (Deadline, StampBy),
        task: F,
    ) -> Result<LentHandle, ScheduleError>
    where
        F: FnOnce() + Send + 'static,
    {
        let make = |(), arena: &EntryArena| Fresh::new_uncounted(at, task, arena, by).ok_or(());
        self.insert_made(now, make, false).map(|(_, ticket)| LentHandle::new(ticket))
    }

    /// The rest of [`schedule_reading`](Shared::schedule_reading) once the deadline is filed (its
    /// word, and how its stamp is drawn): also a timeout's own sleep on its arming's reading
    /// (`groups.rs`).
    #[inline]
    pub(super) fn schedule_filed<F>(
        &self,
        now: u64,
        (deadline, by): (Deadline, StampBy),
        task: F,
        wake: bool,
    ) -> Result<(&Arc<HandleStripe>, Ticket), ScheduleError>
    where
        F: FnOnce() + Send + 'static,
    {
        let make = |(), arena: &EntryArena| Fresh::new_as(deadline, task, arena, by, wake).ok_or(());
        self.insert_made(now, make, true)
    }

    /// [`insert_new`](Shared::insert_new) of an entry `make` builds from its task alone: a refused
    /// task is dropped inside, so the refusal is all there is to hand back (also a tick group's
    /// entry, `groups.rs`).
    #[inline]
    pub(super) fn insert_made(
        &self,
        now: u64,
        make: impl FnOnce((), &EntryArena) -> Result<Fresh, ()>,
        counted: bool,
    ) -> Result<(&Arc<HandleStripe>, Ticket), ScheduleError> {
        self.insert_new(now, (), make, counted).map_err(|refused| match refused {
            Refused::Payload(_, error) | Refused::Fresh(_, error) => error,
        })
    }

    /// The rest of a schedule, once the deadline is known: counts the entry in (if `counted`: all
    /// but a tick group's, `sleep/group/`, whose task its claim does not count out), makes it out of
    /// `payload` with `make` (`Err` when the task slab has no room: the payload, if it is still
    /// there), takes a slot and inserts it relative to the tick of `now`. Returns the counter stripe
    /// it was counted on and its ticket.
    #[inline(always)]
    pub(super) fn insert_new<P>(
        &self,
        now: u64,
        payload: P,
        make: impl FnOnce(P, &EntryArena) -> Result<Fresh, P>,
        counted: bool,
    ) -> Result<(&Arc<HandleStripe>, Ticket), Refused<P>> {
        let ticks = self.time.ticks;
        // Counted in before the entry becomes visible, on this thread's stripe (`counters.rs`).
        let stripe = self.counters.local();
        if counted && !stripe.try_schedule() {
            return Err(Refused::Payload(payload, ScheduleError::TooManyPending { max: self.max_pending }));
        }
        let unschedule = || {
            if counted {
                stripe.unschedule();
            }
        };
        let Store { arena, wheel, .. } = &self.store;
        let full = ScheduleError::TooManyPending { max: EntryId::MAX_INDEX as usize };
        // A closure too big for the slot takes a block of the arena's task slab; a class that ran
        // out refuses as a full arena does. The entry's stamp (its generation, and its place among
        // equal deadlines) is drawn here.
        let mut fresh = match make(payload, arena) {
            Ok(fresh) => fresh,
            Err(payload) => {
                unschedule();
                return Err(Refused::Payload(payload, full));
            }
        };
        let Some(id) = arena.alloc() else {
            unschedule();
            return Err(Refused::Fresh(fresh, full));
        };
        // The insert occupies the slot it publishes: one slot lock (`entry/`).
        let queue = |expiration, bucket| self.queue.offer(expiration, bucket);
        if let Err(ShutDown) =
            wheel.schedule(arena, (id, &mut fresh), ticks.floor(now), &self.shut_down, queue)
        {
            // Never occupied, never seen by anyone else: uncount it, give the vacant slot back; the
            // caller drops the task (still in `fresh`) or takes it back.
            arena.free(id);
            unschedule();
            return Err(Refused::Fresh(fresh, ScheduleError::ShutDown));
        }
        let ticket = fresh.ticket(id).expect("an inserted entry occupies its slot");
        Ok((stripe, ticket))
    }
}
