//! `Pages`: the entry arena's page directory, whose pages are created on first use and may be freed
//! again once every slot of theirs is free (`shrink.rs`).
//!
//! A page is [`PAGE`] slots (12 KiB, three system pages) of mapped memory from a `PageSource`
//! (`os.rs`), published in the directory as a raw pointer: two levels, segment `s` holding the
//! pointers of `2^s` pages, so that the directory of a timer that never grows is a few hundred
//! bytes. Finding a slot is two `Acquire` loads and some shifts. A freed page's memory goes back to
//! the kernel (`madvise`), and its place is the first a new page takes.
//!
//! ## Who may look at a page, and when it is freed
//!
//! [`get`](Pages::get) hands out a reference to a page that stays valid while either
//!
//! * the caller holds a slot of that page (`entry/`: an allocated slot is never on a free list, and
//!   only a page whose every slot is on one is retired), or
//! * the caller's thread is **pinned** (`readers.rs`) since before it loaded the pointer: what a
//!   handle does, as it may name a slot of any page, live or gone.
//!
//! Retiring a page ([`retire`](Pages::retire)) takes its pointer out of the directory: a `get`
//! from then on finds no page (the arena then answers with its vacant stand-in slot, whose
//! generation no ticket has). The memory is freed ([`free`](Pages::free)) only after a grace
//! period that began after the retire: every thread that was pinned at its start has unpinned
//! since, so nobody still holds a pointer loaded before the retire. The shrink pairs the two
//! (loom model `shrink::stale_handle_racing_a_shrink`).
//!
//! Under loom a freed page is not given back to the allocator but marked freed and kept until the
//! arena drops: a slot of it that is locked afterwards, or still locked when it is freed, fails the
//! model instead of touching freed memory. The directory's pointers are unmodelled (`sync.rs`), so
//! each page also has a modelled flag, written by `create` and `retire` and read by `get` first,
//! for loom to see that a retire and a lookup race. `create` writes it after the directory's lock, and
//! its callers hold no other unmodelled lock (`sync.rs`'s rule): a page is created with no lock of
//! the free lists held (`FreeLists::take`), and a place a shrink retired reaches the thread that
//! creates a page there through the arena's `vacated` list, a modelled lock, so that loom orders
//! the retire's write before the creation's (loom model
//! `shrink::schedule_creates_a_page_in_the_place_a_shrink_retires`).

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::ptr;

use crate::entry::arena::{Slot, PAGE, PAGE_BITS};
#[cfg(not(delaywheel_loom))]
use crate::entry::os::PageSource;
use crate::entry::{self, EntryId};
use crate::sync::{Ordering, UnmodelledAtomicPtr, UnmodelledMutex, UnmodelledOnceLock};

/// Segments in the directory: enough for every `u32` index.
const SEGMENTS: usize = (u32::BITS - PAGE_BITS + 1) as usize;

/// One page: its slots, and under loom whether it was freed.
#[repr(C)]
pub(crate) struct Page {
    slots: [Slot; PAGE],
    #[cfg(delaywheel_loom)]
    freed: std::sync::atomic::AtomicBool,
}

// A page is whole system pages, so that a freed one can be emptied on its own.
#[cfg(not(delaywheel_loom))]
const _: () = assert!(std::mem::size_of::<Page>() % 4096 == 0 && std::mem::align_of::<Page>() <= 4096);

impl Page {
    #[cfg(delaywheel_loom)]
    fn new() -> Page {
        Page {
            slots: std::array::from_fn(|_| Slot(entry::vacant_slot())),
            #[cfg(delaywheel_loom)]
            freed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Slot `slot` of the page.
    #[inline]
    pub(crate) fn slot(&self, slot: usize) -> &Slot {
        #[cfg(delaywheel_loom)]
        assert!(!self.freed.load(Ordering::SeqCst), "a slot of a freed page was touched");
        &self.slots[slot]
    }
}

/// A page taken out of the directory, to be freed after a grace period.
pub(crate) struct Retired(*mut Page);

// SAFETY: a retired page is owned by whoever retired it (it is in no directory); its slots are
// `Sync` and it holds no thread-bound state.
unsafe impl Send for Retired {}

/// A segment of the directory: the pointers of its pages (null: none).
type Segment = Box<[UnmodelledAtomicPtr<Page>]>;

/// The page directory (see the module docs).
pub(crate) struct Pages {
    /// Inline, so that finding a page loads no pointer to the segments first.
    segments: [UnmodelledOnceLock<Segment>; SEGMENTS],
    /// Serialises creating and retiring pages (never taken to find one).
    changes: UnmodelledMutex<()>,
    /// Where pages come from and go back to.
    #[cfg(not(delaywheel_loom))]
    source: PageSource,
    /// Under loom: the pages freed, kept until the directory drops, and whether each page is in
    /// the directory, modelled (see the module docs).
    #[cfg(delaywheel_loom)]
    graveyard: UnmodelledMutex<Vec<Retired>>,
    #[cfg(delaywheel_loom)]
    live: Box<[crate::sync::AtomicBool]>,
}

/// Pages a loom model may use (see `live`).
#[cfg(delaywheel_loom)]
const LOOM_MAX_PAGES: usize = 64;

impl Pages {
    pub(crate) fn new() -> Pages {
        Pages {
            segments: std::array::from_fn(|_| UnmodelledOnceLock::new()),
            changes: UnmodelledMutex::new(()),
            #[cfg(not(delaywheel_loom))]
            source: PageSource::new(std::mem::size_of::<Page>()),
            #[cfg(delaywheel_loom)]
            graveyard: UnmodelledMutex::new(Vec::new()),
            #[cfg(delaywheel_loom)]
            live: (0..LOOM_MAX_PAGES).map(|_| crate::sync::AtomicBool::new(false)).collect(),
        }
    }

    /// A new page of vacant slots, not yet published.
    fn allocate(&self) -> *mut Page {
        #[cfg(delaywheel_loom)]
        return Box::into_raw(Box::new(Page::new()));
        #[cfg(not(delaywheel_loom))]
        {
            let page = self.source.take().as_ptr().cast::<Page>();
            // Slot by slot, in place (a `Page` built on the stack would be copied: 12 KiB).
            // SAFETY: the source's page is `size_of::<Page>()` bytes, aligned to 4 KiB (more than
            // `Page` needs), and ours until given back; a `Page` is its slots (`repr(C)`, the only
            // field outside loom), so writing each slot in place is what makes it one.
            unsafe {
                let slots = page.cast::<Slot>();
                for slot in 0..PAGE {
                    slots.add(slot).write(Slot(entry::vacant_slot()));
                }
            }
            page
        }
    }

    /// Drops a page's slots and gives its memory back. The caller's word (its callers are `free`
    /// and the directory's drop): each page is one `allocate` made, passed here once, and nobody
    /// refers to it any more.
    fn deallocate(&self, pages: Vec<*mut Page>) {
        #[cfg(delaywheel_loom)]
        for page in pages {
            // SAFETY: made by `Box::into_raw` in `allocate`, and freed once (the caller's word).
            drop(unsafe { Box::from_raw(page) });
        }
        #[cfg(not(delaywheel_loom))]
        {
            for &page in &pages {
                // SAFETY: a page written by `allocate`, dropped once (the caller's word), and
                // nobody refers to it any more.
                unsafe { ptr::drop_in_place(page) };
            }
            let pages = pages.into_iter().filter_map(|page| ptr::NonNull::new(page.cast())).collect();
            // SAFETY: pages `allocate` took from this source, each given back once and no longer
            // referred to (the caller's word: `free`'s grace period, or the directory's drop).
            unsafe { self.source.give_back(pages) };
        }
    }

    /// Where page `page` is: (segment, pointer in segment).
    #[inline]
    fn coordinates(page: usize) -> (usize, usize) {
        let page = page + 1;
        let segment = (usize::BITS - 1 - page.leading_zeros()) as usize;
        (segment, page - (1 << segment))
    }

    /// Where slot `index` lives: (page, slot in page).
    #[inline]
    pub(crate) fn split(index: usize) -> (usize, usize) {
        (index >> PAGE_BITS, index & (PAGE - 1))
    }

    #[inline]
    fn pointer(&self, page: usize) -> Option<&UnmodelledAtomicPtr<Page>> {
        let (segment, page) = Self::coordinates(page);
        self.segments.get(segment)?.get().map(|pages| &pages[page])
    }

    /// Page `page`, if it exists: valid while the caller holds one of its slots or is pinned (see
    /// the module docs).
    #[inline]
    pub(crate) fn get(&self, page: usize) -> Option<&Page> {
        #[cfg(delaywheel_loom)]
        if !self.live.get(page)?.load(Ordering::Acquire) {
            return None;
        }
        let page = self.pointer(page)?.load(Ordering::Acquire);
        // SAFETY: a non-null pointer in the directory is a live page (`create` stores what
        // `allocate` made), freed only by `free` after it was retired and a grace period passed;
        // the caller holds a slot of the page (then it is not retired) or is pinned since before
        // this load (then the grace period of any retire after this load waits for it): see the
        // module docs.
        (!page.is_null()).then(|| unsafe { &*page })
    }

    /// Creates page `page` (and its segment's directory) if it does not exist.
    pub(crate) fn create(&self, page: usize) {
        let (segment, at) = Self::coordinates(page);
        let pages = self.segments[segment]
            .get_or_init(|| (0..1usize << segment).map(|_| UnmodelledAtomicPtr::default()).collect());
        let changes = self.changes.lock();
        let created = pages[at].load(Ordering::Relaxed).is_null();
        if created {
            pages[at].store(self.allocate(), Ordering::Release);
        }
        drop(changes);
        #[cfg(delaywheel_loom)]
        if created {
            self.live[page].store(true, Ordering::Release);
        }
        #[cfg(not(delaywheel_loom))]
        let _ = created;
    }

    /// Takes page `page` out of the directory (see the module docs); `None` if it does not exist.
    pub(crate) fn retire(&self, page: usize) -> Option<Retired> {
        let pointer = self.pointer(page)?;
        #[cfg(delaywheel_loom)]
        self.live[page].store(false, Ordering::Release);
        let _changes = self.changes.lock();
        let page = pointer.swap(ptr::null_mut(), Ordering::AcqRel);
        (!page.is_null()).then_some(Retired(page))
    }

    /// Frees retired pages. Only after a grace period that began after their retire
    /// (`readers.rs`), and only with every slot of theirs free (nobody holds one): the caller's
    /// word for both.
    pub(crate) fn free(&self, retired: Vec<Retired>) {
        #[cfg(delaywheel_loom)]
        for retired in retired {
            // SAFETY: under loom a freed page is never deallocated (the graveyard keeps it).
            let page = unsafe { &*retired.0 };
            assert!(
                page.slots.iter().all(|slot| !slot.0.is_locked()),
                "a page freed while a slot of it is locked"
            );
            page.freed.store(true, Ordering::SeqCst);
            self.graveyard.lock().push(retired);
        }
        // `retire` took each out of the directory: it is freed once.
        #[cfg(not(delaywheel_loom))]
        self.deallocate(retired.into_iter().map(|retired| retired.0).collect());
    }

    /// Frees every page in the directory (it is being dropped: no handle is left; a page retired
    /// and not freed has only vacant slots, and its memory goes with the source).
    fn free_all(&mut self) {
        let mut live = Vec::new();
        for pages in self.segments.iter_mut().filter_map(|segment| segment.get_mut()) {
            for pointer in pages.iter_mut() {
                let page = std::mem::replace(pointer.get_mut(), ptr::null_mut());
                if !page.is_null() {
                    live.push(page);
                }
            }
        }
        #[cfg(delaywheel_loom)]
        live.extend(self.graveyard.get_mut().drain(..).map(|retired| retired.0));
        self.deallocate(live);
    }

    /// The slot of `id`, if its page exists (see [`get`](Pages::get) for how long it is valid).
    #[inline]
    pub(crate) fn slot(&self, id: EntryId) -> Option<&Slot> {
        let (page, slot) = Self::split(id.index());
        self.get(page).map(|page| page.slot(slot))
    }

    /// Locks the slot of `id`, if its page exists (see [`get`](Pages::get)). Under loom, a page
    /// freed while this waited for or took the lock fails the model.
    #[inline]
    pub(crate) fn lock(&self, id: EntryId) -> Option<crate::entry::EntryState<'_>> {
        let (page, slot) = Self::split(id.index());
        let page = self.get(page)?;
        let state = page.slot(slot).0.lock();
        #[cfg(delaywheel_loom)]
        assert!(!page.freed.load(Ordering::SeqCst), "a slot of a freed page was locked");
        Some(state)
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        self.free_all();
    }
}

#[cfg(all(test, not(delaywheel_loom)))]
mod tests {
    use super::*;

    #[test]
    fn coordinates_cover_every_page_once_in_order() {
        assert_eq!(Pages::coordinates(0), (0, 0));
        assert_eq!(Pages::coordinates(1), (1, 0));
        assert_eq!(Pages::coordinates(3), (2, 0));
        assert_eq!(Pages::coordinates(6), (2, 3));
        let (segment, page) = Pages::coordinates(EntryId::MAX_INDEX as usize >> PAGE_BITS);
        assert!(segment < SEGMENTS && page < 1 << segment);
    }

    #[test]
    fn a_retired_page_is_gone_and_can_be_created_again() {
        let mut pages = Pages::new();
        assert!(pages.get(3).is_none());
        pages.create(3);
        assert!(pages.get(3).is_some() && pages.get(2).is_none());
        let retired = pages.retire(3).expect("page 3 exists");
        assert!(pages.get(3).is_none() && pages.retire(3).is_none());
        pages.free(vec![retired]);
        pages.create(3);
        assert!(pages.get(3).is_some());
        pages.free_all();
        assert!(pages.get(3).is_none());
    }
}
