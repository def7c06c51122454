//! The optional `tracing` feature: trace-level events from the thread advancing the clock.
//!
//! One `flush` event per flushed bucket (level, slot, its expiration tick, the cursor, how many
//! entries it held and how many of them were due) and, for buckets above level 0, one `cascade`
//! event counting the entries moved down to finer levels. Events use the target `delaywheel` and
//! are emitted after the flush, with no lock held. Without the feature these functions are empty
//! and inlined away.

use crate::entry::location::BucketKey;

/// A bucket was flushed at `cursor`: `entries` entries came out, `due` of them are about to fire.
#[cfg(feature = "tracing")]
pub(crate) fn flushed(bucket: BucketKey, expiration: u64, cursor: u64, entries: usize, due: usize) {
    let (level, slot) = (bucket.level(), bucket.slot());
    tracing::trace!(target: "delaywheel", level, slot, expiration, cursor, entries, due, "flush");
    if level > 0 && entries > due {
        tracing::trace!(
            target: "delaywheel",
            from_level = level,
            slot,
            moved = entries - due,
            "cascade"
        );
    }
}

/// Without the `tracing` feature: nothing.
#[cfg(not(feature = "tracing"))]
#[inline(always)]
pub(crate) fn flushed(_bucket: BucketKey, _expiration: u64, _cursor: u64, _entries: usize, _due: usize) {}
