//! A slot's life word: who occupies it, where its entry is, and how the last one ended, in one
//! `u64` (`stamp << 8 | list << 2 | status`).
//!
//! * **Stamp** (56 bits): the caller's number for the entry, unique among the entries one wheel
//!   is ever given (a timer's stamps, `entry/stamps.rs`). It is the slot's generation, so a key
//!   (slot, stamp) names one occupant and a key of an earlier one never matches a later one
//!   (their stamps differ), and the tie-break of the batch order (`deadline.rs`, "Ties").
//! * **ListCode** (6 bits): the level whose bucket holds the entry (`0..=55`: a wheel of two buckets
//!   a level needs 56 for ticks up to `MAX_TICK`; the bucket itself follows from the level and the
//!   deadline's tick), [`ListCode::OVERDUE`], [`ListCode::HELD`] (unlinked, held by a batch until claimed),
//!   or [`ListCode::NONE`] (on no list: vacant, or occupied and not yet linked).
//! * **Status** (2 bits): [`Status::Pending`] while occupied; once vacated, how the entry ended
//!   ([`Status::Fired`], [`Status::Cancelled`], [`Status::Abandoned`]), kept with the stamp until
//!   the slot is reused, so that a key still reads how its entry ended until then. A slot never
//!   occupied reads nothing.

use std::fmt;

/// Bits below the stamp.
const STAMP_SHIFT: u32 = 8;
/// Bits below the list code.
const LIST_SHIFT: u32 = 2;
/// The list code's mask, in place.
const LIST_MASK: u64 = 0x3f << LIST_SHIFT;
/// The status bits.
const STATUS_MASK: u64 = 0x3;

/// The most stamps a wheel takes: stamps are below this (56 bits).
pub(crate) const STAMP_LIMIT: u64 = 1 << (u64::BITS - STAMP_SHIFT);

/// How an entry ended, or that it has not: the vocabulary of `TimerHandle`'s `is_pending`,
/// `is_fired` and `is_cancelled`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// In the wheel: on a list, or held by a batch until its claim.
    Pending = 0,
    /// Claimed by its batch, to run.
    Fired = 1,
    /// Removed (a cancel) before it was claimed.
    Cancelled = 2,
    /// Drained (a shutdown) before it was claimed or removed.
    Abandoned = 3,
}

impl Status {
    /// Indexed by the status bits.
    const ALL: [Status; 4] = [Status::Pending, Status::Fired, Status::Cancelled, Status::Abandoned];
}

/// A list code (module docs): a level, or one of the codes of no level.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct ListCode(u8);

impl ListCode {
    /// The levels a list code names: `0..LEVELS`.
    pub(super) const LEVELS: usize = 56;
    /// The overdue list.
    pub(super) const OVERDUE: ListCode = ListCode(61);
    /// Held by a batch, on no list.
    pub(super) const HELD: ListCode = ListCode(62);
    /// On no list, not held.
    pub(super) const NONE: ListCode = ListCode(63);

    /// The code of `level` (below [`LEVELS`](ListCode::LEVELS)).
    #[inline]
    pub(super) fn level(level: usize) -> ListCode {
        debug_assert!(level < ListCode::LEVELS, "level {level} has no list code");
        ListCode(level as u8)
    }

    /// The level it names, `None` for the codes of no level.
    #[inline]
    pub(super) fn as_level(self) -> Option<usize> {
        (usize::from(self.0) < ListCode::LEVELS).then_some(usize::from(self.0))
    }
}

impl fmt::Debug for ListCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ListCode::OVERDUE => f.write_str("Overdue"),
            ListCode::HELD => f.write_str("Held"),
            ListCode::NONE => f.write_str("None"),
            ListCode(level) => write!(f, "Level({level})"),
        }
    }
}

/// A slot's life word (module docs).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Life(u64);

impl Life {
    /// A slot never occupied: reads no status.
    pub(super) const FRESH: Life = Life(ListCode::NONE.bits());

    /// An occupant of `stamp` (below [`STAMP_LIMIT`]), pending, on no list yet.
    #[inline]
    pub(super) fn pending(stamp: u64) -> Life {
        debug_assert!(stamp < STAMP_LIMIT, "stamp {stamp} beyond 56 bits");
        Life(stamp << STAMP_SHIFT | ListCode::NONE.bits())
    }

    /// The stamp of the occupant, or of the last one.
    #[inline]
    pub(super) fn stamp(self) -> u64 {
        self.0 >> STAMP_SHIFT
    }

    /// Whether it names the occupant (or last occupant) `stamp`.
    #[inline]
    pub(super) fn is(self, stamp: u64) -> bool {
        self.0 >> STAMP_SHIFT == stamp
    }

    /// The list it is on.
    #[inline]
    pub(super) fn list(self) -> ListCode {
        ListCode(((self.0 & LIST_MASK) >> LIST_SHIFT) as u8)
    }

    /// The same occupant on `list`.
    #[inline]
    pub(super) fn on(self, list: ListCode) -> Life {
        Life(self.0 & !LIST_MASK | list.bits())
    }

    /// The occupant ended as `status`: on no list, the stamp kept until the slot's reuse.
    #[inline]
    pub(super) fn ended(self, status: Status) -> Life {
        debug_assert!(status != Status::Pending);
        Life(self.0 & !(LIST_MASK | STATUS_MASK) | ListCode::NONE.bits() | status as u64)
    }

    /// The status bits: [`Status::Pending`] for an occupant, and for a slot never occupied.
    #[inline]
    pub(super) fn status(self) -> Status {
        Status::ALL[(self.0 & STATUS_MASK) as usize]
    }
}

impl ListCode {
    #[inline]
    const fn bits(self) -> u64 {
        (self.0 as u64) << LIST_SHIFT
    }
}

impl fmt::Debug for Life {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Life")
            .field("stamp", &self.stamp())
            .field("list", &self.list())
            .field("status", &self.status())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fields_keep_to_their_bits() {
        let stamp = STAMP_LIMIT - 1;
        let life = Life::pending(stamp);
        assert_eq!((life.stamp(), life.list(), life.status()), (stamp, ListCode::NONE, Status::Pending));
        for level in [0, 1, ListCode::LEVELS - 1] {
            let on = life.on(ListCode::level(level));
            assert_eq!(
                (on.stamp(), on.list().as_level(), on.status()),
                (stamp, Some(level), Status::Pending)
            );
        }
        for list in [ListCode::OVERDUE, ListCode::HELD, ListCode::NONE] {
            assert_eq!((life.on(list).list(), life.on(list).list().as_level()), (list, None));
        }
        for status in [Status::Fired, Status::Cancelled, Status::Abandoned] {
            let ended = life.on(ListCode::HELD).ended(status);
            assert_eq!((ended.stamp(), ended.list(), ended.status()), (stamp, ListCode::NONE, status));
            assert!(ended.is(stamp) && !ended.is(stamp - 1));
        }
        assert_eq!((Life::FRESH.stamp(), Life::FRESH.status()), (0, Status::Pending));
    }
}
