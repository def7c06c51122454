//! `Interval` against tokio's algorithm, replayed on the seeds' 10 ms tick with periods that are
//! not multiples of it (25, 33 ms; 10 ms; a second) and a start in the middle of a tick: random
//! clock steps of whole ticks (one to hundreds), behaviour changes between ticks, and `reset`,
//! `reset_immediately`, `reset_after`, `reset_at` (also into the past). After every step the
//! ticks that come out are exactly tokio's: the instants due, each once, `Burst` keeping the
//! grid, `Delay` moving it to the late tick's poll, `Skip` to the next grid point after it, and a
//! tick taken at most one timer tick late (5 ms, or the tick if longer) counting as on time.
#![cfg(feature = "async")]

mod common;

use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use common::{manual_timer, ms, SplitMix};
use delaywheel::{Interval, MissedTickBehavior};
use futures::task::noop_waker_ref;

const TICK: Duration = Duration::from_millis(10);

/// tokio's `Interval` (tokio/src/time/interval.rs), with its clock read as `now`.
struct Reference {
    due: Instant,
    period: Duration,
    behavior: MissedTickBehavior,
}

impl Reference {
    fn poll(&mut self, now: Instant) -> Option<Instant> {
        if self.due > now {
            return None;
        }
        let due = self.due;
        let late = TICK.max(ms(5));
        self.due = if now > due + late {
            match self.behavior {
                MissedTickBehavior::Burst => due + self.period,
                MissedTickBehavior::Delay => now + self.period,
                MissedTickBehavior::Skip => {
                    let since = (now - due).as_nanos() % self.period.as_nanos();
                    now + self.period - Duration::from_nanos(since as u64)
                }
            }
        } else {
            due + self.period
        };
        Some(due)
    }
}

fn ready(interval: &mut Interval) -> Vec<Instant> {
    let mut cx = Context::from_waker(noop_waker_ref());
    let mut out = Vec::new();
    while let Poll::Ready(at) = interval.poll_tick(&mut cx) {
        out.push(at);
        assert!(out.len() < 10_000, "an interval that never stops ticking");
    }
    out
}

const BEHAVIORS: [MissedTickBehavior; 3] =
    [MissedTickBehavior::Burst, MissedTickBehavior::Delay, MissedTickBehavior::Skip];

fn run(seed: u64, period: Duration) {
    let mut rng = SplitMix(seed);
    let (clock, timer) = manual_timer(TICK, 60);
    let origin = timer.now();
    // A start mid-tick, a few ticks ahead: ticks are due off the tick boundaries.
    let start = origin + TICK * 3 + ms(3);
    let mut interval = timer.interval_at(start, period);
    let behavior = BEHAVIORS[rng.range(0, 3) as usize];
    interval.set_missed_tick_behavior(behavior);
    let mut model = Reference { due: start, period, behavior };
    for step in 0..300 {
        let ticks = match rng.range(0, 4) {
            0 => 1,
            1 => rng.range(1, 6),
            2 => rng.range(1, 40),
            _ => rng.range(1, 400),
        };
        clock.advance(TICK * ticks as u32);
        timer.advance_clock(Duration::ZERO);
        let now = timer.now();
        let got = ready(&mut interval);
        let want: Vec<Instant> = std::iter::from_fn(|| model.poll(now)).collect();
        let rel = |v: &[Instant]| v.iter().map(|&i| i - origin).collect::<Vec<_>>();
        assert_eq!(rel(&got), rel(&want), "seed {seed} period {period:?} step {step} at {:?}", now - origin);
        match rng.range(0, 12) {
            0 => {
                let b = BEHAVIORS[rng.range(0, 3) as usize];
                interval.set_missed_tick_behavior(b);
                model.behavior = b;
            }
            1 => {
                interval.reset();
                model.due = now + period;
            }
            2 => {
                interval.reset_immediately();
                model.due = now;
            }
            3 => {
                let after = ms(rng.range(0, 100));
                interval.reset_after(after);
                model.due = now + after;
            }
            4 => {
                // Into the past (not before the origin) or the future.
                let back = ms(rng.range(0, 200)).min(now - origin);
                let at = if rng.range(0, 2) == 0 { now - back } else { now + back };
                interval.reset_at(at);
                model.due = at;
            }
            _ => {}
        }
    }
}

#[test]
fn ticks_match_tokios_algorithm_through_stalls_behaviour_changes_and_resets() {
    for (i, period) in [ms(25), ms(33), ms(10), ms(1000)].into_iter().enumerate() {
        for seed in 0..12 {
            run(seed * 4 + i as u64 + 1, period);
        }
    }
}
