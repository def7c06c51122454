//! The offers of a move to the driver's queue (module docs of `core.rs`, "The queue of buckets"
//! and "Rounds"), written once for every caller: the core's own calls, which reach the queue
//! through the core, and a handle's reset, which reaches it through its shard's state (each
//! shard's state holds the core's queue in an `Arc`: `handles.rs`).

use std::ops::Deref;

use super::{Bucketed, Core, Extra, Offer, Offers};
use crate::delay_queue::DelayQueue;

/// Offers `offers` of shard `index` to `queue`: a bucket's new round and the overdue list's for
/// entries moved there from behind the time with [`DelayQueue::offer`], which the round under
/// way pops; the overdue list's for the entry's own passed deadline with
/// [`DelayQueue::offer_next`], which it leaves to the next.
#[inline]
pub(in crate::shard) fn offer_to(queue: &DelayQueue<Bucketed>, index: usize, offers: Offers) {
    let Offers { round, overdue, moved } = offers;
    for Offer { expiration, bucket } in round.into_iter().chain(moved) {
        queue.offer(expiration, Bucketed { shard: index as u16, bucket });
    }
    if let Some(Offer { expiration, bucket }) = overdue {
        queue.offer_next(expiration, Bucketed { shard: index as u16, bucket });
    }
}

impl<P: Send + 'static, X: Extra<P>> Core<P, X> {
    /// Offers `offers` of shard `index` to the core's queue ([`offer_to`]).
    #[inline]
    pub(super) fn offer(&self, index: usize, offers: Offers) {
        offer_to(&self.queue, index, offers);
    }
}

/// A move's offers, made when dropped: after the unlock, on the normal path and on a closure's
/// panic alike (`schedule_in_with`, a handle's `reset_with`). It is declared before the lock's
/// guard, so that it drops after it. `queue` is the core's queue, borrowed from the core or an
/// `Arc` cloned from the shard's state under the lock (which keeps the queue alive past the
/// unlock, should the core be dropped meanwhile); `None` offers nothing.
pub(super) struct OfferOnDrop<Q: Deref<Target = DelayQueue<Bucketed>>> {
    pub(super) queue: Option<Q>,
    pub(super) index: usize,
    pub(super) offers: Offers,
}

impl<Q: Deref<Target = DelayQueue<Bucketed>>> Drop for OfferOnDrop<Q> {
    #[inline]
    fn drop(&mut self) {
        if let Some(queue) = &self.queue {
            if self.offers != Offers::default() {
                offer_to(queue, self.index, std::mem::take(&mut self.offers));
            }
        }
    }
}
