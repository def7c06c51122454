//! What the crate's unit tests (`fault_tests.rs`, `queue/tests.rs`) look at inside a timer, also
//! after its drop, on either engine: the slots its entries took, and what a stop left of them.

use super::{Shared, Timer};
use crate::sync::Arc;

impl Timer {
    /// The most slots the timer's entries have taken at once: the arena's high-water mark (the
    /// highest slot index handed out); on the core, the slots its shards' slabs have written,
    /// vacant and occupied, which only a shrink lowers.
    pub(crate) fn slots_high_water(&self) -> u64 {
        #[cfg(not(delaywheel_core))]
        return self.shared().store.arena.high_water();
        #[cfg(delaywheel_core)]
        return self.shared().core.slots() as u64;
    }

    /// The highest slot index the timer's entry arena has handed out.
    #[cfg(not(delaywheel_core))]
    pub(crate) fn arena_high_water(&self) -> u64 {
        self.shared().store.arena.high_water()
    }

    /// The pages of slots the timer's entry arena has created (in index order, before any shrink).
    #[cfg(not(delaywheel_core))]
    pub(crate) fn arena_pages(&self) -> usize {
        let arena = &self.shared().store.arena;
        let _pin = arena.pin();
        (0..).take_while(|page| arena.lock_index(page * crate::entry::arena::PAGE).is_some()).count()
    }

    /// The timer's shared state, kept alive past the timer's drop so that a test can look at what
    /// the drop (or a shutdown) left behind.
    pub(crate) fn remains(&self) -> Remains {
        Remains(Arc::clone(self.shared()))
    }
}

/// A timer's shared state seen from a test, also after the timer's drop ([`Timer::remains`]).
pub(crate) struct Remains(Arc<Shared>);

impl Remains {
    /// Once no advance is in progress (a detached driver may still be finishing one), checks that
    /// every slot was released. The arena's audit: every slot released and back on a free list
    /// exactly once (`entry/arena.rs`). The core's: no entry counted pending, and a shrink gives
    /// back every slot written (it keeps those up to the last occupied one, `shard/slab.rs`).
    pub(crate) fn audit_slots(&self) {
        let _serial = self.0.advance_lock.lock();
        #[cfg(not(delaywheel_core))]
        self.0.store.arena.audit();
        #[cfg(delaywheel_core)]
        {
            let core = &self.0.core;
            assert_eq!(core.len(), 0, "entries left pending");
            core.shrink();
            assert_eq!(core.slots(), 0, "a slot left occupied");
        }
    }

    /// [`TimerStats::panicked`](crate::TimerStats::panicked), readable after the drop.
    pub(crate) fn panicked(&self) -> u64 {
        #[cfg(not(delaywheel_core))]
        return self.0.counters.snapshot().panicked;
        #[cfg(delaywheel_core)]
        return self.0.tallies.panicked.load(crate::sync::Ordering::Relaxed);
    }
}
