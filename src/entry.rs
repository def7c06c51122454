//! `TimerTaskEntry`: one scheduled task, its state machine, and where it currently lives.
//!
//! ## Ground rules
//!
//! An entry is shared (`Arc`) by the bucket that holds it, by the driver while it is being flushed,
//! and by the user's [`TimerHandle`](crate::TimerHandle). It is **one allocation**: the header
//! ([`EntryHeader`]) and the task's closure stored inline (`TaskEntry<F>`), seen through the
//! [`TimerTaskEntry`] trait object. The header's **one small lock** guards the status and the location
//! (which bucket, at which index). The status leaves `Pending` at most once, under that lock
//! ([`claim`](EntryHeader::claim)); only the party whose claim succeeded touches the closure
//! afterwards (runs it, drops it, or hands it back), so:
//!
//! * **exactly once**: of "the task runs" and "a `cancel()` returns true", exactly one happens, even
//!   when cancel races the flush or the firing: both are decided by the one `Pending → _` transition;
//! * a cancelled or abandoned task's closure is dropped at once, outside every lock.
//!
//! Locking order: **bucket lock, then entry lock**, never the other way round. Code that starts from an
//! entry (cancel) reads the location under the entry lock, releases it, then takes the bucket lock and
//! re-checks the location under both (see `TimerTaskList::remove`).
//!
//! Location invariant: `location == Some((b, i))` if and only if bucket `b` holds this entry at
//! (packed stage and) index `i`; it only changes while `b`'s lock is held. A `None` location with status `Pending` means the
//! entry is in transit (taken out by a flush, not yet re-added); the re-add checks the status under
//! both locks and drops a cancelled entry instead of inserting it.

use std::fmt;

use crate::bucket::TimerTaskList;
use crate::counters::Stripe;
use crate::sync::{arc_from_std, Arc, Mutex, MutexGuard};

/// A task's closure, boxed: what shutdown hands back.
pub(crate) type Task = Box<dyn FnOnce() + Send + 'static>;

/// A shared reference to an entry of any closure type.
pub(crate) type EntryRef = Arc<dyn TimerTaskEntry>;

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

/// The mutable part of the header, behind the entry's lock.
pub(crate) struct EntryState {
    pub(crate) status: Status,
    /// The bucket holding this entry, and its stage and index there (`bucket::pack_location`);
    /// see the module docs.
    pub(crate) location: Option<(Arc<TimerTaskList>, u64)>,
}

/// What every entry has, whatever its closure type.
pub(crate) struct EntryHeader {
    /// The first tick at or after the task's deadline (`clock::TickLength::ceil`).
    pub(crate) deadline_tick: u64,
    state: Mutex<EntryState>,
}

impl EntryHeader {
    pub(crate) fn lock(&self) -> MutexGuard<'_, EntryState> {
        self.state.lock()
    }

    pub(crate) fn status(&self) -> Status {
        self.lock().status
    }

    /// Moves a pending entry to `to`; `true` iff this call did (then the caller owns the closure,
    /// and counts the entry out of `len()` on its stripe: `counters.rs`).
    pub(crate) fn claim(&self, to: Status) -> bool {
        let mut state = self.lock();
        if state.status != Status::Pending {
            return false;
        }
        state.status = to;
        true
    }
}

/// A scheduled task: the header plus the closure (Kafka's `TimerTaskEntry`).
///
/// The closure methods may be called only by the party whose [`EntryHeader::claim`] succeeded, and
/// only once; later calls find no closure and do nothing.
pub(crate) trait TimerTaskEntry: Send + Sync {
    fn header(&self) -> &EntryHeader;
    /// Runs the closure on this thread.
    fn run(&self);
    /// Drops the closure unrun.
    fn discard(&self);
    /// Moves the closure out, boxed.
    fn take_task(&self) -> Option<Task>;
}

/// The concrete entry: header and closure in one allocation.
struct TaskEntry<F> {
    header: EntryHeader,
    /// Taken by the claim winner only; the lock is never contended.
    task: Mutex<Option<F>>,
}

impl<F: FnOnce() + Send + 'static> TimerTaskEntry for TaskEntry<F> {
    fn header(&self) -> &EntryHeader {
        &self.header
    }

    fn run(&self) {
        let task = self.task.lock().take();
        if let Some(task) = task {
            task();
        }
    }

    fn discard(&self) {
        let task = self.task.lock().take();
        drop(task);
    }

    fn take_task(&self) -> Option<Task> {
        let task = self.task.lock().take();
        task.map(|task| Box::new(task) as Task)
    }
}

/// A new pending entry for `task`, due at `deadline_tick`.
pub(crate) fn new_entry<F>(deadline_tick: u64, task: F) -> EntryRef
where
    F: FnOnce() + Send + 'static,
{
    // Coerced as a std `Arc`: loom's cannot be (see `sync.rs`).
    let entry: std::sync::Arc<dyn TimerTaskEntry> = std::sync::Arc::new(TaskEntry {
        header: EntryHeader {
            deadline_tick,
            state: Mutex::new(EntryState { status: Status::Pending, location: None }),
        },
        task: Mutex::new(Some(task)),
    });
    arc_from_std(entry)
}

/// Cancels a pending entry: `true` iff this call did it, and then counted it out on `stripe`. The
/// closure is dropped here, outside the locks, and the entry leaves its bucket at once.
pub(crate) fn cancel(entry: &EntryRef, stripe: &Stripe) -> bool {
    #[cfg(all(delaywheel_loom, delaywheel_loom_fault = "cancel_check_then_act"))]
    return cancel_check_then_act(entry, stripe);
    let header = entry.header();
    if !header.claim(Status::Cancelled) {
        return false;
    }
    stripe.cancelled();
    entry.discard();
    remove_from_bucket(entry);
    true
}

/// Seeded bug for the loom suite only (docs/loom.md): the `Pending` check and the transition in two
/// critical sections, so a firing in between runs the task and this cancel still returns `true`.
#[cfg(all(delaywheel_loom, delaywheel_loom_fault = "cancel_check_then_act"))]
fn cancel_check_then_act(entry: &EntryRef, stripe: &Stripe) -> bool {
    let header = entry.header();
    if header.status() != Status::Pending {
        return false;
    }
    remove_from_bucket(entry);
    header.lock().status = Status::Cancelled;
    stripe.cancelled();
    entry.discard();
    true
}

/// Abandons a pending entry that can no longer run (shutdown, a closed executor): `true` iff this
/// call did it, and then counted it out on `stripe`; the closure is dropped here.
pub(crate) fn abandon(entry: &EntryRef, stripe: &Stripe) -> bool {
    let claimed = entry.header().claim(Status::Abandoned);
    if claimed {
        stripe.left();
        entry.discard();
    }
    claimed
}

/// Unlinks the entry from whichever bucket holds it (no-op when it is in transit: the re-add sees
/// the status and drops it).
pub(crate) fn remove_from_bucket(entry: &EntryRef) {
    loop {
        let bucket = match &entry.header().lock().location {
            Some((bucket, _)) => Arc::clone(bucket),
            None => return,
        };
        if TimerTaskList::remove(&bucket, entry) {
            return;
        }
        // The entry moved between reading its location and locking that bucket: look again.
    }
}

impl fmt::Debug for dyn TimerTaskEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header = self.header();
        f.debug_struct("TimerTaskEntry")
            .field("deadline_tick", &header.deadline_tick)
            .field("status", &header.status())
            .finish()
    }
}
