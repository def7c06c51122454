//! How a batch is put in order: [`Merge`], the buffers with which the core sorts an advance's
//! batch and a drain's entries by (deadline word, stamp) through `deadline::sort_batch`.

use super::{wheel, BucketCode, Due, Extra, Fired, Offer, Shard, State};
use crate::deadline::{self, Deadline};

/// The buffers with which [`Core::advance`] and [`Core::drain_all`] sort a batch through
/// `deadline::sort_batch` (a batch's spare; a drain's order keys, index and deadline, and their
/// spare; the counting sort's counters), and
/// the due entries and offers of a flush.
#[derive(Debug, Default)]
pub struct Merge {
    keys: Vec<(u32, Deadline)>,
    spare: Vec<(u32, Deadline)>,
    spare_due: Vec<Due>,
    counts: Vec<u32>,
    pub(super) due: Vec<wheel::Due>,
    pub(super) offers: Vec<Offer>,
}

impl Merge {
    /// Gives back the pages of the buffers' room beyond `keep` entries each (after a burst), as
    /// `entry::shrink_buffer` does: the room stays, its pages go back to the kernel at once.
    pub fn trim(&mut self, keep: usize) {
        crate::entry::shrink_buffer(&mut self.keys, keep);
        crate::entry::shrink_buffer(&mut self.spare, keep);
        crate::entry::shrink_buffer(&mut self.spare_due, keep);
        crate::entry::shrink_buffer(&mut self.due, keep);
        crate::entry::shrink_buffer(&mut self.offers, keep);
    }
}

impl Merge {
    /// Flushes the offer (`bucket`, `expiration`) in `shard`'s wheel under its lock with the
    /// round's `limit` ([`Wheel::flush`](wheel::Wheel::flush)), its due entries and offers into
    /// the buffers, and emits the `tracing` feature's event after the unlock
    /// (`crate::wheel::trace`): the bucket's offer for the next round, if it kept entries.
    #[inline]
    pub(super) fn flush<P: Send + 'static, X: Extra<P>>(
        &mut self,
        shard: &Shard<State<P, X>>,
        (bucket, expiration, limit): (BucketCode, u64, u64),
    ) -> Option<Offer> {
        let (due, offers) = (&mut self.due, &mut self.offers);
        let (next, event) = shard.lock().state().wheel.flush_traced(bucket, expiration, limit, due, offers);
        crate::wheel::trace::emit(event);
        next
    }
}

/// What a batch is ordered by: (deadline word, stamp).
pub(super) trait Ordered {
    fn order(&self) -> (Deadline, u64);
}

impl Ordered for Due {
    #[inline]
    fn order(&self) -> (Deadline, u64) {
        self.entry.order()
    }
}

impl<P> Ordered for Fired<P> {
    #[inline]
    fn order(&self) -> (Deadline, u64) {
        Fired::order(self)
    }
}

/// Marks a position of `keys` whose entry is in place (while [`Merge::sort_fired`] permutes).
const PLACED: u32 = u32::MAX;

impl Merge {
    /// Sorts an advance's `batch` by its order (deadline word, stamp) through
    /// `deadline::sort_batch`, the entries themselves moved (they are small and `Copy`).
    #[inline]
    pub(super) fn sort(&mut self, batch: &mut [Due]) {
        if batch.len() >= 2 {
            deadline::sort_batch(batch, &mut self.spare_due, &mut self.counts, Ordered::order);
        }
    }

    /// Sorts a drain's `batch` by its order (deadline word, stamp): the keys through
    /// `deadline::sort_batch`, then the entries (each with its payload) moved into their order in
    /// one pass over the permutation's cycles.
    pub(super) fn sort_fired<P>(&mut self, batch: &mut [Fired<P>]) {
        if batch.len() < 2 {
            return;
        }
        if batch.len() >= PLACED as usize {
            batch.sort_by_key(Ordered::order);
            return;
        }
        self.keys.clear();
        self.keys.extend(batch.iter().enumerate().map(|(index, entry)| (index as u32, entry.order().0)));
        let order = |&(index, deadline): &(u32, Deadline)| (deadline, batch[index as usize].order().1);
        deadline::sort_batch(&mut self.keys, &mut self.spare, &mut self.counts, order);
        // Position `i` takes the entry at `keys[i].0`: follow each cycle of the permutation,
        // swapping each position's entry in, and mark the positions done.
        for start in 0..batch.len() {
            let mut at = start;
            loop {
                let from = std::mem::replace(&mut self.keys[at].0, PLACED);
                if from == PLACED || from as usize == start {
                    break;
                }
                batch.swap(at, from as usize);
                at = from as usize;
            }
        }
        self.keys.clear();
    }
}
