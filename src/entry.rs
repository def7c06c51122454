//! `TimerTaskEntry`: one scheduled task, its state machine, and where it currently lives.
//!
//! ## Ground rules
//!
//! An entry is shared (`Arc`) by the bucket that holds it, by the driver while it is being flushed,
//! and by the user's [`TimerHandle`](crate::TimerHandle). All of its mutable state sits behind **one
//! small lock** ([`EntryState`]): the status, the task closure, and its location (which bucket, at
//! which index). Whoever changes the status away from `Pending` takes the closure in the same
//! critical section, so:
//!
//! * **exactly once**: of "the task runs" and "a `cancel()` returns true", exactly one happens, even
//!   when cancel races the flush or the firing: both are decided by the one `Pending → _` transition;
//! * a cancelled or abandoned task's closure is dropped at once, outside every lock.
//!
//! Locking order: **bucket lock, then entry lock**, never the other way round. Code that starts from an
//! entry (cancel) reads the location under the entry lock, releases it, then takes the bucket lock and
//! re-checks the location under both (see `TimerTaskList::remove`).
//!
//! Location invariant: `location == Some((b, i))` if and only if bucket `b` holds this entry at index
//! `i`; it only changes while `b`'s lock is held. A `None` location with status `Pending` means the
//! entry is in transit (taken out by a flush, not yet re-added); the re-add checks the status under
//! both locks and drops a cancelled entry instead of inserting it.

use std::fmt;

use crate::bucket::TimerTaskList;
use crate::counters::Counters;
use crate::sync::{Arc, Mutex, MutexGuard};

/// The closure of a scheduled task.
pub(crate) type Task = Box<dyn FnOnce() + Send + 'static>;

/// Where an entry is in its life. Only `Pending` may change, and only once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    /// Waiting in a bucket (or in transit between buckets).
    Pending,
    /// Claimed for running: its closure has been (or is being) run.
    Fired,
    /// A `cancel()` call won: the closure was dropped unrun.
    Cancelled,
    /// The timer shut down first: the closure was dropped or handed back unrun.
    Abandoned,
}

/// The mutable state of an entry, all behind the entry's one lock.
pub(crate) struct EntryState {
    pub(crate) status: Status,
    pub(crate) task: Option<Task>,
    /// The bucket holding this entry and the index in its list; see the module docs.
    pub(crate) location: Option<(Arc<TimerTaskList>, usize)>,
}

/// One scheduled task.
pub(crate) struct TimerTaskEntry {
    /// The first tick at or after the task's deadline (`clock::TickLength::ceil`).
    pub(crate) deadline_tick: u64,
    /// The owning timer's counters, so a cancel can keep `len()` exact without the timer.
    counters: Arc<Counters>,
    state: Mutex<EntryState>,
}

impl TimerTaskEntry {
    pub(crate) fn new(deadline_tick: u64, task: Task, counters: Arc<Counters>) -> Self {
        TimerTaskEntry {
            deadline_tick,
            counters,
            state: Mutex::new(EntryState { status: Status::Pending, task: Some(task), location: None }),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, EntryState> {
        self.state.lock()
    }

    pub(crate) fn status(&self) -> Status {
        self.lock().status
    }

    /// Moves a pending entry to `to` and hands out its closure. `None` if it was not pending: then
    /// another party already decided this entry's fate.
    fn claim(&self, to: Status) -> Option<Task> {
        let mut state = self.lock();
        if state.status != Status::Pending {
            return None;
        }
        state.status = to;
        let task = state.task.take();
        drop(state);
        self.counters.pending_done();
        task
    }

    /// Claims the entry for running. The caller runs the returned closure (outside every lock).
    pub(crate) fn claim_for_firing(&self) -> Option<Task> {
        self.claim(Status::Fired)
    }

    /// Claims the entry for shutdown: the closure is handed back unrun.
    pub(crate) fn claim_for_shutdown(&self) -> Option<Task> {
        self.claim(Status::Abandoned)
    }

    /// Cancels a pending entry: `true` iff this call did it. The closure is dropped here, outside
    /// the locks, and the entry leaves its bucket at once.
    pub(crate) fn cancel(self: &Arc<Self>) -> bool {
        match self.claim(Status::Cancelled) {
            Some(task) => {
                self.counters.cancelled();
                drop(task);
                self.remove_from_bucket();
                true
            }
            None => false,
        }
    }

    /// Unlinks the entry from whichever bucket holds it (no-op when it is in transit: the re-add
    /// sees the status and drops it).
    pub(crate) fn remove_from_bucket(self: &Arc<Self>) {
        loop {
            let bucket = match &self.lock().location {
                Some((bucket, _)) => Arc::clone(bucket),
                None => return,
            };
            if bucket.remove(self) {
                return;
            }
            // The entry moved between reading its location and locking that bucket: look again.
        }
    }
}

impl fmt::Debug for TimerTaskEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerTaskEntry")
            .field("deadline_tick", &self.deadline_tick)
            .field("status", &self.status())
            .finish()
    }
}
