//! `BlockFree`: a task-slab class's free blocks (`task_slab.rs`), with a cache on each thread in
//! front of the class's free lists (`thread_cache.rs` has the cache),
//! so that a schedule takes its closure's block and the task's end on that thread gives it back
//! with no lock: through the lists alone, a lock round trip (two atomic read-modify-writes on the
//! stripe's line) per take and per put.
//!
//! What is a block's own:
//!
//! * **Newest first.** A take pops the cache's newest block, whose lines are the likeliest to be
//!   cached, and refills only when the cache is empty: nothing names a block but the closure in
//!   it, so a block needs none of a slot's age.
//! * **One cache per class** on each thread (the thread-local array below, by class).
//! * **Capacity.** At most [`CAPACITY`] blocks of each class (12, 24 and 48 KiB), which keep their
//!   pages from a shrink until the thread's next take: with each block on a page of its own, 0.75,
//!   1.5 and 3 MiB, and a thread that never schedules again keeps them until it exits.
//! * **The slab's drop counts the cached blocks.** A slab dropped while a block is still held leaks
//!   its pages rather than unmap them under the holder, and it tells from the blocks it cannot
//!   account for (`TaskSlab`'s drop). A cached block must not look held, or every timer dropped
//!   while a thread caches its blocks would leak its slab; so the drop counts the lists and the
//!   caches' cells ([`free_count`](CachedFree::free_count)). Every window of that count errs low
//!   (`thread_cache.rs`): it may miss a free block, and the slab leaks, but never counts a held
//!   block as free, which would unmap it under its holder. The one move that can race a timer's
//!   drop, a cache given back as its thread exits or takes another slab's blocks, is counted
//!   exactly; every other move needs the timer, which a dropping slab's timer no longer is.

use std::cell::RefCell;
use std::mem::ManuallyDrop;

use super::free_lists::BATCH;
use super::task_slab::{Block, CLASSES};
use super::thread_cache::{self, Cacheable, CachedFree, ExitGuard, Local, Locals};

/// The most blocks a thread's cache of one class holds before a put gives its oldest batch back:
/// a page of fresh blocks (a batch) and two more.
pub(crate) const CAPACITY: usize = 3 * BATCH;

/// A class's free blocks: its free lists, and the threads' caches in front of them.
pub(crate) type BlockFree = CachedFree<Block>;

std::thread_local! {
    static LOCAL: Locals<Block, { CLASSES.len() }> = const {
        [
            RefCell::new(ManuallyDrop::new(Local::new())),
            RefCell::new(ManuallyDrop::new(Local::new())),
            RefCell::new(ManuallyDrop::new(Local::new())),
        ]
    };
    static EXIT: ExitGuard<Block> = const { ExitGuard::new() };
}

impl Cacheable for Block {
    const OLDEST_FIRST: bool = false;
    const REFILL_AT: usize = 0;
    const CAPACITY: usize = CAPACITY;
    const COUNTED: bool = true;
    const CACHES: usize = CLASSES.len();

    #[inline]
    fn with_local<R>(which: usize, f: impl FnOnce(&mut Local<Block>) -> R) -> Option<R> {
        thread_cache::with(&LOCAL, which, f)
    }

    fn exit_guard() -> bool {
        EXIT.try_with(|_| ()).is_ok()
    }
}

#[cfg(all(test, not(delaywheel_loom)))]
mod tests {
    use std::sync::{mpsc, Arc};

    use super::*;
    use crate::entry::task_slab::{TaskSlab, BLOCKS_PER_PAGE};

    /// Takes `n` blocks of the 64-byte class and gives them back, on this thread.
    fn churn(slab: &TaskSlab, n: usize) {
        let blocks: Vec<Block> = (0..n).map(|_| slab.class(0).alloc().expect("room")).collect();
        blocks.into_iter().for_each(|block| slab.class(0).free(block));
    }

    fn cached(slab: &TaskSlab) -> usize {
        let free = &slab.class(0).free;
        free.free_count() - free.lists.listed().len()
    }

    #[test]
    fn a_block_given_back_is_the_next_taken() {
        let slab = TaskSlab::new();
        let first = slab.class(0).alloc().unwrap();
        slab.class(0).free(first);
        assert_eq!(slab.class(0).alloc(), Some(first), "the newest block of the cache, its lines warm");
        slab.class(0).free(first);
    }

    #[test]
    fn blocks_in_a_live_threads_cache_are_not_counted_as_held() {
        let slab = Arc::new(TaskSlab::new());
        let (cached_them, wait) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let worker = Arc::clone(&slab);
        let thread = std::thread::spawn(move || {
            churn(&worker, 100);
            cached_them.send(()).unwrap();
            released.recv().unwrap();
        });
        wait.recv().unwrap();
        assert!(cached(&slab) > 0, "the worker's frees stay in its cache");
        // What the slab's drop reads to decide between unmapping its pages and leaking them.
        assert_eq!(slab.blocks_out(), 0, "cached blocks are free, not held");
        release.send(()).unwrap();
        thread.join().unwrap();
        assert_eq!(cached(&slab), 0, "the exited thread's cache went back to the lists");
        assert_eq!(slab.class(0).free.lists.listed().len(), slab.pages() * BLOCKS_PER_PAGE);
    }

    #[test]
    fn a_drop_racing_a_cache_given_back_at_thread_exit_counts_each_block_once() {
        // What a dropped slab's count meets when a thread that scheduled exits meanwhile: its
        // cache, given back by its exit guard (`ExitGuard`), is on a list or in its cell.
        for _ in 0..2_000 {
            let slab = Arc::new(TaskSlab::new());
            let worker = Arc::clone(&slab);
            let (done, wait) = mpsc::channel();
            let thread = std::thread::spawn(move || {
                churn(&worker, 10);
                drop(worker);
                done.send(()).unwrap();
            });
            wait.recv().unwrap();
            assert_eq!(slab.blocks_out(), 0);
            thread.join().unwrap();
        }
    }

    #[test]
    fn a_cache_its_threads_exit_closed_sends_takes_and_puts_to_the_lists() {
        // Another thread-local's destructor may drop or schedule a task after the exit guard ran.
        let slab = Arc::new(TaskSlab::new());
        let worker = Arc::clone(&slab);
        std::thread::spawn(move || {
            churn(&worker, 10);
            assert!(cached(&worker) > 0);
            drop(ExitGuard::<Block>::new());
            assert_eq!(cached(&worker), 0, "the guard gave the cache back");
            churn(&worker, 10);
            assert_eq!(cached(&worker), 0, "a closed cache takes no owner again");
        })
        .join()
        .unwrap();
        assert_eq!(slab.blocks_out(), 0);
    }

    #[test]
    fn after_a_shrink_a_thread_gives_its_cache_back_at_its_next_take() {
        let slab = Arc::new(TaskSlab::new());
        let (ask, asked) = mpsc::channel::<()>();
        let (done, finished) = mpsc::channel::<()>();
        let worker = Arc::clone(&slab);
        let thread = std::thread::spawn(move || {
            churn(&worker, 150);
            done.send(()).unwrap();
            asked.recv().unwrap();
            churn(&worker, 1);
            done.send(()).unwrap();
            asked.recv().unwrap();
        });
        finished.recv().unwrap();
        let before = cached(&slab);
        assert!(before > BATCH, "the worker's frees stay in its cache: {before}");
        slab.shrink();
        assert_eq!(cached(&slab), before, "another thread's cache is its own to give back");
        ask.send(()).unwrap();
        finished.recv().unwrap();
        assert!(cached(&slab) <= BATCH, "given back at the take, then one batch taken: {}", cached(&slab));
        assert!(slab.shrink() > 0, "the pages of the blocks given back are empty");
        ask.send(()).unwrap();
        thread.join().unwrap();
    }

    #[test]
    fn a_fired_spike_kept_by_an_owning_thread_leaves_no_buffer_behind() {
        // The driver's return of a fired batch (`Freed::flush`) on a thread whose cache this class
        // owns (a manual timer's thread, or a driver that runs a re-arming task): the cache takes
        // what it has room for, so its buffer never grows to the batch's size.
        let slab = TaskSlab::new();
        let spike: Vec<Block> = (0..100_000).map(|_| slab.class(0).alloc().expect("room")).collect();
        slab.class(0).free.put_all(spike.into_iter());
        assert_eq!(slab.blocks_out(), 0);
        slab.shrink();
        let room = LOCAL.with(|locals| locals[0].borrow().items.capacity());
        assert!(room <= 4 * CAPACITY, "after the spike and a shrink, the cache keeps room for {room} blocks");
    }

    #[test]
    fn a_thread_alternating_between_slabs_keeps_flat_memory() {
        let (a, b) = (TaskSlab::new(), TaskSlab::new());
        for _ in 0..2_000 {
            churn(&a, 10);
            churn(&b, 10);
        }
        // Each switch gives the other slab's cached blocks back to its lists, where its next refill
        // finds them.
        for slab in [&a, &b] {
            assert!(slab.pages() <= 2, "{} pages", slab.pages());
            assert_eq!(slab.blocks_out(), 0);
        }
    }
}
