//! Seeded faults of this room, for the loom suite only (docs/loom.md): the alternative bodies that
//! a `fault!("name")` site switches to. Outside a fault build every site folds to the correct
//! code, and these only have to compile.
//!
//! * `shard_unlock_relaxed` (`lock.rs`, at its site): the lock's unlock stores `Relaxed`, so the
//!   next holder does not synchronise with the last and reaches the value concurrently with it.
//! * `shard_epoch_unchecked` (`pool.rs`, at its site): a handle's `lock` skips the epoch compare,
//!   so a handle whose owner gave the shard back cancels in the state of whoever took it next.
//! * `shard_epoch_bumped_after_give_back` ([`give_back_then_bump`]): the give-back moves the
//!   epoch in a second critical section, after the header is back in the pool.
//! * `shard_count_after_unlock` ([`cancel_counting_after_unlock`]): a cancel counts its entry out
//!   after the unlock, racing the count's other writers.
//! * `shard_core_offer_before_link` ([`offers_before_link`]): `Core::schedule` offers the bucket
//!   its insert will set the round of before the insert's critical section, and drops the offers
//!   the insert reports: the driver may pop and flush the bucket before the entry is linked (a
//!   stale offer then), and the round set after it is never offered.
//! * `shard_core_reset_offers_before_link` ([`offers_before_link`]): `Core::reset` offers the
//!   bucket its move will set the round of before the move's critical section, and drops the
//!   offers the move reports: as the schedule's fault, for an entry that is already pending.
//! * `shard_core_visit_offered_before_split` ([`schedule_offering_first`]): `Core::schedule`
//!   offers the visit of the bucket its insert will split (`wheel/split.rs`) before the insert's
//!   critical section, and drops the visit the split reports: the driver may pop the visit before
//!   the split (a stale offer then), and the visit the split sets is never offered, so its stages
//!   wait for the bucket's round.
//! * `shard_core_claim_counts_out_after_unlock` ([`claim_counting_after_unlock`]): the core's
//!   claim counts its entry out after the unlock, racing a schedule's count-in.
//! * `shard_core_claims_at_collection` ([`flush_claiming`], [`Collected`]): the core's advance
//!   takes each due entry's payload at collection, under the flush's lock (counted out there), and
//!   its claim hands back what was taken: a cancel between the advance and the claim finds
//!   nothing, though the entry has not begun to run.
//! * `shard_core_overdue_flag_left_set` (`wheel/flush.rs`, at its site): the overdue list's drain
//!   leaves the list's "offered" flag set, so the entry it takes next (a passed deadline scheduled
//!   after the drain) is never offered, and no advance takes it.
//! * `shard_core_kept_not_offered` (`core.rs`, at its site): the advance drops the offer of a
//!   bucket or overdue list a flush left holding entries above the round's limit, so no later
//!   round takes them.
//! * `shard_core_set_aside_offered_before_link` ([`set_aside_offers_before_link`]):
//!   `Core::set_aside` offers for the next round what putting the entry back will report before
//!   its critical section, and drops what it reports: an advance may pop the offer and flush the
//!   list before the entry is back (finding nothing, or a stale offer), and the offer the link
//!   then owes is never made.
//! * `shard_core_moved_overdue_not_offered` (`wheel/lists.rs`, at its site): the entries a bucket
//!   behind the time moves to the overdue list offer it as a passed deadline does, only if the
//!   list was not offered since its last drain, so that while its offer for the next round is
//!   pending they wait one advance longer than their numbers allow.
//! * `shard_core_closed_read_outside_lock` ([`closed`]): `Core::schedule` reads its shard's
//!   closed flag in a critical section of its own, before the insert's, which does not read it:
//!   a close between the two drains the shard, and the entry is then linked into a closed shard,
//!   neither drained nor refused.
//! * `shard_core_reserve_head_read_outside_lock` ([`take_reading_head_outside_lock`]): a slab
//!   growing from the core's reserve reads the run it will take (the list's last) in a critical
//!   section of the reserve's lock of its own, and takes it in a second: two shards growing at once
//!   read the same run and both take it.
//! * `shard_core_reserve_give_back_outside_lock` ([`give_back_writing_list_outside_lock`]): a
//!   shrink giving units back to the reserve copies its list of runs under one hold of the lock and
//!   writes the copy, with the run given back, under another: a run another shard took between the
//!   two is back on the list, held twice.
//! * `shard_core_shrink_step_keeps_cut_slots_listed` (`slab.rs`, at its site): a step of a shrink
//!   forgets the vacant slots it cuts without taking them off the free list, so a schedule between
//!   two steps takes a slot past those written.
//! * `shard_core_bucket_round_kept` (`wheel/flush.rs` and `wheel/mod.rs`, at their sites): the
//!   flush keeps the bucket's round, and an insert offers a bucket only if it holds no round, so
//!   a bucket reused for a later round is never offered again.
//! * `shard_core_level_recreated` (`wheel/buckets.rs`, at its site): an insert that finds entries
//!   in a bucket above level 0 creates its level again, dropping the entries' bucket.

use super::core::{Extra, State};
use super::pool::{Handle, Header, Pool, Shard, ShardState};
use super::reserve::{Reserve, Run};
use super::wheel::{BucketCode, Due, Key, Offer, Offers, Refused};
use crate::deadline::Deadline;
use crate::sync::{Ordering, UnmodelledMutex as Mutex};

/// `shard_epoch_bumped_after_give_back`: `Pool::give_back` with the epoch moved after the header
/// went back to the pool, where a new owner may already have taken it and made handles under the
/// old epoch, which the old owner's handles still carry.
pub(super) fn give_back_then_bump<S: ShardState>(pool: &Pool<S>, header: &'static Header<S>) -> S {
    let mut body = header.lock.lock();
    let old = std::mem::take(&mut body.state);
    header.count.store(0, Ordering::Relaxed);
    drop(body);
    pool.free.lock().push(header);
    header.lock.lock().epoch += 1;
    old
}

/// `shard_count_after_unlock`: `Handle::cancel` counting out by a load and a store after the
/// unlock, where another thread's count (under the lock) may come between the two.
pub(super) fn cancel_counting_after_unlock<S: ShardState>(handle: &Handle<S>) -> Option<S::Payload> {
    let mut shard = handle.lock()?;
    let (slot, generation) = handle.entry();
    let payload = shard.state().take(slot, generation)?;
    drop(shard);
    let count = handle.header.count.load(Ordering::Relaxed);
    handle.header.count.store(count.wrapping_sub(1), Ordering::Relaxed);
    Some(payload)
}

/// `shard_core_claim_counts_out_after_unlock`: `Core::claim` counting its entry out by a load and
/// a store after the unlock, where a schedule's count-in (under the lock) may come between the two
/// and be lost.
pub(super) fn claim_counting_after_unlock<P: Send + 'static, X: Extra<P>>(
    shard: &Shard<State<P, X>>,
    key: Key,
) -> Option<P> {
    let payload = shard.lock().state().claim(key)?;
    let count = shard.header.count.load(Ordering::Relaxed);
    shard.header.count.store(count.wrapping_sub(1), Ordering::Relaxed);
    Some(payload)
}

/// `shard_core_claims_at_collection`: the payloads taken at collection, by shard and key, until
/// the claim asks for them. A field of the core, empty outside that fault.
pub(super) struct Collected<P>(Mutex<Vec<(u16, Key, P)>>);

impl<P> Default for Collected<P> {
    fn default() -> Self {
        Collected(Mutex::new(Vec::new()))
    }
}

impl<P> Collected<P> {
    /// The payload taken at collection for `key` of shard `shard`.
    pub(super) fn take(&self, shard: u16, key: Key) -> Option<P> {
        let mut taken = self.0.lock();
        let at = taken.iter().position(|&(s, k, _)| (s, k) == (shard, key))?;
        Some(taken.swap_remove(at).2)
    }
}

/// `shard_core_claims_at_collection`: one flush of `Core::advance` that takes each due entry's
/// payload out under the flush's lock, counted out, into `collected`.
pub(super) fn flush_claiming<P: Send + 'static, X: Extra<P>>(
    shard: &Shard<State<P, X>>,
    index: u16,
    (bucket, expiration, limit): (BucketCode, u64, u64),
    due: &mut Vec<Due>,
    offers: &mut Vec<Offer>,
    collected: &Collected<P>,
) -> Option<Offer> {
    let before = due.len();
    let mut guard = shard.lock();
    let next = guard.state().wheel.flush(bucket, expiration, limit, due, offers);
    let taken: Vec<_> = due[before..]
        .iter()
        .map(|entry| (index, entry.key, guard.state().claim(entry.key).expect("held")))
        .collect();
    guard.count_out(taken.len());
    drop(guard);
    collected.0.lock().extend(taken);
    next
}

/// `shard_core_offer_before_link`, `shard_core_visit_offered_before_split`: `Core::schedule`
/// making an offer before its insert's critical section, read in one of its own (all the insert
/// will report, or only the visit of the bucket its insert will split), then inserting and
/// dropping what it offered first of what the insert reports (the rest offered after the unlock).
pub(super) fn schedule_offering_first<P: Send + 'static, X: Extra<P>>(
    shard: &Shard<State<P, X>>,
    index: usize,
    (deadline, stamp, payload): (Deadline, u64, P),
    offer: impl Fn(Offers),
) -> Result<Handle<State<P, X>>, Refused<P>> {
    let visit = fault!("shard_core_visit_offered_before_split");
    let first = if visit {
        Offers { round: shard.lock().state().wheel.split_offer_for(deadline.tick()), ..Offers::default() }
    } else {
        offers_before_link(shard, deadline)
    };
    offer(first);
    let mut guard = shard.lock();
    let (key, offers) = guard.state().insert(deadline, stamp, payload)?;
    guard.count_in(1);
    let handle = guard.handle(index as u16, key.slot, key.generation);
    drop(guard);
    if visit {
        offer(Offers { round: offers.round.filter(|round| round.bucket.as_visit().is_none()), ..offers });
    }
    Ok(handle)
}

/// `shard_core_offer_before_link`: the offers an insert to `deadline` in `shard` would make, read
/// in a critical section of their own, for `Core::schedule` to make before its insert's.
pub(super) fn offers_before_link<P: Send + 'static, X: Extra<P>>(
    shard: &Shard<State<P, X>>,
    deadline: Deadline,
) -> Offers {
    shard.lock().state().wheel.offers_for(deadline.tick())
}

/// `shard_core_reset_offers_before_link`: a handle's reset that offers the bucket its move to
/// `deadline` would set, read in a critical section of its own, before the move's.
pub(super) fn reset_offering_first<P: Send + 'static, X: Extra<P>>(
    handle: &super::core::Handle<P, X>,
    deadline: Deadline,
) -> bool {
    let Some(mut shard) = handle.lock() else { return false };
    let (offers, queue) = (shard.state().wheel.offers_for(deadline.tick()), shard.state().queue.clone());
    drop(shard);
    if let Some(queue) = queue {
        super::core::offer_to(&queue, handle.index(), offers);
    }
    let Some(mut shard) = handle.lock() else { return false };
    let (slot, generation) = handle.entry();
    shard.state().reset(Key { slot, generation }, deadline).is_some()
}

/// `shard_core_set_aside_offered_before_link`: the offers putting the held entry `key` back would
/// make, read in a critical section of their own, for `Core::set_aside` to make before its own.
pub(super) fn set_aside_offers_before_link<P: Send + 'static, X: Extra<P>>(
    shard: &Shard<State<P, X>>,
    key: Key,
) -> Offers {
    let mut guard = shard.lock();
    let wheel = &mut guard.state().wheel;
    wheel.deadline(key).map_or_else(Offers::default, |deadline| wheel.offers_for(deadline.tick()))
}

/// `shard_core_closed_read_outside_lock`: the shard's closed flag, read in a critical section of
/// its own, for `Core::schedule` to read before its insert's.
pub(super) fn closed<P: Send + 'static, X: Extra<P>>(shard: &Shard<State<P, X>>) -> bool {
    shard.lock().state().closed
}

/// `shard_core_reserve_give_back_outside_lock`: `Reserve::give_back` copying the list under one
/// hold of the reserve's lock and writing the copy back under another, where a taker may take a run
/// between the two.
pub(super) fn give_back_writing_list_outside_lock(reserve: &Reserve, run: Run) {
    let mut list = reserve.runs.lock().clone();
    list.push(run);
    *reserve.runs.lock() = list;
}

/// `shard_core_reserve_head_read_outside_lock`: `Reserve::take` reading the run it takes under one
/// hold of the reserve's lock and taking it under another, where a second taker may read the same
/// run between the two.
pub(super) fn take_reading_head_outside_lock(reserve: &Reserve, want: usize) -> Option<Run> {
    let head = *reserve.runs.lock().last()?;
    let units = want.min(head.units);
    let run = Run { at: head.at + (head.units - units) * reserve.stride(), units };
    let mut runs = reserve.runs.lock();
    if let Some(last) = runs.last_mut() {
        last.units = head.units - units;
        if last.units == 0 {
            runs.pop();
        }
    }
    Some(run)
}
