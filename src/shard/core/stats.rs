//! The core's load, for `Timer::stats()` (`timer/stats.rs`): each shard's wheel read under its
//! lock in turn (never two locks at once; the wheel's docs, `wheel/stats.rs`, say what each
//! counts and what reading it costs), and the queue's length.
//!
//! **Across shards.** Each shard has its own wheel, so a (level, slot) of one shard and of another
//! are two buckets (of rounds their own times set): tasks per level are summed, the fullest
//! bucket is the fullest of any shard (on a tie the lowest level, then slot), the buckets created
//! are summed, and the levels in use are the most any shard created. A timer used from one thread
//! schedules into one shard, so these are that shard's own values. The shards are read one after
//! the other, so under concurrent use the snapshot need not add up (as `TimerStats` says of its
//! fields), and the sum of the levels and the entries in transit may differ from
//! [`Core::len`].

use super::super::wheel::WheelStats;
use super::{Core, Extra};

/// The core's load now (module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoreStats {
    /// Entries in the buckets of each level, summed over the shards, up to the highest level any
    /// shard created (`TimerStats::pending_per_level`). Entries in transit are in no level.
    pub(crate) pending_per_level: Vec<usize>,
    /// The bucket holding the most entries in any shard as (level, slot, entries); on a tie the
    /// lowest level, then slot; `None` when every bucket is empty.
    pub(crate) fullest_bucket: Option<(usize, usize, usize)>,
    /// The most levels with buckets created in any shard.
    pub(crate) levels_in_use: usize,
    /// Buckets created, summed over the shards.
    pub(crate) resident_buckets: usize,
    /// Offers in the driver's queue (about the buckets holding entries; stale ones included).
    pub(crate) queued_buckets: usize,
    /// In transit: entries on the shards' overdue lists (deadlines passed, due at the next
    /// advance) and held by a batch until their claims (being fired).
    pub(crate) overdue: usize,
    pub(crate) held: usize,
}

impl CoreStats {
    /// Adds one shard's load (module docs, "Across shards").
    fn add(&mut self, shard: WheelStats) {
        if self.pending_per_level.len() < shard.pending_per_level.len() {
            self.pending_per_level.resize(shard.pending_per_level.len(), 0);
        }
        for (sum, count) in self.pending_per_level.iter_mut().zip(shard.pending_per_level) {
            *sum += count;
        }
        // The most entries, then the lowest level, then the lowest slot.
        let rank =
            |(level, slot, entries): (usize, usize, usize)| (entries, usize::MAX - level, usize::MAX - slot);
        if let Some(bucket) = shard.fullest_bucket {
            if self.fullest_bucket.map_or(true, |fullest| rank(bucket) > rank(fullest)) {
                self.fullest_bucket = Some(bucket);
            }
        }
        self.levels_in_use = self.levels_in_use.max(shard.levels_in_use);
        self.resident_buckets += shard.resident_buckets;
        self.overdue += shard.overdue;
        self.held += shard.held;
    }
}

impl<P: Send + 'static, X: Extra<P>> Core<P, X> {
    /// The core's load now (module docs): each shard's wheel read under its lock, one at a time;
    /// O(shards + the buckets created in the levels holding entries).
    pub fn stats(&self) -> CoreStats {
        let mut stats = CoreStats { queued_buckets: self.queue.len(), ..CoreStats::default() };
        for shard in self.shards.iter() {
            let load = shard.lock().state().wheel.stats();
            stats.add(load);
        }
        stats
    }

    /// The entries walked under the shards' locks since the last call, summed (the unit tests'
    /// load: `Wheel::take_walked`), read by the timer's tests on the core.
    #[cfg(test)]
    pub(crate) fn take_walked(&self) -> usize {
        self.shards.iter().map(|shard| shard.lock().state().wheel.take_walked()).sum()
    }
}

#[cfg(all(test, not(delaywheel_loom)))]
mod tests {
    use super::super::{Core, Merge};
    use super::CoreStats;
    use crate::deadline::Deadline;

    /// Shard 0: ticks 3, 3, 20 (level 1's slot 2); shard 1: 4, 4, and 0, passed.
    #[test]
    fn shards_are_summed_and_the_fullest_is_the_fullest_of_any() {
        let core: Core<u32> = Core::with_wheel_size(2, 8);
        assert_eq!(core.stats(), CoreStats::default());
        let mut stamp = 0;
        let mut schedule = |shard: usize, tick: u64| {
            stamp += 1;
            core.schedule_in(shard, Deadline::at_tick(tick), stamp, 0).map_err(drop).unwrap()
        };
        let h = [schedule(0, 3), schedule(0, 3), schedule(0, 20), schedule(1, 4), schedule(1, 4)];
        schedule(1, 0);
        let stats = core.stats();
        assert_eq!(stats.pending_per_level, vec![4, 1]);
        assert_eq!(stats.fullest_bucket, Some((0, 3, 2)), "a tie: the lowest slot of any shard");
        assert_eq!((stats.levels_in_use, stats.resident_buckets), (2, 8 + 8 + 8));
        assert_eq!((stats.overdue, stats.held), (1, 0));
        assert_eq!(stats.queued_buckets, 4, "(0, 3), (1, 2), (0, 4) and an overdue list");
        assert!(core.cancel(&h[0]).is_some() && core.cancel(&h[3]).is_some());
        assert_eq!(core.stats().fullest_bucket, Some((0, 3, 1)));
        // The advance at 3 holds shard 0's tick 3 and shard 1's overdue entry until their claims.
        let (mut out, mut merge) = (Vec::new(), Merge::default());
        core.advance(3, u64::MAX, &mut out, &mut merge);
        assert_eq!(out.len(), 2);
        let stats = core.stats();
        assert_eq!(
            (stats.pending_per_level, stats.fullest_bucket, stats.overdue, stats.held, stats.queued_buckets),
            (vec![1, 1], Some((0, 4, 1)), 0, 2, 2)
        );
        for due in &out {
            assert!(core.claim(due).is_some());
        }
        assert_eq!(core.stats().held, 0);
        let mut drained = Vec::new();
        core.drain_all(&mut drained, &mut merge);
        let stats = core.stats();
        assert_eq!((stats.pending_per_level, stats.fullest_bucket, stats.held), (vec![0, 0], None, 0));
    }
}
