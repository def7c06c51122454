//! Placement: where a deadline goes in the wheel relative to a base tick, and in which stage of
//! its bucket. Pure arithmetic: no bucket, lock or clock.
//!
//! ## Where a deadline goes (`place`)
//!
//! Relative to a *base* tick (the current time of whoever is adding), a deadline goes to the
//! finest level `k` whose window `[base rounded down to wheel_size^k, + wheel_size^(k+1))` contains
//! it, in slot `(deadline / wheel_size^k) % wheel_size`. That bucket's **expiration** is the start of
//! the deadline's round in that slot, `(deadline / wheel_size^k) * wheel_size^k`, which is never after
//! the deadline. A deadline at or before the base is **due**.
//!
//! Worked example, tick 10 ms and 60 slots (a tick-driven three-level wheel: 600 ms / 36 s / 36 min), base
//! 0: a task at 500 ms (tick 50) goes to level 0, slot 50, expiring at tick 50; one at 5 s (tick 500)
//! goes to level 1 (slots of 60 ticks), slot 8, expiring at tick 480. When that bucket expires at
//! 4.8 s it is flushed and the entry re-added with base 480: now 20 ticks away, it lands in level 0,
//! slot 20 (500 % 60), expiring at tick 500, and fires then. That is the cascade.
//!
//! ## Stages: cascading ahead of time, a little at a time
//!
//! Kafka cascades a coarse bucket when its round starts, all at once. With uniformly spread
//! deadlines one level-1 bucket can hold half of all pending timers (a wheel of 512 one-millisecond
//! slots, a million timers due within a second: 500,000 entries re-added in one flush, 140 ms during
//! which nothing fires). Here each bucket above level 0 is split into [`STAGES`] **stages** by where
//! the deadline falls in the round (stage `j` holds the `j`-th quarter), and a stage may be
//! cascaded *before* its round starts: as soon as every deadline in it fits the next finer level's
//! window, at [`StagePlan::opens`], which for stage `j` of a round starting at `e` with `t`-tick
//! slots is `e - t + (j + 1)·t/4`, up to three quarters of a rotation early. A bucket that holds
//! only a few entries waits for its round, as in Kafka (so a lightly loaded timer cascades exactly
//! when Kafka's would); a big one is split into its stages, each visited from `opens` on, in
//! chunks, one per tick, while its range (`due`) is still ahead of the wheel's time, so firing due
//! buckets never waits behind a cascade (`shard/wheel/split.rs` has the split and the visits).
//!
//! Worked example, wheel 512, tick 1 ms, base 0, deadline 700: level 1 (512-tick slots), slot 1,
//! round 512, stage `(700 - 512) / 128 = 1` (ticks 640..767), open from `512 - 512 + 2·128 = 256`:
//! at base 256 the level-0 window is `[256, 768)`, which holds the whole stage.

/// Where a deadline belongs relative to a base tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// The deadline is at or before the base: fire it.
    Due,
    /// Bucket `slot` of `level`, in `stage` of that bucket (whose round starts at `stage.round`).
    Slot { level: usize, slot: usize, stage: StagePlan },
}

/// Stages per bucket above level 0 (fewer if the wheel has fewer slots); see the module docs.
pub(crate) const STAGES: u64 = 4;

/// Which stage of its bucket a deadline goes to, and the window in which the driver cascades it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StagePlan {
    /// The stage's index in its bucket (always 0 at level 0).
    pub(crate) index: usize,
    /// The start of the bucket's round: when Kafka would flush it.
    pub(crate) round: u64,
    /// The first tick at which every deadline of the stage fits the next finer level: from then on
    /// the stage may be cascaded (at level 0: the round start, when its entries are due).
    pub(crate) opens: u64,
    /// The first tick of the stage's range: it must be cascaded before the cursor passes it.
    pub(crate) due: u64,
}

impl StagePlan {
    /// The one stage of a level-0 bucket whose round starts at `round`, opened, and due, at its
    /// round (its tick): a level-0 bucket is never split.
    pub(crate) fn level0_first(round: u64) -> StagePlan {
        StagePlan { index: 0, round, opens: round, due: round }
    }
}

/// The stage of `deadline` in a bucket of `level` whose round starts at `round`, by definition (the
/// general arithmetic; `LevelTable` has a shift-only path for power-of-two wheels).
///
/// Stage `j` of `stages` covers the offsets `[ceil(j·t/stages), ceil((j+1)·t/stages))` of the round
/// (`t` ticks per slot). It may be cascaded once its last deadline fits the finer level's window,
/// `[b rounded down to t/wheel_size, + t)`: from the first multiple of `t/wheel_size` at or after
/// `last + 1 - t`.
pub(super) fn stage_plan(wheel_size: u64, stages: u64, level: usize, round: u64, deadline: u64) -> StagePlan {
    if level == 0 {
        return StagePlan::level0_first(round);
    }
    let t = u128::from(slot_ticks(wheel_size, level).expect("a level's slot length fits u64"));
    let finer = t / u128::from(wheel_size);
    let stages = u128::from(stages);
    let index = u128::from(deadline - round) * stages / t;
    let start = u128::from(round) + (index * t).div_ceil(stages);
    let end = u128::from(round) + ((index + 1) * t).div_ceil(stages);
    let opens = end.saturating_sub(t).div_ceil(finer) * finer;
    // `start <= deadline` and `opens <= start`, both below 2^64 (see the unit tests).
    StagePlan { index: index as usize, round, opens: opens as u64, due: start as u64 }
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

/// The finest level whose window around `base` contains `deadline`, and the slot and stage there:
/// the definition, written for clarity. The timer uses `LevelTable::place`, the same arithmetic
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
            let stage = stage_plan(wheel_size, wheel_size.min(STAGES), level, round * ticks, deadline);
            return Placement::Slot { level, slot: (round % wheel_size) as usize, stage };
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
pub(crate) struct LevelTable {
    wheel_size: u64,
    /// Stages per bucket above level 0: `min(STAGES, wheel_size)`.
    stages: u64,
    /// `log2(wheel_size)` when it is a power of two.
    shift: Option<u32>,
    /// Ticks per slot of each level.
    slot_ticks: Box<[u64]>,
    /// Ticks per rotation of each level; `None` for the top level, whose span exceeds `u64`.
    spans: Box<[Option<u64>]>,
    /// For a power-of-two wheel, `g / log2(wheel_size)` for each `g < 64`: the finest level a gap
    /// of `2^g` ticks may fit (`place_pow2`), looked up rather than divided.
    level_of_gap_bits: [u8; 64],
}

impl LevelTable {
    pub(crate) fn new(wheel_size: u64) -> Self {
        let levels = max_levels(wheel_size);
        let slot_ticks: Box<[u64]> = (0..levels).map(|l| slot_ticks(wheel_size, l).unwrap()).collect();
        let spans = slot_ticks.iter().map(|t| t.checked_mul(wheel_size)).collect();
        let shift = wheel_size.is_power_of_two().then(|| wheel_size.trailing_zeros());
        let level_of_gap_bits = std::array::from_fn(|g| (g as u32 / shift.unwrap_or(64).max(1)) as u8);
        LevelTable { wheel_size, stages: wheel_size.min(STAGES), shift, slot_ticks, spans, level_of_gap_bits }
    }

    #[inline(always)]
    pub(crate) fn place(&self, base: u64, deadline: u64) -> Placement {
        if deadline <= base {
            return Placement::Due;
        }
        match self.shift {
            Some(shift) => self.place_pow2(shift, self.stages.trailing_zeros(), base, deadline),
            None => self.place_general(base, deadline),
        }
    }

    /// Power-of-two wheel: level `k`'s slots are `2^(k·shift)` ticks, so every step is a shift.
    /// So are its stages: `2^stage_bits` of them, each `2^(k·shift - stage_bits)` ticks, a multiple of
    /// the finer level's slot.
    ///
    /// The level comes without a loop. Level `k` holds the deadline when `(deadline >> k·shift) -
    /// (base >> k·shift) < 2^shift` (the window test of `place` with the shifts taken out). With
    /// `g = floor(log2(deadline - base))` and `k0 = floor(g / shift)`: below `k0` no level does,
    /// since the difference of the shifted values is at least `(deadline - base) >> k·shift`, at
    /// least `2^shift`; at `k0` it is at most `ceil((deadline - base) / 2^(k0·shift)) <= 2^shift`,
    /// so `k0` holds the deadline unless that bound is reached, and then `k0 + 1` does (a
    /// difference of at most 1). The top level, whose window reaches past every tick, always does;
    /// `k0 = floor(g / shift) <= floor(63 / shift)`, which is the top level's index, so the level
    /// looked up never passes it (and the step up is taken only below the top).
    #[inline]
    fn place_pow2(&self, shift: u32, stage_bits: u32, base: u64, deadline: u64) -> Placement {
        let gap_bits = 63 - (deadline - base).leading_zeros();
        let mut level = u32::from(self.level_of_gap_bits[gap_bits as usize]);
        let mut tick_bits = level * shift;
        if tick_bits + shift < 64 && (deadline >> tick_bits) - (base >> tick_bits) >= 1 << shift {
            level += 1;
            tick_bits += shift;
        }
        let round = deadline >> tick_bits;
        let slot = round & ((1 << shift) - 1);
        let expiration = round << tick_bits;
        let stage = if level == 0 {
            StagePlan::level0_first(expiration)
        } else {
            let width_bits = tick_bits - stage_bits;
            let due = deadline >> width_bits << width_bits;
            let index = (deadline >> width_bits) & ((1 << stage_bits) - 1);
            // The stage's end minus one slot of this level: `due + width - t`, at least 0.
            let lead = (1 << tick_bits) - (1 << width_bits);
            StagePlan { index: index as usize, round: expiration, opens: due.saturating_sub(lead), due }
        };
        Placement::Slot { level: level as usize, slot: slot as usize, stage }
    }

    fn place_general(&self, base: u64, deadline: u64) -> Placement {
        for (level, (&ticks, &span)) in self.slot_ticks.iter().zip(self.spans.iter()).enumerate() {
            let window_start = base - base % ticks;
            if span.map_or(true, |span| deadline - window_start < span) {
                let round = deadline / ticks;
                let slot = round % self.wheel_size;
                let expiration = round * ticks;
                let stage = stage_plan(self.wheel_size, self.stages, level, expiration, deadline);
                return Placement::Slot { level, slot: slot as usize, stage };
            }
        }
        unreachable!("the top level covers every deadline")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Level, slot and round start of a placement (`None` when due).
    fn slot(placement: Placement) -> Option<(usize, usize, u64)> {
        match placement {
            Placement::Due => None,
            Placement::Slot { level, slot, stage } => Some((level, slot, stage.round)),
        }
    }

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
    fn the_three_level_example_of_the_module_docs() {
        // tick 10 ms, 60 slots: level spans 600 ms / 36 s / 36 min.
        assert_eq!(slot(place(60, 0, 50)), Some((0, 50, 50)));
        assert_eq!(slot(place(60, 0, 500)), Some((1, 8, 480)));
        assert_eq!(slot(place(60, 480, 500)), Some((0, 20, 500)));
        assert_eq!(slot(place(60, 0, 2_000)), Some((1, 33, 1_980)));
        assert_eq!(slot(place(60, 0, 4_000)), Some((2, 1, 3_600)));
        assert_eq!(slot(place(60, 0, 240_000)), Some((3, 1, 216_000)));
        assert_eq!(slot(place(60, 500, 500)), None);
        assert_eq!(slot(place(60, 501, 500)), None);
    }

    #[test]
    fn window_is_aligned_to_the_level() {
        // base 59, level 0 window is [59, 119): deadline 118 still level 0, slot 118 % 60.
        assert_eq!(slot(place(60, 59, 118)), Some((0, 58, 118)));
        // level 1 window at base 59 is [0, 3600).
        assert_eq!(slot(place(60, 59, 119)), Some((1, 1, 60)));
        assert_eq!(slot(place(60, 59, 3_599)), Some((1, 59, 3_540)));
        assert_eq!(slot(place(60, 59, 3_600)), Some((2, 1, 3_600)));
    }

    #[test]
    fn expiration_never_after_deadline_and_cascades_reach_due() {
        for wheel_size in [2u64, 3, 20, 60, 64] {
            for base in [0u64, 1, 19, 12_345] {
                for deadline in [base + 1, base + 2, base + 61, base + 4_000, base + 10_000_000, u64::MAX - 1]
                {
                    // Follow the cascade, visiting each stage as early as it allows, then as late.
                    for early in [true, false] {
                        let mut at = base;
                        let mut hops = 0;
                        loop {
                            match place(wheel_size, at, deadline) {
                                Placement::Due => break,
                                Placement::Slot { level, stage, .. } => {
                                    assert!(stage.round <= stage.due && stage.due <= deadline);
                                    assert!(stage.opens <= stage.due);
                                    assert!(stage.opens > at, "level {level} stage is already open");
                                    if level > 0 {
                                        for b in [stage.opens, stage.due] {
                                            let finer = slot(place(wheel_size, b, deadline));
                                            assert!(
                                                finer.map_or(b >= deadline, |(l, ..)| l < level),
                                                "wheel {wheel_size} deadline {deadline} level {level} {stage:?} at {b}: {finer:?}"
                                            );
                                        }
                                    }
                                    at = if early { stage.opens } else { stage.due };
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
    }

    #[test]
    fn stages_split_a_round_and_open_as_early_as_they_fit() {
        // Wheel 512: level-1 slots of 512 ticks, 4 stages of 128 ticks (module docs' example).
        let table = LevelTable::new(512);
        let Placement::Slot { level: 1, slot: 1, stage } = table.place(0, 700) else {
            panic!("700 is level 1, slot 1");
        };
        assert_eq!(stage, StagePlan { index: 1, round: 512, opens: 256, due: 640 });
        // One tick earlier the stage's last deadline (767) does not fit level 0 yet.
        assert_eq!(slot(table.place(255, 767)).map(|(level, ..)| level), Some(1));
        assert_eq!(slot(table.place(256, 767)).map(|(level, ..)| level), Some(0));
        // The placement files level 0 in its one stage; the last stage of a round opens at the
        // round.
        assert_eq!(slot_stage(table.place(0, 5)), StagePlan::level0_first(5));
        assert_eq!(
            slot_stage(table.place(0, 1_023)),
            StagePlan { index: 3, round: 512, opens: 512, due: 896 }
        );
        // A wheel of 60 (not a power of two): 4 stages of 15 ticks of a 60-tick slot.
        let Placement::Slot { level: 1, stage, .. } = place(60, 0, 500) else { panic!() };
        assert_eq!(stage, StagePlan { index: 1, round: 480, opens: 450, due: 495 }); // ticks 495..509
                                                                                     // A wheel of 6, level 1: stages of 1.5 ticks (offsets 0..1, 2, 3..4, 5), rounded as documented.
        let plans: Vec<_> = (6..12).map(|d| slot_stage(place(6, 0, d))).collect();
        assert_eq!(plans.iter().map(|p| p.index).collect::<Vec<_>>(), [0, 0, 1, 2, 2, 3]);
        assert_eq!(plans.iter().map(|p| p.due).collect::<Vec<_>>(), [6, 6, 8, 9, 9, 11]);
        assert_eq!(plans.iter().map(|p| p.opens).collect::<Vec<_>>(), [2, 2, 3, 5, 5, 6]);
    }

    fn slot_stage(placement: Placement) -> StagePlan {
        match placement {
            Placement::Slot { stage, .. } => stage,
            Placement::Due => panic!("due"),
        }
    }

    #[test]
    fn the_precomputed_table_places_exactly_like_the_reference() {
        let mut rng = crate::test_rng::XorShift::new(0x9E37_79B9_7F4A_7C15);
        let mut next = move || rng.next();
        for wheel_size in [2u64, 3, 4, 20, 60, 64, 512, 1000, 65_536, 86_400, 100_000, 1 << 24] {
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
    fn small_power_of_two_wheels_place_like_the_reference_everywhere() {
        // Every base and deadline of a small range, and near the top of the tick range, where the
        // direct level computation meets the level boundaries and the top level.
        for wheel_size in [2u64, 4, 8, 16] {
            let table = LevelTable::new(wheel_size);
            for base in (0..300).chain(u64::MAX - 300..u64::MAX - 1) {
                for deadline in (0..300).chain(u64::MAX - 300..u64::MAX) {
                    assert_eq!(
                        table.place(base, deadline),
                        place(wheel_size, base, deadline),
                        "{wheel_size} {base} {deadline}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_direct_level_matches_the_reference_at_every_level_boundary() {
        // The one-step-up case: at each level the shifted difference of deadline and base just
        // under, at and just over `2^shift`, from bases aligned and not, up to the top of the
        // tick range; and gaps at and next to every power of two.
        for shift in 1..=24u32 {
            let wheel_size = 1u64 << shift;
            let table = LevelTable::new(wheel_size);
            let check = |base: u64, deadline: u64| {
                assert_eq!(
                    table.place(base, deadline),
                    place(wheel_size, base, deadline),
                    "{wheel_size} {base} {deadline}"
                );
            };
            for tick_bits in (0..64).step_by(shift as usize) {
                let unit = 1u64 << tick_bits;
                for base in [
                    0,
                    1,
                    unit - 1,
                    unit,
                    unit + 1,
                    12_345 << tick_bits | (unit - 1),
                    u64::MAX - unit,
                    u64::MAX - 1,
                ] {
                    for shifted in [wheel_size - 1, wheel_size, wheel_size + 1] {
                        let Some(high) =
                            (base >> tick_bits).checked_add(shifted).and_then(|high| high.checked_mul(unit))
                        else {
                            continue;
                        };
                        for low in [0, 1, unit - 1] {
                            if let Some(deadline) = high.checked_add(low) {
                                check(base, deadline);
                            }
                        }
                    }
                }
            }
            for base in [0, 1, 1 << 40, u64::MAX >> 1] {
                for gap_bits in 0..64 {
                    for gap in [(1u64 << gap_bits) - 1, 1 << gap_bits, (1 << gap_bits) + 1] {
                        if let Some(deadline) = base.checked_add(gap) {
                            check(base, deadline);
                        }
                    }
                }
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
}
