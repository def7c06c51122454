//! Entries that hold a value instead of a closure (`inline_task/value.rs`), the entry's part of the
//! delay queue of values (`timer/values.rs` has the rest).
//!
//! A value entry is an ordinary entry: the same slot, lock, state machine and holders. Only what
//! its claim's winner does with the task differs: the firing holder hands it, with the entry's
//! index, generation and deadline, to its caller ([`FiredValue`], see [`fire`](super::fire)); a
//! cancel hands it back to whoever cancels, who takes the value out. So a value leaves its entry
//! exactly once, by the one `Pending → _` transition, as a closure does.

use super::location::{BucketKey, LaneKey};
use super::{EntryArena, EntryId, Fresh, InlineTask, StampBy, Status, Ticket};
use crate::deadline::Deadline;

/// A value entry the firing claimed: its task (holding the value) and the ticket that names it
/// (its bucket is a placeholder: it names no bucket, see [`Ticket::placeholder`]).
#[derive(Debug)]
pub(crate) struct FiredValue {
    pub(crate) task: InlineTask,
    pub(crate) ticket: Ticket,
    /// The entry's deadline word, for a value whose exact deadline is past what the task's
    /// `i64` holds (`timer/values.rs`, "Far deadlines").
    pub(crate) deadline: Deadline,
}

impl FiredValue {
    pub(super) fn new(task: InlineTask, id: EntryId, generation: u64, deadline: Deadline) -> FiredValue {
        FiredValue { task, ticket: Ticket::placeholder(id, generation), deadline }
    }
}

impl Ticket {
    /// A ticket for the entry `id` holds as `generation`, naming the level-0 bucket 0 (which may
    /// not exist): for comparing and for the operations that check the slot before any bucket.
    pub(crate) fn placeholder(id: EntryId, generation: u64) -> Ticket {
        Ticket { id, bucket: LaneKey::new(BucketKey::FIRST, 0), generation }
    }
}

impl Fresh {
    /// A new entry holding `value`, due at `deadline` (`exact`: the deadline the value carries);
    /// `value` back if the task slab's class for it has no room.
    pub(crate) fn value<V: Send + 'static>(
        deadline: Deadline,
        (value, exact): (V, i64),
        arena: &EntryArena,
        by: StampBy,
    ) -> Result<Fresh, V> {
        let task = InlineTask::value_in(value, exact, arena.tasks())?;
        Ok(Fresh::holding(task, deadline, arena, by))
    }

    /// The value of a new entry that was never inserted (a refused schedule).
    pub(crate) fn into_value<V: Send + 'static>(mut self) -> Option<V> {
        self.task.take()?.take_value().ok().map(|(value, _)| value)
    }
}

/// For a holder of the entry `id` (a due batch handed to executor threads): claims it as fired
/// and releases it if it is a pending value entry, handing it back; leaves any other entry alone.
/// The caller returns the slot to the arena.
pub(crate) fn claim_value(arena: &EntryArena, id: EntryId) -> Option<FiredValue> {
    let mut state = arena.lock(id);
    if state.status() != Status::Pending || !state.task.as_ref().is_some_and(InlineTask::is_value) {
        return None;
    }
    let task = state.claim(Status::Fired)?;
    state.release();
    Some(FiredValue::new(task, id, state.generation(), state.deadline))
}

/// For a clear of the delay queue (`timer/values.rs`): claims the entry in the slot at `index` if
/// it is a pending value entry, as a cancel claims (`Pending → Cancelled`), wherever it is held,
/// without releasing it. Hands back its task and, if it is in a bucket lane, its ticket naming
/// that lane, which the caller leaves as a cancel that found its entry elsewhere does; an entry
/// in transit is released by its holder, which finds it cancelled.
pub(crate) fn cancel_value_at(arena: &EntryArena, index: usize) -> Option<(InlineTask, Option<Ticket>)> {
    let wanted = |task: &InlineTask| task.is_value() || fault!("queue_clear_claims_closures");
    let (task, _, in_bucket) = super::claim_held_elsewhere(arena, index, Status::Cancelled, wanted)?;
    Some((task, in_bucket))
}

/// The exact deadline of the pending value entry `ticket` names, with the entry's deadline word:
/// `None` once it is no longer pending (or its slot was reused), and for a closure.
pub(crate) fn exact(arena: &EntryArena, ticket: Ticket) -> Option<(i64, Deadline)> {
    let mut state = arena.lock(ticket.id);
    if !state.is(ticket) || state.status() != Status::Pending {
        return None;
    }
    let deadline = state.deadline;
    Some((state.task.as_mut()?.exact()?, deadline))
}

/// The ticket of whatever occupies slot `id` now (the seeded fault `queue_take_ignores_generation`
/// only), naming the lane its location names, if any.
pub(crate) fn current(arena: &EntryArena, id: EntryId) -> Ticket {
    let state = arena.lock(id);
    let bucket = state.location.map_or(LaneKey::new(BucketKey::FIRST, 0), |l| l.lane_key());
    Ticket { id, bucket, generation: state.generation() }
}
