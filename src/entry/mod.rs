//! `TimerTaskEntry`: one scheduled task, its state machine, and where it currently lives.
//!
//! ## Ground rules
//!
//! An entry is a slot of the timer's [`EntryArena`] (`arena.rs`), named by its index, [`EntryId`].
//! Its [`EntryState`] sits behind the slot's **one small lock**: the generation, the status, the
//! location (which bucket, at which stage and index), the deadline, and the task's closure. The
//! status leaves `Pending` at most once, under that lock, and **the same critical section takes the
//! closure out** (the claim: [`fire`], a cancel's [`EntryState::claim_cancel`], [`abandon`]); whoever
//! won it runs, drops or hands back the closure after releasing the lock, and the timer counts the
//! entry out of `len()` on the winner's counter stripe (`timer/counters.rs`), so:
//!
//! * **exactly once**: of "the task runs" and "a `cancel()` returns true", exactly one happens, even
//!   when cancel races the flush or the firing: both are decided by the one `Pending → _` transition,
//!   and only its winner ever holds the closure;
//! * a cancelled or abandoned task's closure is dropped at once, outside every lock.
//!
//! ## Holding and freeing a slot
//!
//! From allocation to release, exactly one party **holds** the slot: the scheduler until the entry
//! is inserted, then its bucket's list, then (after a visit takes it out) the driver's transit and
//! due buffers, then possibly an executor's channel, or the shutdown drain. Holding passes only
//! under the bucket lane's lock and the slot lock (insert, remove, visit) or with the buffer that carries
//! the index. The holder that finds the entry no longer `Pending` (after its own claim, or a
//! cancel's) **releases** the slot ([`EntryState::release`]: vacant, the closure gone; its next
//! occupant brings a generation no earlier one had) and returns it to the arena. A cancel becomes the holder
//! when it takes the entry out of its bucket itself; when the entry is in transit the driver holds it and
//! releases it when it re-adds or fires it.
//!
//! A [`Ticket`] (what a handle keeps) is an index and a generation, and the bucket and lane the
//! entry was first added to (`location::LaneKey`; a bucket has lanes, chosen by the scheduling thread's
//! index, `wheel/bucket/`): every operation started from a ticket checks the generation under the slot lock,
//! so a ticket whose entry was released does nothing to the slot's next occupant. A released slot keeps its
//! last status until it is reused, so a handle still learns how its task ended until then.
//!
//! Locking order: **bucket lane lock, then slot lock**, never the other way round (a visit or the
//! shutdown flush holds every lane lock of its bucket, taken in lane order). A cancel starts from
//! its ticket's bucket lane: under that lane's lock and then the slot's it claims the entry and, if
//! the location still names that lane, takes it out of the list and releases it there
//! ([`EntryState::claim_cancel`], `TimerTaskList::cancel`, `timer/cancel.rs`). If a cascade moved the entry
//! to another bucket (or, re-added by another thread, to another lane), the claim reads that lane's key; the
//! cancel drops both locks, takes that lane's lock and re-checks generation and location under both
//! (`TimerTaskList::remove`). It never holds two lane locks. If the entry has no location, its holder (the
//! driver's transit or due buffer, an executor's channel, or the shutdown drain) finds it cancelled and
//! releases it.
//!
//! ## Re-arming
//!
//! A reset gives a pending entry a new deadline without claiming it: `retarget.rs` has the protocol.
//!
//! Location invariant: `location == Some(l)` if and only if the bucket keyed `l.bucket()` holds this
//! entry in lane `l.lane()`, stage `l.stage()`, at index `l.index()` (`location.rs`); it only
//! changes while that lane's lock is held. A `None` location with status `Pending` means the entry
//! is in transit (taken out by a visit, not yet re-added or fired); the re-add checks the status
//! under both locks and reports a cancelled entry instead of inserting it, and the firing claim
//! finds it cancelled and only releases the slot.

use std::num::NonZeroU32;
use std::panic::{self, AssertUnwindSafe};

use crate::deadline::Deadline;

pub(crate) mod arena;
mod block_cache;
mod claim;
pub(crate) mod faults;
mod free_lists;
mod fresh;
// A module with `unsafe` code (see the crate's "Unsafe code"): the free lists' pool, own mapping.
#[allow(unsafe_code)]
mod mapped_vec;
// A module with `unsafe` code (see the crate's "Unsafe code"): a closure stored in a slot.
#[allow(unsafe_code)]
mod inline_task;
#[cfg(feature = "async")]
pub(crate) mod kind;
pub(crate) mod location;
// A module with `unsafe` code (see the crate's "Unsafe code"): the shrink's system calls, and the
// mappings of the shard core's slabs and reserve (`shard/`).
#[allow(unsafe_code)]
pub(crate) mod os;
// A module with `unsafe` code (see the crate's "Unsafe code"): the arena's pages, a shrink frees.
#[allow(unsafe_code)]
mod pages;
mod readers;
mod retarget;
mod shrink;
mod slot_cache;
pub(crate) mod stamps;
mod thread_cache;
// A module with `unsafe` code (see the crate's "Unsafe code"): the arena slots' lock.
#[allow(unsafe_code)]
pub(crate) mod slot_lock;
// A module with `unsafe` code (see the crate's "Unsafe code"): blocks for big closures.
#[allow(unsafe_code)]
pub(crate) mod task_slab;
mod value;

pub(crate) use self::{arena::EntryArena, claim::Claimed, fresh::Fresh, os::shrink_buffer, shrink::Shrunk};
pub(crate) use inline_task::{InlineTask, TaskLines};
use location::{LaneKey, Location};
pub(crate) use retarget::{deadline, retarget, Retargeted, Target};
use slot_lock::{SlotGuard, SlotLock, LOCK_BITS};
pub(crate) use stamps::StampBy;
pub(crate) use task_slab::Freed;
pub(crate) use value::{cancel_value_at, claim_value, current, exact, FiredValue};

/// A task's closure, boxed: what shutdown hands back.
pub(crate) type Task = Box<dyn FnOnce() + Send + 'static>;

/// An entry's slot index in its timer's arena (stored plus one: `Option<EntryId>` is 4 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct EntryId(NonZeroU32);

impl EntryId {
    /// The largest index an arena hands out.
    pub(crate) const MAX_INDEX: u32 = u32::MAX - 1;

    pub(crate) fn new(index: usize) -> EntryId {
        let stored = u32::try_from(index + 1).ok().and_then(NonZeroU32::new);
        EntryId(stored.expect("arena index within u32"))
    }

    #[inline]
    pub(crate) fn index(self) -> usize {
        (self.0.get() - 1) as usize
    }
}

/// An entry as a handle names it: its slot and the slot's generation when it was scheduled, and the
/// bucket and lane it was first added to (where a cancel looks first: `timer/cancel.rs`). The lane key
/// fills what was padding: a ticket is 16 bytes either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ticket {
    pub(crate) id: EntryId,
    pub(crate) bucket: LaneKey,
    pub(crate) generation: u64,
}

const _: () = assert!(std::mem::size_of::<Ticket>() == 16, "the bucket key fills the ticket's padding");

/// Where an entry is in its life. Only `Pending` may change, and only once per occupant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    /// Waiting in a bucket (or in transit between buckets).
    Pending = 0,
    /// Claimed for running: its closure has been (or is being) run.
    Fired = 1,
    /// A `cancel()` call won: the closure was dropped unrun.
    Cancelled = 2,
    /// The timer shut down first (or the entry was never inserted): dropped or handed back unrun.
    Abandoned = 3,
}

impl Status {
    /// Indexed by the discriminant: the decoding of [`Life`]'s status bits.
    const ALL: [Status; 4] = [Status::Pending, Status::Fired, Status::Cancelled, Status::Abandoned];
}

/// What a slot holds besides its [`Life`] (which sits in the slot lock's word: `slot_lock/`):
/// 40 bytes, so that a slot is 48.
#[derive(Debug)]
pub(crate) struct EntryBody {
    /// The bucket holding this entry, and its stage and index there (`location.rs`).
    pub(crate) location: Option<Location>,
    /// The task's deadline: the first tick at or after it, and its rank in that tick (`deadline.rs`).
    pub(crate) deadline: Deadline,
    task: Option<InlineTask>,
}

/// A slot's state, locked (see the module docs): its [`Life`], read and written through the guard,
/// and its [`EntryBody`], which the guard derefs to.
pub(crate) type EntryState<'a> = SlotGuard<'a, EntryBody>;

/// A new vacant slot: generation 0 (no stamp is 0), status `Abandoned` (no occupant ever ran),
/// unlocked.
pub(crate) fn vacant_slot() -> SlotLock<EntryBody> {
    let life = Life(0).with_status(Status::Abandoned);
    SlotLock::new(life.0, EntryBody { location: None, deadline: Deadline::default(), task: None })
}

/// A slot's generation, whether it has an occupant (allocated, not yet released), whether a visit
/// took the pending occupant out to fire it (`due`: see "Re-arming" in the module docs), and the
/// occupant's status (after a release, the last occupant's final status):
/// `generation << 8 | due << 5 | occupied << 2 | status`.
///
/// The generation is the occupant's **stamp** (`stamps.rs`: [`EntryArena::stamp`]), unique among
/// all of its timer's schedules, set when it occupies the slot and kept when it leaves it. So a
/// ticket of an earlier occupant never matches a later one, and the stamp is also the scheduling
/// order that breaks ties between equal deadlines (`deadline.rs`, "Ties"): one number, no room
/// taken in the 48-byte slot. 56 bits of stamps last 2^56 schedules (threads' blocks reserve at
/// most twice what they use): over 100 years at ten million a second.
/// Bits 3 and 4 are the slot lock's (`slot_lock::LOCK_BITS`), the word being shared with it.
#[derive(Clone, Copy, Debug)]
struct Life(u64);

// Life's bits leave the lock's alone.
const _: () = assert!(
    (Life::OCCUPIED | Life::STATUS | Life::DUE) & LOCK_BITS == 0 && LOCK_BITS >> Life::GENERATION_SHIFT == 0
);

impl Life {
    const OCCUPIED: u64 = 1 << 2;
    const STATUS: u64 = 0b11;
    /// Taken out of its bucket to fire: in the driver's due batch or an executor's channel.
    const DUE: u64 = 1 << 5;
    const GENERATION_SHIFT: u32 = 8;

    fn due(self) -> bool {
        self.0 & Self::DUE != 0
    }

    fn generation(self) -> u64 {
        self.0 >> Self::GENERATION_SHIFT
    }

    fn occupied(self) -> bool {
        self.0 & Self::OCCUPIED != 0
    }

    fn status(self) -> Status {
        Status::ALL[(self.0 & Self::STATUS) as usize]
    }

    fn with_status(self, status: Status) -> Life {
        Life(self.0 & !Self::STATUS | status as u64)
    }

    /// Occupied and pending, by the occupant stamped `stamp`.
    fn occupy(stamp: u64) -> Life {
        Life(stamp << Self::GENERATION_SHIFT | Self::OCCUPIED).with_status(Status::Pending)
    }

    /// Vacant, generation and status kept (and no longer due): a ticket of the occupant that left
    /// still reads how it ended, until the slot is reused.
    fn vacate(self) -> Life {
        Life(self.0 & (!0 << Self::GENERATION_SHIFT | Self::STATUS))
    }
}

impl EntryState<'_> {
    fn life(&self) -> Life {
        Life(self.bits())
    }

    fn set_life(&mut self, life: Life) {
        self.set_bits(life.0);
    }

    pub(crate) fn status(&self) -> Status {
        self.life().status()
    }

    pub(crate) fn generation(&self) -> u64 {
        self.life().generation()
    }

    /// Whether the slot has an occupant (allocated and not yet released).
    pub(crate) fn is_occupied(&self) -> bool {
        self.life().occupied()
    }

    /// Whether `ticket` names this slot's current occupant (not yet released).
    fn is(&self, ticket: Ticket) -> bool {
        self.generation() == ticket.generation
    }

    /// The claim: `Pending → to` and the closure out, in one critical section; `None` if lost.
    fn claim(&mut self, to: Status) -> Option<InlineTask> {
        if self.status() != Status::Pending {
            return None;
        }
        self.set_life(self.life().with_status(to));
        self.task.take()
    }

    /// Ends the occupancy (the holder, once the entry is no longer pending): the slot is vacant,
    /// so no operation from a ticket finds a pending entry in it; generation and status stay for
    /// handles to read until reuse, which brings a new generation (a new stamp).
    /// The caller then returns the slot with [`EntryArena::free`].
    pub(crate) fn release(&mut self) {
        debug_assert!(self.is_occupied() && self.status() != Status::Pending && self.location.is_none());
        debug_assert!(self.task.is_none());
        self.set_life(self.life().vacate());
    }

    /// A visit takes the entry out of its bucket into transit (no location; `Slots::take_front`):
    /// the visitor holds it from now on and re-adds it, or fires it if its deadline is due at
    /// `cursor` and stamped at most `stamps` (scheduled before the advance began: see
    /// `TimerTaskList::visit_into`), which marks it due here (a reset then leaves it alone).
    /// Returns the deadline, the entry's stamp (its scheduling order, see [`Life`]) and, if due,
    /// where its closure lies outside the slot (for the fire loop's prefetch).
    #[inline(always)]
    pub(crate) fn leave_for_transit(&mut self, cursor: u64, stamps: u64) -> (Deadline, u64, TaskLines) {
        self.location = None;
        let mut lines = TaskLines::default();
        if self.deadline.tick() <= cursor && self.generation() <= stamps {
            self.set_life(Life(self.life().0 | Life::DUE));
            lines = self.task.as_ref().map_or(lines, InlineTask::lines);
        }
        (self.deadline, self.generation(), lines)
    }

    /// For the bucket tests: `Pending → to`, dropping the closure.
    #[cfg(test)]
    pub(crate) fn claim_for_test(&mut self, to: Status) -> bool {
        self.claim(to).is_some()
    }
}

/// What became of a [`fire`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fire {
    /// Another party claimed the entry first: nothing ran.
    Lost,
    /// Claimed, and the closure ran.
    Ran,
    /// Claimed, and the closure panicked (caught).
    Panicked,
}

impl EntryState<'_> {
    /// Makes the vacant slot's new occupant out of `fresh` (its holder, under the slot lock).
    #[inline(always)]
    pub(crate) fn occupy(&mut self, fresh: &mut Fresh, bucket: LaneKey) {
        debug_assert!(!self.is_occupied());
        fresh.bucket = bucket;
        self.set_life(Life::occupy(fresh.generation));
        self.deadline = fresh.deadline;
        self.task = fresh.task.take();
    }
}

/// A new pending entry for `task`, due at `deadline_tick`, held by the caller (outside a bucket):
/// for unit tests, which then insert it as a held entry.
#[cfg(test)]
pub(crate) fn new_entry<F>(arena: &EntryArena, deadline_tick: u64, task: F) -> Option<Ticket>
where
    F: FnOnce() + Send + 'static,
{
    new_entry_at(arena, Deadline::at_tick(deadline_tick), task)
}

/// [`new_entry`] at an exact `deadline`.
#[cfg(test)]
pub(crate) fn new_entry_at<F>(arena: &EntryArena, deadline: Deadline, task: F) -> Option<Ticket>
where
    F: FnOnce() + Send + 'static,
{
    let mut fresh = Fresh::new(deadline, task, arena, StampBy::Timer)?;
    let id = arena.alloc()?;
    // Its ticket names bucket key 0 (level 0, slot 0), lane 0: a cancel finds it there or, held, in
    // transit.
    arena.lock(id).occupy(&mut fresh, LaneKey::new(location::BucketKey::FIRST, 0));
    fresh.ticket(id)
}

/// Whether a visit marked the entry in slot `id` due (for unit tests).
#[cfg(test)]
pub(crate) fn is_due(arena: &EntryArena, id: EntryId) -> bool {
    arena.lock(id).life().due()
}

/// Releases a slot its holder found no longer pending (e.g. cancelled in transit).
pub(crate) fn discard(arena: &EntryArena, id: EntryId) {
    let (task, ..) = claim_and_release(arena, id, Status::Abandoned, Return::Now);
    debug_assert!(task.is_none(), "discarding a pending entry");
}

/// Who returns a slot to the arena once it is released: the releasing call, or its caller later,
/// with a batch of others in one go ([`EntryArena::free_all`]: the driver returns a fired bucket's
/// slots with one lock of its free list instead of one each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Return {
    Now,
    ByCaller,
}

/// What every holder does last: claims the entry as `to` if it is still pending, releases the slot
/// either way and (with [`Return::Now`]) returns it to the arena. The closure (if this call won the
/// claim) and the deadline come back, to be run or dropped with no lock held.
#[inline]
fn claim_and_release(
    arena: &EntryArena,
    id: EntryId,
    to: Status,
    ret: Return,
) -> (Option<InlineTask>, Deadline, u64) {
    let claimed = {
        let mut state = arena.lock(id);
        let task = state.claim(to);
        state.release();
        (task, state.deadline, state.generation())
    };
    if ret == Return::Now {
        arena.free(id);
    }
    claimed
}

/// The holder's firing: claims the entry; if this call won, calls `claimed` (unless the entry is
/// not counted: a tick group's, `InlineTask::is_counted`) with the tick its deadline rounds up to
/// ([`Deadline::rounded_up_tick`]; no lock held: the caller counts the entry out there, and
/// measures the lateness from it), then runs the closure on this thread, catching a panic, or, for
/// a value task, appends it to `values` (`value.rs`). The slot is released either way, and returned
/// to the arena as `ret` says; a block the closure was in (`task_slab.rs`) goes to `freed`.
#[inline]
pub(crate) fn fire(
    arena: &EntryArena,
    (id, ret): (EntryId, Return),
    freed: &mut Freed,
    claimed: &mut dyn FnMut(u64),
    values: Option<&mut Vec<FiredValue>>,
) -> Fire {
    let (task, deadline, generation) = claim_and_release(arena, id, Status::Fired, ret);
    let Some(task) = task else {
        return Fire::Lost;
    };
    // A tick group's task is no task of `len()`: its claim counts nothing (`timer/fire.rs`).
    if task.is_counted() {
        claimed(deadline.rounded_up_tick());
    }
    if let (true, Some(values)) = (task.is_value(), values) {
        values.push(FiredValue::new(task, id, generation, deadline));
        return Fire::Ran;
    }
    match panic::catch_unwind(AssertUnwindSafe(|| task.run_into(freed))) {
        Ok(()) => Fire::Ran,
        // The payload is user code too: its drop may panic again (`unwind.rs`).
        Err(payload) => {
            crate::unwind::drop_payload(payload);
            Fire::Panicked
        }
    }
}

/// The holder's abandonment (shutdown, a closed executor): claims the entry as abandoned and
/// releases the slot (returned to the arena as `ret` says). Hands back the closure iff this call
/// claimed it: the caller counts the entry out, then drops it (last: its drop may panic).
pub(crate) fn abandon(arena: &EntryArena, (id, ret): (EntryId, Return)) -> Option<InlineTask> {
    // Dropping the closure needs no box: only a closure handed back is boxed.
    claim_and_release(arena, id, Status::Abandoned, ret).0
}

/// Claims the entry in the slot at `index` as abandoned if it is pending, **without** releasing
/// it: it is held by someone else (a bucket, a visit's transit, a batch being fired, an executor's
/// channel), who releases it on finding it no longer pending. For the shutdown scan that cannot
/// wait for those holders. Hands back the closure, the deadline and the stamp iff this call
/// claimed it, and, if the entry is in a bucket lane (one a visit re-added it to after the drain flushed that
/// bucket), its ticket: nobody visits that bucket any more, so the caller takes it out of that
/// lane, as a cancel that found its entry elsewhere does (`timer/cancel.rs`).
pub(crate) fn abandon_held_elsewhere(
    arena: &EntryArena,
    index: usize,
) -> Option<(InlineTask, (Deadline, u64), Option<Ticket>)> {
    claim_held_elsewhere(arena, index, Status::Abandoned, |_| true)
}

/// Claims the entry in the slot at `index` as `to` if it is pending and `wanted` accepts its
/// task, without releasing it (see [`abandon_held_elsewhere`] and `value::cancel_value_at`): the
/// claim, its task, its deadline and stamp, and its ticket naming the bucket lane it is in, if
/// any, which the caller leaves as a cancel that found its entry elsewhere does.
fn claim_held_elsewhere(
    arena: &EntryArena,
    index: usize,
    to: Status,
    wanted: impl FnOnce(&InlineTask) -> bool,
) -> Option<(InlineTask, (Deadline, u64), Option<Ticket>)> {
    let _pin = arena.pin();
    let mut state = arena.lock_index(index)?;
    if !state.is_occupied() || state.task.as_ref().is_some_and(|task| !wanted(task)) {
        return None;
    }
    let task = state.claim(to)?;
    let id = EntryId::new(index);
    let in_bucket = state.location.map(|location| Ticket {
        id,
        bucket: location.lane_key(),
        generation: state.generation(),
    });
    Some((task, (state.deadline, state.generation()), in_bucket))
}

/// [`abandon`], handing back the closure, the deadline and the stamp (the scheduling order).
pub(crate) fn abandon_take(arena: &EntryArena, id: EntryId) -> Option<(InlineTask, Deadline, u64)> {
    let (task, deadline, stamp) = claim_and_release(arena, id, Status::Abandoned, Return::Now);
    Some((task?, deadline, stamp))
}

/// The status of the entry `ticket` names, while the slot is not reused: `None` once a later task
/// took the slot (the entry then finished long ago, how is forgotten).
pub(crate) fn status(arena: &EntryArena, ticket: Ticket) -> Option<Status> {
    let state = arena.lock(ticket.id);
    // Its own occupancy, or the release that ended it, before anyone reused the slot.
    state.is(ticket).then_some(state.status())
}

#[cfg(test)]
mod tests;
