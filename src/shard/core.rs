//! The assembled shard core: shard headers from the pool whose state is a [`Wheel`] (Kafka's
//! geometry, `wheel/`), the driver's one [`DelayQueue`] of buckets, keyed by (shard, bucket), and
//! the operations a timer runs on them. It knows the crate's deadline words, the caller's stamps
//! and payloads, not clocks or parking: the queue's waits and wake-ups (`delay_queue/`) are the driver's.
//!
//! **Shards.** [`Core::new`] takes its headers from [`Pool::global`], as many as it is given
//! (rounded up to a power of two; a caller passes the cores, `available_parallelism`). A thread
//! schedules into the shard of its thread index (`crate::sync::thread_index`, handed out round
//! robin at a thread's first use) masked to the shard count, so threads that do not share a shard
//! do not share a lock; any thread cancels, resets and reads a deadline through a handle, in the
//! handle's shard, with no `Core` at hand (`handles.rs`, "A handle alone": a reset's offer reaches
//! the queue through the shard's state, which holds it in an `Arc`). A handle carries its shard's
//! index in this core (`pool.rs`, "A handle"): the core's reset, which offers to the queue under
//! that index, a `_with` call, which runs its closure on that shard's extra, and the core's reads
//! of a deadline and a status check it with one compare of the header at that index, from any
//! thread, and refuse a handle of another core. A plain [`Core::cancel`] does not look: it takes
//! the entry from the handle's own shard, counted out there, as the handle's own cancel does.
//! Dropping the core gives every header back (the last first, so the next core to take as many
//! gets them in the same order): each state is swapped out under its lock, its pending payloads
//! dropped after the unlock (`pool.rs`, "Giving back"). Room written ahead for whichever shard
//! grows, and its lock order: `room.rs`, `shard/reserve.rs`.
//!
//! **What each lock orders.** A shard's [`ShardLock`](super::lock::ShardLock) orders everything
//! done to the entries of its shard: a schedule's insert and count-in, a cancel's remove and
//! count-out, a reset's move, the driver's flush of one of its buckets, a claim and its count-out,
//! the drain. So a cancel and the claim that would run the same entry take it exactly once between
//! them (whoever holds the lock first), and a reset either moves a pending entry or finds it gone
//! or held. No lock is held across two shards, none while a payload is dropped or handed back, and
//! the queue's lock is never taken under a shard's: offers are made after the unlock. The count of
//! each shard is written under its lock only, by a load and a store, and [`Core::len`] sums them
//! without locks (`pool.rs`, "`len` without the lock"). The caller's stamp rides in the slot's
//! life word, as its generation, its tie-break and (with how it ended) its status.
//!
//! **The queue of buckets** (Kafka's drive). An insert or a reset that sets a bucket's round (or
//! gives the drained overdue list an entry) reports an offer; [`Core::schedule`] and
//! [`Core::reset`] make it **after** the entry is linked, after the unlock, with
//! [`DelayQueue::offer`], which wakes a waiting driver when it lowers the head (the overdue list's
//! for a passed deadline with `offer_next`: "Rounds"). The driver's
//! [`Core::advance`] starts a round of the queue, pops each bucket due, flushes it under its
//! shard's lock (due entries held, not taken: "Claimed when it runs"), offers the cascade's new
//! rounds from inside the round ([`DelayQueue::offer_within`], so a cascade due now is flushed in
//! the same advance), ends the round, and sorts the batch. A schedule's offer due now is popped in
//! a round under way too: the bucket may also hold entries a cascade of that round filed after the
//! schedule set the bucket's round (and so offered nothing). Why no entry is missed: a bucket
//! holding entries has its round set, and the insert that set it offers it once the entry is
//! linked; a poll before that offer misses the bucket but the offer is then queued for a later poll
//! (this advance's or the next), and a poll after it flushes the bucket with the entry in it. An
//! offer made before the link could be popped and flushed as stale (the round not set yet), and the
//! round the insert then sets would never be offered: the seeded fault `shard_core_offer_before_link`,
//! which the loom model `shard_core::a_schedule_racing_the_poll_is_flushed_by_the_next_advance` catches. A reset's
//! move offers the same way, after the move and the unlock: offered before it, the bucket of the new round
//! could be flushed stale while the entry has not moved yet, and the round the move sets never offered (the
//! seeded fault `shard_core_reset_offers_before_link`, which the loom model
//! `shard_core::a_reset_racing_the_advance_runs_the_entry_once_and_offers_its_new_round` catches). A bucket
//! popped after the time moved past it is handled by the wheel ("A bucket behind the time").
//!
//! **Rounds: bounded work per advance.** [`Core::advance`] takes the caller's **limit**, the last sequence
//! number handed out when it began (`entry/stamps.rs`, "Rounds"), and its flushes hold only the due entries
//! numbered at most that (the wheel's docs, "Rounds"): one above it goes to (or stays on) the overdue list (a
//! flush links it at the tail, a drain keeps it in the run at the head, which a drain of no higher limit
//! skips in O(1)), and the advance offers that list for the next round ([`DelayQueue::offer_next`], set aside
//! by this round's polls, queued again, due, at its end), so the next advance takes it even if the clock did
//! not move. The overdue list has two offers. An entry whose own deadline is passed (a schedule's, a reset's,
//! a set-aside's) offers it, if it was not offered since its last drain, with `offer_next`: a round not yet
//! begun takes it at once, the round under way leaves it to the next. Entries a bucket behind the time moves
//! there (an insert or a reset setting a new round in a bucket whose old round's offer was not popped yet)
//! offer it with [`DelayQueue::offer`] (from a flush's cascade, [`DelayQueue::offer_within`]), if no such
//! offer was made since its last drain, whatever offer for the next round is pending: due by the time
//! already, the round under way takes them (those its limit covers run in it), and their bucket's old offer
//! is stale once the new round is set. So entries numbered after an advance began do not keep it going: a
//! passed deadline's offer waits for the next round, a drain that keeps entries leaves the list offered, and
//! a deadline at or before the wheel's time goes to the overdue list, never into a bucket. A passed deadline
//! scheduled and cancelled (or an entry reset to one and back) between every two polls adds one offer for the
//! next round, and the advance ends. Rounds of one limit (however many the caller runs) walk an entry the
//! limit keeps at most twice (a flush's move, a drain's keep) and pop each shard's overdue list a bounded
//! number of times a round, its kept head skipped: O(entries + rounds x shards). Nothing is lost: every offer
//! is made after the link and the unlock, and an entry on the overdue list has an offer since its last drain,
//! of one kind or the other, that a round pops. A drain that left the flags set would strand a passed
//! deadline linked after it (seeded fault `shard_core_overdue_flag_left_set`, loom model
//! `shard_core::a_passed_deadline_racing_the_drain_is_taken_by_this_advance_or_the_next`), an advance that
//! dropped the next round's offer the kept entries (`shard_core_kept_not_offered`,
//! `shard_core::a_schedule_above_the_limit_is_taken_by_the_next_advance`), and entries moved from behind the
//! time that offered the list only as a passed deadline does would wait one advance longer, while the list's
//! offer for the next round is pending (`shard_core_moved_overdue_not_offered`,
//! `shard_core::entries_moved_from_behind_the_time_are_taken_by_the_round_under_way`).
//!
//! **The batch.** [`Core::advance`] appends each flushed bucket's due entries to one batch, each a
//! [`Due`] (its shard, its key, its order; no payload), and sorts what it appended by
//! [`Due::order`] (the deadline word, then the stamp) through `deadline::sort_batch`. [`Merge`] keeps
//! the sort's buffers and the flushes' entries and offers between advances.
//!
//! **Passed deadlines mid-tick.** A deadline passed within the tick under way, `(f, f + 1]`, is
//! filed at `f` (`deadline.rs`, `P`) and held by the next advance, while the entries of `f + 1`
//! at or before it wait in their buckets (the wheel's docs, "Passed deadlines mid-tick"). A batch
//! whose latest deadline of a tick is such a one ([`Deadline::in_own_tick`] gives it as a word of
//! `f + 1`) asks [`Core::take_due_by`] with that word and the advance's stamp limit: every shard,
//! each under its lock in turn, holds the entries of `f + 1` at or before it whose stamps are
//! within the limit, appended to the batch, which the caller sorts again by the instants
//! ([`Deadline::instant_order`]), equal ones by stamp ([`Merge::sort_by_instants`]), and claims
//! as any batch. A batch without a passed deadline pays nothing here.
//!
//! **Set aside.** [`Core::set_aside`] puts a held entry back, pending, for the next advance, and
//! offers it after the link and the unlock (`mid_tick.rs`, "Set aside").
//!
//! **Claimed when it runs, not when collected.** A flush leaves each due entry in its slot, held
//! by the batch (the wheel's docs, "Held"), pending and counted in `len`. The caller claims each
//! just before it runs it, [`Core::claim`]: the due entry's shard locked, the entry taken out and
//! counted out, its payload returned after the unlock; one lock per entry run. Until then a
//! cancel of it wins ([`Core::cancel`] takes it out, counted out, and the claim finds nothing: a
//! later task of a batch under way never runs once cancelled), a reset of it returns `false` (it
//! is being fired), its deadline reads back, and a drain takes it (the claim then finds
//! nothing). Each held entry is counted out by whichever of claim, cancel and drain takes it,
//! under its shard's lock. An advance that took payloads at collection would let a cancel that
//! completes before the claim begins lose: the seeded fault `shard_core_claims_at_collection`,
//! which the loom model `shard_core::a_cancel_before_the_claim_wins` catches.
//!
//! **A shard's state** is its wheel, the caller's extra (`X`: [`Extra`]), the closed flag and the
//! shard's [`Totals`](state::Totals) (`state.rs`): the `_with` calls ([`Core::schedule_with`],
//! [`Core::cancel_with`], [`Core::reset_with`], [`Core::claim_with`], [`Core::deadline_with`],
//! [`Core::close_with`]) run the caller's closure on the extra under the shard's lock, in the
//! critical section of the entry's move, after the move and its count. A closure that panics
//! leaves the move done and counted, releases the lock, and drops a payload taken out after the
//! unlock (each call's docs say what it leaves). A schedule that finds its shard closed is refused
//! ([`Refusal::Closed`]), so one racing [`Core::close`] is drained by it or refused (`shutdown.rs`).
//!
//! **Status.** A claim, a cancel and a drain each record in the entry's slot how it ended
//! (`Fired`, `Cancelled`, `Abandoned`; `life.rs`), kept until the slot is reused: [`Core::status`]
//! reads it through a handle under the shard's lock (`Pending` until then; `None` once the slot
//! holds another entry, or the core is dropped).

use std::fmt;

use super::faults;
use super::life::STAMP_LIMIT;
use super::pool::{self, Pool, Shard, ShardState};
use super::wheel::{
    self, BucketCode, Fired, Key, Offer, Offers, Refusal, Refused, Wheel, DEFAULT_WHEEL_SIZE,
};
use crate::deadline::Deadline;
use crate::delay_queue::{DelayQueue, Identity};
use crate::sync::Arc;

mod handles;
mod merge;
mod mid_tick;
mod offers;
mod room;
mod shutdown;
mod state;
pub(crate) mod stats;
mod warm;

pub use merge::Merge;
pub(in crate::shard) use offers::offer_to;
use offers::OfferOnDrop;
pub use room::MAX_CAPACITY;
pub use state::{Extra, State};

/// An entry of a [`Core`]: cancels, resets and reads its deadline from any thread; finds nothing
/// once the entry left (fired, cancelled, drained) or the core was dropped.
pub type Handle<P, X = ()> = pool::Handle<State<P, X>>;

/// What the driver's queue holds: a bucket of a shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucketed {
    pub(crate) shard: u16,
    pub(crate) bucket: BucketCode,
}

impl Identity for Bucketed {
    fn identity(&self) -> u64 {
        u64::from(self.shard) << 32 | u64::from(self.bucket.get())
    }
}

/// An entry of an advance's batch (module docs, "Claimed when it runs"): held in its shard until
/// [`Core::claim`] takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Due {
    /// The index of its shard.
    pub(crate) shard: u16,
    pub(crate) entry: wheel::Due,
}

impl Due {
    /// The order of a merged batch: the deadline word, then the stamp.
    #[inline]
    pub fn order(&self) -> (Deadline, u64) {
        self.entry.order()
    }
}

/// The shard core (module docs): payloads `P`, and `X` beside each shard's wheel.
pub struct Core<P: Send + 'static, X: Extra<P> = ()> {
    shards: Box<[Shard<State<P, X>>]>,
    /// The shard count less one (a power of two less one).
    mask: usize,
    /// Shared with every shard's state: a handle offers a reset's bucket with no `Core`.
    queue: Arc<DelayQueue<Bucketed>>,
    /// The payloads an advance took at collection under the seeded fault
    /// `shard_core_claims_at_collection` (`faults.rs`); empty otherwise.
    collected: faults::Collected<P>,
    /// Room written ahead for every shard (`room.rs`), if built with a capacity.
    reserve: Option<crate::sync::Arc<super::reserve::Reserve>>,
    /// Every shard's wheel's buckets a level, fixed at build.
    wheel_size: u64,
}

impl<P: Send + 'static> Core<P> {
    /// A core of `shards` shards (rounded up to a power of two, at least one, at most 2¹⁵),
    /// headers taken from the pool, wheels of the default size, no extra.
    pub fn new(shards: usize) -> Core<P> {
        Core::with_wheel_size(shards, DEFAULT_WHEEL_SIZE)
    }

    /// [`new`](Core::new) with wheels of `wheel_size` buckets a level.
    ///
    /// # Panics
    ///
    /// If `wheel_size` is below 2 or above 2²⁴ (`Wheel::new`).
    pub fn with_wheel_size(shards: usize, wheel_size: u64) -> Core<P> {
        Core::with_extra(shards, wheel_size)
    }
}

impl<P: Send + 'static, X: Extra<P>> Core<P, X> {
    /// [`with_wheel_size`](Core::with_wheel_size) with `X::default()` beside each shard's wheel
    /// (module docs, "A shard's state").
    ///
    /// # Panics
    ///
    /// If `wheel_size` is below 2 or above 2²⁴ (`Wheel::new`).
    pub fn with_extra(shards: usize, wheel_size: u64) -> Core<P, X> {
        let count = shards.clamp(1, 1 << 15).next_power_of_two();
        let pool = Pool::global();
        let shards: Box<[Shard<State<P, X>>]> = (0..count).map(|_| pool.take()).collect();
        let queue = Arc::new(DelayQueue::new());
        for shard in shards.iter() {
            let mut shard = shard.lock();
            if shard.state().wheel.wheel_size() != wheel_size {
                shard.state().wheel = Wheel::new(wheel_size);
            }
            shard.state().queue = Some(Arc::clone(&queue));
        }
        Core { shards, mask: count - 1, queue, collected: Default::default(), reserve: None, wheel_size }
    }

    /// How many shards it has.
    pub fn shards(&self) -> usize {
        self.shards.len()
    }

    /// The driver's queue of buckets: its waits (`wait_due`, `watch`) and wake-ups are the
    /// driver's; [`advance`](Core::advance) polls it.
    pub(crate) fn queue(&self) -> &DelayQueue<Bucketed> {
        &self.queue
    }

    /// The calling thread's shard index.
    #[inline]
    fn own_shard(&self) -> usize {
        crate::sync::thread_index() & self.mask
    }

    /// Files `payload` due at `deadline` with the caller's `stamp` (below 2⁵⁶, unique among the core's
    /// entries: the wheel's docs, "Order") in the calling thread's shard, and offers its bucket to
    /// the queue if the insert set the bucket's round (module docs): its handle.
    ///
    /// The stamp is the slot's generation as well as the batch order's tie-break: a handle names
    /// (slot, stamp), so an entry given a stamp some earlier entry had would answer that entry's
    /// stale handles. Every schedule takes a new stamp, also the re-arm of an elapsed `Sleep` or
    /// `Interval` (only a [`reset`](Core::reset) of a pending entry keeps its stamp); a slab
    /// debug-asserts that a slot's new occupant's stamp is not its last one's.
    ///
    /// # Errors
    ///
    /// The payload back with the reason ([`Refusal`]: `Closed` once [`close`](Core::close) closed
    /// the shard, `Stamp` for a stamp of 2⁵⁶ or more, before the lock), handed back after the
    /// unlock.
    #[inline]
    pub fn schedule(&self, deadline: Deadline, stamp: u64, payload: P) -> Result<Handle<P, X>, Refused<P>> {
        self.schedule_in_with(self.own_shard(), deadline, stamp, payload, |_| {})
    }

    /// [`schedule`](Core::schedule), running `f` on the shard's extra under its lock once the
    /// entry is in and counted (not if it is refused). Should `f` panic, the entry stays in,
    /// pending and counted, the lock is released and its bucket offered (it fires when due);
    /// its handle is not returned.
    ///
    /// # Errors
    ///
    /// As [`schedule`](Core::schedule).
    #[inline]
    pub fn schedule_with(
        &self,
        deadline: Deadline,
        stamp: u64,
        payload: P,
        f: impl FnOnce(&mut X),
    ) -> Result<Handle<P, X>, Refused<P>> {
        self.schedule_in_with(self.own_shard(), deadline, stamp, payload, f)
    }

    /// [`schedule`](Core::schedule) into shard `index`.
    fn schedule_in(
        &self,
        index: usize,
        deadline: Deadline,
        stamp: u64,
        payload: P,
    ) -> Result<Handle<P, X>, Refused<P>> {
        self.schedule_in_with(index, deadline, stamp, payload, |_| {})
    }

    /// [`schedule_with`](Core::schedule_with) into shard `index`.
    #[inline]
    fn schedule_in_with(
        &self,
        index: usize,
        deadline: Deadline,
        stamp: u64,
        payload: P,
        f: impl FnOnce(&mut X),
    ) -> Result<Handle<P, X>, Refused<P>> {
        if stamp >= STAMP_LIMIT {
            return Err(Refused { payload, reason: Refusal::Stamp });
        }
        let shard = &self.shards[index];
        if fault!("shard_core_closed_read_outside_lock") && faults::closed(shard) {
            return Err(Refused { payload, reason: Refusal::Closed });
        }
        if fault!("shard_core_offer_before_link" | "shard_core_visit_offered_before_split") {
            return faults::schedule_offering_first(shard, index, (deadline, stamp, payload), |o| {
                self.offer(index, o)
            });
        }
        // Declared before the guard, so that it offers after the unlock on every path, `f`'s
        // panic included: a round the insert set and never offered would strand the bucket.
        let mut offer = OfferOnDrop { queue: Some(&*self.queue), index, offers: Offers::default() };
        let mut guard = shard.lock();
        let counts = usize::from(X::counts(&payload));
        let (key, offers) = guard.state().insert(deadline, stamp, payload)?;
        offer.offers = offers;
        guard.count_in(counts);
        f(&mut guard.state().extra);
        let handle = guard.handle(index as u16, key.slot, key.generation);
        drop(guard);
        // After the link and the unlock (module docs).
        drop(offer);
        Ok(handle)
    }

    /// The driver: one round of the queue at tick `now` with the sequence-number limit `limit`
    /// (module docs, "Rounds"): every bucket due popped and flushed under its shard's lock, its due
    /// entries numbered at most `limit` held there (module docs, "Claimed when it runs"), those
    /// above it left for the next round, the cascades' offers queued within the round, the held
    /// entries appended to `out` and sorted, what was appended, by [`Due::order`]. `merge` holds the
    /// sort's buffers, the flushes' entries and the offers between calls. Returns the queue's head
    /// before the offers set aside for the next round are queued again (after `now`), if any.
    pub fn advance(&self, now: u64, limit: u64, out: &mut Vec<Due>, merge: &mut Merge) -> Option<u64> {
        self.advance_with(now, limit, out, merge, || {})
    }

    /// [`advance`](Core::advance), running `between` after each flush, before the next poll (the
    /// unit tests and a loom model look or schedule there, as another thread may).
    #[inline]
    pub(crate) fn advance_with(
        &self,
        now: u64,
        limit: u64,
        out: &mut Vec<Due>,
        merge: &mut Merge,
        mut between: impl FnMut(),
    ) -> Option<u64> {
        let start = out.len();
        let round = self.queue.round();
        while let Some((expiration, Bucketed { shard: index, bucket })) = self.queue.poll_due(now, round) {
            let shard = &self.shards[usize::from(index)];
            let next = if fault!("shard_core_claims_at_collection") {
                let (at, due, offers) = ((bucket, expiration, limit), &mut merge.due, &mut merge.offers);
                faults::flush_claiming(shard, index, at, due, offers, &self.collected)
            } else {
                merge.flush(shard, (bucket, expiration, limit))
            };
            out.extend(merge.due.drain(..).map(|entry| Due { shard: index, entry }));
            for offer in merge.offers.drain(..) {
                self.queue.offer_within(offer.expiration, Bucketed { shard: index, bucket: offer.bucket });
            }
            // What the limit left, for the next round (module docs, "Rounds").
            if let Some(offer) = next.filter(|_| !fault!("shard_core_kept_not_offered")) {
                self.queue.offer_next(offer.expiration, Bucketed { shard: index, bucket: offer.bucket });
            }
            between();
        }
        let left = self.queue.end_round();
        merge.sort(&mut out[start..]);
        left
    }

    /// Takes `due`'s entry out of its shard, counted out there, to run it (module docs, "Claimed
    /// when it runs"): its payload, handed back after the unlock, or `None` if a cancel or a
    /// drain took it since the advance.
    #[inline]
    pub fn claim(&self, due: &Due) -> Option<P> {
        self.claim_with(due, |_| {})
    }

    /// [`claim`](Core::claim), running `f` on the shard's extra under its lock once the entry is
    /// taken and counted out (not if a cancel or a drain took it); the payload is handed back
    /// after the unlock. Should `f` panic, the entry stays taken, counted out and `Fired`, and its
    /// payload is dropped after the unlock.
    #[inline]
    pub fn claim_with(&self, due: &Due, f: impl FnOnce(&mut X)) -> Option<P> {
        if fault!("shard_core_claims_at_collection") {
            return self.collected.take(due.shard, due.entry.key);
        }
        let shard = &self.shards[usize::from(due.shard)];
        if fault!("shard_core_claim_counts_out_after_unlock") {
            return faults::claim_counting_after_unlock(shard, due.entry.key);
        }
        self.claim_in(due, |_| true, f)
    }

    /// [`claim`](Core::claim) only if `pick` picks the held entry's payload (looked at under the
    /// lock, before the take): `None` if it does not (the entry stays held, for a claim after) or
    /// the entry is gone.
    pub fn claim_if(&self, due: &Due, pick: impl FnOnce(&P) -> bool) -> Option<P> {
        self.claim_in(due, pick, |_| {})
    }

    /// The claim of `due`'s entry if `pick` picks its payload, `f` run on the extra once it is
    /// taken and counted out.
    #[inline]
    fn claim_in(&self, due: &Due, pick: impl FnOnce(&P) -> bool, f: impl FnOnce(&mut X)) -> Option<P> {
        let shard = &self.shards[usize::from(due.shard)];
        // Bound before the guard, so that a panicking `f` drops it after the unlock.
        let payload;
        let mut guard = shard.lock();
        let state = guard.state();
        if !state.wheel.payload_mut(due.entry.key).is_some_and(|payload| pick(payload)) {
            return None;
        }
        payload = state.claim(due.entry.key);
        if let Some(taken) = &payload {
            guard.count_out(usize::from(X::counts(taken)));
            f(&mut guard.state().extra);
        }
        drop(guard);
        payload
    }

    /// The earliest expiration queued, `None` if the queue is empty: never after the earliest
    /// entry that is pending and not held by a batch is due (a stale offer may make it earlier);
    /// held entries wait for their claims, not for the queue.
    pub fn next_tick(&self) -> Option<u64> {
        self.queue.head()
    }

    /// The entries pending, summed over the shards' counts without locks (`pool.rs`, "`len`
    /// without the lock"): every entry pending throughout the call is counted, and the sum is
    /// exact when no schedule, cancel or advance is in flight.
    pub fn len(&self) -> usize {
        self.shards.iter().fold(0usize, |sum, shard| sum.wrapping_add(shard.len()))
    }

    /// Whether [`len`](Core::len) is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<P: Send + 'static, X: Extra<P>> fmt::Debug for Core<P, X> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Core")
            .field("shards", &self.shards.len())
            .field("len", &self.len())
            .field("queue", &self.queue)
            .finish()
    }
}

#[cfg(all(test, not(delaywheel_loom)))]
mod handle_tests;
#[cfg(all(test, not(delaywheel_loom)))]
mod payload_tests;
#[cfg(all(test, not(delaywheel_loom)))]
mod round_tests;
#[cfg(all(test, not(delaywheel_loom)))]
mod tests;
#[cfg(all(test, not(delaywheel_loom)))]
mod threads;
#[cfg(all(test, not(delaywheel_loom)))]
mod with_tests;
