//! The value entries behind `timer/values.rs` on the core (the delay queue of values' side of the
//! timer; `timer/values.rs` has the protocol and the facade): a value's ticket, a fired batch's
//! values, and the operations on them. Reached as `timer::value_entries`.
//!
//! **How each works on the core** (what this file implements):
//!
//! * A value is a **value payload**: `InlineTask::value_in(value, exact, &self.slab)` (its exact
//!   deadline beside it, `entry/inline_task/value.rs`), counted as any task.
//! * [`ValueTicket`] is the entry's core handle (`ValueTicket(CoreHandle)`, `Copy`): equal and
//!   hashed by (shard index, slot, stamp), `CoreHandle::index` and `CoreHandle::entry` (a timer's
//!   stamps are unique, so within one timer these name one entry; `same_header` may be compared
//!   too). A fired value's ticket is made by the advance from its due entry
//!   (`Core::handle_of(&Due)`), equal to the one `insert_value` returned.
//! * `insert_value`: `Shared::insert` with the value payload at the deadline of `when` on one
//!   reading of the clock (`self.time.deadline(when)`, `self.time.value_exact(now, when)`,
//!   `self.time.stamp_by(when)`), before-origin `None` (the exact deadline is the value's own);
//!   a refusal takes the value back out of the payload (`InlineTask::take_value`).
//! * `remove_value`: `handle::cancel_take(&ticket.0)` (the core's cancel, the bound lowered) and
//!   the value taken out of the payload.
//! * `reset_value`: `handle::reset_to(&ticket.0, deadline, Some(exact))`, which moves the entry
//!   and rewrites the exact deadline in its payload in one critical section of its shard.
//! * `value_deadline`: `handle::deadline_of(&ticket.0)` (the word and the payload's exact
//!   deadline, under the shard's lock), then `self.time.value_instant(exact, word)`.
//! * `clear_values`: holds `advance_lock` (or only tries it where `may_wait_for_advance` is
//!   false), and takes every pending value entry in place with
//!   `Shared::take_values` (each shard under its lock, held entries too, counted out as
//!   cancelled); calls `then(n)`, releases the lock, `released_advance_lock()`, and drops the
//!   values after, each drop caught (`crate::unwind::drop_caught`).
//! * **Fired values reach the sink from the advance**: the advance (and with executor threads,
//!   the driver before it hands the rest over) claims each value entry of the batch itself, as a
//!   [`FiredValue`] (payload, ticket, deadline word), in batch order, and after the batch calls
//!   [`Shared::deliver_values`], which hands them to the sink in one call
//!   (`sink.deliver(&mut FiredValues(values, &self.time))`) and counts its panics
//!   (`count_panicked`); without a sink they are dropped.
//! * `set_value_sink`: `self.values.get_or_init(|| sink)`.
//!
//! Core and `Shared` calls this file may use: `Shared::insert`, `Shared::take_values`,
//! `handle::{cancel_take, reset_to, deadline_of}`, `self.slab`, `self.time`, `self.values`,
//! `self.advance_lock`, `may_wait_for_advance`, `released_advance_lock`, `count_panicked`.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::time::Instant;

use super::{handle, CoreHandle, Payload, Shared};
use crate::deadline::Deadline;
use crate::timer::values::{ValueSink, FAR};
use crate::timer::{Time, When};
use crate::ScheduleError;

/// A value entry fired by an advance, claimed, on its way to the sink.
pub(crate) struct FiredValue {
    pub(crate) task: Payload,
    pub(crate) ticket: ValueTicket,
    pub(crate) deadline: Deadline,
}

/// The value entries of one fired batch, for the sink to take the values out of.
pub(crate) struct FiredValues<'a>(pub(super) &'a mut Vec<FiredValue>, pub(super) &'a Time);

impl FiredValues<'_> {
    /// The batch's values of type `V` (a queue's timer holds no other), with their tickets and
    /// deadlines, in firing order. Any other task of the batch is dropped.
    pub(crate) fn drain<V: Send + 'static>(
        &mut self,
    ) -> impl Iterator<Item = (V, ValueTicket, Instant)> + '_ {
        let time = self.1;
        self.0.drain(..).filter_map(move |fired| {
            let (value, exact) = fired.task.take_value::<V>().ok()?;
            Some((value, fired.ticket, time.value_instant(exact, fired.deadline)))
        })
    }
}

/// A value entry's ticket: its core handle (module docs).
#[derive(Clone, Copy)]
pub(crate) struct ValueTicket(pub(crate) CoreHandle);

impl PartialEq for ValueTicket {
    fn eq(&self, other: &Self) -> bool {
        (self.0.index(), self.0.entry()) == (other.0.index(), other.0.entry())
    }
}

impl Eq for ValueTicket {}

impl Hash for ValueTicket {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.0.index(), self.0.entry()).hash(state);
    }
}

impl fmt::Debug for ValueTicket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (slot, generation) = self.0.entry();
        f.debug_struct("Key").field("slot", &slot).field("generation", &generation).finish()
    }
}

impl Shared {
    /// [`Timer::set_value_sink`](crate::Timer::set_value_sink).
    pub(crate) fn set_value_sink(&self, sink: Box<dyn ValueSink>) {
        self.values.get_or_init(|| sink);
    }

    /// [`Timer::insert_value`](crate::Timer::insert_value).
    pub(crate) fn insert_value<V: Send + 'static>(
        &self,
        when: When,
        value: V,
    ) -> Result<ValueTicket, (V, ScheduleError)> {
        if self.is_shut_down() {
            return Err((value, ScheduleError::ShutDown));
        }
        let (now, deadline) = match self.time.deadline(when) {
            Ok(found) => found,
            Err(error) => return Err((value, error)),
        };
        let exact = self.time.value_exact(now, when);
        let payload = match Payload::value_in(value, exact, &self.slab) {
            Ok(payload) => payload,
            Err(value) => return Err((value, self.full())),
        };
        match self.insert((deadline, self.time.stamp_by(when)), payload, None) {
            Ok(handle) => Ok(ValueTicket(handle)),
            Err((payload, error)) => match payload.take_value::<V>() {
                Ok((value, _)) => Err((value, error)),
                Err(_) => unreachable!("a refused value entry keeps its value"),
            },
        }
    }

    /// [`Timer::remove_value`](crate::Timer::remove_value).
    pub(crate) fn remove_value<V: Send + 'static>(&self, ticket: ValueTicket) -> Option<(V, i64)> {
        handle::cancel_take(&ticket.0)?.take_value::<V>().ok()
    }

    /// [`Timer::reset_value`](crate::Timer::reset_value).
    pub(crate) fn reset_value(&self, ticket: ValueTicket, when: When) -> bool {
        let Ok((now, deadline)) = self.time.deadline(when) else { return false };
        handle::reset_to(&ticket.0, deadline, Some(self.time.value_exact(now, when)))
    }

    /// [`Timer::value_deadline`](crate::Timer::value_deadline).
    pub(crate) fn value_deadline(&self, ticket: ValueTicket) -> Option<Instant> {
        let (deadline, exact) = handle::deadline_of(&ticket.0)?;
        // (A value's payload always keeps its exact deadline; a word alone reads back as FAR's.)
        Some(self.time.value_instant(exact.unwrap_or(FAR), deadline))
    }

    /// [`Timer::clear_values`](crate::Timer::clear_values).
    pub(crate) fn clear_values<R>(&self, then: impl FnOnce(usize) -> R) -> R {
        // An advance that claimed a value before the take reached its shard would hand it over
        // after `then` emptied the ready list: the take waits for it (module docs). (Seeded fault
        // `queue_clear_skips_advance_lock`, docs/loom.md: it does not.)
        let serial = if fault!("queue_clear_skips_advance_lock") {
            None
        } else if self.may_wait_for_advance() {
            Some(self.advance_lock.lock())
        } else {
            self.advance_lock.try_lock()
        };
        let mut taken = Vec::new();
        let result = then(self.take_values(&mut taken));
        drop(serial);
        // Seeded fault `queue_clear_leaves_closing` (docs/loom.md): a shutdown that found the
        // lock held by this clear left the queue's closing to it, and nobody closes it.
        if !fault!("queue_clear_leaves_closing") {
            self.released_advance_lock();
        }
        for payload in taken {
            crate::unwind::drop_caught(payload);
        }
        result
    }

    /// Hands an advance's fired values to the sink (module docs), leaving `values` empty.
    pub(super) fn deliver_values(&self, values: &mut Vec<FiredValue>) {
        if values.is_empty() {
            return;
        }
        let mut panicked = match self.values.get() {
            Some(sink) => sink.deliver(&mut FiredValues(values, &self.time)),
            None => 0,
        };
        // Without a sink (or what a sink left): dropped as a value task's run drops its value.
        for fired in values.drain(..) {
            panicked += u64::from(crate::unwind::drop_caught(fired.task));
        }
        self.count_panicked(panicked);
    }
}

#[cfg(test)]
#[path = "value_entries_tests.rs"]
mod tests;
