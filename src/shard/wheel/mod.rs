//! One shard's timer state: a [slab](super::slab) of entries and Kafka's hierarchical timing wheel
//! of bucket lists over it, sequential (`&mut self`: the shard's lock guards it, so no atomics).
//!
//! **The geometry is the timer's contract** (docs/design.md, "The shape"): levels of `wheel_size`
//! buckets (any size from 2 to 2²⁴), level `k`'s buckets `wheel_size`ᵏ ticks wide, the levels above
//! the first created as deadlines need them (up to `crate::wheel::place::max_levels`, which covers
//! every tick); each bucket a list of entries and an **expiration**, the start of its current
//! round; and one queue of buckets ordered by expiration, outside the wheel, that the driver polls.
//! The wheel does not own that queue: it tells its caller when a bucket must be offered to it, and
//! the caller hands back each bucket the queue pops ([`Wheel::flush`]). So the driver sleeps until
//! the earliest bucket is due, never ticking through empty ones, and an idle wheel costs nothing.
//!
//! **Placement** is the crate's (`crate::wheel::place`, its precomputed `LevelTable`; the stages it
//! also computes are the other wheel's and go unused here): relative to the wheel's **time** (the
//! cursor, the last expiration flushed), a deadline goes to the finest level whose window holds it,
//! in the slot of its round there; the round's start is the bucket's expiration, never after the
//! deadline. Kafka's `setExpiration`: an insert, a reset and a cascade's re-add each report
//! ([`Offer`]) whether they set the bucket's expiration for a new round, and then, and only then,
//! the caller offers (expiration, bucket) to the queue. A remove leaves the expiration, so a loop of
//! schedule and cancel in one bucket offers it once per round. A deadline at or before the time is
//! not filed in a bucket but on the **overdue** list, offered at the time when it takes its first
//! entry since a drain left it empty, and drained by that offer's flush
//! ([`Wheel::drain_overdue`]): a zero delay or a passed deadline runs by the next advance even if
//! the clock did not move.
//!
//! **Flush** ([`Wheel::flush`], `flush.rs`): the queue popped (expiration, bucket). If the bucket's
//! expiration is another (a flush or a new round came since), the offer was stale and nothing
//! happens. Otherwise the time moves to the expiration (never backwards) and each entry is placed
//! again from the new time: due, it is held by the batch ("Held") unless the round's limit leaves
//! it ("Rounds"); otherwise it goes to a finer level (the cascade), whose new rounds are offers for
//! the caller. A bucket left empty forgets its round.
//!
//! **Rounds.** Each flush and drain takes the caller's **limit**, the last sequence number of its
//! round: a due entry numbered above it (scheduled, or reset, after the round began) is not held
//! but left linked, in its bucket (which keeps its round, behind the time once the time moves on)
//! or on the overdue list (which stays offered), and the flush returns that list's offer for the
//! caller to queue for the next round. So a round takes only what its limit covers, however many
//! entries are filed while it runs, and the next round takes the rest even if the clock did not
//! move. A second offer of such a bucket is stale once a new round is set or the bucket is flushed
//! empty, and finds nothing.
//!
//! **Held.** A flush, or the overdue list's drain, does not take a due entry's payload: it unlinks
//! the entry, marks it [`BucketCode::HELD`] (a code of no list) and appends a [`Due`] (its key and
//! its order, no payload) to the batch. The entry stays in its slot, pending and counted in
//! [`len`](Wheel::len), until one of these takes it, whichever comes first: the batch's
//! [`claim`](Wheel::claim) just before it runs (its payload, `None` if gone); a
//! [`remove`](Wheel::remove), a cancel, which wins over the claim still to come; or
//! [`drain_all`](Wheel::drain_all). Each takes it once, vacating the slot, so the caller that
//! counts entries counts it out at that take, under the same lock. A held entry is being fired: a
//! [`reset`](Wheel::reset) leaves it and answers as for a stale key, and
//! [`deadline`](Wheel::deadline) still reads the deadline it fell due by (pending until claimed).
//!
//! **A bucket behind the time.** The queue is polled outside the shard's lock, so the time can move
//! past a bucket whose offer is still queued (the driver popped a later bucket first while a
//! schedule filed an earlier one). A placement that then lands in that bucket for a later round
//! finds it holding the old round, whose entries are all due (its range ends at or before the
//! window of its level, so at or before the time): they move to the overdue list (offered if it
//! was drained) before the new round is set, and the old offer, stale, finds nothing.
//!
//! **Order.** Each [`Due`] and [`Fired`] carries (deadline, `sub`, sequence), by which the caller
//! sorts a batch, merged across shards, into deadline order to a 256th of a tick with equal
//! deadlines in the order of their sequence numbers (the caller numbers its inserts, so a wheel
//! keeps no count). A reset keeps the entry's sequence number, as `Timer::reset` keeps a task's
//! stamp.
//!
//! **Range.** Deadlines go up to [`MAX_TICK`], the crate's last deadline tick; a later one is
//! refused ([`Refusal::TooFar`], the payload handed back), never clamped.
//!
//! **Invariants**, whenever the shard's lock is free: every occupied slot is held or on exactly
//! one list (a bucket's or the overdue list), the one its code names; an entry in a bucket lies in
//! the round the bucket's expiration starts and is placed there from the time, or (a bucket behind
//! the time) is due; an entry on the overdue list is due, and so is a held one; every vacant slot
//! is on the slab's free list; `len` is exact, held entries included.
//!
//! **Cost.** Insert (amortised, as the slab grows), remove, reset and claim are O(1); a flush is O(its
//! entries), each entry cascading at most once a level. A slot is 56 bytes for a 16-byte payload
//! (generation 8, links 8, deadline and `sub` 8, sequence 8, bucket code 4, payload 16, padding
//! 4); a bucket 16 bytes, in chunks of 512 (`buckets.rs`). No method drops a payload.

use std::fmt;

use super::slab::{Slab, NIL};
use crate::deadline::MAX_DEADLINE_TICK;
use crate::wheel::place::{max_levels, LevelTable, Placement};

mod buckets;
mod flush;
mod types;

pub(crate) use buckets::{BucketCode, Offer, Offers};
use buckets::{Levels, List, NO_ROUND};
use types::Entry;
pub use types::{Due, Fired, Key, Refusal, Refused};

/// The last deadline tick the wheel takes: the crate's ([`MAX_DEADLINE_TICK`]).
pub(crate) const MAX_TICK: u64 = MAX_DEADLINE_TICK;

/// The largest wheel: buckets a level (a [`BucketCode`] names each).
pub(crate) const MAX_WHEEL_SIZE: u64 = 1 << 24;

/// The default wheel size (the timer's).
pub(crate) const DEFAULT_WHEEL_SIZE: u64 = 512;

/// One shard's slab and wheel (module docs).
pub struct Wheel<P> {
    slab: Slab<Entry<P>>,
    table: LevelTable,
    levels: Levels,
    overdue: List,
    /// Whether the overdue list's offer was reported since a drain last left it empty.
    overdue_offered: bool,
    /// The last expiration flushed.
    time: u64,
    wheel_size: u64,
}

impl<P> Default for Wheel<P> {
    fn default() -> Self {
        Wheel::new(DEFAULT_WHEEL_SIZE)
    }
}

impl<P> fmt::Debug for Wheel<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wheel")
            .field("wheel_size", &self.wheel_size)
            .field("len", &self.len())
            .field("time", &self.time)
            .field("levels", &self.levels.created())
            .finish_non_exhaustive()
    }
}

impl<P> Wheel<P> {
    /// An empty wheel of `wheel_size` buckets a level at time 0: no level, bucket or slot written.
    ///
    /// # Panics
    ///
    /// If `wheel_size` is below 2 or above [`MAX_WHEEL_SIZE`].
    pub(crate) fn new(wheel_size: u64) -> Self {
        assert!((2..=MAX_WHEEL_SIZE).contains(&wheel_size), "wheel size {wheel_size} out of 2..=2^24");
        Wheel {
            slab: Slab::new(),
            table: LevelTable::new(wheel_size),
            levels: Levels::new(wheel_size as usize),
            overdue: List::EMPTY,
            overdue_offered: false,
            time: 0,
            wheel_size,
        }
    }

    /// Buckets a level.
    pub(crate) fn wheel_size(&self) -> u64 {
        self.wheel_size
    }

    /// Levels created so far (at most `max_levels(wheel_size)`).
    pub(crate) fn levels(&self) -> usize {
        self.levels.created()
    }

    /// Entries pending, held ones included.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.slab.len()
    }

    /// Whether no entry is pending.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.slab.is_empty()
    }

    /// The wheel's time: the last expiration flushed (every entry due by it is due at the next
    /// advance).
    pub(crate) fn time(&self) -> u64 {
        self.time
    }

    /// Whether the overdue list holds entries (the next advance has work).
    pub(crate) fn has_overdue(&self) -> bool {
        !self.overdue.is_empty()
    }

    /// Files `payload` due at tick `deadline`, in its 256th `sub`, with the caller's sequence
    /// number `seq` (which orders it among equal deadlines, [`Due::order`]): in its bucket, or on
    /// the overdue list if `deadline` is not after the time. Its key, which names it until it
    /// leaves the wheel, and the offers the caller makes to the queue: its bucket's, if the insert
    /// set the bucket's expiration for a new round, and the overdue list's, if it was not offered
    /// since its last drain.
    ///
    /// # Errors
    ///
    /// The payload back, with [`Refusal::TooFar`] if `deadline` is after [`MAX_TICK`], or
    /// [`Refusal::Full`] if the slab has no slot index left; the wheel is unchanged.
    #[inline]
    pub(crate) fn insert(
        &mut self,
        deadline: u64,
        sub: u8,
        seq: u64,
        payload: P,
    ) -> Result<(Key, Offers), Refused<P>> {
        if deadline > MAX_TICK {
            return Err(Refused { payload, reason: Refusal::TooFar });
        }
        let entry =
            Entry { when: (deadline << 8) | u64::from(sub), seq, bucket: BucketCode::OVERDUE, payload };
        let (slot, generation) = match self.slab.occupy(entry) {
            Ok(occupied) => occupied,
            Err(entry) => return Err(Refused { payload: entry.payload, reason: Refusal::Full }),
        };
        let offer = self.file(slot, deadline);
        Ok((Key { slot, generation }, offer))
    }

    /// Takes the entry `key` names out, also a held one (the cancel wins over the batch's claim):
    /// its payload, or `None` if it has left the wheel (claimed, removed, drained: the key is
    /// stale, also after its slot's reuse). Its bucket keeps its expiration.
    #[inline]
    pub(crate) fn remove(&mut self, key: Key) -> Option<P> {
        if !self.slab.get(key.slot, key.generation)?.is_held() {
            self.unlink(key.slot);
        }
        Some(self.slab.vacate(key.slot).1.payload)
    }

    /// Takes the held entry `key` names out (module docs, "Held"): its payload, for the batch to
    /// run, or `None` if it is gone (removed or drained since the flush held it; the key is stale).
    #[inline]
    pub(crate) fn claim(&mut self, key: Key) -> Option<P> {
        let held = self.slab.get(key.slot, key.generation)?.is_held();
        debug_assert!(held, "a claim of {key:?}, pending and not held");
        if !held {
            return None;
        }
        Some(self.slab.vacate(key.slot).1.payload)
    }

    /// Moves the entry `key` names to `deadline` and `sub` in place: same slot, key, payload and
    /// sequence number, linked at the tail of its new list (filed as [`insert`](Wheel::insert)
    /// files). `Ok(Some(offer))` if it moved (`offer` as an insert's), `Ok(None)` if the key is
    /// stale or names a held entry, which is being fired (nothing changes).
    ///
    /// # Errors
    ///
    /// [`Refusal::TooFar`] if the key names a pending entry, not held, and `deadline` is after
    /// [`MAX_TICK`]; the entry stays as it was.
    #[inline]
    pub(crate) fn reset(&mut self, key: Key, deadline: u64, sub: u8) -> Result<Option<Offers>, Refusal> {
        match self.slab.get(key.slot, key.generation) {
            Some(entry) if !entry.is_held() => {}
            _ => return Ok(None),
        }
        if deadline > MAX_TICK {
            return Err(Refusal::TooFar);
        }
        self.unlink(key.slot);
        self.slab.entry_mut(key.slot).when = (deadline << 8) | u64::from(sub);
        Ok(Some(self.file(key.slot, deadline)))
    }

    /// The deadline and `sub` of the entry `key` names, `None` if the key is stale. A held entry
    /// is pending until claimed: its deadline reads back, the one it fell due by.
    pub(crate) fn deadline(&self, key: Key) -> Option<(u64, u8)> {
        let entry = self.slab.get(key.slot, key.generation)?;
        Some((entry.deadline(), entry.when as u8))
    }

    /// Hands every pending entry out, held ones too (a batch's claim of them then finds nothing),
    /// appended to `out` in slot order (the caller sorts by [`Fired::order`] if it needs deadline
    /// order): the wheel is left empty, every key stale,
    /// every bucket's round forgotten, its slots vacant and written (a [`shrink`](Wheel::shrink)
    /// gives them back).
    pub(crate) fn drain_all(&mut self, out: &mut Vec<Fired<P>>) {
        // Room first: the slab's walk must not panic halfway.
        out.reserve(self.len());
        self.slab.take_all(|slot, generation, entry| out.push(entry.fired(slot, generation)));
        self.levels.clear();
        self.overdue = List::EMPTY;
        self.overdue_offered = false;
    }

    /// Writes vacant slots ahead until `slots` entries fit without the slab growing (their pages
    /// touched now rather than on the schedule path).
    pub(crate) fn reserve(&mut self, slots: usize) {
        self.slab.reserve(slots);
    }

    /// Gives back the slab's vacant slots after its last occupied one (all of them when the wheel
    /// is empty) and its spare capacity: slots of capacity given back. A vacant slot below an
    /// occupied one stays (entries never move: keys name their slots). O(slots written). The
    /// buckets are not the slab's and stay.
    pub(crate) fn shrink(&mut self) -> usize {
        self.slab.shrink()
    }

    /// Links the occupied slot `index`, due at `deadline`, where it belongs from the time: the
    /// overdue list, or its bucket (module docs). The offers it makes.
    #[inline]
    fn file(&mut self, index: u32, deadline: u64) -> Offers {
        let (level, slot, round) = match self.table.place(self.time, deadline) {
            Placement::Due => return Offers { round: None, overdue: self.link_overdue(index) },
            Placement::Slot { level, slot, stage } => (level, slot, stage.round),
        };
        debug_assert!(level < max_levels(self.wheel_size) && round > self.time && round <= deadline);
        let code = BucketCode::encode(level, slot);
        let bucket = self.levels.bucket(level, slot);
        if bucket.expiration == round {
            link(&mut self.slab, &mut bucket.list, index, code);
            return Offers::default();
        }
        // A new round for the bucket: offered; entries of a round of the past move out first.
        debug_assert!(bucket.expiration == NO_ROUND || bucket.expiration < round);
        bucket.expiration = round;
        let behind = !bucket.list.is_empty();
        let overdue = if behind { self.overdue_behind(level, slot) } else { None };
        link(&mut self.slab, &mut self.levels.bucket(level, slot).list, index, code);
        Offers { round: Some(Offer { expiration: round, bucket: code }), overdue }
    }

    /// Links the occupied slot `index` at the tail of the overdue list: the list's offer, at the
    /// time, if it was not offered since its last drain.
    #[inline]
    fn link_overdue(&mut self, index: u32) -> Option<Offer> {
        link(&mut self.slab, &mut self.overdue, index, BucketCode::OVERDUE);
        let first = !std::mem::replace(&mut self.overdue_offered, true);
        first.then_some(Offer { expiration: self.time, bucket: BucketCode::OVERDUE })
    }

    /// Moves the entries of bucket `slot` of `level`, left behind the time with a round of the
    /// past, to the overdue list (module docs, "A bucket behind the time"): all are due. The
    /// overdue list's offer, if it makes one.
    #[cold]
    fn overdue_behind(&mut self, level: usize, slot: usize) -> Option<Offer> {
        let mut offer = None;
        while let Some(index) = self.pop_front(BucketCode::encode(level, slot)) {
            debug_assert!(
                self.slab.entry(index).deadline() <= self.time,
                "a round of the past holds a due entry"
            );
            offer = offer.or(self.link_overdue(index));
        }
        offer
    }

    /// The offers an insert of `deadline` would make now, without it (the seeded fault
    /// `shard_core_offer_before_link`, `super::faults`).
    pub(super) fn offers_for(&self, deadline: u64) -> Offers {
        match self.table.place(self.time, deadline) {
            Placement::Due => Offers {
                round: None,
                overdue: (!self.overdue_offered)
                    .then_some(Offer { expiration: self.time, bucket: BucketCode::OVERDUE }),
            },
            Placement::Slot { level, slot, stage } => Offers {
                round: (self.levels.get(level, slot).map_or(NO_ROUND, |b| b.expiration) != stage.round)
                    .then_some(Offer { expiration: stage.round, bucket: BucketCode::encode(level, slot) }),
                overdue: None,
            },
        }
    }

    /// Unlinks the first entry of the list `code` names (its bucket exists): its slot, `None`
    /// if the list is empty.
    #[inline]
    fn pop_front(&mut self, code: BucketCode) -> Option<u32> {
        let head = self.list_mut(code).head;
        (head != NIL).then(|| {
            self.unlink(head);
            head
        })
    }

    /// The list `code` names, which holds an entry (its bucket exists; not held).
    #[inline]
    fn list_mut(&mut self, code: BucketCode) -> &mut List {
        if code == BucketCode::OVERDUE {
            return &mut self.overdue;
        }
        let (level, slot) = code.decode();
        &mut self.levels.get_mut(level, slot).expect("a linked entry's bucket exists").list
    }

    /// Unlinks the occupied slot `index` from its list (it is on one: not held).
    #[inline]
    fn unlink(&mut self, index: u32) {
        let slot = self.slab.slot(index);
        let (prev, next) = (slot.prev, slot.next);
        let code = slot.entry.as_ref().expect("a linked slot is occupied").bucket;
        if next != NIL {
            self.slab.slot_mut(next).prev = prev;
        }
        if prev != NIL {
            self.slab.slot_mut(prev).next = next;
        }
        let list = self.list_mut(code);
        if next == NIL {
            list.tail = prev;
        }
        if prev == NIL {
            list.head = next;
        }
    }
}

/// Links the occupied slot `index` at the tail of `list`, the list `code` names.
#[inline]
fn link<P>(slab: &mut Slab<Entry<P>>, list: &mut List, index: u32, code: BucketCode) {
    let tail = std::mem::replace(&mut list.tail, index);
    if tail == NIL {
        list.head = index;
    } else {
        slab.slot_mut(tail).next = index;
    }
    let slot = slab.slot_mut(index);
    (slot.prev, slot.next) = (tail, NIL);
    slot.entry.as_mut().expect("a linked slot is occupied").bucket = code;
}

#[cfg(test)]
mod held_tests;
#[cfg(test)]
mod model;
#[cfg(test)]
mod round_tests;
#[cfg(test)]
mod support;
#[cfg(test)]
mod tests;
