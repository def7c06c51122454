//! `EntryArena`: where a timer's entries live, densely, in fixed slots addressed by index.
//!
//! A timer owns an arena of **slots**, each an entry's [`EntryState`] behind its own small lock,
//! and an entry is named by its slot index ([`EntryId`], 4 bytes) and the slot's generation. No
//! entry is a heap allocation of its own: that would cost a `malloc` per schedule and a `free` per
//! fire or cancel, on whichever thread gets there first, and glibc makes the driver pay for such
//! cross-thread frees in `malloc_consolidate` stalls (SPEC W4, docs/benchmarks.md).
//!
//! ## Storage
//!
//! Slots are grouped in pages of [`PAGE`] slots (12 KiB), created on first use and never moved
//! (`pages.rs`, the directory): segment `s` of the directory has `2^s` pages, so the directory of a
//! timer that never grows is a few hundred bytes, and that of a billion slots about 0.2 % of the slots'
//! own 48 GB. Finding a slot is two `Acquire` loads and some shifts.
//!
//! A page whose slots are all free can be given back ([`shrink`](EntryArena::shrink), `shrink.rs`):
//! after a spike, the arena returns to the pages its pending entries and free lists' slack use. Until
//! a shrink, the arena keeps its size: the most entries ever pending (plus the free lists' slack,
//! below). A handle whose slot's page is gone finds the arena's vacant stand-in slot instead, whose
//! generation (0) no ticket has: its task is not pending, which is true. The arena lives as long as its
//! timer or any of that timer's handles (a handle reaches its entry through it, and its bucket through
//! the wheel), so a handle kept after its timer was dropped keeps the arena and the wheel: the
//! closures are all gone by then (the shutdown drain released every slot), and the drop gave the
//! emptied pages back (`timer/shrink.rs`, "After a shutdown").
//!
//! ## Free slots
//!
//! Free indices are kept in per-thread lists with a shared pool (`free_lists.rs`, which the task
//! slab's blocks use too): a freed index goes to the back of the freeing thread's stripe's list; an
//! allocation takes from the front of its own, oldest first. A list down to `MIN_AGE` indices
//! first takes a batch (`BATCH`) from the pool, or else a whole page of never-used indices (made
//! with no lock of the lists held), and puts it in front; one that grows past two batches gives
//! its oldest batch back to the pool. In front of the lists, each thread keeps a **cache** of free
//! indices of the arena it last allocated from (`slot_cache.rs`), refilled and emptied a batch at
//! a time: a schedule takes its slot from it and a cancel on that thread gives it back with no
//! lock (no atomic read-modify-write).
//!
//! Never-used indices come a page at a time so that a page is created by one thread only, and
//! nobody waits in its `OnceLock`. With fresh batches smaller than a page, two threads scheduling at once
//! kept taking batches of the same page, and the second waited (parked, in the page's `OnceLock`) while the
//! first created it: that wait was about a third of SPEC W3's time per insert (two threads, one timer:
//! 131–141 ns with 64-index batches, 96–100 ns with whole pages; docs/benchmarks.md).
//!
//! Slots are thus recycled wherever they were freed (the driver frees what the schedulers
//! allocated), and schedule-and-cancel forever runs in flat memory: the slots in use never exceed
//! the most entries ever pending plus, per stripe, a page and `MIN_AGE` (about 290 slots, 14 KiB;
//! every thread that schedules on a timer takes a page of its own at first), per thread that
//! schedules, its cache (at most `slot_cache::CAPACITY`, 384 slots, 18 KiB), plus the bucket the
//! driver is firing: it returns a fired batch's slots together after the batch
//! ([`free_all`](EntryArena::free_all), one lock instead of one per task), so a task of that batch
//! that schedules does not reuse them. A released slot usually waits for many
//! allocations before it is reused, so a handle can still tell how its task ended for a while
//! (`TimerHandle::is_fired`); that is no guarantee: a burst of releases on one stripe moves its
//! oldest indices to the pool, and the pool hands out its latest batch first.
//!
//! The free lists only move indices. They sit behind the facade's *unmodelled* locks (see
//! `sync.rs`): an index does travel through them from the thread that freed a slot to the one that
//! reuses it, but the slot's state is ordered by the slot's own lock, which is modelled, so the loom
//! models need not explore the lists. Nothing inside them is a loom operation, as an unmodelled
//! lock requires: a page is created outside them (its slots with `SlotLock::new`, whose loom atomic
//! and cell constructors are not branch points, and, in a place a shrink retired, a modelled flag:
//! `pages.rs`). The places a shrink retired (`vacated`) are behind a modelled lock: they go from
//! the shrink to the thread that creates a page there, and loom must see that hand-over.
//!
//! ## Who frees a slot
//!
//! See `entry/`: at every moment one party **holds** an allocated slot (the scheduler, a bucket,
//! the driver's transit buffers, an executor's channel), and only the holder frees it, after the
//! entry left `Pending`. A handle holds nothing: it names its entry by index *and generation*, and
//! freeing bumps the generation, so a handle outliving its entry can never touch the slot's next
//! occupant.

#[cfg(test)]
pub(crate) use crate::entry::free_lists::BATCH;
use crate::entry::pages::Pages;
use crate::entry::readers::{Pin, Readers};
use crate::entry::shrink::Shrinking;
use crate::entry::slot_cache::SlotFree;
use crate::entry::slot_lock::SlotLock;
use crate::entry::stamps::{StampBy, Stamps};
use crate::entry::task_slab::TaskSlab;
use crate::entry::{self, EntryBody, EntryId, EntryState};
use crate::sync::{Mutex, Ordering, UnmodelledAtomicU64};

/// Slots per page (a power of two). The loom models use 1 (a page per entry, so entries span
/// pages): a page is published through an unmodelled once-cell, and a slot's lock word and cell
/// are loom objects, whose creation loom checks happens-before every access. With one slot per page
/// (a fresh grab is a page) the thread that creates a slot is the one that takes it first, and every
/// later user reaches it through modelled synchronisation (a bucket lock, the slot's own lock).
#[cfg(not(delaywheel_loom))]
pub(crate) const PAGE_BITS: u32 = 8;
#[cfg(delaywheel_loom)]
pub(crate) const PAGE_BITS: u32 = 0;

pub(crate) const PAGE: usize = 1 << PAGE_BITS;

/// How many slots ahead of the one it locks a loop over scattered slots prefetches (a bucket visit,
/// a fired batch): enough misses in flight to overlap, few enough that the lines are still cached
/// when their turn comes.
const PREFETCH_AHEAD: usize = 8;

/// Loops over fewer slots than this do not prefetch: each prefetch costs a slot lookup, which a few
/// slots do not repay (criterion's `expire` fires ~10 a tick: +10 % with prefetching).
const PREFETCH_MIN_LEN: usize = 32;

/// How far ahead a loop over `len` scattered slots prefetches: [`PREFETCH_AHEAD`], or, for a short
/// loop, `usize::MAX` (never: `index.saturating_add(ahead)` is past every list).
pub(crate) fn prefetch_ahead(len: usize) -> usize {
    if len >= PREFETCH_MIN_LEN {
        PREFETCH_AHEAD
    } else {
        usize::MAX
    }
}

/// One entry's place: its state behind its own lock (see `entry/`), 48 bytes: the lock's two bits
/// share a word with the entry's generation and status (`slot_lock/`), the body is the other 40.
/// Not padded to a cache line: a 64-byte aligned slot measures the same in SPEC W4, within noise,
/// and costs bytes per timer.
pub(crate) struct Slot(pub(super) SlotLock<EntryBody>);

#[cfg(not(delaywheel_loom))]
const _: () = assert!(std::mem::size_of::<Slot>() == 48);

/// The slots of one timer (see the module docs).
pub(crate) struct EntryArena {
    /// The pages of slots (`pages.rs`).
    pub(super) pages: Pages,
    /// What a ticket whose slot's page is gone finds: a vacant slot of generation 0.
    tombstone: Slot,
    /// The threads looking at pages without holding a slot of theirs (`readers.rs`).
    pub(super) readers: Readers,
    /// The first index never handed out.
    pub(super) fresh: UnmodelledAtomicU64,
    /// Pages given back by a shrink, whose indices new pages take first. Modelled under loom (and
    /// taken under no unmodelled lock): it hands a retired page's place from the shrink to the
    /// thread that creates a page there.
    pub(super) vacated: Mutex<Vec<usize>>,
    /// The shrink's own state (`shrink.rs`).
    pub(super) shrinking: Shrinking,
    /// Pages a shrink never gives back: those [`reserve`](EntryArena::reserve) created (the
    /// timer's capacity, which it keeps through any spike).
    pub(super) kept_pages: usize,
    /// The stamps of new entries (`stamps.rs`).
    stamps: Stamps,
    /// Called once, by the allocation whose new page brings the slots ever handed out to the
    /// given number ([`on_high_water`](EntryArena::on_high_water)).
    grown: std::sync::OnceLock<(u64, GrowHook)>,
    /// Free indices: per thread stripe, with a cache on each thread (see the module docs).
    pub(super) free: std::sync::Arc<SlotFree>,
    /// Blocks for the closures too big for a slot (`task_slab.rs`). After `segments`: fields drop
    /// in order, so the closures left in slots give their blocks back before the slab goes.
    tasks: TaskSlab,
    /// Whether a debug build checks the holding protocol when the arena is dropped (unit tests of
    /// buckets and entries leave entries behind on purpose).
    #[cfg(debug_assertions)]
    audit_on_drop: bool,
}

/// What [`EntryArena::on_high_water`] calls.
pub(crate) type GrowHook = Box<dyn Fn() + Send + Sync>;

/// Pages a loom build creates with the arena, on the thread that builds the timer: every model
/// thread then reaches their slots (loom objects) after their creation, also the shutdown scan
/// ([`lock_index`](EntryArena::lock_index)), which reads pages it did not take from a free list and
/// so has no modelled synchronisation with a thread that created one later. More than any model
/// allocates.
#[cfg(delaywheel_loom)]
const LOOM_PAGES: usize = 32;

impl EntryArena {
    pub(crate) fn new() -> EntryArena {
        let arena = EntryArena::empty();
        #[cfg(delaywheel_loom)]
        for index in (0..LOOM_PAGES).map(|page| page * PAGE) {
            arena.create_page(index);
        }
        arena
    }

    fn empty() -> EntryArena {
        EntryArena {
            pages: Pages::new(),
            tombstone: Slot(entry::vacant_slot()),
            readers: Readers::new(),
            fresh: UnmodelledAtomicU64::new(0),
            vacated: Mutex::new(Vec::new()),
            shrinking: Shrinking::new(),
            kept_pages: 0,
            stamps: Stamps::new(),
            grown: std::sync::OnceLock::new(),
            free: SlotFree::new(0),
            tasks: TaskSlab::new(),
            #[cfg(debug_assertions)]
            audit_on_drop: true,
        }
    }

    /// An arena that skips the drop-time audit: for unit tests that leave entries in buckets.
    #[cfg(test)]
    pub(crate) fn unaudited() -> EntryArena {
        #[allow(unused_mut)]
        let mut arena = EntryArena::new();
        #[cfg(debug_assertions)]
        {
            arena.audit_on_drop = false;
        }
        arena
    }

    /// An unaudited arena (see [`unaudited`](EntryArena::unaudited)) whose task slab allocates at
    /// most `max_pages` pages per class: for tests of a class running out.
    #[cfg(test)]
    pub(crate) fn with_task_pages(max_pages: usize) -> EntryArena {
        let mut arena = EntryArena::unaudited();
        arena.tasks = TaskSlab::with_max_pages(max_pages);
        arena
    }

    /// The blocks for closures too big for a slot.
    #[inline]
    pub(crate) fn tasks(&self) -> &TaskSlab {
        &self.tasks
    }

    /// The slot of `id`: its page's, or the vacant stand-in if the page is gone (only a ticket's
    /// holder-less look can find that: see the module docs). A caller that does not hold `id`'s slot
    /// must be pinned ([`pin`](EntryArena::pin)) for as long as it uses the slot.
    #[inline]
    fn slot(&self, id: EntryId) -> &Slot {
        self.pages.slot(id).unwrap_or(&self.tombstone)
    }

    /// Pins this thread (`readers.rs`): what an operation that starts from a ticket (it holds no
    /// slot) does first, so that the page of the slot it looks at is not freed under it.
    #[inline]
    pub(crate) fn pin(&self) -> Pin<'_> {
        self.readers.pin()
    }

    /// Locks the state of `id`'s slot (the vacant stand-in's if its page is gone: see
    /// [`slot`](EntryArena::slot)).
    #[inline]
    pub(crate) fn lock(&self, id: EntryId) -> EntryState<'_> {
        self.pages.lock(id).unwrap_or_else(|| self.tombstone.0.lock())
    }

    /// Starts loading slot `id`'s cache line, to be locked soon (`SlotLock::prefetch`): loops over
    /// many slots call it [`prefetch_ahead`] slots ahead.
    #[inline]
    pub(crate) fn prefetch(&self, id: EntryId) {
        self.slot(id).0.prefetch();
    }

    /// A free slot for a new entry: vacant, unlocked (the new occupant's stamp, unique, becomes its
    /// generation: `stamps.rs`).
    /// `None` once the never-used indices ran out (`EntryId::MAX_INDEX`, less a page) and neither
    /// this thread's cache, this stripe's list (beyond its `MIN_AGE`) nor the pool has a free one:
    /// other stripes may then still hold up to a page and `MIN_AGE` each, and other threads'
    /// caches theirs. (That is a quarter of a terabyte of slots.)
    pub(crate) fn alloc(&self) -> Option<EntryId> {
        self.free.take(|| self.fresh_page().map(EntryId::new))
    }

    /// A page of never-used indices, in order (none once those run out): a page a shrink gave
    /// back, created anew, or else the next one.
    fn fresh_page(&self) -> std::ops::Range<usize> {
        let vacated = self.vacated.lock().pop();
        if let Some(page) = vacated {
            self.pages.create(page);
            return page * PAGE..(page + 1) * PAGE;
        }
        let start = self.fresh.fetch_add(PAGE as u64, Ordering::Relaxed);
        if start + PAGE as u64 > u64::from(EntryId::MAX_INDEX) + 1 {
            self.fresh.fetch_sub(PAGE as u64, Ordering::Relaxed);
            return 0..0;
        }
        if let Some((mark, hook)) = self.grown.get() {
            if start < *mark && start + PAGE as u64 >= *mark {
                hook();
            }
        }
        let start = start as usize;
        self.create_page(start);
        start..start + PAGE
    }

    /// Has `hook` called once, by the allocation that first brings the slots ever handed out
    /// ([`high_water`](EntryArena::high_water)) to `slots` (from its thread, with no lock of the
    /// arena held): the driver's wait for a shrink (`timer/shrink.rs`). Set at most once.
    #[cfg_attr(delaywheel_loom, allow(dead_code))]
    pub(crate) fn on_high_water(&self, slots: u64, hook: GrowHook) {
        let _ = self.grown.set((slots, hook));
    }

    /// Returns a slot whose occupant was released (`EntryState::release`): only its holder calls
    /// this, once per allocation. (A cancel's path: one `push_back`, not [`free_all`]'s iterator.)
    ///
    /// [`free_all`]: EntryArena::free_all
    #[inline]
    pub(crate) fn free(&self, id: EntryId) {
        // Checked before the free list is locked (see `free_all`).
        #[cfg(debug_assertions)]
        assert!(!self.lock(id).is_occupied(), "freeing an occupied slot: {id:?}");
        self.free.put(id);
    }

    /// [`free`](EntryArena::free) for several released slots with one lock of the free list (the
    /// driver returns a fired batch so: `entry::Return::ByCaller`).
    pub(crate) fn free_all(&self, ids: impl Iterator<Item = EntryId>) {
        // Checked before the free list is locked: a slot lock is a loom operation, which must not
        // happen inside an unmodelled lock (`sync.rs`).
        #[cfg(debug_assertions)]
        let ids: Vec<EntryId> = ids
            .inspect(|&id| assert!(!self.lock(id).is_occupied(), "freeing an occupied slot: {id:?}"))
            .collect();
        self.free.put_all(ids.into_iter());
    }

    /// Creates the page holding `index` if it does not exist yet.
    fn create_page(&self, index: usize) {
        self.pages.create(index >> PAGE_BITS);
    }

    /// A new entry's stamp: its generation in the slot it will occupy, and the order of its
    /// schedule among the timer's (`entry/`, `Life`): drawn alone (`StampBy::Timer`: ordered across
    /// threads), or from this thread's block (`StampBy::Thread`: ordered on this thread), as
    /// `stamps.rs` says when each is used. Stamps start at 1, and no two are equal, so each
    /// occupant of a slot has a generation of its own.
    #[inline]
    pub(crate) fn stamp(&self, by: StampBy) -> u64 {
        match by {
            StampBy::Timer => self.stamps.shared(),
            StampBy::Thread => self.stamps.thread(),
        }
    }

    /// Starts an advance's round of stamps (`stamps.rs`, "Rounds"): returns the last stamp
    /// reserved, below every stamp this thread (or one that learns of the advance) draws after.
    pub(crate) fn begin_stamp_round(&self) -> u64 {
        self.stamps.begin_round()
    }

    /// Creates (and so writes) the pages of the first `slots` indices, or of every index up to
    /// `EntryId::MAX_INDEX`: the pages that allocations hand out first, which then find them
    /// created (a timer's warm-up: `TimerBuilder::capacity`), and keeps them through every shrink.
    /// So that `slots` entries scheduled from one thread take slots of these pages only, it
    /// creates `MIN_AGE` slots more: a thread's cache takes its next page once it is down to that
    /// many (`slot_cache.rs`, `thread_cache.rs`).
    pub(crate) fn reserve(&mut self, slots: usize) {
        let slots = if slots == 0 { 0 } else { slots.saturating_add(crate::entry::free_lists::MIN_AGE) };
        let slots = slots.min(EntryId::MAX_INDEX as usize + 1 - PAGE);
        (0..slots).step_by(PAGE).for_each(|start| self.create_page(start));
        self.kept_pages = self.kept_pages.max(slots.div_ceil(PAGE));
    }

    /// Locks the state of the slot at `index`, if its page exists (any index below
    /// [`high_water`](EntryArena::high_water) once its page is created, until a shrink gives it
    /// back): for the shutdown scan, which must be pinned ([`pin`](EntryArena::pin)) while it uses
    /// the slot. (Under loom only the pages created with the arena are scanned: see `LOOM_PAGES`.)
    pub(crate) fn lock_index(&self, index: usize) -> Option<EntryState<'_>> {
        #[cfg(delaywheel_loom)]
        assert!(index < LOOM_PAGES * PAGE, "a loom model allocated past the arena's first pages");
        if index > EntryId::MAX_INDEX as usize {
            return None;
        }
        self.pages.lock(EntryId::new(index))
    }

    /// Slots handed out so far, free or not: the arena's high-water mark.
    pub(crate) fn high_water(&self) -> u64 {
        self.fresh.load(Ordering::Relaxed)
    }

    /// Checks the holding protocol of `entry/` end to end, once nothing holds an entry: every slot
    /// is vacant (each entry was released) and every index handed out is on at most one free list,
    /// the ones on none being exactly as many as the threads' caches hold (each release returned
    /// its slot once). Run by a dropped arena in debug builds (and so in
    /// the loom models), and by `fault_tests.rs` in any build.
    #[cfg(any(debug_assertions, test))]
    pub(crate) fn audit(&self) {
        let fresh = self.fresh.load(Ordering::Relaxed) as usize;
        let mut seen = vec![false; fresh];
        // The lists and the caches' count in one reading (a cache may give its indices back
        // meanwhile: a thread exiting while the arena is dropped).
        let (listed, cached) = self.free.lists.listed_with(|listed| (listed, self.free.cached()));
        for id in listed {
            assert!(!std::mem::replace(&mut seen[id.index()], true), "slot {id:?} freed twice");
        }
        // Released slots on no list: those in threads' caches (`slot_cache.rs`), and no other.
        let mut unlisted = 0;
        for (index, listed) in seen.into_iter().enumerate() {
            let id = EntryId::new(index);
            if self.pages.slot(id).is_none() {
                assert!(!listed, "slot {id:?} of a page given back is still listed");
                continue;
            }
            assert!(!self.lock(id).is_occupied(), "slot {id:?} never released");
            unlisted += usize::from(!listed);
        }
        assert_eq!(unlisted, cached, "{unlisted} released slots on no free list, {cached} of them cached");
    }
}

/// In debug builds, a dropped arena runs its [`audit`](EntryArena::audit).
#[cfg(debug_assertions)]
impl Drop for EntryArena {
    fn drop(&mut self) {
        if !std::thread::panicking() && self.audit_on_drop {
            self.audit();
        }
    }
}

impl std::fmt::Debug for EntryArena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EntryArena")
            .field("fresh", &self.fresh.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(delaywheel_loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_high_water_hook_runs_once_when_its_mark_is_reached() {
        let arena = EntryArena::new();
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = std::sync::Arc::clone(&calls);
        arena.on_high_water(
            3 * PAGE as u64,
            Box::new(move || {
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }),
        );
        let count = || calls.load(std::sync::atomic::Ordering::SeqCst);
        // (The free list takes a page ahead once it runs low: at most two pages for one.)
        let mut held: Vec<EntryId> = (0..PAGE).map(|_| arena.alloc().unwrap()).collect();
        assert_eq!(count(), 0, "a page handed out");
        held.extend((0..3 * PAGE).map(|_| arena.alloc().unwrap()));
        assert_eq!(count(), 1, "the third page reached the mark");
        arena.free_all(held.drain(..));
        held.extend((0..8 * PAGE).map(|_| arena.alloc().unwrap()));
        assert_eq!(count(), 1, "once");
        arena.free_all(held.into_iter());
    }

    #[test]
    fn a_reserve_creates_the_pages_allocations_take_first() {
        let mut arena = EntryArena::new();
        arena.reserve(3 * PAGE - crate::entry::free_lists::MIN_AGE);
        assert!(arena.lock_index(3 * PAGE - 1).is_some(), "the third page exists");
        assert!(arena.lock_index(3 * PAGE).is_none(), "no fourth page");
        assert_eq!(arena.high_water(), 0, "nothing handed out yet");
        let id = arena.alloc().unwrap();
        assert!(id.index() < PAGE, "the first page is handed out first: {id:?}");
        assert!(!arena.lock(id).is_occupied());
        arena.free(id);
    }

    #[test]
    fn freed_slots_are_reused_and_memory_stays_flat() {
        let arena = EntryArena::new();
        for _ in 0..100_000 {
            let ids: Vec<EntryId> = (0..10).map(|_| arena.alloc().unwrap()).collect();
            for id in ids {
                arena.free(id);
            }
        }
        assert!(arena.high_water() <= PAGE as u64, "high water {}", arena.high_water());
    }

    #[test]
    fn slots_freed_on_one_thread_are_reused_by_another() {
        let arena = std::sync::Arc::new(EntryArena::new());
        for _ in 0..200 {
            let ids: Vec<EntryId> = (0..1_000).map(|_| arena.alloc().unwrap()).collect();
            let freer = std::sync::Arc::clone(&arena);
            std::thread::spawn(move || ids.into_iter().for_each(|id| freer.free(id))).join().unwrap();
        }
        // Each round's frees go to another stripe and come back through the pool.
        assert!(arena.high_water() < 3_000 + 64 * 2 * BATCH as u64, "high water {}", arena.high_water());
    }
}
