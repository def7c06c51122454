//! Firing on the core: each due entry claimed just before it runs ([`Core::claim`]), by the
//! thread that advances the clock or by an executor thread; the claim's winner runs it, counting
//! a panic, and records its lateness. What the executor threads fire with is an
//! [`ExecutorRoom`] (the core, the task slab, the lateness and tallies, the clock: not the timer's
//! [`Shared`](super::Shared), which a thread would keep alive), what they are handed an
//! [`ExecutorJob`] (a due entry of a batch, held in its shard until claimed).
//!
//! **A job and the shutdown.** A job's entry stays pending in its shard until the executor claims
//! it: a cancel until then wins (the claim finds nothing), and a `Core::close` drains it (the
//! shutdown hands it back unfired; the claim finds nothing). So an executor that abandons its
//! queued jobs (closed, or its timer dropped) claims each as any job: a claim that finds the
//! entry drops its task unrun and counts it abandoned (the core counted it fired; the claim and
//! that count are made under one lock, which `Timer::stats` takes to read both), one that finds
//! nothing does nothing.
//!
//! [`Core::claim`]: crate::shard::core::Core::claim

use std::panic::{self, AssertUnwindSafe};

use super::{Payload, Tallies, TimerCore};
use crate::entry::task_slab::TaskSlab;
use crate::entry::Freed;
use crate::shard::core::Due;
use crate::sync::{Arc, AtomicUsize, Ordering};
use crate::timer::stats::Lateness;
use crate::timer::Time;

/// A due entry handed to an executor thread: claimed there, just before it runs
/// ([`ExecutorThread::run`]).
#[derive(Debug)]
pub(crate) struct ExecutorJob(pub(super) Due);

/// What the executor threads fire with (module docs).
#[derive(Clone)]
pub(crate) struct ExecutorRoom {
    core: Arc<TimerCore>,
    /// Keeps the classes of the blocks its claims free (held, never read).
    _slab: Arc<TaskSlab>,
    lateness: Arc<Lateness>,
    tallies: Arc<Tallies>,
    time: Time,
    bound: Option<Arc<AtomicUsize>>,
}

impl ExecutorRoom {
    pub(super) fn new(
        core: &Arc<TimerCore>,
        slab: &Arc<TaskSlab>,
        (lateness, tallies): (&Arc<Lateness>, &Arc<Tallies>),
        time: &Time,
        bound: &Option<Arc<AtomicUsize>>,
    ) -> ExecutorRoom {
        ExecutorRoom {
            core: Arc::clone(core),
            _slab: Arc::clone(slab),
            lateness: Arc::clone(lateness),
            tallies: Arc::clone(tallies),
            time: time.clone(),
            bound: bound.clone(),
        }
    }

    /// The calling thread's side.
    #[inline]
    pub(crate) fn thread(&self) -> ExecutorThread<'_> {
        ExecutorThread { room: self }
    }
}

/// An [`ExecutorRoom`] on one thread ([`ExecutorRoom::thread`]).
pub(crate) struct ExecutorThread<'a> {
    room: &'a ExecutorRoom,
}

impl ExecutorThread<'_> {
    /// Claims `job`'s entry and runs it if it is still pending, recording its lateness.
    #[inline]
    pub(crate) fn run(&self, ExecutorJob(due): ExecutorJob) {
        let room = self.room;
        let Some(task) = claim(&room.core, &due, room.bound.as_deref()) else { return };
        if task.is_counted() {
            let (clock, ticks) = (&room.time.clock, room.time.ticks);
            room.lateness.record_one(ticks, due.entry.deadline.rounded_up_tick(), clock.now_nanos());
        }
        if run(task, &mut Freed::default()) {
            room.tallies.panicked.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Abandons `job` (module docs, "A job and the shutdown").
    #[inline]
    pub(crate) fn abandon(&self, ExecutorJob(due): ExecutorJob) {
        let room = self.room;
        // The claim and its count in one hold of the tally's lock (`Tallies::discarded`).
        let mut discarded = room.tallies.discarded.lock();
        let Some(task) = claim(&room.core, &due, room.bound.as_deref()) else { return };
        *discarded += u64::from(task.is_counted());
        drop(discarded);
        if crate::unwind::drop_caught(task) {
            room.tallies.panicked.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Claims `due`'s held entry (module docs of `core.rs`, "Claimed when it runs"): its payload, its
/// record before the origin dropped in the claim's critical section and a bounded timer's gauge
/// lowered after, if it counts; `None` if a cancel or a drain took it since the advance.
#[inline]
pub(super) fn claim(core: &TimerCore, due: &Due, bound: Option<&AtomicUsize>) -> Option<Payload> {
    let stamp = due.entry.stamp;
    let task = core.claim_with(due, |extra| {
        if !extra.before_origin.is_empty() {
            extra.before_origin.remove(&stamp);
        }
    })?;
    if let Some(bound) = bound.filter(|_| task.is_counted()) {
        bound.fetch_sub(1, Ordering::Relaxed);
    }
    Some(task)
}

/// Runs `task` on this thread, catching a panic (its payload dropped as `unwind.rs` says): whether
/// it panicked. A block its closure was in goes to `freed`.
#[inline]
pub(super) fn run(task: Payload, freed: &mut Freed) -> bool {
    match panic::catch_unwind(AssertUnwindSafe(|| task.run_into(freed))) {
        Ok(()) => false,
        Err(payload) => {
            crate::unwind::drop_payload(payload);
            true
        }
    }
}
