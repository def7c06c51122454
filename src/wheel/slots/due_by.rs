//! Taking out of a stage's list the entries due by a deadline passed mid-tick
//! (`timer/advance.rs`, "Passed deadlines mid-tick"), through an index of the list by deadline.
//!
//! A list is in the order of its adds, not of its deadlines, so the first take beside a passed
//! deadline reads every entry's deadline (under its slot's lock, as it must to take one). It
//! keeps what it read: a min-heap of `(deadline, absolute index)` over the list ([`DueIndex`]),
//! built in one pass (`O(n)`), and every later take pops from its top what is due by its limit
//! (`O(log n)` an entry), then looks at the entries added since (the **tail**, from
//! [`DueIndex::covers`] on, each pushed once). So a stream of passed deadlines falling between
//! the entries of the tick under way costs `O(n)` at the first take and `O(log n)` for each entry
//! a take finds due or looks at for the first time, not a scan of the list per take.
//!
//! **Why a popped item is checked, not trusted.** Under the lane lock, as the list: every live
//! entry below `covers` has an item whose key is at most its deadline (an invariant, not an
//! equality), and items may be stale. An entry leaves its slot (a cancel, a move, a visit's
//! front chunk) without the index knowing: its slot is then a hole or below the list's front, and
//! the item is dropped when popped. A reset writes a later deadline in place under the slot lock
//! alone (`entry/retarget.rs`: never an earlier one), so an item's key stays a lower bound, and a
//! popped entry due after the limit goes back in by the deadline it has now. Indices are stable
//! while the index lives: holes popped at the back give their indices to the next pushes, so
//! `covers` comes back to the end ([`DueIndex::cut`], and those entries are the tail's); the list
//! emptied (indices restart) or compacted (entries renumbered) drops the index, and the next take
//! builds it again (a compaction comes after three quarters of the list became holes: amortised).
//! An entry with two items (a stale one whose index a push reused) is taken once: the second finds
//! a hole. Stale items stay until popped: a heap of more than twice the list's entries (plus
//! [`MIN_COMPACT`]) is dropped too, to be built again if a take needs it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{Slots, MIN_COMPACT};
use crate::deadline::Deadline;
use crate::entry::{EntryArena, EntryId, TaskLines};

/// A stage list's entries by deadline (see the module docs).
pub(crate) struct DueIndex {
    /// `(deadline, absolute index)`, earliest first: every live entry below `covers` has one whose
    /// deadline is at most its own.
    heap: BinaryHeap<Reverse<(Deadline, u64)>>,
    /// The absolute index of the first slot the index has not looked at (the tail's start).
    covers: u64,
}

impl DueIndex {
    /// The list ends at `end` (holes popped at its back): the indices from there on will be new
    /// entries', which it has not looked at.
    pub(super) fn cut(&mut self, end: u64) {
        self.covers = self.covers.min(end);
    }
}

impl Slots {
    /// Takes out every entry whose deadline, read under its slot's lock, is at or before `limit`
    /// and whose stamp is at most `stamps`, into transit marked due (`EntryState::leave_for_transit`),
    /// handing each to `each`: the caller holds and fires them. The others stay where they are;
    /// returns a lower bound of their deadlines ([`Deadline::LATEST`] if none). Through the index
    /// by deadline, built at the first call (see the module docs): for the tick under way when a
    /// passed deadline fires mid-tick (`timer/advance.rs`, "Passed deadlines mid-tick"), not for a
    /// visit.
    pub(crate) fn take_due_by<F>(
        &mut self,
        arena: &EntryArena,
        (limit, stamps): (Deadline, u64),
        mut each: F,
    ) -> Deadline
    where
        F: FnMut(EntryId, (Deadline, u64, TaskLines)),
    {
        let base = self.base;
        let mut index = match self.by_deadline.take() {
            Some(index) => index,
            None => Box::new(DueIndex { heap: BinaryHeap::new(), covers: base }),
        };
        // Due by `by` (`limit`), taken; else kept with the deadline read (at most `limit` for one
        // stamped later).
        let mut take = |slots: &mut Slots, at: u64, entry: EntryId, by: Deadline| {
            let mut state = arena.lock(entry);
            if state.deadline > by || state.generation() > stamps {
                return Some(state.deadline);
            }
            // Due whatever the cursor: at or before `limit`, which has passed. (Seeded fault
            // `due_by_unmarked`, docs/loom.md: not marked due, so a reset racing the take moves
            // the entry, `true`, and it fires at once all the same.)
            let cursor = if fault!("due_by_unmarked") { 0 } else { u64::MAX };
            let left = state.leave_for_transit(cursor, stamps);
            drop(state);
            slots.entries[(at - base) as usize] = None;
            slots.live -= 1;
            each(entry, left);
            None
        };
        // The tail: every entry at the first take, those added since at a later one.
        let end = self.base + self.entries.len() as u64;
        let mut kept = Vec::new();
        for at in index.covers.max(base)..end {
            let Some(entry) = self.entries[(at - base) as usize] else { continue };
            kept.extend(take(self, at, entry, limit).map(|deadline| Reverse((deadline, at))));
        }
        index.covers = end;
        // What the index has due by `limit`; one stamped later goes back after the loop.
        let mut later = Vec::new();
        while let Some(&Reverse((_, at))) = index.heap.peek().filter(|item| item.0 .0 <= limit) {
            index.heap.pop();
            let Some(entry) =
                at.checked_sub(base).and_then(|at| self.entries.get(at as usize)).copied().flatten()
            else {
                continue;
            };
            // Seeded fault `due_by_trusts_index` (docs/loom.md): a popped entry is taken by its
            // item's key, so one a reset moved later in place since fires before that deadline.
            let by = if fault!("due_by_trusts_index") { Deadline::LATEST } else { limit };
            match take(self, at, entry, by) {
                Some(deadline) if deadline > limit => index.heap.push(Reverse((deadline, at))),
                Some(deadline) => later.push(Reverse((deadline, at))),
                None => {}
            }
        }
        // Pushed one by one or heapified together, whichever `extend` finds cheaper.
        index.heap.extend(kept);
        index.heap.extend(later);
        let floor = index.heap.peek().map_or(Deadline::LATEST, |item| item.0 .0);
        self.trim_front();
        self.by_deadline = Some(index);
        self.trim_back();
        if self.entries.is_empty() {
            self.restart();
        }
        self.shrink(arena);
        // Mostly stale (a list cancelled or cascaded from, taken little from): built again if needed.
        if self.by_deadline.as_ref().is_some_and(|index| index.heap.len() > 2 * self.live + MIN_COMPACT) {
            self.by_deadline = None;
        }
        floor
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::location::{BucketKey, LaneKey, Location};
    use crate::entry::new_entry_at;
    use crate::test_rng::XorShift;

    fn add(slots: &mut Slots, arena: &EntryArena, deadline: Deadline) -> EntryId {
        let entry = new_entry_at(arena, deadline, || {}).unwrap().id;
        let index = slots.next_index(arena);
        arena.lock(entry).location = Some(Location::new(LaneKey::new(BucketKey::new(0, 1), 1), 0, index));
        slots.push(entry);
        entry
    }

    /// Random adds, cancels (at the front, the back, anywhere), resets in place to later deadlines,
    /// a visit's front chunks and takes by rising or random limits and stamps, against a list of
    /// what is in the stage: each take takes exactly the entries due by its limit and stamped at
    /// most its stamps, and returns a floor at most every deadline left.
    #[test]
    fn takes_through_the_index_take_exactly_what_is_due() {
        let mut rng = XorShift::new(0x0D0E_B15E_ED00_5EED);
        for round in 0..200 {
            let arena = EntryArena::unaudited();
            let mut slots = Slots::default();
            // (entry, deadline, stamp) in list order.
            let mut model: Vec<(EntryId, Deadline, u64)> = Vec::new();
            let deadline =
                |rng: &mut XorShift| Deadline::new(100 + rng.next() % 3, rng.next() as u8).unwrap();
            let mut limit = Deadline::new(100, 0).unwrap();
            // Some rounds start with a long list, which holes compact (renumbering it).
            for _ in 0..rng.next() % 4 * 100 {
                let deadline = deadline(&mut rng);
                let entry = add(&mut slots, &arena, deadline);
                model.push((entry, deadline, arena.lock(entry).generation()));
            }
            for step in 0..400 {
                let at = |rng: &mut XorShift, len: usize| (rng.next() % len.max(1) as u64) as usize;
                match rng.next() % 16 {
                    0..=5 => {
                        let deadline = deadline(&mut rng);
                        let entry = add(&mut slots, &arena, deadline);
                        model.push((entry, deadline, arena.lock(entry).generation()));
                    }
                    6..=7 if !model.is_empty() => {
                        let i = match rng.next() % 3 {
                            0 => 0,
                            1 => model.len() - 1,
                            _ => at(&mut rng, model.len()),
                        };
                        let (entry, ..) = model.remove(i);
                        let index = arena.lock(entry).location.take().unwrap().index();
                        assert_eq!(slots.take(&arena, index), Some(entry));
                    }
                    8 if !model.is_empty() => {
                        let i = at(&mut rng, model.len());
                        let later =
                            Deadline::new(model[i].1.tick() + rng.next() % 2, 255).unwrap().max(model[i].1);
                        arena.lock(model[i].0).deadline = later;
                        model[i].1 = later;
                    }
                    9 if !model.is_empty() => {
                        let n = 1 + at(&mut rng, model.len().min(4));
                        let mut taken = Vec::new();
                        slots.take_front(n, &arena, (0, 0), |entry, _| taken.push(entry));
                        let expected: Vec<EntryId> = model.drain(..n).map(|(entry, ..)| entry).collect();
                        assert_eq!(taken, expected, "round {round} step {step}");
                    }
                    _ => {
                        limit = match rng.next() % 4 {
                            0 => deadline(&mut rng),
                            _ => limit
                                .max(deadline(&mut rng).min(Deadline::new(102, rng.next() as u8).unwrap())),
                        };
                        let stamps = match model.iter().map(|&(.., stamp)| stamp).max() {
                            Some(last) if rng.next() % 4 == 0 => last.saturating_sub(rng.next() % 4),
                            _ => u64::MAX,
                        };
                        let mut taken = Vec::new();
                        let floor = slots.take_due_by(&arena, (limit, stamps), |entry, (deadline, ..)| {
                            taken.push((entry, deadline))
                        });
                        let (due, left): (Vec<_>, Vec<_>) = model
                            .iter()
                            .partition(|&&(_, deadline, stamp)| deadline <= limit && stamp <= stamps);
                        let mut due: Vec<_> =
                            due.into_iter().map(|&(entry, deadline, _)| (entry, deadline)).collect();
                        taken.sort_by_key(|&(entry, _)| entry.index());
                        due.sort_by_key(|&(entry, _)| entry.index());
                        assert_eq!(taken, due, "round {round} step {step}");
                        assert!(
                            left.iter().all(|&&(_, deadline, _)| floor <= deadline),
                            "round {round} step {step}"
                        );
                        model = left.into_iter().copied().collect();
                    }
                }
                assert_eq!(slots.live(), model.len());
            }
        }
    }
}
