//! Room written ahead across shards (`TimerBuilder::capacity` on the core): [`Core::with_capacity`]
//! makes n slots resident at the build, usable by whichever shard grows, and [`Core::shrink`] gives
//! back what the shards grew beyond them.
//!
//! **On Linux** the core builds one [`Reserve`] (`shard/reserve.rs`): ⌈n / 256⌉ units of 256
//! slots in one mapping made resident at the build, shared by every shard's slab (each holds the
//! reserve, `slab/slots.rs`). A schedule that finds its shard's slab without a vacant slot and its
//! mapping full takes a run from the reserve under the shard's lock and moves it to the end of the
//! slab's slots by `mremap`, resident: it writes the run's slots vacant with no first-touch fault.
//! A shrink gives back to the reserve as many units as the slab took and has not given back, the
//! rest to the kernel; a slab that finds the reserve empty grows as a vector does (fresh pages).
//!
//! **The lock order**: the reserve's lock is taken inside a shard's (a growth is a schedule's
//! insert) or alone (a shrink's step hands its runs back after its shard's unlock), never a
//! shard's inside it, and never two shards' at once; it guards the reserve's list of runs only. So
//! the units the reserve holds and those the shards took add up to the capacity at every unlock
//! with no shrink's step under way ([`Core::reserve_units`]).
//!
//! **System calls under the shard's lock**: a growth that takes a run (`mremap`) runs under the
//! shard's lock. A shrink goes in steps ([`Core::shrink_step`], `slab.rs`), each under the lock
//! for at most `STEP_SLOTS` slots walked and `STEP_BYTES` cut (an `mmap` and an `mremap` for the
//! units it gives back); the `MADV_POPULATE_WRITE` of those units, their return to the reserve and
//! the `munmap` of the rest come after the unlock. So a schedule into a shard waits for one step
//! at most (0.1 to 0.5 ms on Linux: `timer/shrink.rs`; elsewhere a step's truncation of the
//! slots' `Vec` reads every slot it cuts); the other shards' do not wait.
//!
//! **Elsewhere than Linux** (no `mremap`) there is no reserve: the n slots are written into the
//! building thread's shard (`Slab::reserve`), so the room is resident for the tasks that thread
//! schedules. So it is on Linux where the system's page is not 4 KiB (`reserve::mapped`): a unit
//! there is no whole number of pages.
//!
//! **Drop**: the shards' states are dropped as the core gives their headers back, each slab's
//! payloads first, then its mapping (the units it took included); the reserve's runs after every
//! shard.

use super::{Core, Extra, Wheel};
use crate::shard::reserve::{mapped, Reserve};
use crate::sync::Arc;

/// The most entries a core's capacity writes ahead: 2^32 - 2, what a timer holds at most (the
/// public `MAX_CAPACITY` is this one, `builder.rs`).
pub const MAX_CAPACITY: usize = u32::MAX as usize - 1;

impl<P: Send + 'static, X: Extra<P>> Core<P, X> {
    /// [`with_extra`](Core::with_extra) with room for `capacity` entries written ahead (module
    /// docs): on Linux a reserve of that many slots, resident, which any shard that grows takes
    /// runs from; elsewhere that many slots written into the building thread's shard.
    ///
    /// # Panics
    ///
    /// As [`with_extra`](Core::with_extra), and if `capacity` is over [`MAX_CAPACITY`] (which
    /// `TimerBuilder::try_build` refuses), before anything is mapped.
    pub fn with_capacity(shards: usize, wheel_size: u64, capacity: usize) -> Core<P, X> {
        assert!(capacity <= MAX_CAPACITY, "a capacity of {capacity} is over MAX_CAPACITY ({MAX_CAPACITY})");
        let mut core = Core::with_extra(shards, wheel_size);
        if capacity == 0 {
            return core;
        }
        if !mapped() && !cfg!(delaywheel_loom) {
            core.shards[core.own_shard()].lock().state().wheel.reserve(capacity);
            return core;
        }
        let reserve = Arc::new(Reserve::new(capacity, Wheel::<P>::slot_bytes()));
        for shard in core.shards.iter() {
            shard.lock().state().wheel.attach(Arc::clone(&reserve));
        }
        core.reserve = Some(reserve);
        core
    }

    /// Gives back what each shard can (`Wheel::shrink_step`: the vacant slots after its last
    /// occupied one), in [`shrink_step`](Core::shrink_step)s, one shard at a time: units its slab
    /// took from the reserve go back to it, the rest to the kernel. The slots of capacity given back.
    pub fn shrink(&self) -> usize {
        let mut given = 0;
        for shard in 0..self.shards.len() {
            loop {
                let (step, done) = self.shrink_step(shard);
                given += step;
                if done {
                    break;
                }
            }
        }
        given
    }

    /// One step of shard `shard`'s shrink (module docs, "System calls under the shard's lock"),
    /// under its lock: the slots of capacity given back, whether its shrink is done.
    pub fn shrink_step(&self, shard: usize) -> (usize, bool) {
        self.shrink_step_of(shard, crate::shard::slab::STEP_SLOTS)
    }

    /// [`shrink_step`](Core::shrink_step) walking at most `slots` slots (the loom models' few).
    pub fn shrink_step_of(&self, shard: usize, slots: usize) -> (usize, bool) {
        let mut out = crate::shard::slab::Cut::default();
        let step = self.shards[shard].lock().state().wheel.shrink_step(slots, &mut out);
        // The populate and the unmaps, after the unlock.
        drop(out);
        step
    }

    /// The slots the shards' slabs have written, vacant and occupied, each read under its lock in
    /// turn: what [`shrink`](Core::shrink) may give back beyond the entries pending.
    pub fn slots(&self) -> usize {
        self.shards.iter().map(|shard| shard.lock().state().wheel.slots()).sum()
    }

    /// The reserve's units (of 256 slots): (held by the reserve, built with), `None` without one.
    pub(crate) fn reserve_units(&self) -> Option<(usize, usize)> {
        self.reserve.as_ref().map(|reserve| (reserve.held(), reserve.capacity()))
    }

    /// The units each shard took from the reserve and holds, each read under its lock in turn.
    pub(crate) fn taken_units(&self) -> Vec<usize> {
        self.shards.iter().map(|shard| shard.lock().state().wheel.taken()).collect()
    }
}

#[cfg(all(test, not(delaywheel_loom)))]
mod tests;
