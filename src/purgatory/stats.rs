//! What a purgatory reports: its gauges and counters, one by one and as a [`PurgatoryStats`]
//! snapshot.

use std::hash::Hash;

use super::{DelayedOperation, Purgatory};
use crate::sync::Ordering;

/// A snapshot of a [`Purgatory`](super::Purgatory)'s gauges and counters
/// ([`Purgatory::stats`](super::Purgatory::stats)), in the manner of Kafka's purgatory gauges.
///
/// The gauges (`delayed`, `watched`, `keys`) are values now; the counters (`completed`,
/// `expired`, `panicked`) are monotonic totals since the purgatory was created. An operation
/// finishes once, as completed, expired or cancelled: `completed + expired` counts every
/// operation that finished other than by a cancel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct PurgatoryStats {
    /// Operations waiting now (what [`Purgatory::delayed`](super::Purgatory::delayed) returns,
    /// Kafka's `NumDelayedOperations`).
    pub delayed: usize,
    /// Watch entries of live operations over all keys, an operation counted once per key it is
    /// watched under ([`Purgatory::watched`](super::Purgatory::watched), Kafka's `PurgatorySize`).
    pub watched: usize,
    /// Keys with at least one live operation watched under them
    /// ([`Purgatory::watched_keys`](super::Purgatory::watched_keys)).
    pub keys: usize,
    /// Operations completed by a `try_complete` that returned `true`, in
    /// [`try_complete_else_watch`](super::Purgatory::try_complete_else_watch) or
    /// [`check_and_complete`](super::Purgatory::check_and_complete) (expiries are not counted here).
    pub completed: u64,
    /// Operations finished by their timeout ([`Purgatory::expired`](super::Purgatory::expired)).
    pub expired: u64,
    /// Calls of `try_complete` by `check_and_complete` that panicked and were caught
    /// ([`Purgatory::panicked`](super::Purgatory::panicked)).
    pub panicked: u64,
}

impl<K, T> Purgatory<K, T>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    T: DelayedOperation + ?Sized,
{
    /// Operations registered and not yet completed, expired or cancelled (Kafka's `numDelayed`):
    /// the timer's pending timeouts, plus operations registered with a timeout beyond its range.
    pub fn delayed(&self) -> usize {
        self.timer.len() + self.untimed.load(Ordering::Relaxed)
    }

    /// Watch entries of live operations, over all keys: an operation watched under three keys counts
    /// three times. Finished operations are not counted: they left their lists when they finished.
    pub fn watched(&self) -> usize {
        self.inner.watchers.watched()
    }

    /// Keys that have at least one live operation watched under them (empty lists are removed).
    pub fn watched_keys(&self) -> usize {
        self.inner.watchers.keys()
    }

    /// Operations finished by their timeout since the purgatory was created (a monotonic total, as
    /// Kafka's expiration meter counts; it is incremented just before `on_complete` runs).
    pub fn expired(&self) -> u64 {
        self.inner.expired.load(Ordering::Relaxed)
    }

    /// Calls of `try_complete` made by [`check_and_complete`](Self::check_and_complete) that
    /// panicked (caught; a monotonic total).
    pub fn panicked(&self) -> u64 {
        self.panicked.load(Ordering::Relaxed)
    }

    /// A snapshot of the purgatory's gauges and counters (Kafka's purgatory gauges): each field
    /// is what its accessor returns, read one after the other without stopping the purgatory, so
    /// under concurrent use they need not add up exactly. Cheap: a few atomic loads and a pass
    /// over the watcher shards' sizes, nothing added to registering, checking or expiring.
    pub fn stats(&self) -> PurgatoryStats {
        PurgatoryStats {
            delayed: self.delayed(),
            watched: self.watched(),
            keys: self.watched_keys(),
            completed: self.completed.load(Ordering::Relaxed),
            expired: self.expired(),
            panicked: self.panicked(),
        }
    }
}
