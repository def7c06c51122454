//! `TimingWheel`: the hierarchy of levels of buckets, and the way into them.
//!
//! Level 0 has `wheel_size` slots of one tick each. Level `k` has `wheel_size` slots of
//! `wheel_size^k` ticks: it is the **overflow wheel** of level `k - 1`, covering `wheel_size` times
//! its span. The top level is the first whose span no longer fits in a `u64` of ticks; it covers
//! every deadline up to `MAX_DEADLINE_TICK`, so any deadline that has a tick has a place. A level's
//! buckets are created lazily, in chunks of up to 512 slots, each exactly once, the first time a
//! deadline needs one of them, and are never torn down (`chunks.rs`): memory follows the slots used
//! so far, up to whole levels.
//!
//! The room's parts: where a deadline goes (`place.rs`, pure arithmetic), a bucket with its lanes
//! and stages (`bucket/`), a stage's list (`slots/`, over `chunk_deque/`), the buckets of the
//! levels in chunks and their closing at shutdown (`chunks.rs`), and this file, the levels. The
//! wheel knows entries (`entry/`: it locks their slots to insert and take them out) and nothing of
//! the clock, the counters or the threads.
//!
//! The wheel itself holds no clock: the timer passes the base. Schedulers pass the current tick;
//! the driver passes the expiration of the bucket it is flushing, so entries cascade in deadline order.

use std::fmt;

use crate::deadline::Deadline;
use crate::entry::location::BucketKey;
use crate::entry::{EntryArena, EntryId, Fresh};
use crate::sync::{Arc, AtomicBool};

pub(crate) mod bucket;
mod chunk_deque;
mod chunks;
mod faults;
pub(crate) mod place;
mod slots;
pub(crate) mod trace;

use bucket::Refused;
pub(crate) use bucket::{
    default_lanes, DueEntry, Handoff, Popped, TimerTaskList, MAX_BUCKET_LANES, MIN_BUCKET_LANES,
};
use chunks::Buckets;
use place::{max_levels, LevelTable, Placement, StagePlan};

/// The bits of the largest slot of the largest wheel (`MAX_WHEEL_SIZE` is `2^MAX_SLOT_BITS`):
/// every wheel up to it numbers its buckets within a location's key (`entry/location.rs`, "The bit
/// budget"; the unit tests check every level count).
pub(crate) const MAX_SLOT_BITS: u32 = 24;

/// The hierarchy of levels (Kafka's `TimingWheel` and its chain of overflow wheels).
pub(crate) struct TimingWheel {
    wheel_size: u64,
    /// `max_levels(wheel_size)`.
    levels: usize,
    table: LevelTable,
    buckets: Buckets,
}

/// Why [`TimingWheel::schedule`] refused a new entry: the timer is shutting down.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ShutDown;

/// What [`TimingWheel::readd`] did with a held entry.
#[derive(Debug)]
pub(crate) enum Readded {
    /// Inserted (and its bucket queued if that lowered its expiration).
    Inserted,
    /// Not inserted: the entry is no longer pending (cancelled while held).
    NotPending,
    /// Not inserted: the timer is shutting down (only with the flag: a reset's re-add).
    ShutDown,
}

impl TimingWheel {
    /// A wheel of `wheel_size` slots per level and the default lanes per bucket
    /// ([`default_lanes`]), for unit tests.
    #[cfg(test)]
    pub(crate) fn new(wheel_size: u64) -> Self {
        Self::with_lanes(wheel_size, default_lanes())
    }

    /// A wheel of `wheel_size` slots per level and `lanes` lanes per bucket (a power of two, from
    /// [`MIN_BUCKET_LANES`] to [`MAX_BUCKET_LANES`]).
    pub(crate) fn with_lanes(wheel_size: u64, lanes: usize) -> Self {
        debug_assert!(wheel_size >= 2);
        let levels = max_levels(wheel_size);
        let buckets = Buckets::new(wheel_size, levels, lanes);
        TimingWheel { wheel_size, levels, table: LevelTable::new(wheel_size), buckets }
    }

    pub(crate) fn wheel_size(&self) -> u64 {
        self.wheel_size
    }

    /// Bits of the largest slot: what splits a bucket key into level and slot (`entry/location.rs`).
    pub(crate) fn slot_bits(&self) -> u32 {
        self.buckets.slot_bits()
    }

    /// Number of levels with buckets created so far (with a chunk of them: `chunks.rs`).
    pub(crate) fn levels_in_use(&self) -> usize {
        self.buckets.levels_in_use()
    }

    /// Buckets created so far, in every level: the chunks used so far decide it.
    pub(crate) fn resident_buckets(&self) -> usize {
        self.buckets.resident().count()
    }

    /// The bucket at `level`/`slot`, creating its chunk on first use (exactly once). `None` if the
    /// chunk was closed by [`close_levels`](TimingWheel::close_levels) before it was ever used.
    #[inline(always)]
    pub(crate) fn bucket(&self, level: usize, slot: usize) -> Option<&Arc<TimerTaskList>> {
        self.buckets.get_or_create(self.buckets.key(level, slot))
    }

    /// The bucket an entry's location names (`entry/location.rs`); `None` only for a key no bucket
    /// has.
    pub(crate) fn bucket_by_key(&self, key: BucketKey) -> Option<&Arc<TimerTaskList>> {
        self.buckets.get(key)
    }

    /// Adds a new entry: occupies the vacant slot `entry` its scheduler holds with `fresh`, in the
    /// bucket of its deadline relative to `base` (see the module docs), or, if it is already due,
    /// in the level-0 bucket of its deadline, so that the next advance of the clock flushes and
    /// fires it (tasks never run inside `schedule`). Refused once `shut_down` is set (see
    /// `TimerTaskList::insert_new`); `fresh` then keeps the task. An add that lowers the bucket's
    /// expiration calls `queue` with it and the bucket first, under its lane lock
    /// (`bucket/expiration.rs`, "Queued before lowered").
    #[inline]
    pub(crate) fn schedule(
        &self,
        arena: &EntryArena,
        (entry, fresh): (EntryId, &mut Fresh),
        base: u64,
        shut_down: &AtomicBool,
        queue: impl FnOnce(u64, Arc<TimerTaskList>),
    ) -> Result<(), ShutDown> {
        let (level, slot, stage) = self.place(base, fresh.deadline());
        // `None`: the level was closed by shutdown.
        let bucket = self.bucket(level, slot).ok_or(ShutDown)?;
        let queue = |expiration| queue(expiration, Arc::clone(bucket));
        TimerTaskList::insert_new(bucket, arena, (entry, fresh), stage, shut_down, queue)?;
        Ok(())
    }

    /// Where an entry due at `tick` goes relative to `base`: its bucket, or if it is already due,
    /// the level-0 bucket of its tick, which is then due, so that the advance running (or the next)
    /// visits it and fires the entry from there.
    #[inline(always)]
    fn place(&self, base: u64, deadline: Deadline) -> (usize, usize, StagePlan) {
        let tick = deadline.tick();
        match self.table.place(base, tick) {
            Placement::Due => (0, (tick % self.wheel_size) as usize, StagePlan::level0(deadline)),
            Placement::Slot { level: 0, slot, .. } => (0, slot, StagePlan::level0(deadline)),
            Placement::Slot { level, slot, stage } => (level, slot, stage),
        }
    }

    /// Re-adds an entry its caller holds (a visit's cascade, a reset: `entry/`) relative to `base`,
    /// by the deadline in its slot: placed by `deadline`, and placed again if a reset wrote another
    /// one meanwhile (`TimerTaskList::readd`). One due at `base` goes to the level-0 bucket of its
    /// deadline, as a schedule's does ([`place`](TimingWheel::place)): it is fired from there,
    /// marked due by the visit (`entry/`, "Re-arming"). With `shut_down` (a reset's re-add) it is
    /// refused once the flag is set, as a schedule is; without it (the driver's cascade, which
    /// runs before the drain closes the levels) never. `queue` as for
    /// [`schedule`](TimingWheel::schedule).
    #[inline]
    pub(crate) fn readd(
        &self,
        arena: &EntryArena,
        (entry, mut deadline): (EntryId, Deadline),
        base: u64,
        shut_down: Option<&AtomicBool>,
        mut queue: impl FnMut(u64, Arc<TimerTaskList>),
    ) -> Readded {
        loop {
            let (level, slot, stage) = self.place(base, deadline);
            // `None`: the level was closed by shutdown, which only a reset can meet.
            let Some(bucket) = self.bucket(level, slot) else { return Readded::ShutDown };
            let queue = |expiration| queue(expiration, Arc::clone(bucket));
            match TimerTaskList::readd(bucket, arena, (entry, deadline), stage, shut_down, queue) {
                Ok(_) => return Readded::Inserted,
                Err(Refused::NotPending) => return Readded::NotPending,
                Err(Refused::ShutDown) => return Readded::ShutDown,
                Err(Refused::Moved(moved)) => deadline = moved,
            }
        }
    }

    /// Puts a held entry whose re-add found its level closed (a detached shutdown drain closed
    /// the levels while a visit held it: `timer/advance.rs`) into `bucket`, the one it was taken
    /// from, and does not queue it: no visit comes any more, and the drain's arena scan, which
    /// claims every pending entry, takes it out of there (or already claimed it: then it is refused
    /// here and [`Readded::NotPending`] returned, and the caller releases it).
    pub(crate) fn park(
        &self,
        bucket: &TimerTaskList,
        arena: &EntryArena,
        (entry, mut deadline): (EntryId, Deadline),
    ) -> Readded {
        loop {
            let plan = StagePlan::level0(deadline);
            // Not queued: the expiration it may lower is never visited (see above).
            match TimerTaskList::readd(bucket, arena, (entry, deadline), plan, None, |_| {}) {
                Ok(_) => return Readded::Inserted,
                Err(Refused::NotPending) => return Readded::NotPending,
                Err(Refused::ShutDown) => unreachable!("a park ignores the shutdown flag"),
                Err(Refused::Moved(moved)) => deadline = moved,
            }
        }
    }

    /// The buckets above level 0 created so far whose round starts at `tick` (level `k`'s
    /// if `tick` is a multiple of its slot length), finest first: at `tick` they may hold entries
    /// due then, which fire in one batch with the level-0 bucket's (`timer/advance.rs`).
    pub(crate) fn round_starts(&self, tick: u64) -> impl Iterator<Item = &Arc<TimerTaskList>> {
        self.table
            .round_starts(tick)
            .filter_map(|(level, slot)| self.buckets.get(self.buckets.key(level, slot)))
    }

    /// Takes out the entries due by `limit` and stamped at most `stamps`, of `limit`'s tick, into
    /// `due`, marked due and held by the caller to fire: wherever an entry of that tick may wait
    /// for it, the tick's level-0 bucket (its quarters up to `limit`'s) and, at each coarser level
    /// created, the stage of the bucket whose range holds the tick (of a round starting at the
    /// tick, or a big stage whose last chunk is still to be cascaded): the entries of the tick
    /// under way that fire beside a deadline passed within it (`timer/advance.rs`, "Passed
    /// deadlines mid-tick"). Each stage's list is scanned, a slot lock per entry, then read through
    /// its index by deadline once takes keep coming (`slots/due_by.rs`).
    pub(crate) fn take_due_by(&self, arena: &EntryArena, limit: (Deadline, u64), due: &mut Vec<DueEntry>) {
        let tick = limit.0.tick();
        let stages = self.wheel_size.min(place::STAGES);
        for level in 0..self.levels {
            // Level `k`'s slots are `wheel_size^k` ticks: none past the top level's.
            let Some(ticks) = place::slot_ticks(self.wheel_size, level) else { break };
            let slot = ((tick / ticks) % self.wheel_size) as usize;
            let Some(bucket) = self.buckets.get(self.buckets.key(level, slot)) else { continue };
            let stage = match level {
                0 => 0..=limit.0.quarter(),
                _ => {
                    let index =
                        place::stage_plan(self.wheel_size, stages, level, tick / ticks * ticks, tick).index;
                    index..=index
                }
            };
            bucket.take_due_by(arena, limit, stage, due);
        }
    }

    /// For shutdown: closes every chunk of buckets not yet created, in every level (so none can be
    /// created any more), and returns every bucket of the chunks that exist. Together with the flag
    /// checked under each bucket lock, this guarantees no scheduler inserts where the drain does not
    /// look (`chunks.rs`, "Closing").
    pub(crate) fn close_levels(&self) -> impl Iterator<Item = &Arc<TimerTaskList>> {
        self.buckets.close()
    }

    /// The entries in each level's buckets now (index = level, up to the highest level created),
    /// and the fullest bucket as `(level, slot, entries)` (the first at the lowest level and slot
    /// on a tie; `None` when every bucket is empty). Walks every bucket created, taking each lane
    /// lock briefly ([`TimerTaskList::len`]): for `Timer::stats` only, a snapshot.
    pub(crate) fn load(&self) -> (Vec<usize>, Option<(usize, usize, usize)>) {
        let mut per_level = Vec::new();
        let mut fullest: Option<(usize, usize, usize)> = None;
        // In key order: level, then slot.
        for bucket in self.buckets.resident() {
            let level = bucket.level();
            if per_level.len() <= level {
                per_level.resize(level + 1, 0);
            }
            let entries = bucket.len();
            per_level[level] += entries;
            if entries > fullest.map_or(0, |(_, _, most)| most) {
                fullest = Some((level, bucket.slot(), entries));
            }
        }
        (per_level, fullest)
    }

    /// Every bucket created so far.
    #[cfg(test)]
    pub(crate) fn buckets(&self) -> impl Iterator<Item = &Arc<TimerTaskList>> {
        self.buckets.resident()
    }
}

impl fmt::Debug for TimingWheel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimingWheel")
            .field("wheel_size", &self.wheel_size)
            .field("levels_in_use", &self.levels_in_use())
            .finish()
    }
}

#[cfg(test)]
mod tests;
