//! A slab's array of slots ([`Slots`]) and the room it takes from a core's [`Reserve`].
//!
//! The hot path is a vector's: a base pointer, a bound (the slots written) and an index, through
//! `Deref<Target = [T]>`. On Linux (outside loom) the slots live in a mapping of their own, not in
//! the allocator's heap, so that pages can be moved into and out of it:
//!
//! * **Fresh growth** (no reserve, or an empty one): the mapping doubles (`os::remap` while it is
//!   one piece, else a fresh mapping into which each piece is moved); the new pages fault in on
//!   first touch, as a vector's would (no copy: page tables move).
//! * **A run from the reserve** ([`Slots::take_run`]): under the shard's lock, the slab takes a
//!   run of at least `RUN_UNITS` units, about what it holds already, at most what the reserve
//!   holds, and moves it to the end of its mapping (`os::move_to`, `mremap(MREMAP_FIXED)` over the
//!   pages a remap just added, untouched): resident, no fault. An empty slab adopts the run's pages
//!   as its mapping, with no system call.
//! * **Pieces.** A run moved in is a mapping of its own that the kernel may or may not merge with
//!   its neighbours, and `mremap` moves only ranges within one; so the slots keep where each piece
//!   ends (one more a growth: O(log n)) and move a range piece by piece.
//! * **Shrink** ([`Slots::cut`], a bounded number of bytes from the top at a time): the pages past
//!   the slots written (whole pages) are cut: as many whole units of them as the slab took from the
//!   reserve and has not given back move to a fresh address, and go back to the reserve as a run
//!   once made resident (`os::populate`); the rest go back to the kernel (`munmap`), each piece's
//!   on its own: no `munmap` spans the hole a move left, where the kernel may already have mapped
//!   something else. The populate, the run's return and the `munmap` come after the shard's
//!   unlock ([`Cut`]: the pages are out of the mapping already, still mapped, and the cut's
//!   alone). So what the reserve holds and what the slabs took of it add up to the capacity,
//!   resident, while the core lives, but for the runs of a cut on their way back.
//! * **Drop**: the slots written are dropped, then the mapping is unmapped.
//!
//! Elsewhere than Linux, and under loom, the slots are a `Vec`, and a run is bookkeeping: the
//! vector reserves the run's slots (`reserve.rs`, "Without mappings"). On Linux where the system's
//! page is not 4 KiB the slots are a mapping with no reserve (`reserve::mapped`), grown and cut in
//! whole system pages.

use super::super::reserve::{unit_slots, Reserve, Run, RUN_UNITS};
use crate::sync::Arc;

/// A core's reserve, as a slab sees it: the reserve and the units it took and holds.
struct Room {
    reserve: Arc<Reserve>,
    taken: usize,
}

impl Room {
    /// A run for slots holding `held` units already, of at most `most` units (module docs).
    fn take(&mut self, held: usize, most: usize) -> Option<Run> {
        let want = held.max(RUN_UNITS).min(most);
        if want == 0 {
            return None;
        }
        let run = self.reserve.take(want)?;
        self.taken += run.units;
        Some(run)
    }

    /// Counts `units` the slab no longer holds (some of those a shrink cut): the reserve, to give
    /// them back to.
    fn release(&mut self, units: usize) -> &Arc<Reserve> {
        self.taken -= units;
        &self.reserve
    }
}

// A module with `unsafe` code (see the crate's "Unsafe code"): slots in a mapping of their own.
#[cfg(all(any(target_os = "linux", target_os = "android"), not(delaywheel_loom)))]
#[allow(unsafe_code)]
mod mapped;
#[cfg(all(any(target_os = "linux", target_os = "android"), not(delaywheel_loom)))]
use mapped as imp;

#[cfg(not(all(any(target_os = "linux", target_os = "android"), not(delaywheel_loom))))]
mod imp {
    //! The slots in a `Vec` (module docs).

    use super::{unit_slots, Arc, Reserve, Room};

    pub(in super::super) struct Slots<T> {
        vec: Vec<T>,
        room: Option<Room>,
    }

    impl<T> Slots<T> {
        pub(in super::super) const fn new() -> Self {
            Slots { vec: Vec::new(), room: None }
        }

        pub(in super::super) fn capacity(&self) -> usize {
            self.vec.capacity()
        }

        #[inline]
        pub(in super::super) fn push(&mut self, value: T) {
            self.vec.push(value);
        }

        pub(in super::super) fn truncate(&mut self, len: usize) {
            self.vec.truncate(len);
        }

        pub(in super::super) fn reserve_exact(&mut self, more: usize) {
            self.vec.reserve_exact(more);
        }

        pub(in super::super) fn attach(&mut self, reserve: Arc<Reserve>) {
            self.room = Some(Room { reserve, taken: 0 });
        }

        pub(in super::super) fn taken(&self) -> usize {
            self.room.as_ref().map_or(0, |room| room.taken)
        }

        /// Takes a run of at most `most` slots: the slots it added to the capacity (0: none).
        pub(in super::super) fn take_run(&mut self, most: usize) -> usize {
            let unit = unit_slots(std::mem::size_of::<T>());
            let held = self.vec.capacity() / unit;
            let most = most.saturating_sub(self.vec.capacity()) / unit;
            let Some(run) = self.room.as_mut().and_then(|room| room.take(held, most)) else {
                return 0;
            };
            let before = self.vec.capacity();
            self.vec.reserve_exact(before - self.vec.len() + run.units * unit);
            self.vec.capacity() - before
        }

        /// Drops the slots from `len` on (a vector's truncate: it reads each one).
        pub(in super::super) fn forget_from(&mut self, len: usize) {
            self.vec.truncate(len);
        }

        /// Cuts the spare capacity, whole whatever `most` (one `realloc`): whether that is where
        /// it ends (always). The units given back go to the reserve at once.
        pub(in super::super) fn cut(&mut self, most: usize, _out: &mut Cut) -> bool {
            let _ = most;
            let before = self.vec.capacity();
            self.vec.shrink_to_fit();
            let unit = unit_slots(std::mem::size_of::<T>());
            if let Some(room) = self.room.as_mut() {
                let units = room.taken.min((before - self.vec.capacity()) / unit);
                if units > 0 {
                    room.release(units).give_back(super::Run { at: 0, units });
                }
            }
            true
        }
    }

    /// Nothing a vector's cut leaves to do.
    #[derive(Default)]
    pub(crate) struct Cut;

    impl<T> std::ops::Deref for Slots<T> {
        type Target = [T];

        #[inline]
        fn deref(&self) -> &[T] {
            &self.vec
        }
    }

    impl<T> std::ops::DerefMut for Slots<T> {
        #[inline]
        fn deref_mut(&mut self) -> &mut [T] {
            &mut self.vec
        }
    }
}

pub(crate) use imp::Cut;
pub(super) use imp::Slots;
