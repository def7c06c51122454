//! Values as timer entries: the timer's side of the delay queue of values (`queue/`).
//!
//! A value is held by its timer entry itself, in the entry's payload (a value task:
//! `entry/inline_task/value.rs`, inline up to 16 bytes with its exact deadline, in a block of the
//! task slab up to 256), and named by the entry's core handle ([`ValueTicket`]: shard, slot and
//! stamp). Every operation is the timer's own, on that entry, under its shard's lock
//! (`value_entries.rs` has each):
//!
//! * **insert** ([`Timer::insert_value`]): a schedule, with one reading of the clock; the value's
//!   exact deadline (nanoseconds from the clock's base, signed) goes into the payload beside it.
//! * **remove** ([`Timer::remove_value`]): the core's cancel, which hands the payload back, and
//!   the value out of it. The cancel checks the handle's stamp under the shard's lock, so a key of
//!   an expired or removed value takes nothing, also from a later value in its slot.
//! * **reset** ([`Timer::reset_value`]): the core's reset, which moves the entry and writes the
//!   new exact deadline into the payload in one critical section of its shard.
//! * **deadline** ([`Timer::value_deadline`]): the exact deadline, read under the shard's lock.
//! * **expiry**: the advance claims each value entry of its batch as it claims any, but does not
//!   run it: the claimed values of a batch are handed, after the batch, in its order (deadline
//!   order, ties in insertion order), to the timer's [`ValueSink`] in one call (the queue takes its
//!   ready list's lock once per batch). With executor threads, the driver claims the batch's value
//!   entries itself before handing the rest to the executors. The sink never blocks (its list is
//!   unbounded).
//!
//! **Far deadlines.** The exact deadline beside a value is an `i64` of nanoseconds from the
//! clock's base, 292 years either way, while the timer's clock reaches 584 years (and a long tick
//! further). A deadline past that range is stored as [`FAR`] and reads back through the entry's
//! deadline word instead: the start of the tick it is due in, never before the deadline, as a
//! closure's far deadline reads back (`deadline.rs`). An instant more than 292 years before the
//! base (a deadline long passed, due at once) reads back as base − 292 years.
//!
//! **Exactly once.** A value leaves its entry only with the payload, and the payload only through
//! the one take of the entry under its shard's lock: by the advance's claim (and then to the sink),
//! by a remove's cancel (and then to its caller), or by a shutdown's drain (which drops it, or
//! hands it back inside an `UnfiredTask` whose run drops it; the drain counts the values it takes,
//! and the shutdown hands that count to the sink's `closed`, which counts them out of the queue's
//! `len`). A reset never takes. So `remove` racing expiry gives the value to exactly one side, with
//! no protocol of the queue's own (loom model `queue::remove_racing_expiry_then_reuse`).
//!
//! **Clear** ([`Timer::clear_values`]): every shard, under its lock in turn, takes each pending
//! value entry out in place, held ones too, counted out as cancelled. Only value entries: a timer
//! has one sink, so they are all its queue's. The clear holds `advance_lock` (unless called from a
//! timer's thread, which must not wait for an advance), so that an advance cannot claim a value
//! before the clear reaches its shard and hand it over after the queue emptied its ready list (loom
//! models `queue_clear::*`). A shutdown that finds the lock held by a clear leaves the closing of
//! the queue's consumers to the clear, as to an advance (`shutdown.rs`, `released_advance_lock`).
//!
//! Locks: none beyond the timer's. The sink is called by the thread that advances the timer with
//! no shard's lock held, as a task runs; it takes only its own lock.

use std::time::Instant;

use super::time::Time;
use super::{Timer, When};
use crate::deadline::Deadline;
use crate::sync::OnceLock;
use crate::ScheduleError;

pub(crate) use super::value_entries::{FiredValues, ValueTicket};

/// Where a timer's fired values go: the delay queue that owns the timer.
pub(crate) trait ValueSink: Send + Sync {
    /// Takes the values of one fired batch, in the order they fired, and wakes the consumers
    /// waiting for them; returns how many of those wakes panicked (caught, and counted by the
    /// timer as panicked tasks, as a sleep's wake is: `wakes.rs`).
    fn deliver(&self, fired: &mut FiredValues<'_>) -> u64;

    /// The timer shut down (after its drain): no value fires any more, and the drains took
    /// `abandoned()` pending values (dropped, or handed back inside the shutdown's unfired
    /// tasks), which the sink takes under the lock it closes under. Returns as `deliver`.
    fn closed(&self, abandoned: &mut dyn FnMut() -> u64) -> u64;
}

/// A timer's value sink, set once by the queue that owns it.
pub(crate) type Sink = OnceLock<Box<dyn ValueSink>>;

/// The exact deadline of a value due past what an `i64` of nanoseconds from the clock's base
/// holds: read back through the entry's deadline word (module docs, "Far deadlines").
pub(crate) const FAR: i64 = i64::MAX;

/// The signed nanoseconds from `base` to `at`, saturating ([`FAR`] after, 292 years before).
pub(super) fn exact_of(base: Instant, at: Instant) -> i64 {
    let (nanos, before) = match at.checked_duration_since(base) {
        Some(after) => (after.as_nanos(), false),
        None => (base.duration_since(at).as_nanos(), true),
    };
    let nanos = i64::try_from(nanos).unwrap_or(i64::MAX);
    if before {
        -nanos
    } else {
        nanos
    }
}

/// The instant `exact` nanoseconds from `base` ([`exact_of`]'s inverse, saturating at `base`).
pub(super) fn instant_of(base: Instant, exact: i64) -> Instant {
    let offset = std::time::Duration::from_nanos(exact.unsigned_abs());
    let at = if exact < 0 { base.checked_sub(offset) } else { base.checked_add(offset) };
    at.unwrap_or(base)
}

impl Time {
    /// The exact deadline of `when` on the reading `now`, as a value task keeps it.
    pub(super) fn value_exact(&self, now: u64, when: When) -> i64 {
        match when {
            When::After(delay) => i64::try_from(u128::from(now) + delay.as_nanos()).unwrap_or(FAR),
            When::At(at) => exact_of(self.clock.base(), at),
        }
    }

    /// The instant of a value's deadline: `exact` from the clock's base, or for [`FAR`] the
    /// instant of the entry's deadline word `deadline`.
    pub(super) fn value_instant(&self, exact: i64, deadline: Deadline) -> Instant {
        let base = self.clock.base();
        if exact == FAR {
            if let Some(at) = self.clock.deadline_instant(self.ticks, deadline) {
                return at;
            }
        }
        instant_of(base, exact)
    }
}

impl Timer {
    /// Makes `sink` the destination of this timer's fired values (once: a later call is ignored).
    #[inline]
    pub(crate) fn set_value_sink(&self, sink: Box<dyn ValueSink>) {
        self.shared().set_value_sink(sink);
    }

    /// Inserts `value` due at `when` (see the module docs): its ticket and exact deadline, or the
    /// value back with the reason.
    pub(crate) fn insert_value<V: Send + 'static>(
        &self,
        when: When,
        value: V,
    ) -> Result<ValueTicket, (V, ScheduleError)> {
        self.shared().insert_value(when, value)
    }

    /// Cancels the pending value entry `ticket` names and hands back its value and exact deadline;
    /// `None` once it fired, was removed, or its slot holds a later entry.
    pub(crate) fn remove_value<V: Send + 'static>(&self, ticket: ValueTicket) -> Option<(V, i64)> {
        self.shared().remove_value(ticket)
    }

    /// Moves the pending value entry `ticket` names to `when`, exact deadline included: `true` iff
    /// it was pending and is now due then (the timer's reset, `reset.rs`).
    #[inline]
    pub(crate) fn reset_value(&self, ticket: ValueTicket, when: When) -> bool {
        self.shared().reset_value(ticket, when)
    }

    /// The deadline of the pending value entry `ticket` names.
    #[inline]
    pub(crate) fn value_deadline(&self, ticket: ValueTicket) -> Option<Instant> {
        self.shared().value_deadline(ticket)
    }

    /// Claims every pending value entry of this timer, as a remove's cancel does, and drops the
    /// values; calls `then` with their number before any advance may hand values over again.
    /// Returns what `then` returned. Plain tasks are left alone: a timer has one value sink, so
    /// every value entry of it is its queue's.
    ///
    /// So that no value is claimed by an advance before the scan reaches it and handed over after
    /// `then` emptied the ready list, this holds `advance_lock` throughout: it waits for an
    /// advance in progress. Where it must not wait (`Shared::may_wait_for_advance`) it only tries
    /// the lock, and goes on without it if it is held. Either way each value goes to exactly one
    /// claim, the firing's, a remove's or this one (module docs, "Exactly once").
    ///
    /// Cost: one lock of each shard, held while it walks the slots the shard wrote. The values
    /// are dropped after the lock is released, each drop caught.
    pub(crate) fn clear_values<R>(&self, then: impl FnOnce(usize) -> R) -> R {
        self.shared().clear_values(then)
    }
}
