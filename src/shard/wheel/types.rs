//! What the wheel hands out and keeps: the key that names an entry, a refusal, the two shapes in
//! which an entry leaves a flush or a drain ([`Due`], held by the batch and claimed later;
//! [`Fired`], with its payload), and the entry a slot holds.

use super::BucketCode;

/// Names an entry: its slot and the generation of the occupant it was given to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub(crate) slot: u32,
    pub(crate) generation: u64,
}

/// Why the wheel refused a deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The deadline is after [`MAX_TICK`](super::MAX_TICK).
    TooFar,
    /// The slab holds as many entries as slot indices allow.
    Full,
}

/// An insert the wheel refused: the payload, handed back, and why.
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
    /// The deadline tick it was given (earlier than the tick it fell due at when it was already
    /// passed when set).
    pub(crate) deadline: u64,
    /// The 256th of the tick its deadline falls in.
    pub(crate) sub: u8,
    /// The sequence number its insert gave it.
    pub(crate) seq: u64,
    pub(crate) key: Key,
}

impl Due {
    /// The order of a merged batch: deadline, its 256th, then insertion.
    #[inline]
    pub fn order(&self) -> (u64, u8, u64) {
        (self.deadline, self.sub, self.seq)
    }
}

/// An entry that left the wheel with its payload (a drain, or a claimed [`Due`]): what orders it
/// among a batch, the key it had, and its payload.
#[derive(Debug)]
pub struct Fired<P> {
    /// The deadline tick it was given.
    pub(crate) deadline: u64,
    /// The 256th of the tick its deadline falls in.
    pub(crate) sub: u8,
    /// The sequence number its insert gave it.
    pub(crate) seq: u64,
    pub(crate) key: Key,
    pub(crate) payload: P,
}

impl<P> Fired<P> {
    /// The order of a merged batch: deadline, its 256th, then insertion.
    pub fn order(&self) -> (u64, u8, u64) {
        (self.deadline, self.sub, self.seq)
    }
}

/// What a slot holds for the wheel.
pub(super) struct Entry<P> {
    /// `deadline << 8 | sub`.
    pub(super) when: u64,
    pub(super) seq: u64,
    /// The list that holds it, or [`BucketCode::HELD`]; its niche is the vacant slot's `None`.
    pub(super) bucket: BucketCode,
    pub(super) payload: P,
}

impl<P> Entry<P> {
    pub(super) fn deadline(&self) -> u64 {
        self.when >> 8
    }

    /// Whether a batch holds it (unlinked, due, not yet claimed).
    #[inline]
    pub(super) fn is_held(&self) -> bool {
        self.bucket == BucketCode::HELD
    }

    /// Its batch element, keyed by `slot` and `generation`.
    pub(super) fn due(&self, slot: u32, generation: u64) -> Due {
        Due { deadline: self.deadline(), sub: self.when as u8, seq: self.seq, key: Key { slot, generation } }
    }

    /// It left the wheel with its payload.
    pub(super) fn fired(self, slot: u32, generation: u64) -> Fired<P> {
        Fired {
            deadline: self.deadline(),
            sub: self.when as u8,
            seq: self.seq,
            key: Key { slot, generation },
            payload: self.payload,
        }
    }
}
