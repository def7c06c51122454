//! `TimerRef`: the way back from a future (feature `async`) to the timer it was made on.
//!
//! A lazy [`Timeout`](crate::Timeout) schedules its timer task only at its first pending poll, a
//! [`Sleep`](crate::Sleep) re-schedules when it is reset after its task fired, and an
//! [`Interval`](crate::Interval) reads the timer's clock at every tick: each needs the timer after
//! the call that made it returned. They hold a [`TimerRef`]: a [`LiveTimer`] (`weak.rs`: the public
//! API's operations, nothing more), which [`upgrade`](TimerRef::upgrade) lends out until the timer
//! shuts down, and then no more.
//!
//! ## A strong reference, lent
//!
//! A `TimerRef` holds the timer's shared state by a strong reference, and a future reaches it by a
//! borrow: arming a timeout or a sleep writes no reference count. A weak reference upgraded at
//! every arming made every thread that arms write the shared state's strong count twice (the
//! upgrade and its drop), one cache line for all of them. What this gives
//! up: a future kept after its timer was dropped keeps the timer's shared state (its shards, whose
//! emptied slots the drop gives back, and their wheels) until the future is dropped; the timer itself stops when it is dropped (the drop
//! shuts it down: the driver exits, every unstarted task is dropped), so no task runs and nothing
//! is scheduled after it, and a future that then needs its timer finds it shut down. A repeating
//! task's way back stays weak (`repeating.rs`): its closure lives in the timer's own entries, where
//! a strong reference would be a cycle.
//!
//! ## Per-thread references
//!
//! Cloning one `Arc` for every future would make every thread that creates futures write the same
//! reference count: a cache line moving between cores at every `timeout(d, ready)`, the cost that a
//! lazy timeout exists to avoid. So a timer keeps a few `Arc<TimerRef>`s, one per
//! [`thread_index`] modulo their number (the counters' stripes do the same, `sync/striped.rs`), each
//! on its own cache line, created on the first future; a future clones the one of its thread.
//! Only a future dropped on another thread than the one it was made on touches a shared line.
//!
//! The references live in the [`Timer`], not in its shared state: they point at the shared state,
//! which must not hold a reference to itself. A future captured by a task of its own timer does
//! (timer → entry → task → future → timer), until the timer's drop drains its tasks: the drop
//! breaks that cycle, as it breaks a handle's.

use std::fmt;

use super::{LiveTimer, Timer};
use crate::sync::{thread_index, Arc, OnceLock};

/// A way back to a timer, shared by the futures of one thread.
#[repr(align(128))]
pub(crate) struct TimerRef(LiveTimer);

impl TimerRef {
    /// The timer, until it shuts down (`weak.rs`): a borrow, no reference count written.
    #[inline]
    pub(crate) fn upgrade(&self) -> Option<&LiveTimer> {
        (!self.0.is_shut_down()).then_some(&self.0)
    }

    /// The timer, shut down or not: for what a future does with the task it already has (its
    /// cancel and reset, `LentHandle`) and with its clock, never for a new schedule.
    #[inline]
    pub(crate) fn held(&self) -> &LiveTimer {
        &self.0
    }
}

impl fmt::Debug for TimerRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TimerRef")
    }
}

/// A timer's per-thread [`TimerRef`]s, created on first use.
pub(crate) struct TimerRefs(OnceLock<Box<[Arc<TimerRef>]>>);

impl TimerRefs {
    pub(crate) fn new() -> TimerRefs {
        TimerRefs(OnceLock::new())
    }

    /// How many references a timer keeps: enough that the threads of a busy process rarely share
    /// one. Under loom, one (models stay small).
    fn count() -> usize {
        #[cfg(delaywheel_loom)]
        return 1;
        #[cfg(not(delaywheel_loom))]
        crate::sync::stripe_count()
    }
}

impl Timer {
    /// The [`TimerRef`] of this thread, for a future made on this timer.
    pub(crate) fn local_ref(&self) -> Arc<TimerRef> {
        let refs = self.refs().0.get_or_init(|| {
            let count = TimerRefs::count();
            (0..count).map(|_| Arc::new(TimerRef(LiveTimer(Arc::clone(&self.live().0))))).collect()
        });
        // (`count` is a power of two.)
        Arc::clone(&refs[thread_index() & (refs.len() - 1)])
    }
}

impl fmt::Debug for TimerRefs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerRefs").field("created", &self.0.get().is_some()).finish()
    }
}
