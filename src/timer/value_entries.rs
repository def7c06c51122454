//! The value entries behind `values.rs` (the delay queue of values' side of the timer): a value's
//! ticket and a fired batch's values as the arena holds them, and the operations on them, each the
//! timer's own on the entry (`values.rs` has the protocol).

use std::fmt;
use std::hash::{Hash, Hasher};
use std::time::Instant;

use super::cancel::{cancel_take, claim_each_held};
use super::schedule::Refused;
use super::time::Time;
use super::values::ValueSink;
use super::{reset, Shared, When};
use crate::entry::{self, FiredValue, Fresh, Target, Ticket};
use crate::ScheduleError;

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
            Some((value, ValueTicket(fired.ticket), time.value_instant(exact, fired.deadline)))
        })
    }
}

/// A value entry's ticket: slot index and generation (and the bucket lane it was inserted into,
/// where a remove looks first, which is no part of its identity: equality and hashing ignore it).
#[derive(Clone, Copy)]
pub(crate) struct ValueTicket(Ticket);

impl PartialEq for ValueTicket {
    fn eq(&self, other: &Self) -> bool {
        (self.0.id, self.0.generation) == (other.0.id, other.0.generation)
    }
}

impl Eq for ValueTicket {}

impl Hash for ValueTicket {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.0.id.index(), self.0.generation).hash(state);
    }
}

impl fmt::Debug for ValueTicket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key")
            .field("slot", &self.0.id.index())
            .field("generation", &self.0.generation)
            .finish()
    }
}

impl Shared {
    /// [`Timer::set_value_sink`](super::Timer::set_value_sink).
    pub(crate) fn set_value_sink(&self, sink: Box<dyn ValueSink>) {
        self.values.get_or_init(|| sink);
    }

    /// [`Timer::insert_value`](super::Timer::insert_value).
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
        let by = self.time.stamp_by(when);
        let make = |value, arena: &_| Fresh::value(deadline, (value, exact), arena, by);
        match self.insert_new(now, value, make, true) {
            Ok((_, ticket)) => Ok(ValueTicket(ticket)),
            Err(Refused::Payload(value, error)) => Err((value, error)),
            Err(Refused::Fresh(fresh, error)) => {
                Err((fresh.into_value().expect("a refused value entry keeps its value"), error))
            }
        }
    }

    /// [`Timer::remove_value`](super::Timer::remove_value).
    pub(crate) fn remove_value<V: Send + 'static>(&self, ticket: ValueTicket) -> Option<(V, i64)> {
        let ValueTicket(mut ticket) = ticket;
        // The cancel starts at the lane the value was inserted into, which exists; only the key
        // of a fired value names a placeholder (`FiredValue`), which may not, and then names no
        // pending entry either.
        self.store.wheel.bucket_by_key(ticket.bucket.bucket())?;
        // A look from a ticket is pinned: the slot's page may be given back meanwhile (`shrink.rs`).
        let _pin = self.store.arena.pin();
        // Seeded fault `queue_take_ignores_generation` (docs/loom.md): the key's generation is not
        // compared, so a key whose value expired or was removed takes the value that reused its slot.
        if fault!("queue_take_ignores_generation") {
            ticket = entry::current(&self.store.arena, ticket.id);
        }
        let task = cancel_take(ticket, self.counters.local())?;
        task.take_value::<V>().ok()
    }

    /// [`Timer::reset_value`](super::Timer::reset_value).
    pub(crate) fn reset_value(&self, ticket: ValueTicket, when: When) -> bool {
        let Ok((now, deadline)) = self.time.deadline(when) else { return false };
        let exact = self.time.value_exact(now, when);
        let _pin = self.store.arena.pin();
        reset::reset(ticket.0, self.counters.local(), Target { deadline, exact: Some(exact) })
    }

    /// [`Timer::value_deadline`](super::Timer::value_deadline).
    pub(crate) fn value_deadline(&self, ticket: ValueTicket) -> Option<Instant> {
        let arena = &self.store.arena;
        let (exact, deadline) = {
            let _pin = arena.pin();
            entry::exact(arena, ticket.0)?
        };
        Some(self.time.value_instant(exact, deadline))
    }

    /// [`Timer::clear_values`](super::Timer::clear_values).
    pub(crate) fn clear_values<R>(&self, then: impl FnOnce(usize) -> R) -> R {
        let store = &self.store;
        let arena = &store.arena;
        // Seeded fault `queue_clear_skips_advance_lock` (docs/loom.md): an advance that claimed a
        // value before the scan reached it hands it over after the ready list was emptied.
        let serial = if fault!("queue_clear_skips_advance_lock") {
            None
        } else if self.may_wait_for_advance() {
            Some(self.advance_lock.lock())
        } else {
            self.advance_lock.try_lock()
        };
        let stripe = self.counters.local();
        let mut claimed = Vec::new();
        // (The seeded fault `queue_clear_leaves_bucketed` leaves a claimed value in its bucket,
        // until a visit of the bucket finds it cancelled.)
        let leave = !fault!("queue_clear_leaves_bucketed");
        claim_each_held(
            store,
            |index| entry::cancel_value_at(arena, index),
            leave,
            |task| {
                stripe.cancelled();
                claimed.push(task);
            },
        );
        let result = then(claimed.len());
        drop(serial);
        // Seeded fault `queue_clear_leaves_closing` (docs/loom.md): a shutdown that found the
        // lock held by this clear left the queue's closing to it, and nobody closes it.
        if !fault!("queue_clear_leaves_closing") {
            self.released_advance_lock();
        }
        for task in claimed {
            crate::unwind::drop_caught(task);
        }
        result
    }
}

impl Shared {
    /// With executor threads: claims the value entries of the due batch `due` here, hands them to
    /// `sink`, and leaves the other entries in `due` for the executors.
    pub(super) fn deliver_values_first(&self, due: &mut Vec<super::fire::Stamped>, sink: &dyn ValueSink) {
        let arena = &self.store.arena;
        let stripe = self.counters.local();
        let mut values = Vec::new();
        due.retain(|&((entry, ..), _)| match entry::claim_value(arena, entry) {
            Some(fired) => {
                arena.free(entry);
                stripe.left();
                values.push(fired);
                false
            }
            None => true,
        });
        if !values.is_empty() {
            stripe.fired(values.len() as u64);
            stripe.panicked(sink.deliver(&mut FiredValues(&mut values, &self.time)));
        }
    }
}
