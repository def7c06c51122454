//! What the timer on the core reaches in place besides a take (`timer/`): a pending
//! entry's payload (a value's exact deadline), the picked entries of the wheel taken as cancels
//! (a delay queue's clear), a drain that leaves the held entries to their claims (a shutdown that
//! joins executor threads), the slots written (the driver's automatic shrink) and where an entry
//! is filed (`TimerHandle::position`).

use super::{Fired, Key, ListCode, Status, Wheel};

impl<P> Wheel<P> {
    /// The payload of the entry `key` names (a held one too), to read or rewrite in place; `None`
    /// if the key is stale.
    #[inline]
    pub(crate) fn payload_mut(&mut self, key: Key) -> Option<&mut P> {
        self.slab.get(key.slot, key.generation)?;
        Some(&mut self.slab.entry_mut(key.slot).payload)
    }

    /// The slab's slots written, vacant and occupied: what a shrink may give back beyond the
    /// entries pending.
    pub(crate) fn slots(&self) -> usize {
        self.slab.slots()
    }

    /// Takes out every pending entry whose payload `pick` picks, held ones too, each as
    /// [`remove`](Wheel::remove) takes one (status `Cancelled`), appended to `out` in slot order.
    /// O(slots written).
    pub(crate) fn remove_each(&mut self, mut pick: impl FnMut(&P) -> bool, out: &mut Vec<P>) {
        for slot in 0..self.slab.slots() as u32 {
            let occupant = self.slab.slot(slot);
            let Some(entry) = &occupant.entry else { continue };
            if pick(&entry.payload) {
                let key = Key { slot, generation: occupant.life.stamp() };
                out.extend(self.remove(key));
            }
        }
    }

    /// [`drain_all`](Wheel::drain_all) but for the entries held by a batch, which stay held for
    /// their claims: every other pending entry taken out as [`remove`](Wheel::remove) takes one,
    /// its status `Abandoned`, appended to `out` in slot order. O(slots written).
    pub(crate) fn drain_unheld(&mut self, out: &mut Vec<Fired<P>>) {
        for slot in 0..self.slab.slots() as u32 {
            let occupant = self.slab.slot(slot);
            let list = occupant.life.list();
            // Seeded fault `shard_core_close_takes_held` (docs/loom.md): the held ones go too.
            if occupant.entry.is_none() || (list == ListCode::HELD && !fault!("shard_core_close_takes_held"))
            {
                continue;
            }
            let stamp = occupant.life.stamp();
            // A held entry is on no list (only under the seeded fault).
            if list != ListCode::HELD {
                self.unlink(slot);
            }
            out.push(self.slab.vacate(slot, Status::Abandoned).fired(slot, stamp));
        }
    }

    /// Where the entry `key` names is filed: (level, slot, the tick its bucket is next flushed or
    /// visited at: its expiration, or a split bucket's next visit, `split.rs`), `None` if the key
    /// is stale or the entry is held by a batch. An entry on the overdue list reads as level 0's
    /// slot of its tick, expiring at the wheel's time (due at the next advance). A diagnostic
    /// (`TimerHandle::position`, whose `expiration_tick` is the driver's next visit).
    pub(crate) fn position(&self, key: Key) -> Option<(usize, usize, u64)> {
        let occupant = self.slab.get(key.slot, key.generation)?;
        let tick = occupant.entry.as_ref()?.when.tick();
        if occupant.life.list() == ListCode::OVERDUE {
            return Some((0, self.levels.slot_of(0, tick), self.time));
        }
        let level = occupant.life.list().as_level()?;
        let slot = self.levels.slot_of(level, tick);
        let bucket = self.levels.get(level, slot)?;
        let visit = match bucket.split {
            0 => bucket.expiration,
            record => self.splits[record as usize - 1].next_visit,
        };
        Some((level, slot, visit))
    }
}
