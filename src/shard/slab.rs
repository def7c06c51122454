//! A shard's slab: the slots its entries live in, each addressed by a `u32` index and named by
//! its occupant's stamp (the caller's, `life.rs`), and the free list of the vacant ones, a queue
//! threaded through the slots themselves.
//!
//! A slot is vacant or occupied. An occupied slot holds one entry `E` (the wheel's: deadline and
//! payload), its [life word](Life) and its two links, `prev` and `next`, which its owner
//! (`wheel/`) uses to keep it on an intrusive list (the life word's list code names which). A
//! vacant slot holds no entry, its `next` is the next vacant slot of the free list, its `prev`
//! the one before (stale at the list's head, so that a take from the head writes no other slot),
//! and its life word keeps the last occupant's stamp and how it ended. The slab knows nothing of lists beyond
//! its free list: it hands out slots, takes them back and keeps the life words.
//!
//! Invariants (the shard's lock guards the slab, so they hold whenever the lock is free):
//!
//! * Every vacant slot is on the free list exactly once, and no occupied slot is; while the list
//!   is not empty, its tail index names its last slot (an empty list's tail is stale: only the
//!   head says the list is empty, so that a pop writes one index), and every slot on it but the
//!   head names the one before it in `prev`.
//! * A slot's generation is its occupant's stamp, which the caller gives with the entry: stamps
//!   are unique among the entries a wheel is ever given, so a key `(index, stamp)` names one
//!   occupant and a key of an earlier occupant never matches a later one, also when a shrink cut
//!   the slot off and the index comes back. A vacant slot keeps the stamp, so a key reads how its
//!   occupant ended ([`Slab::status`]) until the slot is reused. The stamp of a new occupant
//!   differs from the last one's (a debug assertion in [`Slab::occupy`]).
//! * `len` is the number of occupied slots, exactly.
//!
//! Reuse: the free list is first in, first out. A vacated slot goes to the tail and a schedule
//! takes the head, so a slot's last status ([`Slab::status`], what `TimerHandle::is_fired` and
//! `is_cancelled` read) survives at least as many further occupies as the slab had vacant slots
//! when the slot was vacated, and all of them while vacant slots written ahead remain
//! ([`reserve`](Slab::reserve) puts them at the head: they have no status to keep), unless a
//! drain ([`take_all`](Slab::take_all)) comes between: it relinks the free list by index, lowest
//! first, not by age, and a slot vacated late may then be reused first (a shrink takes the slots
//! it cuts off the list and leaves the others in their order). A slab whose
//! free list is empty takes a new slot at the end, so a slot vacated into an empty free list is
//! the next one reused. A last-in, first-out list loses the status at the very next occupy; it
//! schedules into the slot a cancel just touched, where this list takes the coldest vacant one.
//! It is kept against that list for the status it keeps, at a few instructions and cache misses
//! more a schedule + cancel pair where a shard holds many vacant slots: `docs/lean_core.md`,
//! "Slots reused oldest first", gives the figures and the commands.
//!
//! Memory: the slots are one array ([`Slots`], `slab/slots.rs`: on Linux a mapping of its own,
//! elsewhere a `Vec`), indexed by slot. [`reserve`](Slab::reserve) writes vacant slots ahead
//! (their pages touched before the clock starts). A slab [attached](Slab::attach) to a core's
//! reserve (`shard/reserve.rs`) that finds no vacant slot and its array full takes a run of
//! resident slots from the reserve (the reserve's lock inside its shard's) and writes them vacant
//! at the free list's head, as `reserve` does, without a page fault; with no reserve, or an empty
//! one, the array grows as a vector does. A shrink gives back the vacant slots
//! after the last occupied one and the array's spare capacity, the units taken from the reserve
//! back to it. It cannot give back a vacant slot below an occupied one: an
//! occupied slot never moves, since keys name it by index. A drain rebuilds the free list lowest
//! index first, so that later entries fill the bottom and leave the tail free for the next shrink.
//!
//! A shrink goes in steps ([`shrink_step`](Slab::shrink_step)), each bounded whatever the slab
//! holds: it walks down from the last slot written, at most [`STEP_SLOTS`], taking each vacant one
//! off the free list through its `prev` (O(1), where a rebuild of the list reads every slot) and
//! forgetting it without a drop (a vacant slot owns nothing), until it meets an occupied one; a
//! slab with no occupied slot drops its free list and its slots at once. Then it cuts at most
//! [`STEP_BYTES`] of the array's memory past the slots left, leaving the `munmap` and the
//! populate of the units for the reserve to after its shard's unlock (`Cut`, `slab/slots.rs`).
//! Between two steps the slab is whole: every invariant holds, and a schedule or a cancel in
//! between is one the next step sees.
//!
//! The slab never drops an entry itself except when it is dropped: entries leave it by value.

use super::life::{Life, Status};
use super::reserve::Reserve;
use crate::sync::Arc;
pub(crate) use slots::Cut;
use slots::Slots;

mod slots;

/// The index no slot has: the end of a list, or of the free list.
pub(super) const NIL: u32 = u32::MAX;

/// The most slots a slab holds: indices are `u32`, and [`NIL`] is none of them. The unit tests
/// take a smaller bound, to reach it.
#[cfg(not(test))]
pub(super) const MAX_SLOTS: usize = NIL as usize;
#[cfg(test)]
pub(super) const MAX_SLOTS: usize = 1 << 16;

/// The most slots a shrink's step walks ([`Slab::shrink_step`]): 16,384 (768 KiB of 48-byte
/// slots), each read once and, vacant, taken off the free list (two of its neighbours written).
pub(crate) const STEP_SLOTS: usize = 16_384;

/// The most bytes of a slab's memory a shrink's step cuts ([`Slab::shrink_step`]): 4 MiB.
pub(crate) const STEP_BYTES: usize = 4 << 20;

/// One slot: its life word, its links and, while occupied, its entry.
pub(super) struct Slot<E> {
    /// The occupant's stamp (a key holds (index, stamp)), its list, and how the last one ended.
    pub(super) life: Life,
    /// Occupied: the entry before this one on its list ([`NIL`] at the head); vacant: the vacant
    /// slot before this one on the free list (stale at its head).
    pub(super) prev: u32,
    /// Occupied: the entry after this one on its list; vacant: the next vacant slot. [`NIL`] at
    /// the end of either.
    pub(super) next: u32,
    /// The entry, while occupied.
    pub(super) entry: Option<E>,
}

/// The slots, the ends of the free list, and the count of occupied slots.
pub(super) struct Slab<E> {
    slots: Slots<Slot<E>>,
    /// The first vacant slot, the next one taken, or [`NIL`].
    free: u32,
    /// The last vacant slot, the last one vacated; stale while `free` is [`NIL`].
    free_tail: u32,
    /// Occupied slots.
    len: usize,
}

impl<E> Slab<E> {
    /// An empty slab: no slots written.
    pub(super) const fn new() -> Self {
        Slab { slots: Slots::new(), free: NIL, free_tail: NIL, len: 0 }
    }

    /// Grows from `reserve` from now on (module docs, "Memory"): an empty slab only.
    pub(super) fn attach(&mut self, reserve: Arc<Reserve>) {
        assert_eq!(self.slots.capacity(), 0, "a reserve attached to an empty slab");
        self.slots.attach(reserve);
    }

    /// Units taken from the reserve and not given back.
    pub(super) fn taken(&self) -> usize {
        self.slots.taken()
    }

    /// Occupied slots.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Whether no slot is occupied.
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slots written, vacant and occupied.
    pub(super) fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Slots the slab's memory holds, written or not.
    pub(super) fn capacity(&self) -> usize {
        self.slots.capacity()
    }

    /// Puts `entry` of `stamp` (the caller's, below `life::STAMP_LIMIT`, unique among the entries
    /// the slab is ever given, so never the slot's last occupant's: a debug assertion) in a vacant
    /// slot (the free list's head, the slot vacated longest ago, else a new one at the end): its
    /// index, which with `stamp` names it. `Err(entry)` if the slab holds [`MAX_SLOTS`] occupied
    /// slots. The slot's links and list are the caller's to set.
    #[inline]
    pub(super) fn occupy(&mut self, stamp: u64, entry: E) -> Result<u32, E> {
        let life = Life::pending(stamp);
        let free = self.free;
        let index = match free {
            NIL if self.slots.len() == self.slots.capacity() && self.grow() => self.occupy_free(life, entry),
            NIL => {
                if self.slots.len() >= MAX_SLOTS {
                    return Err(entry);
                }
                let index = self.slots.len() as u32;
                let slot = Slot { life, prev: NIL, next: NIL, entry: Some(entry) };
                self.slots.push(slot);
                index
            }
            _ => self.occupy_free(life, entry),
        };
        self.len += 1;
        Ok(index)
    }

    /// [`occupy`](Slab::occupy)'s take of the free list's head, which is not [`NIL`].
    #[inline]
    fn occupy_free(&mut self, life: Life, entry: E) -> u32 {
        let index = self.free;
        let slot = &mut self.slots[index as usize];
        debug_assert!(slot.entry.is_none(), "slot {index} on the free list is occupied");
        // A vacated slot's status is not `Pending`; a slot written ahead's stamp is no one's.
        debug_assert!(
            slot.life.status() == Status::Pending || !slot.life.is(life.stamp()),
            "slot {index} given its last occupant's stamp {} again",
            life.stamp()
        );
        self.free = slot.next;
        slot.life = life;
        slot.entry = Some(entry);
        index
    }

    /// Takes a run from the reserve if the slab has one (module docs, "Memory") and writes its
    /// slots vacant, at the free list's head: whether it did (else the slab grows as a vector).
    #[cold]
    #[inline(never)]
    fn grow(&mut self) -> bool {
        let more = self.slots.take_run(MAX_SLOTS);
        self.write_vacant(more);
        more > 0
    }

    /// Takes the entry of the occupied slot `index` out, its occupant ended as `status`
    /// (recorded in its life word with its stamp until the slot's reuse): the entry. The slot goes
    /// to the tail of the free list, to be reused after every slot vacant before it.
    ///
    /// # Panics
    ///
    /// If the slot is vacant (the caller's logic error: it vacates only what it has found
    /// occupied).
    #[inline]
    pub(super) fn vacate(&mut self, index: u32, status: Status) -> E {
        let tail = self.free_tail;
        let slot = &mut self.slots[index as usize];
        let entry = slot.entry.take().expect("vacate: the slot is occupied");
        slot.life = slot.life.ended(status);
        (slot.prev, slot.next) = (tail, NIL);
        match self.free {
            NIL => self.free = index,
            _ => self.slots[self.free_tail as usize].next = index,
        }
        self.free_tail = index;
        self.len -= 1;
        entry
    }

    /// The slot `index` if it is occupied by the occupant `stamp` names.
    #[inline]
    pub(super) fn get(&self, index: u32, stamp: u64) -> Option<&Slot<E>> {
        let slot = self.slots.get(index as usize)?;
        (slot.life.is(stamp) && slot.entry.is_some()).then_some(slot)
    }

    /// Where the occupant `stamp` of slot `index` is in its life: [`Status::Pending`] while it
    /// occupies the slot, how it ended once it left, until the slot's reuse (or a shrink that cut
    /// it off); `None` then, and for a key that never named the slot's occupant.
    pub(super) fn status(&self, index: u32, stamp: u64) -> Option<Status> {
        let slot = self.slots.get(index as usize).filter(|slot| slot.life.is(stamp))?;
        match (&slot.entry, slot.life.status()) {
            (Some(_), _) => Some(Status::Pending),
            // A slot never occupied.
            (None, Status::Pending) => None,
            (None, ended) => Some(ended),
        }
    }

    /// The slot `index` (links and entry), which the caller knows is written.
    #[inline]
    pub(super) fn slot(&self, index: u32) -> &Slot<E> {
        &self.slots[index as usize]
    }

    /// The slot `index`, to set its links or its entry's fields.
    #[inline]
    pub(super) fn slot_mut(&mut self, index: u32) -> &mut Slot<E> {
        &mut self.slots[index as usize]
    }

    /// The entry of the slot `index`, which the caller knows is occupied.
    ///
    /// # Panics
    ///
    /// If the slot is vacant.
    #[inline]
    pub(super) fn entry(&self, index: u32) -> &E {
        self.slots[index as usize].entry.as_ref().expect("the slot is occupied")
    }

    /// The entry of the slot `index`, which the caller knows is occupied.
    ///
    /// # Panics
    ///
    /// If the slot is vacant.
    #[inline]
    pub(super) fn entry_mut(&mut self, index: u32) -> &mut E {
        self.slots[index as usize].entry.as_mut().expect("the slot is occupied")
    }

    /// Writes vacant slots at the end until at least `slots` are vacant (up to [`MAX_SLOTS`] in
    /// all), so that that many entries find a slot without the slab growing; the new ones are
    /// taken first, lowest index first (at the free list's head: they have no status to keep).
    pub(super) fn reserve(&mut self, slots: usize) {
        let vacant = self.slots.len() - self.len;
        let more = slots.saturating_sub(vacant).min(MAX_SLOTS - self.slots.len());
        if more == 0 {
            return;
        }
        self.slots.reserve_exact(more);
        self.write_vacant(more);
    }

    /// Writes `more` vacant slots at the end (the capacity holds them), at the free list's head,
    /// lowest index first.
    fn write_vacant(&mut self, more: usize) {
        if more == 0 {
            return;
        }
        let first = self.slots.len();
        for index in first..first + more {
            let next = if index + 1 < first + more { index as u32 + 1 } else { self.free };
            let prev = if index > first { index as u32 - 1 } else { NIL };
            self.slots.push(Slot { life: Life::FRESH, prev, next, entry: None });
        }
        if self.free == NIL {
            self.free_tail = (first + more - 1) as u32;
        } else {
            self.slots[self.free as usize].prev = (first + more - 1) as u32;
        }
        self.free = first as u32;
    }

    /// Gives back what it can (module docs): cuts off the vacant slots after the last occupied one,
    /// all of them when the slab is empty, and the capacity beyond the slots left, in
    /// [`shrink_step`](Slab::shrink_step)s of at most `slots` slots walked and `bytes` cut, until
    /// done. Returns the slots of capacity given back. (The wheel goes step by step itself.)
    #[cfg(test)]
    pub(super) fn shrink(&mut self, slots: usize, bytes: usize) -> usize {
        let mut given = 0;
        loop {
            let (step, done) = self.shrink_step(slots, bytes, &mut Cut::default());
            given += step;
            if done {
                return given;
            }
        }
    }

    /// One step of a shrink (module docs, "Memory"): walks down from the last slot written, at
    /// most `slots` slots, cutting off those vacant (each taken off the free list through its
    /// `prev`) until it finds an occupied one; an empty slab drops its free list and every slot at
    /// once. Then it cuts at most `bytes` (at least one grain) of the capacity beyond the slots
    /// left, the system calls that need no lock left to `out`. Returns the slots of capacity given
    /// back and whether the shrink is done: the last slot left is occupied (or none is left) and
    /// no spare capacity is left. Between steps the slab is whole (every invariant holds): a
    /// schedule may occupy a vacant slot or write one at the end, and the next step starts from
    /// the slots written then.
    pub(super) fn shrink_step(&mut self, slots: usize, bytes: usize, out: &mut Cut) -> (usize, bool) {
        let before = self.slots.capacity();
        let written = self.slots.len();
        let walked = if self.len == 0 {
            self.free = NIL;
            self.slots.forget_from(0);
            true
        } else {
            let lo = written.saturating_sub(slots.max(1));
            let keep = self.slots[lo..]
                .iter()
                .rposition(|slot| slot.entry.is_some())
                .map_or(lo, |last| lo + last + 1);
            // Seeded fault `shard_core_shrink_step_keeps_cut_slots_listed` (docs/loom.md).
            if !fault!("shard_core_shrink_step_keeps_cut_slots_listed") {
                for index in (keep..written).rev() {
                    self.unlink_free(index as u32);
                }
            }
            self.slots.forget_from(keep);
            keep > lo
        };
        let cut = self.slots.cut(bytes, out);
        (before - self.slots.capacity(), walked && cut)
    }

    /// Takes the vacant slot `index` off the free list: through its `prev` unless it is the head.
    fn unlink_free(&mut self, index: u32) {
        let Slot { prev, next, .. } = self.slots[index as usize];
        if index == self.free {
            // The next slot's `prev`, if any, goes stale: it is the head.
            self.free = next;
            return;
        }
        self.slots[prev as usize].next = next;
        match next {
            NIL => self.free_tail = prev,
            _ => self.slots[next as usize].prev = prev,
        }
    }

    /// Vacates every occupied slot, in index order, each occupant ended as `status`, handing
    /// `each` the index, the occupant's stamp, and the entry; the free list is then rebuilt,
    /// lowest index first. `each` must not panic (the slab would be left with vacant slots off the
    /// free list).
    pub(super) fn take_all(&mut self, status: Status, mut each: impl FnMut(u32, u64, E)) {
        for (index, slot) in self.slots.iter_mut().enumerate() {
            if let Some(entry) = slot.entry.take() {
                let stamp = slot.life.stamp();
                slot.life = slot.life.ended(status);
                self.len -= 1;
                each(index as u32, stamp, entry);
            }
        }
        self.relink_free();
    }

    /// Threads the free list through every vacant slot, lowest index first (a shrink's order: later
    /// entries fill the bottom).
    fn relink_free(&mut self) {
        let (mut free, mut tail) = (NIL, NIL);
        for index in (0..self.slots.len()).rev() {
            if self.slots[index].entry.is_none() {
                match tail {
                    NIL => tail = index as u32,
                    _ => self.slots[free as usize].prev = index as u32,
                }
                self.slots[index].next = free;
                free = index as u32;
            }
        }
        (self.free, self.free_tail) = (free, tail);
    }

    /// Checks the invariants (module docs) by walking the free list and every slot: the unit tests'
    /// audit.
    #[cfg(test)]
    pub(super) fn check(&self) {
        let mut on_free = vec![false; self.slots.len()];
        let (mut index, mut last) = (self.free, NIL);
        while index != NIL {
            let slot = &self.slots[index as usize];
            assert!(slot.entry.is_none(), "occupied slot {index} on the free list");
            if last != NIL {
                assert_eq!(slot.prev, last, "slot {index}'s prev on the free list");
            }
            last = index;
            assert!(
                !std::mem::replace(&mut on_free[index as usize], true),
                "slot {index} twice on the free list"
            );
            index = slot.next;
        }
        if self.free != NIL {
            assert_eq!(self.free_tail, last, "the tail is the free list's last slot");
        }
        let occupied = self.slots.iter().filter(|slot| slot.entry.is_some()).count();
        assert_eq!(occupied, self.len, "len counts the occupied slots");
        assert_eq!(
            on_free.iter().filter(|&&free| free).count(),
            self.slots.len() - occupied,
            "every vacant slot free"
        );
    }
}

#[cfg(test)]
mod tests;
