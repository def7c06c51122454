//! The count behind [`DelayQueue::len`](super::DelayQueue::len): values pending or expired and not
//! yet taken, a striped count of things in and out (`sync/striped.rs`, whose module docs give the
//! stripes and the read order), so that producers and consumers on different threads write
//! different cache lines.
//!
//! An insert counts **in** on the inserting thread's stripe; a take, a remove or a refused insert
//! counts **out** on its own thread's, and a shutdown of the queue's timer counts out at once the
//! pending values its drains claimed (`timer/shutdown.rs`). The premise of the read order holds: a
//! value's count-in happens-before its count-out (the insert counts in before it schedules the
//! entry; whoever counts the value out got it through its shard's lock or the ready list's
//! locks). A shutdown may count out values another shutdown's drain claimed (their count is a
//! `Relaxed` counter), but its own drain first locked every shard, each after any insert that had
//! put an entry there (one that locked a shard after the drain closed it was refused), so those
//! values' count-ins happen-before its count-out too. So a read never
//! under-counts a value pending (or expired and not taken) throughout it, never wraps below zero,
//! and is exact when no call is in flight.
//!
//! Deciding that the queue **became empty**, which wakes waiting consumers, needs more than a read:
//! the module docs of `ready/` give that protocol.

use crate::sync::striped::{InOut, Striped};

/// See the module docs.
pub(super) struct Len(Striped<Stripe>);

/// One thread's share of the count, alone on its cache line(s) (128 bytes: adjacent-line
/// prefetching pairs lines). One kind of count-out.
#[repr(align(128))]
struct Stripe(InOut<1>);

impl Len {
    pub(super) fn new() -> Self {
        Len(Striped::new(|| Stripe(InOut::new())))
    }

    /// Counts one value in, before its entry exists.
    #[inline]
    pub(super) fn count_in(&self) {
        self.0.local().0.count_in();
    }

    /// Counts `n` values out: taken, removed, or refused.
    #[inline]
    pub(super) fn count_out(&self, n: usize) {
        self.0.local().0.count_out(0, n as u64);
    }

    /// The count (`sync/striped.rs` gives the read order).
    pub(super) fn get(&self) -> usize {
        self.0.count(|stripe| &stripe.0)
    }
}
