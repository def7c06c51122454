//! The cost of an advance beside a deadline passed mid-tick while `N` tasks wait in the tick under
//! way (docs/design.md, "Time semantics"): a manual timer, tick 1 ms; `N` tasks due in the tick
//! (4, 5] ms, the clock at 4 ms, then `R` rounds of a zero-delay schedule and an advance, the
//! clock moving on `1 ms / (R + 1)` before each. With `MODE=spread` (the default) the `N`
//! deadlines are spread evenly over the tick, so each passed deadline falls between them and its
//! advance fires the `N / R` or so it passed; with `MODE=ahead` all `N` are due at 5 ms, the
//! tick's end, after every passed deadline; with `MODE=next` they are due in the next tick,
//! (5, 6] ms, out of the take's reach (the floor of a round's cost).
//!
//! ```sh
//! cargo build --release -p delaywheel-bench --example passed_mid_tick_cost
//! MODE=spread N=100000 target/release/examples/passed_mid_tick_cost
//! ```
//!
//! Prints, on stdout, the wall time per round (schedule, advance, and the tasks it fires) and
//! checks that every task ran once, at or after its deadline.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use delaywheel::{ManualClock, Timer};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let n = env("N", 100_000);
    let rounds = env("R", 1_000);
    let mode = std::env::var("MODE").unwrap_or_else(|_| "spread".into());
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
    let ran = Arc::new(AtomicU64::new(0));
    let tick = 1_000_000u64;
    for i in 0..n {
        let at = match mode.as_str() {
            "spread" => 4 * tick + (i + 1) * tick / n,
            "ahead" => 5 * tick,
            "next" => 5 * tick + (i + 1) * tick / n,
            other => panic!("MODE={other}: spread, ahead or next"),
        };
        let ran = Arc::clone(&ran);
        timer.schedule(Duration::from_nanos(at), move || {
            ran.fetch_add(1, Ordering::Relaxed);
        });
    }
    clock.advance(Duration::from_millis(4));
    timer.advance_clock(Duration::ZERO);
    let step = Duration::from_nanos(tick / (rounds + 1));
    let started = Instant::now();
    for _ in 0..rounds {
        clock.advance(step);
        let ran = Arc::clone(&ran);
        timer.schedule(Duration::ZERO, move || {
            ran.fetch_add(1, Ordering::Relaxed);
        });
        timer.advance_clock(Duration::ZERO);
    }
    let per_round = started.elapsed() / rounds as u32;
    let fired = ran.load(Ordering::Relaxed);
    clock.advance(Duration::from_millis(3));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(ran.load(Ordering::Relaxed), n + rounds, "every task ran once");
    println!("MODE={mode} N={n} R={rounds}: {per_round:?} per round, {fired} tasks fired in the rounds");
}
