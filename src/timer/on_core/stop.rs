//! Stopping, shrinking and reading a timer on the core: `Timer::stop` (the shutdown's and the
//! drop's), the driver's automatic shrink and `Timer::shrink`'s give-back, and `Timer::stats`.
//!
//! **The stop.** The shutdown flag is set and the queue closed (the driver wakes and exits), the
//! driver joined or left to exit on its own (as the arena's stop decides), the executor threads
//! closed (joined first by a full shutdown, so that they run what they were handed), and then
//! [`Core::close`]: each shard closed and drained under its lock, held entries too, so that a
//! schedule racing it is drained or refused, and a claim after it (the batch of an advance still
//! under way, an executor's job) finds nothing. The stop needs no advance lock for that: a
//! driver inside a task when the timer is dropped finds the rest of its batch gone. The values
//! the drain took are counted for the delay queue's closing (`shutdown.rs`, `close_values`).
//!
//! **Shrink.** [`Core::shrink`] gives back each shard's vacant slots after its last occupied one,
//! under its lock, and the task slab its empty pages.
//!
//! [`Core::close`]: crate::shard::core::Core::close
//! [`Core::shrink`]: crate::shard::core::Core::shrink

use std::time::Duration;

use super::super::stats::TimerStats;
use super::super::{Timer, UnfiredTask};
use super::Shared;

impl Timer {
    /// Shutdown (`dropping == false`, waiting up to `wait`, `None` for as long as it takes) or
    /// drop (module docs, "The stop").
    pub(in crate::timer) fn stop(&self, dropping: bool, wait: Option<Duration>) -> Vec<UnfiredTask> {
        let _ = (dropping, wait);
        todo!("on_core: the stop")
    }
}

impl Shared {
    /// [`Timer::stats`](crate::Timer::stats): the core's load and totals, the members', the panics.
    pub(crate) fn stats(&self) -> TimerStats {
        todo!("on_core: stats")
    }

    /// The driver's automatic shrink, after an advance.
    pub(crate) fn shrink_if_spent(&self) {}

    /// How long the driver may wait before it looks again whether to shrink: `None` (as long as
    /// the queue says) until the automatic shrink is written on the core.
    pub(crate) fn shrink_wait(&self) -> Option<Duration> {
        None
    }

    /// Has a spike wake the driver's wait (the automatic shrink's): nothing yet on the core.
    #[cfg(not(delaywheel_loom))]
    pub(crate) fn wake_driver_at_spikes(this: &crate::sync::Arc<Shared>) {
        let _ = this;
    }

    /// Takes every pending value entry out in place, each shard under its lock, held ones too,
    /// counted out as cancelled (a bounded timer's gauge lowered): their payloads appended to
    /// `out`, how many. A delay queue's clear (`values.rs`), under `advance_lock`.
    pub(super) fn take_values(&self, out: &mut Vec<super::Payload>) -> usize {
        let _ = out;
        todo!("on_core: every value entry taken in place")
    }

    /// [`Timer::shrink`](crate::Timer::shrink)'s give-back (module docs, "Shrink"); `limit` is
    /// the arena's wait for handles, which the core has no need of.
    pub(in crate::timer) fn give_back(&self, limit: Option<Duration>) {
        let _ = limit;
        self.core.shrink();
        self.slab.shrink();
    }
}
