//! Cancelling an entry from its handle's ticket: the claim under the lock of the bucket lane the
//! entry was first added to, and the way out of the bucket lane it is in (see the lock order in the
//! parent module's docs).

use super::{EntryState, Status, Ticket};
#[cfg(all(delaywheel_loom, delaywheel_loom_fault = "cancel_check_then_act"))]
use crate::arena::EntryArena;
use crate::bucket::{Removed, TimerTaskList};
use crate::counters::Stripe;
use crate::inline_task::InlineTask;
use crate::location::{LaneKey, Location};

/// Cancels the pending entry `ticket` names in `stripe`'s arena: `true` iff this call did it, and
/// then counted it out on `stripe`. The closure is dropped here, outside the locks and after the
/// entry left its bucket and its slot was returned (so a panic of that drop, which leaves this call,
/// loses nothing).
///
/// The claim is made under the lock of the bucket lane the entry was first added to (the ticket's), then
/// the slot's, in the lock order: when the entry is still there (the common case: most timeouts are
/// cancelled before their first cascade), it leaves the list in the same critical section, one slot
/// lock in all. Otherwise (it cascaded, or a visit holds it) the claim tells where it is, and it
/// leaves that bucket afterwards ([`leave_bucket`]) or its holder releases it.
pub(crate) fn cancel(ticket: Ticket, stripe: &Stripe) -> bool {
    let arena = stripe.arena();
    #[cfg(all(delaywheel_loom, delaywheel_loom_fault = "cancel_check_then_act"))]
    return cancel_check_then_act(arena, ticket, stripe);
    // The key is written by the insert into that bucket (`TimerTaskList::add`), and a level once
    // created is never replaced (`TimingWheel::bucket`, `close_levels`): the bucket exists.
    let first = stripe.wheel().bucket_by_key(ticket.bucket.bucket());
    let first = first.expect("a ticket names the bucket its entry was added to");
    let Some((task, claimed)) = TimerTaskList::cancel(first, arena, ticket) else {
        return false;
    };
    stripe.cancelled();
    match claimed {
        // Taken out and released under the locks: the slot is ours to return.
        Claimed::Here(_) => arena.free(ticket.id),
        // The bucket lane that held it at the claim: after the claim the entry can only leave it (a
        // visit), never move to another (a re-add refuses it), so this is the one lookup.
        Claimed::Elsewhere(lane) => leave_bucket(stripe, ticket, lane),
        Claimed::InTransit => {}
    }
    // Last, once the slot and the counters are settled: a closure whose drop panics unwinds out of
    // this call (the caller's own value, dropped on its thread) and leaks nothing.
    drop(task);
    true
}

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

/// Takes a cancelled entry out of the bucket lane `lane`, if it is still there, and then releases
/// it.
fn leave_bucket(stripe: &Stripe, ticket: Ticket, lane: LaneKey) {
    let (arena, wheel) = (stripe.arena(), stripe.wheel());
    let bucket = wheel.bucket_by_key(lane.bucket()).expect("a location names an existing bucket");
    match TimerTaskList::remove(bucket, arena, ticket, lane.lane()) {
        // Released under the locks: the slot is ours to return.
        Removed::Taken => arena.free(ticket.id),
        // In transit (its holder releases it), or already released.
        Removed::Gone => {}
        Removed::Elsewhere => unreachable!("a claimed entry moved to another bucket"),
    }
}

/// Seeded bug for the loom suite only (docs/loom.md): the `Pending` check and the transition in two
/// critical sections, so a firing in between runs the task and this cancel still returns `true`.
#[cfg(all(delaywheel_loom, delaywheel_loom_fault = "cancel_check_then_act"))]
fn cancel_check_then_act(arena: &EntryArena, ticket: Ticket, stripe: &Stripe) -> bool {
    let bucket = {
        let state = arena.lock(ticket.id);
        if !state.is(ticket) || state.status() != Status::Pending {
            return false;
        }
        state.location.map(Location::lane_key)
    };
    let task = {
        let mut state = arena.lock(ticket.id);
        if !state.is(ticket) {
            // Fired and released meanwhile: the bug reports a cancel anyway.
            stripe.cancelled();
            return true;
        }
        state.set_life(state.life().with_status(Status::Cancelled));
        state.task.take()
    };
    stripe.cancelled();
    drop(task);
    if let Some((bucket, lane)) =
        bucket.and_then(|lane| Some((stripe.wheel().bucket_by_key(lane.bucket())?, lane)))
    {
        if let Removed::Taken = TimerTaskList::remove(bucket, arena, ticket, lane.lane()) {
            arena.free(ticket.id);
        }
    }
    true
}
