//! Seeded faults of this room, for the loom suite only (docs/loom.md): the alternative bodies that
//! a `fault!("name")` site switches to. Outside a fault build every site folds to the correct
//! code, and these only have to compile.
//!
//! * `drive_set_aside_stays_due` (`kind.rs`, at its site): a closure the waker of a drive future's
//!   sleep sets aside keeps its due mark, so a reset returns `false` while it waits, pending.
//! * `ticket_generation_unchecked` (`claim.rs`): a cancel skips the generation check, so a handle
//!   whose task finished cancels whatever task reused its slot.
//! * `cancel_trusts_first_bucket` ([`leave_wherever`]): the entry is taken to be in the bucket lane
//!   whose lock the cancel holds, although a cascade may have moved it to a finer one.
//! * `cancel_ignores_lane` ([`same_bucket`]): the lane is not compared, so a cancel holding one
//!   lane's lock takes the entry out of the other lane's list.
//! * `cancel_check_then_act` ([`check_pending`], [`cancel_unchecked`], used by `timer/faults.rs`):
//!   the `Pending` check and the transition in two critical sections.
//! * `slot_unlock_relaxed`, `slot_unlock_drops_parked` (`slot_lock/`): a one-word change each at
//!   its site (a `Relaxed` unlock; `PARKED` dropped while threads are still parked).

use super::claim::Claimed;
use super::location::{LaneKey, Location};
use super::{EntryArena, EntryState, InlineTask, Status, Ticket};

/// `cancel_trusts_first_bucket`: leaves the bucket lane the location names as if it were the
/// locked one.
pub(super) fn leave_wherever(state: &mut EntryState<'_>, locked: LaneKey) -> Claimed {
    let lane = state.location.map_or(locked, Location::lane_key);
    state.leave_if_in(lane)
}

/// `cancel_ignores_lane`: whether `location` is in the bucket of `locked`, any lane (`false`
/// unless the fault is on).
#[inline(always)]
pub(super) fn same_bucket(location: Location, locked: LaneKey) -> bool {
    fault!("cancel_ignores_lane") && location.bucket() == locked.bucket()
}

/// `cancel_check_then_act`, the check: in a critical section of its own, whether `ticket` names a
/// pending entry, and its lane if it has one.
pub(crate) fn check_pending(arena: &EntryArena, ticket: Ticket) -> Option<Option<LaneKey>> {
    let state = arena.lock(ticket.id);
    (state.is(ticket) && state.status() == Status::Pending).then(|| state.location.map(Location::lane_key))
}

/// `cancel_check_then_act`, the act: in a second critical section, `Pending → Cancelled` with no
/// status check; `Err` if the slot was released meanwhile.
pub(crate) fn cancel_unchecked(arena: &EntryArena, ticket: Ticket) -> Result<Option<InlineTask>, ()> {
    let mut state = arena.lock(ticket.id);
    if !state.is(ticket) {
        return Err(());
    }
    state.set_life(state.life().with_status(Status::Cancelled));
    Ok(state.task.take())
}
