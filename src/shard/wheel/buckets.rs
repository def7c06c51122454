//! The buckets of a wheel's levels, created as deadlines need them, and the code by which an entry
//! and the driver's queue name one.
//!
//! A level is `wheel_size` buckets, held in chunks of up to [`CHUNK`] buckets, each chunk written
//! the first time a deadline needs one of its buckets and kept until the wheel is dropped; a level
//! is created (its list of chunks, empty) the first time a deadline is beyond the span of the levels
//! below it. So a wheel of 2²⁴ buckets a level costs a list of chunk pointers and the chunks in use,
//! not 2²⁴ buckets, and a wheel whose deadlines all fit level 0 has one level.
//!
//! Each bucket is Kafka's `TimerTaskList` without its lock (the shard's lock guards the wheel): a
//! doubly linked list threaded through the slab's slots (head and tail here, `prev` and `next` in
//! the slots) and an **expiration**, the start of the round its entries belong to, or [`NO_ROUND`]
//! once it was flushed. A big bucket is split into stages (`split.rs`): its list then holds no
//! link, only the count of its stages' entries, and its `split` word names the record holding them.

use std::fmt;
use std::num::NonZeroU32;

use super::super::slab::NIL;
use crate::wheel::place::{max_levels, slot_ticks};

/// Buckets per chunk (fewer if the wheel has fewer): a power of two, so that a slot's chunk and
/// place in it are a shift and a mask (every schedule and cancel looks a bucket up).
const CHUNK_BITS: u32 = 9;
const CHUNK: usize = 1 << CHUNK_BITS;

/// A bucket's expiration when it holds no round (new, or flushed).
pub(crate) const NO_ROUND: u64 = u64::MAX;

/// The mark bit of a [`BucketCode`]: it makes every code non-zero.
const MARK: u32 = 1 << 31;
/// The visit bit of a [`BucketCode`], the level field's top bit: set on a bucket's code (whose
/// level is below 56, where entries are, so the bit is clear and the field stays below the
/// overdue list's), it names a visit of the bucket's stages (`split.rs`), queued beside its round.
const VISIT: u32 = 1 << 30;
/// Bits of a code that name the slot: every slot of a wheel of up to 2²⁴ buckets.
const SLOT_BITS: u32 = 24;
/// The level field's value that names the overdue list rather than a level.
const OVERDUE_LEVEL: u32 = 0x7f;

// Every level of a wheel of two buckets (the most levels: 64) has a code below the overdue one.
const _: () = assert!(64 < OVERDUE_LEVEL as usize);

/// Names a bucket, (level, slot), or the overdue list, in 31 bits under a mark bit: what the
/// driver's queue names to flush (an entry names its list by its life word's list code and its
/// deadline's tick, `life.rs`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct BucketCode(NonZeroU32);

impl BucketCode {
    /// The overdue list's code.
    pub(crate) const OVERDUE: BucketCode = BucketCode::encode(OVERDUE_LEVEL as usize, 0);

    /// The code of bucket `slot` of `level` (`level < 64`, `slot < 2²⁴`).
    #[inline]
    pub(crate) const fn encode(level: usize, slot: usize) -> BucketCode {
        debug_assert!(level <= OVERDUE_LEVEL as usize && slot < 1 << SLOT_BITS);
        match NonZeroU32::new(MARK | (level as u32) << SLOT_BITS | slot as u32) {
            Some(code) => BucketCode(code),
            None => panic!("the mark bit is set"),
        }
    }

    /// The level and slot the code names (the overdue list's level is beyond every level).
    #[inline]
    pub(crate) fn decode(self) -> (usize, usize) {
        let code = self.0.get();
        (((code >> SLOT_BITS) & OVERDUE_LEVEL) as usize, (code & ((1 << SLOT_BITS) - 1)) as usize)
    }

    /// The code as a number (with its shard, what orders offers of one expiration in the queue).
    pub(crate) fn get(self) -> u32 {
        self.0.get()
    }

    /// The code of a visit of this bucket's stages (`split.rs`).
    #[inline]
    pub(crate) fn visit(self) -> BucketCode {
        // Levels that hold entries are below 56 (`ListCode::LEVELS`), so the visit bit never
        // makes a level field of 0x7f, the overdue list's.
        debug_assert!(self != BucketCode::OVERDUE && self.decode().0 < 63);
        BucketCode(self.0 | VISIT)
    }

    /// The bucket a visit code names, `None` for a bucket's or the overdue list's code.
    #[inline]
    pub(crate) fn as_visit(self) -> Option<BucketCode> {
        let code = self.0.get();
        (code & VISIT != 0 && self != BucketCode::OVERDUE)
            .then(|| BucketCode(NonZeroU32::new(code & !VISIT).expect("the mark bit is set")))
    }
}

impl fmt::Debug for BucketCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == BucketCode::OVERDUE {
            return f.write_str("Overdue");
        }
        if let Some(bucket) = self.as_visit() {
            return write!(f, "Visit({bucket:?})");
        }
        let (level, slot) = self.decode();
        write!(f, "Bucket({level}, {slot})")
    }
}

/// A bucket (or the overdue list) to offer to the queue at `expiration`: its round was set (or the
/// overdue list, drained, took an entry; its expiration is then the wheel's time).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Offer {
    pub(crate) expiration: u64,
    pub(crate) bucket: BucketCode,
}

/// The offers one insert, reset or re-add makes: its bucket's new round, and the overdue list's
/// two (the wheel's docs, "Rounds"): for the entry's own passed deadline, which the caller makes
/// for the next round (`overdue`), and for entries a bucket behind the time moved there, which
/// the round under way takes (`moved`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offers {
    pub(crate) round: Option<Offer>,
    pub(crate) overdue: Option<Offer>,
    pub(crate) moved: Option<Offer>,
}

impl Offers {
    /// Each offer, the bucket's first.
    #[inline]
    pub(crate) fn iter(self) -> impl Iterator<Item = Offer> {
        self.round.into_iter().chain(self.overdue).chain(self.moved)
    }
}

/// A list of slots: its first and last, both [`NIL`] when empty, and how many it holds (written
/// by `lists::link` and `Wheel::unlink`; a bucket's load, `stats.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct List {
    pub(super) head: u32,
    pub(super) tail: u32,
    pub(super) len: u32,
}

impl List {
    pub(super) const EMPTY: List = List { head: NIL, tail: NIL, len: 0 };

    /// Whether it counts no entry (a split bucket's list holds no link but counts its stages').
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// One bucket: its list, the record of its stages if it is split, and the start of its round. 24
/// bytes (the list's count took the 16 to 24, the expiration's alignment rounding 20 up; `split`
/// lives in those 4 bytes of padding).
#[derive(Clone, Copy, Debug)]
pub(super) struct Bucket {
    pub(super) list: List,
    /// 0, or one more than the index of its record of stages (`split.rs`).
    pub(super) split: u32,
    pub(super) expiration: u64,
}

const FRESH: Bucket = Bucket { list: List::EMPTY, split: 0, expiration: NO_ROUND };

#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Bucket>() == 24);

/// The levels of buckets (module docs).
pub(super) struct Levels {
    wheel_size: usize,
    chunk: usize,
    /// `log2(wheel_size)` when it is a power of two.
    shift: Option<u32>,
    /// Ticks per slot of each level (`crate::wheel::place::slot_ticks`).
    slot_ticks: Box<[u64]>,
    /// Per level, its chunks, written as needed.
    levels: Vec<Vec<Option<Box<[Bucket]>>>>,
}

impl Levels {
    pub(super) fn new(wheel_size: usize) -> Levels {
        let size = wheel_size as u64;
        let slot_ticks = (0..max_levels(size)).map(|level| slot_ticks(size, level).unwrap()).collect();
        let shift = size.is_power_of_two().then(|| size.trailing_zeros());
        Levels { wheel_size, chunk: wheel_size.min(CHUNK), shift, slot_ticks, levels: Vec::new() }
    }

    /// The slot of `level` that holds tick `tick`, `(tick / wheel_size^level) % wheel_size`: the
    /// slot `crate::wheel::place` gives a deadline of that tick placed at that level (a shift and a
    /// mask for a power-of-two wheel, two divisions otherwise).
    #[inline]
    pub(super) fn slot_of(&self, level: usize, tick: u64) -> usize {
        match self.shift {
            Some(shift) => ((tick >> (level as u32 * shift)) as usize) & (self.wheel_size - 1),
            None => ((tick / self.slot_ticks[level]) % self.wheel_size as u64) as usize,
        }
    }

    /// `log2(wheel_size)` when it is a power of two.
    #[inline]
    pub(super) fn shift(&self) -> Option<u32> {
        self.shift
    }

    /// Ticks per slot of `level`.
    #[inline]
    pub(super) fn slot_ticks(&self, level: usize) -> u64 {
        self.slot_ticks[level]
    }

    /// Levels created so far.
    pub(super) fn created(&self) -> usize {
        self.levels.len()
    }

    /// Bucket `slot` of `level`, if it was ever written.
    #[inline]
    pub(super) fn get(&self, level: usize, slot: usize) -> Option<&Bucket> {
        let chunk = self.levels.get(level)?.get(slot >> CHUNK_BITS)?.as_ref()?;
        chunk.get(slot & (CHUNK - 1))
    }

    /// Bucket `slot` of `level`, if it was ever written.
    #[inline]
    pub(super) fn get_mut(&mut self, level: usize, slot: usize) -> Option<&mut Bucket> {
        let chunk = self.levels.get_mut(level)?.get_mut(slot >> CHUNK_BITS)?.as_mut()?;
        chunk.get_mut(slot & (CHUNK - 1))
    }

    /// Bucket `slot` of `level`, its level and chunk created if they are not yet: one walk down
    /// the level's chunks, the creations apart (cold).
    #[inline]
    pub(super) fn bucket(&mut self, level: usize, slot: usize) -> &mut Bucket {
        debug_assert!(slot < self.wheel_size);
        let index = slot >> CHUNK_BITS;
        let written =
            self.levels.get(level).and_then(|chunks| chunks.get(index)).is_some_and(Option::is_some);
        if !written || fault!("shard_core_level_recreated") {
            return self.bucket_created(level, slot);
        }
        let chunk = self.levels[level][index].as_mut().expect("a written chunk");
        &mut chunk[slot & (CHUNK - 1)]
    }

    /// [`bucket`](Levels::bucket) when its level or chunk is not written yet (or under the fault
    /// that recreates a level): creates them.
    #[cold]
    #[inline(never)]
    fn bucket_created(&mut self, level: usize, slot: usize) -> &mut Bucket {
        if level >= self.levels.len() {
            self.add_levels(level);
        }
        let index = slot >> CHUNK_BITS;
        // The last chunk of a level holds only the buckets the level has.
        let size = self.chunk.min(self.wheel_size - index * CHUNK);
        let chunks = &mut self.levels[level];
        let held = |chunks: &[Option<Box<[Bucket]>>]| {
            chunks.get(index).and_then(Option::as_ref).is_some_and(|c| !c[slot & (CHUNK - 1)].list.is_empty())
        };
        if level != 0 && fault!("shard_core_level_recreated") && held(chunks) {
            chunks.clear();
        }
        if index >= chunks.len() {
            add_chunks(chunks, index);
        }
        let chunk = chunks[index].get_or_insert_with(|| new_chunk(size));
        &mut chunk[slot & (CHUNK - 1)]
    }

    /// Creates the levels up to `level` (the first use of a bucket there).
    #[cold]
    #[inline(never)]
    fn add_levels(&mut self, level: usize) {
        self.levels.resize_with(level + 1, Vec::new);
    }

    /// Every bucket written, with its level and slot.
    pub(super) fn iter(&self) -> impl Iterator<Item = (usize, usize, &Bucket)> + '_ {
        self.levels.iter().enumerate().flat_map(move |(level, chunks)| {
            chunks.iter().enumerate().filter_map(|(index, c)| c.as_ref().map(|c| (index, c))).flat_map(
                move |(index, c)| c.iter().enumerate().map(move |(at, b)| (level, index * CHUNK + at, b)),
            )
        })
    }

    /// Every bucket written of `level`, with its slot, in slot order.
    pub(super) fn level(&self, level: usize) -> impl Iterator<Item = (usize, &Bucket)> + '_ {
        let chunks = self.levels.get(level).map_or(&[][..], Vec::as_slice);
        chunks
            .iter()
            .enumerate()
            .filter_map(|(index, c)| c.as_ref().map(|c| (index, c)))
            .flat_map(|(index, c)| c.iter().enumerate().map(move |(at, b)| (index * CHUNK + at, b)))
    }

    /// Levels with at least one chunk written.
    pub(super) fn in_use(&self) -> usize {
        self.levels.iter().filter(|chunks| chunks.iter().any(Option::is_some)).count()
    }

    /// Buckets written, over every level.
    pub(super) fn resident(&self) -> usize {
        self.levels.iter().flatten().flatten().map(|chunk| chunk.len()).sum()
    }

    /// Every bucket emptied, its round forgotten (the chunks stay).
    pub(super) fn clear(&mut self) {
        for chunks in &mut self.levels {
            for chunk in chunks.iter_mut().flatten() {
                chunk.fill(FRESH);
            }
        }
    }
}

/// Room in a level's list of chunks up to chunk `index` (the first use of a bucket there).
#[cold]
#[inline(never)]
fn add_chunks(chunks: &mut Vec<Option<Box<[Bucket]>>>, index: usize) {
    chunks.resize_with(index + 1, || None);
}

/// A chunk of `size` buckets, fresh (the first use of a bucket there).
#[cold]
#[inline(never)]
fn new_chunk(size: usize) -> Box<[Bucket]> {
    vec![FRESH; size].into_boxed_slice()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_name_every_bucket_of_every_wheel() {
        for (level, slot) in [(0, 0), (0, (1 << 24) - 1), (63, 0), (63, (1 << 24) - 1), (2, 12_345)] {
            let code = BucketCode::encode(level, slot);
            assert_eq!(code.decode(), (level, slot));
            assert_ne!(code, BucketCode::OVERDUE);
            assert_eq!(code.as_visit(), None);
        }
        // A visit names a bucket of a level that holds entries (below 56: `ListCode::LEVELS`).
        for (level, slot) in [(1, 0), (55, 0), (55, (1 << 24) - 1), (2, 12_345)] {
            let code = BucketCode::encode(level, slot);
            assert_eq!(code.visit().as_visit(), Some(code));
            assert_ne!(code.visit(), BucketCode::OVERDUE);
        }
        assert_eq!(BucketCode::OVERDUE.as_visit(), None);
        assert_eq!(BucketCode::OVERDUE.decode().0, OVERDUE_LEVEL as usize);
        assert_eq!(std::mem::size_of::<Option<BucketCode>>(), 4);
    }

    #[test]
    fn levels_and_chunks_are_written_as_needed() {
        let mut levels = Levels::new(1 << 24);
        assert_eq!(levels.created(), 0);
        assert!(levels.get(0, 5).is_none());
        levels.bucket(2, (1 << 24) - 1).expiration = 7;
        assert_eq!(levels.created(), 3);
        assert!(levels.get(0, 5).is_none() && levels.get(2, 0).is_none());
        assert_eq!(levels.get(2, (1 << 24) - 1).map(|b| b.expiration), Some(7));
        assert_eq!(levels.iter().count(), CHUNK);
        levels.clear();
        assert_eq!(levels.get(2, (1 << 24) - 1).map(|b| b.expiration), Some(NO_ROUND));
    }

    /// A tick's slot at each level is the one the crate's placement gives it there.
    #[test]
    fn slot_of_is_the_placement_slot() {
        use crate::wheel::place::{place, Placement};
        for wheel_size in [2u64, 3, 60, 64, 512, 1 << 24] {
            let levels = Levels::new(wheel_size as usize);
            for (base, deadline) in [(0, 1), (0, 59), (59, 3_600), (12_345, 987_654_321), (5, (1 << 55) - 1)]
            {
                let Placement::Slot { level, slot, .. } = place(wheel_size, base, deadline) else { panic!() };
                assert_eq!(levels.slot_of(level, deadline), slot, "{wheel_size}: {base} → {deadline}");
            }
        }
    }
}
