//! The wheel's lists: linking a slot at a list's tail, unlinking it from wherever its life word
//! and deadline say it is (the module docs of `wheel/`, "Where an entry is"), and the moves onto
//! the overdue list. A link counts the entry into its list and an unlink out of it, and out of
//! its level's count (`Wheel::file` and the flush's `keep` count it into that one: `stats.rs`).

use super::super::life::ListCode;
use super::super::slab::{Slab, NIL};
use super::{BucketCode, Entry, Levels, List, Offer, Wheel};

impl<P> Wheel<P> {
    /// Links the occupied slot `index`, its own deadline passed, at the tail of the overdue list:
    /// the list's offer at the time, for the caller to make for the next round, if the list was
    /// not offered since its last drain (module docs, "Rounds").
    #[inline]
    pub(super) fn link_overdue(&mut self, index: u32) -> Option<Offer> {
        link(&mut self.slab, &mut self.overdue, index, ListCode::OVERDUE);
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
        if fault!("shard_core_moved_overdue_not_offered") {
            let mut offer = None;
            while let Some(index) = self.pop_front(BucketCode::encode(level, slot)) {
                offer = offer.or(self.link_overdue(index));
            }
            return offer;
        }
        let mut moved = false;
        while let Some(index) = self.pop_front(BucketCode::encode(level, slot)) {
            debug_assert!(
                self.slab.entry(index).when.tick() <= self.time,
                "a round of the past holds a due entry"
            );
            link(&mut self.slab, &mut self.overdue, index, ListCode::OVERDUE);
            moved = true;
        }
        self.overdue_offered |= moved;
        let first = moved && !std::mem::replace(&mut self.moved_offered, true);
        first.then_some(Offer { expiration: self.time, bucket: BucketCode::OVERDUE })
    }

    /// Unlinks the first entry of the list `code` names (its bucket exists): its slot, `None`
    /// if the list is empty.
    #[inline]
    pub(super) fn pop_front(&mut self, code: BucketCode) -> Option<u32> {
        self.pop_front_until(code, NIL)
    }

    /// Unlinks the first entry of the list `code` names (its bucket exists) unless it is `stop`:
    /// its slot, `None` if the list is empty or starts at `stop`.
    #[inline]
    pub(super) fn pop_front_until(&mut self, code: BucketCode, stop: u32) -> Option<u32> {
        let head = self.list_mut(code).head;
        (head != NIL && head != stop).then(|| {
            self.unlink(head);
            head
        })
    }

    /// The list `code` names: the overdue list, or its bucket's (which exists).
    #[inline]
    pub(super) fn list_mut(&mut self, code: BucketCode) -> &mut List {
        list_of(&mut self.levels, &mut self.overdue, bucket_of(code))
    }

    /// Unlinks the occupied slot `index` from its list (it is on one: not held), found by its
    /// life word's list code and, for a level, its deadline's tick.
    #[inline]
    pub(super) fn unlink(&mut self, index: u32) {
        let slot = self.slab.slot(index);
        let (prev, next) = (slot.prev, slot.next);
        let code = slot.life.list();
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

/// The bucket `code` names as (level, slot), `None` for the overdue list.
#[inline]
pub(super) fn bucket_of(code: BucketCode) -> Option<(usize, usize)> {
    (code != BucketCode::OVERDUE).then(|| code.decode())
}

/// The list of bucket `(level, slot)` of `levels` (which exists), or `overdue` for `None`: the one
/// look-up of a list by its name, apart from the slab so that a link can write both.
#[inline]
pub(super) fn list_of<'a>(
    levels: &'a mut Levels,
    overdue: &'a mut List,
    at: Option<(usize, usize)>,
) -> &'a mut List {
    match at {
        Some((level, slot)) => &mut levels.get_mut(level, slot).expect("a named bucket exists").list,
        None => overdue,
    }
}
