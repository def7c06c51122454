//! `BlockFree`: a task-slab class's free blocks (`task_slab.rs`), with a cache on each thread in
//! front of the class's free lists, so that a schedule takes its closure's block and the task's
//! end on that thread gives it back with no lock.
//!
//! Each class's lists are per-stripe lists behind a lock each (`free_lists.rs`): taking a block
//! from them, and giving it back, is a lock round trip, two atomic read-modify-writes on the
//! stripe's line. So each thread keeps, per class, a **cache** of free blocks of one slab's class
//! (its **owner**, the class it last took a block from), as it does for slots (`slot_cache.rs`,
//! whose shape this follows):
//!
//! * a **take** pops the cache's newest block (its lines are the likeliest to be cached); an empty
//!   cache first moves a batch from the lists ([`FreeLists::take_batch`]), one lock per batch;
//! * a **put** on the owning thread appends to the cache, giving its oldest batch to the pool
//!   first when it is full ([`CAPACITY`]); the driver's return of a fired batch, on a thread that
//!   owns the cache (a manual timer's, or one running a task that re-arms), fills the cache up to
//!   its capacity and lists the rest in one lock, so the cache's buffer never outgrows it. A put
//!   of another slab's block, or on a thread that never took one, goes to the lists.
//!
//! A block needs none of a slot's age: nothing names a block but the closure in it. A thread's
//! caches hold at most [`CAPACITY`] blocks of each class (12, 24 and 48 KiB), which keep their
//! pages from a shrink until the thread's next take (below): with each block on a page of its own,
//! 0.75, 1.5 and 3 MiB, and a thread that never schedules again keeps them until it exits.
//!
//! **The slab's drop counts the cached blocks exactly.** A slab dropped while a block is still
//! held leaks its pages rather than unmap them under the holder, and it tells from the blocks it
//! cannot account for (`TaskSlab`'s drop): a cached block must not look held, or every timer
//! dropped while a thread caches its blocks would leak its slab. So each thread publishes how many
//! blocks its cache holds in a **cell** of its own (`Arc<AtomicUsize>`: a plain store, `Release`,
//! no read-modify-write), registered with the class when the thread takes it as owner.
//! [`free_count`](BlockFree::free_count) reads every list and every cell (`Acquire`) with every
//! list's lock held. **Every window errs low**: a cell is lowered before blocks leave its cache (a
//! take, a spill to the pool) and raised only after they are in it (a put, a refill), so a count
//! racing a cache's moves may miss a free block, which makes the slab leak, but never counts a
//! held block as free, which would unmap it under its holder. The one move that can race a drop in
//! a timer, a cache given back as its thread exits or takes another slab's blocks, lists its
//! blocks and zeroes its cell under one stripe lock ([`FreeLists::put_all_then`]), so the count
//! sees them exactly once; every other move needs the timer, which a dropping slab's timer no
//! longer is. A cache whose owner is gone (the class dropped) forgets its blocks and leaves its
//! cell alone.
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
            cell.store(self.items.len(), Ordering::Release);
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
                    cell.store(0, Ordering::Release);
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
        // Counted out before it leaves (see the module docs: every window errs low).
        if let Some(cell) = &local.cell {
            cell.store(local.items.len().saturating_sub(1), Ordering::Release);
        }
        local.items.pop_back()
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

    /// Returns a free block: to this thread's cache if this class owns it (giving its oldest batch
    /// to the pool first if it is full), else to the lists.
    #[inline]
    pub(crate) fn put(self: &Arc<Self>, block: Block) {
        let kept = with_cache(self.class, |local| {
            if !local.owned_by(self) {
                return false;
            }
            if local.items.len() >= CAPACITY {
                self.spill(local);
            }
            local.items.push_back(block);
            local.publish();
            true
        });
        if kept != Some(true) {
            self.lists.put(block);
        }
    }

    /// Returns several free blocks (a fired batch's): to this thread's cache if this class owns
    /// it, as many as it has room for below [`CAPACITY`], the rest to the lists in one lock (so
    /// that the cache's buffer never grows past its capacity, whatever the batch).
    pub(crate) fn put_all(self: &Arc<Self>, blocks: impl Iterator<Item = Block>) {
        let mut blocks = blocks.peekable();
        with_cache(self.class, |local| {
            if local.owned_by(self) {
                let room = CAPACITY.saturating_sub(local.items.len());
                local.items.extend(blocks.by_ref().take(room));
                local.publish();
            }
        });
        if blocks.peek().is_some() {
            self.lists.put_all(blocks);
        }
    }

    /// Gives a full cache's oldest batch to the pool. The cell says so first: while the batch is
    /// on its way it is counted nowhere, so the count errs low (see the module docs).
    #[cold]
    fn spill(&self, local: &mut Local) {
        let keep = CAPACITY - BATCH;
        if let Some(cell) = &local.cell {
            cell.store(keep, Ordering::Release);
        }
        self.lists.spill_above(&mut local.items, keep);
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
            let cached: usize = self.cells.lock().iter().map(|cell| cell.load(Ordering::Acquire)).sum();
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
    fn a_fired_spike_kept_by_an_owning_thread_leaves_no_buffer_behind() {
        // The driver's return of a fired batch (`Freed::flush`) on a thread whose cache this class
        // owns (a manual timer's thread, or a driver that runs a re-arming task): the whole batch
        // is appended, then the cache spills down to CAPACITY, but its buffer keeps the room.
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
