//! `Location`: where an entry sits, in one word: its bucket's key, its lane, its stage and its
//! index there.
//!
//! An entry's slot records its location (`entry/`) so that a cancel finds it in O(1). The bucket
//! is named by its **key** ([`BucketKey`]: `level << 16 | slot`, the one identity of a bucket),
//! which the wheel resolves (`TimingWheel::bucket_by_key`): no reference count to move on insert,
//! removal or cascade, on a line every thread inserting into that bucket would share. The entry
//! never resolves it itself. The whole location is 8 bytes, `Option<Location>` too:
//!
//! ```text
//!  63                      36   35   34 33                                  0
//! [ lane key + 1 (28 bits)    | stage  | index in the lane's stage (34 bits)  ]
//! ```
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

const KEY_BITS: u32 = 24;
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

/// A bucket's identity: its level and slot, `level << 16 | slot` (`MAX_WHEEL_SIZE` is `2^16`, at
/// most 64 levels: 22 bits). Ordered by level, then slot (the delay queue's tie-break).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct BucketKey(u32);

impl BucketKey {
    pub(crate) fn new(level: usize, slot: usize) -> BucketKey {
        debug_assert!(level < 64 && slot < 1 << 16);
        BucketKey(((level as u32) << 16) | slot as u32)
    }

    pub(crate) fn level(self) -> usize {
        (self.0 >> 16) as usize
    }

    pub(crate) fn slot(self) -> usize {
        (self.0 & 0xffff) as usize
    }
}

impl From<BucketKey> for u64 {
    /// The key as a number: ordered as the keys are.
    fn from(key: BucketKey) -> u64 {
        u64::from(key.0)
    }
}

/// One lane of one bucket: `lane << KEY_BITS | key` (a bucket key needs 22 bits: [`BucketKey`]).
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
        let key = BucketKey::new(63, (1 << 16) - 1);
        assert_eq!((key.level(), key.slot()), (63, (1 << 16) - 1));
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
        assert_eq!((BucketKey::new(5, 511).level(), BucketKey::new(5, 511).slot()), (5, 511));
        assert!(BucketKey::new(1, 0) > BucketKey::new(0, 65_535), "ordered by level first");
    }
}
