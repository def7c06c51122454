//! `SlotFree`: the arena's free slot indices, with a cache on each thread in front of the free
//! lists (`thread_cache.rs` has the cache, shared with the task slab's blocks), so that a schedule
//! takes its slot and a cancel gives it back with no lock and no atomic read-modify-write: a
//! schedule + cancel pair through the lists alone paid four.
//!
//! What is a slot's own:
//!
//! * **Oldest first.** A take pops the cache's oldest index, and refills once the cache is down to
//!   [`MIN_AGE`] indices, so a released slot still waits behind at least [`MIN_AGE`] older indices
//!   before its reuse, as on a stripe's list (a handle learns how its task ended until then:
//!   `entry/`).
//! * **Capacity.** [`CAPACITY`] is a page of never-used indices (which a refill puts in the cache
//!   whole) and two batches: a cache keeps the pages of up to that many indices from a shrink
//!   (4.5 MiB in the worst case of indices spread over as many pages) until the thread's next take.
//! * **The audit** (`arena.rs`) reads the cached count with the lists, under their locks; the
//!   caches publish their sizes only in the builds that audit (debug and test).

use std::cell::RefCell;
use std::mem::ManuallyDrop;

use super::arena::PAGE;
use super::free_lists::{BATCH, MIN_AGE};
use super::thread_cache::{self, Cacheable, CachedFree, ExitGuard, Local, Locals};
use super::EntryId;

/// The most indices a thread's cache holds before a put gives its oldest batch back: a page of
/// never-used indices (which a refill puts in the cache whole) and two batches.
pub(crate) const CAPACITY: usize = PAGE + 2 * BATCH;

/// The arena's free slot indices: the free lists, and the threads' caches in front of them.
pub(crate) type SlotFree = CachedFree<EntryId>;

std::thread_local! {
    static LOCAL: Locals<EntryId, 1> = const { [RefCell::new(ManuallyDrop::new(Local::new()))] };
    static EXIT: ExitGuard<EntryId> = const { ExitGuard::new() };
}

impl Cacheable for EntryId {
    const OLDEST_FIRST: bool = true;
    const REFILL_AT: usize = MIN_AGE;
    const CAPACITY: usize = CAPACITY;
    // Only the audit reads the count, and only debug and test builds audit.
    const COUNTED: bool = cfg!(any(debug_assertions, test));
    const CACHES: usize = 1;

    #[inline]
    fn with_local<R>(_: usize, f: impl FnOnce(&mut Local<EntryId>) -> R) -> Option<R> {
        thread_cache::with(&LOCAL, 0, f)
    }

    fn exit_guard() -> bool {
        EXIT.try_with(|_| ()).is_ok()
    }
}

#[cfg(all(test, not(delaywheel_loom)))]
mod tests {
    use std::sync::Arc;

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
        // cache, given back by its exit guard (`ExitGuard`), is on the lists or in the count.
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
        LOCAL.with(|locals| assert!(locals[0].borrow().items.iter().all(|id| id.index() < PAGE)));
    }

    #[test]
    fn a_fired_spike_kept_by_an_owning_thread_leaves_no_buffer_behind() {
        // As for blocks (`block_cache.rs`): a fired batch returned on a thread that owns the cache.
        let arena = EntryArena::new();
        let spike: Vec<EntryId> = (0..100_000).map(|_| arena.alloc().unwrap()).collect();
        arena.free_all(spike.into_iter());
        arena.free.before_shrink();
        let room = LOCAL.with(|locals| locals[0].borrow().items.capacity());
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
