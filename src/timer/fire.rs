//! Firing: the one place that claims a due entry, counts it out and runs it, for the thread that
//! advances the clock (a batch per bucket) and for the executor threads (one at a time: what they
//! fire with is an [`ExecutorRoom`], what they are handed an [`ExecutorJob`], so that
//! `driver/executor.rs` names no type of the arena's); and the abandonment that shutdown and a
//! closed executor use.
//!
//! The claim is the entry's (`entry/`: `Pending → Fired` or `Abandoned`, exactly once); its winner
//! counts the entry out of `len()` on the calling thread's stripe (`counters.rs`) before the task
//! runs, so a task that reads `len()` no longer counts itself.

use super::counters::{Counters, Stripe};
use super::stats::Lateness;
use super::{Shared, Store, Time};
use crate::deadline::Deadline;
use crate::entry::arena::prefetch_ahead;
use crate::entry::{self, EntryArena, EntryId, Fire, FiredValue, Freed, InlineTask, Return};
use crate::sync::Arc;
use crate::wheel::DueEntry;

/// A due entry handed to an executor thread: claimed there, just before it runs
/// ([`ExecutorThread::run`]).
#[derive(Debug)]
pub(crate) struct ExecutorJob(EntryId);

/// What the executor threads fire with: the timer's entries, counters, lateness and clock (not the
/// timer itself, which a thread would keep alive).
#[derive(Clone)]
pub(crate) struct ExecutorRoom {
    counters: Arc<Counters<Store>>,
    arena: Arc<EntryArena>,
    lateness: Arc<Lateness>,
    time: Time,
}

impl ExecutorRoom {
    pub(super) fn new(
        counters: &Arc<Counters<Store>>,
        store: &Store,
        lateness: &Arc<Lateness>,
    ) -> ExecutorRoom {
        let (counters, arena, lateness) =
            (Arc::clone(counters), Arc::clone(&store.arena), Arc::clone(lateness));
        ExecutorRoom { counters, arena, lateness, time: store.time.clone() }
    }

    /// The calling thread's side: jobs run or abandoned through it count on its stripe.
    #[inline]
    pub(crate) fn thread(&self) -> ExecutorThread<'_> {
        ExecutorThread { room: self, stripe: self.counters.local() }
    }
}

/// An [`ExecutorRoom`] on one thread ([`ExecutorRoom::thread`]).
pub(crate) struct ExecutorThread<'a> {
    room: &'a ExecutorRoom,
    stripe: &'a Stripe<Store>,
}

impl ExecutorThread<'_> {
    /// Fires `job` ([`fire_one`]): runs it if it is still pending, recording its lateness.
    #[inline]
    pub(crate) fn run(&self, ExecutorJob(entry): ExecutorJob) {
        let ExecutorRoom { arena, lateness, time: Time { clock, ticks }, .. } = self.room;
        let stripe = self.stripe;
        let claimed = &mut |deadline_tick| {
            stripe.fired(1);
            lateness.record_one(*ticks, deadline_tick, clock.now_nanos());
        };
        let freed = &mut Freed::default();
        fire_one(arena, (entry, Return::Now), stripe, freed, claimed, None);
    }

    /// Abandons `job` ([`abandon`]): after the executor closed, or once its timer is dropped.
    #[inline]
    pub(crate) fn abandon(&self, ExecutorJob(entry): ExecutorJob) {
        abandon(&self.room.arena, (entry, Return::Now), self.stripe);
    }
}

/// Fires the held entry `held`: claims it; if this call won, counts it out on `stripe` and calls
/// `claimed` with its deadline's tick (neither for a tick group's task, which no count holds), and
/// runs it, counting a panic (a value entry goes to
/// `values` instead, when given: `values.rs`). The slot is released either
/// way, and returned to the arena as `held` says; a block its closure was in goes to `freed`.
#[inline]
pub(crate) fn fire_one<C>(
    arena: &EntryArena,
    held: (EntryId, Return),
    stripe: &Stripe<C>,
    freed: &mut Freed,
    claimed: &mut dyn FnMut(u64),
    values: Option<&mut Vec<FiredValue>>,
) -> Fire {
    let on_claim = &mut |deadline_tick| {
        stripe.left();
        claimed(deadline_tick);
    };
    let fire = entry::fire(arena, held, freed, on_claim, values);
    match fire {
        Fire::Panicked => stripe.panicked(1),
        Fire::Ran => {}
        // The seeded fault `fire_decrements_unclaimed` (`faults.rs`) counts a lost entry out too.
        Fire::Lost => {
            if fault!("fire_decrements_unclaimed") {
                stripe.left();
            }
        }
    }
    fire
}

/// What an abandonment ([`abandon`]) claimed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Abandoned {
    /// Nothing: the entry was no longer pending.
    Lost,
    /// A closure.
    Closure,
    /// A value of a delay queue (`values.rs`).
    Value,
}

/// Abandons the held entry `held` (shutdown, a closed executor): if this call claimed it, counts it
/// out on `stripe`, then drops the closure, last, catching a panic of its drop (counted as a
/// panicked task: no caller could take it).
pub(crate) fn abandon<C>(arena: &EntryArena, held: (EntryId, Return), stripe: &Stripe<C>) -> Abandoned {
    let Some(task) = entry::abandon(arena, held) else {
        return Abandoned::Lost;
    };
    count_abandoned(&task, stripe);
    let kind = if task.is_value() { Abandoned::Value } else { Abandoned::Closure };
    if crate::unwind::drop_caught(task) {
        stripe.panicked(1);
    }
    kind
}

/// [`abandon`], handing back the closure, the deadline and the stamp.
pub(crate) fn abandon_take<C>(
    arena: &EntryArena,
    id: EntryId,
    stripe: &Stripe<C>,
) -> Option<(InlineTask, Deadline, u64)> {
    let taken = entry::abandon_take(arena, id);
    if let Some((task, ..)) = &taken {
        count_abandoned(task, stripe);
    }
    taken
}

/// Counts out on `stripe` the entry of `task`, claimed as abandoned, unless its entry is not
/// counted (a tick group's task: `InlineTask::is_counted`; its members count as their group ends).
#[inline]
pub(crate) fn count_abandoned<C>(task: &InlineTask, stripe: &Stripe<C>) {
    if task.is_counted() {
        stripe.abandoned();
    }
}

/// A due entry with its stamp (its scheduling order, `entry/`), where its closure lies outside its
/// slot, and its deadline, as a visit hands it over (`wheel::Handoff`).
pub(super) type Stamped = DueEntry;

/// Calls `each` with every entry of the batch `due`, in its order, once the slot of the entry
/// `ahead` places later (`prefetch_ahead`), and the lines of its closure if too big for its slot (a
/// block, a box), are prefetched: in deadline order the slots are scattered, so each miss starts a
/// few entries early. For the fire loop and the set-aside of a sleep waker's advance
/// (`drive_waker.rs`). The caller computes `ahead`: computed in here, after the fire loop opens its
/// batch of wakes, the fire took 21 instructions more a batch (callgrind, `task_cost`).
#[inline(always)]
pub(super) fn each_prefetched(
    arena: &EntryArena,
    due: &[Stamped],
    ahead: usize,
    mut each: impl FnMut(&Stamped),
) {
    for (k, entry) in due.iter().enumerate() {
        if let Some(&((next, _, lines), _)) = due.get(k.saturating_add(ahead)) {
            arena.prefetch(next);
            lines.prefetch();
        }
        each(entry);
    }
}

impl Shared {
    /// Runs (or hands to the executor) every entry in `due`, in its order, and empties it. The
    /// caller has put it in deadline order (`advance.rs`): the batch's wait falls on the tasks
    /// the tick's rounding made least late; equal deadlines in the order they were scheduled.
    pub(super) fn fire(&self, due: &mut Vec<Stamped>, freed: &mut Freed) {
        let sink = self.values.get();
        if let Some(executor) = &self.executor {
            if let Some(sink) = sink {
                self.deliver_values_first(due, &**sink);
            }
            executor.submit(due.drain(..).map(|((entry, ..), _)| ExecutorJob(entry)));
            return;
        }
        let Store { arena, .. } = &self.store;
        let mut lateness = self.lateness.batch(self.time.ticks);
        let stripe = self.counters.local();
        // A delay queue's timer hands the batch's values to its queue at once, after the batch.
        let mut values = sink.map(|_| Vec::with_capacity(due.len()));
        // Counted by the claims (`claimed`), which a tick group's uncounted task makes none of.
        let mut fired = 0;
        // Every entry of the batch is released in the loop and returned to the arena after it,
        // with one lock of the free list (`Return::ByCaller`); so are the blocks of closures too
        // big for their slot (`freed`: one lock per class).
        let ahead = prefetch_ahead(due.len());
        // The wakers the batch's sleeps hand over are woken together after it (`wakes.rs`).
        #[cfg(feature = "async")]
        let wakes = super::wakes::Batch::open();
        each_prefetched(arena, due, ahead, |&((entry, ..), _)| {
            let held = (entry, Return::ByCaller);
            // (After a shutdown, also one called by a task of this batch, the rest of the batch
            // was claimed by the drain's scan: the claim below is lost and only releases the slot.)
            let claimed = &mut |deadline_tick| {
                fired += 1;
                lateness.record(deadline_tick, self.time.clock.now_nanos());
            };
            fire_one(arena, held, stripe, freed, claimed, values.as_mut());
        });
        #[cfg(feature = "async")]
        stripe.panicked(wakes.close());
        freed.flush();
        arena.free_all(due.drain(..).map(|((entry, ..), _)| entry));
        stripe.fired(fired);
        if let (Some(sink), Some(values)) = (sink, &mut values) {
            if !values.is_empty() {
                stripe.panicked(sink.deliver(&mut super::values::FiredValues(values, &self.time)));
            }
        }
    }
}
