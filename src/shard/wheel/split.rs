//! A big bucket split into stages (docs/lean_core.md, "A big bucket's cascade"): the record of
//! its stages, the split, the links into a split bucket and the unsplit.
//!
//! **The split.** A bucket above level 0 whose list reaches the wheel's split size (1,024
//! entries; `split_at`) when an insert, a reset, a set-aside or a cascade links into its round is
//! split into the stages `crate::wheel::place` computes for every placement ([`StagePlan`]:
//! `index`, the quarter of the round a tick falls in; `opens`, the first tick at which the whole
//! quarter fits the finer level; `due`, its first tick): each entry is moved to its stage's list,
//! O(split size) once, under the lock hold of the link. The stage lists, each stage's `opens` and
//! `due`, and the tick of the next visit live in a [`Split`] record of the wheel's, which the
//! bucket names by its `split` word (the bucket's padding: 0, not split), so a bucket stays 24
//! bytes. The bucket's list then holds no link but keeps counting every entry of its stages
//! (`stats.rs`' fullest bucket, `len` unchanged); an entry's stage follows from its tick and the
//! bucket's round, as its bucket follows from its tick ([`Wheel::stage_of`]), so an unlink (a
//! cancel, a reset, `take_due_by`'s take, a flush) finds its list by one more test of the bucket's
//! `split` word, on the line it reads anyway.
//!
//! **Visits** (`visit.rs`). The split reports an offer of a **visit** of the bucket (its code with
//! the visit bit, [`BucketCode::visit`]), at the first stage that holds entries' `opens` (the time
//! if that has passed), in the place of the round's offer, which a link into a round already set
//! never makes; the caller makes it after the link and the unlock, as every offer. A link into
//! a stage of a split bucket whose `opens` comes before the next visit brings the visit forward
//! and offers it likewise. A visit whose tick is the bucket's round is not offered apart: the
//! round's own offer, queued when the round was set, is that visit (the round's flush of a split
//! bucket is a visit). An insert never lands in an open stage (from a time at or after `opens` the
//! whole stage fits the finer level), so a visit never meets an entry that does not fit below.
//!
//! **Unsplit.** A visit that leaves the stages empty forgets the record and the bucket's round. A
//! new round set in a bucket still split (left behind the time, its stages' entries all due, or
//! emptied by cancels before its visits ended) first joins the stage lists back into the bucket's
//! list, O(stages), and forgets the record: the bucket's entries then move to the overdue list as
//! those of any bucket behind the time. A drain forgets every record ([`Wheel::drain_all`]).

use super::super::life::ListCode;
use super::super::slab::NIL;
use super::buckets::NO_ROUND;
use super::lists::link;
use super::{BucketCode, List, Offer, Offers, Wheel};
use crate::wheel::place::{Placement, StagePlan, STAGES};

/// The split size: a bucket above level 0 whose list reaches it is split (module docs).
pub(super) const SPLIT_AT: u32 = 1_024;

/// The wheel's split size: [`SPLIT_AT`], a constant read by every insert, but in the unit tests
/// and loom models, which set a smaller one.
#[cfg(any(test, delaywheel_loom))]
#[derive(Debug, Clone, Copy)]
pub(super) struct SplitAt(pub(super) u32);

#[cfg(any(test, delaywheel_loom))]
impl SplitAt {
    pub(super) const INITIAL: Self = Self(SPLIT_AT);

    #[inline]
    pub(super) const fn get(self) -> u32 {
        self.0
    }
}

/// The wheel's split size: [`SPLIT_AT`] (`SplitAt` holds one only in the unit tests and loom
/// models).
#[cfg(not(any(test, delaywheel_loom)))]
#[derive(Debug, Clone, Copy)]
pub(super) struct SplitAt;

#[cfg(not(any(test, delaywheel_loom)))]
impl SplitAt {
    pub(super) const INITIAL: Self = Self;

    #[inline]
    pub(super) const fn get(self) -> u32 {
        SPLIT_AT
    }
}

/// Stages of a split bucket (fewer are used by a wheel of fewer than 4 buckets a level).
const STAGE_LISTS: usize = STAGES as usize;

/// The record of a split bucket (module docs).
#[derive(Clone, Copy, Debug)]
pub(super) struct Split {
    /// Each stage's list of entries.
    pub(super) stages: [List; STAGE_LISTS],
    /// Each stage's `opens` and `due` (`StagePlan`), written by every link into it: valid while it
    /// holds entries.
    pub(super) plans: [(u64, u64); STAGE_LISTS],
    /// The tick of the visit offered last (the bucket's round when that is the next visit): an
    /// offer of a visit at another tick is stale.
    pub(super) next_visit: u64,
}

const EMPTY: Split = Split {
    stages: [List::EMPTY; STAGE_LISTS],
    plans: [(NO_ROUND, NO_ROUND); STAGE_LISTS],
    next_visit: NO_ROUND,
};

impl<P> Wheel<P> {
    /// The stage of tick `tick` in the bucket of `level` (above 0) whose round starts at `round`:
    /// the placement's ([`placed_stage`](Wheel::placed_stage)), on a power-of-two wheel by the
    /// placement's own shifts (`place_pow2`: stages of `2^(level·shift - stage_bits)` ticks,
    /// each opening one slot of `level` before its end), without placing the tick again: every
    /// link into a stage and unlink from one computes it.
    #[inline(always)]
    pub(super) fn stage_of(&self, level: usize, round: u64, tick: u64) -> StagePlan {
        let Some(shift) = self.levels.shift() else { return self.placed_stage(level, round, tick) };
        let tick_bits = level as u32 * shift;
        let width_bits = tick_bits - self.wheel_size.min(STAGES).trailing_zeros();
        let due = tick >> width_bits << width_bits;
        let lead = (1 << tick_bits) - (1 << width_bits);
        let index = ((tick - round) >> width_bits) as usize;
        let stage = StagePlan { index, round, opens: due.saturating_sub(lead), due };
        debug_assert_eq!(stage, self.placed_stage(level, round, tick));
        stage
    }

    /// The stage of tick `tick` in the bucket of `level` whose round starts at `round`: the
    /// placement's (`crate::wheel::place`), from one slot of `level` before the round, where the
    /// round's ticks fit `level` and no finer one.
    pub(super) fn placed_stage(&self, level: usize, round: u64, tick: u64) -> StagePlan {
        match self.table.place(round - self.levels.slot_ticks(level), tick) {
            Placement::Slot { level: placed, stage, .. } if placed == level => stage,
            placement => unreachable!("tick {tick} of round {round} of level {level}: {placement:?}"),
        }
    }

    /// Ends [`unlink`](Wheel::unlink) of the entry `index` from its stage of the split bucket
    /// `slot` of `level`, its neighbours `prev` and `next` linked to each other: the stage's ends
    /// and count, and the bucket's count. Apart, so that the unlink of an unsplit bucket's entry
    /// pays one test.
    #[cold]
    #[inline(never)]
    pub(super) fn unlink_staged(
        &mut self,
        index: u32,
        (level, slot): (usize, usize),
        (prev, next): (u32, u32),
    ) {
        let tick = self.slab.entry(index).when.tick();
        let bucket = self.levels.get_mut(level, slot).expect("a named bucket exists");
        bucket.list.len -= 1;
        let (record, round) = (bucket.split as usize - 1, bucket.expiration);
        let stage = self.stage_of(level, round, tick).index;
        let list = &mut self.splits[record].stages[stage];
        if next == NIL {
            list.tail = prev;
        }
        if prev == NIL {
            list.head = next;
        }
        list.len -= 1;
    }

    /// Unlinks the first entry of stage `stage` of record `record`, that of the split bucket
    /// `slot` of `level`: its slot, `None` if the stage is empty. The visit's unlink: the stage
    /// is known, so the entry's list is not looked up from its tick (`unlink_staged`).
    #[inline]
    pub(super) fn pop_stage(
        &mut self,
        level: usize,
        slot: usize,
        (record, stage): (usize, usize),
    ) -> Option<u32> {
        let list = &mut self.splits[record].stages[stage];
        let index = list.head;
        if index == NIL {
            return None;
        }
        let next = self.slab.slot(index).next;
        list.head = next;
        if next == NIL {
            list.tail = NIL;
        } else {
            self.slab.slot_mut(next).prev = NIL;
        }
        list.len -= 1;
        self.levels.get_mut(level, slot).expect("a split bucket exists").list.len -= 1;
        self.per_level[level] -= 1;
        Some(index)
    }

    /// The first entry of the list holding tick `tick`'s entries in bucket `slot` of `level`: the
    /// bucket's, or, if it is split, the stage's that holds the tick (none if the tick is not in
    /// the bucket's round). `NIL` if there is none.
    pub(super) fn head_holding(&self, level: usize, slot: usize, tick: u64) -> u32 {
        let Some(bucket) = self.levels.get(level, slot) else { return NIL };
        if bucket.split == 0 {
            return bucket.list.head;
        }
        let round = bucket.expiration;
        if tick < round || tick - round >= self.levels.slot_ticks(level) {
            return NIL;
        }
        self.splits[bucket.split as usize - 1].stages[self.stage_of(level, round, tick).index].head
    }

    /// Links the occupied slot `index`, due at tick `tick`, into bucket `slot` of `level`, its
    /// round's, which is split or holds one less than the split size: into its stage if the bucket
    /// is split; else into its list, and the bucket is split if it is above level 0 (a level-0
    /// bucket's entries are all due at once and go to the batch whole). The offers that makes.
    /// Apart, so that a link into a smaller bucket pays one test.
    #[cold]
    #[inline(never)]
    pub(super) fn link_big(&mut self, index: u32, level: usize, slot: usize, tick: u64) -> Offers {
        let bucket = self.levels.get_mut(level, slot).expect("a filed bucket exists");
        if bucket.split != 0 {
            return self.link_staged(index, level, slot, tick);
        }
        debug_assert!(level != 0, "a level-0 bucket never splits");
        link(&mut self.slab, &mut bucket.list, index, ListCode::level(level));
        self.split(level, slot)
    }

    /// Links the occupied slot `index`, due at tick `tick`, into its stage of the split bucket
    /// `slot` of `level` (its round's, not open: module docs). The visit's offer if the stage
    /// opens before the next visit.
    fn link_staged(&mut self, index: u32, level: usize, slot: usize, tick: u64) -> Offers {
        let round = self.levels.get(level, slot).expect("a split bucket exists").expiration;
        let stage = self.stage_of(level, round, tick);
        debug_assert!(stage.opens > self.time, "an insert lands in an open stage");
        let bucket = self.levels.get_mut(level, slot).expect("a split bucket exists");
        bucket.list.len += 1;
        let record = &mut self.splits[bucket.split as usize - 1];
        link(&mut self.slab, &mut record.stages[stage.index], index, ListCode::level(level));
        record.plans[stage.index] = (stage.opens, stage.due);
        if stage.opens >= record.next_visit {
            return Offers::default();
        }
        record.next_visit = stage.opens;
        let visit = BucketCode::encode(level, slot).visit();
        Offers { round: Some(Offer { expiration: stage.opens, bucket: visit }), ..Offers::default() }
    }

    /// Splits bucket `slot` of `level` (above 0, not split, its round set: module docs): each of
    /// its entries moved to its stage's list. The visit's offer, unless the next visit is the
    /// round's.
    fn split(&mut self, level: usize, slot: usize) -> Offers {
        debug_assert!(level > 0);
        let record = match self.free_splits.pop() {
            Some(record) => record as usize,
            None => {
                self.splits.push(EMPTY);
                self.splits.len() - 1
            }
        };
        let bucket = self.levels.get_mut(level, slot).expect("a split bucket exists");
        let (round, mut at) = (bucket.expiration, bucket.list.head);
        (bucket.split, bucket.list.head, bucket.list.tail) = (record as u32 + 1, NIL, NIL);
        let mut split = EMPTY;
        while at != NIL {
            self.count_walked();
            let next = self.slab.slot(at).next;
            let tick = self.slab.entry(at).when.tick();
            let stage = self.stage_of(level, round, tick);
            link(&mut self.slab, &mut split.stages[stage.index], at, ListCode::level(level));
            split.plans[stage.index] = (stage.opens, stage.due);
            at = next;
        }
        self.splits[record] = split;
        let time = self.time;
        self.offer_visit(level, slot, time)
    }

    /// Sets the next visit of the split bucket `slot` of `level`: the first stage holding entries'
    /// `opens`, or `from` if that is later (the time at a split, the next tick after a visit);
    /// the round, whose own offer is that visit, if the round has not begun and comes first. Its
    /// offer unless it is the round's. The bucket holds entries.
    pub(super) fn offer_visit(&mut self, level: usize, slot: usize, from: u64) -> Offers {
        let bucket = self.levels.get(level, slot).expect("a split bucket exists");
        let (record, round) = (bucket.split as usize - 1, bucket.expiration);
        let split = &mut self.splits[record];
        let next = (split.stages.iter().zip(split.plans))
            .filter(|(list, _)| !list.is_empty())
            .map(|(_, (opens, _))| opens.max(from))
            .min()
            .expect("a split bucket holds entries");
        if next >= round && self.time < round {
            split.next_visit = round;
            return Offers::default();
        }
        split.next_visit = next;
        let visit = BucketCode::encode(level, slot).visit();
        Offers { round: Some(Offer { expiration: next, bucket: visit }), ..Offers::default() }
    }

    /// Joins the stage lists of the split bucket `slot` of `level` back into its list, in stage
    /// order, and forgets its record (module docs, "Unsplit"). O(stages).
    #[cold]
    pub(super) fn unsplit(&mut self, level: usize, slot: usize) {
        let bucket = self.levels.get_mut(level, slot).expect("a split bucket exists");
        let record = std::mem::replace(&mut bucket.split, 0) as usize - 1;
        let mut list = List::EMPTY;
        for stage in self.splits[record].stages.iter().filter(|stage| !stage.is_empty()) {
            if list.tail == NIL {
                list.head = stage.head;
            } else {
                self.slab.slot_mut(list.tail).next = stage.head;
                self.slab.slot_mut(stage.head).prev = list.tail;
            }
            (list.tail, list.len) = (stage.tail, list.len + stage.len);
        }
        debug_assert_eq!(list.len, bucket.list.len, "a split bucket counts its stages' entries");
        bucket.list = list;
        self.splits[record] = EMPTY;
        self.free_splits.push(record as u32);
    }

    /// Forgets the record of the split bucket `slot` of `level`, whose stages are empty, and the
    /// bucket's round.
    pub(super) fn forget_split(&mut self, level: usize, slot: usize) {
        let bucket = self.levels.get_mut(level, slot).expect("a split bucket exists");
        debug_assert!(bucket.list.is_empty());
        let record = std::mem::replace(&mut bucket.split, 0) as usize - 1;
        bucket.expiration = NO_ROUND;
        self.splits[record] = EMPTY;
        self.free_splits.push(record as u32);
    }

    /// The offer of a visit an insert of tick `tick` would make by splitting its bucket now,
    /// without it (the seeded fault `shard_core_visit_offered_before_split`, `super::faults`): the
    /// split's rule, read from the bucket's entries and the new one: [`offer_visit`]'s first stage
    /// holding entries' `opens`, from the time, and no offer at the round (its own); a change to
    /// one is a change to the other.
    ///
    /// [`offer_visit`]: Wheel::offer_visit
    pub(crate) fn split_offer_for(&self, tick: u64) -> Option<Offer> {
        let Placement::Slot { level, slot, stage } = self.table.place(self.time, tick) else { return None };
        let bucket = self.levels.get(level, slot)?;
        let splits = level > 0 && bucket.split == 0 && bucket.expiration == stage.round;
        if !splits || bucket.list.len + 1 < self.split_at.get() {
            return None;
        }
        let (mut next, mut at) = (stage.opens.max(self.time), bucket.list.head);
        while at != NIL {
            let opens = self.stage_of(level, stage.round, self.slab.entry(at).when.tick()).opens;
            (next, at) = (next.min(opens.max(self.time)), self.slab.slot(at).next);
        }
        let visit = BucketCode::encode(level, slot).visit();
        (next < stage.round).then_some(Offer { expiration: next, bucket: visit })
    }
}
