//! Advancing the clock, and the shutdown drain.
//!
//! An advance (serialised by `advance_lock`) pops every due bucket in expiration order; for each,
//! it moves the cursor to its expiration, visits it (takes out what is due there: a level-0
//! bucket's entries, or the stages of a coarser bucket that may cascade now, see `wheel/bucket/`),
//! and queues it again if the visit says so; the entries due at the cursor go straight to the batch
//! to fire (`fire.rs`), and every other entry taken is re-added relative to the cursor: it lands in
//! a finer level (cascade). Fired tasks of one bucket run after that bucket's visit, with no lock
//! held but `advance_lock`.
//!
//! The drain, holding `advance_lock` (or inside a task of the advance), closes the levels not yet
//! created, flushes every bucket and claims every pending entry as abandoned.

use super::{fire, trace, Shared, Store};
use crate::clock::nanos_to_duration;
use crate::deadline::Deadline;
use crate::delay_queue::Timeline;
use crate::entry::{self, EntryId, Freed, Return};
use crate::sync::{Arc, Ordering};
use crate::wheel::{Handoff, Inserted, Popped, Readded};
use crate::UnfiredTask;

use super::advancing::Advancing;

impl Shared {
    /// The non-blocking advance: flush every bucket due at the clock's current tick.
    pub(crate) fn advance(&self) -> bool {
        if self.advancing_here() {
            return false;
        }
        let mut serial = self.advance_lock.lock();
        if self.is_shut_down() {
            return false;
        }
        let _advancing = Advancing::enter(self.id());
        let now_tick = self.time.now_tick();
        let Store { arena, wheel, .. } = &self.store;
        let mut flushed = false;
        let Scratch { cascade, due, spare, freed } = &mut *serial;
        // One round of the queue: what is scheduled meanwhile and already due waits for the next
        // advance (`delay_queue.rs`, "Rounds"), so an advance does bounded work.
        let round = self.queue.round();
        while let Some((expiration, bucket)) = self.queue.poll_due(now_tick, round) {
            let cursor = self.current_tick.load(Ordering::Relaxed).max(expiration);
            self.current_tick.store(cursor, Ordering::Release);
            match bucket.visit_into(arena, cursor, Handoff { cascade, due }) {
                Popped::Stale => continue,
                Popped::Visited { requeue } => {
                    flushed = true;
                    if let Some(next) = requeue {
                        self.queue.offer_within(next, Arc::clone(&bucket));
                    }
                }
            }
            let visited = cascade.len() + due.len();
            // The entries due at the cursor went straight to `due`; the rest cascade, by the
            // deadline in their slots (a reset may have moved one in transit: `entry/`).
            for held in cascade.drain(..) {
                match wheel.readd(arena, held, cursor, None) {
                    Readded::Inserted(Inserted::Queue(expiration, bucket)) => {
                        self.queue.offer_within(expiration, bucket)
                    }
                    Readded::Inserted(Inserted::Done) => {}
                    // Cancelled in transit: the cancel left the slot to us, its holder.
                    Readded::NotPending => entry::discard(arena, held.0),
                    Readded::ShutDown => unreachable!("the driver's re-adds ignore the shutdown flag"),
                }
            }
            trace::flushed(bucket.key(), expiration, cursor, visited, due.len());
            if !due.is_empty() {
                self.fire(due, spare, freed);
            }
        }
        self.queue.end_round();
        serial.trim();
        if now_tick > self.current_tick.load(Ordering::Relaxed) {
            self.current_tick.store(now_tick, Ordering::Release);
        }
        flushed
    }

    /// Drains the wheel once no advance is in progress.
    pub(super) fn drain_locked(&self, report: bool) -> Vec<UnfiredTask> {
        let _serial = self.advance_lock.lock();
        self.drain(report)
    }

    /// Claims every pending entry in every bucket as abandoned. With `report`, returns their tasks
    /// in deadline order; otherwise drops them.
    pub(super) fn drain(&self, report: bool) -> Vec<UnfiredTask> {
        let mut unfired = Vec::new();
        self.drain_buckets(report, &mut unfired);
        self.unfired(unfired)
    }

    /// The drain when the advance in progress cannot be waited for (called from a timer's thread, or by a drop or a timed shutdown that gave up waiting): the
    /// bucket drain, then a scan of the arena that claims every entry still pending as abandoned,
    /// wherever it is held (the rest of the batch being fired, a visit's transit, an executor's
    /// channel, a bucket re-added to after its flush). The holders only release what they then
    /// find claimed (`entry/`), so each entry is fired by the advance or claimed here, exactly once,
    /// and none is left out of the accounting. A task the advance claimed before the scan reached
    /// it may still be running, or about to run, when this returns.
    pub(super) fn drain_detached(&self, report: bool) -> Vec<UnfiredTask> {
        let mut unfired = Vec::new();
        self.drain_buckets(report, &mut unfired);
        let stripe = self.counters.local();
        let arena = &self.store.arena;
        for index in 0..arena.high_water() as usize {
            let Some((task, deadline)) = entry::abandon_held_elsewhere(arena, index) else {
                continue;
            };
            stripe.left();
            if report {
                unfired.push((deadline, task.into_box()));
            } else if crate::unwind::drop_caught(task) {
                stripe.panicked();
            }
        }
        self.unfired(unfired)
    }

    fn drain_buckets(&self, report: bool, unfired: &mut Vec<(Deadline, entry::Task)>) {
        let stripe = self.counters.local();
        let Store { arena, wheel, .. } = &self.store;
        for bucket in wheel.close_levels() {
            for (entry, _) in bucket.flush(arena) {
                if !report {
                    fire::abandon(arena, (entry, Return::Now), stripe);
                } else if let Some((task, deadline)) = fire::abandon_take(arena, entry, stripe) {
                    unfired.push((deadline, task));
                }
            }
        }
    }

    fn unfired(&self, mut unfired: Vec<(Deadline, entry::Task)>) -> Vec<UnfiredTask> {
        // In deadline order to a 256th of a tick, each reported at its tick (when it would have run).
        unfired.sort_by_key(|&(deadline, _)| deadline);
        let at = |deadline: Deadline| nanos_to_duration(self.time.ticks.start_nanos(deadline.tick()));
        unfired.into_iter().map(|(deadline, task)| UnfiredTask { deadline: at(deadline), task }).collect()
    }
}

/// Vectors reused by every advance, kept under `advance_lock`. A fresh vector per visit would be
/// one large allocation per tick, and glibc consolidates every freed small chunk (the fired
/// entries) on each large allocation: `malloc_consolidate` takes about 9% of the driver's time in
/// SPEC W4 that way.
#[derive(Default)]
pub(super) struct Scratch {
    /// Entries a bucket visit took out to cascade, with their deadlines, to re-add (held: `entry/`).
    cascade: Vec<(EntryId, Deadline)>,
    /// Entries found due, with their deadlines, to fire in deadline order (held).
    due: Vec<(EntryId, Deadline)>,
    /// The buffer `deadline::sort_batch` sorts `due` through (it swaps the two).
    spare: Vec<(EntryId, Deadline)>,
    /// The slab blocks of the closures a batch ran, given back after it (`entry/task_slab.rs`).
    freed: Freed,
}

impl Scratch {
    /// Entries kept for reuse; beyond this (after a burst) the buffers are given back.
    const KEEP: usize = 1 << 14;

    fn trim(&mut self) {
        for buffer in [&mut self.cascade, &mut self.due, &mut self.spare] {
            if buffer.capacity() > Self::KEEP {
                buffer.shrink_to(Self::KEEP);
            }
        }
        self.freed.trim(Self::KEEP);
    }
}
