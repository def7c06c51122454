//! `TimerTaskEntry`: one scheduled task, its state machine, and where it currently lives.
//!
//! ## Ground rules
//!
//! An entry is shared (`Arc`) by the bucket that holds it, by the driver while it is being flushed,
//! and by the user's [`TimerHandle`](crate::TimerHandle). It is **one allocation** (`TaskEntry<F>`,
//! seen through the [`TimerTaskEntry`] trait object): the deadline and **one small lock** over the
//! status, the location (which bucket, at which index) and the task's closure. The status leaves
//! `Pending` at most once, under that lock, and **the same critical section takes the closure out**
//! (the claim: [`fire`](TimerTaskEntry::fire), [`cancel`](TimerTaskEntry::cancel),
//! [`abandon`](TimerTaskEntry::abandon)); whoever won it runs, drops or hands back the closure after
//! releasing the lock, and counts the entry out of `len()` on its own counter stripe
//! (`counters.rs`), so:
//!
//! * **exactly once**: of "the task runs" and "a `cancel()` returns true", exactly one happens, even
//!   when cancel races the flush or the firing: both are decided by the one `Pending → _` transition,
//!   and only its winner ever holds the closure;
//! * a cancelled or abandoned task's closure is dropped at once, outside every lock;
//! * one lock per entry, taken once per claim: no second lock for the closure.
//!
//! The closure is stored inline and the lock's guard is seen without its type: the header is
//! `EntryHeader<dyn Send>` (an unsized tail, the closure), so the bucket and wheel code handle every
//! entry alike through [`EntryHeader::lock`], which shows only the [`EntryState`].
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
use std::ops::{Deref, DerefMut};
use std::panic::{self, AssertUnwindSafe};

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

/// What the entry's lock guards: the state, and the closure until a claim takes it.
struct Locked<T: ?Sized> {
    state: EntryState,
    task: T,
}

/// The entry's lock, held: derefs to the [`EntryState`] (the closure stays out of sight).
pub(crate) struct EntryGuard<'a>(MutexGuard<'a, Locked<dyn Send>>);

impl Deref for EntryGuard<'_> {
    type Target = EntryState;

    fn deref(&self) -> &EntryState {
        &self.0.state
    }
}

impl DerefMut for EntryGuard<'_> {
    fn deref_mut(&mut self) -> &mut EntryState {
        &mut self.0.state
    }
}

/// An entry: the deadline, and the lock over the state and the closure. `T` is `Option<F>` for the
/// concrete entry, `dyn Send` where the closure type is unknown (see the module docs).
pub(crate) struct EntryHeader<T: ?Sized = dyn Send> {
    /// The first tick at or after the task's deadline (`clock::TickLength::ceil`).
    pub(crate) deadline_tick: u64,
    state: Mutex<Locked<T>>,
}

impl EntryHeader {
    pub(crate) fn lock(&self) -> EntryGuard<'_> {
        EntryGuard(self.state.lock())
    }

    pub(crate) fn status(&self) -> Status {
        self.lock().status
    }

    /// Moves a pending entry to `to`, leaving its closure in place (dropped with the entry); `true`
    /// iff this call did. For tests of the bucket's status checks; the timer claims through
    /// [`TimerTaskEntry`], which takes the closure in the same critical section.
    #[cfg(test)]
    pub(crate) fn claim(&self, to: Status) -> bool {
        let mut state = self.lock();
        if state.status != Status::Pending {
            return false;
        }
        state.status = to;
        true
    }
}

/// What became of a [`TimerTaskEntry::fire`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fire {
    /// Another party claimed the entry first: nothing ran.
    Lost,
    /// Claimed, and the closure ran.
    Ran,
    /// Claimed, and the closure panicked (caught).
    Panicked,
}

/// A scheduled task (Kafka's `TimerTaskEntry`), whatever its closure type.
///
/// Each claim moves a pending entry out of `Pending` and takes the closure in one critical section;
/// a claim that finds the entry no longer pending does nothing. The winner counts the entry out on
/// `stripe` (before running or dropping the closure, which may panic).
pub(crate) trait TimerTaskEntry: Send + Sync {
    fn header(&self) -> &EntryHeader;
    /// Claims the entry for running; if this call won, counts it out, calls `claimed` (with no lock
    /// held), then runs the closure on this thread, catching a panic.
    fn fire(&self, stripe: &Stripe, claimed: &mut dyn FnMut()) -> Fire;
    /// Claims the entry as cancelled; if this call won, counts it out, drops the closure (no lock
    /// held) and returns `Some` of the bucket that held the entry at the claim (`None`: in transit).
    fn cancel(&self, stripe: &Stripe) -> Option<Option<Arc<TimerTaskList>>>;
    /// Claims the entry as abandoned; if this call won, counts it out and drops the closure.
    fn abandon(&self, stripe: &Stripe) -> bool;
    /// Claims the entry as abandoned; if this call won, counts it out and returns the closure, boxed.
    fn abandon_take(&self, stripe: &Stripe) -> Option<Task>;
}

/// The concrete entry: one allocation, closure inline.
type TaskEntry<F> = EntryHeader<Option<F>>;

impl<F> TaskEntry<F> {
    /// The claim: `Pending → to` and the closure out, in one critical section; `None` if lost.
    #[inline]
    fn claim(&self, to: Status) -> Option<F> {
        let mut guard = self.state.lock();
        let locked = &mut *guard;
        if locked.state.status != Status::Pending {
            return None;
        }
        locked.state.status = to;
        locked.task.take()
    }
}

impl<F: FnOnce() + Send + 'static> TimerTaskEntry for TaskEntry<F> {
    fn header(&self) -> &EntryHeader {
        self
    }

    fn fire(&self, stripe: &Stripe, claimed: &mut dyn FnMut()) -> Fire {
        let Some(task) = self.claim(Status::Fired) else {
            return Fire::Lost;
        };
        stripe.left();
        claimed();
        match panic::catch_unwind(AssertUnwindSafe(task)) {
            Ok(()) => Fire::Ran,
            Err(_) => Fire::Panicked,
        }
    }

    fn cancel(&self, stripe: &Stripe) -> Option<Option<Arc<TimerTaskList>>> {
        let (task, bucket) = {
            let mut guard = self.state.lock();
            let locked = &mut *guard;
            if locked.state.status != Status::Pending {
                return None;
            }
            locked.state.status = Status::Cancelled;
            let bucket = locked.state.location.as_ref().map(|(bucket, _)| Arc::clone(bucket));
            (locked.task.take(), bucket)
        };
        stripe.cancelled();
        drop(task);
        Some(bucket)
    }

    fn abandon(&self, stripe: &Stripe) -> bool {
        let Some(task) = self.claim(Status::Abandoned) else {
            return false;
        };
        stripe.left();
        drop(task);
        true
    }

    fn abandon_take(&self, stripe: &Stripe) -> Option<Task> {
        let task = self.claim(Status::Abandoned)?;
        stripe.left();
        Some(Box::new(task))
    }
}

/// A new pending entry for `task`, due at `deadline_tick`.
pub(crate) fn new_entry<F>(deadline_tick: u64, task: F) -> EntryRef
where
    F: FnOnce() + Send + 'static,
{
    // Coerced as a std `Arc`: loom's cannot be (see `sync.rs`).
    let entry: std::sync::Arc<dyn TimerTaskEntry> = std::sync::Arc::new(TaskEntry {
        deadline_tick,
        state: Mutex::new(Locked {
            state: EntryState { status: Status::Pending, location: None },
            task: Some(task),
        }),
    });
    arc_from_std(entry)
}

/// Cancels a pending entry: `true` iff this call did it, and then counted it out on `stripe`. The
/// closure is dropped here, outside the locks, and the entry leaves its bucket at once.
pub(crate) fn cancel(entry: &EntryRef, stripe: &Stripe) -> bool {
    #[cfg(all(delaywheel_loom, delaywheel_loom_fault = "cancel_check_then_act"))]
    return cancel_check_then_act(entry, stripe);
    let Some(bucket) = entry.cancel(stripe) else {
        return false;
    };
    // The bucket that held it at the claim: after the claim the entry can only leave it (a flush),
    // never move to another (a re-add drops it), so this is nearly always the one lookup.
    if !bucket.is_some_and(|bucket| TimerTaskList::remove(&bucket, entry)) {
        remove_from_bucket(entry);
    }
    true
}

/// Seeded bug for the loom suite only (docs/loom.md): the `Pending` check and the transition in two
/// critical sections, so a firing in between runs the task and this cancel still returns `true`.
/// (The closure, if the firing did not take it, is dropped with the entry.)
#[cfg(all(delaywheel_loom, delaywheel_loom_fault = "cancel_check_then_act"))]
fn cancel_check_then_act(entry: &EntryRef, stripe: &Stripe) -> bool {
    let header = entry.header();
    if header.status() != Status::Pending {
        return false;
    }
    remove_from_bucket(entry);
    header.lock().status = Status::Cancelled;
    stripe.cancelled();
    true
}

/// Abandons a pending entry that can no longer run (shutdown, a closed executor): `true` iff this
/// call did it, and then counted it out on `stripe`; the closure is dropped here.
pub(crate) fn abandon(entry: &EntryRef, stripe: &Stripe) -> bool {
    entry.abandon(stripe)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_small() {
        // The SPEC workloads' task: a closure holding one reference (8 bytes, non-null).
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let counter = &COUNTER;
        let task = move || {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        };
        fn size_of_entry<F>(_: &F) -> usize {
            std::mem::size_of::<TaskEntry<F>>()
        }
        // Deadline 8, lock 1 (+7), status 1 (+7), location 16, closure 8; the `Arc` adds its two
        // counts: 64 bytes, an 80-byte glibc chunk. (With a counters pointer and the closure behind
        // a second lock it was 80 bytes, a 96-byte chunk.)
        assert_eq!(size_of_entry(&task), 48);
    }
}
