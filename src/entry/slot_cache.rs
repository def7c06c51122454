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
//! * a **put** on the owning thread appends to the cache (so does the driver's return of a fired
//!   batch, on a thread that schedules too: a task that re-arms); a cache past [`CAPACITY`] gives
//!   its oldest batch to the free lists' pool, one lock per batch. A put of another arena's index (a thread
//!   cancelling on two timers), or on a thread that never allocated, goes to the free lists.
//!
//! A released slot so still waits behind at least [`MIN_AGE`] older indices before its reuse, as on
//! a stripe's list (a handle learns how its task ended until then: `entry/`).
//!
//! **Lifetimes.** A cache names its owner by a `Weak`: it never keeps an arena alive, and its
//! pointer (which the `Weak` keeps from being reused) tells whether an index belongs to the arena
//! at hand. A thread that allocates from another arena first gives its cached indices back to the
//! old owner, if it is still alive; a thread that exits does the same (the thread-local's
//! destructor). An arena dropped meanwhile just leaves the numbers to be forgotten.
//!
//! **What the cache holds is on no list.** A shrink (`shrink.rs`) gives back only the pages whose
//! slots are all on the lists, so a page with a cached index stays: the shrink first empties the
//! calling thread's cache, and every other thread's holds at most [`CAPACITY`] indices. The audit
//! (`arena.rs`) counts cached indices (an exact count kept only in debug and test builds, where an
//! atomic per take and put is affordable).
//!
//! **Loom.** The models bypass the caches (each model thread would otherwise share the one OS
//! thread's cache): their takes and puts go to the free lists, whose hand-overs of indices are not
//! what the models explore (`free_lists.rs`).

use std::cell::RefCell;
use std::collections::VecDeque;
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
    /// Indices held in threads' caches, for the audit.
    #[cfg(any(debug_assertions, test))]
    cached: std::sync::atomic::AtomicUsize,
}

/// A thread's cache: the free indices it holds of its owner arena, oldest first.
struct Local {
    owner: Weak<SlotFree>,
    items: VecDeque<EntryId>,
}

std::thread_local! {
    static LOCAL: RefCell<Local> = const { RefCell::new(Local { owner: Weak::new(), items: VecDeque::new() }) };
}

impl Local {
    fn owned_by(&self, free: &Arc<SlotFree>) -> bool {
        std::ptr::eq(self.owner.as_ptr(), Arc::as_ptr(free))
    }

    /// Gives every cached index back to the owner, if it is still alive, and forgets the owner.
    fn give_back(&mut self) {
        if let Some(owner) = self.owner.upgrade() {
            owner.uncount(self.items.len());
            owner.lists.put_all(self.items.drain(..));
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
        if cfg!(not(delaywheel_loom)) {
            let cached = LOCAL.try_with(|local| {
                let mut local = local.try_borrow_mut().ok()?;
                Some(self.take_cached(&mut local, &mut fresh))
            });
            if let Ok(Some(taken)) = cached {
                return taken;
            }
        }
        self.lists.take(fresh.take().expect("a take calls `fresh` at most once"))
    }

    #[inline]
    fn take_cached<I: DoubleEndedIterator<Item = EntryId>>(
        self: &Arc<Self>,
        local: &mut Local,
        fresh: &mut Option<impl FnOnce() -> I>,
    ) -> Option<EntryId> {
        if !local.owned_by(self) || local.items.len() <= MIN_AGE {
            self.refill(local, fresh.take().expect("a take calls `fresh` at most once"));
        }
        let taken = local.items.pop_front()?;
        self.uncount(1);
        Some(taken)
    }

    /// Makes this arena the cache's owner (giving the old owner's indices back) and moves a batch
    /// from the lists to the cache's front.
    #[cold]
    fn refill<I: DoubleEndedIterator<Item = EntryId>>(
        self: &Arc<Self>,
        local: &mut Local,
        fresh: impl FnOnce() -> I,
    ) {
        if !local.owned_by(self) {
            local.give_back();
            local.owner = Arc::downgrade(self);
        }
        let before = local.items.len();
        self.lists.take_batch(&mut local.items, fresh);
        self.count(local.items.len() - before);
    }

    /// Returns a free index: to this thread's cache if this arena owns it, else to the lists.
    #[inline]
    pub(crate) fn put(self: &Arc<Self>, id: EntryId) {
        if cfg!(not(delaywheel_loom)) {
            let cached = LOCAL.try_with(|local| {
                let Ok(mut local) = local.try_borrow_mut() else { return false };
                if !local.owned_by(self) {
                    return false;
                }
                local.items.push_back(id);
                self.count(1);
                if local.items.len() > CAPACITY {
                    self.spill(&mut local);
                }
                true
            });
            if cached == Ok(true) {
                return;
            }
        }
        self.lists.put(id);
    }

    /// Returns several free indices (a fired batch's): to this thread's cache if this arena owns
    /// it, giving its oldest batches to the lists as it overflows, else to the lists in one lock.
    pub(crate) fn put_all(self: &Arc<Self>, ids: impl Iterator<Item = EntryId>) {
        let mut ids = Some(ids);
        if cfg!(not(delaywheel_loom)) {
            let _ = LOCAL.try_with(|local| {
                let Ok(mut local) = local.try_borrow_mut() else { return };
                if local.owned_by(self) {
                    let before = local.items.len();
                    local.items.extend(ids.take().expect("taken once"));
                    self.count(local.items.len() - before);
                    if local.items.len() > CAPACITY {
                        self.spill(&mut local);
                    }
                }
            });
        }
        if let Some(ids) = ids {
            self.lists.put_all(ids);
        }
    }

    /// Gives a full cache's oldest batches to the pool, until it is within [`CAPACITY`].
    #[cold]
    fn spill(&self, local: &mut Local) {
        let moved = self.lists.spill_above(&mut local.items, CAPACITY);
        self.uncount(moved);
    }

    /// Gives this thread's cached indices of this arena back to the lists (a shrink, which only
    /// sees what is on them).
    pub(crate) fn give_back_local(self: &Arc<Self>) {
        let _ = LOCAL.try_with(|local| {
            if let Ok(mut local) = local.try_borrow_mut() {
                if local.owned_by(self) {
                    local.give_back();
                }
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
