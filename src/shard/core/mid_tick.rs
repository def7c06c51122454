//! The core's moves of held entries besides the advance's: the entries of the tick after a deadline
//! passed mid-tick, taken with its batch ([`Core::take_due_by`]), and a held entry put back for the
//! next round ([`Core::set_aside`]). The module docs of `core.rs`, "Passed deadlines mid-tick", and
//! "Set aside" below. Beside them, the tick of the next work ([`Core::next_work`]), which a passed
//! deadline on an overdue list may put before the queue's head, and an offer due at once that
//! flushes nothing ([`Core::offer_nothing_at`]).
//!
//! **Set aside.** [`Core::set_aside`] puts a held entry back, pending, for the next advance (the
//! drive waker's closures, `timer/advance.rs`): under its shard's lock the wheel files it by its
//! deadline from its time (a passed one on the overdue list), and what that reports is offered with
//! [`DelayQueue::offer_next`](crate::delay_queue::DelayQueue::offer_next) after the link and the
//! unlock, so the round under way leaves it and the next takes it (but for entries the filing moves
//! from a bucket behind the time, offered for the round under way: `core.rs`, "Rounds"). Offered before the
//! link, an advance could pop the offer and drain the overdue list before the entry is on it, and
//! the offer the link then owes is never made: the seeded fault
//! `shard_core_set_aside_offered_before_link`, which the loom model
//! `shard_core::a_set_aside_racing_the_poll_is_taken_by_the_next_advance` catches. A cancel after
//! it takes the entry, a reset moves it.

use super::{faults, BucketCode, Bucketed, Core, Due, Extra, Merge, Offers};
use crate::deadline::Deadline;

impl<P: Send + 'static, X: Extra<P>> Core<P, X> {
    /// Holds, in every shard (each under its lock, no lock across two), the entries of `limit`'s
    /// tick whose deadline word is at or before `limit` and whose stamp is at most `stamps`, as
    /// an advance's flush holds its due entries, appended to `out` unsorted (module docs, "Passed
    /// deadlines mid-tick"): `limit` is the latest deadline of a batch passed within the tick
    /// before it, as one of that tick's words (`Deadline::in_own_tick`), `stamps` the advance's
    /// stamp limit. The caller sorts the batch again by the instants, equal ones by stamp
    /// ([`Merge::sort_by_instants`]) and claims each as any held entry. `merge` holds each
    /// shard's entries on their way (as for [`advance`](Core::advance)).
    pub fn take_due_by(&self, limit: Deadline, stamps: u64, out: &mut Vec<Due>, merge: &mut Merge) {
        for (index, shard) in self.shards.iter().enumerate() {
            shard.lock().state().wheel.take_due_by(limit, stamps, &mut merge.due);
            out.extend(merge.due.drain(..).map(|entry| Due { shard: index as u16, entry }));
        }
    }

    /// The earliest tick at which an advance has work: the queue's head, or an earlier deadline
    /// passed when it was set, on a shard's overdue list (offered at that wheel's time, which may
    /// be after it: `Wheel::overdue_earliest`), each shard read under its lock in turn; `None` if
    /// the queue is empty (an entry on an overdue list has an offer queued).
    pub fn next_work(&self) -> Option<u64> {
        let head = self.queue.head()?;
        Some(self.shards.iter().fold(head, |earliest, shard| {
            shard.lock().state().wheel.overdue_earliest().map_or(earliest, |tick| tick.min(earliest))
        }))
    }

    /// Queues an offer due at `tick` that flushes nothing, so that the queue's head is due and a
    /// driver watching it advances (the drive waker's carried limit, `timer/advance.rs`):
    /// shard 0's level-0 bucket of the tick after, whose rounds start at that bucket's own ticks
    /// only, never at `tick`; popped, it is stale. No lock: the wheels' size is the core's.
    pub(crate) fn offer_nothing_at(&self, tick: u64) {
        let bucket = BucketCode::encode(0, (tick.wrapping_add(1) % self.wheel_size) as usize);
        self.queue.offer(tick, Bucketed { shard: 0, bucket });
    }

    /// Puts `due`'s held entry back, pending, filed by its deadline from its wheel's time (a
    /// passed one on the overdue list), and offers what the filing reports for the next round
    /// ([`DelayQueue::offer_next`](crate::delay_queue::DelayQueue::offer_next)) after the link and
    /// the unlock, so the next advance takes it (module docs, "Set aside"). `true` if it went
    /// back; `false` if a cancel or a drain took it since the advance. The batch must not claim
    /// it then: a cancel takes it, a reset moves it, an advance holds it again.
    pub fn set_aside(&self, due: &Due) -> bool {
        self.set_aside_if(due, |_| true)
    }

    /// [`set_aside`](Core::set_aside) only if `pick` picks the held entry's payload (looked at
    /// under the lock): `false` if it does not (the entry stays held, for its claim) or is gone.
    pub fn set_aside_if(&self, due: &Due, pick: impl FnOnce(&P) -> bool) -> bool {
        let index = usize::from(due.shard);
        let shard = &self.shards[index];
        if fault!("shard_core_set_aside_offered_before_link") {
            let offers = faults::set_aside_offers_before_link(shard, due.entry.key);
            for offer in offers.iter() {
                self.queue.offer_next(offer.expiration, Bucketed { shard: due.shard, bucket: offer.bucket });
            }
            return shard.lock().state().wheel.set_aside(due.entry.key).is_some();
        }
        let offers = {
            let mut guard = shard.lock();
            let wheel = &mut guard.state().wheel;
            if !wheel.payload_mut(due.entry.key).is_some_and(|payload| pick(payload)) {
                return false;
            }
            wheel.set_aside(due.entry.key)
        };
        let Some(offers) = offers else { return false };
        // After the link and the unlock (module docs); entries moved from behind the time for
        // the round under way ("Rounds").
        let Offers { round, overdue, moved } = offers;
        for offer in round.into_iter().chain(overdue) {
            self.queue.offer_next(offer.expiration, Bucketed { shard: due.shard, bucket: offer.bucket });
        }
        if let Some(offer) = moved {
            self.queue.offer(offer.expiration, Bucketed { shard: due.shard, bucket: offer.bucket });
        }
        true
    }
}

impl Merge {
    /// Sorts a batch that [`Core::take_due_by`] added to by the instants
    /// (`Deadline::instant_order`: a deadline passed mid-tick among its own tick's), equal ones
    /// by stamp.
    pub fn sort_by_instants(&mut self, batch: &mut [Due]) {
        batch.sort_unstable_by_key(|due| (due.entry.deadline.instant_order(), due.entry.stamp));
    }
}

#[cfg(all(test, not(delaywheel_loom)))]
mod tests;
