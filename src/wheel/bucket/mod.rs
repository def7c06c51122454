//! `TimerTaskList`: a bucket, one slot of one wheel level.
//!
//! A bucket holds the entries whose deadlines fall in its slot's current round, in lists with O(1)
//! unlink (each entry knows its lane, stage and index, see `entry/`; removal leaves a hole, see
//! `Slots`). It has its own locks, one per lane (below), so schedules into different buckets never
//! contend, and an atomic **expiration**: the tick at which the driver must next visit the bucket.
//!
//! ## Lanes
//!
//! A bucket has `L` **lanes** (the timer's, a power of two from [`MIN_BUCKET_LANES`] to
//! [`MAX_BUCKET_LANES`]: `TimerBuilder::bucket_lanes`, by default the cores rounded up, 8 to
//! 16: [`default_lanes`]), each with its own lock and its own stages (lists and minima), alone on its
//! cache lines (`#[repr(align(128))]`); a thread adds to the lane of its `thread_index` modulo `L`
//! (round robin, as the counter stripes), so threads scheduling into the same buckets (a broker's
//! request timeouts of one delay; SPEC W3 and W7) write different lines instead of bouncing one
//! lock, one list tail and one set of minima between them, as long as no two of them have the same
//! index modulo `L` (threads that share a lane are correct, only slower; so are a scheduler and the
//! driver's cascade re-adds in the same lane). Only the expiration is shared, and an add only reads
//! it unless it lowers it. The price is memory, 512 bytes a lane, so a lane is created on first use
//! (and at level 0 only once adds contend, below): a bucket is 48 bytes in its `Arc`, 16 per lane,
//! and 512 per lane created (816 bytes for one thread's lane of 16).
//!
//! **Lanes created on first use.** A lane is a `OnceLock<Box<Lane>>`, created by the first thread
//! that adds to it (or names it: a cancel, a reset), under the bucket's **gate**, a lock taken only
//! for that and by a visit or a flush, before any lane's. A visit holds the gate until it has set
//! the expiration, so a lane it did not find (and did not lock) is created after it: the add into
//! that lane then reads the expiration the visit set, as an add into a lane the visit locked does.
//! Without the gate, an add could create its lane after the visit looked, read the expiration the
//! visit is about to replace, not queue the bucket, and be stranded; and the shutdown flag, which
//! an add reads under its lane's lock because the drain's flush takes that lock after setting it
//! (`timer/`), could be read stale in a lane the flush never locked, so an entry would be accepted
//! after the flush and never handed back (seeded fault `lane_created_outside_gate`). A lane is never
//! removed: a bucket holds the lanes its adds ever spread over.
//!
//! **Lanes spread on contention.** A level-0 bucket starts with its adds in lane 0 alone (the
//! driver's cascade re-adds too), and spreads them over all `L` lanes for good (its **spread**, a
//! mask: an add goes to lane `thread_index & spread`) once an add finds lane 0's lock held
//! (`try_lock`) while no visit or flush holds the gate (they hold every lane: more lanes would not
//! help). Buckets above level 0 are spread from the start: they collect the timeouts of one delay
//! from every thread (a broker's request timeouts, SPEC W3 and W7), while level 0's 512 buckets,
//! each visited at its tick, mostly see a thread at a time (a broker's unanswered requests) and
//! keep one lane. The spread is a hint, read `Relaxed`: any created lane is a correct one to add
//! to (a cancel and a reset follow the ticket's or the location's lane, a visit and the flush lock
//! every created lane), and lanes are still created only under the gate, so it adds no race. Unit
//! tests and loom models start spread at every level (for loom an unmodelled byte that never changes).
//!
//! * An **add** takes its lane's lock (then the slot's), inserts, and lowers the expiration under
//!   it, as with one lock; but two lanes' adds may lower it at once, so a lowering is one atomic
//!   `fetch_min` (after a plain load, so the common add writes nothing shared), which none raises
//!   back. Each add that finds the expiration above its own queues the bucket first
//!   (`expiration.rs`).
//! * A **cancel** takes the lock of the lane its ticket names (the one the entry was added to), and
//!   if the entry has moved, that of the lane its location names (`entry/location.rs`, `timer/cancel.rs`):
//!   one lane lock at a time.
//! * A **visit** and the shutdown **flush** take the gate and then every created lane's lock, in
//!   lane order, do what they do over every lane, and set the new expiration while still holding
//!   them all: an add in any lane
//!   then either came before (and is visited or counted in the new expiration) or comes after (and
//!   sees the new expiration). Only they raise the expiration.
//!
//! Every stage decision below (`visit_at`, the early threshold, the chunk) is made per lane's stage:
//! an add sees only its lane. The early threshold is per lane's stage ([`EARLY_LANE_LEN`] = 128
//! whatever `L`: one thread's stage goes early past 128 entries), so a stage holds at most
//! `L · 128` entries at its round and a bucket flushed at its round at most `4 · L · 128` (1024
//! with 2 lanes, 8192 with 16, when every lane's part of every stage is just under the threshold).
//! The pacing and the minimum chunk ([`CASCADE_CHUNK`]) apply to each lane's stage: a visit of a
//! bucket whose lanes are all big takes a chunk from each.
//!
//! ## Stages
//!
//! A bucket above level 0 keeps its entries (in each lane) in **stages** by where their deadlines
//! fall in the round (see `wheel/place.rs`); each stage knows its round start, the tick from which it may be cascaded
//! (`opens`) and the first tick of its range (`due`), each the minimum over the entries added since
//! the stage was last empty (not recomputed on removal, nor when a reset moves an entry's deadline
//! later in place, `timer/reset.rs`: at worst a visit comes early). A level-0 bucket's stages are
//! the quarters of its tick (`place.rs`). A stage is to be visited at its round start (Kafka's
//! flush time) while it holds at most [`EARLY_LANE_LEN`] entries, and from `opens` while it holds
//! more ([`Stage::visit_at`]): a stage cascaded down to that size waits for the round with the rest.
//! The expiration is the earliest `visit_at` of the stages of every lane (lower after removals: a visit then finds
//! nothing to do and sets the right one). A **visit** at cursor `c` cascades every stage with
//! `visit_at <= c` (of a level-0 bucket, the lowest such quarter only); a big one only in part while its `due` is more than a tick ahead: a chunk paced
//! to finish in half the ticks left (twice the even rate, at least [`CASCADE_CHUNK`] entries), in
//! which case the bucket asks to be visited again at `c + 1`, after the buckets due then. Pacing, not
//! a fixed chunk, is what keeps firing punctual: the cascade work of a rotation is spread over the
//! rotation instead of being done as fast as the driver can.
//!
//! **Why a stage only grows big before it opens.** Placement puts an entry in the finest level whose
//! window holds it, so relative to the adder's base the entry's stage has not opened yet (`opens >
//! base`; `wheel/place.rs` unit tests). A stage therefore crosses the threshold before the driver may visit
//! it, and once open it only shrinks: that is what bounds a round-time flush to
//! `4 · L · EARLY_LANE_LEN` entries. The
//! one exception is a scheduler whose view of time is ahead of the driver's cursor, or behind it: it
//! may add to an open stage, or put two rounds in one stage; the minima then make the stage visited
//! early, which re-adds each entry through the wheel to where it belongs (a later round comes back to
//! this bucket with its own, later ticks).
//!
//! ## The expiration
//!
//! The expiration is lowered by adds, which queue the bucket in the timer's delay queue first, and
//! raised only by visits (`expiration.rs`, "The delay-queue trick").
//!
//! ## Locking
//!
//! A lane lock is taken before any slot lock (see `entry/`); several lane locks only by a visit or
//! a flush, every lane in lane order (held in a fixed array of [`MAX_BUCKET_LANES`] guards: no
//! allocation per visit). No user code runs under them; an add that lowers the expiration queues
//! the bucket under its lane lock (lane lock, then the queue's).

use std::fmt;

use super::place::{StagePlan, STAGES};
use super::slots::Slots;
use super::{faults, ShutDown};
use crate::deadline::Deadline;
use crate::entry::location::{BucketKey, LaneKey, Location};
use crate::entry::{Claimed, EntryArena, EntryId, EntryState, Fresh, InlineTask, TaskLines, Ticket};
use crate::sync::{AtomicBool, AtomicU64, Mutex, OnceLock, Ordering, UnmodelledAtomicU8};

/// "No expiration": the bucket is empty (or just flushed) and not queued.
pub(crate) const NO_EXPIRATION: u64 = u64::MAX;

/// The fewest entries a visit cascades from a lane's stage whose range is still more than a tick
/// ahead (a visit costs a queue pop and push: not worth it for fewer). The loom models use 1, so
/// that a few entries make a chunked cascade.
#[cfg(not(delaywheel_loom))]
pub(crate) const CASCADE_CHUNK: usize = 256;
#[cfg(delaywheel_loom)]
pub(crate) const CASCADE_CHUNK: usize = 1;

/// A lane's stage holding more entries than this is cascaded ahead of its round (see the module
/// docs): then a stage holds at most `L · EARLY_LANE_LEN` entries at its round (`L` lanes: 256
/// with 2, 2048 with 16), and a bucket flushed at its round at most `STAGES` times that (1024 with
/// 2 lanes, 8192 with 16). The loom models use 1, so that two entries in one lane's stage take the
/// early path.
#[cfg(not(delaywheel_loom))]
pub(crate) const EARLY_LANE_LEN: usize = 128;
#[cfg(delaywheel_loom)]
pub(crate) const EARLY_LANE_LEN: usize = 1;

/// A bucket of timer entries sharing one wheel slot (Kafka's `TimerTaskList`).
pub(crate) struct TimerTaskList {
    /// Its level and slot: how entries' locations name it, and the delay queue's tie-break.
    key: BucketKey,
    /// The wheel's bits per slot, which split the key into level and slot (`entry/location.rs`).
    slot_bits: u8,
    /// Shared by the lanes: read by every add, written by an add that lowers it and by a visit.
    expiration: AtomicU64,
    /// Taken to create a lane, and by a visit or a flush before the lanes' locks (see the module
    /// docs, "Lanes created on first use").
    gate: Mutex<()>,
    /// The lanes adds spread over, a mask of a thread's index (`lanes.rs`): 0 (lane 0 alone, a
    /// level-0 bucket at first), or `L - 1` (for good).
    spread: UnmodelledAtomicU8,
    /// A power of two of them, from [`MIN_BUCKET_LANES`] to [`MAX_BUCKET_LANES`], each created on
    /// first use, on cache lines of its own (see the module docs).
    lanes: Box<[OnceLock<Box<Lane>>]>,
}

/// One stage of a bucket lane: its entries and its cascade window (see the module docs). The ticks
/// are minima over the entries added since the stage was last empty, `NO_EXPIRATION` when empty.
/// `floor` is at most the deadline of every entry in it (lowered by each add, set by each take
/// beside a passed deadline from the list's index, `due_by.rs`; [`Deadline::LATEST`] when
/// empty): a reset writes a deadline in place only if it is no earlier (`entry/retarget.rs`), so
/// it stays a lower bound, and a take whose limit is below it has nothing to take and looks at
/// nothing.
struct Stage {
    slots: Slots,
    round: u64,
    opens: u64,
    due: u64,
    floor: Deadline,
}

impl Stage {
    fn new() -> Self {
        Stage {
            slots: Slots::default(),
            round: NO_EXPIRATION,
            opens: NO_EXPIRATION,
            due: NO_EXPIRATION,
            floor: Deadline::LATEST,
        }
    }

    /// When the stage is to be visited: at its round while small, from `opens` once big.
    fn visit_at(&self) -> u64 {
        if self.slots.live() > EARLY_LANE_LEN {
            self.opens
        } else {
            self.round
        }
    }

    fn reset_if_empty(&mut self) {
        if self.slots.live() == 0 {
            // Field by field: the list (empty, its capacity kept) stays, and nothing is dropped.
            (self.round, self.opens, self.due) = (NO_EXPIRATION, NO_EXPIRATION, NO_EXPIRATION);
            self.floor = Deadline::LATEST;
        }
    }
}

/// What [`TimerTaskList::remove`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Removed {
    /// The entry was here: taken out and its slot released (the caller returns it to the arena).
    Taken,
    /// The entry is in transit (its holder releases it), or was already released.
    Gone,
    /// The entry is in another bucket lane.
    Elsewhere,
}

/// Takes `entry`, which just left this bucket lane ([`Claimed::Here`]), out of its stage's list at
/// `location` (the lane's lock held as `stages`).
fn take_out(stages: &mut [Stage; STAGES as usize], arena: &EntryArena, location: Location, entry: EntryId) {
    let stage = &mut stages[location.stage()];
    let removed = stage.slots.take(arena, location.index());
    stage.reset_if_empty();
    debug_assert_eq!(removed, Some(entry), "location out of date");
}

/// A due entry as a visit hands it over: its id, its stamp (scheduling order), where its closure
/// lies outside its slot (for the fire loop's prefetch), and its deadline.
pub(crate) type DueEntry = ((EntryId, u64, TaskLines), Deadline);

/// Where a visit puts the entries it takes out of a bucket, in transit (no location, held by the
/// caller: `entry/`), each with its deadline.
pub(crate) struct Handoff<'a> {
    /// The entries to re-add through the wheel relative to the cursor (a cascade); from a coarser
    /// bucket also those due at the cursor, which the re-add files in the quarters of the
    /// level-0 bucket of their tick (`place.rs`, "Level 0 by quarters").
    pub(crate) cascade: &'a mut Vec<(EntryId, Deadline)>,
    /// The entries of a level-0 bucket due at the cursor, to fire, each with its stamp, the order
    /// of its schedule (`entry/`): the batch fires in deadline order, equal deadlines in stamp
    /// order.
    pub(crate) due: &'a mut Vec<DueEntry>,
    /// The entries due at the cursor but stamped after `stamps`, scheduled while this advance runs:
    /// re-added once its round is over, for the next advance (`delay_queue/`, "Rounds"); at once,
    /// into a bucket the round visits again, they would be taken again.
    pub(crate) late: &'a mut Vec<(EntryId, Deadline)>,
    /// The last stamp reserved when the advance began (`entry/stamps.rs`, "Rounds").
    pub(crate) stamps: u64,
}

/// What a popped queue entry turned out to be.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Popped {
    /// The bucket's live entry: it was visited; with `Some(tick)` the caller queues it there.
    Visited { requeue: Option<u64> },
    /// An older entry left behind by a lowering: nothing was done.
    Stale,
}

impl TimerTaskList {
    /// Inserts a new entry: occupies the vacant slot `entry` its scheduler holds with `fresh`'s
    /// contents in the same critical section that sets its location (`entry/`), in the calling
    /// thread's lane, in the stage `plan` names (see [`add_with`](TimerTaskList::add_with)).
    /// `Ok(Some(tick))` if it queued the bucket at `tick` with `queue`, having found the expiration
    /// later.
    ///
    /// The flag `shut_down` is read under the lane lock and the entry is refused if it is set: the
    /// shutdown drain sets the flag before it locks every bucket, so an entry is either refused
    /// here or found by the drain (see `timer/`).
    #[inline]
    pub(crate) fn insert_new(
        this: &Self,
        arena: &EntryArena,
        (entry, fresh): (EntryId, &mut Fresh),
        plan: StagePlan,
        shut_down: &AtomicBool,
        queue: impl FnOnce(u64),
    ) -> Result<Option<u64>, ShutDown> {
        if fault!("shutdown_flag_read_before_lock") {
            return faults::insert_reading_the_flag_first(
                this,
                arena,
                (entry, fresh),
                plan,
                shut_down,
                queue,
            );
        }
        let refused = || shut_down.load(Ordering::Acquire);
        let enter = |state: &mut EntryState<'_>, lane| {
            state.occupy(fresh, lane);
            true
        };
        let added = this.add_with(arena, entry, plan, refused, enter, queue);
        added.ok_or(ShutDown)
    }

    /// What both adds do: under the calling thread's lane lock, unless `refused()`, and then under
    /// the slot lock, if `enter` admits the entry, inserts it in the stage `plan` names, lowering
    /// that stage's ticks to the plan's and the bucket's expiration to the stage's `visit_at` (having
    /// queued the bucket there with `queue`: `expiration.rs`). `None` if refused or not admitted;
    /// else `Some(tick)` if it queued the bucket at `tick`, having found the expiration later.
    #[inline(always)]
    pub(in crate::wheel) fn add_with(
        &self,
        arena: &EntryArena,
        entry: EntryId,
        plan: StagePlan,
        refused: impl FnOnce() -> bool,
        enter: impl FnOnce(&mut EntryState<'_>, LaneKey) -> bool,
        queue: impl FnOnce(u64),
    ) -> Option<Option<u64>> {
        let (lane, mut stages) = self.lock_local();
        if refused() {
            return None;
        }
        let stage = &mut stages[plan.index];
        let index = stage.slots.next_index(arena);
        let deadline = {
            let lane = LaneKey::new(self.key, lane);
            let mut state = arena.lock(entry);
            if !enter(&mut state, lane) {
                return None;
            }
            debug_assert!(state.location.is_none(), "entry added to two buckets: {entry:?}");
            state.location = Some(Location::new(lane, plan.index, index));
            state.deadline
        };
        stage.slots.push(entry);
        stage.floor = stage.floor.min(deadline);
        stage.round = stage.round.min(plan.round);
        stage.opens = stage.opens.min(plan.opens);
        stage.due = stage.due.min(plan.due);
        let visit_at = stage.visit_at();
        Some(self.lower_expiration(visit_at, queue).then_some(visit_at))
    }

    /// Takes the entry `ticket` names out of lane `lane` of this bucket if it is there, and
    /// releases its slot: the caller then returns it to the arena. Only for an entry the caller
    /// claimed (a cancel): it is no longer pending, as a release requires (`entry/`).
    pub(crate) fn remove(this: &Self, arena: &EntryArena, ticket: Ticket, lane: usize) -> Removed {
        let mut stages = this.lane(lane).stages.lock();
        let claimed = {
            let mut state = arena.lock(ticket.id);
            if state.generation() != ticket.generation {
                return Removed::Gone;
            }
            state.leave_if_in(LaneKey::new(this.key, lane))
        };
        match claimed {
            Claimed::Here(location) => {
                take_out(&mut stages, arena, location, ticket.id);
                Removed::Taken
            }
            Claimed::Elsewhere(_) => Removed::Elsewhere,
            Claimed::InTransit => Removed::Gone,
        }
    }

    /// A cancel, with this bucket being the one the entry was first added to (see
    /// `timer/cancel.rs`): under the lock of the ticket's lane of this bucket and then the slot's,
    /// claims the entry `ticket` names ([`EntryState::claim_cancel`]) and, if it is still in that
    /// lane, takes it out of the list. `None` if the ticket no longer names a pending entry.
    #[inline]
    pub(crate) fn cancel(this: &Self, arena: &EntryArena, ticket: Ticket) -> Option<(InlineTask, Claimed)> {
        debug_assert_eq!(ticket.bucket.bucket(), this.key);
        let mut stages = this.lane(ticket.bucket.lane()).stages.lock();
        let (task, claimed) = arena.lock(ticket.id).claim_cancel(ticket, ticket.bucket)?;
        if let Claimed::Here(location) = claimed {
            take_out(&mut stages, arena, location, ticket.id);
        }
        Some((task, claimed))
    }

    /// The driver's visit of a bucket it popped, with the cursor at `cursor` (at or after the popped
    /// key): under every lane's lock, takes out every lane's stage whose window has opened (a chunk
    /// of a big one, see the module docs), into `out` (see [`Handoff`]), and sets the next
    /// expiration, which the caller must queue. A bucket not due at the cursor was a stale queue
    /// entry (see the module docs): [`Popped::Stale`], nothing changes.
    pub(crate) fn visit_into(&self, arena: &EntryArena, cursor: u64, out: Handoff<'_>) -> Popped {
        let Handoff { cascade, due, late, stamps } = out;
        let mut lanes = self.lock_all();
        if self.expiration.load(Ordering::Acquire) > cursor {
            return Popped::Stale;
        }
        let mut next = NO_EXPIRATION;
        // Only a level-0 visit fires (a coarser one marks nothing due: `leave_for_transit` marks
        // none stamped above 0), a quarter of its tick at a time, the lowest with entries, queued
        // again at the cursor for the rest (`place.rs`, "Level 0 by quarters"); overdue ticks in it
        // (passed deadlines filed in their tick's slot) go out whole, one batch in deadline order.
        let fires = self.level() == 0;
        let marks = if fires { stamps } else { 0 };
        let stages = lanes.locked.iter().flatten().flat_map(|stages| stages.iter().enumerate());
        let open = stages.filter(|(_, stage)| fires && stage.slots.live() > 0 && stage.visit_at() <= cursor);
        let (lowest, overdue) = open.fold((usize::MAX, false), |(lowest, overdue), (index, stage)| {
            (lowest.min(index), overdue || stage.round < cursor)
        });
        let quarter = (lowest != usize::MAX && !overdue).then_some(lowest);
        for (index, stage) in
            lanes.locked.iter_mut().flatten().flat_map(|stages| stages.iter_mut().enumerate())
        {
            if stage.slots.live() == 0 {
                continue;
            }
            if stage.visit_at() > cursor {
                next = next.min(stage.visit_at());
                continue;
            }
            if quarter.is_some_and(|quarter| index != quarter) {
                // Seeded fault `level0_rest_not_requeued` (docs/loom.md): the quarters left are
                // not in the next expiration, so nothing re-queues them.
                if !fault!("level0_rest_not_requeued") {
                    next = next.min(stage.visit_at());
                }
                continue;
            }
            let live = stage.slots.live();
            // Ticks left to cascade before the cursor reaches the stage's range (the visit at
            // `cursor + 1` must still come before the finer buckets due at `due`).
            let slack = stage.due.saturating_sub(cursor).saturating_sub(1);
            let take = match usize::try_from(slack) {
                Ok(0) => live,
                Ok(slack) => (2 * live).div_ceil(slack).max(CASCADE_CHUNK).min(live),
                Err(_) => CASCADE_CHUNK.min(live),
            };
            // Room for all in both: neither grows under the slot locks.
            cascade.reserve(take);
            due.reserve(take);
            // Due or not by the deadline in each entry's slot, read under its lock as it leaves
            // (`leave_for_transit`): a reset may have moved it later in place (`timer/reset.rs`).
            // Seeded fault `visit_fires_level0_by_round` (docs/loom.md): a level-0 bucket's
            // entries are taken as due at its round, so one re-armed later fires early.
            let by_round = fault!("visit_fires_level0_by_round") && fires;
            stage.slots.take_front(take, arena, (cursor, marks), |entry, (deadline, stamp, lines)| {
                if stamp > stamps && deadline.tick() <= cursor {
                    late.push((entry, deadline));
                } else if fires && (deadline.tick() <= cursor || by_round) {
                    due.push(((entry, stamp, lines), deadline));
                } else {
                    cascade.push((entry, deadline));
                }
            });
            stage.reset_if_empty();
            // (The seeded fault `chunk_not_requeued` leaves the rest of a chunked stage unqueued.)
            if stage.slots.live() > 0 && !fault!("chunk_not_requeued") {
                // Big still: the next chunk a tick later; small again: its round (if not passed).
                next = next.min(stage.visit_at().max(cursor + 1));
            }
        }
        // Still under every lane's lock (the seeded fault `flush_resets_after_unlock` unlocks first).
        if fault!("flush_resets_after_unlock") {
            drop(lanes);
        }
        self.expiration.store(next, Ordering::Release);
        Popped::Visited { requeue: (next != NO_EXPIRATION).then_some(next) }
    }

    /// The entries in the bucket now, for `Timer::stats` only (never on a hot path): each lane's
    /// lock is taken in turn, briefly, so under concurrent use the sum is a snapshot (entries in
    /// transit, being cascaded or fired, are in no bucket and not counted).
    pub(crate) fn len(&self) -> usize {
        self.created()
            .map(|lane| lane.stages.lock().iter().map(|stage| stage.slots.live()).sum::<usize>())
            .sum()
    }

    /// Empties the bucket and resets its expiration under every lane's lock, for the shutdown
    /// drain: the caller holds what it returns.
    pub(crate) fn flush(&self, arena: &EntryArena) -> Vec<(EntryId, Deadline)> {
        let mut lanes = self.lock_all();
        let mut entries = Vec::new();
        for stage in lanes.locked.iter_mut().flatten().flat_map(|stages| stages.iter_mut()) {
            let live = stage.slots.live();
            entries.reserve(live);
            // Every entry counts as due: the drain abandons them all, and a reset leaves them be.
            stage.slots.take_front(live, arena, (u64::MAX, u64::MAX), |entry, (deadline, ..)| {
                entries.push((entry, deadline))
            });
            stage.reset_if_empty();
        }
        self.expiration.store(NO_EXPIRATION, Ordering::Release);
        entries
    }
}

impl fmt::Debug for TimerTaskList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerTaskList")
            .field("level", &self.level())
            .field("slot", &self.slot())
            .field("expiration", &self.expiration())
            .finish()
    }
}

mod due_by;
mod expiration;
mod held;
mod lanes;
pub(crate) use held::Refused;
use lanes::Lane;
pub(crate) use lanes::{default_lanes, MAX_BUCKET_LANES, MIN_BUCKET_LANES};

#[cfg(test)]
mod tests;
