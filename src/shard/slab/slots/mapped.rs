//! The slots in a mapping of their own (Linux, outside loom; `slots.rs` says how it grows and
//! shrinks).

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::ptr::NonNull;

use super::{unit_slots, Arc, Reserve, Room, Run};
use crate::entry::os::{self, OS_PAGE};

pub(in super::super) struct Slots<T> {
    /// The mapping's first byte (dangling while `bytes` is 0).
    at: NonNull<T>,
    /// Slots written, from the first.
    len: usize,
    /// The mapping's size: 0 (none), or whole system pages.
    bytes: usize,
    /// Where each piece of the mapping ends, in bytes from `at`, ascending (the last is `bytes`):
    /// `mremap` moves a range within one mapping only, so a range is moved piece by piece.
    ends: Vec<usize>,
    room: Option<Room>,
}

// SAFETY: the slots own their mapping and the `T`s written in it, as a `Vec<T>` does; nothing in
// them is bound to a thread.
unsafe impl<T: Send> Send for Slots<T> {}
// SAFETY: `&Slots` only reads the `T`s (`T: Sync`), as a `&Vec<T>` does.
unsafe impl<T: Sync> Sync for Slots<T> {}

impl<T> Slots<T> {
    /// Slots of `T` fit a mapping: not zero-sized, aligned within a page (evaluated, and failing
    /// the build, where `new` is used for a `T` that does not).
    const FITS: () = assert!(std::mem::size_of::<T>() > 0 && std::mem::align_of::<T>() <= OS_PAGE);

    pub(in super::super) const fn new() -> Self {
        let () = Self::FITS;
        Slots { at: NonNull::dangling(), len: 0, bytes: 0, ends: Vec::new(), room: None }
    }

    /// Slots the mapping holds.
    #[inline]
    pub(in super::super) fn capacity(&self) -> usize {
        self.bytes / std::mem::size_of::<T>()
    }

    /// Writes `value` after the last slot, growing the mapping if it is full (fresh pages).
    #[inline]
    pub(in super::super) fn push(&mut self, value: T) {
        if self.len == self.capacity() {
            self.grow(self.len + 1);
        }
        // SAFETY: `len < capacity`: the slot lies in the mapping, aligned (a page-aligned base,
        // slots of `T`), not written yet.
        unsafe { self.at.as_ptr().add(self.len).write(value) };
        self.len += 1;
    }

    /// Drops the slots from `len` on (all of them, as a `Vec` does, also if one's drop panics).
    pub(in super::super) fn truncate(&mut self, len: usize) {
        let old = self.len;
        if len >= old {
            return;
        }
        self.len = len;
        // SAFETY: slots `len..old` were written and are no longer counted (`len` set first, so a
        // panicking drop leaves none counted): each dropped once.
        unsafe {
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(self.at.as_ptr().add(len), old - len))
        };
    }

    /// Grows the mapping (fresh pages) to hold at least `more` slots past those written.
    pub(in super::super) fn reserve_exact(&mut self, more: usize) {
        if self.capacity() - self.len < more {
            let bytes =
                self.len.checked_add(more).and_then(|slots| slots.checked_mul(std::mem::size_of::<T>()));
            self.resize(self.round(bytes.expect("capacity overflow")));
        }
    }

    pub(in super::super) fn attach(&mut self, reserve: Arc<Reserve>) {
        assert!(reserve.is_mapped(), "a reserve of pages: its runs are moved into the mapping");
        debug_assert_eq!(
            reserve.unit_bytes(),
            unit_slots(std::mem::size_of::<T>()) * std::mem::size_of::<T>()
        );
        self.room = Some(Room { reserve, taken: 0 });
    }

    pub(in super::super) fn taken(&self) -> usize {
        self.room.as_ref().map_or(0, |room| room.taken)
    }

    /// Takes a run from the reserve, of at most `most` slots, and moves it to the end of the
    /// mapping (module docs): the slots it added to the capacity (0: no reserve, or an empty one).
    #[cold]
    pub(in super::super) fn take_run(&mut self, most: usize) -> usize {
        let before = self.capacity();
        let Some(room) = self.room.as_mut() else { return 0 };
        let unit = room.reserve.unit_bytes();
        let most = most.saturating_sub(before) / unit_slots(std::mem::size_of::<T>());
        let Some(run) = room.take(self.bytes / unit, most) else { return 0 };
        let run_bytes = run.units * unit;
        let at = NonNull::new(run.at as *mut u8).expect("a run's address");
        if self.bytes == 0 {
            // The run's pages become the mapping.
            (self.at, self.bytes, self.ends) = (at.cast(), run_bytes, vec![run_bytes]);
        } else {
            let old = self.bytes;
            self.resize(old + run_bytes);
            // SAFETY: the run is whole pages (units of whole `OS_PAGE`s, the system's page: the
            // reserve is mapped) within one mapping of the kernel's, the reserve's or one a shrink
            // moved them to, now this slab's alone (`Reserve::take` hands out disjoint runs);
            // `old..old + run_bytes` is whole pages of the mapping, the tail the resize just added,
            // which only these slots refer to and nothing reads: the run replaces it.
            unsafe { os::move_to(at, run_bytes, self.byte(old)) };
            self.ends.pop();
            if self.ends.last() != Some(&old) {
                self.ends.push(old);
            }
            self.ends.push(self.bytes);
        }
        self.capacity() - before
    }

    /// Drops the slots from `len` on without running their drops (the caller's vacant slots, which
    /// own nothing): O(1), where [`truncate`](Slots::truncate) reads every slot.
    pub(in super::super) fn forget_from(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Gives back the mapping's pages past the slots written, to a whole grain (module docs).
    #[cfg(test)]
    pub(in super::super) fn shrink_to_fit(&mut self) {
        let mut cut = Cut::default();
        while !self.cut(usize::MAX, &mut cut) {}
    }

    /// Cuts at most `most` bytes (at least a grain) off the top of the mapping, down to a whole
    /// grain past the slots written: whether that is where it ends (module docs). The system
    /// calls that need no lock, made resident the units given back to the reserve and unmapped the
    /// rest, are left to `out`, which makes them when it drops: the pages cut are out of the
    /// mapping at once (a growth meanwhile never reaches them: they stay mapped, the kernel's to
    /// skip, until `out` unmaps them).
    ///
    /// Piece by piece: the units given back move out of a piece to a fresh mapping, and only the
    /// rest of the piece is unmapped. The hole a move leaves is no longer this mapping's: the
    /// kernel may place any mapping there at once (the next piece's fresh one, another thread's),
    /// so no unmap here spans one.
    pub(in super::super) fn cut(&mut self, most: usize, out: &mut Cut) -> bool {
        let keep = self.round(self.len * std::mem::size_of::<T>());
        if keep >= self.bytes {
            return true;
        }
        let grain = self.round(1);
        let floor = keep.max(self.bytes.saturating_sub((most / grain).max(1).saturating_mul(grain)));
        let mut start = 0;
        for &end in &self.ends {
            let lo = start.max(floor);
            start = end;
            if lo >= end {
                continue;
            }
            let mut cut = lo;
            if let Some(room) = self.room.as_mut() {
                // Whole units of the piece (the grain keeps every piece's ends on units), as many
                // as the slab took and has not given back.
                let unit = room.reserve.unit_bytes();
                let units = room.taken.min((end - lo) / unit);
                if units > 0 {
                    let to = os::map(units * unit, false);
                    move_out(self.at.cast(), &self.ends, lo..lo + units * unit, to);
                    let reserve = Arc::clone(room.release(units));
                    out.runs.push((reserve, Run { at: to.as_ptr() as usize, units }));
                    cut += units * unit;
                }
            }
            if cut < end {
                out.unmaps.push((self.byte(cut), end - cut));
            }
        }
        self.ends.retain(|&end| end < floor);
        if floor > 0 {
            self.ends.push(floor);
        } else {
            self.at = NonNull::dangling();
        }
        self.bytes = floor;
        floor == keep
    }

    /// `bytes` rounded up to the mapping's grain: a unit of the reserve's if it has one (so that
    /// every piece is whole units, and a shrink gives whole units back; a reserve is mapped only
    /// where the system's page is `OS_PAGE`), else the system's page (which may be 16 or 64 KiB:
    /// the mapping is resized and cut only at its pages).
    fn round(&self, bytes: usize) -> usize {
        let grain = self.room.as_ref().map_or_else(os::system_page, |room| room.reserve.unit_bytes());
        bytes.div_ceil(grain).checked_mul(grain).expect("capacity overflow")
    }

    /// Resizes the mapping to `bytes` (more than it has), keeping the slots: remapped while it
    /// is one piece, else moved piece by piece into a fresh mapping.
    fn resize(&mut self, bytes: usize) {
        // Not a debug assertion: a smaller size would unmap written slots.
        assert!(bytes > self.bytes, "a mapping of {} bytes resized to {bytes}", self.bytes);
        debug_assert_eq!(bytes % OS_PAGE, 0);
        let old = self.bytes;
        self.at = match self.ends.len() {
            0 => os::map(bytes, false),
            // SAFETY: one piece: whole pages (a multiple of the grain, from a page-aligned base)
            // within one mapping of the kernel's (one of ours, or part of one: a run adopted from
            // the reserve's), which only these slots refer to; `self.at` is replaced by the result
            // at once.
            1 => unsafe { os::remap(self.at.cast(), old, bytes) },
            _ => {
                let to = os::map(bytes, false);
                move_out(self.at.cast(), &self.ends, 0..old, to);
                to
            }
        }
        .cast();
        if self.ends.len() <= 1 {
            self.ends.clear();
        }
        self.ends.push(bytes);
        self.bytes = bytes;
    }

    /// Grows the mapping fresh to hold at least `slots` slots: doubling.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, slots: usize) {
        let slots = slots.max(self.capacity().saturating_mul(2)).max(OS_PAGE / std::mem::size_of::<T>());
        self.resize(self.round(slots.checked_mul(std::mem::size_of::<T>()).expect("capacity overflow")));
    }

    /// The byte `offset` of the mapping (within it).
    fn byte(&self, offset: usize) -> NonNull<u8> {
        debug_assert!(offset <= self.bytes);
        // SAFETY: `offset <= bytes`: within the mapping or one past it; not null.
        unsafe { NonNull::new_unchecked(self.at.as_ptr().cast::<u8>().add(offset)) }
    }
}

/// Moves `range` of the mapping at `at`, whose pieces end at `ends`, to `to`, piece by piece.
fn move_out(at: NonNull<u8>, ends: &[usize], range: std::ops::Range<usize>, to: NonNull<u8>) {
    let mut start = 0;
    for &end in ends {
        let (lo, hi) = (start.max(range.start), end.min(range.end));
        if lo < hi {
            // SAFETY: `lo..hi` is whole pages (the pieces' ends and the range's are on the grain)
            // within one piece of the mapping, itself within one mapping of the kernel's (a
            // mapping of its own, or part of one), which only the caller refers to;
            // `to + (lo - range.start)` starts whole pages of the caller's fresh mapping of at
            // least `range.len()` bytes, disjoint from it, which nothing reads. Both offsets are
            // within their mappings.
            unsafe {
                os::move_to(
                    NonNull::new_unchecked(at.as_ptr().add(lo)),
                    hi - lo,
                    NonNull::new_unchecked(to.as_ptr().add(lo - range.start)),
                )
            };
        }
        start = end;
    }
}

/// What a cut of the slots leaves to do outside their lock ([`Slots::cut`]): the runs given
/// back, moved out of the mapping, to make resident and hand to their reserve, and the pages cut
/// off, to unmap. Done when it drops.
#[derive(Default)]
pub(crate) struct Cut {
    runs: Vec<(Arc<Reserve>, Run)>,
    unmaps: Vec<(NonNull<u8>, usize)>,
}

// SAFETY: the pages it names are its own (out of the slots' mapping, referred to by nothing else),
// as a `Vec<u8>`'s buffer is; the reserves are `Sync`.
unsafe impl Send for Cut {}

impl Drop for Cut {
    fn drop(&mut self) {
        for (reserve, run) in self.runs.drain(..) {
            let bytes = run.units * reserve.unit_bytes();
            let at = NonNull::new(run.at as *mut u8).expect("a run's address");
            // SAFETY: the whole pages a cut moved to `at`, the whole of a mapping of ours that
            // only this cut refers to until the reserve has it; populating keeps their bytes (of
            // any value: the reserve never reads them).
            unsafe { os::populate(at, bytes) };
            reserve.give_back(run);
        }
        for (at, bytes) in self.unmaps.drain(..) {
            // SAFETY: whole system pages (the cut's bounds, the pieces' ends and the units moved
            // out are multiples of the grain, itself of the system's page; the mapping's base is
            // aligned to it) of one piece, cut off the slots' mapping (no hole: the units moved
            // out lie before them), which nothing refers to: unmapped once.
            unsafe { os::unmap(at, bytes) };
        }
    }
}

impl<T> Drop for Slots<T> {
    /// Drops the slots written, then unmaps the mapping, also if a slot's drop panics.
    fn drop(&mut self) {
        /// Unmaps the mapping when dropped.
        struct Unmap(NonNull<u8>, usize);
        impl Drop for Unmap {
            fn drop(&mut self) {
                if self.1 > 0 {
                    // SAFETY: the slots' whole mapping (whole pages of every piece: `unmap` takes a
                    // range over several mappings), which only they refer to, unmapped once,
                    // after their drops.
                    unsafe { os::unmap(self.0, self.1) };
                }
            }
        }
        let _unmap = Unmap(self.at.cast(), self.bytes);
        self.truncate(0);
    }
}

impl<T> std::ops::Deref for Slots<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        // SAFETY: the first `len` slots are written, aligned (a page-aligned base, or dangling with
        // `len` 0), in the mapping.
        unsafe { std::slice::from_raw_parts(self.at.as_ptr(), self.len) }
    }
}

impl<T> std::ops::DerefMut for Slots<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as `deref`, and `&mut self` excludes every other reference to the slots.
        unsafe { std::slice::from_raw_parts_mut(self.at.as_ptr(), self.len) }
    }
}
