//! A stand-in shard state for the pool's tests and loom models (`loom_tests/shard.rs`): slots of
//! (generation, payload), reused from a free list with their generation one on, the shape of the
//! slab the shard's real state keeps, without its wheel.

use std::fmt;

use super::pool::ShardState;

/// Slots of (generation, payload); a fresh one hands out slot 0 of generation 0 first, as every
/// fresh one does: only the epoch tells the entries of two owners of one header apart.
pub struct Slots<P> {
    slots: Vec<(u64, Option<P>)>,
    free: Vec<u32>,
}

impl<P> Default for Slots<P> {
    fn default() -> Slots<P> {
        Slots { slots: Vec::new(), free: Vec::new() }
    }
}

impl<P> Slots<P> {
    /// Stores `payload` in a free slot (the last one freed) or a new one: its (slot, generation).
    pub fn insert(&mut self, payload: P) -> (u32, u64) {
        match self.free.pop() {
            Some(slot) => {
                let entry = &mut self.slots[slot as usize];
                entry.1 = Some(payload);
                (slot, entry.0)
            }
            None => {
                let slot = u32::try_from(self.slots.len()).expect("fewer than 2^32 slots");
                self.slots.push((0, Some(payload)));
                (slot, 0)
            }
        }
    }

    /// How many payloads are pending.
    pub fn pending(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Takes every pending payload out, in slot order (as a shutdown hands them back).
    pub fn drain(&mut self) -> Vec<P> {
        let taken: Vec<P> = self.slots.iter_mut().filter_map(|(_, payload)| payload.take()).collect();
        self.slots.clear();
        self.free.clear();
        taken
    }
}

impl<P: Send + 'static> ShardState for Slots<P> {
    type Payload = P;

    fn take(&mut self, slot: u32, generation: u64) -> Option<P> {
        let entry = self.slots.get_mut(slot as usize)?;
        if entry.0 != generation {
            return None;
        }
        let payload = entry.1.take()?;
        entry.0 += 1;
        self.free.push(slot);
        Some(payload)
    }
}

impl<P> fmt::Debug for Slots<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Slots").field("pending", &self.pending()).finish_non_exhaustive()
    }
}
