//! The wheel's load, for `Timer::stats()` (`timer/stats.rs`): entries per level, the fullest
//! bucket, the levels and buckets created, and the entries in transit.
//!
//! **Counts kept.** Each list (a bucket's, the overdue list) counts its entries, written by the
//! link and the unlink (`lists.rs`), and the wheel counts the entries in each level's buckets, in
//! by [`file`](Wheel::file) as it links into a bucket (and by a flush that links an entry above
//! its round's limit back, `flush.rs`), out by the unlink, whose level the entry's life word names,
//! and by a take of a whole list or of a stage's head (`lists.rs`, `split.rs`): O(1) on every
//! path, no walk. Every count is written under the shard's lock
//! (the wheel is `&mut self`), as the links are, so no count races anything and needs no loom
//! model of its own; a reader takes the same lock ([`Core::stats`](super::super::core::Core)).
//!
//! **In transit.** Entries on the overdue list (deadlines passed, and a bucket's entries left behind
//! the time: due at the next advance) and entries held by a batch (claimed when they run) are in
//! no level and no bucket, as `TimerStats::pending_per_level` says of tasks in transit (being
//! fired): [`WheelStats`] counts them apart, so that the levels, the overdue list and the held
//! entries add up to [`len`](Wheel::len).
//!
//! **Cost of reading.** The per-level counts are copied; the fullest bucket is found by walking
//! the buckets of the levels that hold entries (O(buckets created there)); the levels and
//! buckets created by walking the levels' chunk lists (O(chunks)).

use super::Wheel;

/// One wheel's load (module docs), read under its shard's lock.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WheelStats {
    /// Entries in the buckets of each level, up to the highest level created (levels below it
    /// not created count zero).
    pub(crate) pending_per_level: Vec<usize>,
    /// The bucket holding the most entries as (level, slot, entries); on a tie the lowest level,
    /// then slot; `None` when every bucket is empty.
    pub(crate) fullest_bucket: Option<(usize, usize, usize)>,
    /// Levels with at least one bucket created.
    pub(crate) levels_in_use: usize,
    /// Buckets created, over every level.
    pub(crate) resident_buckets: usize,
    /// Entries on the overdue list: in transit, in no level.
    pub(crate) overdue: usize,
    /// Entries held by a batch until their claims: in transit, in no level.
    pub(crate) held: usize,
}

impl<P> Wheel<P> {
    /// The entries walked under the lock since the last call (`Wheel::count_walked`).
    #[cfg(test)]
    pub(crate) fn take_walked(&mut self) -> usize {
        std::mem::take(&mut self.walked)
    }

    /// The wheel's load now (module docs).
    pub(crate) fn stats(&self) -> WheelStats {
        let created = self.levels.created();
        let pending_per_level: Vec<usize> =
            self.per_level[..created].iter().map(|&count| count as usize).collect();
        let mut fullest: Option<(usize, usize, usize)> = None;
        for (level, _) in pending_per_level.iter().enumerate().filter(|(_, &count)| count > 0) {
            // In slot order, the first of the most kept: the lowest slot on a tie.
            for (slot, bucket) in self.levels.level(level) {
                let entries = bucket.list.len as usize;
                if entries > fullest.map_or(0, |(_, _, most)| most) {
                    fullest = Some((level, slot, entries));
                }
            }
        }
        let in_levels: usize = pending_per_level.iter().sum();
        let overdue = self.overdue.len as usize;
        debug_assert!(in_levels + overdue <= self.len(), "{in_levels} + {overdue} > {}", self.len());
        WheelStats {
            held: self.len() - in_levels - overdue,
            pending_per_level,
            fullest_bucket: fullest,
            levels_in_use: self.levels.in_use(),
            resident_buckets: self.levels.resident(),
            overdue,
        }
    }
}

#[cfg(test)]
mod tests;
