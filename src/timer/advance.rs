//! Advancing the clock on the core (serialised by `advance_lock`): rounds of the core's queue
//! ([`Core::advance`] at a step's tick, its limit the stamps' round, `Stamps::begin_round`: what
//! is scheduled while it runs waits for the next advance), each round's batch in order (by
//! deadline word and stamp; a deadline passed mid-tick with the entries of its tick due by it
//! taken beside it, [`Core::take_due_by`], the batch then sorted by the instants; deadlines before
//! the origin by their instants), and each entry claimed just before it runs (`fire.rs`: a cancel
//! until then wins, a drain takes it). With executor threads the batch's value entries are
//! claimed here and the rest handed over, each claimed on its thread.
//!
//! **Steps.** An advance over more than one tick goes tick by tick: its first round is at the earliest queued tick, each next at the earliest tick the
//! last round left queued (at most the clock's), so the tasks of one tick run before a later
//! tick's entries are taken: what they do to a later one (a cancel, a reset, a read of its
//! status) finds it pending and moves it as a reset between advances does. An advance of one tick
//! takes its tick in one round (the fast path: no look at the queue's head first), and so does one
//! with executor threads, whose batches are handed over and not waited for, so that steps would
//! order nothing. The rounds a step takes at a tick end with one that finds nothing ("Resets from
//! a task"). What the advance's limit keeps waits on its shard's overdue list, walked once however
//! many rounds and steps pop the list (`Core::advance`, "Rounds"): one advance's work is
//! O(entries + rounds x shards).
//!
//! **The drive waker's advance** fires only what runs no user code (a sleep's wake, a value) and
//! puts each due closure back, pending, for the next round ([`Core::set_aside_if`]: under the
//! shard's lock, by its payload's kind), in one round at the clock's tick (nothing it runs moves
//! another entry). A closure taken beside a passed deadline goes back by its own deadline, into
//! the bucket of the tick after, not due until that tick. So the advance carries the latest such
//! deadline (`carried`, in the scratch, under `advance_lock`) and, while it carries one, offers the
//! queue an item due at once that flushes nothing ([`Core::offer_nothing_at`]): the drive future's
//! watch finds the head due and advances. Every waker advance that ends carrying one offers it
//! again, since another (a second waker's) may have popped it. The next advance that fires
//! everything takes, once its rounds find nothing, the closures due by that deadline
//! ([`Core::take_due_by`], stamps within its limit) and fires them as one batch sorted by the
//! instants, then drops the limit. A batch before that with a later passed deadline takes them
//! beside it, in order; an advance that reaches their tick fires them in its flush.
//!
//! **Resets from a task.** A task of the batch may reset another pending entry to a deadline the
//! advance reaches: the core files it from its shard's time, in a bucket of a later step or, for a
//! tick at or before that time, on the overdue list, offered for the next round. So each step runs
//! rounds of the queue with the advance's one limit until one finds nothing: such an entry fires
//! in this advance, at its own tick's step, or after the batch that moved it if its tick was
//! passed (each entry is claimed once, so the rounds end), while an entry scheduled meanwhile is
//! stamped above the limit and waits for the next advance. The drive waker's advance runs one
//! round (what it sets aside is offered for the next round, and would be found again).
//!
//! **The cursor** (`current_tick`) moves to each step's tick before its rounds, never back; the
//! clock's tick once the advance is done.
//!
//! [`Core::advance`]: crate::shard::core::Core::advance
//! [`Core::take_due_by`]: crate::shard::core::Core::take_due_by
//! [`Core::set_aside_if`]: crate::shard::core::Core::set_aside_if
//! [`Core::offer_nothing_at`]: crate::shard::core::Core::offer_nothing_at

use std::collections::HashMap;

use super::fire::{self, ExecutorJob};
use super::value_entries::{FiredValue, ValueTicket};
use super::Shared;
use crate::deadline::Deadline;
use crate::delay_queue::Timeline;
use crate::entry::Freed;
use crate::shard::core::{Due, Merge};
use crate::sync::Ordering;
use crate::timer::advancing::Advancing;

/// What an advance reuses from one call to the next, under `advance_lock`.
#[derive(Default)]
pub(crate) struct Scratch {
    /// The batch.
    pub(super) due: Vec<Due>,
    pub(super) merge: Merge,
    /// The batch's values, for the sink.
    pub(super) values: Vec<FiredValue>,
    /// The blocks the batch's closures were in, given back together.
    pub(super) freed: Freed,
    /// The latest deadline passed mid-tick beside which a drive waker's advance set closures
    /// aside, as a word of the tick after (module docs, "The drive waker's advance").
    #[cfg(feature = "async")]
    pub(super) carried: Option<Deadline>,
}

/// What an advance fires.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fires {
    All,
    /// Only what runs no user code (module docs, "The drive waker's advance").
    #[cfg(feature = "async")]
    Wakes,
}

impl Scratch {
    /// Entries kept for reuse; beyond this (after a burst) the buffers' pages are given back.
    const KEEP: usize = 1 << 14;

    /// Gives back the buffers' pages beyond `keep` entries each: [`KEEP`](Self::KEEP) after an
    /// advance, none on a shrink (`shrink.rs`).
    pub(super) fn trim(&mut self, keep: usize) {
        crate::entry::shrink_buffer(&mut self.due, keep);
        self.merge.trim(keep);
        if self.values.capacity() > keep {
            self.values = Vec::new();
        }
    }
}

impl Shared {
    /// The tick of [`Timer::next_work`](crate::Timer::next_work): the earliest queued bucket's or
    /// passed deadline's ([`Core::next_work`](crate::shard::core::Core::next_work)), else the
    /// cursor; the cursor while an advance holds the advance lock.
    pub(crate) fn next_work_tick(&self) -> u64 {
        let head = || self.core.next_work().unwrap_or_else(|| self.current_tick());
        match self.advance_lock.try_lock() {
            Some(_serial) => head(),
            None => self.current_tick(),
        }
    }

    /// The non-blocking advance: every bucket due at the clock's current tick flushed, its
    /// entries run. Whether anything was due.
    pub(crate) fn advance(&self) -> bool {
        if self.advancing_here() {
            return false;
        }
        let mut serial = self.advance_lock.lock();
        let fired = self.advance_serial(&mut serial, Fires::All);
        serial.trim(Scratch::KEEP);
        drop(serial);
        self.released_advance_lock();
        fired
    }

    /// [`advance`](Self::advance) unless another advance holds the advance lock (then `None`),
    /// firing only the tasks that run no user code (module docs).
    #[cfg(feature = "async")]
    pub(crate) fn try_advance_wakes(&self) -> Option<bool> {
        if self.advancing_here() {
            return None;
        }
        let mut serial = self.advance_lock.try_lock()?;
        let fired = self.advance_serial(&mut serial, Fires::Wakes);
        // With closures carried, the head is made due whatever popped it meanwhile: the drive
        // future's watch then finds work and advances (module docs, "The drive waker's advance").
        if serial.carried.is_some() && !self.is_shut_down() {
            self.core.offer_nothing_at(self.current_tick());
        }
        serial.trim(Scratch::KEEP);
        drop(serial);
        self.released_advance_lock();
        Some(fired)
    }

    /// [`advance`](Self::advance) holding `advance_lock`.
    fn advance_serial(&self, serial: &mut Scratch, fires: Fires) -> bool {
        if self.is_shut_down() {
            return false;
        }
        let _advancing = Advancing::enter(&self.advancer);
        let now_tick = self.time.now_tick();
        let limit = self.stamps.begin_round();
        let Scratch {
            due,
            merge,
            values,
            freed,
            #[cfg(feature = "async")]
            carried,
        } = serial;
        let mut step = self.first_step(now_tick, fires);
        let mut fired = false;
        // Rounds of the core's queue with the one limit at each step, until one finds nothing:
        // an entry one of the batch's tasks reset to a deadline this advance reaches fires in it,
        // at its tick's step (module docs, "Resets from a task"); one scheduled meanwhile is
        // stamped above the limit and waits.
        loop {
            self.move_cursor(step);
            let left = self.core.advance(step, limit, due, merge);
            if due.is_empty() {
                #[cfg(feature = "async")]
                if step >= now_tick
                    && fires == Fires::All
                    && self.take_carried(carried, now_tick, limit, due, merge)
                {
                    fired = true;
                    self.fire(due, values, freed);
                    continue;
                }
                if step >= now_tick {
                    return fired;
                }
                // The next tick with work (module docs, "Steps").
                step = left.map_or(now_tick, |next| next.clamp(step + 1, now_tick));
                continue;
            }
            fired = true;
            #[cfg_attr(not(feature = "async"), allow(unused_variables))]
            let passed = self.take_beside_passed(due, merge, limit);
            self.order_before_origin(due);
            #[cfg(feature = "async")]
            if fires == Fires::Wakes {
                if self.executor.is_none() {
                    due.retain(|entry| {
                        !self.core.set_aside_if(entry, |task| !task.is_wake() && !task.is_value())
                    });
                    *carried = (*carried).max(passed);
                }
                // Once: what it set aside is offered for the next round.
                self.fire(due, values, freed);
                return true;
            }
            #[cfg(not(feature = "async"))]
            let Fires::All = fires;
            self.fire(due, values, freed);
        }
    }

    /// The tick of an advance's first round (module docs, "Steps"): the clock's, for an advance
    /// of one tick, one firing no user code or one with executors, else the earliest queued
    /// (`now_tick` at most).
    fn first_step(&self, now_tick: u64, fires: Fires) -> u64 {
        let one_tick = now_tick <= self.current_tick.load(Ordering::Relaxed).saturating_add(1);
        if fires != Fires::All || one_tick || self.executor.is_some() {
            return now_tick;
        }
        self.queue().head().map_or(now_tick, |head| head.min(now_tick))
    }

    /// Moves the cursor to `tick`, never back.
    fn move_cursor(&self, tick: u64) {
        if tick > self.current_tick.load(Ordering::Relaxed) {
            self.current_tick.store(tick, Ordering::Release);
        }
    }

    /// With a deadline passed mid-tick in the batch, takes the entries of its tick due by it
    /// beside it and sorts the batch again by the instants (module docs; `shard/core.rs`,
    /// "Passed deadlines mid-tick").
    /// The latest such deadline, as a word of the tick after, if any.
    fn take_beside_passed(&self, due: &mut Vec<Due>, merge: &mut Merge, limit: u64) -> Option<Deadline> {
        let batch = due.len();
        let mut passed = None;
        for i in 0..batch {
            let ends_tick =
                i + 1 == batch || due[i + 1].entry.deadline.tick() != due[i].entry.deadline.tick();
            if let Some(word) = due[i].entry.deadline.in_own_tick().filter(|_| ends_tick) {
                self.core.take_due_by(word, limit, due, merge);
                passed = passed.max(Some(word));
            }
        }
        // A batch over several ticks may hold the tick after a passed deadline's already: sorted
        // by the instants too.
        if passed.is_some() {
            merge.sort_by_instants(due);
        }
        passed
    }

    /// At the end of an advance that fires everything, takes the closures a drive waker's
    /// advance set aside beside a passed deadline (by the `carried` limit, which it clears), as
    /// that advance's batch took them, the batch sorted by the instants: whether it took any. None
    /// once the clock reached their tick, whose flush fired them (module docs, "The drive
    /// waker's advance").
    #[cfg(feature = "async")]
    fn take_carried(
        &self,
        carried: &mut Option<Deadline>,
        now_tick: u64,
        limit: u64,
        due: &mut Vec<Due>,
        merge: &mut Merge,
    ) -> bool {
        let Some(word) = carried.take().filter(|word| word.tick() > now_tick) else { return false };
        self.core.take_due_by(word, limit, due, merge);
        merge.sort_by_instants(due);
        !due.is_empty()
    }

    /// Puts the run of the batch at the origin's word in the order of the instants kept before
    /// the origin (the origin itself, with none kept, last): read from every shard's extra, only
    /// for a batch with two such entries or more.
    fn order_before_origin(&self, due: &mut [Due]) {
        let origin = self.time.ticks.origin();
        let Some(first) = due.iter().position(|entry| entry.entry.deadline == origin) else { return };
        let run = due[first..].iter().take_while(|entry| entry.entry.deadline == origin).count();
        if run < 2 {
            return;
        }
        let mut records = HashMap::new();
        self.core.for_each_extra(|extra| records.extend(extra.before_origin.iter().map(|(&k, &v)| (k, v))));
        due[first..first + run].sort_by_key(|entry| records.get(&entry.entry.stamp).copied().unwrap_or(0));
    }

    /// Runs (or hands to the executor) every entry of the batch `due` in its order, claiming
    /// each just before it runs, and empties it; its values go to the sink after it.
    fn fire(&self, due: &mut Vec<Due>, values: &mut Vec<FiredValue>, freed: &mut Freed) {
        let bound = self.bound.as_deref();
        if let Some(executor) = &self.executor {
            if self.values.get().is_some() {
                due.retain(|entry| match self.core.claim_if(entry, |task| task.is_value()) {
                    Some(task) => {
                        self.lower_bound(1);
                        values.push(self.fired_value(task, entry));
                        false
                    }
                    None => true,
                });
                self.deliver_values(values);
            }
            executor.submit(due.drain(..).map(ExecutorJob));
            return;
        }
        let mut lateness = self.lateness.batch(self.time.ticks);
        #[cfg(feature = "async")]
        let wakes = crate::timer::wakes::Batch::open();
        let mut panicked = 0;
        for entry in due.drain(..) {
            let Some(task) = fire::claim(&self.core, &entry, bound) else { continue };
            if task.is_value() && self.values.get().is_some() {
                values.push(self.fired_value(task, &entry));
                continue;
            }
            if task.is_counted() {
                lateness.record(entry.entry.deadline.rounded_up_tick(), self.time.clock.now_nanos());
            }
            panicked += u64::from(fire::run(task, freed));
        }
        drop(lateness);
        #[cfg(feature = "async")]
        {
            panicked += wakes.close();
        }
        freed.flush();
        self.count_panicked(panicked);
        if !values.is_empty() {
            self.deliver_values(values);
        }
    }

    /// A value entry claimed by the advance, on its way to the sink.
    fn fired_value(&self, task: super::Payload, entry: &Due) -> FiredValue {
        FiredValue { task, ticket: ValueTicket(self.core.handle_of(entry)), deadline: entry.entry.deadline }
    }
}

#[cfg(test)]
#[path = "advance_tests.rs"]
mod tests;
