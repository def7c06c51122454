//! `FreeLists`: per-thread lists of free items (blocks of the task slab)
//! with a shared pool between them; the one place where free storage moves between threads.
//!
//! A freed item goes to the back of the list of the freeing thread's stripe (by `thread_index`,
//! as the counters); a take is from the front of its own stripe's list, oldest first. A list down
//! to [`MIN_AGE`] items first takes a batch ([`BATCH`]) from the pool, or else calls its owner for a
//! page of never-used items, and puts them in front; one that grows past two batches gives its
//! oldest batch back to the pool. So the driver, which frees what schedulers took, hands its items
//! back in batches under one lock of the pool, and a thread's own frees and takes touch only its
//! stripe's lock (uncontended unless two threads share a stripe).
//!
//! ## Their own memory
//!
//! A spike frees as many items as it held, and they end up in the pool (4 bytes a slot index, 8 a
//! block). The pool is a [`MappedVec`] (`mapped_vec.rs`), in a mapping of its own, which a
//! shrink cuts back to its items' pages as it drains it ([`drain_pool`](FreeLists::drain_pool)):
//! that memory goes to the kernel on any thread, where a `Vec` shrunk on a thread other than the
//! main one stays resident in glibc's thread heap. A stripe's list stays within about
//! [`STRIPE_CAPACITY`] items (2 or 4 KB), so it stays an ordinary `VecDeque`.
//!
//! ## A shrink's moves
//!
//! A shrink (`page_reclaim.rs`) moves items the way a take does, a step at a time: it takes up to
//! a step's items off one list under that list's lock alone
//! ([`drain_stripe`](FreeLists::drain_stripe), [`drain_pool`](FreeLists::drain_pool)), holds
//! them with every lock released, and puts back those it keeps on the pool, under the pool's lock
//! ([`put_back`](FreeLists::put_back)). Between two steps the lists serve takes and puts as ever:
//! an item the shrink holds is on no list, so nobody takes it, and an item on a list is one the
//! shrink does not hold. Locks are taken in one order: a stripe's, then the pool's (a spill); every
//! stripe's in stripe order, then the pool's (a count, [`listed_count_with`]).
//!
//! [`listed_count_with`]: FreeLists::listed_count_with
//!
//! The lists only move items. They sit behind the facade's *unmodelled* locks (`sync.rs`): what an
//! item names (a block) is ordered by other means (the shard's lock that published the closure's
//! entry), so the loom models need not explore the lists, and nothing
//! inside them is a loom operation.

use std::collections::VecDeque;

use crate::entry::mapped_vec::MappedVec;
use crate::sync::{thread_index, UnmodelledMutex, UnmodelledMutexGuard};

/// Items moved at once between a stripe's list and the pool.
#[cfg(not(delaywheel_loom))]
pub(crate) const BATCH: usize = 64;
#[cfg(delaywheel_loom)]
pub(crate) const BATCH: usize = 1;

/// A stripe's list is refilled (in front) once it holds no more than this many items, so the items
/// it freed last usually wait behind older ones. 0 under loom: the models reuse at once.
pub(crate) const MIN_AGE: usize = BATCH / 2;

/// The most items a stripe's list holds: a refill puts at most a page (256 slots, 64 blocks) in
/// front of [`MIN_AGE`] items, a put spills once past two batches, and [`put_all`] spills as it
/// goes. So a stripe's buffer grows to 2 or 4 KB, and only the pool holds what a spike freed.
/// (Two threads that share a stripe and refill it at once from new pages may each put a page in
/// front: the next put spills the excess.)
///
/// [`put_all`]: FreeLists::put_all
const STRIPE_CAPACITY: usize = 512;

/// Per-stripe free lists of `T` and their pool (see the module docs).
pub(crate) struct FreeLists<T: Copy> {
    /// Free items given back by the stripes: in a mapping of its own, which a shrink cuts back.
    pool: UnmodelledMutex<MappedVec<T>>,
    /// Per-stripe lists, each on its own cache lines.
    stripes: Box<[Stripe<T>]>,
    mask: usize,
}

#[repr(align(128))]
struct Stripe<T>(UnmodelledMutex<VecDeque<T>>);

/// Puts `items` in front of `out`, in their order: appended in one pass when `out` is empty (a
/// block cache's refill, which waits for its cache to run dry), else one by one from the last.
#[inline]
fn push_to_front<T>(out: &mut VecDeque<T>, items: impl DoubleEndedIterator<Item = T>) {
    if out.is_empty() {
        out.extend(items);
    } else {
        out.reserve(items.size_hint().0);
        items.rev().for_each(|item| out.push_front(item));
    }
}

impl<T: Copy> FreeLists<T> {
    pub(crate) fn new() -> FreeLists<T> {
        let count = crate::sync::stripe_count();
        FreeLists {
            pool: UnmodelledMutex::new(MappedVec::new()),
            stripes: (0..count).map(|_| Stripe(UnmodelledMutex::new(VecDeque::new()))).collect(),
            mask: count - 1,
        }
    }

    /// A free item from this thread's stripe, refilled first if it is down to [`MIN_AGE`]: from the
    /// pool, or else with the never-used items `fresh` returns (none once there are no more), put
    /// in front in their order. `None` if the stripe is still empty then.
    ///
    /// `fresh` runs with no lock of the lists held: it may create a page, which takes locks of its
    /// own (the directory's; that of the places a shrink vacated, modelled under loom). A shrink
    /// counting the lists meanwhile finds the new page's items on no list and leaves it alone.
    #[inline]
    pub(crate) fn take<I: DoubleEndedIterator<Item = T>>(&self, fresh: impl FnOnce() -> I) -> Option<T> {
        let stripe = &self.stripes[thread_index() & self.mask].0;
        let mut free = stripe.lock();
        if free.len() <= MIN_AGE {
            return self.refill(stripe, free, fresh);
        }
        free.pop_front()
    }

    /// Moves up to a batch of free items to the front of `out` (a thread's cache of slot indices or
    /// blocks, `thread_cache.rs`), in their order: from this thread's stripe's list, leaving it
    /// [`MIN_AGE`], else the pool's last batch, else the never-used items `fresh` returns (called
    /// with no lock held, as in [`take`](FreeLists::take)). Nothing moves once all three are empty.
    pub(crate) fn take_batch<I: DoubleEndedIterator<Item = T>>(
        &self,
        out: &mut VecDeque<T>,
        fresh: impl FnOnce() -> I,
    ) {
        {
            let mut free = self.stripes[thread_index() & self.mask].0.lock();
            if free.len() > MIN_AGE {
                let moved = (free.len() - MIN_AGE).min(BATCH);
                free.drain(..moved).rev().for_each(|item| out.push_front(item));
                return;
            }
        }
        if !self.pool_batch_to_front(out) {
            push_to_front(out, fresh());
        }
    }

    /// Puts a batch from the pool in front of a stripe's list, or else never-used items, and takes
    /// the first.
    #[cold]
    fn refill<I: DoubleEndedIterator<Item = T>>(
        &self,
        stripe: &UnmodelledMutex<VecDeque<T>>,
        mut free: UnmodelledMutexGuard<'_, VecDeque<T>>,
        fresh: impl FnOnce() -> I,
    ) -> Option<T> {
        if self.pool_batch_to_front(&mut free) {
            return free.pop_front();
        }
        drop(free);
        let items = fresh();
        let mut free = stripe.lock();
        items.rev().for_each(|item| free.push_front(item));
        free.pop_front()
    }

    /// Moves the pool's last batch to the front of `out`, in its order; `false` if the pool is
    /// empty.
    fn pool_batch_to_front(&self, out: &mut VecDeque<T>) -> bool {
        let mut pool = self.pool.lock();
        let keep = pool.len().saturating_sub(BATCH);
        if keep == pool.len() {
            return false;
        }
        push_to_front(out, pool.as_slice()[keep..].iter().copied());
        pool.truncate(keep);
        true
    }

    /// Returns a free item to this thread's stripe.
    #[inline]
    pub(crate) fn put(&self, item: T) {
        self.put_with(|free| free.push_back(item));
    }

    /// Returns several free items with one lock of this thread's stripe, giving its oldest
    /// batches to the pool as it goes (so that a stripe's list never grows past
    /// [`STRIPE_CAPACITY`], however many come back at once).
    pub(crate) fn put_all(&self, items: impl IntoIterator<Item = T>) {
        self.put_all_then(items, || {});
    }

    /// [`put_all`](FreeLists::put_all), running `then` while the stripe's lock is still held: a
    /// thread's cache counts its indices or blocks out there, so that an audit or a slab's drop
    /// holding every lock ([`listed_with`](FreeLists::listed_with)) sees them on a list or in the
    /// count, never in neither.
    pub(crate) fn put_all_then(&self, items: impl IntoIterator<Item = T>, then: impl FnOnce()) {
        let mut items = items.into_iter();
        self.put_with(|free| {
            // The common case (a fired batch of a few hundred): one `extend`, which reserves once.
            if items.size_hint().1.is_some_and(|most| most <= STRIPE_CAPACITY.saturating_sub(free.len())) {
                free.extend(items);
            } else {
                loop {
                    free.extend(items.by_ref().take(STRIPE_CAPACITY.saturating_sub(free.len())));
                    if free.len() < STRIPE_CAPACITY {
                        break;
                    }
                    self.spill(free);
                }
            }
            then();
        });
    }

    /// Appends to this thread's stripe's list with `append`, then gives its oldest batches to the
    /// pool while it holds more than two.
    #[inline]
    fn put_with(&self, append: impl FnOnce(&mut VecDeque<T>)) {
        let mut free = self.stripes[thread_index() & self.mask].0.lock();
        append(&mut free);
        if free.len() > 2 * BATCH {
            self.spill(&mut free);
        }
    }

    /// Gives a stripe's oldest items back to the pool, a batch at a time, until it holds at most
    /// two batches.
    #[cold]
    fn spill(&self, free: &mut VecDeque<T>) {
        self.spill_above(free, 2 * BATCH);
    }

    /// Gives the oldest items of `free` (a stripe's list, or a thread's cache: `thread_cache.rs`)
    /// to the pool, a batch at a time, until it holds at most `keep`; returns how many moved. The
    /// batches are copied as slices (the deque's front run, then its wrapped part): per item, a
    /// copy rather than an iterator step.
    #[cold]
    pub(crate) fn spill_above(&self, free: &mut VecDeque<T>, keep: usize) -> usize {
        let mut pool = self.pool.lock();
        let mut moved = 0;
        while free.len() > keep.max(BATCH - 1) {
            let (front, back) = free.as_slices();
            let from_front = front.len().min(BATCH);
            pool.extend_from_slice(&front[..from_front]);
            pool.extend_from_slice(&back[..BATCH - from_front]);
            free.drain(..BATCH);
            moved += BATCH;
        }
        moved
    }

    /// How many stripes the lists have: [`drain_stripe`](FreeLists::drain_stripe) takes their
    /// indices.
    pub(crate) fn stripes(&self) -> usize {
        self.stripes.len()
    }

    /// Takes up to `most` items off stripe `stripe`'s list, newest first, handing each to `sink`
    /// under that stripe's lock alone, until `sink` returns `false`: a shrink's step
    /// (`page_reclaim.rs`), which then holds them. How many moved, and how many are left.
    pub(crate) fn drain_stripe(
        &self,
        stripe: usize,
        most: usize,
        mut sink: impl FnMut(T) -> bool,
    ) -> (usize, usize) {
        let mut free = self.stripes[stripe].0.lock();
        let mut moved = 0;
        while moved < most {
            let Some(item) = free.pop_back() else { break };
            moved += 1;
            if !sink(item) {
                break;
            }
        }
        (moved, free.len())
    }

    /// Takes up to `most` items off the pool's end, newest first, handing each to `sink` under the
    /// pool's lock alone, until `sink` returns `false`, and gives the pool's pages past its items
    /// back to the kernel: a shrink's step, which then holds them. How many moved, and how many are
    /// left.
    pub(crate) fn drain_pool(&self, most: usize, mut sink: impl FnMut(T) -> bool) -> (usize, usize) {
        let mut pool = self.pool.lock();
        let len = pool.len();
        let mut moved = 0;
        for &item in pool.as_slice()[len.saturating_sub(most)..].iter().rev() {
            moved += 1;
            if !sink(item) {
                break;
            }
        }
        pool.truncate(len - moved);
        pool.shrink_to_fit();
        (moved, pool.len())
    }

    /// Puts the items of `items` that `keep` keeps back on the pool, under its lock: what a
    /// shrink's step held and gives back to the lists. How many it kept.
    pub(crate) fn put_back(&self, items: &[T], keep: impl Fn(T) -> bool) -> usize {
        let mut pool = self.pool.lock();
        let (mut rest, mut back) = (items, 0);
        while !rest.is_empty() {
            let kept = rest.iter().take_while(|&&item| keep(item)).count();
            pool.extend_from_slice(&rest[..kept]);
            let dropped = rest[kept..].iter().take_while(|&&item| !keep(item)).count();
            rest = &rest[kept + dropped..];
            back += kept;
        }
        pool.shrink_to_fit();
        back
    }

    /// Every listed item, pool first: for tests.
    #[cfg(test)]
    pub(crate) fn listed(&self) -> Vec<T> {
        self.listed_with(|listed| listed)
    }

    /// Calls `f` with every listed item, pool first, while every stripe's lock and the pool's are
    /// held (stripes in order, then the pool), so that nothing moves
    /// between the lists and whatever `f` also reads (the count of a thread cache's indices,
    /// which a cache updates under a stripe's lock: [`put_all_then`](FreeLists::put_all_then)).
    #[cfg(test)]
    pub(crate) fn listed_with<R>(&self, f: impl FnOnce(Vec<T>) -> R) -> R {
        let stripes: Vec<_> = self.stripes.iter().map(|stripe| stripe.0.lock()).collect();
        let pool = self.pool.lock();
        let mut listed: Vec<T> = pool.as_slice().to_vec();
        stripes.iter().for_each(|list| listed.extend(list.iter()));
        f(listed)
    }

    /// [`listed_with`](FreeLists::listed_with) for a count: `f` gets how many items are listed,
    /// under the same locks, and nothing is copied (a timer's drop counts a million blocks).
    pub(crate) fn listed_count_with<R>(&self, f: impl FnOnce(usize) -> R) -> R {
        let stripes: Vec<_> = self.stripes.iter().map(|stripe| stripe.0.lock()).collect();
        let pool = self.pool.lock();
        f(pool.len() + stripes.iter().map(|list| list.len()).sum::<usize>())
    }
}
