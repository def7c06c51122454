//! The `tracing` feature's `flush` and `cascade` events of a shard's flush (`crate::wheel::trace`):
//! what the flush took out is counted from its list's count before and
//! after it and the batch's growth, under the shard's lock, and handed to the caller as an
//! [`Event`] to emit after the unlock. Without the feature, [`flush_traced`](Wheel::flush_traced)
//! is the flush and no event.
//!
//! **The counts.** `due`: the entries the flush held for the batch; `late`: those it left linked,
//! due but above the round's limit (set aside for the next advance), on the
//! overdue list after the flush (a bucket's move there, counted by the flush: entries a cascade's
//! new round moves there from a bucket behind the time are not late); `moved`: the
//! rest of what left the list, cascaded to finer levels. A visit of a split bucket's stages
//! (`visit.rs`) leaves entries that are not yet due in the stages too, so it counts none `late`.
//! The overdue list's drain reads as level 0's bucket of the wheel's time (as a handle's position
//! of an overdue entry reads). A stale offer, or a list found empty, makes no event.

use super::{BucketCode, Due, Offer, Wheel};
use crate::wheel::trace::Event;
#[cfg(feature = "tracing")]
use crate::wheel::trace::Flushed;

impl<P> Wheel<P> {
    /// [`flush`](Wheel::flush), and with the `tracing` feature the event of what it took out
    /// (module docs), for the caller to emit after the shard's lock.
    #[inline]
    pub(crate) fn flush_traced(
        &mut self,
        bucket: BucketCode,
        expiration: u64,
        limit: u64,
        out: &mut Vec<Due>,
        offers: &mut Vec<Offer>,
    ) -> (Option<Offer>, Option<Event>) {
        #[cfg(not(feature = "tracing"))]
        {
            (self.flush(bucket, expiration, limit, out, offers), None)
        }
        #[cfg(feature = "tracing")]
        {
            let Some(visit) = self.flush_is_visit(bucket, expiration) else {
                return (self.flush(bucket, expiration, limit, out, offers), None);
            };
            let (before, batch) = (self.listed(bucket), out.len());
            self.flush_kept = 0;
            let next = self.flush(bucket, expiration, limit, out, offers);
            let (after, due) = (self.listed(bucket), out.len() - batch);
            if before == 0 {
                return (next, None);
            }
            // A bucket's late entries left it for the overdue list (`flush.rs` counts them: not
            // the entries a cascade's new round moved there from a bucket behind the time); the
            // list's stay.
            let (late, left_late) = match bucket {
                _ if visit => (0, 0),
                BucketCode::OVERDUE => (after, 0),
                _ => (self.flush_kept, self.flush_kept),
            };
            let moved = before.saturating_sub(after).saturating_sub(due).saturating_sub(left_late);
            let at = match bucket.as_visit().unwrap_or(bucket) {
                BucketCode::OVERDUE => (0, self.levels.slot_of(0, self.time)),
                code => code.decode(),
            };
            let out = Flushed { due, moved, late };
            (next, Some(Event { bucket: at, expiration, cursor: self.time, out }))
        }
    }

    /// Whether the flush of the offer (`bucket`, `expiration`) is a visit of a split bucket's
    /// stages (`Some(true)`), a flush of a list (`Some(false)`: a bucket's round, the overdue
    /// list), or finds nothing (`None`: a stale offer).
    #[cfg(feature = "tracing")]
    fn flush_is_visit(&self, bucket: BucketCode, expiration: u64) -> Option<bool> {
        if bucket == BucketCode::OVERDUE {
            return Some(false);
        }
        if let Some(bucket) = bucket.as_visit() {
            let (level, slot) = bucket.decode();
            return self.levels.get(level, slot).map(|_| true);
        }
        let (level, slot) = bucket.decode();
        let round = self.levels.get(level, slot).filter(|b| b.expiration == expiration)?;
        (expiration != super::NO_ROUND).then_some(round.split != 0)
    }

    /// The entries the list `bucket` names counts (the bucket a visit code names; a split
    /// bucket's count of its stages' entries).
    #[cfg(feature = "tracing")]
    fn listed(&self, bucket: BucketCode) -> usize {
        if bucket == BucketCode::OVERDUE {
            return self.overdue.len as usize;
        }
        let (level, slot) = bucket.as_visit().unwrap_or(bucket).decode();
        self.levels.get(level, slot).map_or(0, |b| b.list.len as usize)
    }
}

/// A cascade whose new round lands in a bucket left behind the time moves that bucket's entries to
/// the overdue list during the flush: they are not the flush's `late` (entries above its limit),
/// and the cascaded entry is `moved`.
#[cfg(all(test, feature = "tracing"))]
#[test]
fn entries_moved_from_a_bucket_behind_the_time_are_not_counted_late() {
    use super::support::word;
    let mut wheel: Wheel<u32> = Wheel::new(20);
    let (mut out, mut offers) = (Vec::new(), Vec::new());
    wheel.insert(word(5, 0), 0, 0).map_err(drop).unwrap();
    let (_, late_bucket) = wheel.insert(word(10, 0), 1, 1).map_err(drop).unwrap();
    let (_, coarse) = wheel.insert(word(25, 0), 2, 2).map_err(drop).unwrap();
    // The bucket of tick 10 is popped before that of tick 5: bucket 5 is left behind the time.
    let late_bucket = late_bucket.round.unwrap();
    wheel.flush(late_bucket.bucket, late_bucket.expiration, u64::MAX, &mut out, &mut offers);
    assert_eq!((out.len(), wheel.time()), (1, 10));
    // Level 1's round at 20 cascades tick 25 into level 0's slot 5: a new round there moves the
    // entry of tick 5 to the overdue list.
    let coarse = coarse.round.unwrap();
    assert_eq!(coarse.bucket, BucketCode::encode(1, 1));
    let (_, event) = wheel.flush_traced(coarse.bucket, coarse.expiration, u64::MAX, &mut out, &mut offers);
    assert!(wheel.has_overdue(), "the entry of tick 5 moved to the overdue list");
    let flushed = event.expect("an event").out;
    assert_eq!((flushed.due, flushed.moved, flushed.late), (0, 1, 0));
}
