//! The wheel's lists: linking a slot at a list's tail, unlinking it from wherever its life word
//! and deadline say it is (the module docs of `wheel/`, "Where an entry is"), taking a bucket's
//! list whole (a flush's, and a move onto the overdue list's, walked once: `flush.rs`), and the
//! moves onto the overdue list. A link counts the entry into its list and an unlink or a take out
//! of it, and out of its level's count (`Wheel::file` counts it into that one: `stats.rs`).
//!
//! **Kept** ([`Kept`]). The overdue list opens with the entries the last drain kept, above its
//! round's limit (`flush.rs`): a drain whose limit is no higher skips them in O(1), so an advance
//! whose rounds pop the list again and again walks each kept entry at most twice (a flush's move,
//! then the drain that keeps it in the run). Every link is at the list's tail, after them; an
//! unlink of the last kept entry moves the mark to its predecessor. Beside the mark, the earliest
//! tick on the list, lowered by every link onto it, set by each drain, and left as it is by an
//! unlink (so it may be earlier than any entry's).

use super::super::life::ListCode;
use super::super::slab::{Slab, NIL};
use super::{BucketCode, Entry, List, Offer, Wheel};

/// The overdue list's marks (module docs, "Kept").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Kept {
    /// The last entry of the list's kept run, which opens it (`NIL`: none).
    pub(super) tail: u32,
    /// Every entry of the kept run has a stamp above it.
    pub(super) above: u64,
    /// No entry of the kept run has a tick before it (`u64::MAX` if the run is empty).
    pub(super) earliest_kept: u64,
    /// No entry of the list has a tick before it (`u64::MAX` once a drain empties it).
    pub(super) earliest: u64,
    /// Entries linked since the last drain, saturating: at least as many as follow the kept run.
    pub(super) linked: u32,
}

impl Kept {
    /// An empty list's marks.
    pub(super) const EMPTY: Kept =
        Kept { tail: NIL, above: u64::MAX, earliest_kept: u64::MAX, earliest: u64::MAX, linked: 0 };
}

impl<P> Wheel<P> {
    /// Links the occupied slot `index`, its own deadline passed, at the tail of the overdue list:
    /// the list's offer at the time, for the caller to make for the next round, if the list was
    /// not offered since its last drain (module docs, "Rounds").
    #[inline]
    pub(super) fn link_overdue(&mut self, index: u32) -> Option<Offer> {
        self.link_at_overdue_tail(index);
        let offer = self.overdue_offer();
        if offer.is_some() {
            self.overdue_offered = true;
        }
        offer
    }

    /// Moves the entries of bucket `slot` of `level`, left behind the time with a round of the
    /// past, to the overdue list (module docs, "A bucket behind the time"): all are due. A split
    /// bucket's stages are joined back into its list first (`split.rs`, "Unsplit"). The
    /// list's offer at the time, for the caller to make so that the round under way takes it, if
    /// no such offer was made since the list's last drain, whatever offer for the next round is
    /// pending (module docs, "Rounds").
    #[cold]
    pub(super) fn overdue_behind(&mut self, level: usize, slot: usize) -> Option<Offer> {
        if self.levels.get(level, slot).is_some_and(|bucket| bucket.split != 0) {
            self.unsplit(level, slot);
        }
        let mut at = self.take_list(level, slot);
        if fault!("shard_core_moved_overdue_not_offered") {
            let mut offer = None;
            while at != NIL {
                let next = self.slab.slot(at).next;
                offer = offer.or(self.link_overdue(at));
                at = next;
            }
            return offer;
        }
        let moved = at != NIL;
        while at != NIL {
            debug_assert!(
                self.slab.entry(at).when.tick() <= self.time,
                "a round of the past holds a due entry"
            );
            let next = self.slab.slot(at).next;
            self.link_at_overdue_tail(at);
            at = next;
        }
        self.overdue_offered |= moved;
        let first = moved && !std::mem::replace(&mut self.moved_offered, true);
        first.then_some(Offer { expiration: self.time, bucket: BucketCode::OVERDUE })
    }

    /// Links the occupied slot `index` at the overdue list's tail, after its kept run, its tick
    /// lowering the list's earliest (module docs, "Kept").
    #[inline]
    pub(super) fn link_at_overdue_tail(&mut self, index: u32) {
        link(&mut self.slab, &mut self.overdue, index, ListCode::OVERDUE);
        let tick = self.slab.entry(index).when.tick();
        self.kept.earliest = self.kept.earliest.min(tick);
        self.kept.linked = self.kept.linked.saturating_add(1);
    }

    /// Takes the list of the unsplit bucket `slot` of `level` (which exists) whole: its ends and
    /// count, and its entries out of their level's count, emptied in O(1). Its first entry (`NIL`
    /// if none): the entries stay chained by their links, for the caller to walk once and place
    /// each (`flush.rs`, "One pass"), none unlinked on its own.
    #[inline]
    pub(super) fn take_list(&mut self, level: usize, slot: usize) -> u32 {
        let bucket = self.levels.get_mut(level, slot).expect("a named bucket exists");
        debug_assert_eq!(bucket.split, 0, "a split bucket's list holds no link");
        let list = std::mem::replace(&mut bucket.list, List::EMPTY);
        self.per_level[level] -= list.len;
        if level == 0 {
            self.level0_taken(slot);
        }
        list.head
    }

    /// Unlinks the occupied slot `index` from its list (it is on one: not held), found by its
    /// life word's list code and, for a level, its deadline's tick.
    #[inline(always)]
    pub(super) fn unlink(&mut self, index: u32) {
        let slot = self.slab.slot(index);
        let (prev, next) = (slot.prev, slot.next);
        let code = slot.life.list();
        // The run of a level-0 list keeps its last entry (`sorted_run.rs`).
        self.run.unlinked(index, prev);
        let level = code.as_level().map(|level| {
            let tick = slot.entry.as_ref().expect("a linked slot is occupied").when.tick();
            (level, self.levels.slot_of(level, tick))
        });
        if next != NIL {
            self.slab.slot_mut(next).prev = prev;
        }
        if prev != NIL {
            self.slab.slot_mut(prev).next = next;
        }
        let list: &mut List = match level {
            Some((level, slot)) => {
                self.per_level[level] -= 1;
                // Its bucket's list, or its stage's if the bucket is split (`split.rs`).
                let bucket = self.levels.get_mut(level, slot).expect("a named bucket exists");
                if bucket.split != 0 {
                    return self.unlink_staged(index, (level, slot), (prev, next));
                }
                &mut bucket.list
            }
            None => {
                debug_assert_eq!(code, ListCode::OVERDUE, "slot {index} is on no list");
                if self.kept.tail == index {
                    // The kept run opens the list: its new last entry (module docs, "Kept").
                    self.kept.tail = prev;
                }
                &mut self.overdue
            }
        };
        if next == NIL {
            list.tail = prev;
        }
        if prev == NIL {
            list.head = next;
        }
        list.len -= 1;
    }
}

/// Links the occupied slot `index` at the tail of `list`, the list `code` names.
#[inline]
pub(super) fn link<P>(slab: &mut Slab<Entry<P>>, list: &mut List, index: u32, code: ListCode) {
    let tail = std::mem::replace(&mut list.tail, index);
    if tail == NIL {
        list.head = index;
    } else {
        slab.slot_mut(tail).next = index;
    }
    list.len += 1;
    let slot = slab.slot_mut(index);
    (slot.prev, slot.next) = (tail, NIL);
    slot.life = slot.life.on(code);
}
