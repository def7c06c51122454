//! Warming a bucket before its round: a walk of its list that reads each entry's slot, so that
//! the flush at its tick finds them in the cache (the driver's, before it waits for that tick).
//! It changes nothing: read-only, under the shard's lock like every other look at the wheel.

use super::super::slab::NIL;
use super::{BucketCode, Wheel};

impl<P> Wheel<P> {
    /// Reads the slots of at most `most` entries of `bucket`'s list, if `expiration` is its round
    /// and it is not split (a split bucket's round is a visit of its stages), and runs `touch` on
    /// each one's payload (what it points to, warmed too): the entries read.
    pub(crate) fn warm(&self, bucket: BucketCode, expiration: u64, most: usize, touch: impl Fn(&P)) -> usize {
        if bucket == BucketCode::OVERDUE || bucket.as_visit().is_some() {
            return 0;
        }
        let (level, slot) = bucket.decode();
        let Some(b) = self.levels.get(level, slot) else { return 0 };
        if b.expiration != expiration || b.split != 0 {
            return 0;
        }
        let (mut at, mut read, mut sum) = (b.list.head, 0, 0u64);
        while at != NIL && read < most {
            let slot = self.slab.slot(at);
            if let Some(entry) = &slot.entry {
                sum = sum.wrapping_add(entry.when.tick());
                touch(&entry.payload);
            }
            at = slot.next;
            read += 1;
        }
        std::hint::black_box(sum);
        read
    }
}
