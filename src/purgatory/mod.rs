//! A purgatory for delayed operations, in the style of Kafka's `DelayedOperationPurgatory`.
//!
//! Broker-like servers park requests until a condition holds or a timeout passes: a produce request
//! waits for its replicas' acknowledgements, a fetch for enough bytes. Each such request is a
//! [`DelayedOperation`]; the [`Purgatory`] watches it under one or more keys (a partition, a group),
//! completes it when a [`check_and_complete`](Purgatory::check_and_complete) of one of those keys
//! finds its condition met, and expires it when its timeout passes on a [`Timer`] (the timer's driver
//! thread is Kafka's "expiration reaper").
//!
//! ## Protocol
//!
//! Every operation is wrapped in its own state: a lock over its phase (`Pending`, then exactly one
//! of `Completed`, `Expired`, `Cancelled`) and its armed timeout (see `operation.rs`). That lock is
//! *the operation's own lock* under which `try_complete` runs.
//!
//! * **register** (`try_complete_else_watch`), all under the operation's lock: try; if not done,
//!   count it delayed and add it to the list of every key; try again (a trigger that fired between
//!   the first try and the watch was missed by its check, and this try sees it); if still not done,
//!   arm the timeout and store its handle. Then release.
//! * **check** (`check_and_complete(key)`): copy the key's list under its shard lock, release it,
//!   then for each operation: take its lock (waiting, never skipping: a check must not be lost
//!   because another thread was trying the same operation), and if it is pending and `try_complete`
//!   says yes, move it to `Completed`.
//! * **expire** (the timer task): take the operation's lock; if pending, move it to `Expired`.
//! * **cancel** (`cancel_for_key(key)`): take the key's whole list; for each operation, take its
//!   lock; if pending, move it to `Cancelled`.
//!
//! Whoever moves an operation out of `Pending` then, with no lock held, *retires* it: cancels its
//! timeout (a check or a cancel; the expiry *is* that timeout, already claimed by the timer) and
//! removes every one of its watches from its key's list (O(1) each; emptied lists are removed); and
//! only then runs the callbacks: `on_complete`, and on expiry `on_expiration` right after it. So when
//! a callback runs, `delayed()` and `watched()` already exclude the operation. Between the two steps
//! of a retirement the counts disagree for a moment: `delayed()` drops when the timeout is claimed
//! (by the expiry, or by the retiring thread's cancel), `watched()` and `watched_keys()` when the
//! watches leave their lists just after. A caller waiting for a purgatory to drain waits for all
//! three to read zero.
//!
//! `delayed()` is the timer's pending count (as Kafka's `numDelayed` is its timer's size), plus the
//! rare operations whose timeout is beyond the timer's range: the purgatory keeps no counter of its
//! own that every registration and completion would bounce between cores (registrations and
//! completions usually run on different threads, and on a small machine every cache line an
//! operation's life moves between cores is a good part of its cost). The one shared line an
//! operation touches is the reference count its timeout task holds on the watcher lists.
//!
//! **No lost trigger.** A trigger is "the condition became true, then `check_and_complete(k)` was
//! called". If the check copied `k`'s list before the registration added the operation to it, the
//! registration's second try runs after that add, hence after the check took the shard lock, hence
//! after the condition became true: it sees it. Otherwise the check found the operation and waits for
//! its lock, which the registration releases only after its second try.
//!
//! **Exactly once.** The transition out of `Pending` happens once, under the operation's lock, and
//! only its winner runs callbacks. A check and the expiry racing each other both take that lock; the
//! loser finds the phase changed and does nothing.
//!
//! ## Locking rules
//!
//! Locks: the operation's lock, the watcher shards' locks, the timer's locks (bucket, entry, delay
//! queue). The only nesting is *operation lock, then shard lock or timer lock*, during registration.
//! No thread ever waits for an operation's lock while holding a shard or timer lock: checks and
//! cancels copy lists out first, and the timer runs tasks with no bucket, entry or queue lock held
//! (only the lock that serialises advances of its clock). So:
//!
//! * `try_complete` runs with the operation's own lock held and no purgatory, watcher or wheel lock
//!   (Kafka's KAFKA-3994 deadlock came from calling it under a watcher lock). Because its own lock is
//!   held, **`try_complete` must not call `check_and_complete`, `cancel_for_key`,
//!   `try_complete_else_watch` or `advance_clock`**: those wait for other operations' locks (or for
//!   an expiry that needs this one), and two operations doing it to each other deadlock. Reading
//!   `delayed()` / `watched()` is fine;
//! * `on_complete` and `on_expiration` run with no lock at all, and may call the purgatory.
//!
//! ## Memory
//!
//! A finished operation leaves every list at once and its timeout is cancelled (which drops the
//! timer's closure and its reference), so the purgatory holds nothing for it: memory is proportional
//! to the live operations, with no purge pass (Kafka keeps completed operations in their lists until
//! a purge and has had brokers run out of memory from it: KAFKA-19389, KAFKA-19763).
//!
//! Whoever drops the last reference to an operation runs its `Drop`, which is user code: a check
//! that completed it (the lists and the timer let go of theirs as it retires it), a check or a
//! cancel whose copy of the list outlived every other reference, or the purgatory's drop for an
//! operation that never expires. Those drops are caught (`unwind.rs`, `drop_caught`), so that a
//! panicking one neither ends a check before the rest of its list (their triggers would be lost),
//! nor loses the operations a cancel took, nor aborts the process by panicking again while the
//! purgatory's drop unwinds.

mod operation;
mod stats;
mod watchers;

use std::fmt;
use std::hash::Hash;
use std::time::Duration;

pub use operation::DelayedOperation;
pub use stats::PurgatoryStats;

use crate::sync::{Arc, AtomicU64, AtomicUsize, Ordering};
use crate::ScheduleError;
use crate::Timer;
use operation::{Operation, Phase, Timeout, Watch, Watches, UNWATCHED};
use watchers::Watchers;

/// Kafka's `DelayedOperationPurgatory`: operations wait, watched under keys, until a check finds
/// their condition met or their timeout passes.
///
/// * [`try_complete_else_watch`](Purgatory::try_complete_else_watch) registers an operation (unless
///   it can complete at once);
/// * [`check_and_complete`](Purgatory::check_and_complete) is called when something a key stands for
///   changed (an acknowledgement arrived for a partition): it tries that key's operations;
/// * the timer expires the ones whose timeout passes first;
/// * [`cancel_for_key`](Purgatory::cancel_for_key) drops a key's operations (the partition moved).
///
/// See [`DelayedOperation`] for the guarantees on the callbacks, and the [module docs](self) for the
/// protocol. `Purgatory` is `Send + Sync`: share it behind an `Arc`.
///
/// Dropping the purgatory stops its timer; operations still pending are dropped without any
/// callback. An operation whose `Drop` panics when the purgatory lets go of the last reference to
/// it (in its drop, a check or a cancel) is dropped all the same, the panic caught, as a delay
/// queue's values and a timer's closures are: the drop, check or cancel goes on with the other
/// operations and does not panic. So is the purgatory's own copy of a key whose `Drop` panics when
/// its last watch leaves it: `watched()` and the key count stay exact.
///
/// ```
/// use delaywheel::purgatory::{DelayedOperation, Purgatory};
/// use delaywheel::{ManualClock, Timer};
/// use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// #[derive(Default)]
/// struct Produce {
///     acked: AtomicBool,
///     completions: AtomicU32,
///     expired: AtomicBool,
/// }
///
/// impl DelayedOperation for Produce {
///     fn try_complete(&self) -> bool {
///         self.acked.load(Ordering::Acquire)
///     }
///     fn on_complete(&self) {
///         self.completions.fetch_add(1, Ordering::SeqCst);
///     }
///     fn on_expiration(&self) {
///         self.expired.store(true, Ordering::SeqCst);
///     }
/// }
///
/// // Deterministic: a manual timer on a manual clock.
/// let clock = ManualClock::new();
/// let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
/// let purgatory: Purgatory<&str, Produce> = Purgatory::with_timer(timer);
///
/// let (fast, slow) = (Arc::new(Produce::default()), Arc::new(Produce::default()));
/// let timeout = Duration::from_millis(200);
/// assert!(!purgatory.try_complete_else_watch(fast.clone(), timeout, ["partition-0"]));
/// assert!(!purgatory.try_complete_else_watch(slow.clone(), timeout, ["partition-0", "partition-1"]));
/// assert_eq!((purgatory.delayed(), purgatory.watched()), (2, 3));
///
/// // An acknowledgement arrives for `fast`: the check on its key completes it.
/// fast.acked.store(true, Ordering::Release);
/// assert_eq!(purgatory.check_and_complete(&"partition-0"), 1);
/// assert_eq!((purgatory.delayed(), purgatory.watched()), (1, 2));
///
/// // `slow` times out: on_complete, then on_expiration; it leaves both lists.
/// clock.advance(timeout);
/// purgatory.advance_clock(Duration::ZERO);
/// assert!(slow.expired.load(Ordering::SeqCst));
/// assert_eq!(slow.completions.load(Ordering::SeqCst), 1);
/// assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (0, 0, 0));
/// ```
pub struct Purgatory<K, T: ?Sized> {
    /// Declared first so that it is dropped first: its drain drops every unfired timeout closure
    /// (each holds its operation and `inner`) before the lists go.
    timer: Timer,
    inner: Arc<Inner<K, T>>,
    /// Registered operations whose timeout was beyond the timer's range (the others are counted by
    /// the timer itself).
    untimed: AtomicUsize,
    /// `try_complete` calls of `check_and_complete` that panicked (see [`Purgatory::panicked`]).
    panicked: AtomicU64,
    /// Operations completed by a `try_complete` that returned `true` (see [`PurgatoryStats`]).
    completed: AtomicU64,
}

impl<K, T> Purgatory<K, T>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    T: DelayedOperation + ?Sized,
{
    /// A purgatory with its own timer (1 ms tick, default wheel size) whose driver thread, named
    /// `delaywheel-purgatory-reaper`, expires operations (Kafka's expiration reaper).
    ///
    /// # Panics
    ///
    /// If the reaper thread cannot be started.
    pub fn new() -> Self {
        Self::with_timer(Timer::builder().thread_name("delaywheel-purgatory-reaper").build())
    }

    /// A purgatory whose timeouts run on `timer`, which it owns from now on.
    ///
    /// With a timer built with [`manual()`](crate::TimerBuilder::manual) (typically on a
    /// [`ManualClock`](crate::ManualClock)) operations expire only inside
    /// [`advance_clock`](Purgatory::advance_clock): deterministic tests and simulations. With a
    /// driven timer its driver thread is the reaper; with
    /// [`TaskExecution::Threads`](crate::TaskExecution::Threads) expirations run on its executor
    /// threads.
    ///
    /// Pass a fresh timer: as in Kafka (`numDelayed` is the timer's size), [`delayed`](Self::delayed)
    /// counts the timer's pending tasks, so tasks scheduled on it beforehand would count until they
    /// run.
    pub fn with_timer(timer: Timer) -> Self {
        Self::with_timer_and_shards(timer, watchers::default_shards())
    }

    pub(crate) fn with_timer_and_shards(timer: Timer, shards: usize) -> Self {
        Purgatory {
            timer,
            inner: Arc::new(Inner { watchers: Watchers::new(shards), expired: AtomicU64::new(0) }),
            untimed: AtomicUsize::new(0),
            panicked: AtomicU64::new(0),
            completed: AtomicU64::new(0),
        }
    }

    /// Tries to complete `op` now; if it cannot, watches it under every key in `keys`, tries once
    /// more, and arms its `timeout`. Returns `true` iff it completed during this call (then
    /// `on_complete` has run, on this thread, and the operation is not kept).
    ///
    /// Both tries run under the operation's own lock, which is held through the whole registration,
    /// so a check that finds the operation in a list waits for the registration to end, and a trigger
    /// that a check missed before the watch is caught by the second try.
    ///
    /// Each call registers a new operation, with its own lock and completion state: registering the
    /// same `Arc<T>` again while it is pending makes a second, independent operation (its
    /// `on_complete` can then run once for each registration). Pass an `Arc<T>` once. `keys` may
    /// repeat a key (the operation is then watched twice under it, as in Kafka) or be empty (it then
    /// completes only by a try in this call or by its timeout). The timeout counts from the end of the
    /// registration; one beyond the timer's range (a second past [`Timer::max_delay`], e.g.
    /// `Duration::MAX`) means the operation never expires. If the timer refuses the timeout for
    /// any other reason (its [`max_pending`](crate::TimerBuilder::max_pending) is reached, or it
    /// was shut down), the operation expires at once, on this thread (`on_complete`, then
    /// `on_expiration`), unless a check completes it first: it is never left waiting without a
    /// timeout.
    ///
    /// # Panics
    ///
    /// If `try_complete` panics: the panic propagates, and an operation already watched stays watched
    /// without a timeout (it can still be completed by a check or cancelled).
    pub fn try_complete_else_watch(
        &self,
        op: Arc<T>,
        timeout: Duration,
        keys: impl IntoIterator<Item = K>,
    ) -> bool {
        let watchers = &self.inner.watchers;
        let watches = keys.into_iter().map(|key| Watch {
            shard: watchers.shard_of(&key),
            key,
            index: AtomicUsize::new(UNWATCHED),
        });
        let operation = Arc::new(Operation::new(op, Watches::from_iter(watches)));
        let mut state = operation.lock();
        if operation.try_complete(&state) {
            operation.decide(&mut state, Phase::Completed);
            drop(state);
            self.completed.fetch_add(1, Ordering::Relaxed);
            operation.op.on_complete();
            return true;
        }
        for slot in 0..operation.watches().len() {
            watchers.watch(&operation, slot);
        }
        if operation.try_complete(&state) {
            let timeout = operation.decide(&mut state, Phase::Completed);
            drop(state);
            self.retire(&operation, timeout);
            self.completed.fetch_add(1, Ordering::Relaxed);
            operation.op.on_complete();
            return true;
        }
        let task = {
            let (inner, operation) = (Arc::clone(&self.inner), Arc::clone(&operation));
            move || inner.expire(&operation)
        };
        state.timeout = match self.timer.try_schedule(timeout, task) {
            Ok(handle) => Timeout::Armed(handle),
            // A timeout beyond the timer's range: the operation never expires, as documented.
            Err(ScheduleError::DelayTooLong { .. }) => {
                self.untimed.fetch_add(1, Ordering::Relaxed);
                Timeout::Never
            }
            // Refused for capacity (or a shared timer shut down): expire now rather than leave the
            // operation waiting forever with no timeout.
            Err(_) => {
                drop(state);
                self.inner.expire(&operation);
                return false;
            }
        };
        false
    }

    /// Tries every pending operation watched under `key`, completing those whose condition holds.
    /// Returns how many this call completed (their `on_complete` has run, on this thread).
    ///
    /// Call it when something `key` stands for changed. Each operation is tried under its own lock;
    /// if another thread holds it (trying the same operation), this call waits for it rather than
    /// skip, so no trigger is lost. No watcher lock is held while trying.
    ///
    /// A `try_complete` that panics is caught and counted ([`panicked`](Self::panicked)), and the
    /// check goes on with the rest of the list: one faulty operation does not block its keys. The
    /// operation that panicked stays pending and watched, until a later try completes it, its
    /// timeout expires it, or it is cancelled.
    ///
    /// # Panics
    ///
    /// If an `on_complete` panics: once the rest of the list is checked (every other operation
    /// whose condition holds completes in this call), the first such panic resumes here. The
    /// operation whose `on_complete` panicked is finished all the same (its callback ran). (A panic
    /// of an operation's `Drop`, where this call holds the last reference, is caught: see
    /// [`Purgatory`].)
    pub fn check_and_complete(&self, key: &K) -> usize {
        let (first, rest) = self.inner.watchers.snapshot(key);
        let mut completed = 0;
        // The first `on_complete` panic, resumed once the rest of the list is checked: one
        // faulty callback must not cost the other operations of the key their trigger.
        let mut panics = crate::unwind::FirstPanic::default();
        for operation in first.into_iter().chain(rest) {
            if self.check(&operation, &mut panics) {
                completed += 1;
            }
            // Often the last reference (the lists and the timer let go of theirs as the check
            // retired it): its drop must not cost the rest of the list their check either.
            crate::unwind::drop_caught(operation);
        }
        panics.resume();
        completed
    }

    /// One operation of a check: tries it under its lock and, if it completes, retires it and runs
    /// `on_complete` (its panic kept in `panics`). Returns whether it completed.
    fn check(&self, operation: &Operation<K, T>, panics: &mut crate::unwind::FirstPanic) -> bool {
        if operation.is_done() {
            return false;
        }
        let mut state = operation.lock();
        match operation.try_complete_caught(&state) {
            Some(true) => {}
            Some(false) => return false,
            None => {
                self.panicked.fetch_add(1, Ordering::Relaxed);
                return false;
            }
        }
        let timeout = operation.decide(&mut state, Phase::Completed);
        drop(state);
        self.retire(operation, timeout);
        self.completed.fetch_add(1, Ordering::Relaxed);
        panics.run(|| operation.op.on_complete());
        true
    }

    /// Cancels every pending operation watched under `key` and returns them (each once), for the
    /// caller to answer otherwise (e.g. "not the leader any more"). A cancelled operation never
    /// completes nor expires: neither callback runs. It leaves all its keys' lists and its timeout
    /// is cancelled before this returns. Operations that already finished are not returned.
    pub fn cancel_for_key(&self, key: &K) -> Vec<Arc<T>> {
        let mut cancelled = Vec::new();
        for operation in self.inner.watchers.take(key) {
            let mut state = operation.lock();
            if state.phase == Phase::Pending {
                let timeout = operation.decide(&mut state, Phase::Cancelled);
                drop(state);
                self.retire(&operation, timeout);
                cancelled.push(Arc::clone(&operation.op));
            } else {
                drop(state);
            }
            // The last reference, if the operation finished meanwhile: a panic of its drop must
            // not lose the operations cancelled so far, which only this call returns.
            crate::unwind::drop_caught(operation);
        }
        cancelled
    }

    /// Advances the timer: expires every operation whose timeout has passed on its clock (with a
    /// manual timer, this is the only place they expire). Returns whether any timer bucket was
    /// flushed. See [`Timer::advance_clock`]: with the system clock it first waits up to `timeout`
    /// for a bucket to become due; a manual clock never waits.
    pub fn advance_clock(&self, timeout: Duration) -> bool {
        self.timer.advance_clock(timeout)
    }

    /// Gives back the memory a burst of operations left behind: the timer's empty pages of
    /// timeouts ([`Timer::shrink`]; the watcher maps give theirs back as operations leave them).
    /// A purgatory with its own reaper thread does this by itself once the burst is over; call it
    /// on a manual timer, or when the memory must be back at once.
    pub fn shrink(&self) {
        self.timer.shrink();
    }

    /// After this thread moved `operation` out of `Pending` by a check or a cancel: disarms its
    /// timeout and removes it from every list. Called with no lock held.
    fn retire(&self, operation: &Operation<K, T>, timeout: Timeout) {
        match timeout {
            Timeout::Armed(handle) => {
                handle.cancel();
            }
            Timeout::Never => {
                self.untimed.fetch_sub(1, Ordering::Relaxed);
            }
            Timeout::Unarmed => {}
        }
        self.inner.unwatch_all(operation);
    }
}

/// What the timeout tasks share with the purgatory: the watcher lists. On its own cache lines, so
/// that the reference count every timeout task takes and drops (one line per operation, whatever its
/// number of keys) does not evict the read-mostly fields every call reads.
#[repr(align(128))]
struct Inner<K, T: ?Sized> {
    watchers: Watchers<K, T>,
    /// Operations finished by their timeout, since the purgatory was created.
    expired: AtomicU64,
}

impl<K, T> Inner<K, T>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    T: DelayedOperation + ?Sized,
{
    /// The timer task of `operation`: expires it unless something else finished it first.
    fn expire(&self, operation: &Operation<K, T>) {
        let mut state = operation.lock();
        if state.phase != Phase::Pending {
            return;
        }
        // The timeout is this very task, which the timer already claimed (and uncounted): nothing
        // to disarm, and its handle (no reference count) needs no drop.
        operation.decide(&mut state, Phase::Expired);
        drop(state);
        self.expired.fetch_add(1, Ordering::Relaxed);
        self.unwatch_all(operation);
        operation.op.on_complete();
        operation.op.on_expiration();
    }

    /// Removes every watch of a finished operation from its key's list.
    fn unwatch_all(&self, operation: &Operation<K, T>) {
        for slot in 0..operation.watches().len() {
            self.watchers.unwatch(operation, slot);
        }
    }
}

impl<K, T> Default for Purgatory<K, T>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    T: DelayedOperation + ?Sized,
{
    /// [`Purgatory::new`].
    fn default() -> Self {
        Self::new()
    }
}

impl<K, T: ?Sized> Drop for Purgatory<K, T> {
    /// Releases the watcher lists' operations before the timer's drop (the field, next) drains
    /// the timeouts' closures, which hold the other reference to each pending operation: each
    /// operation is then dropped once, by whichever of the two goes last.
    fn drop(&mut self) {
        self.inner.watchers.clear();
    }
}

impl<K, T: ?Sized> fmt::Debug for Purgatory<K, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Purgatory")
            .field("delayed", &(self.timer.len() + self.untimed.load(Ordering::Relaxed)))
            .field("watched", &self.inner.watchers.watched())
            .field("watched_keys", &self.inner.watchers.keys())
            .field("expired", &self.inner.expired.load(Ordering::Relaxed))
            .field("timer", &self.timer)
            .finish_non_exhaustive()
    }
}
