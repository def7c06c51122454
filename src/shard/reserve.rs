//! The reserve: room written ahead for a whole core (`TimerBuilder::capacity`), which whichever
//! shard grows takes from (docs/lean_core.md, "Room written ahead across shards").
//!
//! **What it holds.** Units of [`unit_slots`] slots (256 slots of 48 bytes: 12 KiB, three system
//! pages), made resident when the core is built: one anonymous mapping of ⌈n / unit⌉ units
//! (`entry/os.rs`'s `map(bytes, populate = true)`, `MAP_POPULATE`), kept as a list of runs
//! (address, units) under the reserve's own lock. A shard's slab (`slab/slots.rs`) that finds
//! no vacant slot and its mapping full takes a [`Run`] ([`Reserve::take`]: at least
//! [`RUN_UNITS`] units, about what it already holds, at most what the reserve holds: one run a
//! doubling) and moves it to the end of its slots with `mremap`, resident, without a fault; a
//! shrink moves back as many units as its slab took and has not given back ([`Reserve::give_back`]).
//! The reserve never reads or writes the slots' bytes: a slab writes a run's slots vacant once
//! the run is its own.
//!
//! **The protocol.** The reserve's lock is taken only inside a shard's lock (the slab grows and
//! shrinks under its shard's), never the other way round, and nothing else is done under it: it
//! guards only the list of runs. A run taken is off the list before
//! the unlock, so two shards growing at once take disjoint runs, and the units the reserve holds
//! and those the slabs hold of it add up to the capacity at every unlock. Reading the list's head
//! outside the lock lets two shards take the same run (the seeded fault
//! `shard_core_reserve_head_read_outside_lock`, which the loom model
//! `shard_core::two_shards_growing_at_once_take_their_own_runs` catches).
//!
//! **Without mappings.** Elsewhere than Linux, and under loom (whose models do not run system
//! calls), a run is bookkeeping only: its address is its first unit's index, and a slab given one
//! grows its vector by the run's slots. So the loom models check the protocol, not the pages.
//! Elsewhere than Linux a core does not build a reserve at all: the capacity is written into the
//! building thread's shard (`core/room.rs`).

use crate::entry::os::OS_PAGE;
use crate::sync::Mutex;

/// The least units a run holds (16,384 slots of 48 bytes, 768 KiB): one `mremap` moves it.
pub(crate) const RUN_UNITS: usize = 64;

/// Whether runs are pages moved by `mremap` (Linux, outside loom) or bookkeeping only.
pub(crate) const MAPPED: bool =
    cfg!(all(any(target_os = "linux", target_os = "android"), not(delaywheel_loom)));

/// Slots a unit holds, for slots of `slot_bytes`: 256, or more if 256 slots are not whole system
/// pages (the least number of slots that are, for a slot size not a multiple of 16).
pub(crate) const fn unit_slots(slot_bytes: usize) -> usize {
    let (mut a, mut b) = (slot_bytes, OS_PAGE);
    while b != 0 {
        (a, b) = (b, a % b);
    }
    let least = OS_PAGE / a;
    if least > 256 {
        least
    } else {
        256
    }
}

/// Units taken from a reserve: where they are (an address; without mappings, the first unit's
/// index) and how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Run {
    pub(crate) at: usize,
    pub(crate) units: usize,
}

/// The reserve (module docs).
pub(crate) struct Reserve {
    pub(super) runs: Mutex<Vec<Run>>,
    /// Bytes of a unit: whole system pages.
    unit_bytes: usize,
    /// The units it was built with.
    capacity: usize,
}

impl Reserve {
    /// A reserve of at least `slots` slots of `slot_bytes` each, resident (module docs).
    pub(crate) fn new(slots: usize, slot_bytes: usize) -> Reserve {
        let unit_bytes = unit_slots(slot_bytes) * slot_bytes;
        debug_assert_eq!(unit_bytes % OS_PAGE, 0);
        let units = slots.div_ceil(unit_slots(slot_bytes));
        let mut list = Vec::new();
        if units > 0 {
            list.push(Run { at: map(units * unit_bytes), units });
        }
        Reserve { runs: Mutex::new(list), unit_bytes, capacity: units }
    }

    /// Bytes of a unit.
    pub(crate) fn unit_bytes(&self) -> usize {
        self.unit_bytes
    }

    /// The units it was built with: those it holds and those the slabs took and hold.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// The units it holds now: the runs on its list.
    pub(crate) fn held(&self) -> usize {
        self.runs.lock().iter().map(|run| run.units).sum()
    }

    /// A run of `want` units (at least one), or of what the last run on the list holds if less;
    /// `None` if the reserve is empty. Under its lock, which the caller takes inside its shard's.
    pub(crate) fn take(&self, want: usize) -> Option<Run> {
        debug_assert!(want > 0);
        if fault!("shard_core_reserve_head_read_outside_lock") {
            return super::faults::take_reading_head_outside_lock(self, want);
        }
        let mut runs = self.runs.lock();
        let last = runs.last_mut()?;
        let units = want.min(last.units);
        let run = Run { at: last.at + (last.units - units) * self.stride(), units };
        last.units -= units;
        if last.units == 0 {
            runs.pop();
        }
        Some(run)
    }

    /// Puts `run` back (resident, its slots' bytes of any value), under its lock, which the caller
    /// takes inside its shard's.
    pub(crate) fn give_back(&self, run: Run) {
        self.runs.lock().push(run);
    }

    /// What a unit adds to a run's address: its bytes, or 1 without mappings.
    pub(super) fn stride(&self) -> usize {
        if MAPPED {
            self.unit_bytes
        } else {
            1
        }
    }
}

impl Drop for Reserve {
    fn drop(&mut self) {
        for run in self.runs.lock().drain(..) {
            unmap(run.at, run.units * self.unit_bytes);
        }
    }
}

impl std::fmt::Debug for Reserve {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reserve").field("capacity", &self.capacity).field("held", &self.held()).finish()
    }
}

/// `bytes` of resident memory (its address), or the index 0 without mappings.
fn map(bytes: usize) -> usize {
    #[cfg(all(any(target_os = "linux", target_os = "android"), not(delaywheel_loom)))]
    return crate::entry::os::map(bytes, true).as_ptr() as usize;
    #[cfg(not(all(any(target_os = "linux", target_os = "android"), not(delaywheel_loom))))]
    {
        let _ = bytes;
        0
    }
}

/// Unmaps a run the reserve holds (nothing without mappings).
fn unmap(at: usize, bytes: usize) {
    #[cfg(all(any(target_os = "linux", target_os = "android"), not(delaywheel_loom)))]
    // SAFETY: a run on the reserve's list: whole pages of its mapping (or moved back into one by a
    // shrink, `slab/slots.rs`), which the reserve alone refers to, unmapped once as it drops.
    unsafe {
        crate::entry::os::unmap(std::ptr::NonNull::new(at as *mut u8).expect("a run's address"), bytes)
    };
    #[cfg(not(all(any(target_os = "linux", target_os = "android"), not(delaywheel_loom))))]
    let _ = (at, bytes);
}
