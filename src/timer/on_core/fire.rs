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
//! entry drops its task unrun and counts it abandoned (the core counted it fired), one that finds
//! nothing does nothing.
//!
//! [`Core::claim`]: crate::shard::core::Core::claim

use super::{Tallies, TimerCore};
use crate::entry::task_slab::TaskSlab;
use crate::shard::core::Due;
use crate::sync::{Arc, AtomicUsize};
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
    /// Keeps the classes of the blocks its claims free.
    slab: Arc<TaskSlab>,
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
            slab: Arc::clone(slab),
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
        let _ = (due, self.room);
        todo!("on_core: an executor's claim and run")
    }

    /// Abandons `job` (module docs, "A job and the shutdown").
    #[inline]
    pub(crate) fn abandon(&self, ExecutorJob(due): ExecutorJob) {
        let _ = (due, self.room);
        todo!("on_core: an executor's abandon")
    }
}
