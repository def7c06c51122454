//! The pending values of a [`DelayQueue`](super::DelayQueue): a slab of slots in shards, each shard
//! behind its own lock.
//!
//! A slot holds one pending value with its deadline and the [`TimerHandle`] of the timer task that
//! expires it, and a generation that changes every time the slot is vacated. A [`Key`] names a slot
//! by shard, index and generation, so a key whose value was removed or expired names nothing once
//! its slot is reused: every lookup compares the generation first.
//!
//! A value leaves its slot exactly once, by [`Slab::take`], under the shard lock; whoever takes it
//! owns it (a `remove`, or the timer task that expires it). Everything else (`deadline`, a re-arm)
//! reads or changes the slot in place under the same lock.
//!
//! Inserting threads pick their shard by a small per-thread number, so producers on different
//! threads rarely share a lock; expiries and removals go to the shard their key names.

use std::fmt;
use std::time::Instant;

use crate::sync::{thread_index, Mutex};
use crate::ScheduleError;
use crate::TimerHandle;

/// Shards: a power of two. One under loom, so that the models explore one lock.
#[cfg(not(delaywheel_loom))]
const SHARD_BITS: u32 = 4;
#[cfg(delaywheel_loom)]
const SHARD_BITS: u32 = 0;
const SHARDS: usize = 1 << SHARD_BITS;
/// Slots per shard: what a key's index has room for beside the shard number, less the last index,
/// which [`Key::NOTHING`] names.
const SLOTS_PER_SHARD: usize = (1 << (32 - SHARD_BITS)) - 1;
/// The end of a shard's free list.
const NO_SLOT: u32 = u32::MAX;

/// Names one value inserted into a [`DelayQueue`](super::DelayQueue): returned by its inserts,
/// taken by [`remove`](super::DelayQueue::remove), [`reset`](super::DelayQueue::reset) and
/// [`deadline`](super::DelayQueue::deadline), and carried by the [`Expired`](super::Expired) value.
///
/// A key stays harmless once its value has been removed or has expired: the slot it names may hold
/// a later value, but the key's generation no longer matches, so `remove`, `reset` and `deadline`
/// see nothing (`None`, `false`, `None`). A key names a value of the queue that returned it; used on
/// another queue it names nothing or an arbitrary value of that queue.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    /// The slot's index in its shard, shifted left by `SHARD_BITS`, or-ed with the shard.
    slot: u32,
    generation: u32,
}

impl Key {
    /// The key of a refused insert: its index is beyond every shard's last slot.
    pub(super) const NOTHING: Key = Key { slot: u32::MAX, generation: 0 };

    fn shard(self) -> usize {
        self.slot as usize & (SHARDS - 1)
    }

    fn index(self) -> usize {
        (self.slot >> SHARD_BITS) as usize
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key")
            .field("shard", &self.shard())
            .field("index", &self.index())
            .field("generation", &self.generation)
            .finish()
    }
}

/// A pending value, its deadline and the timer task that expires it.
pub(super) struct Pending<T> {
    pub(super) value: T,
    pub(super) deadline: Instant,
    pub(super) handle: TimerHandle,
}

struct Slot<T> {
    generation: u32,
    /// The next vacant slot of the shard's free list (when `pending` is `None`).
    next_free: u32,
    pending: Option<Pending<T>>,
}

struct Shard<T> {
    slots: Vec<Slot<T>>,
    /// The most recently vacated slot (reused first: its memory is warm), or `NO_SLOT`.
    free: u32,
}

impl<T> Shard<T> {
    fn slot(&mut self, key: Key) -> Option<&mut Pending<T>> {
        let slot = self.slots.get_mut(key.index())?;
        if slot.generation != key.generation {
            return None;
        }
        slot.pending.as_mut()
    }
}

/// Aligned to two cache lines so that neighbouring shards' locks never share one (adjacent-line
/// prefetching pulls lines in pairs).
#[repr(align(128))]
struct Padded<T>(Mutex<Shard<T>>);

/// The sharded slab. See the module docs.
pub(super) struct Slab<T> {
    shards: Box<[Padded<T>]>,
}

impl<T> Slab<T> {
    pub(super) fn new() -> Self {
        let shards = (0..SHARDS).map(|_| Padded(Mutex::new(Shard { slots: Vec::new(), free: NO_SLOT })));
        Slab { shards: shards.collect() }
    }

    /// Puts `value` into a vacant slot of the calling thread's shard, with the handle `arm` returns
    /// for the slot's key; `arm` runs under the shard's lock, so the slot is filled before anything
    /// the handle's task does can look at it. If `arm` fails, nothing is stored and the value comes
    /// back with the error.
    ///
    /// # Errors
    ///
    /// What `arm` returned, or [`ScheduleError::TooManyPending`] if the shard has no index left.
    pub(super) fn insert(
        &self,
        value: T,
        deadline: Instant,
        arm: impl FnOnce(Key) -> Result<TimerHandle, ScheduleError>,
    ) -> Result<Key, (T, ScheduleError)> {
        let shard_number = thread_index() & (SHARDS - 1);
        let mut guard = self.shards[shard_number].0.lock();
        let shard = &mut *guard;
        let index = match shard.free {
            NO_SLOT if shard.slots.len() == SLOTS_PER_SHARD => {
                return Err((value, ScheduleError::TooManyPending { max: SLOTS_PER_SHARD * SHARDS }));
            }
            NO_SLOT => shard.slots.len(),
            free => free as usize,
        };
        let generation = shard.slots.get(index).map_or(0, |slot| slot.generation);
        let key = Key { slot: ((index as u32) << SHARD_BITS) | shard_number as u32, generation };
        let handle = match arm(key) {
            Ok(handle) => handle,
            Err(error) => return Err((value, error)),
        };
        let pending = Some(Pending { value, deadline, handle });
        if index == shard.slots.len() {
            shard.slots.push(Slot { generation, next_free: NO_SLOT, pending });
        } else {
            let slot = &mut shard.slots[index];
            shard.free = slot.next_free;
            slot.pending = pending;
        }
        Ok(key)
    }

    /// Takes the value `key` names out of its slot, if it is still there; the slot becomes vacant
    /// and its generation moves on, so `key` names nothing any more.
    pub(super) fn take(&self, key: Key) -> Option<Pending<T>> {
        let mut guard = self.shards.get(key.shard())?.0.lock();
        let shard = &mut *guard;
        let free = shard.free;
        let slot = shard.slots.get_mut(key.index())?;
        if slot.generation != key.generation && !fault!("queue_take_ignores_generation") {
            return None;
        }
        let pending = slot.pending.take()?;
        slot.generation = slot.generation.wrapping_add(1);
        slot.next_free = free;
        shard.free = key.slot >> SHARD_BITS;
        Some(pending)
    }

    /// Runs `f` on the value `key` names, under its shard's lock, if it is still pending.
    pub(super) fn with<R>(&self, key: Key, f: impl FnOnce(&mut Pending<T>) -> R) -> Option<R> {
        let mut shard = self.shards.get(key.shard())?.0.lock();
        shard.slot(key).map(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refuse(_: Key) -> Result<TimerHandle, ScheduleError> {
        Err(ScheduleError::ShutDown)
    }

    #[test]
    fn refused_insert_gives_the_value_back_and_stores_nothing() {
        let slab = Slab::new();
        let (value, error) = slab.insert(7u8, Instant::now(), refuse).unwrap_err();
        assert_eq!((value, error), (7, ScheduleError::ShutDown));
        let key = slab.insert(8u8, Instant::now(), |_| Ok(TimerHandle::refused())).unwrap();
        // The refused insert left no slot behind: the next one got the first index.
        assert_eq!((key.index(), key.generation), (0, 0));
    }

    #[test]
    fn a_key_names_nothing_after_its_slot_is_reused() {
        let slab = Slab::new();
        let first = slab.insert(1u8, Instant::now(), |_| Ok(TimerHandle::refused())).unwrap();
        assert_eq!(slab.take(first).map(|p| p.value), Some(1));
        assert!(slab.take(first).is_none(), "taken once");
        let second = slab.insert(2u8, Instant::now(), |_| Ok(TimerHandle::refused())).unwrap();
        assert_eq!((second.slot, second.generation), (first.slot, first.generation + 1));
        assert!(slab.take(first).is_none() && slab.with(first, |_| ()).is_none());
        assert_eq!(slab.with(second, |p| p.value), Some(2));
    }

    #[test]
    fn keys_out_of_range_name_nothing() {
        let slab: Slab<u8> = Slab::new();
        let key = Key { slot: u32::MAX, generation: 0 };
        assert!(slab.take(key).is_none() && slab.with(key, |_| ()).is_none());
    }

    #[test]
    fn vacated_slots_are_reused_last_in_first_out() {
        let slab = Slab::new();
        let keys: Vec<Key> = (0..3u8)
            .map(|v| slab.insert(v, Instant::now(), |_| Ok(TimerHandle::refused())).unwrap())
            .collect();
        slab.take(keys[0]);
        slab.take(keys[2]);
        let a = slab.insert(9, Instant::now(), |_| Ok(TimerHandle::refused())).unwrap();
        let b = slab.insert(9, Instant::now(), |_| Ok(TimerHandle::refused())).unwrap();
        let c = slab.insert(9, Instant::now(), |_| Ok(TimerHandle::refused())).unwrap();
        assert_eq!([a.index(), b.index(), c.index()], [2, 0, 3]);
    }
}
