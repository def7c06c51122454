//! The flush of a bucket the queue popped and the drain of the overdue list, each bounded by the
//! round's **limit** (the wheel's docs, "Rounds"; a split bucket's round, and a visit code, go to
//! its visit: `visit.rs`): a due entry whose stamp is above it goes to the overdue list's tail (a
//! bucket's) or stays there in the kept run at its head (the drain's, which also moves what a flush
//! linked into that run), and the list is offered for the next round. A drain whose limit is no higher than the last drain's skips that kept run in O(1)
//! (`lists.rs`, "Kept"), so the rounds of one advance walk a kept entry at most twice.
//!
//! One pass over the list, **taken whole**: its ends and count (and a bucket's level count) are
//! emptied in O(1) and the chain of its entries walked once by their links, each entry held,
//! filed in a finer bucket, or, above the limit, linked at the overdue list's tail: no
//! entry is unlinked on its own (`Wheel::unlink`'s look-up of its list, by its life word and tick,
//! is for a cancel, a reset or a take). Entries above the limit need not be at the tail (a reset
//! links an entry of any stamp there, and a cascade appends in the order of the coarser list), so
//! the pass walks the whole chain. Room in `out` for every entry of the list, and in `offers` for
//! every filing of a bucket above level 0 (which holds fewer than the split size; a level-0
//! bucket's entries are all due at its round), is made before the take, so no push of the walk
//! allocates: a failed allocation leaves the list whole. The filing may still allocate during the
//! walk: the finer bucket's level or chunk, on its first use (`Levels::bucket`, which creates it),
//! where a failed allocation finds the rest of the chain off every list.

use super::super::life::ListCode;
use super::super::slab::NIL;
use super::buckets::NO_ROUND;
use super::lists::{link, Kept};
use super::{BucketCode, Due, Key, List, Offer, Wheel};

/// The most offers one filing reports (`Offers`: the round's and the overdue list's two).
pub(super) const OFFERS_PER_FILE: usize = 3;

impl<P> Wheel<P> {
    /// The queue popped `bucket` at `expiration` (module docs, "Flush"): if that is the bucket's
    /// round, the time moves to `expiration` (never backwards) and each of its entries is placed
    /// again from there: due ones with a stamp at most `limit` held and appended to
    /// `out` (module docs, "Held"), due ones above it linked at the overdue list's tail, the rest
    /// linked in finer buckets, whose new rounds are appended to `offers`. The bucket forgets its
    /// round; if it linked entries on the overdue list, the list's offer is returned for the caller
    /// to make for the next round, unless the list was offered since its last drain. A stale offer
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
        let mut at = self.take_whole(level, slot, out, offers);
        let mut kept = 0;
        while at != NIL {
            self.count_walked();
            let taken = self.slab.slot(at);
            let (index, next) = (at, taken.next);
            let deadline = taken.entry.as_ref().expect("a taken slot is occupied").when.tick();
            if deadline > self.time {
                // Room made whole by `take_whole` above level 0; a level-0 bucket's entries are
                // all due at its round, so this reserve never grows `offers` after a take.
                offers.reserve(OFFERS_PER_FILE);
                offers.extend(self.file(index, deadline).iter());
            } else if taken.life.stamp() <= limit {
                out.push(self.hold(index));
            } else {
                // Due, above the limit: to the overdue list, whose drain keeps it (module docs).
                self.link_at_overdue_tail(index);
                kept += 1;
            }
            at = next;
        }
        if !fault!("shard_core_bucket_round_kept") {
            self.levels.get_mut(level, slot).expect("a flushed bucket exists").expiration = NO_ROUND;
        }
        #[cfg(feature = "tracing")]
        {
            self.flush_kept = kept;
        }
        let offer = self.overdue_offer().filter(|_| kept > 0);
        self.overdue_offered |= offer.is_some();
        offer
    }

    /// Takes the list of the unsplit bucket `slot` of `level` whole (module docs, "One pass"):
    /// the bucket's list and its level's count emptied in O(1), its first entry returned (`NIL`
    /// if none), the entries still chained by their links, for the flush to walk once. Room for
    /// every entry in `out` and, above level 0, for every entry's filing in `offers` is made
    /// first, so that no push of the walk grows a vector while the chain is off every list.
    #[inline]
    fn take_whole(&mut self, level: usize, slot: usize, out: &mut Vec<Due>, offers: &mut Vec<Offer>) -> u32 {
        let len = self.levels.get(level, slot).expect("a flushed bucket exists").list.len;
        out.reserve(len as usize);
        if level != 0 {
            // An unsplit bucket above level 0 holds fewer than the split size.
            offers.reserve(len as usize * OFFERS_PER_FILE);
        }
        self.take_list(level, slot)
    }

    /// Holds every entry of the overdue list whose stamp is at most `limit`, appended to
    /// `out` in the order they were linked; those above it stay linked, the list's kept run
    /// (`lists.rs`, "Kept"), and the list's offer at the time is returned for the caller to make
    /// for the next round (the list counts as offered until its next drain, but for entries a
    /// bucket behind the time moves there, which offer it for the round under way: module docs,
    /// "Rounds"). The kept run of the last drain is walked only if `limit` is above that drain's,
    /// else skipped: a drain walks what was linked since the last. Emptied, the list is not
    /// offered: the next entry it takes offers it.
    pub(crate) fn drain_overdue(&mut self, limit: u64, out: &mut Vec<Due>) -> Option<Offer> {
        if !fault!("shard_core_overdue_flag_left_set") {
            (self.overdue_offered, self.moved_offered) = (false, false);
        }
        let run = if limit <= self.kept.above { self.kept.tail } else { NIL };
        // Room first (module docs): every entry after the run is due.
        let after = if run == NIL { self.overdue.len } else { self.kept.linked.min(self.overdue.len) };
        out.reserve(after as usize);
        let (mut at, mut earliest) = if run == NIL {
            (std::mem::replace(&mut self.overdue, List::EMPTY).head, u64::MAX)
        } else {
            self.overdue.tail = run;
            (std::mem::replace(&mut self.slab.slot_mut(run).next, NIL), self.kept.earliest_kept)
        };
        let mut walked = 0;
        while at != NIL {
            self.count_walked();
            walked += 1;
            let (index, next) = (at, self.slab.slot(at).next);
            if self.slab.slot(index).life.stamp() <= limit {
                out.push(self.hold(index));
            } else {
                // Kept: at the tail of the run.
                link(&mut self.slab, &mut self.overdue, index, ListCode::OVERDUE);
                earliest = earliest.min(self.slab.entry(index).when.tick());
            }
            at = next;
        }
        if run != NIL {
            // The walked entries were still counted in the list's count.
            self.overdue.len -= walked;
        }
        if self.overdue.is_empty() {
            self.kept = Kept::EMPTY;
            return None;
        }
        let tail = self.overdue.tail;
        self.kept = Kept { tail, above: limit, earliest_kept: earliest, earliest, linked: 0 };
        self.overdue_offered = true;
        Some(Offer { expiration: self.time, bucket: BucketCode::OVERDUE })
    }

    /// Marks the taken, occupied slot `index` held (module docs, "Held"): its batch element.
    #[inline]
    pub(super) fn hold(&mut self, index: u32) -> Due {
        let slot = self.slab.slot_mut(index);
        slot.life = slot.life.on(ListCode::HELD);
        let (stamp, deadline) =
            (slot.life.stamp(), slot.entry.as_ref().expect("a held slot is occupied").when);
        Due { deadline, stamp, key: Key { slot: index, generation: stamp } }
    }
}
