//! `PurgatoryStats`: a snapshot of a purgatory's gauges and counters.

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
