//! `TimerRef`: the way back from a future (feature `async`) to the timer it was made on.
//!
//! A lazy [`Timeout`](crate::Timeout) schedules its timer task only at its first pending poll, a
//! [`Sleep`](crate::Sleep) re-schedules when it is reset after its task fired, and an
//! [`Interval`](crate::Interval) reads the timer's clock at every tick: each needs the timer after
//! the call that made it returned. They hold a [`TimerRef`]: a [`WeakTimer`] (`weak.rs`), so that a
//! future never keeps a timer alive (as with repeating tasks, `repeating.rs`), an upgrade fails once
//! the timer is gone, and what an upgrade gives is the public API's operations, nothing more.
//!
//! ## Per-thread references
//!
//! Cloning one `Weak` for every future would make every thread that creates futures write the same
//! reference count: a cache line moving between cores at every `timeout(d, ready)`, the cost that a
//! lazy timeout exists to avoid. So a timer keeps a few `Arc<TimerRef>`s, one per
//! [`thread_index`] modulo their number (the counters' stripes do the same, `sync/striped.rs`), each
//! on its own cache line, created on the first future; a future clones the one of its thread.
//! Only a future dropped on another thread than the one it was made on, and the upgrade (in the
//! slow path, which then schedules anyway), touch a shared line.
//!
//! The references live in the [`Timer`], not in its shared state: they point at the shared state,
//! and under loom a `Weak` is a strong reference (`sync.rs`), which must not form a cycle.

use std::fmt;

use super::{LiveTimer, Timer, WeakTimer};
use crate::sync::{thread_index, Arc, OnceLock};

/// A weak way back to a timer, shared by the futures of one thread.
#[repr(align(128))]
pub(crate) struct TimerRef(WeakTimer);

impl TimerRef {
    /// The timer, while it is alive (`weak.rs`).
    #[inline]
    pub(crate) fn upgrade(&self) -> Option<LiveTimer> {
        self.0.upgrade()
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
            (0..count).map(|_| Arc::new(TimerRef(self.live().downgrade()))).collect()
        });
        Arc::clone(&refs[thread_index() % refs.len()])
    }
}

impl fmt::Debug for TimerRefs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerRefs").field("created", &self.0.get().is_some()).finish()
    }
}
