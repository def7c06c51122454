//! What the crate's unit tests (`fault_tests.rs`) look at inside a timer, also after its drop: the
//! slots its entries took, and what a stop left of them.

use super::{Shared, Timer};
use crate::sync::Arc;

impl Timer {
    /// The most slots the timer's entries have taken at once: the slots its shards' slabs have
    /// written, vacant and occupied, which only a shrink lowers.
    pub(crate) fn slots_high_water(&self) -> u64 {
        self.shared().core.slots() as u64
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
    /// every slot was released: no entry counted pending, and a shrink gives back every slot
    /// written (it keeps those up to the last occupied one, `shard/slab.rs`).
    pub(crate) fn audit_slots(&self) {
        let _serial = self.0.advance_lock.lock();
        let core = &self.0.core;
        assert_eq!(core.len(), 0, "entries left pending");
        core.shrink();
        assert_eq!(core.slots(), 0, "a slot left occupied");
    }

    /// [`TimerStats::panicked`](crate::TimerStats::panicked), readable after the drop.
    pub(crate) fn panicked(&self) -> u64 {
        self.0.tallies.panicked.load(crate::sync::Ordering::Relaxed)
    }
}
