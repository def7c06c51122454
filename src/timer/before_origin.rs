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
//! of the slot never finds an earlier one's). A schedule or a reset that sets such a deadline
//! records it; a reset whose deadline has the origin's word otherwise (the origin itself, or a
//! tick-0 instant with ticks too long for exact words) clears it; `deadline` looks here only
//! when the entry's word is the origin's. Nothing else ever reads or writes this: a schedule by
//! delay, and a reset or a schedule to any later instant, pay only a comparison of the word.
//!
//! Entries that ended leave their record here until the next pruning: one every time the records
//! double (from 64), which keeps only those of entries still pending (a slot lock each, pinned:
//! `entry/readers.rs`), so the memory stays proportional to the pending tasks that have such a
//! deadline. Locking: this lock, then a slot's; never the other way round (a handle reads its
//! entry's word, releases the slot, then looks here).
//!
//! A concurrent reset and `deadline` may see the word and the record of different resets, as two
//! snapshots; once the resets have returned, `deadline` reads the last one's.

use std::collections::HashMap;
use std::time::Instant;

use super::store::{Time, When};
use super::values::{exact_of, instant_of};
use crate::clock::TickLength;
use crate::deadline::Deadline;
use crate::entry::{self, EntryArena, Ticket};
use crate::sync::Mutex;

/// Records kept before the first pruning.
const PRUNE_FROM: usize = 64;

/// The deadlines before the clock's origin of a timer's pending entries (module docs).
#[derive(Debug, Default)]
pub(crate) struct BeforeOrigin(Mutex<Records>);

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
            self.set_cold(arena, time, ticket, When::At(at));
        }
    }

    /// After a successful reset of `ticket` to `when`, whose deadline word is `to`: records or
    /// clears its instant if `to` is the origin's word (nothing to do otherwise: the word itself
    /// reads back, and a record left from an earlier reset is not looked at).
    #[inline]
    pub(crate) fn reset(
        &self,
        arena: &EntryArena,
        time: &Time,
        (ticket, when, to): (Ticket, When, Deadline),
    ) {
        if to == time.ticks.origin() {
            self.set_cold(arena, time, ticket, when);
        }
    }

    #[cold]
    fn set_cold(&self, arena: &EntryArena, time: &Time, ticket: Ticket, when: When) {
        let base = time.clock.base();
        let mut records = self.0.lock();
        match when {
            When::At(at) if at < base => {
                records.by_stamp.insert(ticket.generation, (ticket, exact_of(base, at)));
            }
            _ => {
                records.by_stamp.remove(&ticket.generation);
            }
        }
        if records.by_stamp.len() >= records.prune_at.max(PRUNE_FROM) {
            let _pin = arena.pin();
            records.by_stamp.retain(|_, (ticket, _)| entry::deadline(arena, *ticket).is_some());
            records.prune_at = records.by_stamp.len() * 2;
        }
    }

    /// The instant of the pending entry `ticket`, whose deadline word is `deadline`: the recorded
    /// one before the origin if the word is the origin's and one is recorded, else the word's.
    pub(crate) fn instant(&self, time: &Time, ticket: Ticket, deadline: Deadline) -> Option<Instant> {
        let ticks: TickLength = time.ticks;
        if deadline == ticks.origin() {
            if let Some(&(_, exact)) = self.0.lock().by_stamp.get(&ticket.generation) {
                return Some(instant_of(time.clock.base(), exact));
            }
        }
        time.clock.deadline_instant(ticks, deadline)
    }
}
