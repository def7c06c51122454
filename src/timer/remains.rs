//! What the crate's unit tests (`fault_tests.rs`) look at inside a timer, also after its drop.

use super::{Shared, Timer};
use crate::sync::Arc;

impl Timer {
    /// The highest slot index the timer's entry arena has handed out.
    pub(crate) fn arena_high_water(&self) -> u64 {
        self.shared().store.arena.high_water()
    }

    /// The pages of slots the timer's entry arena has created (in index order, before any shrink).
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
    /// Once no advance is in progress (a detached driver may still be finishing one), audits the
    /// entry arena: every slot released and back on a free list exactly once (`entry/arena.rs`).
    pub(crate) fn audit_slots(&self) {
        let _serial = self.0.advance_lock.lock();
        self.0.store.arena.audit();
    }

    /// [`TimerStats::panicked`](crate::TimerStats::panicked), readable after the drop.
    pub(crate) fn panicked(&self) -> u64 {
        self.0.counters.snapshot().panicked
    }
}
