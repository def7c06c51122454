//! The flush of a bucket the queue popped and the drain of the overdue list, each bounded by the
//! round's **limit** (the wheel's docs, "Rounds"; a split bucket's round, and a visit code, go to
//! its visit: `visit.rs`): a due entry whose stamp is above it is left linked where it is, and its
//! list offered for the next round.
//!
//! One pass over the list: each entry is unlinked from its head and held, filed in a finer bucket,
//! or, above the limit, linked again at the tail; the pass ends at the list's end or at the first
//! entry it linked again. Entries above the limit need not be at the tail (a reset links an entry
//! of any stamp there, and a cascade appends in the order of the coarser list), so the
//! pass does not stop at the first of them. Room in `out` and `offers` is made before each unlink,
//! so no push into them after it allocates: an entry is on its list, held and in `out`, or filed
//! with its offers in `offers`, at every point where one of them may fail to grow. The filing may
//! still allocate after the unlink: the finer bucket's level or chunk, on its first use
//! (`Levels::bucket`, which creates it), where a failed allocation finds the entry unlinked and
//! not yet filed.

use super::super::life::ListCode;
use super::super::slab::NIL;
use super::buckets::NO_ROUND;
use super::lists::{bucket_of, link, list_of};
use super::{BucketCode, Due, Key, Offer, Wheel};

/// The most offers one filing reports (`Offers`: the round's and the overdue list's two).
pub(super) const OFFERS_PER_FILE: usize = 3;

impl<P> Wheel<P> {
    /// The queue popped `bucket` at `expiration` (module docs, "Flush"): if that is the bucket's
    /// round, the time moves to `expiration` (never backwards) and each of its entries is placed
    /// again from there: due ones with a stamp at most `limit` held and appended to
    /// `out` (module docs, "Held"), due ones above it left in the bucket, the rest linked in finer
    /// buckets, whose new rounds are appended to `offers`. A bucket left holding entries keeps its
    /// round, and its offer is returned for the caller to make for the next round. A stale offer
    /// changes nothing. The overdue list's code drains it ([`drain_overdue`](Wheel::drain_overdue)).
    pub(crate) fn flush(
        &mut self,
        bucket: BucketCode,
        expiration: u64,
        limit: u64,
        out: &mut Vec<Due>,
        offers: &mut Vec<Offer>,
    ) -> Option<Offer> {
        if bucket == BucketCode::OVERDUE {
            return self.drain_overdue(limit, out);
        }
        if let Some(bucket) = bucket.as_visit() {
            return self.flush_visit(bucket, expiration, limit, out, offers);
        }
        let (level, slot) = bucket.decode();
        match self.levels.get(level, slot) {
            Some(b) if b.expiration == expiration && expiration != NO_ROUND && b.split != 0 => {
                // The round's flush of a split bucket is a visit (`visit.rs`).
                return self.visit(level, slot, expiration, limit, (out, offers));
            }
            Some(b) if b.expiration == expiration && expiration != NO_ROUND => {}
            _ => return None,
        }
        self.time = self.time.max(expiration);
        let mut first_kept = NIL;
        while let Some(index) = self.room_then_pop(bucket, first_kept, out, offers) {
            self.count_walked();
            let slot = self.slab.slot(index);
            let deadline = slot.entry.as_ref().expect("a linked slot is occupied").when.tick();
            if deadline > self.time {
                offers.extend(self.file(index, deadline).iter());
            } else if slot.life.stamp() <= limit {
                out.push(self.hold(index));
            } else {
                self.keep(bucket, index, &mut first_kept);
            }
        }
        let b = self.levels.get_mut(level, slot).expect("a flushed bucket exists");
        if first_kept == NIL {
            b.expiration = NO_ROUND;
            return None;
        }
        Some(Offer { expiration, bucket })
    }

    /// Holds every entry of the overdue list whose stamp is at most `limit`, appended to
    /// `out` in the order they were linked; those above it stay linked, and the list's offer at the
    /// time is returned for the caller to make for the next round (the list counts as offered
    /// until its next drain, but for entries a bucket behind the time moves there, which offer it
    /// for the round under way: module docs, "Rounds"). Emptied, the list is not offered: the
    /// next entry it takes offers it.
    pub(crate) fn drain_overdue(&mut self, limit: u64, out: &mut Vec<Due>) -> Option<Offer> {
        if !fault!("shard_core_overdue_flag_left_set") {
            (self.overdue_offered, self.moved_offered) = (false, false);
        }
        // Room first (module docs): every entry of the list is due.
        out.reserve(self.overdue.len as usize);
        let mut first_kept = NIL;
        while let Some(index) = self.pop_front_until(BucketCode::OVERDUE, first_kept) {
            self.count_walked();
            if self.slab.slot(index).life.stamp() <= limit {
                out.push(self.hold(index));
            } else {
                self.keep(BucketCode::OVERDUE, index, &mut first_kept);
            }
        }
        if first_kept == NIL {
            return None;
        }
        self.overdue_offered = true;
        Some(Offer { expiration: self.time, bucket: BucketCode::OVERDUE })
    }

    /// Makes room in `out` for one entry and in `offers` for one filing's, then unlinks the first
    /// entry of bucket `code` unless it is `stop` (`pop_front_until`). Room first, so that no push
    /// after the unlink grows a vector: a failed allocation leaves the entry on its list, never held
    /// and counted with no batch to claim it, nor filed in a bucket whose new round goes unoffered.
    #[inline]
    fn room_then_pop(
        &mut self,
        code: BucketCode,
        stop: u32,
        out: &mut Vec<Due>,
        offers: &mut Vec<Offer>,
    ) -> Option<u32> {
        out.reserve(1);
        offers.reserve(OFFERS_PER_FILE);
        self.pop_front_until(code, stop)
    }

    /// Links the unlinked slot `index`, due but above the round's limit, at the tail of the list
    /// `code` names again; the first so linked ends the pass (`first_kept`).
    #[inline]
    fn keep(&mut self, code: BucketCode, index: u32, first_kept: &mut u32) {
        let at = bucket_of(code);
        let list_code = match at {
            Some((level, _)) => {
                // Back into its level's count, which the unlink took it out of (`stats.rs`).
                self.per_level[level] += 1;
                ListCode::level(level)
            }
            None => ListCode::OVERDUE,
        };
        link(&mut self.slab, list_of(&mut self.levels, &mut self.overdue, at), index, list_code);
        if *first_kept == NIL {
            *first_kept = index;
        }
    }

    /// Marks the unlinked, occupied slot `index` held (module docs, "Held"): its batch element.
    #[inline]
    pub(super) fn hold(&mut self, index: u32) -> Due {
        let slot = self.slab.slot_mut(index);
        slot.life = slot.life.on(ListCode::HELD);
        let (stamp, deadline) =
            (slot.life.stamp(), slot.entry.as_ref().expect("a held slot is occupied").when);
        Due { deadline, stamp, key: Key { slot: index, generation: stamp } }
    }
}
