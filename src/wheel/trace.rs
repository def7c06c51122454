//! The optional `tracing` feature: trace-level events from the thread advancing the clock (the
//! shard wheel's flush, `shard/wheel/trace.rs`, counts what it took out under the shard's lock and
//! hands the [`Event`] to [`emit`] after it).
//!
//! One `flush` event per flushed bucket (level, slot, its expiration tick, the cursor, how many
//! entries came out, how many of them were due, and how many were set aside for the next advance as
//! `late`: due, but scheduled after this advance began) and, for buckets above level 0 that moved
//! entries down to finer levels, one `cascade` event counting them. Events use the target
//! `delaywheel` and are emitted after the flush, with no lock held. Without the feature these
//! functions are empty and inlined away.

/// What one bucket visit took out: entries about to fire, re-added elsewhere, and set aside.
/// (Read only by the `tracing` feature's events.)
#[cfg_attr(not(feature = "tracing"), allow(dead_code))]
pub(crate) struct Flushed {
    pub(crate) due: usize,
    pub(crate) moved: usize,
    pub(crate) late: usize,
}

/// A flush's event, made under the lock the flush held and emitted after it ([`emit`]).
#[cfg_attr(not(feature = "tracing"), allow(dead_code))]
pub(crate) struct Event {
    /// The bucket's (level, slot).
    pub(crate) bucket: (usize, usize),
    pub(crate) expiration: u64,
    pub(crate) cursor: u64,
    pub(crate) out: Flushed,
}

/// Emits `event` ([`flushed`]), if there is one.
#[inline]
pub(crate) fn emit(event: Option<Event>) {
    if let Some(Event { bucket, expiration, cursor, out }) = event {
        flushed(bucket, expiration, cursor, out);
    }
}

/// The bucket at `(level, slot)` was flushed at `cursor`, giving out `out`.
#[cfg(feature = "tracing")]
pub(crate) fn flushed((level, slot): (usize, usize), expiration: u64, cursor: u64, out: Flushed) {
    let Flushed { due, moved, late } = out;
    let entries = due + moved + late;
    tracing::trace!(target: "delaywheel", level, slot, expiration, cursor, entries, due, late, "flush");
    if level > 0 && moved > 0 {
        tracing::trace!(target: "delaywheel", from_level = level, slot, moved, "cascade");
    }
}

/// Without the `tracing` feature: nothing.
#[cfg(not(feature = "tracing"))]
#[inline(always)]
pub(crate) fn flushed(_bucket: (usize, usize), _expiration: u64, _cursor: u64, _out: Flushed) {}
