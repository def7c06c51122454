//! [`Driven`]: a wheel with a queue of its own offers, which the shard core drives until the
//! driver's one queue of buckets takes their place (docs/lean_core.md, "room by room"). It is the
//! Kafka drive in one shard: every offer an insert, a reset or a flush reports goes into a min-heap
//! of (expiration, bucket); an advance to `now` pops what is due, flushes each bucket popped (a
//! stale offer finds nothing), queues the offers the flushes make, and drains the overdue list.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{Fired, Key, Offer, Refusal, Refused, Wheel};

/// A wheel and the queue of its buckets (module docs).
#[derive(Debug)]
pub struct Driven<P> {
    wheel: Wheel<P>,
    queue: BinaryHeap<Reverse<Offer>>,
    offers: Vec<Offer>,
}

impl<P> Default for Driven<P> {
    fn default() -> Self {
        Driven::new(super::DEFAULT_WHEEL_SIZE)
    }
}

impl<P> Driven<P> {
    /// An empty wheel of `wheel_size` buckets a level and an empty queue.
    pub(crate) fn new(wheel_size: u64) -> Self {
        Driven { wheel: Wheel::new(wheel_size), queue: BinaryHeap::new(), offers: Vec::new() }
    }

    /// The wheel.
    pub(crate) fn wheel(&self) -> &Wheel<P> {
        &self.wheel
    }

    /// [`Wheel::insert`], its offer queued.
    #[inline]
    pub(crate) fn insert(&mut self, deadline: u64, sub: u8, seq: u64, payload: P) -> Result<Key, Refused<P>> {
        let (key, offer) = self.wheel.insert(deadline, sub, seq, payload)?;
        self.queue.extend(offer.map(Reverse));
        Ok(key)
    }

    /// [`Wheel::remove`].
    #[inline]
    pub(crate) fn remove(&mut self, key: Key) -> Option<P> {
        self.wheel.remove(key)
    }

    /// [`Wheel::reset`], its offer queued: `Ok(true)` if it moved, `Ok(false)` if the key is stale.
    ///
    /// # Errors
    ///
    /// As [`Wheel::reset`]'s.
    #[inline]
    pub(crate) fn reset(&mut self, key: Key, deadline: u64, sub: u8) -> Result<bool, Refusal> {
        let Some(offer) = self.wheel.reset(key, deadline, sub)? else { return Ok(false) };
        self.queue.extend(offer.map(Reverse));
        Ok(true)
    }

    /// [`Wheel::deadline`].
    pub(crate) fn deadline(&self, key: Key) -> Option<(u64, u8)> {
        self.wheel.deadline(key)
    }

    /// Every entry due by tick `now` leaves the wheel, appended to `out` (unsorted: the caller
    /// sorts by [`Fired::order`]): the buckets queued up to `now` flushed in expiration order, the
    /// cascades' offers queued (and flushed too if due), then the overdue list drained.
    pub(crate) fn advance(&mut self, now: u64, out: &mut Vec<Fired<P>>) {
        while let Some(&Reverse(offer)) = self.queue.peek() {
            if offer.expiration > now {
                break;
            }
            self.queue.pop();
            self.wheel.flush(offer.bucket, offer.expiration, out, &mut self.offers);
            self.queue.extend(self.offers.drain(..).map(Reverse));
        }
        self.wheel.drain_overdue(out);
    }

    /// The earliest tick at which [`advance`](Driven::advance) has work, `None` when nothing is
    /// pending: the wheel's time if the overdue list holds entries, else the head of the queue
    /// (a stale offer's included: never after the earliest entry is due).
    pub(crate) fn next_tick(&self) -> Option<u64> {
        if self.wheel.is_empty() {
            return None;
        }
        if self.wheel.has_overdue() {
            return Some(self.wheel.time());
        }
        self.queue.peek().map(|Reverse(offer)| offer.expiration)
    }

    /// [`Wheel::drain_all`]; the queue emptied.
    pub(crate) fn drain_all(&mut self, out: &mut Vec<Fired<P>>) {
        self.wheel.drain_all(out);
        self.queue.clear();
    }
}
