//! Sleeps and timeouts made, armed and re-armed while a manual clock runs ahead of the timer's
//! cursor (the clock moves without an `advance_clock`): `sleep`, `sleep_until`, `timeout` and
//! `timeout_at` (whose lazily armed limits join the thread's tick groups), with deadlines passed,
//! within a tick, or levels ahead, and sleeps reset to any of those; some dropped on the way.
//! Random sequences on ticks from 1 µs to 10 ms (odd ones too) and wheels of 2 to 256 slots, every
//! live future polled by hand with a counting waker after each op. Each is ready only once its
//! deadline has passed on the clock, only after a wake if it was pending; after an advance, none
//! armed with a deadline already passed is still pending, nor any whose deadline's tick boundary
//! the clock has reached.
#![cfg(feature = "async")]

mod common;

use std::future::{pending, Future, Pending};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Waker};
use std::time::Duration;

use common::waker::CountingWaker;
use common::SplitMix;
use delaywheel::{Sleep, Timeout};

const TICKS_NS: [u64; 7] = [1_000, 1_001, 7_000, 999_999, 1_000_000, 1_500_000, 10_000_000];
const WHEELS: [usize; 8] = [2, 3, 4, 7, 8, 20, 60, 256];

enum Fut {
    Sleep(Sleep),
    Timeout(Timeout<Pending<()>>),
}

impl Fut {
    fn poll_ready(&mut self, waker: &Waker) -> bool {
        let mut cx = Context::from_waker(waker);
        match self {
            Fut::Sleep(sleep) => Pin::new(sleep).poll(&mut cx).is_ready(),
            Fut::Timeout(timeout) => Pin::new(timeout).poll(&mut cx).is_ready(),
        }
    }
}

/// One future and what the test knows of it; times in nanoseconds on the manual clock.
struct Item {
    fut: Fut,
    deadline: u64,
    done: bool,
    /// Polled `Pending` since it was made or last reset: armed on the timer.
    armed: bool,
    /// Its deadline had passed when it was armed: elapsed by the next advance.
    passed: bool,
    /// Wake-ups counted when it was armed.
    woken_before: usize,
    wakes: Arc<CountingWaker>,
    waker: Waker,
}

fn run(seed: u64) {
    let mut rng = SplitMix(seed);
    let tick = TICKS_NS[rng.range(0, TICKS_NS.len() as u64) as usize];
    let wheel = WHEELS[rng.range(0, WHEELS.len() as u64) as usize] as u64;
    let (clock, timer) = common::manual_timer(Duration::from_nanos(tick), wheel as usize);
    let origin = timer.now();
    let at = |ns: u64| origin + Duration::from_nanos(ns);
    let mut items: Vec<Item> = Vec::new();
    for step in 0..300 {
        let now = clock.now().as_nanos() as u64;
        let mut advanced = false;
        match rng.range(0, 10) {
            0 | 1 => {
                let by = match rng.range(0, 4) {
                    0 => rng.range(0, tick),
                    1 => rng.range(0, tick * 5),
                    2 => rng.range(0, tick * wheel * wheel),
                    _ => rng.range(0, tick * wheel.pow(4).min(1 << 20)),
                };
                clock.advance(Duration::from_nanos(by));
            }
            2 | 3 => {
                timer.advance_clock(Duration::ZERO);
                advanced = true;
            }
            4..=6 => {
                let delay = match rng.range(0, 5) {
                    0 => 0,
                    1 => rng.range(0, tick),
                    2 => rng.range(0, tick * 10),
                    3 => rng.range(0, tick * wheel.pow(3).min(1 << 24)),
                    _ => rng.range(0, 1 << 36),
                };
                let when = if rng.range(0, 3) == 0 { now.saturating_sub(delay) } else { now + delay };
                let (fut, due) = match rng.range(0, 4) {
                    0 => (Fut::Sleep(timer.sleep(Duration::from_nanos(delay))), at(now + delay)),
                    1 => (Fut::Sleep(timer.sleep_until(at(when))), at(when)),
                    2 => {
                        (Fut::Timeout(timer.timeout(Duration::from_nanos(delay), pending())), at(now + delay))
                    }
                    _ => (Fut::Timeout(timer.timeout_at(at(when), pending())), at(when)),
                };
                let reported = match &fut {
                    Fut::Sleep(sleep) => sleep.deadline(),
                    Fut::Timeout(timeout) => timeout.deadline(),
                };
                assert_eq!(reported, due, "seed {seed} step {step}: the deadline of a new future");
                let (wakes, waker) = CountingWaker::new();
                let deadline = (due - origin).as_nanos() as u64;
                items.push(Item {
                    fut,
                    deadline,
                    done: false,
                    armed: false,
                    passed: false,
                    woken_before: 0,
                    wakes,
                    waker,
                });
            }
            7 | 8 if !items.is_empty() => {
                let i = rng.range(0, items.len() as u64) as usize;
                let delay = [0, rng.range(0, tick * 3), rng.range(0, tick * 1000)][rng.range(0, 3) as usize];
                let when = if rng.range(0, 2) == 0 { now.saturating_sub(delay) } else { now + delay };
                let item = &mut items[i];
                if let Fut::Sleep(sleep) = &mut item.fut {
                    sleep.reset(at(when));
                    (item.deadline, item.done, item.armed) = (when, false, false);
                }
            }
            9 if !items.is_empty() => {
                let i = rng.range(0, items.len() as u64) as usize;
                items.swap_remove(i);
            }
            _ => {}
        }
        let now = clock.now().as_nanos() as u64;
        let ctx = format!("seed {seed} step {step} (tick {tick} ns, wheel {wheel}, clock {now} ns)");
        for item in items.iter_mut().filter(|item| !item.done) {
            let woken = item.wakes.count() > item.woken_before;
            if item.fut.poll_ready(&item.waker) {
                assert!(now >= item.deadline, "{ctx}: ready early, deadline {}", item.deadline);
                assert!(!item.armed || woken, "{ctx}: ready without a wake, deadline {}", item.deadline);
                item.done = true;
                continue;
            }
            if advanced && item.armed {
                let boundary = item.deadline.div_ceil(tick) * tick;
                assert!(
                    !item.passed,
                    "{ctx}: armed past its deadline {}, pending after an advance",
                    item.deadline
                );
                assert!(
                    now < boundary,
                    "{ctx}: pending past its boundary {boundary} (deadline {})",
                    item.deadline
                );
            }
            if !item.armed {
                (item.armed, item.passed, item.woken_before) =
                    (true, item.deadline <= now, item.wakes.count());
            }
        }
    }
}

#[test]
fn futures_armed_while_the_clock_is_ahead_elapse_on_time_and_wake_their_tasks() {
    for seed in 0..2000 {
        run(seed);
    }
}
