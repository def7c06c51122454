//! Re-arming an entry from its handle's ticket, the entry's part. The rest (which lane to lock, the
//! re-add) is `timer/reset.rs`'s.
//!
//! A reset gives a pending entry a new deadline without claiming it (`timer/reset.rs`): the status
//! stays `Pending` and the closure stays in the slot. Under the slot lock, first alone and, for an
//! entry that must move, inside a lane's lock, it finds the entry ([`EntryState::retarget`]):
//!
//! * **in a bucket, the new deadline no earlier (as a deadline, so in ticks too: an earlier one
//!   in the same tick moves, so that a stage's floor, a minimum over its adds, stays a lower bound
//!   of its deadlines, `wheel/bucket/`)**: it writes the new deadline and leaves the entry in its
//!   list (the slot lock alone suffices: the entry cannot leave its bucket without
//!   it). Its bucket is visited no later than the old deadline needed; the visit reads the
//!   deadline in the slot under the same lock as it takes the entry out
//!   ([`EntryState::leave_for_transit`]), fires it if that is due at the cursor, and re-adds it by
//!   that deadline otherwise. The bucket's stage ticks and expiration, minima over the deadlines
//!   added, stay as they were: at worst the visit comes early;
//! * in a bucket, the new deadline earlier, with the lock of the lane it is in held: it takes the
//!   entry out of the list and writes the new deadline, in the same critical section; it now
//!   **holds** the entry, as a visit holds one in transit, and re-adds it through the wheel like a
//!   cascade (a cancel meanwhile finds it in transit and leaves it to the resetter, whose re-add
//!   reports it not pending and releases it). In another lane than the one locked (or with none
//!   locked): it returns that lane, to be locked (the entry may move again: the loop ends when it is
//!   found);
//! * in transit to a re-add (no location, not due): it writes the new deadline, and the holder's
//!   re-add places the entry by the deadline in the slot: the insert compares it, under both locks,
//!   with the one it was placed by, and refuses a moved entry, which is placed again;
//! * **due** (a visit took it out to fire it: the driver's due batch or an executor's channel,
//!   marked by `Life::DUE` in the same critical section that cleared its location): the reset
//!   returns `false` and changes nothing. So an entry's deadline never changes once it is due, and
//!   the firing claim needs no second look.
//!
//! A reset therefore returns `true` exactly when it gave a pending entry its new deadline, by which
//! it then fires (never before it), and never touches a claimed one: the claim stays the one
//! transition out of `Pending`, and exactly-once is unchanged. Like every operation from a ticket,
//! it checks the generation first (loom model `reset_with_stale_ticket`). Who writes what: the
//! deadline of a pending entry, under the slot lock, by its scheduler (before it is visible), a
//! reset, or nobody else; the location, under the slot lock and the lock of the lane it names (or
//! names next), by an add, a visit, a cancel or a reset that moves it.

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

/// A reset's new deadline: the wheel's, and for a value task the exact one its value carries
/// (`inline_task/value.rs`), written together under the slot lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) deadline: Deadline,
    pub(crate) exact: Option<i64>,
}

impl From<Deadline> for Target {
    fn from(deadline: Deadline) -> Target {
        Target { deadline, exact: None }
    }
}

impl EntryState<'_> {
    /// Writes a reset's new deadline (and a value task's exact one).
    fn rewrite(&mut self, to: Target) {
        self.deadline = to.deadline;
        if let (Some(exact), Some(task)) = (to.exact, self.task.as_mut()) {
            task.set_exact(exact);
        }
    }

    /// A reset's look at the entry `ticket` names, with the lock of the bucket lane `locked` held
    /// (`None`: no lane lock, only the slot's): see [`Retargeted`]. Never claims: the entry stays
    /// pending whatever this finds, and only a lane lock the caller holds lets it leave its list.
    /// `slot_bits` is the wheel's, which tells a location's level (`location.rs`).
    pub(crate) fn retarget(
        &mut self,
        ticket: Ticket,
        (locked, slot_bits): (Option<LaneKey>, u32),
        to: Target,
    ) -> Retargeted {
        let deadline = to.deadline;
        // Seeded fault `reset_ticket_unchecked` (docs/loom.md): no generation check, so a handle
        // whose task finished moves whatever task reused its slot.
        if !self.is(ticket) && !fault!("reset_ticket_unchecked") {
            return Retargeted::Gone;
        }
        // Seeded fault `reset_ignores_due` (docs/loom.md): the due mark is ignored, so a reset of an
        // entry the driver is about to fire reports it moved, and it fires before the new deadline.
        let due = self.life().due() && !fault!("reset_ignores_due");
        if self.status() != Status::Pending || due {
            // Seeded fault `queue_reset_records_unmoved` (docs/loom.md): a value's exact deadline is
            // rewritten although the entry is due and keeps firing at its old one.
            if due && fault!("queue_reset_records_unmoved") {
                self.rewrite(Target { deadline: self.deadline, ..to });
            }
            return Retargeted::Gone;
        }
        // Seeded fault `reset_defers_earlier` (docs/loom.md): an earlier deadline is left in the
        // bucket too, which is visited by the old deadline only: the task fires late.
        // In a level-0 bucket, whose stages are the quarters of its tick, fired in turn
        // (`wheel/place.rs`), a new deadline in the same tick stays only in its own quarter: in
        // another, it would fire with the wrong part of the tick, out of deadline order.
        // And never earlier than the deadline it replaces: a stage's floor (`wheel/bucket/`, the
        // bound a take beside a passed deadline skips a list by) is a minimum over the adds. A
        // word no earlier is of a tick no earlier, whatever its kind (exact, `P`, far:
        // `deadline.rs`), so that also keeps the bucket's visit no later than the old one needed.
        let later = deadline >= self.deadline
            && match self.location {
                Some(location)
                    if location.bucket().level(slot_bits) == 0 && deadline.tick() == self.deadline.tick() =>
                {
                    deadline.quarter() == location.stage()
                }
                _ => true,
            }
            || fault!("reset_defers_earlier");
        match self.location {
            Some(_) if later => {
                self.rewrite(to);
                Retargeted::Rewritten
            }
            Some(location) if Some(location.lane_key()) == locked => {
                self.location = None;
                self.rewrite(to);
                Retargeted::Here(location)
            }
            Some(location) => Retargeted::Elsewhere(location.lane_key()),
            None => {
                self.rewrite(to);
                Retargeted::Rewritten
            }
        }
    }
}

/// A reset's first look, under the slot lock alone ([`EntryState::retarget`] with no lane locked):
/// a later deadline, or an entry in transit, is done here ([`Retargeted::Rewritten`]); an earlier
/// deadline for an entry in a bucket comes back as the lane to lock ([`Retargeted::Elsewhere`]).
/// `slot_bits` is the wheel's (`location.rs`).
pub(crate) fn retarget(arena: &EntryArena, ticket: Ticket, to: Target, slot_bits: u32) -> Retargeted {
    arena.lock(ticket.id).retarget(ticket, (None, slot_bits), to)
}

/// The deadline of the pending entry `ticket` names, `None` once it is no longer pending (or its
/// slot was reused).
pub(crate) fn deadline(arena: &EntryArena, ticket: Ticket) -> Option<Deadline> {
    let state = arena.lock(ticket.id);
    (state.is(ticket) && state.status() == Status::Pending).then_some(state.deadline)
}
