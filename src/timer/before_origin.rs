//! Deadlines before the clock's origin, as [`TimerHandle::deadline`](crate::TimerHandle::deadline)
//! reads them back.
//!
//! A deadline word counts from the clock's origin (`deadline.rs`), so every instant before it (a
//! deadline long passed: the task is due at once) has the origin's word ([`TickLength::origin`]),
//! and the 48-byte slot has no room for more. A `Sleep` keeps its instant itself, a value of the
//! delay queue its exact deadline beside the value (`values.rs`); a closure's entry cannot without
//! growing every slot, or wrapping the closure. So the timer keeps those instants here, beside
//! the entries: the signed nanoseconds from the clock's base (292 years either way, as a value's),
//! by the entry's stamp (its generation: unique among the timer's schedules, so a later occupant
//! of the slot never finds an earlier one's). A schedule that sets such a deadline records it.
//!
//! **Word and record from the same reset.** A handle's reset whose word is the origin's runs its
//! slot work under this lock and sets or removes the record in the same critical section: set
//! for an instant before the origin, removed for any other (the origin itself). Only such a reset
//! (or the schedule, before its handle exists) writes the origin's word. `deadline`, finding the
//! origin's word, takes this lock and reads the word again under it: so the word and the record
//! it reads are always those of one reset, never an origin word beside a record an earlier reset
//! left (loom model `before_origin::a_reset_to_the_origin_racing_deadline`; seeded fault
//! `before_origin_word_outside_records`). A reset to any later word takes no lock (one comparison
//! of the word): it may leave a record beside its word, which no one reads (the word is not the
//! origin's) and which the next reset to the origin's word replaces or removes, or a pruning
//! drops once the entry ended. Such a reset may come between `deadline`'s two reads: the second
//! then finds the later word, and `deadline` returns that word's instant, never the first read's
//! (loom model `before_origin::a_reset_to_a_later_word_racing_deadline`; seeded fault
//! `before_origin_converts_first_read`). So may the end of the entry and a pruning of its record:
//! the second read finds the entry ended, and `deadline` returns `None`, never the origin's
//! instant for want of the record (loom model
//! `before_origin::a_cancel_and_a_pruning_racing_deadline`; seeded fault
//! `before_origin_trusts_first_read`). A `Sleep`'s reset never records: the sleep keeps its
//! instant.
//!
//! **Order.** Every deadline before the origin has the origin's word, so the batch sort
//! (`deadline.rs`) alone would fire them in scheduling order. The advance (`advance.rs`) hands
//! the sorted batch to [`BeforeOrigin::order_batch`], which puts the run of the origin's word in
//! the order of the recorded instants (the origin itself, with no record, last; ties in stamp order):
//! deadline order, as for passed deadlines after the origin. The batch's entries are in transit, so
//! no reset moves their words or records meanwhile. Without records kept it is one load.
//!
//! Entries that ended leave their record here until a pruning, which keeps only those of entries
//! still pending: every time the records double (from 64), and at every shrink of the arena
//! (`shrink.rs`: `Timer::shrink` and the driver's), so the memory stays proportional to the
//! pending tasks that have such a deadline. Locking: this lock, then a slot's; never the other way
//! round. No thread waits for this lock pinned (`entry/readers.rs`): the pins taken under it cover
//! a reset's slot work, or one entry's look, each.

use std::collections::HashMap;
use std::time::Instant;

use super::time::{Time, When};
use super::values::{exact_of, instant_of};
use crate::clock::TickLength;
use crate::deadline::Deadline;
use crate::entry::{self, EntryArena, Ticket};
use crate::sync::{AtomicBool, Mutex, Ordering};

/// Records kept before the first pruning.
const PRUNE_FROM: usize = 64;

/// The deadlines before the clock's origin of a timer's pending entries (module docs).
#[derive(Debug, Default)]
pub(crate) struct BeforeOrigin {
    /// Whether any record is kept: a pruning looks only then. Written under the lock.
    kept: AtomicBool,
    records: Mutex<Records>,
}

#[derive(Debug, Default)]
struct Records {
    /// By the entry's stamp: its ticket (to prune by) and its deadline from the clock's base.
    by_stamp: HashMap<u64, (Ticket, i64)>,
    /// The count at which the next pruning runs.
    prune_at: usize,
}

impl BeforeOrigin {
    /// After a schedule of `ticket` at `at`: records `at` if it is before the origin.
    #[inline]
    pub(crate) fn scheduled(&self, arena: &EntryArena, time: &Time, ticket: Ticket, at: Instant) {
        if at < time.clock.base() {
            let mut records = self.records.lock();
            self.set(&mut records, arena, time, ticket, When::At(at));
        }
    }

    /// A handle's reset of `ticket` to `when`, whose deadline word is `to`, by `reset` (the slot
    /// work, pinned): under the lock, recording or removing its instant, if `to` is the origin's
    /// word; else `reset` alone.
    #[inline]
    pub(crate) fn reset(
        &self,
        (arena, time): (&EntryArena, &Time),
        (ticket, when, to): (Ticket, When, Deadline),
        reset: impl FnOnce() -> bool,
    ) -> bool {
        if to != time.ticks.origin() {
            return reset();
        }
        // Seeded fault `before_origin_word_outside_records` (docs/loom.md): the word is written
        // before the lock is taken, and only a reset to the origin's word records.
        if fault!("before_origin_word_outside_records") {
            let moved = reset();
            if moved && to == time.ticks.origin() {
                self.set(&mut self.records.lock(), arena, time, ticket, when);
            }
            return moved;
        }
        self.reset_cold(arena, time, (ticket, when), reset)
    }

    #[cold]
    fn reset_cold(
        &self,
        arena: &EntryArena,
        time: &Time,
        (ticket, when): (Ticket, When),
        reset: impl FnOnce() -> bool,
    ) -> bool {
        let mut records = self.records.lock();
        let moved = reset();
        if moved {
            self.set(&mut records, arena, time, ticket, when);
        }
        moved
    }

    /// Records `when` for `ticket` if it is before the origin, else removes its record; prunes
    /// when the records doubled.
    fn set(&self, records: &mut Records, arena: &EntryArena, time: &Time, ticket: Ticket, when: When) {
        let base = time.clock.base();
        match when {
            When::At(at) if at < base => {
                records.by_stamp.insert(ticket.generation, (ticket, exact_of(base, at)));
            }
            _ => {
                records.by_stamp.remove(&ticket.generation);
            }
        }
        if records.by_stamp.len() >= records.prune_at.max(PRUNE_FROM) {
            self.prune_locked(records, arena);
        }
        self.kept.store(!records.by_stamp.is_empty(), Ordering::Relaxed);
    }

    /// Drops the records of entries no longer pending (after a shrink: `shrink.rs`).
    pub(crate) fn prune(&self, arena: &EntryArena) {
        if self.kept.load(Ordering::Relaxed) {
            self.prune_locked(&mut self.records.lock(), arena);
        }
    }

    fn prune_locked(&self, records: &mut Records, arena: &EntryArena) {
        // One pin per look: a shrink's grace period never waits for the whole pass.
        records.by_stamp.retain(|_, (ticket, _)| {
            let _pin = arena.pin();
            entry::deadline(arena, *ticket).is_some()
        });
        records.prune_at = records.by_stamp.len() * 2;
        self.kept.store(!records.by_stamp.is_empty(), Ordering::Relaxed);
    }

    /// The instant of the pending entry `ticket`, whose deadline word read `deadline`: the recorded
    /// one before the origin if the word is the origin's (read again under the lock) and one is
    /// recorded, else the word's. `None` if the entry ended meanwhile.
    pub(crate) fn instant(
        &self,
        arena: &EntryArena,
        time: &Time,
        ticket: Ticket,
        deadline: Deadline,
    ) -> Option<Instant> {
        let ticks: TickLength = time.ticks;
        if deadline != ticks.origin() {
            return time.clock.deadline_instant(ticks, deadline);
        }
        let records = self.records.lock();
        // Seeded fault `before_origin_trusts_first_read` (docs/loom.md): the word is not read
        // again, so an entry that ended meanwhile, its record pruned, reads as due at the origin.
        let word = if fault!("before_origin_trusts_first_read") {
            deadline
        } else {
            let _pin = arena.pin();
            entry::deadline(arena, ticket)?
        };
        match records.by_stamp.get(&ticket.generation) {
            Some(&(_, exact)) if word == ticks.origin() => Some(instant_of(time.clock.base(), exact)),
            // Seeded fault `before_origin_converts_first_read` (docs/loom.md): a word read under
            // the lock that is no longer the origin's only turns the record down, and the instant
            // is the first read's.
            _ if fault!("before_origin_converts_first_read") => time.clock.deadline_instant(ticks, deadline),
            _ => time.clock.deadline_instant(ticks, word),
        }
    }

    /// Puts the run of `batch` (sorted by deadline word, then stamp) whose word is the origin's
    /// in the order of the instants recorded for it: such a word stands for every instant up to
    /// the origin, so the batch sort alone would fire those deadlines in scheduling order. Ties,
    /// and the origin itself (no record: the latest of them), keep the stamp order (a stable
    /// sort). Nothing to do, and no lock taken, unless a record is kept.
    pub(crate) fn order_batch<T>(
        &self,
        origin: Deadline,
        batch: &mut [(T, Deadline)],
        stamp: impl Fn(&T) -> u64,
    ) {
        if !self.kept.load(Ordering::Relaxed) {
            return;
        }
        let Some(first) = batch.iter().position(|&(_, deadline)| deadline == origin) else { return };
        let run = batch[first..].iter().take_while(|&&(_, deadline)| deadline == origin).count();
        if run < 2 {
            return;
        }
        // The batch's entries are in transit, their words fixed (a reset finds them firing), and
        // a pruning keeps the records of entries not ended: each record read is the entry's.
        let records = self.records.lock();
        batch[first..first + run]
            .sort_by_key(|(item, _)| records.by_stamp.get(&stamp(item)).map_or(0, |&(_, exact)| exact));
    }

    /// How many records are kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.records.lock().by_stamp.len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::{ManualClock, Timer};

    /// Records of tasks that fired go at the next shrink, whatever else is scheduled.
    #[test]
    fn a_shrink_drops_the_records_of_tasks_that_ended() {
        let timer =
            Timer::builder().tick(Duration::from_millis(1)).clock(ManualClock::new()).manual().build();
        let at = timer.now() - Duration::from_millis(5);
        let handles: Vec<_> = (0..30_000).map(|_| timer.schedule_at(at, || {})).collect();
        let records = &timer.shared().store.before_origin;
        assert_eq!(records.len(), 30_000);
        assert_eq!(handles[0].deadline(), Some(at));
        timer.advance_clock(Duration::ZERO);
        assert!(timer.is_empty() && handles.iter().all(|h| h.deadline().is_none()));
        timer.shrink();
        assert_eq!(records.len(), 0);
        assert!(!records.kept.load(crate::sync::Ordering::Relaxed));
    }
}
