//! Advancing the clock on the core: one round of the core's queue per advance
//! ([`Core::advance`] at the clock's tick, its limit the stamps' round, `Stamps::begin_round`),
//! the batch sorted (by deadline word and stamp, a deadline passed mid-tick with the entries of
//! its tick taken beside it by [`Core::take_due_by`], deadlines before the origin by their
//! instants), and each entry claimed just before it runs (`fire.rs`). The waker of a drive
//! future's sleep fires only what runs no user code, and puts each closure back for the next
//! advance ([`Core::set_aside`]).
//!
//! [`Core::advance`]: crate::shard::core::Core::advance
//! [`Core::take_due_by`]: crate::shard::core::Core::take_due_by
//! [`Core::set_aside`]: crate::shard::core::Core::set_aside

use super::values::FiredValue;
use super::Shared;
use crate::entry::Freed;
use crate::shard::core::{Due, Merge};

/// What an advance reuses from one call to the next, under `advance_lock`.
#[derive(Default)]
pub(crate) struct Scratch {
    /// The batch.
    pub(super) due: Vec<Due>,
    pub(super) merge: Merge,
    /// The batch's values, for the sink.
    pub(super) values: Vec<FiredValue>,
    /// The blocks the batch's closures were in, given back together.
    pub(super) freed: Freed,
}

impl Shared {
    /// The tick of [`Timer::next_work`](crate::Timer::next_work): the earliest queued bucket's,
    /// else the cursor; the cursor while an advance holds the advance lock.
    pub(crate) fn next_work_tick(&self) -> u64 {
        let head = || self.queue().head().unwrap_or_else(|| self.current_tick());
        match self.advance_lock.try_lock() {
            Some(_serial) => head(),
            None => self.current_tick(),
        }
    }

    /// The non-blocking advance: every bucket due at the clock's current tick flushed, its
    /// entries run. Whether anything was due.
    pub(crate) fn advance(&self) -> bool {
        todo!("on_core: the advance")
    }

    /// [`advance`](Self::advance) unless another advance holds the advance lock (then `None`),
    /// firing only the tasks that run no user code (the waker of a drive future's sleep).
    #[cfg(feature = "async")]
    pub(crate) fn try_advance_wakes(&self) -> Option<bool> {
        todo!("on_core: the drive waker's advance")
    }
}
