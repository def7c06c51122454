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
//! **The protocol.** The reserve's lock is taken inside a shard's lock (a slab grows under its
//! shard's), or with no other lock held (a shrink's cut hands its runs back after its shard's
//! unlock, `slab/slots.rs`), never the other way round, and nothing else is done under it: it
//! guards only the list of runs. A run taken is off the list before
//! the unlock, so two shards growing at once take disjoint runs, and the units the reserve holds
//! and those the slabs hold of it add up to the capacity at every unlock, but for the runs a cut
//! has taken off its slab and not yet handed back (between its shard's unlock and its own). Reading the list's head
//! outside the lock lets two shards take the same run (the seeded fault
//! `shard_core_reserve_head_read_outside_lock`, which the loom model
//! `shard_core::two_shards_growing_at_once_take_their_own_runs` catches). A shrink's give-back is one
//! critical section too: writing back a list read under an earlier hold loses a run another shard
//! took meanwhile (`shard_core_reserve_give_back_outside_lock`, which
//! `shard_core::a_shrink_giving_back_racing_a_growth_adds_up` catches).
//!
//! **Without mappings.** Elsewhere than Linux, on Linux where the system's page is not
//! [`OS_PAGE`] ([`mapped`]), and under loom (whose models do not run system calls), a run is
//! bookkeeping only: its address is its first unit's index, and a slab given one
//! grows its vector by the run's slots. So the loom models check the protocol, not the pages.
//! Outside loom such a core does not build a reserve at all: the capacity is written into the
//! building thread's shard (`core/room.rs`).

use crate::entry::os::OS_PAGE;
use crate::sync::Mutex;

/// The least units a run holds (16,384 slots of 48 bytes, 768 KiB): one `mremap` moves it.
pub(crate) const RUN_UNITS: usize = 64;

/// Whether runs are pages moved by `mremap` (Linux outside loom, where the system's page is
/// [`OS_PAGE`]: a unit is whole pages of that size, and runs lie at unit steps within one mapping)
/// or bookkeeping only. Where the system's page is larger (16 or 64 KiB) a core builds no reserve,
/// as elsewhere than Linux (`core/room.rs`).
pub(crate) fn mapped() -> bool {
    cfg!(all(any(target_os = "linux", target_os = "android"), not(delaywheel_loom)))
        && crate::entry::os::system_page() == OS_PAGE
}

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
    /// Whether its runs are pages ([`mapped`] when it was built) or bookkeeping only.
    mapped: bool,
}

impl Reserve {
    /// A reserve of at least `slots` slots of `slot_bytes` each, resident (module docs).
    pub(crate) fn new(slots: usize, slot_bytes: usize) -> Reserve {
        let unit_bytes = unit_slots(slot_bytes) * slot_bytes;
        debug_assert_eq!(unit_bytes % OS_PAGE, 0);
        let units = slots.div_ceil(unit_slots(slot_bytes));
        let mapped = mapped();
        let mut list = Vec::new();
        if units > 0 {
            let bytes = units.checked_mul(unit_bytes).expect("capacity overflow");
            list.push(Run { at: if mapped { map(bytes) } else { 0 }, units });
        }
        Reserve { runs: Mutex::new(list), unit_bytes, capacity: units, mapped }
    }

    /// Whether its runs are pages, which a slab moves into its mapping (else bookkeeping only).
    #[cfg_attr(
        not(all(any(target_os = "linux", target_os = "android"), not(delaywheel_loom))),
        allow(dead_code)
    )]
    pub(crate) fn is_mapped(&self) -> bool {
        self.mapped
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
    ///
    /// The run is off the list before the unlock: the runs it hands out are disjoint from each
    /// other and from those it holds, so long as every run given back is units taken from it
    /// ([`give_back`](Reserve::give_back)). The slots' `unsafe` code (`slab/slots/mapped.rs`)
    /// relies on this: a run's pages are the taker's alone.
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
    /// takes inside its shard's or with no lock held.
    ///
    /// The run is units the caller took from this reserve and has not given back (moved to any
    /// address: whole pages of a mapping of its own that nothing else refers to, or bookkeeping
    /// only, as the reserve is), which it does not refer to again: [`take`](Reserve::take) hands
    /// them to another slab, and the reserve unmaps them as it drops.
    pub(crate) fn give_back(&self, run: Run) {
        if fault!("shard_core_reserve_give_back_outside_lock") {
            return super::faults::give_back_writing_list_outside_lock(self, run);
        }
        self.runs.lock().push(run);
    }

    /// What a unit adds to a run's address: its bytes, or 1 without mappings.
    pub(super) fn stride(&self) -> usize {
        if self.mapped {
            self.unit_bytes
        } else {
            1
        }
    }
}

impl Drop for Reserve {
    fn drop(&mut self) {
        if self.mapped {
            for run in self.runs.lock().drain(..) {
                unmap(run.at, run.units * self.unit_bytes);
            }
        }
    }
}

impl std::fmt::Debug for Reserve {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reserve").field("capacity", &self.capacity).field("held", &self.held()).finish()
    }
}

/// `bytes` of resident memory (its address); 0 without mappings (not called).
fn map(bytes: usize) -> usize {
    #[cfg(all(any(target_os = "linux", target_os = "android"), not(delaywheel_loom)))]
    return crate::entry::os::map(bytes, true).as_ptr() as usize;
    #[cfg(not(all(any(target_os = "linux", target_os = "android"), not(delaywheel_loom))))]
    {
        let _ = bytes;
        0
    }
}

/// Unmaps a run a mapped reserve holds (nothing without mappings: not called).
fn unmap(at: usize, bytes: usize) {
    #[cfg(all(any(target_os = "linux", target_os = "android"), not(delaywheel_loom)))]
    // SAFETY: a run on a mapped reserve's list: whole pages (units of whole `OS_PAGE`s, the
    // system's page) of its mapping, or of a mapping a shrink moved them to
    // (`slab/slots/mapped.rs`), which the reserve alone refers to (`give_back`'s rule), unmapped
    // once as it drops.
    unsafe {
        crate::entry::os::unmap(std::ptr::NonNull::new(at as *mut u8).expect("a run's address"), bytes)
    };
    #[cfg(not(all(any(target_os = "linux", target_os = "android"), not(delaywheel_loom))))]
    let _ = (at, bytes);
}
