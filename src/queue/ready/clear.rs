//! Taking every expired value out of the ready list at once: the queue's drop and its clear.
//!
//! **Dropping the queue.**
//!
//! The ready list is shared with the timer's value sink, which a driver thread still finishing an
//! advance keeps alive after the queue's drop returns. So the queue's drop **discards** the lists
//! (`discard`: their values are dropped at once) and marks the arrivals, under the arrival lock, so
//! that a batch arriving later is dropped as it arrives (`drop_caught`: on the timer's thread)
//! instead of kept.
//!
//! **Clearing the queue.**
//!
//! A clear (`clear`) takes both lists out under both locks at once, in the consumers' order: a
//! consumer refilling its taking side in between would otherwise keep values the clear missed. It
//! counts them out, with the pending values its scan of the timer claimed, before it releases the
//! locks, and so before it lets advances run again: a consumer that finds the lists empty
//! afterwards reads a count without them, and so does one that finds the queue ended, closed by
//! a shutdown of the timer (which the clear itself closes as it lets advances run again, if the
//! timer shut down meanwhile: `timer/values.rs`). Then, with no lock held, it wakes the waiting
//! consumers as a remove does (`mod.rs`, "Waiting, and the queue becoming empty").

use std::collections::VecDeque;
use std::mem;

use super::super::Expired;
use super::Ready;
use crate::unwind::drop_caught;

impl<T> Ready<T> {
    /// The queue is dropped: drops every expired value it holds, now, and any that arrives later.
    /// Each value is dropped on its own, a panic of its `Drop` caught, as the timer's drop does
    /// with the pending ones: one that panics stops neither the others' drops nor the queue's (and
    /// a second would otherwise abort the process, panicking while the first unwinds).
    pub(in crate::queue) fn discard(&self) {
        for expired in self.take_all(true, None).1 {
            drop_caught(expired);
        }
    }

    /// A clear, before it lets advances run again: takes every expired value out, for the caller
    /// to drop, and counts them out with the `claimed` pending values its scan took, under the
    /// locks (module docs). Returns how many it counted out, for
    /// [`cleared`](Self::cleared).
    pub(in crate::queue) fn clear(&self, claimed: usize) -> (usize, VecDeque<Expired<T>>) {
        // Seeded fault `queue_clear_counts_out_late` (docs/loom.md): the values are counted out
        // once the clear let advances run again, after a shutdown may have closed the queue.
        let counted = if fault!("queue_clear_counts_out_late") { None } else { Some(claimed) };
        let (taken, all) = self.take_all(false, counted);
        (claimed + taken, all)
    }

    /// After a [`clear`](Self::clear) of `n` values, with no lock held: wakes the waiting
    /// consumers if that left the queue empty, as after a remove.
    pub(in crate::queue) fn cleared(&self, n: usize) {
        if fault!("queue_clear_counts_out_late") {
            self.len.count_out(n);
        }
        if n != 0 {
            self.counted_out_untaken();
        }
    }

    /// Takes every expired value out, for the caller to drop: the taking side and the arrivals
    /// under both locks at once, in the consumers' order, so that no consumer moves arrivals over
    /// between the two. With `discarding`, marks the arrivals so that a batch arriving later is
    /// dropped as it arrives (the queue's drop). With `count_out` (a clear's claimed values),
    /// counts them out, and that many more, before it releases the locks. Returns how many it took.
    fn take_all(&self, discarding: bool, count_out: Option<usize>) -> (usize, VecDeque<Expired<T>>) {
        let mut taking = self.taking.lock();
        let mut arrived = self.arrived.lock();
        arrived.discarding |= discarding;
        let mut all = mem::take(&mut *taking);
        all.append(&mut arrived.values);
        let counted = count_out.map_or(0, |claimed| claimed + all.len());
        if counted != 0 {
            self.len.count_out(counted);
        }
        (all.len(), all)
    }
}
