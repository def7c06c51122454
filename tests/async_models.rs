//! Random operation sequences on a manual clock checked step by step against reference models of
//! the async futures, as `model.rs` checks the timer's tasks:
//!
//! * **sleeps**: created by delay and by instant (also passed ones), reset to instants passed and
//!   ahead, dropped, polled, and the clock advanced by sub-tick to multi-tick steps. A sleep is
//!   elapsed never before its deadline, and after every advance every sleep whose deadline the
//!   wheel's cursor has reached is elapsed (at most a tick late, nothing lost); a poll agrees with
//!   `is_elapsed`; `deadline()` reads back the instant set; `len()` counts the sleeps still waiting.
//! * **intervals**: tokio's `Interval` arithmetic, written out here, under random resets
//!   (`reset`, `reset_immediately`, `reset_after`, `reset_at` into the past and the future),
//!   switches of `MissedTickBehavior`, polls and clock moves: each tick returns the instant the
//!   model says, and comes exactly when its instant is due (at once if it was due when armed, else
//!   once the cursor reaches it). A tick taken at most 5 ms (or one timer tick) late is on time.
//!
//! Deterministic: each case is a seed of `common::SplitMix`.
#![cfg(feature = "async")]

mod common;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use common::SplitMix;
use delaywheel::{Interval, ManualClock, MissedTickBehavior, Sleep, Timer};

fn cx() -> Context<'static> {
    Context::from_waker(futures::task::noop_waker_ref())
}

fn manual(tick: u64, wheel_size: usize) -> (ManualClock, Timer) {
    let clock = ManualClock::new();
    let timer = Timer::builder()
        .tick(Duration::from_nanos(tick))
        .wheel_size(wheel_size)
        .clock(clock.clone())
        .manual()
        .build();
    (clock, timer)
}

fn nanos(n: u64) -> Duration {
    Duration::from_nanos(n)
}

#[test]
fn sleeps_are_never_early_never_lost_and_len_counts_the_waiting_ones() {
    for seed in 1..200u64 {
        let mut rng = SplitMix(seed);
        let tick = [1_000, 250_000, 1_000_000][(seed % 3) as usize];
        let (clock, timer) = manual(tick, 2 + (seed % 5) as usize);
        let origin = timer.now();
        let mut sleeps: Vec<(Sleep, Instant)> = Vec::new();
        for step in 0..400 {
            let now = timer.now();
            let case = || format!("seed {seed} step {step}");
            match rng.range(0, 10) {
                0 | 1 => {
                    let delay = nanos(rng.range(0, tick * 20));
                    let sleep = timer.sleep(delay);
                    assert_eq!(sleep.deadline(), now + delay, "{}", case());
                    sleeps.push((sleep, now + delay));
                }
                2 => {
                    // Before the clock's origin too, early on.
                    let at = now.checked_sub(nanos(rng.range(0, tick * 30))).expect("an instant");
                    sleeps.push((timer.sleep_until(at), at));
                }
                3 if !sleeps.is_empty() => {
                    let i = rng.range(0, sleeps.len() as u64) as usize;
                    let at = match rng.range(0, 3) {
                        0 => now.checked_sub(nanos(rng.range(0, tick * 5))).expect("an instant"),
                        _ => now + nanos(rng.range(0, tick * 20)),
                    };
                    sleeps[i].0.reset(at);
                    sleeps[i].1 = at;
                    assert_eq!(sleeps[i].0.deadline(), at, "{}", case());
                }
                4 if !sleeps.is_empty() => {
                    let i = rng.range(0, sleeps.len() as u64) as usize;
                    drop(sleeps.swap_remove(i)); // cancels its task
                }
                5 | 6 => {
                    for (sleep, _) in &mut sleeps {
                        let _ = Pin::new(sleep).poll(&mut cx());
                    }
                }
                _ => {
                    clock.advance(nanos(rng.range(0, tick * 4)));
                    timer.advance_clock(Duration::ZERO);
                    let cursor = origin + timer.current_time();
                    for (i, (sleep, deadline)) in sleeps.iter().enumerate() {
                        assert!(*deadline > cursor || sleep.is_elapsed(), "{}: sleep {i} late", case());
                    }
                }
            }
            let mut waiting = 0;
            for (i, (sleep, deadline)) in sleeps.iter_mut().enumerate() {
                let elapsed = sleep.is_elapsed();
                assert!(!elapsed || timer.now() >= *deadline, "{}: sleep {i} early", case());
                assert_eq!(Pin::new(&mut *sleep).poll(&mut cx()).is_ready(), elapsed, "{}", case());
                waiting += usize::from(!elapsed);
            }
            assert_eq!(timer.len(), waiting, "{}: len", case());
        }
        clock.advance(Duration::from_secs(1));
        timer.advance_clock(Duration::ZERO);
        assert!(sleeps.iter().all(|(sleep, _)| sleep.is_elapsed()), "seed {seed}: a sleep was lost");
        assert!(timer.is_empty());
    }
}

/// tokio's `Interval` after a tick due at `due` is taken at `now`: the next tick's instant.
fn tokio_next(
    due: Instant,
    now: Instant,
    period: Duration,
    on_time: Duration,
    b: MissedTickBehavior,
) -> Instant {
    let late = now.saturating_duration_since(due);
    if late <= on_time {
        return due + period;
    }
    match b {
        MissedTickBehavior::Burst => due + period,
        MissedTickBehavior::Delay => now + period,
        MissedTickBehavior::Skip => {
            let skipped = late.as_nanos() % period.as_nanos();
            now + period - nanos(u64::try_from(skipped).expect("less than a period"))
        }
    }
}

#[test]
fn intervals_tick_at_the_instants_of_tokios_arithmetic_through_resets_and_stalls() {
    use MissedTickBehavior::{Burst, Delay, Skip};
    for seed in 1..300u64 {
        let mut rng = SplitMix(seed);
        let tick = [1_000_000, 250_000, 10_000_000][(seed % 3) as usize];
        let (clock, timer) = manual(tick, 4 + (seed % 5) as usize);
        let origin = timer.now();
        let off_grid = if rng.range(0, 2) == 0 { rng.range(0, tick) } else { 0 };
        let mut interval: Interval = timer.interval(nanos(tick * rng.range(1, 13) + off_grid));
        let period = interval.period();
        let on_time = nanos(tick).max(Duration::from_millis(5));
        let mut behavior = Burst;
        // The model: the next tick's instant, and the clock reading when it was set.
        let (mut next, mut set_at) = (origin, origin);
        for step in 0..300 {
            let now = timer.now();
            let case = || format!("seed {seed} step {step}, period {period:?}, {behavior:?}");
            match rng.range(0, 12) {
                0 => {
                    behavior = [Burst, Delay, Skip][rng.range(0, 3) as usize];
                    interval.set_missed_tick_behavior(behavior);
                }
                1 => {
                    interval.reset();
                    (next, set_at) = (now + period, now);
                }
                2 => {
                    interval.reset_immediately();
                    (next, set_at) = (now, now);
                }
                3 => {
                    let after = nanos(rng.range(0, tick * 30));
                    interval.reset_after(after);
                    (next, set_at) = (now + after, now);
                }
                4 => {
                    let at = match rng.range(0, 2) {
                        0 => now + nanos(rng.range(0, tick * 30)),
                        _ => now.checked_sub(nanos(rng.range(0, tick * 30))).expect("an instant"),
                    };
                    interval.reset_at(at);
                    (next, set_at) = (at, now);
                }
                5..=8 => {
                    let due = next <= set_at || next <= origin + timer.current_time();
                    match interval.poll_tick(&mut cx()) {
                        Poll::Ready(at) => {
                            assert!(due, "{}: a tick before its instant", case());
                            assert_eq!(at, next, "{}: the tick's instant", case());
                            (next, set_at) = (tokio_next(next, now, period, on_time, behavior), now);
                        }
                        Poll::Pending => assert!(!due, "{}: the tick due at {next:?} is late", case()),
                    }
                }
                _ => {
                    clock.advance(nanos(rng.range(0, period.as_nanos() as u64 * 3)));
                    timer.advance_clock(Duration::ZERO);
                }
            }
        }
        drop(interval);
        assert!(timer.is_empty(), "seed {seed}: the dropped interval's task is cancelled");
    }
}
