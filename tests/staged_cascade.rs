//! Staged cascade (docs/design.md, "A big bucket: stages by shifts"): a big stage of a coarse
//! bucket is cascaded before its round, in chunks, and still fires every task exactly at its
//! deadline tick; a small one waits for its round, as in Kafka.
//!
//! Wheel 64, tick 1 ms: level 1 has 64-tick slots split into 4 stages of 16 ticks. The round
//! [64, 128) has stage 0 = ticks 64..79 (open from tick 16: `64 - 64 + 1·16`) and stage 2 = ticks
//! 96..111 (open from tick 48). A bucket above level 0 is split into its stages at 1,024 entries,
//! and each stage is visited from its opening, in chunks of at least 256 (`shard/wheel/split.rs`).

mod common;

use std::time::Duration;

use common::model::{check, Op};
use common::{manual_timer, ms, FireLog, SplitMix};
use delaywheel::{ManualClock, Timer, TimerHandle};

/// How many of `handles` sit in level 0 now.
fn in_level0(handles: &[TimerHandle]) -> usize {
    handles.iter().filter(|h| h.position().is_some_and(|p| p.level == 0)).count()
}

fn advance_to(clock: &ManualClock, timer: &Timer, tick: u64) {
    clock.advance_to(ms(tick));
    timer.advance_clock(Duration::ZERO);
}

/// 3,000 tasks in stage 0 of level 1's round [64, 128) and 10 in its stage 2 (ticks 96..111):
/// the big stage cascades from tick 16 in chunks, the small one at `small_visit`, and each task
/// fires at its deadline tick.
fn a_big_stage_in_chunks(small_visit: u64) {
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
    // Paced chunks until the stage is empty: chunks of 256 a tick take the whole bucket.
    let left = big.len() - cancelled - in_level0(&big);
    assert_eq!(left, 0, "{left} of the stage still in level 1 at tick 40");
    assert_eq!(in_level0(&small), 0, "a small stage waits for its visit");
    assert!(small.iter().all(|h| h.position().is_some_and(|p| p.expiration_tick == small_visit)));
    assert_eq!(log.count(), 0, "nothing fires early");

    for tick in 41..=110 {
        advance_to(&clock, &timer, tick);
        if tick == small_visit - 1 {
            assert_eq!(in_level0(&small), 0, "the small stage waits for its visit");
        }
        if tick == small_visit {
            assert_eq!(in_level0(&small), small.len(), "the small stage cascades at its visit");
        }
        if tick == 64 {
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

/// The big stage splits its bucket, whose visits take each stage from its opening
/// (`shard/wheel/split.rs`): the small stage 2 at 48, its entries' next visit.
#[test]
fn a_big_stage_of_a_split_bucket_cascades_ahead_of_its_round_in_chunks_and_fires_on_time() {
    a_big_stage_in_chunks(48);
}

/// The threshold (`shard/wheel/split.rs`): a bucket above level 0 is split into its stages when
/// it reaches 1,024 entries, and each visit then cascades a chunk of at least 256 of an open stage,
/// tick after tick from the stage's opening until it is empty; a bucket of fewer waits for its
/// round. Either way every task fires at its deadline tick.
#[test]
fn a_bucket_goes_early_only_from_1024_entries_in_chunks_of_256() {
    for n in [1_023, 1_024, 1_300] {
        let split = n >= 1_024;
        let (clock, timer) = manual_timer(ms(1), 64);
        let handles: Vec<TimerHandle> = (0..n).map(|_| timer.schedule(ms(70), || {})).collect();
        let expiration = handles[0].position().map(|p| (p.level, p.expiration_tick));
        assert_eq!(expiration, Some((1, if split { 16 } else { 64 })), "{n} entries");
        advance_to(&clock, &timer, 15);
        assert_eq!(in_level0(&handles), 0, "{n} entries: not open before tick 16");
        for tick in 16..64 {
            advance_to(&clock, &timer, tick);
            let chunks = if split { tick - 15 } else { 0 };
            assert_eq!(in_level0(&handles), n.min(256 * chunks as usize), "{n} entries at tick {tick}");
        }
        advance_to(&clock, &timer, 64);
        assert_eq!(in_level0(&handles), n, "{n} entries: all cascaded at the round");
        advance_to(&clock, &timer, 69);
        assert!(handles.iter().all(TimerHandle::is_pending), "{n} entries: none early");
        advance_to(&clock, &timer, 70);
        assert!(handles.iter().all(TimerHandle::is_fired), "{n} entries");
        assert!(timer.is_empty());
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

// Contributed by the review of the staged cascade: the reference model (tests/common/model.rs)
// driven with bursts of up to 1,200 deadlines into one band (a burst past 1,024 splits its bucket),
// so the early, paced path runs under random cancels, re-arms, clock-only moves (schedulers ahead
// of the wheel) and small and large advances.

/// Random operations with bursts of 200-1200 deadlines into one narrow band (one stage of one
/// bucket at level 1-3), for a wheel of `wheel` slots and a 1 µs tick.
fn ops(seed: u64, wheel: u64, n_ops: usize) -> Vec<Op> {
    let mut rng = SplitMix(seed);
    let tick = 1_000u64; // 1 µs tick, in ns
    let mut ops = Vec::new();
    while ops.len() < n_ops {
        match rng.next() % 12 {
            // A burst into one narrow band: one stage of one bucket at some level.
            0..=3 => {
                let level = 1 + rng.next() % 3;
                let span = wheel.saturating_pow(level as u32 + 1).min(1 << 40);
                let base = rng.range(1, span.max(2));
                let width = 1 + rng.next() % (wheel.saturating_pow(level as u32) / 4 + 1);
                let burst = rng.range(200, 1_200) as usize;
                for _ in 0..burst {
                    let ticks = base + rng.next() % width;
                    // Sub-tick jitter too.
                    ops.push(Op::Schedule(Some(ticks * tick + rng.next() % tick)));
                }
            }
            4..=5 => {
                for _ in 0..rng.range(1, 300) {
                    ops.push(Op::Cancel(rng.next() as usize));
                }
            }
            6..=8 => {
                let steps = rng.range(1, 40);
                for _ in 0..steps {
                    let by = match rng.next() % 4 {
                        0 => 0,
                        1 => rng.next() % tick,
                        2 => tick,
                        _ => rng.next() % (tick * wheel * wheel),
                    };
                    ops.push(Op::Advance(by));
                }
            }
            9 => ops.push(Op::MoveClock(rng.next() % (tick * wheel * 3))),
            // Re-arms of random tasks into one band too: each moves to its new deadline's bucket.
            _ => {
                let level = 1 + rng.next() % 3;
                let span = wheel.saturating_pow(level as u32 + 1).min(1 << 40);
                let base = rng.range(1, span.max(2));
                for _ in 0..rng.range(1, 400) {
                    ops.push(Op::Reset(rng.next() as usize, Some(base * tick + rng.next() % (tick * 8))));
                }
            }
        }
    }
    // Run everything out.
    for _ in 0..200 {
        ops.push(Op::Advance(tick * wheel * wheel));
    }
    ops
}

#[test]
fn big_stages_match_the_reference_model() {
    let seeds: u64 = std::env::var("STAGED_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(6);
    for wheel in [2u64, 3, 4, 5, 6, 7, 8, 12, 16, 60, 64, 100, 512] {
        for seed in 0..seeds {
            let ops = ops(seed * 1_000 + wheel, wheel, 3_000);
            if let Err(e) = check(1, wheel as usize, ops) {
                panic!("wheel {wheel} seed {seed}: {e}");
            }
        }
    }
}

/// Far deadlines and big wheels: bursts of > 128 tasks at level 2..3 of a 65536 wheel and at the top
/// levels of tiny wheels, with clock jumps up to the clock's saturation.
#[test]
fn far_big_stages_on_big_and_tiny_wheels() {
    for (wheel, tick_us) in [(65_536u64, 1u64), (2, 1), (3, 1), (5, 1), (65_536, 20_000)] {
        for seed in 0..4u64 {
            let mut rng = SplitMix(seed ^ wheel);
            let tick = tick_us * 1_000;
            let mut ops = Vec::new();
            for round in 0..6 {
                let scale = 1u64 << rng.range(20, 63);
                let base = rng.next() % scale;
                for _ in 0..rng.range(257, 900) {
                    ops.push(Op::Schedule(Some(base + rng.next() % (scale / 64 + 1))));
                }
                for _ in 0..50 {
                    ops.push(Op::Cancel(rng.next() as usize));
                }
                for _ in 0..40 {
                    ops.push(Op::Advance(rng.next() % (scale / 8 + 1)));
                }
                if round == 3 {
                    ops.push(Op::Schedule(Some(u64::MAX / 2))); // past the clock's range: never fires
                    ops.push(Op::Schedule(None));
                }
            }
            for _ in 0..100 {
                ops.push(Op::Advance(u64::MAX / 64));
            }
            if let Err(e) = check(tick_us, wheel as usize, ops) {
                panic!("wheel {wheel} tick {tick} seed {seed}: {e}");
            }
        }
    }
}

/// Schedule-and-cancel forever, with a share left to fire so that stages are big and chunked: the
/// queue and `len()` stay bounded and every survivor fires at its deadline.
#[test]
fn schedule_and_cancel_forever_with_big_stages() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use std::time::Duration;
    let (clock, timer) = common::manual_timer(Duration::from_millis(1), 64);
    let late = Arc::new(AtomicU64::new(0));
    let fired = Arc::new(AtomicU64::new(0));
    let mut live = std::collections::VecDeque::new();
    let mut max_queue = 0;
    let mut rng = SplitMix(7);
    for tick in 0..12_000u64 {
        for i in 0..1_000u64 {
            let delay = 3_000 + rng.next() % 1_000;
            let (late, fired, c) = (Arc::clone(&late), Arc::clone(&fired), clock.clone());
            let due = Duration::from_millis(tick + delay);
            let h = timer.schedule(Duration::from_millis(delay), move || {
                fired.fetch_add(1, Ordering::Relaxed);
                if c.now() != due {
                    late.fetch_add(1, Ordering::Relaxed);
                }
            });
            if i % 20 != 0 {
                live.push_back((tick, h));
            }
        }
        while live.front().is_some_and(|(t, _)| t + 10 < tick) {
            assert!(live.pop_front().unwrap().1.cancel());
        }
        clock.advance(Duration::from_millis(1));
        timer.advance_clock(Duration::ZERO);
        max_queue = max_queue.max(timer.stats().queued_buckets);
    }
    assert_eq!(late.load(Ordering::Relaxed), 0, "fired off its deadline");
    assert!(fired.load(Ordering::Relaxed) > 300_000);
    assert!(max_queue < 1_000, "queue grew to {max_queue}");
}
