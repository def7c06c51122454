use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn tick_length_bounds() {
    assert!(TickLength::new(Duration::ZERO).is_none());
    assert!(TickLength::new(Duration::from_nanos(999)).is_none());
    assert!(TickLength::new(Duration::from_micros(1)).is_some());
    // Longer than the clock's whole range: only what is due already has a deadline.
    for tick in [Duration::from_nanos(u64::MAX) + Duration::from_nanos(1), Duration::MAX] {
        let t = TickLength::new(tick).unwrap();
        assert_eq!((t.as_duration(), t.max_delay(0)), (tick, Duration::ZERO));
        assert_eq!(t.deadline(0, Duration::from_nanos(1)), None);
        assert_eq!(t.deadline(5, Duration::ZERO).map(Deadline::tick), Some(0));
        assert_eq!(t.deadline_at(5, 3).map(Deadline::tick), Some(0));
        assert_eq!(t.deadline_at(5, 6), None);
    }
}

#[test]
fn floor_and_ceil_round_in_opposite_directions() {
    let t = TickLength::new(ms(10)).unwrap();
    assert_eq!(t.floor(0), 0);
    assert_eq!(t.floor(9_999_999), 0);
    assert_eq!(t.floor(10_000_000), 1);
    assert_eq!(t.ceil(0).map(Deadline::tick), Some(0));
    assert_eq!(t.ceil(1).map(Deadline::tick), Some(1));
    assert_eq!(t.ceil(10_000_000).map(Deadline::tick), Some(1));
    assert_eq!(t.ceil(10_000_001).map(Deadline::tick), Some(2));
}

#[test]
fn deadline_tick_never_before_deadline_and_ranked_within_it() {
    let t = TickLength::new(Duration::from_micros(7)).unwrap();
    for now in [0u64, 1, 6_999, 7_000, 123_456_789] {
        // A zero delay has passed: filed at the current tick (`passed`).
        assert_eq!(t.deadline(now, Duration::ZERO), Some(t.passed(now)));
        let passed = t.passed(now);
        assert_eq!((passed.tick(), passed.rank()), (now / 7_000, Deadline::ON_BOUNDARY));
        // It reads back as the instant itself.
        assert_eq!(t.deadline_nanos(passed), u128::from(now));
        for delay in [1u64, 3_500, 6_999, 7_000, 7_001, 1_000_000] {
            let d = t.deadline(now, Duration::from_nanos(delay)).unwrap();
            let deadline = u128::from(now) + u128::from(delay);
            assert!(t.start_nanos(d.tick()) >= deadline, "tick starts before the deadline");
            assert!(t.start_nanos(d.tick()) < deadline + 7_000, "more than one tick late");
            // The rank: which 256th of (tick - 1, tick] the deadline falls in.
            let below = deadline + 7_000 - 1 - t.start_nanos(d.tick());
            let exact = (below * 256 / 7_000) as u8;
            assert!(d.rank() == exact || d.rank() + 1 == exact, "now {now} delay {delay}: {d:?}");
            // And it reads back to the nanosecond.
            assert_eq!(t.deadline_nanos(d), deadline, "now {now} delay {delay}: {d:?}");
        }
    }
    let on_boundary = t.deadline(0, Duration::from_micros(14)).unwrap();
    let just_after = t.deadline(0, Duration::from_nanos(14_001)).unwrap();
    let mid = t.deadline(0, Duration::from_nanos(17_500)).unwrap();
    assert_eq!((on_boundary.tick(), on_boundary.rank()), (2, Deadline::ON_BOUNDARY));
    assert_eq!((just_after.tick(), just_after.rank()), (3, 0));
    assert_eq!((mid.tick(), mid.rank()), (3, 127));
    assert!(on_boundary < just_after && just_after < mid);
}

#[test]
fn instants_passed_within_the_tick_under_way_are_due_and_keep_their_order() {
    let t = TickLength::new(ms(1)).unwrap();
    let now = 10_900_000; // 10.9 ms: tick 10 is the last boundary
    let at = |nanos: u64| t.deadline_at(now, u128::from(nanos)).unwrap();
    let (early, late, on_boundary) = (at(10_100_000), at(10_800_000), at(10_000_000));
    let (own_tick, next_tick) = (t.ceil(9_999_999).unwrap(), t.ceil(10_000_001).unwrap());
    for passed in [early, late, t.passed(now)] {
        assert_eq!((passed.tick(), passed.rank()), (10, Deadline::ON_BOUNDARY), "due, ranked last");
        assert!(on_boundary < passed && own_tick < passed && passed < next_tick, "{passed:?}");
    }
    assert!(early < late && late < t.passed(now), "in deadline order among themselves");
    assert_eq!((on_boundary.tick(), on_boundary.passed_mid_tick()), (10, false));
    assert!(early.passed_mid_tick() && !next_tick.passed_mid_tick());
    for nanos in [10_000_000, 10_000_001, 10_100_000, 10_800_000, now] {
        assert_eq!(t.deadline_nanos(at(nanos)), u128::from(nanos), "reads back exactly");
    }
}

#[test]
fn the_u64_fast_paths_agree_with_u128_arithmetic() {
    let t = TickLength::new(Duration::from_micros(1_003)).unwrap();
    let delays = [
        Duration::ZERO,
        Duration::from_nanos(1),
        Duration::new(1, 999_999_999),
        Duration::from_nanos(u64::MAX - 5),
        Duration::from_nanos(u64::MAX),
        Duration::new(u64::MAX / 1_000_000_000, 999_999_999),
        Duration::new(u64::MAX / 1_000_000_000 + 1, 0),
        Duration::MAX,
    ];
    for now in [0u64, 1, 1_002_999, u64::MAX / 2, u64::MAX - 1, u64::MAX] {
        for &delay in delays.iter().filter(|d| !d.is_zero()) {
            assert_eq!(
                t.deadline(now, delay),
                t.deadline_at(now, u128::from(now) + delay.as_nanos()),
                "now {now} delay {delay:?}"
            );
        }
    }
    for &d in &delays {
        assert_eq!(u128::from(duration_nanos(d)), d.as_nanos().min(u128::from(u64::MAX)), "{d:?}");
    }
}

/// The deadline word against an independent `u128` reference, over tick lengths from 1 µs to
/// `u64::MAX` ns, clocks up to `u64::MAX` and delays up to `Duration::MAX`: the tick is the
/// reference ceiling (never early, never a whole tick late) or `None` exactly past the range,
/// the rank is the exact 256th or one less, the fast and slow paths agree, a later deadline
/// never gets a smaller word, `reach` is exactly the largest delay accepted, and `max_delay` is
/// that less the slack a schedule made a little later needs.
#[test]
fn deadlines_match_a_u128_reference_across_the_range() {
    let mut rng = crate::test_rng::XorShift::new(0x1234_5678_9abc_def1);
    let mut next = move || rng.next();
    // A value of a random bit length (0 to 64 bits), so that every magnitude is visited.
    let wide = |next: &mut dyn FnMut() -> u64| match next() % 65 {
        0 => 0,
        64 => next(),
        bits => next() & ((1u64 << bits) - 1),
    };
    // The last tick the clock (saturating at `u64::MAX` ns) reaches, within the word's range.
    let reference = |n: u64, d: u128| {
        let last = (u64::MAX / n).min(MAX_DEADLINE_TICK);
        let (n, x) = (u128::from(n), d + u128::from(n) - 1);
        let tick = u64::try_from(x / n).ok().filter(|&t| t <= last)?;
        Some((tick, x % n * 256 / n))
    };
    for i in 0..300_000u64 {
        let n = match next() % 4 {
            0 => 1_000 + next() % 10_000,
            1 => u64::MAX - next() % 1_000,
            2 => [1_000_000, 256_000_000_000, 257_000_000_000, (1 << 63) + 1][(next() % 4) as usize],
            _ => wide(&mut next).max(1_000),
        };
        let now = match next() % 3 {
            0 => u64::MAX - next() % (1 << 40),
            _ => wide(&mut next),
        };
        // Not zero: a zero delay has passed (`a_passed_deadline_is_due_at_the_current_tick`).
        let delay = match next() % 4 {
            0 => Duration::from_nanos(wide(&mut next).max(1)),
            1 => Duration::new(wide(&mut next), (next() % 1_000_000_000) as u32),
            2 => Duration::MAX - Duration::from_nanos(wide(&mut next)),
            _ => Duration::from_nanos(next() % (1 << 20) + 1),
        };
        let t = TickLength::new(Duration::from_nanos(n)).unwrap();
        let delay = delay.max(Duration::from_nanos(1)); // zero has passed: `passed`
        let at = u128::from(now) + delay.as_nanos();
        let got = t.deadline(now, delay);
        assert_eq!(got, t.ceil(at), "fast and slow paths: tick {n} now {now} delay {delay:?}");
        match (got, reference(n, at)) {
            (None, None) => {}
            (Some(word), Some((tick, rank))) => {
                assert_eq!(word.tick(), tick, "tick {n} at {at}");
                let got_rank = u128::from(word.rank());
                assert!(
                    got_rank == rank || got_rank + 1 == rank,
                    "rank {got_rank} vs {rank}: tick {n} at {at}"
                );
                // Read back to the nanosecond where the word is exact: always up to 2^56 ns of
                // the clock with ticks up to 2^41 ns (`deadline.rs`); otherwise the tick's start.
                let back = t.deadline_nanos(word);
                assert!(back == at || back == t.start_nanos(tick), "read back {back}: tick {n} at {at}");
                assert!(back == at || at >= 1 << 56 || n > 1 << 41, "not exact: tick {n} at {at}");
                if let Some(later) = t.ceil(at + u128::from(wide(&mut next) % n)) {
                    assert!(later >= word, "a later deadline ranked earlier: tick {n} at {at}");
                }
            }
            (got, expected) => {
                panic!("tick {n} now {now} delay {delay:?}: {got:?}, expected {expected:?}")
            }
        }
        if i % 16 == 0 {
            let max = t.reach(now);
            assert!(t.deadline(now, max).is_some(), "reach refused: tick {n} now {now}");
            assert!(
                t.deadline(now, max).is_some_and(|d| t.start_nanos(d.tick()) <= u128::from(u64::MAX)),
                "reach's tick is out of the clock's reach: tick {n} now {now}"
            );
            match max.checked_add(Duration::from_nanos(1)) {
                Some(more) => assert_eq!(t.deadline(now, more), None, "reach {max:?} is not the max"),
                None => assert_eq!(max, Duration::MAX),
            }
            assert_eq!(t.max_delay(now), max.saturating_sub(MAX_DELAY_SLACK));
            // A schedule reading the clock up to the slack later accepts `max_delay`.
            let later = now.saturating_add(MAX_DELAY_SLACK.as_nanos() as u64);
            assert!(t.deadline(later, t.max_delay(now)).is_some(), "tick {n} now {now}");
        }
    }
}

#[test]
fn a_passed_deadline_is_due_at_the_current_tick() {
    let t = TickLength::new(ms(10)).unwrap();
    let tick = |d: Option<Deadline>| d.map(Deadline::tick);
    // Mid-tick (37 ms, current tick 3): now itself, a zero delay, an earlier time in this tick
    // and one long ago are all due at tick 3 or before, never at 4.
    assert_eq!(tick(t.deadline(37_000_000, Duration::ZERO)), Some(3));
    assert_eq!(tick(t.deadline_at(37_000_000, 37_000_000)), Some(3));
    assert_eq!(tick(t.deadline_at(37_000_000, 31_000_000)), Some(3));
    assert_eq!(tick(t.deadline_at(37_000_000, 30_000_000)), Some(3));
    assert_eq!(tick(t.deadline_at(37_000_000, 29_000_000)), Some(3));
    assert_eq!(tick(t.deadline_at(37_000_000, 0)), Some(0));
    // Ranked last in the current tick when rounded down to it; FIFO among equals.
    assert_eq!(t.deadline(37_000_000, Duration::ZERO).map(Deadline::rank), Some(Deadline::ON_BOUNDARY));
    // On a boundary a zero delay is the boundary, as a ceiling gives.
    assert_eq!(t.deadline(40_000_000, Duration::ZERO), t.ceil(40_000_000));
    // Not passed yet: the ceiling, mid-tick too.
    assert_eq!(tick(t.deadline(37_000_000, Duration::from_nanos(1))), Some(4));
    assert_eq!(tick(t.deadline_at(37_000_000, 37_000_001)), Some(4));
    assert_eq!(tick(t.deadline(u64::MAX, Duration::ZERO)), Some(u64::MAX / 10_000_000));
}

#[test]
fn far_future_has_no_deadline_tick() {
    let t = TickLength::new(ms(1)).unwrap();
    assert_eq!(t.deadline(0, Duration::MAX), None);
    let max = t.reach(5);
    // The clock saturates at u64::MAX ns: its last tick is the last deadline tick.
    assert_eq!(t.deadline(5, max).map(Deadline::tick), Some(u64::MAX / 1_000_000));
    assert_eq!(t.deadline(5, max + Duration::from_nanos(1)), None);
    assert_eq!(t.max_delay(5), max - MAX_DELAY_SLACK);
    // In the clock's last partial tick only a zero delay is left.
    assert_eq!((t.reach(u64::MAX - 1), t.max_delay(u64::MAX - 1)), (Duration::ZERO, Duration::ZERO));
    assert_eq!(t.deadline(u64::MAX - 1, Duration::from_micros(1)), None);
    assert_eq!(t.deadline(u64::MAX, Duration::ZERO).map(Deadline::tick), Some(u64::MAX / 1_000_000));
}

#[test]
fn long_ticks_reach_as_far_as_the_clock_and_say_so() {
    // 2^56 - 1 ticks of 257 s would pass `Duration::MAX`, but the clock ends at u64::MAX ns
    // (584 years): the last tick that begins by then is the last deadline tick.
    let t = TickLength::new(Duration::from_secs(257)).unwrap();
    let last = u64::MAX / 257_000_000_000;
    assert_eq!(t.reach(0), Duration::from_secs(last * 257));
    assert!(t.deadline(0, t.reach(0)).is_some());
    assert_eq!(t.deadline(0, Duration::MAX), None);
    let t = TickLength::new(Duration::from_nanos(u64::MAX)).unwrap();
    assert_eq!(t.reach(0), Duration::from_nanos(u64::MAX), "one tick, the whole clock");
    assert_eq!(nanos_to_duration(u128::from(u64::MAX) * 10), Duration::from_nanos(u64::MAX) * 10);
    assert_eq!(nanos_to_duration(u128::MAX), Duration::MAX);
}

#[test]
fn manual_clock_is_shared_and_monotonic() {
    let c = ManualClock::new();
    let d = c.clone();
    c.advance(ms(3));
    assert_eq!(d.now(), ms(3));
    assert!(!d.advance_to(ms(2)));
    assert_eq!(c.now(), ms(3));
    assert!(d.advance_to(ms(7)));
    assert_eq!(c.now(), ms(7));
    c.advance(Duration::MAX);
    assert_eq!(c.now(), Duration::from_nanos(u64::MAX));
}

/// A tick's boundary word (a tick group's entry, `timer/groups.rs`) is `ceil` of the tick's start,
/// the latest deadline filed at the tick, for exact and far words alike.
#[cfg(feature = "async")]
#[test]
fn a_ticks_boundary_is_ceil_of_its_start_and_its_latest_deadline() {
    for tick in [Duration::from_micros(1), ms(1), ms(10), Duration::from_secs(3600)] {
        let t = TickLength::new(tick).unwrap();
        for k in [0, 1, 2, 7, 1_000_003] {
            let boundary = t.boundary(k);
            assert_eq!(boundary, t.ceil(t.start_nanos(k)), "tick {tick:?}, {k}");
            let before = t.ceil(t.start_nanos(k).saturating_sub(1).max(1));
            if k > 0 && before.map(Deadline::tick) == Some(k) {
                assert!(before <= boundary, "a deadline of tick {k} after its boundary");
            }
        }
    }
}
