//! `SlotFree`: the arena's free slot indices, with a cache on each thread in front of the free
//! lists, so that a schedule takes its slot and a cancel gives it back with no lock and no atomic
//! read-modify-write.
//!
//! The free lists (`free_lists.rs`) are per-stripe lists behind a lock each: a take and a put are
//! a lock round trip, two atomic read-modify-writes on the stripe's line, about 18 cycles each
//! when uncontended and far more when two threads share a stripe. A schedule takes a slot and a
//! cancel gives one back, so a schedule + cancel pair paid four of them. So each thread keeps a
//! **cache**, a thread-local FIFO of free indices of one arena (its **owner**, the arena the
//! thread last allocated from):
//!
//! * a **take** pops the cache's oldest index; a cache down to [`MIN_AGE`] indices first moves a
//!   batch from the free lists to its front ([`FreeLists::take_batch`]: from the thread's stripe,
//!   else the pool, else a page of never-used indices), one lock per batch;
//! * a **put** on the owning thread appends to the cache; a cache past [`CAPACITY`] gives its
//!   oldest batch to the free lists' pool, one lock per batch. The driver's return of a fired
//!   batch, on a thread that owns the cache (a manual timer's, or one running a task that re-arms),
//!   fills it up to its capacity and lists the rest in one lock, so the cache's buffer never
//!   outgrows it. A put of another arena's index
//!   (a thread cancelling on two timers), or on a thread that never allocated, goes to the lists.
//!
//! A released slot so still waits behind at least [`MIN_AGE`] older indices before its reuse, as on
//! a stripe's list (a handle learns how its task ended until then: `entry/`).
//!
//! The task slab's blocks (closures of 17 to 256 bytes) have caches of the same shape, one per
//! class (`block_cache.rs`), with what a slab's drop needs besides: an exact count of the blocks
//! they hold.
//!
//! **Lifetimes.** A cache names its owner by a `Weak`: it never keeps an arena alive, and its
//! pointer (which the `Weak` keeps from being reused) tells whether an index belongs to the arena
//! at hand. A thread that allocates from another arena first gives its cached indices back to the
//! old owner, if it is still alive; a thread that exits does the same (the thread-local's
//! destructor). An arena dropped meanwhile just leaves the numbers to be forgotten.
//!
//! **What the cache holds is on no list.** A shrink (`shrink.rs`) gives back only the pages whose
//! slots are all on the lists, so a page with a cached index stays. A shrink therefore first
//! empties the calling thread's cache, and counts itself (`shrinks`): a thread whose cache is
//! older than the last shrink gives it back at its next take, so the next shrink finds those
//! indices on the lists. Until then a cache keeps the pages of its indices, at most [`CAPACITY`]
//! of them (4.5 MiB) in the worst case of indices spread over as many pages, and a thread that
//! never schedules again keeps its cache's pages until it exits. The audit (`arena.rs`) counts
//! cached indices (an exact count kept only in debug and test builds, where an atomic per take and
//! put is affordable), in one reading with the lists.
//!
//! **Loom.** The models bypass the caches (each model thread would otherwise share the one OS
//! thread's cache): their takes and puts go to the free lists, whose hand-overs of indices are not
//! what the models explore (`free_lists.rs`).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use super::arena::PAGE;
use super::free_lists::{FreeLists, BATCH, MIN_AGE};
use super::EntryId;

/// The most indices a thread's cache holds before a put gives its oldest batch back: a page of
/// never-used indices (which a refill puts in the cache whole) and two batches.
pub(crate) const CAPACITY: usize = PAGE + 2 * BATCH;

/// The arena's free slot indices: the free lists, and the threads' caches in front of them (see
/// the module docs).
pub(crate) struct SlotFree {
    pub(super) lists: FreeLists<EntryId>,
    /// Shrinks begun: a cache whose count is older gives its indices back at its next take.
    shrinks: AtomicU64,
    /// Indices held in threads' caches, for the audit.
    #[cfg(any(debug_assertions, test))]
    cached: std::sync::atomic::AtomicUsize,
}

/// A thread's cache: the free indices it holds of its owner arena, oldest first.
struct Local {
    owner: Weak<SlotFree>,
    items: VecDeque<EntryId>,
    /// The owner's shrink count when this cache was last emptied or taken over.
    shrinks: u64,
}

std::thread_local! {
    static LOCAL: RefCell<Local> =
        const { RefCell::new(Local { owner: Weak::new(), items: VecDeque::new(), shrinks: 0 }) };
}

/// Runs `f` on this thread's cache; `None` under loom (see the module docs), while the thread's
/// locals are being destroyed, or if the cache is in use further up this thread's stack.
#[inline]
fn with_cache<R>(f: impl FnOnce(&mut Local) -> R) -> Option<R> {
    if cfg!(delaywheel_loom) {
        return None;
    }
    LOCAL.try_with(|local| local.try_borrow_mut().ok().map(|mut local| f(&mut local))).ok().flatten()
}

impl Local {
    fn owned_by(&self, free: &Arc<SlotFree>) -> bool {
        std::ptr::eq(self.owner.as_ptr(), Arc::as_ptr(free))
    }

    /// Gives every cached index back to the owner, if it is still alive, and forgets the owner.
    fn give_back(&mut self) {
        if let Some(owner) = self.owner.upgrade() {
            let given = self.items.len();
            // Counted out under the stripe's lock that lists them (`FreeLists::put_all_then`), so
            // that an audit sees each on a list or in the count.
            owner.lists.put_all_then(self.items.drain(..), || owner.uncount(given));
        }
        self.items.clear();
        self.owner = Weak::new();
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        self.give_back();
    }
}

impl SlotFree {
    pub(crate) fn new() -> Arc<SlotFree> {
        Arc::new(SlotFree {
            lists: FreeLists::new(),
            shrinks: AtomicU64::new(0),
            #[cfg(any(debug_assertions, test))]
            cached: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// A free index: the oldest of this thread's cache, refilled first if it is down to
    /// [`MIN_AGE`] (`fresh`, called with no lock held, gives never-used indices when the lists
    /// have none). `None` once neither the lists nor `fresh` have one.
    #[inline]
    pub(crate) fn take<I: DoubleEndedIterator<Item = EntryId>>(
        self: &Arc<Self>,
        fresh: impl FnOnce() -> I,
    ) -> Option<EntryId> {
        let mut fresh = Some(fresh);
        if let Some(taken) = with_cache(|local| self.take_cached(local, &mut fresh)) {
            return taken;
        }
        self.lists.take(fresh.take().expect("a take calls `fresh` at most once"))
    }

    #[inline]
    fn take_cached<I: DoubleEndedIterator<Item = EntryId>>(
        self: &Arc<Self>,
        local: &mut Local,
        fresh: &mut Option<impl FnOnce() -> I>,
    ) -> Option<EntryId> {
        let shrinks = self.shrinks.load(Ordering::Relaxed);
        if !local.owned_by(self) || local.items.len() <= MIN_AGE || local.shrinks != shrinks {
            self.refill(local, shrinks, fresh.take().expect("a take calls `fresh` at most once"));
        }
        let taken = local.items.pop_front()?;
        self.uncount(1);
        Some(taken)
    }

    /// Makes this arena the cache's owner (giving the old owner's indices back), or after a
    /// shrink gives this arena's back (their pages may be empty but for them), and moves a batch
    /// from the lists to the cache's front.
    #[cold]
    fn refill<I: DoubleEndedIterator<Item = EntryId>>(
        self: &Arc<Self>,
        local: &mut Local,
        shrinks: u64,
        fresh: impl FnOnce() -> I,
    ) {
        if !local.owned_by(self) || local.shrinks != shrinks {
            local.give_back();
            local.owner = Arc::downgrade(self);
            local.shrinks = shrinks;
        }
        let before = local.items.len();
        self.lists.take_batch(&mut local.items, fresh);
        self.count(local.items.len() - before);
    }

    /// Returns a free index: to this thread's cache if this arena owns it, else to the lists.
    #[inline]
    pub(crate) fn put(self: &Arc<Self>, id: EntryId) {
        if !self.keep(id) {
            self.lists.put(id);
        }
    }

    /// Returns several free indices (a fired batch's): to this thread's cache if this arena owns
    /// it, as many as it has room for below [`CAPACITY`], the rest to the lists in one lock (so
    /// that the cache's buffer never grows past its capacity, whatever the batch).
    pub(crate) fn put_all(self: &Arc<Self>, ids: impl Iterator<Item = EntryId>) {
        let mut ids = ids.peekable();
        with_cache(|local| {
            if local.owned_by(self) {
                let before = local.items.len();
                local.items.extend(ids.by_ref().take(CAPACITY.saturating_sub(before)));
                self.count(local.items.len() - before);
            }
        });
        if ids.peek().is_some() {
            self.lists.put_all(ids);
        }
    }

    /// Appends `id` to this thread's cache if this arena owns it, giving its oldest batch to the
    /// pool past [`CAPACITY`]; `false` otherwise.
    #[inline]
    fn keep(self: &Arc<Self>, id: EntryId) -> bool {
        with_cache(|local| {
            if !local.owned_by(self) {
                return false;
            }
            local.items.push_back(id);
            self.count(1);
            if local.items.len() > CAPACITY {
                self.spill(local);
            }
            true
        }) == Some(true)
    }

    /// Gives a full cache's oldest batches to the pool, until it is within [`CAPACITY`].
    #[cold]
    fn spill(&self, local: &mut Local) {
        let moved = self.lists.spill_above(&mut local.items, CAPACITY);
        self.uncount(moved);
    }

    /// Before a shrink, which only sees what is on the lists: gives this thread's cached indices
    /// of this arena back, and has every other thread give its own back at its next take.
    pub(crate) fn before_shrink(self: &Arc<Self>) {
        self.shrinks.fetch_add(1, Ordering::Relaxed);
        with_cache(|local| {
            if local.owned_by(self) {
                local.give_back();
            }
        });
    }

    /// Indices in threads' caches (for the audit).
    #[cfg(any(debug_assertions, test))]
    pub(crate) fn cached(&self) -> usize {
        self.cached.load(std::sync::atomic::Ordering::Relaxed)
    }

    #[inline]
    fn count(&self, _added: usize) {
        #[cfg(any(debug_assertions, test))]
        self.cached.fetch_add(_added, std::sync::atomic::Ordering::Relaxed);
    }

    #[inline]
    fn uncount(&self, _removed: usize) {
        #[cfg(any(debug_assertions, test))]
        self.cached.fetch_sub(_removed, std::sync::atomic::Ordering::Relaxed);
    }
}

#[cfg(all(test, not(delaywheel_loom)))]
mod tests {
    use super::*;
    use crate::entry::EntryArena;

    #[test]
    fn a_thread_that_exits_gives_its_cache_back() {
        let arena = Arc::new(EntryArena::new());
        let worker = Arc::clone(&arena);
        std::thread::spawn(move || {
            let ids: Vec<EntryId> = (0..10).map(|_| worker.alloc().unwrap()).collect();
            ids.into_iter().for_each(|id| worker.free(id));
            assert!(worker.free.cached() > 0, "the thread's frees stay in its cache");
        })
        .join()
        .unwrap();
        assert_eq!(arena.free.cached(), 0, "the exited thread's cache went back to the lists");
        assert_eq!(arena.free.lists.listed().len() as u64, arena.high_water());
    }

    #[test]
    fn after_a_shrink_a_thread_gives_its_cache_back_at_its_next_take() {
        let arena = Arc::new(EntryArena::new());
        let (ask, asked) = std::sync::mpsc::channel::<()>();
        let (done, finished) = std::sync::mpsc::channel::<usize>();
        let worker = Arc::clone(&arena);
        let thread = std::thread::spawn(move || {
            let ids: Vec<EntryId> = (0..300).map(|_| worker.alloc().unwrap()).collect();
            ids.into_iter().for_each(|id| worker.free(id));
            done.send(worker.free.cached()).unwrap();
            asked.recv().unwrap();
            let id = worker.alloc().unwrap();
            done.send(worker.free.cached()).unwrap();
            worker.free(id);
            asked.recv().unwrap();
        });
        let before = finished.recv().unwrap();
        assert!(before > CAPACITY / 2, "the worker's frees stay in its cache: {before}");
        arena.free.before_shrink();
        assert_eq!(arena.free.cached(), before, "another thread's cache is its own to give back");
        ask.send(()).unwrap();
        let after = finished.recv().unwrap();
        assert!(after < BATCH, "given back at the take, then one batch taken: {after} cached");
        ask.send(()).unwrap();
        thread.join().unwrap();
    }

    #[test]
    fn an_audit_racing_a_cache_given_back_at_thread_exit_sees_each_index_once() {
        // What a dropped arena's audit meets when a thread that scheduled exits meanwhile: its
        // cache, given back by the thread-local's destructor, is on the lists or in the count.
        for _ in 0..2_000 {
            let arena = Arc::new(EntryArena::unaudited());
            let worker = Arc::clone(&arena);
            let (freed, wait) = std::sync::mpsc::channel();
            let thread = std::thread::spawn(move || {
                let ids: Vec<EntryId> = (0..10).map(|_| worker.alloc().unwrap()).collect();
                ids.into_iter().for_each(|id| worker.free(id));
                drop(worker);
                freed.send(()).unwrap();
            });
            wait.recv().unwrap();
            arena.audit();
            thread.join().unwrap();
        }
    }

    #[test]
    fn a_thread_alternating_between_arenas_keeps_flat_memory() {
        let (a, b) = (EntryArena::new(), EntryArena::new());
        for _ in 0..2_000 {
            for arena in [&a, &b] {
                let ids: Vec<EntryId> = (0..10).map(|_| arena.alloc().unwrap()).collect();
                ids.into_iter().for_each(|id| arena.free(id));
            }
        }
        // Each switch gives the other arena's cached indices back to its lists, where its next
        // refill finds them: no arena grows past a page and its lists' slack.
        for arena in [&a, &b] {
            assert!(arena.high_water() <= 2 * PAGE as u64, "high water {}", arena.high_water());
        }
    }

    #[test]
    fn a_dropped_arena_leaves_nothing_in_the_cache() {
        let arena = EntryArena::new();
        let id = arena.alloc().unwrap();
        arena.free(id);
        drop(arena);
        // The cache's owner is gone: the next arena takes ownership and starts afresh.
        let next = EntryArena::new();
        let id = next.alloc().unwrap();
        assert!(id.index() < PAGE);
        next.free(id);
        LOCAL.with(|local| assert!(local.borrow().items.iter().all(|id| id.index() < PAGE)));
    }

    #[test]
    fn a_fired_spike_kept_by_an_owning_thread_leaves_no_buffer_behind() {
        // As for blocks (`block_cache.rs`): a fired batch returned on a thread that owns the cache.
        let arena = EntryArena::new();
        let spike: Vec<EntryId> = (0..100_000).map(|_| arena.alloc().unwrap()).collect();
        arena.free_all(spike.into_iter());
        arena.free.before_shrink();
        let room = LOCAL.with(|local| local.borrow().items.capacity());
        assert!(
            room <= 4 * CAPACITY,
            "after the spike and a shrink, the cache keeps room for {room} indices"
        );
    }

    #[test]
    fn a_released_slot_waits_behind_older_ones_in_the_cache() {
        let arena = EntryArena::new();
        let first = arena.alloc().unwrap();
        arena.free(first);
        // Schedule and cancel, as a timeout that is cancelled does, until the slot comes back.
        let mut others = 0;
        loop {
            let id = arena.alloc().unwrap();
            arena.free(id);
            if id == first {
                break;
            }
            others += 1;
            assert!(others < 10 * PAGE, "never reused");
        }
        assert!(others >= MIN_AGE, "reused after only {others} other allocations");
    }
}
