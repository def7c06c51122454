//! A cancel's claim of an entry, made under the lock of a bucket lane the caller holds: what the
//! entry's side of cancelling is (the lock order and the way out of a bucket are in the parent
//! module's docs; the cancel itself is the timer's, `timer/cancel.rs`).

use super::{EntryState, InlineTask, Status, Ticket};
use crate::entry::location::{LaneKey, Location};
#[cfg(all(delaywheel_loom, delaywheel_loom_fault = "cancel_check_then_act"))]
use crate::entry::EntryArena;

/// Where a cancel's claim found the entry ([`EntryState::claim_cancel`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Claimed {
    /// At this location in the bucket lane whose lock the canceller holds: released, location
    /// cleared; the canceller takes it out of that lane's list.
    Here(Location),
    /// In this bucket lane, whose lock the canceller does not hold (another bucket, or another lane
    /// of the same one).
    Elsewhere(LaneKey),
    /// No location: held by the driver's transit or due buffer, an executor's channel or the
    /// shutdown drain, which release it.
    InTransit,
}

impl EntryState<'_> {
    /// A cancel's claim, with the lock of the bucket lane `locked` held: `Pending → Cancelled` if
    /// `ticket` still names this entry, handing back the closure and where the entry is. If it is
    /// in the locked lane, it is also released here ([`Claimed::Here`]).
    pub(crate) fn claim_cancel(&mut self, ticket: Ticket, locked: LaneKey) -> Option<(InlineTask, Claimed)> {
        // Seeded bug for the loom suite only (docs/loom.md): no generation check, so a handle whose
        // task finished cancels whatever task reused its slot.
        #[cfg(not(all(delaywheel_loom, delaywheel_loom_fault = "ticket_generation_unchecked")))]
        if !self.is(ticket) {
            return None;
        }
        let task = self.claim(Status::Cancelled)?;
        // Seeded bug for the loom suite only (docs/loom.md): the entry is taken to be in the bucket
        // its ticket names, although a cascade may have moved it to a finer one.
        #[cfg(all(delaywheel_loom, delaywheel_loom_fault = "cancel_trusts_first_bucket"))]
        let locked = self.location.map_or(locked, Location::lane_key);
        Some((task, self.leave_if_in(locked)))
    }

    /// Where a claimed entry (no longer pending) is, with the lock of the bucket lane `locked`
    /// held: if there, it leaves it (location cleared, slot released: [`Claimed::Here`], and the
    /// caller takes it out of the list).
    pub(crate) fn leave_if_in(&mut self, locked: LaneKey) -> Claimed {
        match self.location {
            // Seeded bug for the loom suite only (docs/loom.md): the lane is not compared, so a
            // cancel holding one lane's lock takes the entry out of the other lane's list.
            #[cfg(all(delaywheel_loom, delaywheel_loom_fault = "cancel_ignores_lane"))]
            Some(location) if location.bucket() == locked.bucket() => {
                self.location = None;
                self.release();
                Claimed::Here(location)
            }
            Some(location) if location.lane_key() == locked => {
                self.location = None;
                self.release();
                Claimed::Here(location)
            }
            Some(location) => Claimed::Elsewhere(location.lane_key()),
            None => Claimed::InTransit,
        }
    }
}

/// Seeded bug for the loom suite only (docs/loom.md), the check of `cancel_check_then_act`: in a
/// critical section of its own, whether `ticket` names a pending entry, and its lane if it has one.
#[cfg(all(delaywheel_loom, delaywheel_loom_fault = "cancel_check_then_act"))]
pub(crate) fn check_pending(arena: &EntryArena, ticket: Ticket) -> Option<Option<LaneKey>> {
    let state = arena.lock(ticket.id);
    (state.is(ticket) && state.status() == Status::Pending).then(|| state.location.map(Location::lane_key))
}

/// Seeded bug for the loom suite only (docs/loom.md), the act of `cancel_check_then_act`: in a
/// second critical section, `Pending → Cancelled` with no status check; `Err` if the slot was
/// released meanwhile.
#[cfg(all(delaywheel_loom, delaywheel_loom_fault = "cancel_check_then_act"))]
pub(crate) fn cancel_unchecked(arena: &EntryArena, ticket: Ticket) -> Result<Option<InlineTask>, ()> {
    let mut state = arena.lock(ticket.id);
    if !state.is(ticket) {
        return Err(());
    }
    state.set_life(state.life().with_status(Status::Cancelled));
    Ok(state.task.take())
}
