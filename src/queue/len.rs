//! The count behind [`DelayQueue::len`](super::DelayQueue::len): values pending or expired and not
//! yet taken, **striped** so that producers and consumers on different threads write different
//! cache lines.
//!
//! One shared counter written by every insert and every take would move its cache line between the
//! producers' cores and the consumer's on every value. So the count is a few [`Stripe`]s (as many
//! as the timer's counters have, `sync::stripe_count`), each alone on its cache line(s), and a
//! thread counts on the stripe of its [`thread_index`]: an insert counts **in** on the inserting
//! thread's stripe, a take, a remove or a refused insert counts **out** on its own thread's. The
//! count is Σ`ins` − Σ`outs`.
//!
//! **Read order.** Count-ins are `Relaxed`, count-outs `Release` read-modify-writes, and
//! [`Len::get`] loads every `outs` (`Acquire`) before any `ins`: the argument of the timer's
//! counters (`timer/counters.rs`), with the same premise, that a value's count-in happens-before its
//! count-out (the insert counts in before it schedules the entry; whoever counts the value out got
//! it through the entry's slot lock or the ready list's locks). So a read never under-counts a
//! value pending (or expired and not taken) throughout it, never wraps below zero, and is exact
//! when no call is in flight.
//!
//! Deciding that the queue **became empty**, which wakes waiting consumers, needs more than a read:
//! `ready.rs`'s module docs give that protocol.

use crate::sync::{stripe_count, thread_index, AtomicU64, Ordering};

/// See the module docs.
pub(super) struct Len {
    stripes: Box<[Stripe]>,
    /// `stripes.len() - 1` (a power of two).
    mask: usize,
}

/// One thread's share of the count, alone on its cache line(s) (128 bytes: adjacent-line
/// prefetching pairs lines).
#[repr(align(128))]
struct Stripe {
    ins: AtomicU64,
    outs: AtomicU64,
}

impl Len {
    pub(super) fn new() -> Self {
        let count = stripe_count();
        let stripes =
            (0..count).map(|_| Stripe { ins: AtomicU64::new(0), outs: AtomicU64::new(0) }).collect();
        Len { stripes, mask: count - 1 }
    }

    #[inline]
    fn local(&self) -> &Stripe {
        &self.stripes[thread_index() & self.mask]
    }

    /// Counts one value in, before its entry exists.
    #[inline]
    pub(super) fn count_in(&self) {
        self.local().ins.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts `n` values out: taken, removed, or refused.
    #[inline]
    pub(super) fn count_out(&self, n: usize) {
        self.local().outs.fetch_add(n as u64, Ordering::Release);
    }

    /// The count (see the module docs for the read order).
    pub(super) fn get(&self) -> usize {
        let outs = self.stripes.iter().fold(0u64, |sum, s| sum.wrapping_add(s.outs.load(Ordering::Acquire)));
        let ins = self.stripes.iter().fold(0u64, |sum, s| sum.wrapping_add(s.ins.load(Ordering::Relaxed)));
        // Never negative (module docs): a wrapped value would be a counting bug, and it shows.
        usize::try_from(ins.wrapping_sub(outs)).unwrap_or(usize::MAX)
    }
}
