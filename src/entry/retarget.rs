//! Re-arming an entry from its handle's ticket, the entry's part: under the lock of a bucket lane
//! and then the slot's, a reset finds the pending entry and either takes it out of that lane to
//! hold it, or writes the new deadline for the holder that has it in transit (see "Re-arming" in
//! the parent module's docs). The rest (which lane to lock, the re-add) is `reset.rs`'s.

use super::{EntryArena, EntryState, Status, Ticket};
use crate::deadline::Deadline;
use crate::entry::location::{LaneKey, Location};

/// What a reset found under a lane's lock and the slot's ([`EntryState::retarget`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Retargeted {
    /// At this location in the locked lane: it left it (location cleared, still pending, the new
    /// deadline written); the resetter holds it now, takes it out of the list and re-adds it.
    Here(Location),
    /// In this bucket lane, whose lock the resetter does not hold: nothing changed.
    Elsewhere(LaneKey),
    /// In transit to a re-add (a visit's cascade buffer): the new deadline is written, and the
    /// re-add places the entry by it (`TimerTaskList::add` compares the deadlines).
    Rewritten,
    /// Not the ticket's pending entry any more (fired, cancelled, abandoned, slot reused), or
    /// taken out to fire (due): nothing changed.
    Gone,
}

impl EntryState<'_> {
    /// A reset's look at the entry `ticket` names, with the lock of the bucket lane `locked` held:
    /// see [`Retargeted`]. Never claims: the entry stays pending whatever this finds.
    pub(crate) fn retarget(&mut self, ticket: Ticket, locked: LaneKey, deadline: Deadline) -> Retargeted {
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
        match self.location {
            Some(location) if location.lane_key() == locked => {
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

/// The deadline of the pending entry `ticket` names, `None` once it is no longer pending (or its
/// slot was reused).
pub(crate) fn deadline(arena: &EntryArena, ticket: Ticket) -> Option<Deadline> {
    let state = arena.lock(ticket.id);
    (state.is(ticket) && state.status() == Status::Pending).then_some(state.deadline)
}
