//! `TimingWheel`: the hierarchy of levels, and where a deadline goes in it.
//!
//! Level 0 has `wheel_size` slots of one tick each. Level `k` has `wheel_size` slots of
//! `wheel_size^k` ticks: it is the **overflow wheel** of level `k - 1`, covering `wheel_size` times
//! its span. Levels are created lazily, exactly once (a `OnceLock` each), the first time a deadline
//! needs them, and are never torn down. The top level is the first whose span no longer fits in a
//! `u64` of ticks; it covers every deadline up to `MAX_DEADLINE_TICK`, so any deadline that has a
//! tick has a place.
//!
//! ## Where a deadline goes (`place`)
//!
//! Relative to a *base* tick (the current time of whoever is adding), a deadline goes to the
//! finest level `k` whose window `[base rounded down to wheel_size^k, + wheel_size^(k+1))` contains
//! it, in slot `(deadline / wheel_size^k) % wheel_size`. That bucket's **expiration** is the start of
//! the deadline's round in that slot, `(deadline / wheel_size^k) * wheel_size^k`, which is never after
//! the deadline. A deadline at or before the base is **due**.
//!
//! Worked example, tick 10 ms and 60 slots (the seeds' three-level wheel: 600 ms / 36 s / 36 min), base
//! 0: a task at 500 ms (tick 50) goes to level 0, slot 50, expiring at tick 50; one at 5 s (tick 500)
//! goes to level 1 (slots of 60 ticks), slot 8, expiring at tick 480. When that bucket expires at
//! 4.8 s it is flushed and the entry re-added with base 480: now 20 ticks away, it lands in level 0,
//! slot 20 (500 % 60), expiring at tick 500, and fires then. That is the cascade.
//!
//! The wheel itself holds no clock: the timer passes the base. Schedulers pass the current tick;
//! the driver passes the expiration of the bucket it is flushing, so entries cascade in deadline order.

use std::fmt;

use crate::bucket::{Added, TimerTaskList};
use crate::entry::EntryRef;
use crate::sync::{Arc, AtomicBool, OnceLock};

/// Where a deadline belongs relative to a base tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// The deadline is at or before the base: fire it.
    Due,
    /// Bucket `slot` of `level`, whose round starts at `expiration`.
    Slot { level: usize, slot: usize, expiration: u64 },
}

/// Ticks per slot of `level`: `wheel_size^level`, if it fits in a `u64`.
pub(crate) fn slot_ticks(wheel_size: u64, level: usize) -> Option<u64> {
    let exp = u32::try_from(level).ok()?;
    wheel_size.checked_pow(exp)
}

/// How many levels a wheel of `wheel_size` slots needs to cover every `u64` tick.
pub(crate) fn max_levels(wheel_size: u64) -> usize {
    (0..).take_while(|&level| slot_ticks(wheel_size, level).is_some()).count()
}

/// The finest level whose window around `base` contains `deadline`, and the slot there: the
/// definition, written for clarity. The timer uses `LevelTable::place`, the same arithmetic
/// precomputed; the unit tests check that the two agree.
#[cfg(test)]
pub(crate) fn place(wheel_size: u64, base: u64, deadline: u64) -> Placement {
    if deadline <= base {
        return Placement::Due;
    }
    let mut level = 0;
    while let Some(ticks) = slot_ticks(wheel_size, level) {
        let window_start = base - base % ticks;
        let fits = match ticks.checked_mul(wheel_size).and_then(|span| window_start.checked_add(span)) {
            Some(window_end) => deadline < window_end,
            None => true, // the top level: its window reaches past every u64 tick
        };
        if fits {
            let round = deadline / ticks;
            return Placement::Slot { level, slot: (round % wheel_size) as usize, expiration: round * ticks };
        }
        level += 1;
    }
    unreachable!("the top level covers every deadline")
}

/// Per-level arithmetic, precomputed: placing a deadline is on every schedule and every cascade.
///
/// For a power-of-two wheel size (the default) every division is a mask; otherwise the loop divides
/// by each level's precomputed slot length. Either way the result is the reference `place`'s (the
/// unit tests compare the two).
struct LevelTable {
    wheel_size: u64,
    /// `log2(wheel_size)` when it is a power of two.
    shift: Option<u32>,
    /// Ticks per slot of each level.
    slot_ticks: Box<[u64]>,
    /// Ticks per rotation of each level; `None` for the top level, whose span exceeds `u64`.
    spans: Box<[Option<u64>]>,
}

impl LevelTable {
    fn new(wheel_size: u64) -> Self {
        let levels = max_levels(wheel_size);
        let slot_ticks: Box<[u64]> = (0..levels).map(|l| slot_ticks(wheel_size, l).unwrap()).collect();
        let spans = slot_ticks.iter().map(|t| t.checked_mul(wheel_size)).collect();
        let shift = wheel_size.is_power_of_two().then(|| wheel_size.trailing_zeros());
        LevelTable { wheel_size, shift, slot_ticks, spans }
    }

    fn place(&self, base: u64, deadline: u64) -> Placement {
        if deadline <= base {
            return Placement::Due;
        }
        match self.shift {
            Some(shift) => Self::place_pow2(shift, base, deadline),
            None => self.place_general(base, deadline),
        }
    }

    /// Power-of-two wheel: level `k`'s slots are `2^(k·shift)` ticks, so every step is a shift.
    fn place_pow2(shift: u32, base: u64, deadline: u64) -> Placement {
        let mut level = 0;
        let mut tick_bits = 0; // log2 of this level's ticks per slot
        loop {
            let span_bits = tick_bits + shift;
            let window_start = base >> tick_bits << tick_bits;
            if span_bits >= 64 || deadline - window_start < 1 << span_bits {
                let round = deadline >> tick_bits;
                let slot = round & ((1 << shift) - 1);
                return Placement::Slot { level, slot: slot as usize, expiration: round << tick_bits };
            }
            level += 1;
            tick_bits = span_bits;
        }
    }

    fn place_general(&self, base: u64, deadline: u64) -> Placement {
        for (level, (&ticks, &span)) in self.slot_ticks.iter().zip(self.spans.iter()).enumerate() {
            let window_start = base - base % ticks;
            if span.map_or(true, |span| deadline - window_start < span) {
                let round = deadline / ticks;
                let slot = round % self.wheel_size;
                return Placement::Slot { level, slot: slot as usize, expiration: round * ticks };
            }
        }
        unreachable!("the top level covers every deadline")
    }
}

/// One level: `wheel_size` buckets, or none once closed by shutdown before it was ever needed.
struct Level {
    buckets: Box<[Arc<TimerTaskList>]>,
}

/// The hierarchy of levels (Kafka's `TimingWheel` and its chain of overflow wheels).
pub(crate) struct TimingWheel {
    wheel_size: u64,
    table: LevelTable,
    levels: Box<[OnceLock<Level>]>,
}

/// What [`TimingWheel::add`] did with an entry.
#[derive(Debug)]
pub(crate) enum AddOutcome {
    /// The entry is due relative to the base; the caller fires it.
    Due(EntryRef),
    /// Inserted into a bucket that must now be queued at this expiration.
    Queue(u64, Arc<TimerTaskList>),
    /// Inserted into a bucket that is already queued early enough. Nothing more to do.
    Done,
    /// Not inserted: the entry is no longer pending (cancelled in transit).
    NotPending,
    /// Not inserted: the timer is shutting down (only when the caller passed the flag).
    ShutDown,
}

impl TimingWheel {
    pub(crate) fn new(wheel_size: u64) -> Self {
        debug_assert!(wheel_size >= 2);
        let levels = (0..max_levels(wheel_size)).map(|_| OnceLock::new()).collect();
        TimingWheel { wheel_size, table: LevelTable::new(wheel_size), levels }
    }

    pub(crate) fn wheel_size(&self) -> u64 {
        self.wheel_size
    }

    /// Number of levels created so far.
    pub(crate) fn levels_in_use(&self) -> usize {
        self.levels.iter().filter(|level| level.get().is_some_and(|l| !l.buckets.is_empty())).count()
    }

    /// The bucket at `level`/`slot`, creating the level on first use (exactly once). `None` if the
    /// level was closed by [`close_levels`](TimingWheel::close_levels) before it was ever used.
    pub(crate) fn bucket(&self, level: usize, slot: usize) -> Option<&Arc<TimerTaskList>> {
        let level_buckets = self.levels[level].get_or_init(|| Level {
            buckets: (0..self.wheel_size as usize)
                .map(|slot| Arc::new(TimerTaskList::new(level, slot)))
                .collect(),
        });
        level_buckets.buckets.get(slot)
    }

    /// Adds an entry relative to `base` (see the module docs). With `shut_down`, refuses the entry
    /// once the flag is set (see `TimerTaskList::add`).
    pub(crate) fn add(&self, entry: EntryRef, base: u64, shut_down: Option<&AtomicBool>) -> AddOutcome {
        match self.table.place(base, entry.header().deadline_tick) {
            Placement::Due => AddOutcome::Due(entry),
            Placement::Slot { level, slot, expiration } => {
                self.insert(entry, level, slot, expiration, shut_down)
            }
        }
    }

    /// Adds an entry that is already due to the level-0 bucket of its deadline, so that the next
    /// advance of the clock flushes and fires it (used when scheduling: tasks never run inside
    /// `schedule`).
    pub(crate) fn add_due(&self, entry: EntryRef, shut_down: Option<&AtomicBool>) -> AddOutcome {
        let deadline = entry.header().deadline_tick;
        let slot = (deadline % self.wheel_size) as usize;
        self.insert(entry, 0, slot, deadline, shut_down)
    }

    fn insert(
        &self,
        entry: EntryRef,
        level: usize,
        slot: usize,
        expiration: u64,
        shut_down: Option<&AtomicBool>,
    ) -> AddOutcome {
        let Some(bucket) = self.bucket(level, slot) else {
            return AddOutcome::ShutDown; // the level was closed by shutdown
        };
        match TimerTaskList::add(bucket, entry, expiration, shut_down) {
            Added::Inserted { queue: true } => AddOutcome::Queue(expiration, Arc::clone(bucket)),
            Added::Inserted { queue: false } => AddOutcome::Done,
            Added::NotPending => AddOutcome::NotPending,
            Added::ShutDown => AddOutcome::ShutDown,
        }
    }

    /// For shutdown: closes every level not yet created (so none can be created any more) and
    /// returns every bucket of the levels that exist. Together with the flag checked under each
    /// bucket lock, this guarantees no scheduler inserts where the drain does not look.
    #[cfg(not(all(delaywheel_loom, delaywheel_loom_fault = "drain_skips_uncreated_levels")))]
    pub(crate) fn close_levels(&self) -> impl Iterator<Item = &Arc<TimerTaskList>> {
        self.levels
            .iter()
            .map(|level| level.get_or_init(|| Level { buckets: Box::new([]) }))
            .flat_map(|level| level.buckets.iter())
    }

    /// Seeded bug for the loom suite only (docs/loom.md): the drain looks at the levels that exist
    /// and closes none, so a level created meanwhile holds entries the drain never sees.
    #[cfg(all(delaywheel_loom, delaywheel_loom_fault = "drain_skips_uncreated_levels"))]
    pub(crate) fn close_levels(&self) -> impl Iterator<Item = &Arc<TimerTaskList>> {
        self.levels.iter().filter_map(|level| level.get()).flat_map(|level| level.buckets.iter())
    }

    /// Every bucket of every level created so far.
    #[cfg(test)]
    pub(crate) fn buckets(&self) -> impl Iterator<Item = &Arc<TimerTaskList>> {
        self.levels.iter().filter_map(|level| level.get()).flat_map(|level| level.buckets.iter())
    }
}

impl fmt::Debug for TimingWheel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimingWheel")
            .field("wheel_size", &self.wheel_size)
            .field("levels_in_use", &self.levels_in_use())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_ticks_are_powers_of_the_wheel_size() {
        assert_eq!(slot_ticks(20, 0), Some(1));
        assert_eq!(slot_ticks(20, 1), Some(20));
        assert_eq!(slot_ticks(20, 3), Some(8_000));
        assert_eq!(slot_ticks(2, 63), Some(1 << 63));
        assert_eq!(slot_ticks(2, 64), None);
    }

    #[test]
    fn level_counts_cover_u64() {
        assert_eq!(max_levels(2), 64);
        assert_eq!(max_levels(3), 41); // 3^40 < 2^64 <= 3^41
        assert_eq!(max_levels(1 << 32), 2);
        assert_eq!(max_levels(u64::MAX), 2);
    }

    #[test]
    fn seeds_three_level_example() {
        // tick 10 ms, 60 slots: level spans 600 ms / 36 s / 36 min.
        assert_eq!(place(60, 0, 50), Placement::Slot { level: 0, slot: 50, expiration: 50 });
        assert_eq!(place(60, 0, 500), Placement::Slot { level: 1, slot: 8, expiration: 480 });
        assert_eq!(place(60, 480, 500), Placement::Slot { level: 0, slot: 20, expiration: 500 });
        assert_eq!(place(60, 0, 2_000), Placement::Slot { level: 1, slot: 33, expiration: 1_980 });
        assert_eq!(place(60, 0, 4_000), Placement::Slot { level: 2, slot: 1, expiration: 3_600 });
        assert_eq!(place(60, 0, 240_000), Placement::Slot { level: 3, slot: 1, expiration: 216_000 });
        assert_eq!(place(60, 500, 500), Placement::Due);
        assert_eq!(place(60, 501, 500), Placement::Due);
    }

    #[test]
    fn window_is_aligned_to_the_level() {
        // base 59, level 0 window is [59, 119): deadline 118 still level 0, slot 118 % 60.
        assert_eq!(place(60, 59, 118), Placement::Slot { level: 0, slot: 58, expiration: 118 });
        // level 1 window at base 59 is [0, 3600).
        assert_eq!(place(60, 59, 119), Placement::Slot { level: 1, slot: 1, expiration: 60 });
        assert_eq!(place(60, 59, 3_599), Placement::Slot { level: 1, slot: 59, expiration: 3_540 });
        assert_eq!(place(60, 59, 3_600), Placement::Slot { level: 2, slot: 1, expiration: 3_600 });
    }

    #[test]
    fn expiration_never_after_deadline_and_cascades_reach_due() {
        for wheel_size in [2u64, 3, 20, 60, 64] {
            for base in [0u64, 1, 19, 12_345] {
                for deadline in [base + 1, base + 2, base + 61, base + 4_000, base + 10_000_000, u64::MAX - 1]
                {
                    // Follow the cascade: each flush re-adds at the bucket's expiration.
                    let mut at = base;
                    let mut hops = 0;
                    loop {
                        match place(wheel_size, at, deadline) {
                            Placement::Due => break,
                            Placement::Slot { expiration, level, .. } => {
                                assert!(expiration <= deadline);
                                assert!(expiration > at, "level {level} bucket is already due");
                                at = expiration;
                                hops += 1;
                                assert!(hops <= 66, "cascade does not converge");
                            }
                        }
                    }
                    assert_eq!(at, deadline, "fires exactly at its deadline tick");
                }
            }
        }
    }

    #[test]
    fn the_precomputed_table_places_exactly_like_the_reference() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for wheel_size in [2u64, 3, 4, 20, 60, 64, 512, 1000, 65_536] {
            let table = LevelTable::new(wheel_size);
            for _ in 0..20_000 {
                let base = next() >> (next() % 64);
                let deadline = match next() % 3 {
                    0 => base.saturating_add(next() % 100_000),
                    1 => base.saturating_add(next() >> (next() % 64)),
                    _ => next() >> (next() % 64),
                }
                .min(u64::MAX - 1);
                assert_eq!(
                    table.place(base, deadline),
                    place(wheel_size, base, deadline),
                    "wheel {wheel_size} base {base} deadline {deadline}"
                );
            }
        }
    }

    #[test]
    fn top_level_slots_do_not_alias() {
        // Wheel of 3: the top level's slots are 3^40 ticks; every u64 deadline has a distinct round.
        let top = max_levels(3) - 1;
        match place(3, 0, u64::MAX - 1) {
            Placement::Slot { level, slot, .. } => {
                assert_eq!(level, top);
                assert!(slot < 3);
            }
            Placement::Due => panic!("far deadline cannot be due"),
        }
    }

    #[test]
    fn overflow_levels_are_created_lazily_once_and_reused() {
        let wheel = TimingWheel::new(3);
        assert_eq!(wheel.levels_in_use(), 0);
        let a = Arc::clone(wheel.bucket(0, 1).unwrap());
        assert_eq!(wheel.levels_in_use(), 1);
        let b = Arc::clone(wheel.bucket(2, 2).unwrap());
        assert_eq!(wheel.levels_in_use(), 2, "level 1 is not needed, so not created");
        assert!(Arc::ptr_eq(&a, wheel.bucket(0, 1).unwrap()));
        assert!(Arc::ptr_eq(&b, wheel.bucket(2, 2).unwrap()));
        assert_eq!(wheel.levels_in_use(), 2);
        assert_eq!(wheel.buckets().count(), 6);
        // Shutdown closes the levels never created: they can no longer be created.
        assert_eq!(wheel.close_levels().count(), 6);
        assert!(wheel.bucket(1, 0).is_none());
        assert!(wheel.bucket(2, 2).is_some());
        assert_eq!(wheel.levels_in_use(), 2);
    }
}
