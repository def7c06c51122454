//! `TimerBuilder::bucket_lanes`: the values accepted (the setting has no other effect: each
//! thread schedules into a shard of its own), and many threads scheduling into the same buckets'
//! ticks, on a manual clock (exact firing ticks, exactly-once cancel).

mod common;

use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::{ms, FireLog};
use delaywheel::{BuildError, ManualClock, Timer};

#[test]
fn bucket_lanes_are_a_power_of_two_from_2_to_16() {
    for lanes in [0, 1, 3, 6, 17, 32] {
        let err = Timer::builder().bucket_lanes(lanes).manual().try_build().unwrap_err();
        assert!(matches!(err, BuildError::InvalidBucketLanes(l) if l == lanes), "{err}");
        assert!(err.to_string().contains("power of two from 2 to 16"), "{err}");
    }
    for lanes in [2, 4, 8, 16] {
        assert!(Timer::builder().bucket_lanes(lanes).manual().try_build().is_ok(), "{lanes} lanes");
    }
    let shown = format!("{:?}", Timer::builder().bucket_lanes(8));
    assert!(shown.ends_with("capacity: 0, bucket_lanes: 8 }"), "{shown}");
}

#[test]
#[should_panic(expected = "timer bucket lanes must be a power of two from 2 to 16, got 5")]
fn build_panics_on_invalid_bucket_lanes() {
    let _ = Timer::builder().bucket_lanes(5).manual().build();
}

/// Threads schedule timeouts of the same delays (the same buckets' ticks, in their shards), then
/// each cancels every other one of another thread's, with either setting of the lanes: the
/// uncancelled ones fire exactly once at their tick and the cancelled never.
#[test]
fn many_threads_share_buckets_and_every_cancel_is_exact() {
    const THREADS: usize = 20;
    const PER_THREAD: usize = 300;
    for lanes in [2, 16] {
        let clock = ManualClock::new();
        let timer = Timer::builder().bucket_lanes(lanes).wheel_size(8).clock(clock.clone()).manual().build();
        let timer = Arc::new(timer);
        let log = FireLog::default();
        let barrier = Arc::new(Barrier::new(THREADS));
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (timer, log, clock, barrier) =
                    (timer.clone(), log.clone(), clock.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    // Delays 5, 10 (level 0), 40 and 100 ticks (levels 1 and 2: cascaded).
                    (0..PER_THREAD)
                        .map(|i| {
                            let delay = [5, 10, 40, 100][i % 4];
                            timer.schedule(ms(delay), log.task(t * PER_THREAD + i, &clock))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let scheduled: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(timer.len(), THREADS * PER_THREAD);
        let cancellers: Vec<_> = (0..THREADS)
            .map(|t| {
                let theirs = scheduled[(t + 1) % THREADS].clone();
                std::thread::spawn(move || theirs.iter().step_by(2).all(|h| h.cancel()))
            })
            .collect();
        assert!(cancellers.into_iter().all(|c| c.join().unwrap()), "every cancel of a pending task wins");
        assert_eq!(timer.len(), THREADS * PER_THREAD / 2);
        for _ in 0..100 {
            clock.advance(ms(1));
            timer.advance_clock(Duration::ZERO);
        }
        let mut runs = log.runs();
        runs.sort_unstable();
        let expected: Vec<_> = (0..THREADS * PER_THREAD)
            .filter(|id| id % PER_THREAD % 2 == 1)
            .map(|id| (id, ms([5, 10, 40, 100][id % PER_THREAD % 4])))
            .collect();
        assert_eq!(runs, expected, "{lanes} lanes: each uncancelled task once, at its tick");
        assert!(timer.is_empty());
    }
}
