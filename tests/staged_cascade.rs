//! Staged cascade (docs/design.md, "Cascading ahead of time"): a big stage of a coarse bucket is
//! cascaded before its round, in chunks, and still fires every task exactly at its deadline tick;
//! a small one waits for its round, as in Kafka.
//!
//! Wheel 64, tick 1 ms: level 1 has 64-tick slots split into 4 stages of 16 ticks. The round
//! [64, 128) has stage 0 = ticks 64..79 (open from tick 16: `64 - 64 + 1·16`) and stage 2 = ticks
//! 96..111 (open from tick 48). A stage is big past 256 entries.

mod common;

use std::time::Duration;

use common::{manual_timer, ms, FireLog};
use delaywheel::{ManualClock, Timer, TimerHandle};

/// How many of `handles` sit in level 0 now.
fn in_level0(handles: &[TimerHandle]) -> usize {
    handles.iter().filter(|h| h.position().is_some_and(|p| p.level == 0)).count()
}

fn advance_to(clock: &ManualClock, timer: &Timer, tick: u64) {
    clock.advance_to(ms(tick));
    timer.advance_clock(Duration::ZERO);
}

#[test]
fn a_big_stage_cascades_ahead_of_its_round_in_chunks_and_fires_on_time() {
    let (clock, timer) = manual_timer(ms(1), 64);
    let log = FireLog::default();
    let deadline = |id: usize| 68 + (id % 4) as u64;
    let big: Vec<TimerHandle> =
        (0..3_000).map(|id| timer.schedule(ms(deadline(id)), log.task(id, &clock))).collect();
    let small: Vec<TimerHandle> =
        (0..10).map(|i| timer.schedule(ms(100 + i % 4), log.task(10_000 + i as usize, &clock))).collect();
    assert_eq!(in_level0(&big), 0);
    // Cancelled before, between and after chunks: never run, wherever they were.
    let mut cancelled = 0;
    for h in big.iter().step_by(7) {
        assert!(h.cancel());
        cancelled += 1;
    }

    advance_to(&clock, &timer, 15);
    assert_eq!(in_level0(&big), 0, "not open before tick 16");
    advance_to(&clock, &timer, 16);
    let first_chunk = in_level0(&big);
    assert!(
        first_chunk > 0 && first_chunk < big.len() - cancelled,
        "a chunk, not the whole stage: {first_chunk}"
    );
    for h in big.iter().skip(3).step_by(11) {
        cancelled += usize::from(h.cancel());
    }
    for tick in 17..=40 {
        advance_to(&clock, &timer, tick);
    }
    // Paced chunks until what is left is small again (at most 256: it then waits for the round).
    let left = big.len() - cancelled - in_level0(&big);
    assert!(left <= 256, "{left} of the stage still in level 1 at tick 40");
    assert_eq!(in_level0(&small), 0, "a small stage waits for its round");
    assert!(small.iter().all(|h| h.position().is_some_and(|p| p.expiration_tick == 64)));
    assert_eq!(log.count(), 0, "nothing fires early");

    for tick in 41..=110 {
        advance_to(&clock, &timer, tick);
        if tick == 64 {
            assert_eq!(in_level0(&small), small.len(), "the small stage cascades at its round");
            assert_eq!(in_level0(&big), big.len() - cancelled, "and the rest of the big one");
        }
    }
    let runs = log.runs();
    assert_eq!(runs.len(), big.len() - cancelled + small.len());
    for (id, at) in runs {
        let expected = if id >= 10_000 { 100 + (id - 10_000) as u64 % 4 } else { deadline(id) };
        assert_eq!(at, ms(expected), "task {id} fired at {at:?}");
        if id < 10_000 {
            assert!(big[id].is_fired());
        }
    }
    assert!(timer.is_empty());
    assert_eq!(timer.stats().queued_buckets, 0);
}

#[test]
fn a_stage_goes_early_only_past_256_entries() {
    for (n, early) in [(256, false), (257, true)] {
        let (clock, timer) = manual_timer(ms(1), 64);
        let handles: Vec<TimerHandle> = (0..n).map(|_| timer.schedule(ms(70), || {})).collect();
        let expiration = handles[0].position().map(|p| p.expiration_tick);
        assert_eq!(expiration, Some(if early { 16 } else { 64 }), "{n} entries");
        advance_to(&clock, &timer, 16);
        // Early: one chunk of 256 (the minimum); the one left makes a small stage, which waits.
        assert_eq!(in_level0(&handles), if early { 256 } else { 0 }, "{n} entries");
        assert!(!timer.advance_clock(Duration::ZERO), "nothing more is due at tick 16");
        advance_to(&clock, &timer, 63);
        assert_eq!(in_level0(&handles), if early { 256 } else { 0 }, "{n} entries");
        advance_to(&clock, &timer, 64);
        assert_eq!(in_level0(&handles), n, "{n} entries: all cascaded at the round");
        advance_to(&clock, &timer, 70);
        assert!(handles.iter().all(TimerHandle::is_fired));
    }
}

#[test]
fn a_clock_jump_over_chunked_stages_fires_in_deadline_order() {
    let (clock, timer) = manual_timer(ms(1), 64);
    let log = FireLog::default();
    // 4000 tasks over the rounds [64, 128) and [128, 192): big stages everywhere.
    let deadlines: Vec<u64> = (0..4_000u64).map(|i| 64 + (i * 7_919) % 128).collect();
    for (id, &d) in deadlines.iter().enumerate() {
        let _ = timer.schedule(ms(d), log.task(id, &clock));
    }
    clock.advance(ms(1_000));
    assert!(timer.advance_clock(Duration::ZERO));
    let fired: Vec<u64> = log.ids().into_iter().map(|id| deadlines[id]).collect();
    assert_eq!(fired.len(), deadlines.len());
    assert!(fired.windows(2).all(|w| w[0] <= w[1]), "out of deadline order");
    assert!(timer.is_empty());
    assert_eq!(timer.stats().queued_buckets, 0);
}
