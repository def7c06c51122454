//! One shard's timer state: a [slab](super::slab) of entries and Kafka's hierarchical timing wheel
//! of bucket lists over it, sequential (`&mut self`: the shard's lock guards it, so no atomics).
//!
//! **The geometry is the timer's contract** (docs/design.md, "Levels, buckets and the delay
//! queue"): levels of `wheel_size` buckets (any size from 2 to 2²⁴), level `k`'s buckets
//! `wheel_size`ᵏ ticks wide, the levels above the first created as deadlines need them (up to
//! `crate::wheel::place::max_levels`, which covers every tick); each bucket a list of entries and
//! an **expiration**, the start of its current round; and one queue of buckets ordered by
//! expiration, outside the wheel, that the driver polls. The wheel does not own that queue: it
//! tells its caller when a bucket must be offered to it, and the caller hands back each bucket the
//! queue pops ([`Wheel::flush`]). So the driver sleeps until the earliest bucket is due, never
//! ticking through empty ones, and an idle wheel costs nothing.
//!
//! **Placement** is the crate's (`crate::wheel::place`, its precomputed `LevelTable`; the stages it
//! also computes serve a split bucket only: "A big bucket"): relative to the wheel's **time** (the
//! cursor, the last expiration flushed), a deadline goes to the finest level whose window holds it,
//! in the slot of its round there; the round's start is the bucket's expiration, never after the
//! deadline. Kafka's `setExpiration`: an insert, a reset and a cascade's re-add each report
//! ([`Offer`]) whether they set the bucket's expiration for a new round, and then, and only then,
//! the caller offers (expiration, bucket) to the queue. A remove leaves the expiration, so a loop of
//! schedule and cancel in one bucket offers it once per round. A deadline at or before the time is
//! not filed in a bucket but on the **overdue** list, offered at the time when it takes its first
//! entry since a drain (for entries moved there from behind the time, its first such: "Rounds"),
//! and drained by that offer's flush ([`Wheel::drain_overdue`]): a zero delay or a passed deadline
//! runs by the next advance even if the clock did not move.
//!
//! **Flush** ([`Wheel::flush`], `flush.rs`): the queue popped (expiration, bucket). If the bucket's
//! expiration is another (a flush or a new round came since), the offer was stale and nothing
//! happens. Otherwise the time moves to the expiration (never backwards) and each entry is placed
//! again from the new time: due, it is held by the batch ("Held") unless the round's limit leaves
//! it ("Rounds"); otherwise it goes to a finer level (the cascade), whose new rounds are offers for
//! the caller. A bucket left empty forgets its round.
//!
//! **Rounds.** Each flush and drain takes the caller's **limit**, the last stamp of its
//! round: a due entry numbered above it (scheduled, or reset, after the round began) is not held
//! but linked on the overdue list (a bucket's at its tail, the bucket's round forgotten; a drain's kept
//! in the run at its head, which a drain of no higher limit skips: `lists.rs`, "Kept"), and the flush
//! returns that list's offer, if it was not offered since its last drain, for the caller to queue for
//! the next round. So a round takes only what its limit covers, however many entries are filed while it
//! runs, the next round takes the rest even if the clock did not move, and rounds of one limit walk a
//! kept entry at most twice. The overdue list's offers are of two kinds ([`Offers`]): `overdue`,
//! for an entry's own passed deadline (an insert's, a reset's, a set-aside's), made if the list
//! was not offered since its last drain, which the caller makes for the next round; and `moved`,
//! for entries a bucket behind the time moves there, made if no such offer was made since its
//! last drain, whatever other offer is pending, which the caller makes so that the round under
//! way takes them (due by the time already, those its limit covers are its own). A drain clears
//! both flags, and sets the first again when it keeps entries.
//!
//! **Held.** A flush, or the overdue list's drain, does not take a due entry's payload: it unlinks
//! the entry, marks it held (its life word's list code `HELD`, of no list: `life.rs`) and appends
//! a [`Due`] (its key and its order, no payload) to the batch. The entry stays in its slot, pending and counted in
//! [`len`](Wheel::len), until one of these takes it, whichever comes first: the batch's
//! [`claim`](Wheel::claim) just before it runs (its payload, `None` if gone); a
//! [`remove`](Wheel::remove), a cancel, which wins over the claim still to come; or
//! [`drain_all`](Wheel::drain_all). Each takes it once, vacating the slot, so the caller that
//! counts entries counts it out at that take, under the same lock. A held entry is being fired: a
//! [`reset`](Wheel::reset) leaves it and answers as for a stale key, and
//! [`deadline`](Wheel::deadline) still reads the deadline it fell due by (pending until claimed).
//!
//! **A big bucket** (`split.rs`, `visit.rs`; docs/lean_core.md, "A big bucket's cascade"). A
//! bucket above level 0 whose list reaches 1,024 entries when an entry links into its round is
//! split into the four stages of its round that the placement computes, in a record the bucket
//! names; the split offers a **visit** of the bucket (its code with a visit bit) at the first
//! stage's `opens`, as an offer for the caller to make after the unlock. The queue pops visits as
//! it pops rounds, and each cascades a paced chunk of each open stage from the time, as a flush
//! places its entries, then offers the next, ahead of the round and on after it, until the stages
//! are empty. The round's own flush of a split bucket is a visit.
//!
//! **Passed deadlines mid-tick.** A deadline passed within the tick under way, `(f, f + 1]`, is
//! filed at `f` (`deadline.rs`, `P`), so it is due at the next advance, while the entries of
//! `f + 1` wait in their buckets for that tick's flush: the ones at or before it, and those equal
//! to it scheduled earlier, would run after it. [`take_due_by`](Wheel::take_due_by) holds them
//! with its batch: given the passed deadline's word as one of `f + 1`'s
//! (`Deadline::in_own_tick`) and the caller's stamp limit, it holds each entry of `f + 1` at or
//! before the limit whose stamp is within it, as a flush holds. At level 0 the list of `f + 1` is
//! sorted by word on the tick's first take, so later takes walk it only up to their limit, and
//! the entries linked since (`sorted_run.rs`: its invariants); at a coarser level, where an entry
//! of a round not yet cascaded still waits, the bucket whose range holds `f + 1` is scanned, below
//! the split size, or the stage holding `f + 1` of a split one, which its visits empty before its
//! `due` (docs/lean_core.md, "A big bucket's cascade"). Batches without one pay nothing.
//!
//! **Set aside.** A held entry can go back, pending: [`set_aside`](Wheel::set_aside) files it by
//! its deadline from the wheel's time as an insert files (a passed one on the overdue list), with
//! the offers an insert makes; the batch must not claim it then. Once back, a remove takes it and a
//! reset moves it, as any pending entry.
//!
//! **Status.** Each take records how the entry ended in its slot's life word (`life.rs`): a claim
//! `Fired`, a remove `Cancelled`, a drain `Abandoned`. [`status`](Wheel::status) reads it by key
//! until the slot is reused (a stale key, whose stamp is not the new occupant's, then reads
//! `None`).
//!
//! **A bucket behind the time.** The queue is polled outside the shard's lock, so the time can move
//! past a bucket whose offer is still queued (the driver popped a later bucket first while a
//! schedule filed an earlier one). A placement that then lands in that bucket for a later round
//! finds it holding the old round, whose entries are all due (its range ends at or before the
//! window of its level, so at or before the time): they move to the overdue list (offered for the
//! round under way: "Rounds") before the new round is set, and the old offer, stale, finds nothing.
//!
//! **Order.** An entry's deadline is the crate's [`Deadline`] word, placed by its
//! [`tick`](Deadline::tick) (for a deadline passed within the tick under way, the tick it is filed
//! at), and its **stamp** is the caller's (`entry/stamps.rs`: unique among the entries one wheel
//! is ever given, below 2⁵⁶). Each [`Due`] and [`Fired`] carries (deadline, stamp), by which the
//! caller sorts a batch, merged across shards, as `deadline::sort_batch` does: by the word, equal
//! deadlines in stamp order ("Ties"). The stamp is also the slot's generation (`slab.rs`), so a
//! key is (slot, stamp). A reset keeps the entry's stamp, as `Timer::reset` keeps a task's.
//!
//! **Where an entry is** follows from its life word's list code and its deadline: a level `k`
//! names the bucket `(tick / wheel_size^k) % wheel_size` of level `k` (and, if that bucket is
//! split, the stage of its round the tick falls in), the slot placement gave it
//! (every entry in a bucket is filed there from its own tick: a deadline at or before the time goes
//! to the overdue list, never to a bucket, and so do a bucket's entries left behind the time); the
//! other codes name the overdue list, the held state and no list.
//!
//! **Invariants**, whenever the shard's lock is free: every occupied slot is held or on exactly
//! one list (a bucket's, a split bucket's stage's, or the overdue list), the one its code names
//! (with, for a split bucket, the stage its tick and the round name); a split bucket counts its
//! stages' entries and has its next visit queued (its round's offer, if that is the next); an
//! entry in a bucket lies in
//! the round the bucket's expiration starts and is placed there from the time, or (a bucket behind
//! the time) is due; an entry on the overdue list is due, and so is a held one, but for those a
//! [`take_due_by`](Wheel::take_due_by) held (of the tick after a deadline passed mid-tick); every
//! vacant slot is on the slab's free list; `len` is exact, held entries included.
//!
//! **Cost.** Insert (amortised, as the slab grows), remove, reset and claim are O(1), but for the
//! insert or reset that lands in a bucket left behind the time, which moves that bucket's entries
//! to the overdue list (O(those entries), once per such bucket; a split one's stages are joined
//! first, O(4)), and the link that splits a bucket (O(1,024), once per split); a remove, a reset
//! or `take_due_by`'s take of an entry in a split bucket adds a stage's look-up. A flush is O(its entries), each
//! entry cascading at most once a level, in one hold of the shard's lock, but a bucket above level
//! 0 holds fewer than 1,024 entries unless it is split, and a split bucket's flush and visits
//! walk paced chunks (`visit.rs`; `cascade_tests.rs` measures them on SPEC W4's shape). A level-0
//! bucket's entries are all due at its tick and go to the batch whole. A slot is 48 bytes for a 24-byte payload
//! with a niche (`Option<InlineTask>`'s size): life word 8, links 8, deadline 8, payload 24, the
//! payload's niche marking the vacant slot; a bucket 24 bytes (its list's head, tail and count,
//! its expiration), in chunks of up to 512 (`buckets.rs`). Each list counts its entries and the
//! wheel each level's, O(1) on every link and unlink, for [`stats`](Wheel::stats) (`stats.rs`). No
//! method drops a payload.

use std::fmt;

use super::life::{ListCode, Status};
use super::slab::Slab;
use crate::deadline::{Deadline, MAX_DEADLINE_TICK};
use crate::wheel::place::{max_levels, LevelTable, Placement};

mod buckets;
mod due_by;
mod flush;
mod in_place;
mod lists;
mod reset;
mod sorted_run;
mod split;
mod stats;
mod trace;
mod types;
mod visit;
mod warm;

pub(crate) use buckets::{BucketCode, Offer, Offers};
use buckets::{Levels, List, NO_ROUND};
use split::Split;
pub(crate) use stats::WheelStats;
use types::Entry;
pub use types::{Due, Fired, Key, Refusal, Refused};

// A slot for a payload of three words with a niche (`Option<InlineTask>`'s shape) is 48 bytes.
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<super::slab::Slot<Entry<Slot48Payload>>>() == 48);

/// A payload of `InlineTask`'s size and niche (a vtable reference and 16 bytes), for the slot's
/// size assertion (`shard/` does not reach `entry/`).
type Slot48Payload = (&'static (), [u64; 2]);

/// The last deadline tick the wheel takes: the crate's ([`MAX_DEADLINE_TICK`]).
pub(crate) const MAX_TICK: u64 = MAX_DEADLINE_TICK;

/// The largest wheel: buckets a level (a [`BucketCode`] names each).
pub(crate) const MAX_WHEEL_SIZE: u64 = 1 << 24;

/// The default wheel size (the timer's).
pub(crate) const DEFAULT_WHEEL_SIZE: u64 = 512;

/// One shard's slab and wheel (module docs): Kafka's `TimingWheel`, each bucket a `TimerTaskList`.
pub struct Wheel<P> {
    slab: Slab<Entry<P>>,
    table: LevelTable,
    levels: Levels,
    overdue: List,
    /// Its kept run's mark and its earliest tick (`lists.rs`, "Kept").
    kept: lists::Kept,
    /// Whether an offer of the overdue list was reported since its last drain (module docs,
    /// "Rounds").
    overdue_offered: bool,
    /// Whether an offer of the overdue list for the round under way (entries a bucket behind the
    /// time moved there) was reported since its last drain.
    moved_offered: bool,
    /// The last expiration flushed.
    time: u64,
    /// The run that opens the level-0 list of a tick taken by `take_due_by` (`sorted_run.rs`).
    run: sorted_run::SortedRun,
    wheel_size: u64,
    /// Entries in each level's buckets (`stats.rs`).
    per_level: [u32; ListCode::LEVELS],
    /// The records of split buckets (`split.rs`), by index, and the indices of those free.
    splits: Vec<Split>,
    free_splits: Vec<u32>,
    /// The split size (`split::SPLIT_AT`; the unit tests and loom models set a smaller one).
    split_at: split::SplitAt,
    /// Entries walked by flushes, drains, visits and splits (`cascade_tests.rs`' load).
    #[cfg(test)]
    walked: usize,
    /// Entries the last bucket's flush left on the overdue list, above the round's limit
    /// (`trace.rs`' `late`).
    #[cfg(feature = "tracing")]
    flush_kept: usize,
}

impl<P> Default for Wheel<P> {
    fn default() -> Self {
        Wheel::new(DEFAULT_WHEEL_SIZE)
    }
}

impl<P> fmt::Debug for Wheel<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wheel")
            .field("wheel_size", &self.wheel_size)
            .field("len", &self.len())
            .field("time", &self.time)
            .field("levels", &self.levels.created())
            .finish_non_exhaustive()
    }
}

impl<P> Wheel<P> {
    /// An empty wheel of `wheel_size` buckets a level at time 0: no level, bucket or slot written.
    ///
    /// # Panics
    ///
    /// If `wheel_size` is below 2 or above [`MAX_WHEEL_SIZE`].
    pub(crate) fn new(wheel_size: u64) -> Self {
        assert!((2..=MAX_WHEEL_SIZE).contains(&wheel_size), "wheel size {wheel_size} out of 2..=2^24");
        Wheel {
            slab: Slab::new(),
            table: LevelTable::new(wheel_size),
            levels: Levels::new(wheel_size as usize),
            overdue: List::EMPTY,
            kept: lists::Kept::EMPTY,
            overdue_offered: false,
            moved_offered: false,
            time: 0,
            run: sorted_run::SortedRun::EMPTY,
            wheel_size,
            per_level: [0; ListCode::LEVELS],
            splits: Vec::new(),
            free_splits: Vec::new(),
            split_at: split::SplitAt::INITIAL,
            #[cfg(test)]
            walked: 0,
            #[cfg(feature = "tracing")]
            flush_kept: 0,
        }
    }

    /// Sets the split size (`split.rs`), at least 2: the unit tests and loom models split small
    /// buckets.
    #[cfg(any(test, delaywheel_loom))]
    pub(crate) fn set_split_at(&mut self, entries: u32) {
        assert!(entries >= 2, "a split size of {entries}");
        self.split_at = split::SplitAt(entries);
    }

    /// Counts one entry walked under the lock (the unit tests' load; nothing outside them).
    #[inline]
    fn count_walked(&mut self) {
        #[cfg(test)]
        {
            self.walked += 1;
        }
    }

    /// Buckets a level.
    pub(crate) fn wheel_size(&self) -> u64 {
        self.wheel_size
    }

    /// Levels created so far (at most `max_levels(wheel_size)`).
    pub(crate) fn levels(&self) -> usize {
        self.levels.created()
    }

    /// Entries pending, held ones included.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.slab.len()
    }

    /// Whether no entry is pending.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.slab.is_empty()
    }

    /// The wheel's time: the last expiration flushed (every entry due by it is due at the next
    /// advance).
    pub(crate) fn time(&self) -> u64 {
        self.time
    }

    /// Whether the overdue list holds entries (the next advance has work).
    pub(crate) fn has_overdue(&self) -> bool {
        !self.overdue.is_empty()
    }

    /// Files `payload` due at `deadline` (placed by its tick) with the caller's `stamp` (below
    /// 2⁵⁶, unique among the entries the wheel is ever given: module docs, "Order"): in its
    /// bucket, or on the overdue list if its tick is not after the time. Its key, which names it
    /// until it leaves the wheel, and the offers the caller makes to the queue: its bucket's, if
    /// the insert set the bucket's expiration for a new round, and the overdue list's, if it was
    /// not offered since its last drain.
    ///
    /// # Errors
    ///
    /// The payload back, with [`Refusal::Full`], if the slab has no slot index left; the wheel is
    /// unchanged.
    #[inline]
    pub(crate) fn insert(
        &mut self,
        deadline: Deadline,
        stamp: u64,
        payload: P,
    ) -> Result<(Key, Offers), Refused<P>> {
        let index = match self.slab.occupy(stamp, Entry { when: deadline, payload }) {
            Ok(index) => index,
            Err(entry) => return Err(Refused { payload: entry.payload, reason: Refusal::Full }),
        };
        let offer = self.file(index, deadline.tick());
        Ok((Key { slot: index, generation: stamp }, offer))
    }

    /// Takes the entry `key` names out, also a held one (the cancel wins over the batch's claim),
    /// its status `Cancelled`: its payload, or `None` if it has left the wheel (claimed, removed,
    /// drained: the key is stale, also after its slot's reuse). Its bucket keeps its expiration.
    #[inline]
    pub(crate) fn remove(&mut self, key: Key) -> Option<P> {
        if self.slab.get(key.slot, key.generation)?.life.list() != ListCode::HELD {
            self.unlink(key.slot);
        }
        Some(self.slab.vacate(key.slot, Status::Cancelled).payload)
    }

    /// Takes the held entry `key` names out (module docs, "Held"), its status `Fired`: its
    /// payload, for the batch to run, or `None` if it is gone (removed or drained since the flush
    /// held it; the key is stale).
    #[inline]
    pub(crate) fn claim(&mut self, key: Key) -> Option<P> {
        let held = self.slab.get(key.slot, key.generation)?.life.list() == ListCode::HELD;
        debug_assert!(held, "a claim of {key:?}, pending and not held");
        if !held {
            return None;
        }
        Some(self.slab.vacate(key.slot, Status::Fired).payload)
    }

    /// The deadline of the entry `key` names, `None` if the key is stale. A held entry is pending
    /// until claimed: its deadline reads back, the one it fell due by.
    pub(crate) fn deadline(&self, key: Key) -> Option<Deadline> {
        Some(self.slab.get(key.slot, key.generation)?.entry.as_ref()?.when)
    }

    /// Where the entry `key` names is in its life (module docs, "Status"): `Pending` until a take,
    /// then how it ended, until its slot is reused or cut off by a shrink; `None` then.
    pub(crate) fn status(&self, key: Key) -> Option<Status> {
        self.slab.status(key.slot, key.generation)
    }

    /// Hands every pending entry out, held ones too (a batch's claim of them then finds nothing),
    /// each status `Abandoned`,
    /// appended to `out` in slot order (the caller sorts by [`Fired::order`] if it needs deadline
    /// order): the wheel is left empty, every key stale,
    /// every bucket's round forgotten, its slots vacant and written (a shrink's steps,
    /// [`shrink_step`](Wheel::shrink_step), give them back).
    pub(crate) fn drain_all(&mut self, out: &mut Vec<Fired<P>>) {
        // Room first: the slab's walk must not panic halfway.
        out.reserve(self.len());
        self.slab.take_all(Status::Abandoned, |slot, stamp, entry| out.push(entry.fired(slot, stamp)));
        self.levels.clear();
        self.run.forget();
        self.per_level = [0; ListCode::LEVELS];
        (self.overdue, self.kept) = (List::EMPTY, lists::Kept::EMPTY);
        (self.overdue_offered, self.moved_offered) = (false, false);
        self.splits.clear();
        self.free_splits.clear();
    }

    /// Writes vacant slots ahead until `slots` entries fit without the slab growing (their pages
    /// touched now rather than on the schedule path).
    pub(crate) fn reserve(&mut self, slots: usize) {
        self.slab.reserve(slots);
    }

    /// Grows its slab from `reserve` (`shard/reserve.rs`): an empty wheel only.
    pub(crate) fn attach(&mut self, reserve: crate::sync::Arc<super::reserve::Reserve>) {
        self.slab.attach(reserve);
    }

    /// Units its slab took from a reserve and holds.
    pub(crate) fn taken(&self) -> usize {
        self.slab.taken()
    }

    /// Bytes of one of its slots.
    pub(crate) const fn slot_bytes() -> usize {
        std::mem::size_of::<super::slab::Slot<Entry<P>>>()
    }

    /// A step of the slab's shrink (`Slab::shrink_step`: `slots` walked, `STEP_BYTES`, the system
    /// calls outside the lock left to `out`): its vacant slots after its last occupied one (all
    /// when empty), then its spare capacity; slots given back, whether done. A vacant slot below
    /// an occupied one stays (keys name their slots). The buckets are not the slab's and stay.
    pub(crate) fn shrink_step(&mut self, slots: usize, out: &mut super::slab::Cut) -> (usize, bool) {
        self.slab.shrink_step(slots, super::slab::STEP_BYTES, out)
    }

    /// Links the occupied slot `index`, due at `deadline`, where it belongs from the time: the
    /// overdue list, or its bucket (module docs). The offers it makes.
    #[inline]
    fn file(&mut self, index: u32, deadline: u64) -> Offers {
        let (level, slot, round) = match self.table.place(self.time, deadline) {
            Placement::Due => return Offers { overdue: self.link_overdue(index), ..Offers::default() },
            Placement::Slot { level, slot, stage } => (level, slot, stage.round),
        };
        debug_assert!(level < max_levels(self.wheel_size) && round > self.time && round <= deadline);
        debug_assert_eq!(slot, self.levels.slot_of(level, deadline), "the bucket follows from the tick");
        let list = ListCode::level(level);
        let bucket = self.levels.bucket(level, slot);
        self.per_level[level] += 1;
        let Some(offer) = round_offer(bucket.expiration, level, slot, round) else {
            // A split bucket, or one the link splits (`split.rs`; never at level 0): apart.
            if bucket.split != 0 || (bucket.list.len + 1 >= self.split_at.get() && level != 0) {
                return self.link_big(index, level, slot, deadline);
            }
            lists::link(&mut self.slab, &mut bucket.list, index, list);
            return Offers::default();
        };
        // A new round for the bucket: offered; entries of a round of the past (or its split
        // record, emptied) move out first.
        debug_assert!(bucket.expiration == NO_ROUND || bucket.expiration < round);
        bucket.expiration = round;
        let behind = !bucket.list.is_empty() || bucket.split != 0;
        let moved = if behind { self.overdue_behind(level, slot) } else { None };
        lists::link(&mut self.slab, &mut self.levels.bucket(level, slot).list, index, list);
        Offers { round: Some(offer), overdue: None, moved }
    }

    /// The offers an insert of `deadline` would make now, without it (the seeded fault
    /// `shard_core_offer_before_link`, `super::faults`): [`file`](Wheel::file)'s rules, read, for
    /// the bucket's round and the overdue list's offer for a passed deadline.
    pub(super) fn offers_for(&self, deadline: u64) -> Offers {
        match self.table.place(self.time, deadline) {
            Placement::Due => Offers { overdue: self.overdue_offer(), ..Offers::default() },
            Placement::Slot { level, slot, stage } => {
                let expiration = self.levels.get(level, slot).map_or(NO_ROUND, |b| b.expiration);
                Offers { round: round_offer(expiration, level, slot, stage.round), ..Offers::default() }
            }
        }
    }

    /// The overdue list's offer at the time for an entry's own passed deadline, if the list was not
    /// offered since its last drain (module docs, "Rounds").
    #[inline]
    fn overdue_offer(&self) -> Option<Offer> {
        (!self.overdue_offered).then_some(Offer { expiration: self.time, bucket: BucketCode::OVERDUE })
    }
}

/// The offer of bucket `slot` of `level`, whose expiration is `expiration`, that filing an entry of
/// the round starting at `round` there makes: the round's, if it is a new one for the bucket.
#[inline]
fn round_offer(expiration: u64, level: usize, slot: usize, round: u64) -> Option<Offer> {
    let queued = expiration == round || (fault!("shard_core_bucket_round_kept") && expiration != NO_ROUND);
    (!queued).then(|| Offer { expiration: round, bucket: BucketCode::encode(level, slot) })
}

#[cfg(test)]
mod cascade_tests;
#[cfg(test)]
mod held_tests;
#[cfg(test)]
mod model;
#[cfg(test)]
mod round_tests;
#[cfg(test)]
mod split_tests;
#[cfg(test)]
mod support;
#[cfg(test)]
mod tests;
