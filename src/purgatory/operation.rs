//! `DelayedOperation` (the user's side) and `Operation` (the purgatory's per-operation state).
//!
//! ## The operation's own lock
//!
//! Users implement [`DelayedOperation`] on their own type and hand it over as an `Arc<T>`; the
//! purgatory cannot put a lock *into* that type, and an `Arc<T>` may even be shared with code that
//! knows nothing of the purgatory. So every call of
//! [`try_complete_else_watch`](super::Purgatory::try_complete_else_watch) wraps the `Arc<T>` in an
//! [`Operation`]: a small mutex over the operation's [`Phase`] and its armed timeout, plus the keys it
//! is watched under. That mutex **is** "the operation's own lock":
//!
//! * `try_complete` is only ever called with it held, so two calls on one operation never overlap,
//!   and no call happens once the operation has left `Pending`;
//! * the one transition out of `Pending` (to `Completed`, `Expired` or `Cancelled`) happens under
//!   it, right after the `try_complete` that said yes (or the expiry / cancel that found it pending),
//!   so of all the parties racing to finish an operation exactly one wins;
//! * it is a leaf lock for everything but the registration (see `mod.rs`): no other purgatory lock
//!   is ever waited for while a thread holds it, except the shard locks taken while watching and the
//!   wheel's locks taken while arming the timeout, and no one ever waits for an operation's lock
//!   while holding a shard or wheel lock.
//!
//! The callbacks (`on_complete`, `on_expiration`) run after the lock is released: they may call
//! anything, including the purgatory itself.
//!
//! `done` mirrors "`phase != Pending`" so a check can skip finished operations without locking; it
//! is only a hint, the decision is always re-read under the lock.

use std::fmt;
use std::hash::Hash;

use crate::sync::{Arc, AtomicBool, AtomicUsize, Mutex, MutexGuard, Ordering};
use crate::TimerHandle;

/// An operation that waits in a [`Purgatory`](super::Purgatory) until its condition holds or its
/// timeout passes: Kafka's `DelayedOperation`.
///
/// Implement the three methods on your own type and hand it to
/// [`try_complete_else_watch`](super::Purgatory::try_complete_else_watch) as an `Arc<T>`; the
/// purgatory keeps its own lock and completion flag beside it, so your type needs neither.
///
/// For every operation the purgatory guarantees:
///
/// * [`try_complete`](DelayedOperation::try_complete) is called with the operation's own lock held
///   (never two calls at once on one operation), never with a purgatory, watcher-list or wheel lock
///   held, and never again once the operation has completed, expired or been cancelled;
/// * [`on_complete`](DelayedOperation::on_complete) runs **exactly once** unless the operation is
///   cancelled ([`cancel_for_key`](super::Purgatory::cancel_for_key)) or the purgatory is dropped
///   first: after a `try_complete` that returned `true`, or on expiry;
/// * [`on_expiration`](DelayedOperation::on_expiration) runs at most once, only on expiry, after
///   `on_complete` returned, on the same thread (Kafka's order);
/// * the callbacks run with no lock of the purgatory held (not even the operation's own), so they
///   may call back into the purgatory.
///
/// Keep `try_complete` short and side-effect free: it runs on the threads that call
/// [`check_and_complete`](super::Purgatory::check_and_complete), while other checks of the same
/// operation wait for it. It must not call `check_and_complete`, `cancel_for_key`,
/// `try_complete_else_watch` or `advance_clock` of its purgatory, whatever the key: the operation's
/// own lock is held, and those wait for other operations' locks (or for an expiry that needs this
/// one), so two operations doing it to each other deadlock, and one watched under the key it
/// checks deadlocks alone. Reading `delayed()`, `watched()` or `stats()` is fine.
///
/// ```
/// use delaywheel::purgatory::DelayedOperation;
/// use std::sync::atomic::{AtomicU32, Ordering};
///
/// /// A produce request waiting until `required` replicas acknowledged it.
/// struct Produce {
///     acks: AtomicU32,
///     required: u32,
/// }
///
/// impl DelayedOperation for Produce {
///     fn try_complete(&self) -> bool {
///         self.acks.load(Ordering::Acquire) >= self.required
///     }
///     fn on_complete(&self) {
///         let acked = self.try_complete();
///         println!("respond: {}", if acked { "ok" } else { "timed out" });
///     }
///     fn on_expiration(&self) {
///         println!("expired");
///     }
/// }
/// ```
pub trait DelayedOperation: Send + Sync + 'static {
    /// Whether the operation's condition holds now. Returning `true` completes the operation:
    /// [`on_complete`](DelayedOperation::on_complete) follows, once.
    ///
    /// Called with the operation's own lock held, by whichever thread is checking it.
    fn try_complete(&self) -> bool;

    /// The operation is done: send the response. Runs exactly once per operation (see the trait
    /// docs), whether a check or the expiry completed it.
    fn on_complete(&self);

    /// The operation timed out. Runs only on expiry, once, right after
    /// [`on_complete`](DelayedOperation::on_complete) on the same thread.
    fn on_expiration(&self);
}

/// Where an operation is in its life. Only `Pending` may change, and only once, under the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Being registered, or watched and waiting.
    Pending,
    /// A `try_complete` returned `true`.
    Completed,
    /// Its timeout fired first.
    Expired,
    /// `cancel_for_key` removed it first.
    Cancelled,
}

/// The operation's timeout, as far as its lock knows.
pub(crate) enum Timeout {
    /// Not armed yet: the operation is being registered.
    Unarmed,
    /// Armed on the timer (counted in the timer's `len`).
    Armed(TimerHandle),
    /// Never armed: the timeout was beyond the timer's range (counted in the purgatory's `untimed`).
    Never,
}

/// What the operation's lock protects.
pub(crate) struct State {
    pub(crate) phase: Phase,
    /// Taken by whoever moves the operation out of `Pending`, who then disarms it.
    pub(crate) timeout: Timeout,
}

/// `Watch::index` of a watch that is in no list (not yet added, or removed).
pub(crate) const UNWATCHED: usize = usize::MAX;

/// One key an operation is watched under, and where it sits in that key's list.
pub(crate) struct Watch<K> {
    pub(crate) key: K,
    /// The shard holding `key`'s list (picked once, when the operation is created).
    pub(crate) shard: usize,
    /// The position in `key`'s list, or [`UNWATCHED`]. Read and written only under that shard's lock
    /// (the atomic is for the compiler: different watches of one operation live under different
    /// locks).
    pub(crate) index: AtomicUsize,
}

/// An operation's watches: the common single key inline, more in one allocation.
pub(crate) enum Watches<K> {
    One(Watch<K>),
    Many(Box<[Watch<K>]>),
}

impl<K> Watches<K> {
    pub(crate) fn from_iter(mut watches: impl Iterator<Item = Watch<K>>) -> Self {
        match (watches.next(), watches.next()) {
            (None, _) => Watches::Many(Box::new([])),
            (Some(one), None) => Watches::One(one),
            (Some(first), Some(second)) => {
                Watches::Many([first, second].into_iter().chain(watches).collect())
            }
        }
    }

    pub(crate) fn as_slice(&self) -> &[Watch<K>] {
        match self {
            Watches::One(watch) => std::slice::from_ref(watch),
            Watches::Many(watches) => watches,
        }
    }
}

/// The purgatory's wrapper around one user operation: its own lock, its phase and its watches.
pub(crate) struct Operation<K, T: ?Sized> {
    pub(crate) op: Arc<T>,
    done: AtomicBool,
    state: Mutex<State>,
    watches: Watches<K>,
}

impl<K, T: ?Sized> Operation<K, T> {
    pub(crate) fn watches(&self) -> &[Watch<K>] {
        self.watches.as_slice()
    }

    /// Whether the operation has left `Pending` (a hint read without the lock).
    pub(crate) fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }
}

impl<K, T> Operation<K, T>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    T: DelayedOperation + ?Sized,
{
    /// A pending operation to be watched under `watches` (each with its shard, not yet listed).
    pub(crate) fn new(op: Arc<T>, watches: Watches<K>) -> Self {
        Operation {
            op,
            done: AtomicBool::new(false),
            state: Mutex::new(State { phase: Phase::Pending, timeout: Timeout::Unarmed }),
            watches,
        }
    }

    /// Takes the operation's own lock.
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    /// With the lock held: whether the operation is pending and its condition holds now.
    pub(crate) fn try_complete(&self, state: &State) -> bool {
        state.phase == Phase::Pending && self.op.try_complete()
    }

    /// [`try_complete`](Self::try_complete), catching a panic of the operation's `try_complete`:
    /// `None` if it panicked (the payload is dropped; the operation stays pending).
    pub(crate) fn try_complete_caught(&self, state: &State) -> Option<bool> {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.try_complete(state))) {
            Ok(ready) => Some(ready),
            Err(payload) => {
                crate::unwind::drop_payload(payload);
                None
            }
        }
    }

    /// With the lock held: the one transition out of `Pending`. Returns the timeout, which the caller
    /// disarms after releasing the lock.
    pub(crate) fn decide(&self, state: &mut State, to: Phase) -> Timeout {
        debug_assert_eq!(state.phase, Phase::Pending, "an operation left Pending twice");
        debug_assert_ne!(to, Phase::Pending);
        state.phase = to;
        self.done.store(true, Ordering::Release);
        std::mem::replace(&mut state.timeout, Timeout::Unarmed)
    }
}

impl<K, T: ?Sized> fmt::Debug for Operation<K, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Operation")
            .field("done", &self.done.load(Ordering::Relaxed))
            .field("watches", &self.watches.as_slice().len())
            .finish_non_exhaustive()
    }
}
