//! `Location`: where an entry sits, in one word: its bucket's key, its lane, its stage and its
//! index there.
//!
//! An entry's slot records its location (`entry/`) so that a cancel finds it in O(1). The bucket
//! is named by its **key** ([`BucketKey`]: `level << slot_bits | slot`, the one identity of a
//! bucket, `slot_bits` the bits of the wheel's largest slot), which the wheel resolves
//! (`TimingWheel::bucket_by_key`): no reference count to move on insert, removal or cascade, on a
//! line every thread inserting into that bucket would share. The entry never resolves it itself.
//! The whole location is 8 bytes, `Option<Location>` too:
//!
//! ```text
//!  63                      34   33   32 31                                  0
//! [ lane key + 1 (30 bits)    | stage  | index in the lane's stage (32 bits)  ]
//! ```
//!
//! ## The bit budget
//!
//! The index needs 32 bits: a timer holds at most `MAX_CAPACITY` (`2^32 - 2`) entries, so a list
//! renumbering from zero always fits (below). The stage takes 2, the lane 4 ([`MAX_LANES`]), which
//! leaves [`KEY_BITS`] = 26 for the bucket key. A wheel of `w` slots has `max_levels(w)` levels
//! (`wheel/place.rs`) and its keys stay below `max_levels(w) << slot_bits`: at most `3 · 2^24`
//! for every `w` up to `2^24` (three levels cover `u64` ticks from `2^22` slots on; smaller wheels
//! have more levels of fewer bits), which is why `MAX_WHEEL_SIZE` is `2^24`. A key of `level ·
//! w + slot` would fit a few more sizes (up to `2^26 / 3`), but every resolution would divide;
//! with a shift the wheel finds the bucket's chunk as `key >> chunk_bits` (`wheel/chunks.rs`).
//!
//! A bucket has lanes, each with its own lock and its own stages (`wheel/bucket/`), at most
//! [`MAX_LANES`]; each lane has stages, at most [`MAX_STAGES`] (`wheel/place.rs`: the quarters of
//! the tick in level 0).
//! A [`LaneKey`] (`lane << 24 | key`) names one lane of one bucket in 32 bits: it is what a cancel
//! locks, what a ticket carries (`entry/`), and, plus one (never zero), the location's top field.
//!
//! Indices are absolute and only grow while a stage is never emptied (`wheel/slots/`); a list whose
//! next index would pass [`INDEX_LIMIT`] renumbers its entries from zero first
//! (`Slots::next_index`).

use std::num::NonZeroU64;

/// Bits of a bucket key (see "The bit budget").
pub(crate) const KEY_BITS: u32 = 26;
const LANE_BITS: u32 = 4;
const STAGE_BITS: u32 = 2;

/// The most lanes a bucket may have: what a location's lane field holds.
pub(crate) const MAX_LANES: usize = 1 << LANE_BITS;

/// The most stages a bucket may have: what a location's stage field holds.
pub(crate) const MAX_STAGES: u64 = 1 << STAGE_BITS;
const INDEX_BITS: u32 = u64::BITS - KEY_BITS - LANE_BITS - STAGE_BITS;

/// One past the largest index a location holds. Unit tests use a small limit, so that renumbering
/// runs in them (they must then keep fewer live entries than that in one stage).
#[cfg(not(test))]
pub(crate) const INDEX_LIMIT: u64 = 1 << INDEX_BITS;
#[cfg(test)]
pub(crate) const INDEX_LIMIT: u64 = 1 << 16;

/// A bucket's identity: its level and slot, `level << slot_bits | slot`, where `slot_bits` is the
/// wheel's (the bits of its largest slot, `wheel_size - 1`): under `2^KEY_BITS - 1` for every
/// wheel size the builder accepts (see "The bit budget"). Ordered by level, then slot (the delay
/// queue's tie-break). Only with the wheel's `slot_bits` does it tell its level and slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct BucketKey(u32);

impl BucketKey {
    /// Level 0's slot 0, whatever the wheel: what a ticket names before its entry is added.
    pub(crate) const FIRST: BucketKey = BucketKey(0);

    /// The key of `slot` of `level` in a wheel whose slots take `slot_bits` bits.
    pub(crate) fn new(level: usize, slot: usize, slot_bits: u32) -> BucketKey {
        debug_assert!(
            slot < 1 << slot_bits && ((level as u64) << slot_bits | slot as u64) + 1 < 1 << KEY_BITS,
            "level {level} slot {slot} slot_bits {slot_bits}: past the key's {KEY_BITS} bits"
        );
        BucketKey(((level as u32) << slot_bits) | slot as u32)
    }

    /// The key's level, in a wheel whose slots take `slot_bits` bits.
    pub(crate) fn level(self, slot_bits: u32) -> usize {
        (self.0 >> slot_bits) as usize
    }

    /// The key's slot, in a wheel whose slots take `slot_bits` bits.
    pub(crate) fn slot(self, slot_bits: u32) -> usize {
        (self.0 & ((1 << slot_bits) - 1)) as usize
    }

    /// The key as an index: `level << slot_bits | slot` (the wheel's chunks, `wheel/chunks.rs`).
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }
}

impl From<BucketKey> for u64 {
    /// The key as a number: ordered as the keys are.
    fn from(key: BucketKey) -> u64 {
        u64::from(key.0)
    }
}

/// One lane of one bucket: `lane << KEY_BITS | key` (see "The bit budget").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LaneKey(u32);

impl LaneKey {
    pub(crate) fn new(bucket: BucketKey, lane: usize) -> LaneKey {
        debug_assert!(u64::from(bucket.0) + 1 < 1 << KEY_BITS && lane < MAX_LANES);
        LaneKey(bucket.0 | (lane as u32) << KEY_BITS)
    }

    /// The bucket's key.
    pub(crate) fn bucket(self) -> BucketKey {
        BucketKey(self.0 & ((1 << KEY_BITS) - 1))
    }

    pub(crate) fn lane(self) -> usize {
        (self.0 >> KEY_BITS) as usize
    }
}

/// Where an entry sits (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Location(NonZeroU64);

impl Location {
    #[inline(always)]
    pub(crate) fn new(lane: LaneKey, stage: usize, index: u64) -> Location {
        debug_assert!(index < INDEX_LIMIT && u64::from(lane.0) + 1 < 1 << (KEY_BITS + LANE_BITS));
        let word =
            (u64::from(lane.0) + 1) << (STAGE_BITS + INDEX_BITS) | (stage as u64) << INDEX_BITS | index;
        Location(NonZeroU64::new(word).expect("the lane key field is never zero"))
    }

    /// The bucket and lane holding the entry.
    pub(crate) fn lane_key(self) -> LaneKey {
        LaneKey(((self.0.get() >> (STAGE_BITS + INDEX_BITS)) - 1) as u32)
    }

    /// The key of the bucket holding the entry.
    pub(crate) fn bucket(self) -> BucketKey {
        self.lane_key().bucket()
    }

    /// The lane of that bucket holding the entry.
    #[cfg(test)]
    pub(crate) fn lane(self) -> usize {
        self.lane_key().lane()
    }

    pub(crate) fn stage(self) -> usize {
        ((self.0.get() >> INDEX_BITS) & ((1 << STAGE_BITS) - 1)) as usize
    }

    pub(crate) fn index(self) -> u64 {
        self.0.get() & ((1 << INDEX_BITS) - 1)
    }

    /// The same bucket, lane and stage at another index (compaction, renumbering).
    pub(crate) fn at(self, index: u64) -> Location {
        debug_assert!(index < INDEX_LIMIT);
        let word = self.0.get() & !((1 << INDEX_BITS) - 1) | index;
        Location(NonZeroU64::new(word).expect("the lane key field is never zero"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_and_none_costs_nothing() {
        assert_eq!(std::mem::size_of::<Option<Location>>(), 8);
        // The largest key: a wheel of 2^24 slots has three levels.
        let key = BucketKey::new(2, (1 << 24) - 1, 24);
        assert_eq!((key.level(24), key.slot(24)), (2, (1 << 24) - 1));
        for lane in 0..MAX_LANES {
            let lane_key = LaneKey::new(key, lane);
            assert_eq!((lane_key.bucket(), lane_key.lane()), (key, lane));
            for (stage, index) in [(0, 0), (3, INDEX_LIMIT - 1), (2, 12345 % INDEX_LIMIT)] {
                let location = Location::new(lane_key, stage, index);
                assert_eq!(
                    (location.bucket(), location.lane(), location.stage(), location.index()),
                    (key, lane, stage, index)
                );
                assert_eq!(location.at(7).index(), 7);
                assert_eq!(location.at(7).lane_key(), lane_key);
            }
        }
        assert_eq!((BucketKey::new(5, 511, 9).level(9), BucketKey::new(5, 511, 9).slot(9)), (5, 511));
        assert_eq!((BucketKey::new(63, 1, 1).level(1), BucketKey::new(63, 1, 1).slot(1)), (63, 1));
        assert!(BucketKey::new(1, 0, 17) > BucketKey::new(0, 86_399, 17), "ordered by level first");
        assert_eq!(BucketKey::new(0, 0, 24), BucketKey::FIRST);
    }
}
