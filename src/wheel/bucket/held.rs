//! What the holder of an entry (`entry/`: a visit's cascade buffer, a reset) does with a bucket:
//! re-add the entry by the deadline in its slot ([`TimerTaskList::readd`]), and, for a reset, find
//! the pending entry in a lane and take it out to hold it ([`TimerTaskList::retarget`]).

use super::{take_out, StagePlan, TimerTaskList};
use crate::deadline::Deadline;
use crate::entry::location::LaneKey;
use crate::entry::{EntryArena, EntryId, EntryState, Retargeted, Status, Target, Ticket};
use crate::sync::{AtomicBool, Ordering};

/// Why [`TimerTaskList::readd`] did not insert a held entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The entry is no longer pending (cancelled while held).
    NotPending,
    /// A reset moved the entry to this deadline after it was placed: place it again by this one.
    Moved(Deadline),
    /// The timer is shutting down (only with the flag: a reset's re-add).
    ShutDown,
}

impl TimerTaskList {
    /// Re-adds a held, occupied entry (a cascade, a reset: `entry/`), placed by `deadline`, as
    /// [`insert_new`](TimerTaskList::insert_new): `Ok` with the tick it queued the bucket at (if
    /// it lowered its expiration), or why not
    /// ([`Refused`]): the entry is no longer pending (cancelled in transit), a reset wrote another
    /// deadline into its slot since it was placed (`entry/`, "Re-arming"), or (with `shut_down`,
    /// a reset's re-add) the timer is shutting down.
    #[inline]
    pub(crate) fn readd(
        this: &Self,
        arena: &EntryArena,
        (entry, deadline): (EntryId, Deadline),
        plan: StagePlan,
        shut_down: Option<&AtomicBool>,
        queue: impl FnOnce(u64),
    ) -> Result<Option<u64>, Refused> {
        let mut refused = Refused::ShutDown;
        let shutting_down = || shut_down.is_some_and(|flag| flag.load(Ordering::Acquire));
        let enter = |state: &mut EntryState<'_>, _| {
            if state.status() != Status::Pending {
                refused = Refused::NotPending;
                return false;
            }
            // Seeded fault `readd_ignores_reset` (docs/loom.md): the deadline a reset wrote into a
            // held entry is not compared, so the entry lands where the old one goes.
            if state.deadline != deadline && !fault!("readd_ignores_reset") {
                refused = Refused::Moved(state.deadline);
                return false;
            }
            true
        };
        let added = this.add_with(arena, entry, plan, shutting_down, enter, queue);
        added.ok_or(refused)
    }

    /// A reset's look into lane `lane` of this bucket (`reset.rs`): under that lane's lock and
    /// then the slot's, [`EntryState::retarget`](crate::entry::Retargeted); if the entry was in this lane, it
    /// is taken out of the list here, and the caller holds it.
    pub(crate) fn retarget(
        this: &Self,
        arena: &EntryArena,
        ticket: Ticket,
        lane: usize,
        to: Target,
    ) -> Retargeted {
        let mut stages = this.lane(lane).stages.lock();
        let locked = (Some(LaneKey::new(this.key, lane)), u32::from(this.slot_bits));
        let found = arena.lock(ticket.id).retarget(ticket, locked, to);
        if let Retargeted::Here(location) = found {
            take_out(&mut stages, arena, location, ticket.id);
        }
        found
    }
}
