//! `BlockFree`: a task-slab class's free blocks (`task_slab.rs`), with a cache on each thread in
//! front of the class's free lists, so that a schedule takes its closure's block and the task's
//! end on that thread gives it back with no lock.
//!
//! Each class's lists are per-stripe lists behind a lock each (`free_lists.rs`): a lock round trip
//! per block, 64 of the 201 instructions a 64-byte task costs more than an 8-byte one. So each
//! thread keeps, per class, a **cache** of free blocks of one slab's class (its **owner**, the class
//! it last took a block from), as it does for slots (`slot_cache.rs`, whose shape this follows):
//!
//! * a **take** pops the cache's newest block (its lines are the likeliest to be cached); an empty
//!   cache first moves a batch from the lists ([`FreeLists::take_batch`]), one lock per batch;
//! * a **put** on the owning thread appends to the cache, and the driver's return of a fired
//!   batch does too on a thread that schedules (a task that re-arms); a cache past [`CAPACITY`]
//!   gives its oldest batches to the pool. A put of another slab's block, or on a thread that
//!   never took one, goes to the lists.
//!
//! A block needs none of a slot's age: nothing names a block but the closure in it.
//!
//! **The slab's drop counts the cached blocks exactly.** A slab dropped while a block is still
//! held leaks its pages rather than unmap them under the holder, and it tells from the blocks it
//! cannot account for (`TaskSlab`'s drop): a cached block must not look held, or every timer
//! dropped while a thread caches its blocks would leak its slab. So each thread publishes how many
//! blocks its cache holds in a **cell** of its own (`Arc<AtomicUsize>`: a plain store after each
//! take and put, no read-modify-write), registered with the class when the thread takes it as
//! owner. [`free_count`](BlockFree::free_count) reads every list and every cell with every list's
//! lock held:
//!
//! * a cell changes on the fast paths only while its thread holds a block or the timer (a take,
//!   the put of a task's block), so never while the slab drops: the drop, after the timer's last
//!   reference went, reads each such cell's last value;
//! * the one move that can race the drop is a cache given back (its thread exits, or takes blocks
//!   of another slab): its blocks go to a stripe's list and its cell to zero under that stripe's
//!   lock ([`FreeLists::put_all_then`]), so the count sees them on a list or in the cell, never in
//!   neither nor in both;
//! * a cache whose owner is gone (the class dropped) forgets its blocks and leaves its cell alone.
//!
//! **Shrinks** see only the lists, as for slots: a shrink empties the calling thread's cache and
//! counts itself (`shrinks`); a thread whose cache is older than the last shrink gives it back at
//! its next take. **Loom** models bypass the caches (`with_cache`), as for slots.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use super::free_lists::{FreeLists, BATCH};
use super::task_slab::{Block, CLASSES};
use crate::sync::UnmodelledMutex;

/// The most blocks a thread's cache of one class holds before a put gives its oldest batches back:
/// a page of fresh blocks (a batch) and two more.
pub(crate) const CAPACITY: usize = 3 * BATCH;

/// A class's free blocks: its free lists, and the threads' caches in front of them (see the module
/// docs).
pub(crate) struct BlockFree {
    pub(super) lists: FreeLists<Block>,
    /// The class's index in [`CLASSES`]: which of a thread's caches is this class's.
    class: usize,
    /// Shrinks begun: a cache whose count is older gives its blocks back at its next take.
    shrinks: AtomicU64,
    /// The cell of every thread whose cache took this class as owner (cells no thread holds any
    /// more are dropped as new ones come).
    cells: UnmodelledMutex<Vec<Arc<AtomicUsize>>>,
}

/// A thread's cache of one class's blocks.
struct Local {
    owner: Weak<BlockFree>,
    items: VecDeque<Block>,
    /// How many blocks `items` holds, for the owner's drop (see the module docs).
    cell: Option<Arc<AtomicUsize>>,
    /// The owner's shrink count when this cache was last emptied or taken over.
    shrinks: u64,
}

impl Local {
    // Only the thread-local's array initializer uses it (`[EMPTY; N]` needs a constant), each
    // use a fresh cell.
    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY: RefCell<Local> =
        RefCell::new(Local { owner: Weak::new(), items: VecDeque::new(), cell: None, shrinks: 0 });

    fn owned_by(&self, free: &Arc<BlockFree>) -> bool {
        std::ptr::eq(self.owner.as_ptr(), Arc::as_ptr(free))
    }

    /// Publishes how many blocks the cache holds.
    #[inline]
    fn publish(&self) {
        if let Some(cell) = &self.cell {
            cell.store(self.items.len(), Ordering::Relaxed);
        }
    }

    /// Gives every cached block back to the owner, if it is still alive, and forgets the owner.
    fn give_back(&mut self) {
        if let Some(owner) = self.owner.upgrade() {
            let cell = self.cell.take();
            // The cell goes to zero under the stripe's lock that lists the blocks (see the module
            // docs), so that the drop's count sees each block once.
            owner.lists.put_all_then(self.items.drain(..), || {
                if let Some(cell) = &cell {
                    cell.store(0, Ordering::Relaxed);
                }
            });
        }
        self.items.clear();
        self.cell = None;
        self.owner = Weak::new();
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        self.give_back();
    }
}

std::thread_local! {
    static LOCAL: [RefCell<Local>; CLASSES.len()] = const { [Local::EMPTY; CLASSES.len()] };
}

/// Runs `f` on this thread's cache of class `class`; `None` under loom, while the thread's locals
/// are being destroyed, or if the cache is in use further up this thread's stack.
#[inline]
fn with_cache<R>(class: usize, f: impl FnOnce(&mut Local) -> R) -> Option<R> {
    if cfg!(delaywheel_loom) {
        return None;
    }
    LOCAL.try_with(|locals| locals[class].try_borrow_mut().ok().map(|mut local| f(&mut local))).ok().flatten()
}

impl BlockFree {
    pub(crate) fn new(class: usize) -> Arc<BlockFree> {
        Arc::new(BlockFree {
            lists: FreeLists::new(),
            class,
            shrinks: AtomicU64::new(0),
            cells: UnmodelledMutex::new(Vec::new()),
        })
    }

    /// A free block: the newest of this thread's cache, refilled first if it is empty (`fresh`,
    /// called with no lock held, gives a new page's blocks when the lists have none). `None` once
    /// neither the lists nor `fresh` have one.
    #[inline]
    pub(crate) fn take<I: DoubleEndedIterator<Item = Block>>(
        self: &Arc<Self>,
        fresh: impl FnOnce() -> I,
    ) -> Option<Block> {
        let mut fresh = Some(fresh);
        if let Some(taken) = with_cache(self.class, |local| self.take_cached(local, &mut fresh)) {
            return taken;
        }
        self.lists.take(fresh.take().expect("a take calls `fresh` at most once"))
    }

    #[inline]
    fn take_cached<I: DoubleEndedIterator<Item = Block>>(
        self: &Arc<Self>,
        local: &mut Local,
        fresh: &mut Option<impl FnOnce() -> I>,
    ) -> Option<Block> {
        let shrinks = self.shrinks.load(Ordering::Relaxed);
        if !local.owned_by(self) || local.items.is_empty() || local.shrinks != shrinks {
            self.refill(local, shrinks, fresh.take().expect("a take calls `fresh` at most once"));
        }
        let taken = local.items.pop_back()?;
        local.publish();
        Some(taken)
    }

    /// Makes this class the cache's owner (giving the old owner's blocks back and registering a
    /// cell), or after a shrink gives this class's back, and moves a batch from the lists in.
    #[cold]
    fn refill<I: DoubleEndedIterator<Item = Block>>(
        self: &Arc<Self>,
        local: &mut Local,
        shrinks: u64,
        fresh: impl FnOnce() -> I,
    ) {
        if !local.owned_by(self) || local.shrinks != shrinks {
            local.give_back();
            let cell = Arc::new(AtomicUsize::new(0));
            let mut cells = self.cells.lock();
            cells.retain(|cell| Arc::strong_count(cell) > 1);
            cells.push(Arc::clone(&cell));
            drop(cells);
            local.cell = Some(cell);
            local.owner = Arc::downgrade(self);
            local.shrinks = shrinks;
        }
        self.lists.take_batch(&mut local.items, fresh);
        local.publish();
    }

    /// Returns a free block: to this thread's cache if this class owns it, else to the lists.
    #[inline]
    pub(crate) fn put(self: &Arc<Self>, block: Block) {
        if !self.keep(|items| items.push_back(block)) {
            self.lists.put(block);
        }
    }

    /// Returns several free blocks (a fired batch's): to this thread's cache if this class owns
    /// it, giving its oldest batches to the lists as it overflows, else to the lists in one lock.
    pub(crate) fn put_all(self: &Arc<Self>, blocks: impl Iterator<Item = Block>) {
        let mut blocks = Some(blocks);
        if !self.keep(|items| items.extend(blocks.take().expect("appended once"))) {
            self.lists.put_all(blocks.take().expect("not appended"));
        }
    }

    /// Appends to this thread's cache with `append` if this class owns it, giving its oldest
    /// batches to the pool past [`CAPACITY`]; `false` (and `append` not called) otherwise.
    #[inline]
    fn keep(self: &Arc<Self>, append: impl FnOnce(&mut VecDeque<Block>)) -> bool {
        with_cache(self.class, |local| {
            if !local.owned_by(self) {
                return false;
            }
            append(&mut local.items);
            if local.items.len() > CAPACITY {
                self.lists.spill_above(&mut local.items, CAPACITY);
            }
            local.publish();
            true
        }) == Some(true)
    }

    /// Before a shrink, which only sees what is on the lists: gives this thread's cached blocks of
    /// this class back, and has every other thread give its own back at its next take.
    pub(crate) fn before_shrink(self: &Arc<Self>) {
        self.shrinks.fetch_add(1, Ordering::Relaxed);
        with_cache(self.class, |local| {
            if local.owned_by(self) {
                local.give_back();
            }
        });
    }

    /// Free blocks: on the lists and in the threads' caches, counted with every list's lock held
    /// (see the module docs).
    pub(crate) fn free_count(&self) -> usize {
        self.lists.listed_with(|listed| {
            let cached: usize = self.cells.lock().iter().map(|cell| cell.load(Ordering::Relaxed)).sum();
            listed.len() + cached
        })
    }
}

#[cfg(all(test, not(delaywheel_loom)))]
mod tests {
    use std::sync::mpsc;

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
        // cache, given back by the thread-local's destructor, is on a list or in its cell.
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
