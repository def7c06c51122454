//! A cancel's claim of an entry, made under the lock of a bucket lane the caller holds: what the
//! entry's side of cancelling is (the lock order and the way out of a bucket are in the parent
//! module's docs; the cancel itself is the timer's, `timer/cancel.rs`).

use super::{EntryState, InlineTask, Status, Ticket};
use crate::entry::location::{LaneKey, Location};

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
    #[inline]
    pub(crate) fn claim_cancel(&mut self, ticket: Ticket, locked: LaneKey) -> Option<(InlineTask, Claimed)> {
        if !self.is(ticket) && !fault!("ticket_generation_unchecked") {
            return None;
        }
        let task = self.claim(Status::Cancelled)?;
        if fault!("cancel_trusts_first_bucket") {
            return Some((task, super::faults::leave_wherever(self, locked)));
        }
        Some((task, self.leave_if_in(locked)))
    }

    /// Where a claimed entry (no longer pending) is, with the lock of the bucket lane `locked`
    /// held: if there, it leaves it (location cleared, slot released: [`Claimed::Here`], and the
    /// caller takes it out of the list).
    pub(crate) fn leave_if_in(&mut self, locked: LaneKey) -> Claimed {
        match self.location {
            Some(location)
                if location.lane_key() == locked || super::faults::same_bucket(location, locked) =>
            {
                self.location = None;
                self.release();
                Claimed::Here(location)
            }
            Some(location) => Claimed::Elsewhere(location.lane_key()),
            None => Claimed::InTransit,
        }
    }
}
