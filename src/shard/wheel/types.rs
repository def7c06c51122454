//! What the wheel hands out and keeps: the key that names an entry, a refusal, the two shapes in
//! which an entry leaves a flush or a drain ([`Due`], held by the batch and claimed later;
//! [`Fired`], with its payload), and the entry a slot holds besides its life word and links.

use crate::deadline::Deadline;

/// Names an entry: its slot and the stamp of the occupant it was given to (the slot's
/// generation, `life.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub(crate) slot: u32,
    pub(crate) generation: u64,
}

/// Why an insert was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The slab holds as many entries as slot indices allow.
    Full,
    /// The core closed the shard (`core/shutdown.rs`).
    Closed,
    /// The stamp is 2⁵⁶ or more: the life word keeps 56 bits of it (`life.rs`), so its key would
    /// not match.
    Stamp,
}

/// An insert the wheel or the core refused: the payload, handed back, and why.
#[derive(Debug)]
pub struct Refused<P> {
    pub(crate) payload: P,
    pub(crate) reason: Refusal,
}

/// An entry a flush found due: unlinked and held by the batch (module docs, "Held"), its payload
/// still in its slot until [`Wheel::claim`](super::Wheel::claim) takes it. What orders it among a
/// batch, and its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Due {
    /// The deadline it was given (its tick earlier than the tick it fell due at when it was
    /// already passed when set).
    pub(crate) deadline: Deadline,
    /// The caller's stamp of it (its key's generation).
    pub(crate) stamp: u64,
    pub(crate) key: Key,
}

impl Due {
    /// The order of a merged batch: deadline, then stamp (`deadline::sort_batch`).
    #[inline]
    pub fn order(&self) -> (Deadline, u64) {
        (self.deadline, self.stamp)
    }
}

/// An entry that left the wheel with its payload (a drain, or a claimed [`Due`]): what orders it
/// among a batch, the key it had, and its payload.
#[derive(Debug)]
pub struct Fired<P> {
    /// The deadline it was given.
    pub(crate) deadline: Deadline,
    /// The caller's stamp of it (its key's generation).
    pub(crate) stamp: u64,
    pub(crate) key: Key,
    pub(crate) payload: P,
}

impl<P> Fired<P> {
    /// The order of a merged batch: deadline, then stamp (`deadline::sort_batch`).
    pub fn order(&self) -> (Deadline, u64) {
        (self.deadline, self.stamp)
    }
}

/// What a slot holds for the wheel besides its life word (stamp, list, status) and links: with a
/// payload of 24 bytes that has a niche (the vacant slot's `None`), 32 bytes, so that a slot is 48.
pub(super) struct Entry<P> {
    pub(super) when: Deadline,
    pub(super) payload: P,
}

impl<P> Entry<P> {
    /// It left the wheel with its payload.
    pub(super) fn fired(self, slot: u32, stamp: u64) -> Fired<P> {
        Fired { deadline: self.when, stamp, key: Key { slot, generation: stamp }, payload: self.payload }
    }
}
