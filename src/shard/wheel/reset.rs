//! A reset: the entry moved to a new deadline, same slot, key, payload and stamp.
//!
//! **In its bucket.** An entry's list follows from its life word's level and its tick (a cancel
//! finds it so: `lists.rs`, `Wheel::unlink`), and a filing from the wheel's time picks a bucket
//! and, in a split bucket, a stage (`crate::wheel::place`). When the new deadline's filing would
//! pick the bucket the entry is linked in, for the round that bucket is queued for, and the stage
//! it is in, the reset only rewrites the deadline: the unlink would find the same list from the
//! new tick, and the link would make no offer (the round is queued, the stage's visit planned).
//! A re-armed idle timeout moves a little later each time, so most re-arms of a timeout above
//! level 0 stay in their bucket (a level-1 bucket spans 512 ticks at the default size) and touch
//! no neighbour's slot. The entry keeps its place in the list, not the tail a relink would give
//! it: a bucket's batch is sorted by deadline and stamp when it fires, so its list order orders
//! nothing, but in the one list whose order the wheel keeps, the level-0 list of a tick sorted for
//! the takes beside a passed deadline (`sorted_run.rs`): an entry of its sorted run is unlinked
//! and relinked at the tail, as a move elsewhere is.
//!
//! **Elsewhere**, the entry is unlinked and filed as an insert files it, from the time: its new
//! bucket (offered if that sets the bucket's round) or the overdue list.

use super::super::life::ListCode;
use super::{Key, Offers, Wheel};
use crate::deadline::Deadline;
use crate::wheel::place::Placement;

impl<P> Wheel<P> {
    /// Moves the entry `key` names to `deadline` in place (module docs): `Some(offers)` if it
    /// moved (as an insert's), `None` if the key is stale or names a held entry, which is being
    /// fired (nothing changes).
    #[inline]
    pub(crate) fn reset(&mut self, key: Key, deadline: Deadline) -> Option<Offers> {
        self.reset_read(key, deadline, |_| ()).map(|(offers, ())| offers)
    }

    /// [`reset`](Wheel::reset), with what `read` reads of the payload of the entry it moved.
    #[inline]
    pub(crate) fn reset_read<R>(
        &mut self,
        key: Key,
        deadline: Deadline,
        read: impl FnOnce(&P) -> R,
    ) -> Option<(Offers, R)> {
        let list = self.slab.get(key.slot, key.generation)?.life.list();
        if list == ListCode::HELD {
            return None;
        }
        let entry = self.slab.entry(key.slot);
        let (old, read) = (entry.when.tick(), read(&entry.payload));
        // Not in place in a sorted run's list, whose order a new word would break: relinked.
        let stays = self.stays(list, old, deadline.tick()) && !self.run.orders(list, old);
        if !stays {
            // The unlink finds the entry's list by its old tick: before the word is rewritten.
            self.unlink(key.slot);
        }
        self.slab.entry_mut(key.slot).when = deadline;
        let offers = if stays { Offers::default() } else { self.file(key.slot, deadline.tick()) };
        Some((offers, read))
    }

    /// Whether an entry linked in `list` with tick `old` is where a filing of tick `new` from the
    /// time would link it (module docs, "In its bucket"): the same bucket, queued for the
    /// filing's round, and the same stage if the bucket is split.
    #[inline]
    pub(super) fn stays(&self, list: ListCode, old: u64, new: u64) -> bool {
        let Some(level) = list.as_level() else { return false };
        let Placement::Slot { level: placed, slot, stage } = self.table.place(self.time, new) else {
            return false;
        };
        if placed != level || slot != self.levels.slot_of(level, old) {
            return false;
        }
        let Some(bucket) = self.levels.get(level, slot) else { return false };
        if bucket.expiration != stage.round {
            return false;
        }
        // The placement's stage is `new`'s in the bucket's round (`split.rs`, `stage_of`).
        debug_assert!(bucket.split == 0 || stage.index == self.stage_of(level, stage.round, new).index);
        bucket.split == 0 || self.stage_of(level, stage.round, old).index == stage.index
    }
}

#[cfg(test)]
#[path = "reset_tests.rs"]
mod tests;
