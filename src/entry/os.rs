//! What the task slab and the shard core take from the operating system: pages of memory that a
//! shrink can give back ([`PageSource`]), mappings of their own for the free lists' pool ([`map`],
//! [`remap`], [`unmap`]: `mapped_vec.rs`; and [`populate`], `move_to`: the shard core's reserve
//! of room written ahead and its slabs, `shard/reserve.rs`), and a system call of the shrink:
//! [`trim_heap`], glibc's `malloc_trim(0)` (elsewhere nothing), which gives the free pages inside
//! the allocator's arenas back to the kernel: what else a spike grew and its end freed sits among
//! other allocations, where a plain `free` keeps it resident. It takes an integer argument only
//! and touches no memory of the caller's. And [`shrink_buffer`]
//! cuts a vector's capacity back after a burst, discarding the pages cut off first
//! (`madvise(MADV_DONTNEED)` on the vector's own spare capacity): the advance's scratch vectors
//! and a fired batch's list of freed blocks, which glibc would otherwise keep resident at the top
//! of a thread's heap.
//!
//! ## Pages
//!
//! A [`PageSource`] hands out pages of one size (a multiple of 4 KiB) carved from chunks of
//! [`PAGES_PER_CHUNK`] pages, each chunk one anonymous `mmap` (so a page costs a system call per
//! 64 pages, not one each). The first chunk is faulted in as its pages are used; every later one
//! is made resident [`POPULATE_STEP`] pages at a time, as its first page of each step is handed
//! out (`madvise(MADV_POPULATE_WRITE)`, Linux 5.14; before that the pages fault in on first
//! touch): a source that needs a second chunk is growing (a burst of schedules), and one system
//! call that fills 8 pages costs less than the 8 or more page faults of first touch on the
//! scheduling thread, while the resident pages not handed out yet stay under a step (a whole chunk
//! populated at once would keep up to 63 pages resident unused: 252 to 1,008 KiB by the page
//! size). A page given back ([`PageSource::give_back`]) is emptied
//! with `madvise(MADV_DONTNEED)`, and so is the rest of the last chunk, not handed out yet: its
//! physical memory goes back to the kernel at once, whatever the allocator would do (glibc keeps
//! freed memory at the top of a thread's heap resident, and `malloc_trim` does not trim those),
//! and it is handed out again before a new chunk is mapped. The chunks are unmapped when the
//! source drops. Elsewhere than Linux the chunks come from `std::alloc` and a page given back
//! stays resident until the source drops.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::ptr::NonNull;

use crate::sync::UnmodelledMutex;

/// A mapping of its own: `map(bytes)` (a positive multiple of [`OS_PAGE`], zeroed), resized with
/// `remap` (pages past the new size go back to the kernel at once) and given back with `unmap`.
/// For the free lists' pool (`mapped_vec.rs`) and a shard's slots (`shard/slab/slots/mapped.rs`,
/// which also remaps, populates and unmaps parts of its mapping and pages moved into it, as the
/// contracts allow). Elsewhere than Linux, `std::alloc`.
pub(crate) use imp::{map, remap, unmap};

/// Makes mapped pages resident: a [`PageSource`]'s steps, a shard's run given back to its reserve.
/// (A shard's slots are a mapping on Linux only, and not under loom: `shard/slab/slots.rs`.)
#[cfg_attr(
    any(delaywheel_loom, not(any(target_os = "linux", target_os = "android"))),
    allow(unused_imports)
)]
pub(crate) use imp::populate;

/// Moves mapped pages to another address, resident ones without a fault (`shard/slab/slots.rs`, the
/// reserve of room written ahead). Linux only.
#[cfg(any(target_os = "linux", target_os = "android"))]
#[cfg_attr(delaywheel_loom, allow(unused_imports))]
pub(crate) use imp::move_to;

/// Pages mapped at once by a [`PageSource`].
pub(crate) const PAGES_PER_CHUNK: usize = 64;

/// Pages of a chunk made resident at once, past the first chunk (see the module docs).
const POPULATE_STEP: usize = 8;

/// The system's page: every page a [`PageSource`] hands out is aligned to it.
pub(crate) const OS_PAGE: usize = 4096;

/// The system's page size in bytes (Linux: `sysconf(_SC_PAGESIZE)`, read once; elsewhere
/// [`OS_PAGE`]): 16 or 64 KiB on some Linux systems (arm64, Android, ppc64), where the shard core
/// moves no runs of [`OS_PAGE`] pages (`shard/reserve.rs`, `mapped`) and a shard's mapping grows by
/// whole pages of this size (`shard/slab/slots/mapped.rs`).
pub(crate) use imp::system_page;

/// Pages of one size from chunks of mapped memory (see the module docs).
pub(crate) struct PageSource {
    page_bytes: usize,
    state: UnmodelledMutex<Chunks>,
}

struct Chunks {
    /// Every chunk mapped, by its first byte.
    mapped: Vec<NonNull<u8>>,
    /// Pages given back, handed out first.
    spare: Vec<NonNull<u8>>,
    /// Pages of the last chunk not handed out yet.
    left: usize,
}

// SAFETY: the source owns its chunks (raw memory, no thread-bound state); the pointers are only
// used under its lock, or handed to the taker of a page, who owns that page's bytes until it gives
// it back.
unsafe impl Send for PageSource {}
// SAFETY: see `Send`: every method takes the lock.
unsafe impl Sync for PageSource {}

impl PageSource {
    /// A source of pages of `page_bytes` bytes (a multiple of the system's 4 KiB page).
    pub(crate) fn new(page_bytes: usize) -> PageSource {
        assert!(page_bytes > 0 && page_bytes % OS_PAGE == 0, "pages of whole system pages");
        PageSource {
            page_bytes,
            state: UnmodelledMutex::new(Chunks { mapped: Vec::new(), spare: Vec::new(), left: 0 }),
        }
    }

    fn chunk_bytes(&self) -> usize {
        self.page_bytes * PAGES_PER_CHUNK
    }

    /// A page, aligned to 4 KiB, its bytes the caller's (of any value) until it gives it back.
    pub(crate) fn take(&self) -> NonNull<u8> {
        let mut chunks = self.state.lock();
        if let Some(page) = chunks.spare.pop() {
            return page;
        }
        if chunks.left == 0 {
            chunks.mapped.push(imp::map(self.chunk_bytes(), false));
            chunks.left = PAGES_PER_CHUNK;
        }
        chunks.left -= 1;
        let last = *chunks.mapped.last().expect("a chunk was mapped");
        let index = PAGES_PER_CHUNK - 1 - chunks.left;
        // SAFETY: page `index` of the last chunk: an offset within its `chunk_bytes` from its
        // non-null start, so in bounds and not null.
        let page = unsafe { NonNull::new_unchecked(last.as_ptr().add(index * self.page_bytes)) };
        // The first chunk is faulted in page by page as it is used (a small timer keeps a small
        // footprint); a source that needs a second one is growing, and gets the rest of each
        // later chunk made resident a step at a time (see the module docs).
        if chunks.mapped.len() > 1 && index % POPULATE_STEP == 0 {
            // SAFETY: pages `index .. index + POPULATE_STEP` of the last chunk (`PAGES_PER_CHUNK`
            // is a multiple of the step): within its mapping; populating keeps their bytes.
            unsafe { imp::populate(page, POPULATE_STEP * self.page_bytes) };
        }
        page
    }

    /// Bytes per page.
    pub(crate) fn page_bytes(&self) -> usize {
        self.page_bytes
    }

    /// Every chunk mapped so far, by its first byte, in address order: each holds
    /// [`PAGES_PER_CHUNK`] pages, and a chunk stays mapped while the source lives, so a shrink
    /// finds a page's chunk here (`page_reclaim.rs`). A copy, sorted out of the lock: one entry per
    /// [`PAGES_PER_CHUNK`] pages.
    pub(crate) fn chunks(&self) -> Vec<NonNull<u8>> {
        let mut chunks = self.state.lock().mapped.clone();
        chunks.sort_unstable();
        chunks
    }

    /// Gives back pages taken with [`take`](PageSource::take), which nobody uses any more: their
    /// memory goes back to the kernel (runs of adjacent pages in one call), and so does that of the
    /// pages of the last chunk not handed out yet (populated with it: a shrink leaves nothing
    /// resident that no page holds).
    ///
    /// # Safety
    ///
    /// Each page is one this source's `take` handed out and not given back since, and nothing
    /// reads, writes or refers to its bytes any more: they are zeroed, then handed out again.
    pub(crate) unsafe fn give_back(&self, mut pages: Vec<NonNull<u8>>) {
        pages.sort_unstable();
        let mut run = 0;
        while run < pages.len() {
            let mut end = run + 1;
            while end < pages.len()
                && pages[end].as_ptr() == pages[end - 1].as_ptr().wrapping_add(self.page_bytes)
            {
                end += 1;
            }
            // SAFETY: pages `run..end` are adjacent whole pages of this source's chunks that the
            // caller gives back unused (this function's contract).
            unsafe { imp::discard(pages[run], (end - run) * self.page_bytes) };
            run = end;
        }
        let mut chunks = self.state.lock();
        if let (Some(&last), left @ 1..) = (chunks.mapped.last(), chunks.left) {
            // SAFETY: pages `PAGES_PER_CHUNK - left ..` of the last chunk (`left` >= 1): an offset
            // within its `chunk_bytes` from its non-null start, so in bounds and not null.
            let rest = unsafe {
                NonNull::new_unchecked(last.as_ptr().add((PAGES_PER_CHUNK - left) * self.page_bytes))
            };
            // SAFETY: pages never handed out, so nobody refers to them; the source hands them out
            // later as fresh (their bytes of any value).
            unsafe { imp::discard(rest, left * self.page_bytes) };
        }
        chunks.spare.extend(pages);
    }
}

impl Drop for PageSource {
    fn drop(&mut self) {
        let bytes = self.chunk_bytes();
        for chunk in self.state.get_mut().mapped.drain(..) {
            // SAFETY: a chunk this source mapped with `imp::map(bytes, _)`, listed once, unmapped
            // once as the source drops; its pages' takers are gone (they live no longer than it).
            unsafe { imp::unmap(chunk, bytes) };
        }
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
#[cfg_attr(delaywheel_loom, allow(dead_code))]
mod imp {
    use std::ptr::NonNull;
    use std::sync::OnceLock;

    /// `bytes` of fresh anonymous memory, zeroed, aligned to the system's page; with `populate`,
    /// already resident (`MAP_POPULATE`).
    pub(crate) fn map(bytes: usize, populate: bool) -> NonNull<u8> {
        let populate = if populate { libc::MAP_POPULATE } else { 0 };
        // SAFETY: an anonymous private mapping at an address of the kernel's choosing: it touches
        // no existing memory. The result is checked for `MAP_FAILED`.
        let chunk = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | populate,
                -1,
                0,
            )
        };
        if chunk == libc::MAP_FAILED {
            std::alloc::handle_alloc_error(
                std::alloc::Layout::from_size_align(bytes, super::OS_PAGE).expect("a chunk's layout"),
            );
        }
        NonNull::new(chunk.cast()).expect("mmap returns no null mapping")
    }

    /// Makes `bytes` at `at` resident and writable without a page fault each
    /// (`MADV_POPULATE_WRITE`); a kernel without it (before 5.14) leaves them to fault in on
    /// first touch.
    ///
    /// # Safety
    ///
    /// `at..at + bytes` is whole system pages within mappings of ours (made by [`map`] or
    /// [`remap`], or moved there by [`move_to`]) that only the caller refers to.
    pub(crate) unsafe fn populate(at: NonNull<u8>, bytes: usize) {
        // SAFETY: whole pages of live mappings of ours (the caller's contract); populating faults
        // them in and keeps their contents. A failure (an older kernel) changes nothing.
        unsafe { libc::madvise(at.as_ptr().cast(), bytes, libc::MADV_POPULATE_WRITE) };
    }

    /// Moves or resizes the `old` bytes at `at` to `new` bytes (both positive multiples of
    /// [`OS_PAGE`](super::OS_PAGE)): the first `min(old, new)` bytes kept, the pages past `new` given back to the
    /// kernel at once.
    ///
    /// # Safety
    ///
    /// `at` is aligned to the system's page, and `at..at + old` rounded up to a whole system page
    /// (as `mremap` rounds it) lies within one mapping of the kernel's (one made by
    /// [`map`] or this function, or part of one: `mremap` moves a range within one mapping only,
    /// and the rest of that mapping stays where it is), all of them ours, which nothing refers to
    /// but the caller, who uses only the result from now on.
    pub(crate) unsafe fn remap(at: NonNull<u8>, old: usize, new: usize) -> NonNull<u8> {
        // SAFETY: `at..at + old` is whole pages within one mapping of ours that only the caller
        // refers to (the function's contract); `MREMAP_MAYMOVE` lets the kernel move them. The
        // result is checked for `MAP_FAILED`.
        let moved = unsafe { libc::mremap(at.as_ptr().cast(), old, new, libc::MREMAP_MAYMOVE) };
        if moved == libc::MAP_FAILED {
            std::alloc::handle_alloc_error(
                std::alloc::Layout::from_size_align(new, super::OS_PAGE).expect("a mapping's layout"),
            );
        }
        NonNull::new(moved.cast()).expect("mremap returns no null mapping")
    }

    /// Moves the `bytes` of mapped memory at `at` (whole system pages, all of them in mappings
    /// made by [`map`] or moved by this) to `to`, replacing what was mapped there: the pages
    /// themselves move (`mremap(MREMAP_MAYMOVE | MREMAP_FIXED)`: page tables, no copy, no fault),
    /// resident ones stay resident, and `at..at + bytes` is unmapped. Linux only: elsewhere no
    /// caller maps memory to move (`shard/slab/slots.rs` keeps a `Vec` there).
    ///
    /// # Safety
    ///
    /// `at..at + bytes` is whole system pages within one mapping of the kernel's (all of them
    /// ours: made by [`map`], [`remap`] or moved by this) that only the caller refers to, and
    /// `to..to + bytes` whole pages of ours (within mappings of ours, or holes among them) that
    /// only the caller refers to, disjoint from it, whose contents nothing reads again; the caller
    /// uses the pages only at `to` from now on.
    pub(crate) unsafe fn move_to(at: NonNull<u8>, bytes: usize, to: NonNull<u8>) {
        // SAFETY: both ranges are mappings of ours that only the caller refers to, disjoint (the
        // function's contract); `MREMAP_FIXED` replaces the target's pages, which nothing reads.
        // The result is checked for `MAP_FAILED`.
        let moved = unsafe {
            libc::mremap(
                at.as_ptr().cast(),
                bytes,
                bytes,
                libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                to.as_ptr().cast::<libc::c_void>(),
            )
        };
        if moved == libc::MAP_FAILED {
            std::alloc::handle_alloc_error(
                std::alloc::Layout::from_size_align(bytes, super::OS_PAGE).expect("a mapping's layout"),
            );
        }
        debug_assert_eq!(moved.cast::<u8>(), to.as_ptr(), "moved where asked");
    }

    /// Empties the whole system pages within `bytes` of mapped memory at `at` (whole
    /// [`OS_PAGE`](super::OS_PAGE)s): zero when next read. Where the system's page is larger, the
    /// pages the range covers only in part keep their contents: `madvise` would round the range
    /// out to them, over memory the caller does not own (a neighbouring page of a source's chunk,
    /// the heap past a vector).
    ///
    /// # Safety
    ///
    /// `at..at + bytes` is memory the caller owns (a source's pages, a vector's spare capacity),
    /// whose contents nothing reads again before writing them.
    pub(super) unsafe fn discard(at: NonNull<u8>, bytes: usize) {
        let page = system_page();
        let addr = at.as_ptr() as usize;
        let (start, end) = (addr.next_multiple_of(page), (addr + bytes) / page * page);
        if end <= start {
            return;
        }
        // SAFETY: `start..end` is whole system pages within the caller's range, so `madvise`
        // rounds nothing out; nothing reads their contents before writing them (the contract), and
        // `MADV_DONTNEED` only drops those contents (private anonymous memory reads back zeros). A
        // failure only leaves the memory resident.
        unsafe {
            libc::madvise(at.as_ptr().wrapping_add(start - addr).cast(), end - start, libc::MADV_DONTNEED)
        };
    }

    /// Unmaps the `bytes` at `chunk`: a whole mapping made by [`map`] (or [`remap`]ped to that
    /// size), or any whole pages of ours (`munmap` takes a range over several mappings, and skips
    /// holes).
    ///
    /// # Safety
    ///
    /// `chunk` is aligned to the system's page ([`system_page`]), and `chunk..chunk + bytes`
    /// rounded up to a whole system page (as `munmap` rounds it) lies within mappings of ours
    /// (made by [`map`] or [`remap`], or moved there by [`move_to`]) or holes between them, is
    /// unmapped once, and nothing refers to its pages any more.
    pub(crate) unsafe fn unmap(chunk: NonNull<u8>, bytes: usize) {
        // SAFETY: the function's contract: whole pages of ours (the range as `munmap` rounds it),
        // unmapped once, unused.
        unsafe { libc::munmap(chunk.as_ptr().cast(), bytes) };
    }

    pub(crate) fn system_page() -> usize {
        static PAGE: OnceLock<usize> = OnceLock::new();
        *PAGE.get_or_init(|| {
            // SAFETY: `sysconf` takes an integer and reads or writes no memory of ours.
            let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
            usize::try_from(page).ok().filter(|&page| page > 0).expect("the system's page size")
        })
    }

    pub(crate) fn trim_heap() {
        #[cfg(target_env = "gnu")]
        // SAFETY: `malloc_trim(pad)` takes an integer; it only walks and trims glibc's own arenas,
        // under their locks.
        unsafe {
            libc::malloc_trim(0);
        }
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
#[cfg_attr(delaywheel_loom, allow(dead_code))]
mod imp {
    use std::alloc::{self, Layout};
    use std::ptr::NonNull;

    fn layout(bytes: usize) -> Layout {
        Layout::from_size_align(bytes, super::OS_PAGE).expect("a chunk's layout")
    }

    pub(crate) fn map(bytes: usize, _populate: bool) -> NonNull<u8> {
        // SAFETY: a non-zero size (a positive number of pages).
        let chunk = unsafe { alloc::alloc_zeroed(layout(bytes)) };
        NonNull::new(chunk).unwrap_or_else(|| alloc::handle_alloc_error(layout(bytes)))
    }

    /// # Safety
    ///
    /// As on Linux: `at` is an allocation of `map` (or of this) of `old` bytes, used by nobody but
    /// the caller, who uses only the result from now on.
    pub(crate) unsafe fn remap(at: NonNull<u8>, old: usize, new: usize) -> NonNull<u8> {
        // SAFETY: allocated by `map` (or by this) with `layout(old)` (the contract), and `new` is
        // non-zero.
        let moved = unsafe { alloc::realloc(at.as_ptr(), layout(old), new) };
        NonNull::new(moved).unwrap_or_else(|| alloc::handle_alloc_error(layout(new)))
    }

    /// # Safety
    ///
    /// As on Linux (this does nothing).
    pub(super) unsafe fn discard(_at: NonNull<u8>, _bytes: usize) {}

    /// Nothing to do: `std::alloc`'s memory faults in as it is touched.
    ///
    /// # Safety
    ///
    /// As on Linux (this does nothing).
    pub(crate) unsafe fn populate(_at: NonNull<u8>, _bytes: usize) {}

    /// # Safety
    ///
    /// As on Linux: an allocation of `map` (or `remap`) of `bytes` bytes, freed once, unused.
    pub(crate) unsafe fn unmap(chunk: NonNull<u8>, bytes: usize) {
        // SAFETY: allocated by `map` with this layout, freed once, unused (the contract).
        unsafe { alloc::dealloc(chunk.as_ptr(), layout(bytes)) };
    }

    pub(crate) fn system_page() -> usize {
        super::OS_PAGE
    }

    pub(crate) fn trim_heap() {}
}

/// Gives the allocator's free pages back to the kernel, where it can.
#[cfg(not(delaywheel_loom))]
pub(crate) use imp::trim_heap;

/// Cuts `buffer`'s capacity down to `keep` items (or its length, if longer), first giving the
/// kernel back the whole pages of the capacity cut (Linux: `madvise(MADV_DONTNEED)`). A burst's
/// large buffer cut back into a thread's heap otherwise stays resident there: glibc trims a thread
/// heap's top only past its trim threshold (which freeing a large block raises, up to 64 MB), and
/// `malloc_trim` does not trim it at all.
pub(crate) fn shrink_buffer<T: Copy>(buffer: &mut Vec<T>, keep: usize) {
    let keep = keep.max(buffer.len());
    if buffer.capacity() <= keep {
        return;
    }
    let start = buffer.as_mut_ptr() as usize;
    let size = std::mem::size_of::<T>();
    let first = (start + keep * size).next_multiple_of(OS_PAGE);
    let last = (start + buffer.capacity() * size) / OS_PAGE * OS_PAGE;
    if last > first {
        // SAFETY: `first..last` is whole pages of the vector's spare capacity, past its last item:
        // memory its allocation owns (the allocator's own records lie outside a live allocation)
        // and that nothing reads (`T: Copy`: no drop either; `&mut` excludes other users), so
        // discarding it only zeroes it. What the allocator writes into the cut-off part once it is
        // freed lands on fresh zero pages.
        unsafe { imp::discard(NonNull::new(first as *mut u8).expect("inside an allocation"), last - first) };
    }
    buffer.shrink_to(keep);
}
