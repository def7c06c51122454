//! One shard's timer state: a [slab](super::slab) of entries and a hierarchical wheel of list
//! heads over it, sequential (`&mut self`: the shard's lock guards it, so no atomics).
//!
//! **What it holds.** Each entry is a slot of the slab: its deadline in ticks and the 256th of that
//! tick it falls in (`sub`), the sequence number its inserter gave it, the bucket it
//! is in, its links, and a payload `P` (a task, a value: the wheel only moves it). The wheel has
//! [`LEVELS`] levels of 64 buckets; a bucket of level `k` spans 64ᵏ ticks. Each bucket is a doubly
//! linked list threaded through the slots (head and tail here, `prev` and `next` in the slots),
//! with a 64-bit occupancy word per level, and the wheel keeps its time: the last tick it advanced
//! to, by which every entry due has left it.
//!
//! **Placement** (tokio's): an entry is filed at its tick, or at the tick after the wheel's time
//! if its deadline is not after it (never early, never lost; it keeps the deadline it was given,
//! which orders it among what fires with it). The level is that of the highest bit in which that
//! tick and the wheel's time differ (six bits a level), the bucket that tick's six bits of the
//! level. So the entries of one level share the time's bits above the level, each bucket in use
//! begins after the time, and the lowest bucket in use of the lowest level in use is the next one
//! due. When the time reaches a bucket's first tick, its entries due then leave the wheel and the
//! rest go down (cascade) to the level their tick and the new time give. Entries filed for the same
//! tick are thus always in one bucket, in the order they were linked to it.
//!
//! **Range.** Deadlines go up to [`MAX_TICK`], the crate's last deadline tick
//! ([`MAX_DEADLINE_TICK`], 2⁵⁵ − 1); 10 levels hold every tick below 2⁶⁰, so no top level wraps.
//! A later deadline is refused ([`Refusal::TooFar`], the payload handed back), never clamped. The
//! wheel's time stops at the tick after [`MAX_TICK`], where only deadlines already passed are
//! filed (at that tick itself, due at the next advance).
//!
//! **Order.** [`Wheel::advance`] hands out what is due bucket after bucket in time order, each
//! bucket's entries in the order they were linked to it: a batch whose ticks rise, and within a
//! tick FIFO by insertion as long as nothing was reset. Each [`Fired`] carries (deadline, `sub`,
//! sequence), by which the caller sorts a batch, merged across shards, into deadline order to a
//! 256th of a tick with equal deadlines in the order of their sequence numbers. The caller numbers
//! its inserts (one number shared by every shard gives FIFO across threads, as `entry/stamps.rs`
//! does), so a wheel keeps no count of its own. A reset keeps the entry's sequence
//! number, as `Timer::reset` keeps a task's stamp (docs/design.md, "Ties: the stamp"): among
//! equal deadlines a re-armed entry orders by when it was first inserted; in its new bucket it
//! is linked at the tail.
//!
//! **Invariants**, whenever the shard's lock is free: every occupied slot is on exactly one
//! bucket's list, the one its `bucket` names, and that bucket's occupancy bit is set exactly when
//! its list is non-empty; every vacant slot is on the slab's free list; a slot's generation moves on
//! when it is vacated, so a stale key finds nothing after the slot's reuse; `len` is exact; every
//! bucket in use begins after the wheel's time (at it, only at the time's end above).
//!
//! **Cost.** Insert (amortised, as the slab grows), remove and reset are O(1); an advance is O(buckets reached + entries moved or
//! fired), each entry moving down at most [`LEVELS`] − 1 times; [`Wheel::next_tick`] reads the
//! occupancy words. A slot is 56 bytes for a 16-byte payload (`P = [usize; 2]` on 64-bit targets:
//! generation 8, links 8, deadline and `sub` 8, sequence 8, bucket 2, payload 16, padding 6; the
//! bucket's niche marks a vacant slot), the lists 5 KiB. No method drops a payload: each leaves by
//! value (or with the wheel).

use std::fmt;
use std::num::NonZeroU16;

use super::slab::{Slab, NIL};
use crate::deadline::MAX_DEADLINE_TICK;

/// Bits of a tick each level resolves.
const BITS: usize = 6;
/// Buckets per level.
const BUCKETS: usize = 1 << BITS;
/// Levels: enough for every tick below 2⁶⁰, past the time's end ([`TIME_END`]).
pub(super) const LEVELS: usize = 10;

/// The last deadline tick the wheel takes: the crate's ([`MAX_DEADLINE_TICK`]).
pub(crate) const MAX_TICK: u64 = MAX_DEADLINE_TICK;

/// Where the wheel's time stops: the tick after the last deadline, by which every entry is due.
const TIME_END: u64 = MAX_TICK + 1;

// Every tick an entry is filed at (up to TIME_END) has a level, and the top level never wraps.
const _: () = assert!(TIME_END < 1 << (BITS * LEVELS));
// A bucket's code fits 15 bits (below the mark bit, [`code`]).
const _: () = assert!(LEVELS <= 16 && BUCKETS <= 256);

/// Names an entry: its slot and the generation of the occupant it was given to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub(crate) slot: u32,
    pub(crate) generation: u64,
}

/// Why the wheel refused a deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The deadline is after [`MAX_TICK`].
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

/// An entry that left the wheel, due or drained: what orders it among a batch, the key it had,
/// and its payload.
#[derive(Debug)]
pub struct Fired<P> {
    /// The deadline tick it was given (earlier than the tick it fired at when it was already
    /// passed when set).
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
struct Entry<P> {
    /// `deadline << 8 | sub`.
    when: u64,
    seq: u64,
    /// The bucket whose list holds it ([`code`]); its niche is the vacant slot's `None`.
    bucket: NonZeroU16,
    payload: P,
}

impl<P> Entry<P> {
    fn deadline(&self) -> u64 {
        self.when >> 8
    }
}

/// A bucket's list: its first and last entry, both [`NIL`] when empty.
#[derive(Clone, Copy)]
struct List {
    head: u32,
    tail: u32,
}

const EMPTY: List = List { head: NIL, tail: NIL };

/// The level of a tick `at` filed when the wheel's time is `time` (`at >= time`): the level of the
/// highest bit in which they differ, level 0 when they differ in the lowest six bits at most.
#[inline]
fn level_for(time: u64, at: u64) -> usize {
    let masked = (time ^ at) | (BUCKETS as u64 - 1);
    (63 - masked.leading_zeros() as usize) / BITS
}

/// The bucket of a tick `at` in `level`: its six bits of that level.
#[inline]
fn bucket_for(level: usize, at: u64) -> usize {
    (at >> (BITS * level)) as usize & (BUCKETS - 1)
}

/// A bucket's code in a slot: level and bucket under a mark bit, never zero.
#[inline]
fn code(level: usize, bucket: usize) -> NonZeroU16 {
    NonZeroU16::new(0x8000 | ((level << 8) | bucket) as u16).expect("the mark bit is set")
}

/// The level and bucket a [`code`] names.
#[inline]
fn decode(code: NonZeroU16) -> (usize, usize) {
    let code = code.get() as usize;
    ((code >> 8) & 0x7f, code & 0xff)
}

/// One shard's slab and wheel (module docs).
pub struct Wheel<P> {
    slab: Slab<Entry<P>>,
    lists: [[List; BUCKETS]; LEVELS],
    /// Per level, bit `b` set iff bucket `b`'s list is non-empty.
    occupied: [u64; LEVELS],
    /// The last tick advanced to.
    time: u64,
}

impl<P> Default for Wheel<P> {
    fn default() -> Self {
        Wheel::new()
    }
}

impl<P> fmt::Debug for Wheel<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wheel")
            .field("len", &self.len())
            .field("time", &self.time)
            .field("next_tick", &self.next_tick())
            .finish_non_exhaustive()
    }
}

impl<P> Wheel<P> {
    /// An empty wheel at time 0, no slots written.
    pub(crate) const fn new() -> Self {
        Wheel { slab: Slab::new(), lists: [[EMPTY; BUCKETS]; LEVELS], occupied: [0; LEVELS], time: 0 }
    }

    /// Entries pending.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.slab.len()
    }

    /// Whether no entry is pending.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.slab.is_empty()
    }

    /// The wheel's time: the last tick advanced to (every entry due by it has left the wheel).
    pub(crate) fn time(&self) -> u64 {
        self.time
    }

    /// Files `payload` due at tick `deadline`, in its 256th `sub`, with the caller's sequence
    /// number `seq` (which orders it among equal deadlines, [`Fired::order`]): at the tick after
    /// the wheel's time if `deadline` is not after it. Its key, which names it until it leaves the
    /// wheel.
    ///
    /// # Errors
    ///
    /// The payload back, with [`Refusal::TooFar`] if `deadline` is after [`MAX_TICK`], or
    /// [`Refusal::Full`] if the slab has no slot index left; the wheel is unchanged.
    #[inline]
    pub(crate) fn insert(&mut self, deadline: u64, sub: u8, seq: u64, payload: P) -> Result<Key, Refused<P>> {
        if deadline > MAX_TICK {
            return Err(Refused { payload, reason: Refusal::TooFar });
        }
        let entry = Entry { when: (deadline << 8) | u64::from(sub), seq, bucket: code(0, 0), payload };
        let (slot, generation) = match self.slab.occupy(entry) {
            Ok(occupied) => occupied,
            Err(entry) => return Err(Refused { payload: entry.payload, reason: Refusal::Full }),
        };
        self.link(slot, self.filed_at(deadline));
        Ok(Key { slot, generation })
    }

    /// Takes the entry `key` names out: its payload, or `None` if it has left the wheel (fired,
    /// removed, drained: the key is stale, also after its slot's reuse).
    #[inline]
    pub(crate) fn remove(&mut self, key: Key) -> Option<P> {
        self.slab.get(key.slot, key.generation)?;
        self.unlink(key.slot);
        Some(self.slab.vacate(key.slot).1.payload)
    }

    /// Moves the entry `key` names to `deadline` and `sub` in place: same slot, key, payload and
    /// sequence number, linked at the tail of its new bucket (filed as [`insert`](Wheel::insert)
    /// files). `Ok(true)` if it moved, `Ok(false)` if the key is stale (nothing changes).
    ///
    /// # Errors
    ///
    /// [`Refusal::TooFar`] if the key names a pending entry and `deadline` is after
    /// [`MAX_TICK`]; the entry stays as it was.
    #[inline]
    pub(crate) fn reset(&mut self, key: Key, deadline: u64, sub: u8) -> Result<bool, Refusal> {
        if self.slab.get(key.slot, key.generation).is_none() {
            return Ok(false);
        }
        if deadline > MAX_TICK {
            return Err(Refusal::TooFar);
        }
        self.unlink(key.slot);
        self.slab.entry_mut(key.slot).when = (deadline << 8) | u64::from(sub);
        self.link(key.slot, self.filed_at(deadline));
        Ok(true)
    }

    /// The deadline and `sub` of the entry `key` names, `None` if the key is stale.
    pub(crate) fn deadline(&self, key: Key) -> Option<(u64, u8)> {
        let entry = self.slab.get(key.slot, key.generation)?;
        Some((entry.deadline(), entry.when as u8))
    }

    /// Advances the wheel's time to `now` (to the time's end at most; an earlier `now` than the
    /// time changes nothing): every entry due by then leaves the wheel, appended to `out`, bucket
    /// after bucket in time order, each bucket's in the order they were linked (module docs,
    /// "Order"); the rest of each bucket reached moves down. O(buckets reached + entries moved or
    /// fired). Should `out` fail to grow, the wheel stays whole: each entry is unlinked and its
    /// slot freed before it is pushed.
    pub(crate) fn advance(&mut self, now: u64, out: &mut Vec<Fired<P>>) {
        let now = now.min(TIME_END);
        while let Some((level, bucket, tick)) = self.next_due() {
            if tick > now {
                break;
            }
            // Every bucket before this one is done: the time is its first tick, the base of the
            // levels the rest of it moves down to.
            self.time = tick;
            loop {
                let index = self.lists[level][bucket].head;
                if index == NIL {
                    break;
                }
                self.unlink(index);
                let deadline = self.slab.entry(index).deadline();
                if deadline <= tick {
                    let (generation, entry) = self.slab.vacate(index);
                    out.push(Fired {
                        deadline,
                        sub: entry.when as u8,
                        seq: entry.seq,
                        key: Key { slot: index, generation },
                        payload: entry.payload,
                    });
                } else {
                    self.link(index, deadline);
                }
            }
        }
        self.time = self.time.max(now);
    }

    /// The earliest tick at which [`advance`](Wheel::advance) has work, `None` when the wheel is
    /// empty: the first tick of the earliest bucket in use. Exact (the earliest deadline's tick, or
    /// the tick after the time for a deadline passed when set) when that bucket is of level 0;
    /// otherwise a lower bound, where the bucket's entries move down (a level-`k` bucket spans
    /// 64ᵏ ticks, and a deadline tick in it is no earlier than its first). Never after the
    /// earliest entry is due.
    pub(crate) fn next_tick(&self) -> Option<u64> {
        self.next_due().map(|(_, _, tick)| tick)
    }

    /// Hands every pending entry out, appended to `out` in slot order (the caller sorts by
    /// [`Fired::order`] if it needs deadline order): the wheel is left empty, every key stale,
    /// its slots vacant and written (a [`shrink`](Wheel::shrink) gives them back).
    pub(crate) fn drain_all(&mut self, out: &mut Vec<Fired<P>>) {
        // Room first: the slab's walk must not panic halfway.
        out.reserve(self.len());
        self.slab.take_all(|slot, generation, entry| {
            out.push(Fired {
                deadline: entry.deadline(),
                sub: entry.when as u8,
                seq: entry.seq,
                key: Key { slot, generation },
                payload: entry.payload,
            });
        });
        self.lists = [[EMPTY; BUCKETS]; LEVELS];
        self.occupied = [0; LEVELS];
    }

    /// Writes vacant slots ahead until `slots` entries fit without the slab growing (their pages
    /// touched now rather than on the schedule path).
    pub(crate) fn reserve(&mut self, slots: usize) {
        self.slab.reserve(slots);
    }

    /// Gives back the slab's vacant slots after its last occupied one (all of them when the wheel
    /// is empty) and its spare capacity: slots of capacity given back. A vacant slot below an
    /// occupied one stays (entries never move: keys name their slots). O(slots written). The
    /// lists (5 KiB) are not the slab's and stay.
    pub(crate) fn shrink(&mut self) -> usize {
        self.slab.shrink()
    }

    /// The tick an entry due at `deadline` is filed at: its own, or the tick after the time if it
    /// is not later (at the time's end, the time itself).
    #[inline]
    fn filed_at(&self, deadline: u64) -> u64 {
        deadline.max(self.time + 1).min(TIME_END)
    }

    /// The earliest bucket in use: level, bucket, first tick.
    #[inline]
    fn next_due(&self) -> Option<(usize, usize, u64)> {
        let level = self.occupied.iter().position(|&bits| bits != 0)?;
        let bucket = self.occupied[level].trailing_zeros() as usize;
        let shift = BITS * level;
        // The buckets in use of a level share the time's bits above it: no level wraps.
        let turn = self.time & !((1u64 << (shift + BITS)) - 1);
        let tick = turn | ((bucket as u64) << shift);
        debug_assert!(
            tick >= self.time,
            "bucket {bucket} of level {level} (tick {tick}) is behind the time {}",
            self.time
        );
        Some((level, bucket, tick))
    }

    /// Links the occupied slot `index` at the tail of the bucket of tick `at` (`at >= time`).
    #[inline]
    fn link(&mut self, index: u32, at: u64) {
        let level = level_for(self.time, at);
        let bucket = bucket_for(level, at);
        let list = &mut self.lists[level][bucket];
        let tail = list.tail;
        if tail == NIL {
            list.head = index;
        } else {
            self.slab.slot_mut(tail).next = index;
        }
        list.tail = index;
        self.occupied[level] |= 1 << bucket;
        let slot = self.slab.slot_mut(index);
        (slot.prev, slot.next) = (tail, NIL);
        slot.entry.as_mut().expect("a linked slot is occupied").bucket = code(level, bucket);
    }

    /// Unlinks the occupied slot `index` from its bucket's list.
    #[inline]
    fn unlink(&mut self, index: u32) {
        let slot = self.slab.slot(index);
        let (prev, next) = (slot.prev, slot.next);
        let (level, bucket) = decode(slot.entry.as_ref().expect("a linked slot is occupied").bucket);
        let list = &mut self.lists[level][bucket];
        if next == NIL {
            list.tail = prev;
        } else {
            self.slab.slot_mut(next).prev = prev;
        }
        if prev == NIL {
            list.head = next;
        } else {
            self.slab.slot_mut(prev).next = next;
        }
        if list.head == NIL {
            self.occupied[level] &= !(1 << bucket);
        }
    }
}

#[cfg(test)]
mod model;
#[cfg(test)]
mod support;
#[cfg(test)]
mod tests;
