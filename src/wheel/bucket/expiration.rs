//! A bucket's expiration: the tick at which the driver must next visit it, and the delay queue's
//! key for it.
//!
//! ## The delay-queue trick
//!
//! An add queues the bucket in the timer's `DelayQueue` only when it lowers the expiration. An
//! empty bucket has no expiration, so the first add of a round sets it and queues the bucket, and
//! the rest of that round's adds do nothing more: barring adds in several lanes at the same moment
//! (below), a bucket is queued once per lane's stage per wheel cycle, and only non-empty buckets
//! are queued.
//!
//! Unlike Kafka, an add only ever *lowers* the expiration. Schedulers do not take a timer-wide
//! lock (Kafka takes a read lock), so a scheduler working from a slightly stale view of time can add
//! an entry of an earlier round to a bucket that already holds a later one; lowering re-queues the
//! bucket at the earlier time, and the visit then re-adds the stage's entries through the wheel,
//! which puts each where it belongs. Raising it could strand the earlier entry for a whole rotation.
//!
//! **Queued before lowered.** The add that lowers the expiration to `x` queues the bucket at `x`
//! first, then lowers it, both under its lane lock. The invariant: while the expiration is `x`,
//! the queue holds the bucket at `x`, or the driver has popped it and is about to visit it, or has
//! visited it and is about to queue it at the `x` its visit set. An add
//! in another lane that reads the lowered expiration does not queue the bucket again: it relies on
//! that queue entry, and the lowering (`AcqRel`) orders the push before its read. Had the lowering
//! come first, a scheduler preempted between the two would leave the bucket unqueued for as long as
//! it stays off the core, and with it every entry other threads add meanwhile at or after `x`:
//! late by the preemption, and fired after entries due later (loom model
//! `schedule_vs_flush::an_add_relying_on_another_lanes_lowering_is_fired`, seeded fault
//! `queued_after_lowering`). A pop of the bucket at `x` cannot be visited before the lowering
//! either: the visit takes every lane's lock, the adder's too. Adds in two lanes that both find the
//! expiration above their own both queue the bucket (at the same tick, or at two: one entry more,
//! visited or found stale at its turn): at most one queue entry per add that finds it above.
//!
//! **Stale queue entries.** Lowering leaves the bucket's older, later queue entry behind. A popped
//! bucket is visited if it is due at the cursor (`expiration <= c`), whatever the popped key: also
//! when an adder lowered it between the pop and the visit, so the entries due now are not left for
//! the next advance. The visit sets the new expiration under every lane's lock (the earliest
//! `visit_at` left, or `c + 1` for an unfinished chunk, or none), always after the cursor but for a
//! level-0 bucket's quarters left (at the cursor, re-visited in the same round), and the driver
//! queues it. The driver is the only advancer (`advance_lock`), so nothing polls the queue between
//! that store and its push. A popped bucket that is not due is a stale entry (a visit raised the
//! expiration since) and nothing is done. Only the visit raises the expiration, and it queues what
//! it sets, so stale entries are bounded by lowerings and die out.

use super::{faults, TimerTaskList};
use crate::sync::{AtomicU64, Ordering};

impl TimerTaskList {
    /// The tick at which this bucket is next to be visited, or
    /// [`NO_EXPIRATION`](super::NO_EXPIRATION).
    pub(crate) fn expiration(&self) -> u64 {
        self.expiration.load(Ordering::Acquire)
    }

    /// Lowers the expiration to `tick` if that is earlier, having first queued the bucket at
    /// `tick` with `queue` (see the module docs); `true` iff it queued it (an add in another lane
    /// may have lowered it further meanwhile). Called with a lane's lock held.
    #[inline(always)]
    pub(super) fn lower_expiration(&self, tick: u64, queue: impl FnOnce(u64)) -> bool {
        let current = self.expiration.load(Ordering::Acquire);
        if tick >= current || faults::never_lowered(current) {
            // The common case, a read only: the line stays shared between the lanes' adders.
            return false;
        }
        self.queue_and_lower(tick, queue);
        true
    }

    /// The lowering itself, once per bucket and round: out of the adds' line.
    #[cold]
    #[inline(never)]
    fn queue_and_lower(&self, tick: u64, queue: impl FnOnce(u64)) {
        // An add in another lane may be lowering it at the same time: one atomic step, so that none
        // raises it back. (Only a visit raises it, holding every lane's lock.)
        let lower = |expiration: &AtomicU64| {
            if fault!("lowering_not_atomic") {
                faults::lower_by_store(expiration, tick);
            } else {
                expiration.fetch_min(tick, Ordering::AcqRel);
            }
        };
        // Seeded fault `queued_after_lowering` (docs/loom.md): lowered first, so an add in another
        // lane may rely on a queue entry that is not there yet.
        if fault!("queued_after_lowering") {
            lower(&self.expiration);
            queue(tick);
        } else {
            queue(tick);
            lower(&self.expiration);
        }
    }
}
