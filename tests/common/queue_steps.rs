//! The steps of the queue model (`queue_model.rs`): each operation, checked against the model, and
//! the checks made after every step.

use std::sync::Arc;
use std::time::Duration;

use delaywheel::queue::{Expired, InsertError, Key};
use delaywheel::ScheduleError;

use super::deadlines::{far_slot, fired_by_advance, in_range, passed_instant, refusal};
use super::order::may_precede;
use super::panics::{caught, drop_each};
use super::sized::{Carried, Probe};
use super::{Entry, Model, Op, State};

/// When an insert asks its value to expire: after a delay, or at a reading of the clock.
#[derive(Clone, Copy, Debug)]
enum When {
    After(Duration),
    At(Duration),
}

/// A `try_` insert's key, or its error after checking that the refused value `id` came back (and
/// dropping it).
fn split<V: Carried>(
    result: Result<Key, InsertError<V>>,
    id: usize,
) -> Result<(Option<Key>, Option<ScheduleError>), String> {
    match result {
        Ok(key) => Ok((Some(key), None)),
        Err(refused) => {
            let error = refused.error().clone();
            let back = refused.into_inner();
            ensure!(back.probe().id == id, "refused value {id} handed back as {}", back.probe().id);
            caught(|| drop(back));
            Ok((None, Some(error)))
        }
    }
}

impl<V: Carried> Model<V> {
    fn key(&self, i: usize) -> Option<(usize, Key)> {
        let i = i % self.entries.len().max(1);
        Some((i, self.entries.get(i)?.key?))
    }

    fn pending(&self) -> usize {
        self.entries.iter().filter(|e| e.state == State::Pending).count()
    }

    fn insert(&mut self, when: When, plain: bool, step: usize) -> Result<(), String> {
        let (id, now, tick, base) = (self.entries.len(), self.clock.now(), self.tick, self.base);
        let probe = Probe::with_drop_panic(id, self.drop_panics && id % 3 == 0, |_| {});
        self.probes.push(Arc::clone(&probe));
        let value = V::new(Arc::clone(&probe));
        let (pending, max) = (self.pending(), self.max_pending);
        let (key, error) = match (when, plain) {
            (When::After(d), false) => split(self.queue.try_insert(value, d), id)?,
            (When::At(at), false) => split(self.queue.try_insert_at(value, base + at), id)?,
            // A refused value that panics when dropped panics out of `insert`: refused all the same.
            (When::After(d), true) => (caught(|| self.queue.insert(value, d)), None),
            (When::At(at), true) => (caught(|| self.queue.insert_at(value, base + at)), None),
        };
        // What the model's own bookkeeping predicts: the delay of an instant already passed is
        // never out of range.
        let delay = match when {
            When::After(delay) => Some(delay),
            When::At(at) => at.checked_sub(now),
        };
        let expected = refusal(self.shut_down, (now, tick, delay), (pending, max));
        // A refused value is dropped by now: handed back and dropped by `split`, or by `insert`
        // (whose refusal says no reason: refused exactly when the model predicts one).
        if probe.drops() > 0 {
            ensure!(
                expected.is_some(),
                "step {step}: {when:?} refused ({error:?}), {pending} pending of {max}"
            );
            ensure!(
                error.is_none() || error == expected,
                "step {step}: {when:?} refused as {error:?}, expected {expected:?}"
            );
            ensure!(probe.drops() == 1, "step {step}: refused value {id} dropped {} times", probe.drops());
            self.entries.push(Entry::refused());
            return Ok(());
        }
        ensure!(
            expected.is_none(),
            "step {step}: {when:?} accepted, expected {expected:?}, {pending} pending"
        );
        let mut entry = Entry { key, ..Entry::refused() };
        entry.state = State::Pending;
        match when {
            When::After(delay) => entry.set(now, delay, tick),
            When::At(at) if at > now => entry.set(now, at - now, tick),
            When::At(at) => {
                let (due, read) = passed_instant(now, at, tick);
                (entry.deadline, entry.due, entry.ordered) = (at, due, read == at);
                entry.slot = far_slot(at, due, tick);
            }
        }
        self.entries.push(entry);
        Ok(())
    }

    pub(super) fn step(&mut self, step: usize, op: Op) -> Result<(), String> {
        let now = self.clock.now();
        let delay = |nanos: Option<u64>| nanos.map_or(Duration::MAX, Duration::from_nanos);
        match op {
            Op::Insert(nanos) => self.insert(When::After(delay(nanos)), false, step)?,
            Op::InsertPlain(nanos) => self.insert(When::After(delay(nanos)), true, step)?,
            Op::InsertAt(nanos, plain) => {
                self.insert(When::At(now + Duration::from_nanos(nanos)), plain, step)?
            }
            Op::InsertPast(back) => {
                self.insert(When::At(now.saturating_sub(Duration::from_nanos(back))), false, step)?
            }
            Op::Remove(i) => {
                if let Some((i, key)) = self.key(i) {
                    let pending = self.entries[i].state == State::Pending;
                    let value = self.queue.remove(&key);
                    let back = value.as_ref().map(|v| v.probe().id);
                    caught(|| drop(value));
                    ensure!(back == pending.then_some(i), "step {step}: remove of {i} gave {back:?}");
                    if pending {
                        self.entries[i].state = State::Removed;
                    }
                }
            }
            Op::Reset(i, nanos) => {
                if let Some((i, key)) = self.key(i) {
                    let delay = delay(nanos);
                    let in_range = in_range(now, delay, self.tick);
                    let moved = match now.checked_add(delay).and_then(|d| self.base.checked_add(d)) {
                        Some(at) if i % 2 == 1 => self.queue.reset_at(&key, at),
                        _ => self.queue.reset(&key, delay),
                    };
                    let entry = &mut self.entries[i];
                    let expected = entry.state == State::Pending && in_range;
                    ensure!(moved == expected, "step {step}: reset of {i}: {moved}");
                    if moved {
                        entry.set(now, delay, self.tick);
                    }
                }
            }
            Op::Deadline(i) => {
                if let Some((i, key)) = self.key(i) {
                    let entry = &self.entries[i];
                    let expected = (entry.state == State::Pending).then(|| self.base + entry.reads_back());
                    ensure!(self.queue.deadline(&key) == expected, "step {step}: deadline of {i}: {entry:?}");
                }
            }
            Op::ForeignKey(i) => self.foreign_key(step, i)?,
            Op::MoveClock(nanos) => self.clock.advance(Duration::from_nanos(nanos)),
            Op::Advance(nanos) => self.advance(step, nanos)?,
            Op::Shutdown => self.shutdown(step)?,
            Op::Take(n) => {
                for _ in 0..n {
                    let next = self.queue.next_deadline();
                    let Some(out) = self.queue.try_recv() else {
                        let waiting = self.entries.iter().any(|e| e.state == State::Expired);
                        ensure!(!waiting, "step {step}: an expired value is not handed out");
                        break;
                    };
                    ensure!(
                        next == Some(out.deadline()),
                        "step {step}: next_deadline {next:?}, then {:?}",
                        out.deadline()
                    );
                    self.take(step, out)?;
                }
            }
            Op::TakeMany(n) => {
                let expired = self.entries.iter().filter(|e| e.state == State::Expired).count();
                let next = self.queue.next_deadline();
                let mut buffer = Vec::new();
                let took = self.queue.try_recv_many(&mut buffer, usize::from(n));
                ensure!(took == buffer.len(), "step {step}: try_recv_many said {took} of {}", buffer.len());
                ensure!(
                    took == expired.min(usize::from(n)),
                    "step {step}: took {took} of {expired} (limit {n})"
                );
                if let Some(first) = buffer.first() {
                    ensure!(
                        next == Some(first.deadline()),
                        "step {step}: next_deadline {next:?}, then {:?}",
                        first.deadline()
                    );
                }
                for out in buffer {
                    self.take(step, out)?;
                }
            }
            Op::Clear => {
                self.queue.clear();
                for entry in self.entries.iter_mut().filter(|e| e.held()) {
                    entry.state = State::Cleared;
                }
            }
            Op::Shrink => self.queue.timer().shrink(),
        }
        self.after(step)
    }

    /// Gives key `i` to the second queue and that queue's key `i` to this one: each names nothing
    /// there (the values it would name by slot and generation stay, which the checks after the
    /// step see for this queue's).
    fn foreign_key(&mut self, step: usize, i: usize) -> Result<(), String> {
        let (other, soon) = (&self.other, Duration::from_millis(1));
        if let Some((i, key)) = self.key(i) {
            let at = other.timer().now() + soon;
            let named =
                (other.remove(&key), other.reset(&key, soon), other.reset_at(&key, at), other.deadline(&key));
            ensure!(
                named == (None, false, false, None),
                "step {step}: key {i} named {named:?} in another queue"
            );
        }
        for &(key, due) in &self.others {
            ensure!(other.deadline(&key) == Some(due), "step {step}: another queue's value moved");
        }
        ensure!(other.len() == self.others.len(), "step {step}: another queue holds {}", other.len());
        let (key, _) = self.others[i % self.others.len()];
        let value = self.queue.remove(&key);
        let id = value.as_ref().map(|v| v.probe().id);
        caught(|| drop(value));
        let at = self.base + self.clock.now() + soon;
        let named =
            (id, self.queue.reset(&key, soon), self.queue.reset_at(&key, at), self.queue.deadline(&key));
        ensure!(named == (None, false, false, None), "step {step}: another queue's key named {named:?}");
        Ok(())
    }

    /// Shuts the queue's timer down: it hands back a task per pending value, each with the value's
    /// deadline as the timer keeps it, in deadline order. Each task is dropped on its own, so that
    /// the probes tell which value it held: exactly that one value drops, once.
    fn shutdown(&mut self, step: usize) -> Result<(), String> {
        let unfired = self.queue.timer().shutdown();
        let pending = self.pending();
        ensure!(unfired.len() == pending, "step {step}: {} handed back of {pending}", unfired.len());
        let mut last = Duration::ZERO;
        for task in unfired {
            let deadline = task.deadline();
            let drops: Vec<usize> = self.probes.iter().map(|p| p.drops()).collect();
            drop_each(vec![task]);
            let mut dropped = (0..drops.len()).filter(|&i| self.probes[i].drops() != drops[i]);
            let (id, more) = (dropped.next(), dropped.next());
            ensure!(more.is_none(), "step {step}: a task handed back held {id:?} and {more:?}");
            let Some(id) = id else { return Err(format!("step {step}: a task handed back held no value")) };
            let entry = &mut self.entries[id];
            ensure!(entry.state == State::Pending, "step {step}: {id} handed back: {entry:?}");
            ensure!(
                deadline == entry.timer_reads(),
                "step {step}: {id} handed back at {deadline:?}: {entry:?}"
            );
            ensure!(deadline >= last, "step {step}: {id} handed back at {deadline:?}, after {last:?}");
            (entry.state, last) = (State::ShutDown, deadline);
        }
        self.shut_down = true;
        Ok(())
    }

    fn advance(&mut self, step: usize, nanos: u64) -> Result<(), String> {
        self.clock.advance(Duration::from_nanos(nanos));
        self.queue.advance_clock(Duration::ZERO);
        self.advances += 1;
        let now = self.clock.now();
        let pending = |e: &Entry| (e.state == State::Pending).then_some((e.deadline, e.due, e.ordered));
        let pending: Vec<_> = self.entries.iter().map(pending).collect();
        let fires = fired_by_advance(&pending, [], now, self.tick);
        for (entry, tick) in self.entries.iter_mut().zip(fires) {
            if let Some(tick) = tick {
                (entry.state, entry.batch, entry.tick) = (State::Expired, self.advances, tick);
            }
        }
        for (i, entry) in self.entries.iter().enumerate() {
            let Some(key) = &entry.key else { continue };
            let expected = (entry.state == State::Pending).then(|| self.base + entry.reads_back());
            ensure!(self.queue.deadline(key) == expected, "step {step}: deadline of {i}: {entry:?}");
        }
        Ok(())
    }

    /// Checks the value taken, `out`, against the model, then drops it.
    fn take(&mut self, step: usize, out: Expired<V>) -> Result<(), String> {
        let (id, deadline) = (out.get_ref().probe().id, out.deadline() - self.base);
        let entry = &self.entries[id];
        ensure!(entry.state == State::Expired, "step {step}: took {id}: {entry:?}");
        ensure!(entry.key == Some(out.key()), "step {step}: {id} came out with another key: {entry:?}");
        ensure!(deadline == entry.reads_back(), "step {step}: {id} came out with {deadline:?}: {entry:?}");
        let waiting = |y: usize| y != id && self.entries[y].state == State::Expired;
        let before = (0..self.entries.len()).find(|&y| waiting(y) && !may_precede(&self.entries, id, y));
        let waits = before.map(|y| &self.entries[y]);
        ensure!(before.is_none(), "step {step}: {id} came out before {before:?}: {entry:?}, {waits:?}");
        self.entries[id].state = State::Taken;
        caught(|| drop(out));
        Ok(())
    }

    /// The checks after every step: counts, drops, and `next_deadline`.
    fn after(&self, step: usize) -> Result<(), String> {
        let live = self.entries.iter().filter(|e| e.held()).count();
        ensure!(self.queue.len() == live, "step {step}: len {} against {live}", self.queue.len());
        ensure!(self.queue.is_empty() == (live == 0), "step {step}: is_empty with {live}");
        for (i, (entry, probe)) in self.entries.iter().zip(&self.probes).enumerate() {
            let dropped = usize::from(!entry.held());
            ensure!(probe.drops() == dropped, "step {step}: {i} dropped {} times: {entry:?}", probe.drops());
            ensure!(probe.intact(), "step {step}: {i} damaged: {entry:?}");
        }
        let next = self.queue.next_deadline();
        let expired: Vec<_> = self.entries.iter().filter(|e| e.state == State::Expired).collect();
        if live == 0 {
            ensure!(next.is_none(), "step {step}: next_deadline {next:?} of an empty queue");
        } else if !expired.is_empty() {
            let of_one = |at| expired.iter().any(|e| self.base + e.reads_back() == at);
            ensure!(next.is_some_and(of_one), "step {step}: next_deadline {next:?}, no expired value's");
        } else {
            let pending = self.entries.iter().filter(|e| e.state == State::Pending);
            let earliest = pending.map(|e| e.due).min().and_then(|due| self.base.checked_add(due));
            let in_time = match (next, earliest) {
                (Some(next), Some(earliest)) => next <= earliest,
                (next, _) => next.is_some(),
            };
            ensure!(in_time, "step {step}: next_deadline {next:?}, the earliest due at {earliest:?}");
        }
        Ok(())
    }
}
