//! Re-arming an entry from its handle's ticket, the entry's part: under the slot lock (alone, or
//! inside the lock of a bucket lane), a reset finds the pending entry and either writes the new
//! deadline and leaves it where it is (a later deadline in a bucket, or any deadline in transit), or,
//! for an earlier deadline with the entry in the locked lane, takes it out of that lane to hold it
//! (see "Re-arming" in the parent module's docs). The rest (which lane to lock, the re-add) is
//! `reset.rs`'s.

use super::{EntryArena, EntryState, Status, Ticket};
use crate::deadline::Deadline;
use crate::entry::location::{LaneKey, Location};

/// What a reset found under a lane's lock and the slot's ([`EntryState::retarget`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Retargeted {
    /// At this location in the locked lane: it left it (location cleared, still pending, the new
    /// deadline written); the resetter holds it now, takes it out of the list and re-adds it.
    Here(Location),
    /// In this bucket lane, whose lock the resetter does not hold, and the new deadline is earlier
    /// than its deadline: nothing changed (the entry must move).
    Elsewhere(LaneKey),
    /// The new deadline is written and the entry stays where it is: in its bucket, for a deadline
    /// no earlier (in ticks) than its deadline, as that bucket is visited no later than the old
    /// deadline needs and the visit fires or re-adds the entry by the deadline in its slot; or in
    /// transit to a re-add (a visit's cascade buffer), whatever the deadline, as that re-add places
    /// the entry by it (`TimerTaskList::readd` compares the deadlines).
    Rewritten,
    /// Not the ticket's pending entry any more (fired, cancelled, abandoned, slot reused), or
    /// taken out to fire (due): nothing changed.
    Gone,
}

impl EntryState<'_> {
    /// A reset's look at the entry `ticket` names, with the lock of the bucket lane `locked` held
    /// (`None`: no lane lock, only the slot's): see [`Retargeted`]. Never claims: the entry stays
    /// pending whatever this finds, and only a lane lock the caller holds lets it leave its list.
    pub(crate) fn retarget(
        &mut self,
        ticket: Ticket,
        locked: Option<LaneKey>,
        deadline: Deadline,
    ) -> Retargeted {
        // Seeded fault `reset_ticket_unchecked` (docs/loom.md): no generation check, so a handle
        // whose task finished moves whatever task reused its slot.
        if !self.is(ticket) && !fault!("reset_ticket_unchecked") {
            return Retargeted::Gone;
        }
        // Seeded fault `reset_ignores_due` (docs/loom.md): the due mark is ignored, so a reset of an
        // entry the driver is about to fire reports it moved, and it fires before the new deadline.
        let due = self.life().due() && !fault!("reset_ignores_due");
        if self.status() != Status::Pending || due {
            return Retargeted::Gone;
        }
        // Seeded fault `reset_defers_earlier` (docs/loom.md): an earlier deadline is left in the
        // bucket too, which is visited by the old deadline only: the task fires late.
        let later = deadline.tick() >= self.deadline.tick() || fault!("reset_defers_earlier");
        match self.location {
            Some(_) if later => {
                self.deadline = deadline;
                Retargeted::Rewritten
            }
            Some(location) if Some(location.lane_key()) == locked => {
                self.location = None;
                self.deadline = deadline;
                Retargeted::Here(location)
            }
            Some(location) => Retargeted::Elsewhere(location.lane_key()),
            None => {
                self.deadline = deadline;
                Retargeted::Rewritten
            }
        }
    }
}

/// A reset's first look, under the slot lock alone ([`EntryState::retarget`] with no lane locked):
/// a later deadline, or an entry in transit, is done here ([`Retargeted::Rewritten`]); an earlier
/// deadline for an entry in a bucket comes back as the lane to lock ([`Retargeted::Elsewhere`]).
pub(crate) fn retarget(arena: &EntryArena, ticket: Ticket, deadline: Deadline) -> Retargeted {
    arena.lock(ticket.id).retarget(ticket, None, deadline)
}

/// The deadline of the pending entry `ticket` names, `None` once it is no longer pending (or its
/// slot was reused).
pub(crate) fn deadline(arena: &EntryArena, ticket: Ticket) -> Option<Deadline> {
    let state = arena.lock(ticket.id);
    (state.is(ticket) && state.status() == Status::Pending).then_some(state.deadline)
}
