//! Stopping, shrinking and reading a timer on the core: `Timer::stop` (the shutdown's and the
//! drop's), the driver's automatic shrink and `Timer::shrink`'s give-back, and `Timer::stats`.
//!
//! **The stop.** The shutdown flag is set and the queue closed (the driver wakes and exits), the
//! driver joined or left to exit on its own (`shutdown.rs`, `stop_driver`), and then
//! [`Core::close`]: each shard closed and drained under its lock, held entries too, so that a
//! schedule racing it is drained or refused, and a claim after it (the batch of an advance still
//! under way, an executor's job) finds nothing. The stop needs no advance lock for that: a
//! driver inside a task when the timer is dropped finds the rest of its batch gone. The values
//! the drain took are counted for the delay queue's closing (`shutdown.rs`, `close_values`).
//! A full shutdown with executor threads drains all but the entries held for their jobs
//! (`Core::close_keeping_held`), joins the threads, which claim and run those on the closed
//! shards, and drains what is left: the tasks handed over before the shutdown run.
//!
//! **Shrink.** `shrink.rs` gives back each shard's vacant slots after its last occupied one, in
//! steps under its lock, the task slab its empty pages, and the advance's buffers (which an advance
//! cuts back to 16,384 entries each after a burst) their room, unless an advance holds them. The
//! driver shrinks by itself, a step at a time, by the slots the shards wrote; and a stop gives
//! back what its drain emptied, unless a drop leaves the state to be freed whole.
//!
//! [`Core::close`]: crate::shard::core::Core::close

use std::collections::HashMap;
use std::time::Duration;

use super::shrink::AUTO_MIN_SLOTS;
use super::shutdown::Draining;
use super::stats::{BucketLoad, TimerStats};
use super::Shared;
use super::{Timer, UnfiredTask};
use crate::clock::nanos_to_duration;
use crate::deadline::Deadline;
use crate::shard::core::Merge;
use crate::shard::wheel::Fired;
use crate::sync::Ordering;

impl Timer {
    /// Shutdown (`dropping == false`, waiting up to `wait`, `None` for as long as it takes) or
    /// drop (module docs, "The stop").
    pub(in crate::timer) fn stop(&self, dropping: bool, wait: Option<Duration>) -> Vec<UnfiredTask> {
        let shared = self.shared();
        // Counted before the flag: whoever reads the flag set finds this drain in flight too.
        let draining = Draining::begin(&shared.draining);
        let stopping = self.stop_driver(dropping, wait);
        // The advance in progress on another thread (a manual timer's), waited for as the
        // driver is: its batch runs. A drop, or one from inside a task, does not wait: the close
        // takes the rest of that batch, whose claims then find nothing.
        let mut serial = if stopping.inside_task || dropping {
            None
        } else if stopping.wait_fully {
            Some(shared.advance_lock.lock())
        } else {
            match stopping.left() {
                Some(Some(limit)) => shared.advance_lock.try_lock_for(limit),
                Some(None) => Some(shared.advance_lock.lock()),
                None => shared.advance_lock.try_lock(),
            }
        };
        // The wakers the drain's drops hand over are woken after it (`wakes.rs`); inside a task,
        // the advance's own batch keeps them.
        #[cfg(feature = "async")]
        let wakes = (!stopping.inside_task).then(crate::timer::wakes::Batch::open);
        // Executor threads a full shutdown joins run what they were handed: the drain leaves
        // their entries held, for their claims on the closed shards, and takes what is left after.
        // They are joined with the advance lock released, since a task of theirs may advance this
        // timer (it then finds the flag set and hands nothing over): joined under it, the two
        // would wait for each other.
        let unfired = match (&shared.executor, stopping.wait_fully) {
            (Some(executor), true) => shared.drain_around(|| {
                drop(serial.take());
                executor.close(true, false);
            }),
            _ => shared.unfired(shared.drain(!dropping, false)),
        };
        drop(serial);
        drop(draining);
        #[cfg(feature = "async")]
        if let Some(wakes) = wakes {
            shared.count_panicked(wakes.close());
        }
        if let Some(executor) = &shared.executor {
            executor.close(stopping.wait_fully, dropping);
        }
        shared.close_values();
        // A drop that leaves the last hold on the state frees it whole.
        shared.shrink_stopped(dropping && crate::sync::Arc::strong_count(shared) == 1);
        unfired
    }
}

/// A task a drain took, for the shutdown to hand back: its stamp and closure, and its deadline.
type Unfired = ((u64, crate::entry::Task), Deadline);

/// What drains took for the shutdown to hand back: the tasks, and the instants before the
/// clock's origin by stamp (`Extra::before_origin`), which order them.
#[derive(Default)]
pub(super) struct Drained {
    tasks: Vec<Unfired>,
    records: HashMap<u64, i64>,
}

impl Shared {
    /// A full shutdown's drain with executor threads (module docs, "The stop"): every entry but
    /// those held for the executors' claims, then `between` (the join of the threads, which claim
    /// and run those), then what is left; the tasks of both in the order they would have fired
    /// in, sorted once, each drain's instants before the origin kept for the order.
    pub(super) fn drain_around(&self, between: impl FnOnce()) -> Vec<UnfiredTask> {
        let mut drained = self.drain(true, true);
        between();
        let Drained { tasks, records } = self.drain(true, false);
        drained.tasks.extend(tasks);
        drained.records.extend(records);
        self.unfired(drained)
    }

    /// The stop's drain ([`Core::close`](crate::shard::core::Core::close)): every entry taken out
    /// (but those held for an executor's claims, if `keep_held`), each shard closed under its
    /// lock. With `report`, the tasks are kept for [`unfired`](Self::unfired), which puts them in
    /// the order they would have fired in; otherwise (and a tick group's always: its drop
    /// abandons its members) they are dropped here, a panic of a drop caught and counted.
    pub(super) fn drain(&self, report: bool, keep_held: bool) -> Drained {
        let (mut drained, mut merge) = (Vec::new(), Merge::default());
        let mut records = HashMap::new();
        let keep = |extra: &mut super::Extra| records.extend(extra.before_origin.drain());
        match keep_held {
            true => self.core.close_keeping_held(&mut drained, &mut merge, keep),
            false => self.core.close_with(&mut drained, &mut merge, keep),
        }
        let (mut counted, mut values, mut panicked) = (0, 0, 0);
        let mut unfired = Vec::new();
        for Fired { deadline, stamp, payload: task, .. } in drained {
            counted += usize::from(task.is_counted());
            values += u64::from(task.is_value());
            if report && task.is_counted() {
                unfired.push(((stamp, task.into_box()), deadline));
            } else {
                panicked += u64::from(crate::unwind::drop_caught(task));
            }
        }
        self.lower_bound(counted);
        self.count_panicked(panicked);
        // Seeded fault `shutdown_leaves_values_counted` (docs/loom.md).
        if !fault!("shutdown_leaves_values_counted") {
            self.abandoned_values.fetch_add(values, Ordering::Relaxed);
        }
        Drained { tasks: unfired, records }
    }

    /// The tasks drains took, in the order they would have fired in: by the instants, equal
    /// ones by stamp, those at the origin's word by the instants kept before it; each at its
    /// deadline (`TickLength::deadline_nanos`).
    pub(super) fn unfired(&self, drained: Drained) -> Vec<UnfiredTask> {
        let Drained { tasks: mut unfired, records } = drained;
        unfired.sort_by_key(|&((stamp, _), deadline)| (deadline.instant_order(), stamp));
        let origin = self.time.ticks.origin();
        if let Some(first) = unfired.iter().position(|&(_, deadline)| deadline == origin) {
            let run = unfired[first..].iter().take_while(|&&(_, deadline)| deadline == origin).count();
            unfired[first..first + run]
                .sort_by_key(|&((stamp, _), _)| records.get(&stamp).copied().unwrap_or(0));
        }
        let at = |deadline: Deadline| nanos_to_duration(self.time.ticks.deadline_nanos(deadline));
        let timer = self.timer_id();
        let mut unfired: Vec<UnfiredTask> = unfired
            .into_iter()
            .map(|((_, task), deadline)| UnfiredTask { deadline: at(deadline), task, timer })
            .collect();
        unfired.sort_by_key(|task| task.deadline);
        unfired
    }

    /// [`Timer::stats`](crate::Timer::stats): the core's load and totals, the members', the
    /// panics; an executor's discards move from `fired` (the core's count of its claim) to
    /// `abandoned`.
    pub(crate) fn stats(&self) -> TimerStats {
        // The core's totals and the discards read in one hold of the discards' lock (`Tallies`).
        let (totals, discarded) = {
            let discarded = self.tallies.discarded.lock();
            (self.core.totals(), *discarded)
        };
        let members = self.members.totals();
        let load = self.core.stats();
        TimerStats {
            pending: self.len(),
            scheduled: totals.scheduled + members.scheduled,
            fired: totals.fired.saturating_sub(discarded) + members.fired,
            cancelled: totals.cancelled + members.cancelled,
            abandoned: totals.abandoned + discarded + members.abandoned,
            panicked: self.tallies.panicked.load(Ordering::Relaxed),
            rearmed: totals.rearmed,
            queued_buckets: load.queued_buckets,
            levels_in_use: load.levels_in_use,
            resident_buckets: load.resident_buckets,
            pending_per_level: load.pending_per_level,
            fullest_bucket: load.fullest_bucket.map(|(level, slot, entries)| BucketLoad {
                level,
                slot,
                entries,
            }),
            lateness: self.lateness.summary(),
        }
    }

    /// After a stop's drain (module docs, "Shrink"): gives back the slots and blocks the drain
    /// emptied while the state outlives the stop (a shut-down timer kept, or a drop's state that
    /// a future or a detached driver still holds), once the shards wrote [`AUTO_MIN_SLOTS`] or
    /// more; not if the state is `freed_whole` (a drop's, with no other hold on it).
    fn shrink_stopped(&self, freed_whole: bool) {
        if freed_whole || self.core.slots() < AUTO_MIN_SLOTS {
            return;
        }
        let _ = self.give_back();
    }

    /// Takes every pending value entry out in place, each shard under its lock, held ones too,
    /// counted out as cancelled (a bounded timer's gauge lowered): their payloads appended to
    /// `out`, how many. A delay queue's clear (`value_entries.rs`), under `advance_lock`.
    pub(super) fn take_values(&self, out: &mut Vec<super::Payload>) -> usize {
        let before = out.len();
        self.core.cancel_each(super::Payload::is_value, out);
        let taken = out.len() - before;
        self.lower_bound(taken);
        taken
    }
}

#[cfg(test)]
#[path = "stop_tests.rs"]
mod tests;
