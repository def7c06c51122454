//! The timer's counters: the pending gauge behind `len()`, and monotonic totals.
//!
//! `pending` is incremented (and checked against `max_pending`) before an entry is inserted and decremented by whoever moves the entry
//! out of `Pending` (fire, cancel or shutdown; see `entry.rs`), so it is exact at every instant at
//! which no call is in flight, and never underflows.

use crate::sync::{AtomicU64, AtomicUsize, Ordering};

/// Shared by the timer and (through its entries) by every handle.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pending: AtomicUsize,
    scheduled: AtomicU64,
    fired: AtomicU64,
    cancelled: AtomicU64,
    panicked: AtomicU64,
}

impl Counters {
    /// Counts one more pending task unless that would exceed `max`; `false` if it would. Exact
    /// under concurrency and without a transient overshoot: a bounded timer admits with a CAS
    /// loop, so a refused attempt never shows in `len()` nor makes a concurrent one fail; an
    /// unbounded one (the default) just increments.
    pub(crate) fn try_scheduling(&self, max: usize) -> bool {
        if max == usize::MAX {
            self.pending.fetch_add(1, Ordering::Relaxed);
        } else if self
            .pending
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |p| (p < max).then_some(p + 1))
            .is_err()
        {
            return false;
        }
        self.scheduled.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// A schedule call that failed after counting itself in (see `scheduling`).
    pub(crate) fn unschedule(&self) {
        self.scheduled.fetch_sub(1, Ordering::Relaxed);
    }

    pub(crate) fn pending_done(&self) {
        self.pending.fetch_sub(1, Ordering::Relaxed);
    }

    pub(crate) fn cancelled(&self) {
        self.cancelled.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn fired(&self, n: u64) {
        self.fired.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn panicked(&self) {
        self.panicked.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::Relaxed)
    }

    pub(crate) fn snapshot(&self) -> (u64, u64, u64, u64) {
        (
            self.scheduled.load(Ordering::Relaxed),
            self.fired.load(Ordering::Relaxed),
            self.cancelled.load(Ordering::Relaxed),
            self.panicked.load(Ordering::Relaxed),
        )
    }
}
