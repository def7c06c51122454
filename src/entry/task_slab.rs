//! `TaskSlab`: the timer-owned storage of closures too big for a slot's inline word, in blocks of
//! three size classes, recycled through per-thread free lists (`free_lists.rs`).
//!
//! A slot (48 bytes) keeps a closure of up to two words inline (`inline_task/`). A bigger one, up
//! to 256 bytes and 64-byte alignment, goes to a **block** of the smallest class that holds
//! it: 64, 128 or 256 bytes ([`CLASSES`]); the slot keeps the block's address and its class's.
//! Only larger or more aligned closures are boxed. Why a side slab and not bigger slots, an
//! allocator or a box: `docs/design.md`, "Tasks of any size".
//!
//! ## Storage
//!
//! A class hands out blocks from pages of [`BLOCKS_PER_PAGE`] blocks (4, 8 or 16 KiB) of mapped
//! memory (a `PageSource`, `os.rs`), taken when its free lists run dry and never moved; a page
//! whose blocks are all free again is freed by a shrink, in steps ([`TaskSlab::shrink_step`],
//! `page_reclaim.rs`), else kept while the slab lives. Free blocks travel through a thread's cache
//! and the free lists of their class (`block_cache.rs`, `free_lists.rs`): a block given back on a
//! thread that schedules is its next one taken, with no lock; one freed by the driver after a fire
//! goes to the driver's stripe and comes back to a scheduling thread a batch at a time through the
//! pool, so no block is handed from thread to thread one by one and no `free` of another thread's
//! allocation is ever made (glibc's cross-thread frees are what boxing a task costs the driver).
//!
//! ## Ownership and lifetime
//!
//! A block taken with [`Class::alloc`] belongs to its taker until it gives it back with
//! [`Class::free`]; the slab never touches a block's bytes. The free lists only move addresses; the
//! closure's bytes are ordered by whoever hands the closure over (the shard's lock that publishes
//! the entry; the free lists' locks between a block's last reader and its next writer).
//!
//! A block's holder (an `InlineTask`) frees it through the class's address, so a class must outlive
//! every block it handed out. In a timer it does (the slab is held in an `Arc` by the timer's state
//! and its executor room, and the payloads of its entries, dropped with the shards or by the claims
//! of callers that hold the state, are every holder). The slab does not rely on that: dropped
//! while blocks are still out (on no list, in no thread's cache and not held by a shrink to go back
//! to the lists, a count that may err low but never high: `thread_cache.rs`, `page_reclaim.rs`), it
//! leaks its classes and pages instead of freeing them, so a late free still finds a live class and
//! the task stays sound.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::ptr::NonNull;
use std::sync::Arc;

use crate::entry::block_cache::BlockFree;
use crate::entry::os::PageSource;
use crate::entry::page_reclaim::{Reclaim, Step};
use crate::sync::UnmodelledMutex;

/// The block sizes of the classes, in bytes: a closure goes to the first that holds it.
pub(crate) const CLASSES: [usize; 3] = [64, 128, 256];

/// Every block's alignment (a cache line): closures aligned more than this are boxed.
pub(crate) const BLOCK_ALIGN: usize = 64;

/// Blocks per page of a class.
pub(crate) const BLOCKS_PER_PAGE: usize = 64;

/// Pages a class may allocate: 2^32 blocks, as many as a timer has entries.
const MAX_PAGES: usize = (1 << 32) / BLOCKS_PER_PAGE;

/// The class (an index into [`CLASSES`]) of a closure of `size` bytes and alignment `align`, if a
/// block holds it.
pub(crate) const fn class_for(size: usize, align: usize) -> Option<usize> {
    if align > BLOCK_ALIGN {
        return None;
    }
    let mut class = 0;
    while class < CLASSES.len() {
        if size <= CLASSES[class] {
            return Some(class);
        }
        class += 1;
    }
    None
}

/// A block's address (`BLOCK_ALIGN`-aligned, its class's size in bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(transparent)]
pub(crate) struct Block(NonNull<u8>);

// SAFETY: a `Block` is an address, moved between threads by the free lists; it grants nothing by
// itself. Whoever took the block from its class owns its bytes (see "Ownership and lifetime"), and
// a closure is stored in one only if it is `Send`.
unsafe impl Send for Block {}

impl Block {
    /// The block's first byte.
    #[inline]
    pub(crate) fn as_ptr(self) -> *mut u8 {
        self.0.as_ptr()
    }

    /// The block at `ptr`, which a class handed out.
    #[inline]
    pub(crate) fn from_ptr(ptr: *mut u8) -> Block {
        Block(NonNull::new(ptr).expect("a block's address is not null"))
    }
}

/// One size class: its pages and the free lists of their blocks.
pub(crate) struct Class {
    /// Bytes per block.
    size: usize,
    /// Its free blocks: the threads' caches and the free lists (`block_cache.rs`).
    pub(super) free: Arc<BlockFree>,
    /// Pages allocated and not given back.
    pub(super) pages: UnmodelledMutex<usize>,
    /// Pages this class may allocate: past it, `alloc` finds no block.
    max_pages: usize,
    /// Where its pages come from, and go back to.
    pub(super) source: PageSource,
    /// Its shrink under way, if any (`page_reclaim.rs`).
    pub(super) reclaim: UnmodelledMutex<Reclaim>,
}

impl Class {
    fn new(class: usize, max_pages: usize) -> Class {
        let size = CLASSES[class];
        let source = PageSource::new(size * BLOCKS_PER_PAGE);
        Class {
            size,
            free: BlockFree::new(class),
            pages: UnmodelledMutex::new(0),
            max_pages,
            source,
            reclaim: UnmodelledMutex::new(Reclaim::default()),
        }
    }

    /// A free block, its bytes the caller's until [`free`](Class::free); `None` once the class has
    /// allocated its most pages and every block is taken.
    #[inline]
    pub(crate) fn alloc(&self) -> Option<Block> {
        self.free.take(|| self.fresh_page())
    }

    /// Allocates a page and returns its blocks, in order (none past `max_pages`).
    fn fresh_page(&self) -> impl DoubleEndedIterator<Item = Block> + ExactSizeIterator {
        let mut pages = self.pages.lock();
        let page = (*pages < self.max_pages).then(|| {
            *pages += 1;
            // Aligned to 4 KiB: every block to `BLOCK_ALIGN`.
            self.source.take().as_ptr()
        });
        let (size, blocks) = (self.size, if page.is_some() { BLOCKS_PER_PAGE } else { 0 });
        let page = page.unwrap_or(std::ptr::null_mut());
        // SAFETY: with a page, the source's pages are `size * BLOCKS_PER_PAGE` bytes (`Class::new`)
        // and `block < BLOCKS_PER_PAGE`, so the offset stays inside it; without one, the range is
        // empty and nothing is computed.
        (0..blocks).map(move |block| Block::from_ptr(unsafe { page.add(block * size) }))
    }

    /// Gives back a block taken with [`alloc`](Class::alloc), whose contents its holder has moved
    /// out or dropped; it goes to this thread's cache, or its free list.
    #[inline]
    pub(crate) fn free(&self, block: Block) {
        self.free.put(block);
    }

    /// [`free`](Class::free) for several blocks: to this thread's cache, as many as it has room
    /// for, the rest with one lock of this thread's free list.
    fn free_all(&self, blocks: impl IntoIterator<Item = Block>) {
        self.free.put_all(blocks.into_iter());
    }

    /// Blocks handed out and not given back: neither listed, nor in a thread's cache, nor held by
    /// a shrink to go back to the lists (`page_reclaim.rs`). While others take and free it may
    /// count a free block in flight as out, never a held one as free (`thread_cache.rs`: every
    /// window errs low). The lists and the held blocks are read under the shrink's lock, which a
    /// step holds while it moves blocks between them (taken first, as a step takes it).
    fn out(&self) -> usize {
        let allocated = *self.pages.lock() * BLOCKS_PER_PAGE;
        let reclaim = self.reclaim.lock();
        let free = self.free.free_count() + reclaim.held_free();
        drop(reclaim);
        allocated.saturating_sub(free)
    }

    /// Pages allocated.
    #[cfg(test)]
    pub(super) fn pages(&self) -> usize {
        *self.pages.lock()
    }
}

/// Blocks emptied by a loop that runs many tasks (the driver's batch), given back to their classes
/// together: one lock of a class's free list per batch, or per [`Freed::MOST`] blocks of a bigger
/// one, instead of one per task. Flushed when dropped, so a block put here is returned even if the
/// loop unwinds.
///
/// Holds each block's class by address: a class outlives its blocks, and a block here is still
/// out (`Class::out`), so a slab dropped meanwhile leaks its classes and the address stays valid.
#[derive(Default)]
pub(crate) struct Freed {
    blocks: Vec<(*const Class, Block)>,
}

impl Freed {
    /// Keeps `block` of `class` for the next [`flush`](Freed::flush), flushing first once
    /// [`Freed::MOST`] are kept: a tick that fires a million tasks then keeps 64 KiB of them here,
    /// not 16 MB that a thread's heap would keep resident after the burst.
    #[inline]
    pub(crate) fn push(&mut self, class: *const Class, block: Block) {
        if self.blocks.len() >= Self::MOST {
            self.flush();
        }
        self.blocks.push((class, block));
    }

    /// The most blocks kept between flushes: a lock of a class's list per this many blocks at
    /// worst, and the list's capacity, which so never needs cutting back after a burst.
    const MOST: usize = 4096;

    /// Gives every block kept back to its class, a run of the same class at a time.
    pub(crate) fn flush(&mut self) {
        let mut rest = &self.blocks[..];
        while let Some(&(class, _)) = rest.first() {
            let run = rest.iter().take_while(|&&(c, _)| c == class).count();
            // SAFETY: every address here is the class its block came from, which outlives the
            // block (see the type's docs), and a class is only used by shared reference.
            let class = unsafe { &*class };
            class.free_all(rest[..run].iter().map(|&(_, block)| block));
            rest = &rest[run..];
        }
        self.blocks.clear();
    }
}

// SAFETY: the class addresses are only used by shared reference (`Class` is `Sync`), to give the
// blocks back, which any thread may do; a `Block` is `Send`.
unsafe impl Send for Freed {}

impl Drop for Freed {
    fn drop(&mut self) {
        self.flush();
    }
}

/// A timer's blocks for closures too big to be inline: one [`Class`] per size (see the module docs).
pub(crate) struct TaskSlab {
    /// Boxed, so that a class's address (kept with every block it handed out) does not move with
    /// the slab.
    classes: Box<[Class]>,
}

impl TaskSlab {
    pub(crate) fn new() -> TaskSlab {
        TaskSlab::with_max_pages(MAX_PAGES)
    }

    /// A slab whose classes allocate at most `max_pages` pages each.
    pub(crate) fn with_max_pages(max_pages: usize) -> TaskSlab {
        TaskSlab { classes: (0..CLASSES.len()).map(|class| Class::new(class, max_pages)).collect() }
    }

    /// Class `class` (an index into [`CLASSES`]).
    #[inline]
    pub(crate) fn class(&self, class: usize) -> &Class {
        &self.classes[class]
    }

    /// Frees the empty pages of every class, every step at once (see [`Class::shrink_step`]); how
    /// many.
    #[cfg(test)]
    pub(crate) fn shrink(&self) -> usize {
        (0..CLASSES.len())
            .map(|class| {
                let mut given = 0;
                loop {
                    let step = self.shrink_step(class);
                    given += step.given;
                    if step.done {
                        return given;
                    }
                }
            })
            .sum()
    }

    /// One step of class `class`'s shrink (`page_reclaim.rs`).
    pub(crate) fn shrink_step(&self, class: usize) -> Step {
        self.classes[class].shrink_step()
    }

    /// Blocks out of every class (see [`Class::out`]).
    #[cfg(test)]
    pub(crate) fn blocks_out(&self) -> usize {
        self.classes.iter().map(Class::out).sum()
    }

    /// Pages allocated by every class.
    #[cfg(test)]
    pub(crate) fn pages(&self) -> usize {
        self.classes.iter().map(Class::pages).sum()
    }
}

impl Drop for TaskSlab {
    fn drop(&mut self) {
        if self.classes.iter().any(|class| class.out() > 0) {
            // A block is still held: its holder frees it through its class later. Leak the classes
            // and their pages so that both stay valid (see "Ownership and lifetime").
            std::mem::forget(std::mem::take(&mut self.classes));
        }
        // Otherwise no block is held: each class's source unmaps its pages as it drops.
    }
}

impl std::fmt::Debug for TaskSlab {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskSlab").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::panic::{self, AssertUnwindSafe};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;
    use crate::entry::inline_task::{InlineTask, Storage};

    /// Counts its drops; panics in its drop if `panics`.
    struct Guard {
        drops: Arc<AtomicUsize>,
        panics: bool,
    }

    impl Drop for Guard {
        fn drop(&mut self) {
            self.drops.fetch_add(1, Ordering::SeqCst);
            if self.panics && !std::thread::panicking() {
                panic!("dropped on purpose");
            }
        }
    }

    /// A task capturing `W` words besides a guard, which checks every word when it runs and adds
    /// their sum to `sum`.
    fn task<const W: usize>(slab: &TaskSlab, guard: Guard, sum: Arc<AtomicUsize>) -> InlineTask {
        let words: [usize; W] = std::array::from_fn(|k| k + 1);
        InlineTask::new_in_as(
            move || {
                let _guard = &guard;
                sum.fetch_add(words.iter().sum(), Ordering::SeqCst);
            },
            slab,
            false,
        )
        .expect("room in an unlimited slab")
    }

    fn guard(panics: bool) -> (Guard, Arc<AtomicUsize>) {
        let drops = Arc::new(AtomicUsize::new(0));
        (Guard { drops: Arc::clone(&drops), panics }, drops)
    }

    #[test]
    fn classes_by_size_and_alignment() {
        assert_eq!(class_for(17, 8), Some(0));
        assert_eq!(class_for(64, 64), Some(0));
        assert_eq!(class_for(65, 8), Some(1));
        assert_eq!(class_for(128, 8), Some(1));
        assert_eq!(class_for(129, 8), Some(2));
        assert_eq!(class_for(256, 8), Some(2));
        assert_eq!(class_for(257, 8), None, "bigger than the largest class: boxed");
        assert_eq!(class_for(32, 128), None, "aligned over a cache line: boxed");
    }

    #[test]
    fn each_size_goes_to_the_smallest_class_that_holds_it() {
        let slab = TaskSlab::new();
        let sum = Arc::new(AtomicUsize::new(0));
        // A guard (two words: an `Arc` and a `bool`, padded) and the words.
        let cases: [(InlineTask, Storage); 5] = [
            (task::<1>(&slab, guard(false).0, Arc::clone(&sum)), Storage::Block(64)),
            (task::<5>(&slab, guard(false).0, Arc::clone(&sum)), Storage::Block(64)),
            (task::<6>(&slab, guard(false).0, Arc::clone(&sum)), Storage::Block(128)),
            (task::<29>(&slab, guard(false).0, Arc::clone(&sum)), Storage::Block(256)),
            (task::<30>(&slab, guard(false).0, Arc::clone(&sum)), Storage::Boxed),
        ];
        assert_eq!(slab.blocks_out(), 4);
        for (task, storage) in cases {
            assert_eq!(task.storage(), storage);
            task.run();
        }
        assert_eq!(sum.load(Ordering::SeqCst), 1 + 15 + 21 + 435 + 465, "every captured word read back");
        assert_eq!(slab.blocks_out(), 0, "every block returned after its run");
    }

    #[test]
    fn run_drop_and_into_box_return_the_block_and_drop_the_captures_once() {
        let slab = TaskSlab::new();
        let sum = Arc::new(AtomicUsize::new(0));
        let (g, ran) = guard(false);
        task::<8>(&slab, g, Arc::clone(&sum)).run();
        let (g, dropped) = guard(false);
        drop(task::<8>(&slab, g, Arc::clone(&sum)));
        let (g, boxed) = guard(false);
        let b = task::<8>(&slab, g, Arc::clone(&sum)).into_box();
        assert_eq!(slab.blocks_out(), 0, "boxing moved the closure out of its block");
        assert_eq!(boxed.load(Ordering::SeqCst), 0);
        b();
        assert_eq!(sum.load(Ordering::SeqCst), 2 * 36, "ran twice: run() and the box");
        for drops in [ran, dropped, boxed] {
            assert_eq!(drops.load(Ordering::SeqCst), 1);
        }
    }

    #[test]
    fn a_panicking_call_or_drop_finds_the_block_returned() {
        let slab = TaskSlab::new();
        let sum = Arc::new(AtomicUsize::new(0));
        let (g, drops) = guard(true);
        let t = task::<16>(&slab, g, Arc::clone(&sum));
        assert!(panic::catch_unwind(AssertUnwindSafe(|| drop(t))).is_err());
        assert_eq!((drops.load(Ordering::SeqCst), slab.blocks_out()), (1, 0));

        let (g, drops) = guard(false);
        let words = [3usize; 20];
        let t = InlineTask::new_in_as(
            move || {
                let _guard = &g;
                panic!("ran on purpose: {}", words.len());
            },
            &slab,
            false,
        )
        .unwrap();
        assert_eq!(t.storage(), Storage::Block(256));
        assert!(panic::catch_unwind(AssertUnwindSafe(|| t.run())).is_err());
        assert_eq!((drops.load(Ordering::SeqCst), slab.blocks_out()), (1, 0));
    }

    #[test]
    fn a_class_out_of_pages_refuses_until_a_block_comes_back() {
        let slab = TaskSlab::with_max_pages(1);
        let sum = Arc::new(AtomicUsize::new(0));
        let mut held: Vec<InlineTask> =
            (0..BLOCKS_PER_PAGE).map(|_| task::<4>(&slab, guard(false).0, Arc::clone(&sum))).collect();
        let (g, drops) = guard(false);
        let words = [1usize; 4];
        assert!(
            InlineTask::new_in_as(move || drop((g, words)), &slab, false).is_none(),
            "the 64-byte class is full"
        );
        assert_eq!(drops.load(Ordering::SeqCst), 1, "the refused closure is dropped");
        assert_eq!(task::<20>(&slab, guard(false).0, Arc::clone(&sum)).storage(), Storage::Block(256));
        held.pop().unwrap().run();
        assert_eq!(task::<4>(&slab, guard(false).0, Arc::clone(&sum)).storage(), Storage::Block(64));
        drop(held);
        assert_eq!(slab.blocks_out(), 0);
        assert_eq!(slab.pages(), 2, "one page of the 64-byte class, one of the 256-byte class");
    }

    #[test]
    fn blocks_freed_on_another_thread_are_reused_and_pages_stay_few() {
        let slab = Arc::new(TaskSlab::new());
        let sum = Arc::new(AtomicUsize::new(0));
        for _ in 0..100 {
            let tasks: Vec<InlineTask> =
                (0..500).map(|_| task::<12>(&slab, guard(false).0, Arc::clone(&sum))).collect();
            std::thread::spawn(move || tasks.into_iter().for_each(InlineTask::run)).join().unwrap();
        }
        assert_eq!(sum.load(Ordering::SeqCst), 100 * 500 * 78);
        assert_eq!(slab.blocks_out(), 0);
        // 500 live at a time, plus what the free lists keep per stripe.
        let most =
            (500 + 2 * crate::entry::free_lists::BATCH * crate::sync::stripe_count()) / BLOCKS_PER_PAGE + 2;
        assert!(slab.pages() <= most, "{} pages", slab.pages());
    }

    #[test]
    fn a_shrink_frees_the_pages_whose_blocks_are_all_free() {
        let slab = TaskSlab::new();
        let sum = Arc::new(AtomicUsize::new(0));
        let mut tasks: Vec<InlineTask> =
            (0..10 * BLOCKS_PER_PAGE).map(|_| task::<4>(&slab, guard(false).0, Arc::clone(&sum))).collect();
        let kept = tasks.split_off(9 * BLOCKS_PER_PAGE);
        tasks.into_iter().for_each(InlineTask::run);
        let before = slab.pages();
        assert!(slab.shrink() >= 8 && slab.pages() <= before - 8, "{} of {before} pages left", slab.pages());
        kept.into_iter().for_each(InlineTask::run);
        assert_eq!(slab.blocks_out(), 0);
        assert_eq!(task::<4>(&slab, guard(false).0, Arc::clone(&sum)).storage(), Storage::Block(64));
    }
}
