//! The level-0 side of [`Wheel::take_due_by`](super::Wheel::take_due_by): the list of the tick
//! after a deadline passed mid-tick, sorted by deadline word on the first take of that tick, so
//! that the takes after it walk only what they hold (the module docs of `wheel/`, "Passed
//! deadlines mid-tick").
//!
//! **The run.** A level-0 bucket holds one tick's entries: those of its round, its expiration
//! (module docs, "Invariants"), so a bucket whose expiration is not the take's tick holds none of
//! it and is not walked. The wheel remembers one tick's list, [`SortedRun`]: its `tick` and the
//! `last` entry of a run that opens that tick's level-0 list, in deadline-word order (equal words
//! in any order). The first take of a tick walks the whole list, holds what is due by its limit
//! and sorts the rest into the run (their words and slots gathered in a scratch vector, sorted,
//! the links rewritten; O(n log n) once a tick). A later take of the tick walks the run from its
//! head and stops at the first word after its limit (what it passes over is held, but for entries
//! stamped above the limit, which stay), then walks the **tail**, the entries linked after the
//! run (links are at a list's tail: inserts, resets into the tick, set-asides), holding those due.
//! So a take costs the entries it holds, one more, the tail, and the entries of the run at or
//! before its limit stamped above the stamp limit, not the entries waiting in the tick. When the
//! tail's entries left exceed both [`RESORT_MIN`] and an eighth of the list, the whole list is
//! sorted again into one run: a re-sort costs O(n log n) after at least `n / 8` links, and a
//! take's walk of the tail stays below `max(RESORT_MIN, n / 8)` plus what was linked since the
//! last take.
//!
//! **What keeps the run sorted.** Every link is at the tail, after the run. An unlink (a cancel, a
//! reset elsewhere, a take's hold) keeps the run's order; an unlink of `last` moves it to its
//! predecessor (`NIL` when the run is left empty: the whole list is tail), `lists.rs`'
//! `Wheel::unlink`. A reset that would rewrite the word of an entry of the run's tick in place
//! (`reset.rs`, "In its bucket") unlinks it and links it at the tail instead (the round is queued,
//! so no offer). A take of the list whole (a flush, a move of a bucket behind the time onto the
//! overdue list: `lists.rs`' `take_list`) and a drain of the wheel forget the run, and a take of
//! another tick replaces it. So, whenever the shard's lock is free, `last` is `NIL` or an entry
//! linked in the level-0 bucket of `tick`, and the entries from that list's head to `last` are in
//! word order.
//!
//! **Under the shard's lock.** The run, its marks and its scratch are the wheel's, read and
//! written only through `&mut Wheel`, under its shard's lock, as every list is: no state is read
//! outside it, so no race is added and no loom model is needed beyond those of the take
//! (`loom_tests/passed_mid_tick.rs`).

use super::super::life::ListCode;
use super::super::slab::NIL;
use super::{Due, Wheel};
use crate::deadline::Deadline;

/// Tail entries a take leaves, at least, before the list is sorted again (module docs).
const RESORT_MIN: usize = 64;

/// The scratch's capacity kept from one sort to the next; beyond it the buffer is given back.
const SCRATCH_KEEP: usize = 1024;

/// The tick of no run (above every deadline tick).
const NO_TICK: u64 = u64::MAX;

/// The run that opens one tick's level-0 list (module docs).
#[derive(Debug)]
pub(super) struct SortedRun {
    /// The tick whose level-0 list the run opens, [`NO_TICK`] if none.
    tick: u64,
    /// The run's last entry, `NIL` if the run is empty.
    last: u32,
    /// The (word, slot) of the entries being sorted, reused from one sort to the next.
    scratch: Vec<(Deadline, u32)>,
}

impl SortedRun {
    /// No run.
    pub(super) const EMPTY: SortedRun = SortedRun { tick: NO_TICK, last: NIL, scratch: Vec::new() };

    /// Forgets the run (a drain of the wheel).
    pub(super) fn forget(&mut self) {
        (self.tick, self.last) = (NO_TICK, NIL);
    }

    /// The entry `index`, whose predecessor is `prev`, is unlinked: if it is the run's last, its
    /// predecessor is (module docs, "What keeps the run sorted").
    #[inline(always)]
    pub(super) fn unlinked(&mut self, index: u32, prev: u32) {
        if self.last == index {
            self.last = prev;
        }
    }

    /// Whether a run opens the list `list` of an entry of `tick` (level 0's of the run's tick): a
    /// reset of the entry relinks it rather than rewriting its word in place.
    #[inline]
    pub(super) fn orders(&self, list: ListCode, tick: u64) -> bool {
        self.tick == tick && self.last != NIL && list == ListCode::level(0)
    }
}

impl<P> Wheel<P> {
    /// The list of level 0's bucket `slot` is taken whole (`lists.rs`' `take_list`): a run it
    /// opened is forgotten.
    #[inline]
    pub(super) fn level0_taken(&mut self, slot: usize) {
        if self.run.tick != NO_TICK && self.levels.slot_of(0, self.run.tick) == slot {
            self.run.forget();
        }
    }

    /// Holds every entry of level 0's list of `limit`'s tick whose word is at or before `limit`
    /// and whose stamp is at most `stamps`, appended to `out`; its run walked up to `limit`, its
    /// tail whole, the rest sorted into the run on the tick's first take or when the tail left
    /// grows (module docs).
    pub(super) fn take_level0_due_by(&mut self, limit: Deadline, stamps: u64, out: &mut Vec<Due>) {
        let tick = limit.tick();
        let slot = self.levels.slot_of(0, tick);
        let Some(bucket) = self.levels.get(0, slot).filter(|bucket| bucket.expiration == tick) else {
            return;
        };
        let head = bucket.list.head;
        if self.run.tick != tick {
            (self.run.tick, self.run.last) = (tick, NIL);
        }
        // The run, up to its first word after the limit.
        let mut tail = head;
        let last = self.run.last;
        if last != NIL {
            tail = self.slab.slot(last).next;
            let mut at = head;
            loop {
                let (next, when, stamp) = self.walk(at, tick);
                if when > limit {
                    break;
                }
                if stamp <= stamps {
                    self.take_one(at, out);
                }
                if at == last {
                    break;
                }
                at = next;
            }
        }
        // The tail, whole: what it leaves gathered, for a sort.
        let mut scratch = std::mem::take(&mut self.run.scratch);
        scratch.clear();
        let mut at = tail;
        while at != NIL {
            let (next, when, stamp) = self.walk(at, tick);
            if when <= limit && stamp <= stamps {
                self.take_one(at, out);
            } else {
                scratch.push((when, at));
            }
            at = next;
        }
        let len = self.levels.get(0, slot).expect("a walked bucket exists").list.len as usize;
        let resort = scratch.len() >= RESORT_MIN && scratch.len() * 8 >= len;
        if !scratch.is_empty() && (self.run.last == NIL || resort) {
            self.sort_level0(slot, &mut scratch);
        }
        if scratch.capacity() > SCRATCH_KEEP {
            scratch = Vec::new();
        }
        self.run.scratch = scratch;
    }

    /// The linked entry `index` of the level-0 list of `tick`, walked: its next, word and stamp.
    #[inline]
    fn walk(&mut self, index: u32, tick: u64) -> (u32, Deadline, u64) {
        self.count_walked();
        let slot = self.slab.slot(index);
        let when = slot.entry.as_ref().expect("a linked slot is occupied").when;
        debug_assert_eq!(when.tick(), tick, "a level-0 bucket holds its round's tick only");
        (slot.next, when, slot.life.stamp())
    }

    /// Unlinks and holds the linked entry `index`, into `out`: room first, as a flush makes it
    /// (`flush.rs`), so that once held the entry is in `out`.
    #[inline]
    pub(super) fn take_one(&mut self, index: u32, out: &mut Vec<Due>) {
        out.reserve(1);
        self.unlink(index);
        out.push(self.hold(index));
    }

    /// Sorts level 0's list `slot` into one run: `scratch` holds the words and slots of its tail
    /// (every entry after the run); the run's are gathered, all sorted by word and linked in that
    /// order, the last the run's.
    fn sort_level0(&mut self, slot: usize, scratch: &mut Vec<(Deadline, u32)>) {
        let bucket = self.levels.get(0, slot).expect("a walked bucket exists");
        let (mut at, last) = (bucket.list.head, self.run.last);
        if last != NIL {
            loop {
                self.count_walked();
                let entry = self.slab.slot(at);
                scratch.push((entry.entry.as_ref().expect("a linked slot is occupied").when, at));
                if at == last {
                    break;
                }
                at = entry.next;
            }
        }
        scratch.sort_unstable_by_key(|&(when, _)| when);
        let mut prev = NIL;
        for (i, &(_, index)) in scratch.iter().enumerate() {
            let next = scratch.get(i + 1).map_or(NIL, |&(_, next)| next);
            let entry = self.slab.slot_mut(index);
            (entry.prev, entry.next) = (prev, next);
            prev = index;
        }
        let list = &mut self.levels.get_mut(0, slot).expect("a walked bucket exists").list;
        debug_assert_eq!(list.len as usize, scratch.len(), "the run and the tail are the list");
        (list.head, list.tail) = (scratch[0].1, prev);
        self.run.last = prev;
    }

    /// Asserts the run's invariants (module docs, "What keeps the run sorted"): `last` is linked
    /// in its tick's level-0 list, and the list is in word order from its head to `last`.
    #[cfg(test)]
    pub(super) fn check_run(&self) {
        if self.run.last == NIL {
            return;
        }
        let tick = self.run.tick;
        let bucket = self.levels.get(0, self.levels.slot_of(0, tick)).expect("the run's bucket exists");
        assert_eq!(bucket.expiration, tick, "the run's bucket holds its tick");
        let (mut at, mut previous) = (bucket.list.head, None);
        loop {
            assert_ne!(at, NIL, "the run's last {} is not in its list", self.run.last);
            let slot = self.slab.slot(at);
            let when = slot.entry.as_ref().expect("a linked slot is occupied").when;
            assert!(previous.map_or(true, |previous| previous <= when), "the run is out of order at {at}");
            if at == self.run.last {
                return;
            }
            (previous, at) = (Some(when), slot.next);
        }
    }
}

#[cfg(test)]
#[path = "sorted_run_tests.rs"]
mod tests;
