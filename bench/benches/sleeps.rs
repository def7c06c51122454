//! 100,000 concurrent sleeps under a multi-thread tokio runtime: the firing lateness of
//! `Timer::sleep` beside `tokio::time::sleep`, in the same process, alternating.
//!
//! ```sh
//! cargo bench -p delaywheel-bench --bench sleeps
//! SLEEPS_N=20000 SLEEPS_ROUNDS=1 cargo bench -p delaywheel-bench --bench sleeps   # quicker
//! ```
//!
//! One round per system: a 2-worker runtime spawns `SLEEPS_N` tasks (default 100,000); each, when
//! first polled on a worker, reads `Instant::now()`, sleeps its delay (whole milliseconds in [0, 1000), splitmix64 seed 42, the same
//! for both systems) and records its lateness, the time from that reading plus the delay to the
//! instant it runs again (the timer's rounding, its driver's wake-up and the runtime's scheduling of
//! the woken task). A sleep that returns before its delay counts as early (asserted: none).
//!
//! * `delaywheel`: `Timer::new()` (1 ms tick, default wheel, its own driver thread waking the tasks),
//!   shared by every task, `timer.sleep(d).await`;
//! * `tokio`: the runtime's own timer, `tokio::time::sleep(d).await`.
//!
//! The rounds alternate (`SLEEPS_ROUNDS` each, default 3), each on a fresh runtime and timer. Output,
//! one line per round: `<system> sleeps n=<n> late_p50_ms=<x> late_p99_ms=<x> late_p999_ms=<x>
//! late_max_ms=<x> early=<n>`; stderr gets the ratio of the p99s per pair of rounds, and
//! delaywheel's own firing lateness (`Timer::stats`: when its driver started each wake-up task), which
//! tells the timer's part of the lateness from the runtime's (the woken task's scheduling).

#[allow(dead_code)]
#[path = "spec/measure.rs"]
mod measure;

use std::sync::Arc;
use std::time::{Duration, Instant};

use delaywheel::Timer;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Lateness in ns of each sleep, or `None` for one that returned early.
type Outcome = Option<u64>;

fn lateness(start: Instant, delay: Duration) -> Outcome {
    let slept = start.elapsed();
    slept.checked_sub(delay).map(|late| late.as_nanos() as u64)
}

fn run<F, Fut>(delays: &[Duration], sleep: F) -> Vec<Outcome>
where
    F: Fn(Duration) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let tasks: Vec<_> = delays
            .iter()
            .map(|&delay| {
                let sleep = sleep.clone();
                tokio::spawn(async move {
                    let start = Instant::now();
                    sleep(delay).await;
                    lateness(start, delay)
                })
            })
            .collect();
        let mut outcomes = Vec::with_capacity(tasks.len());
        for task in tasks {
            outcomes.push(task.await.expect("a sleeping task panicked"));
        }
        outcomes
    })
}

/// Prints the round's line; returns its p99 in ms.
fn report(name: &str, outcomes: &[Outcome]) -> f64 {
    let early = outcomes.iter().filter(|o| o.is_none()).count();
    let mut late: Vec<u64> = outcomes.iter().flatten().copied().collect();
    late.sort_unstable();
    let ms = |q: f64| {
        let at = ((late.len() as f64 * q).ceil() as usize).clamp(1, late.len()) - 1;
        late[at] as f64 / 1e6
    };
    println!(
        "{name} sleeps n={} late_p50_ms={:.3} late_p99_ms={:.3} late_p999_ms={:.3} late_max_ms={:.3} early={early}",
        outcomes.len(),
        ms(0.5),
        ms(0.99),
        ms(0.999),
        ms(1.0)
    );
    assert_eq!(early, 0, "{name}: a sleep returned before its delay");
    ms(0.99)
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing: run small then.
    let quick = !std::env::args().any(|a| a == "--bench");
    let n = env("SLEEPS_N", if quick { 1_000 } else { 100_000 });
    let rounds = env("SLEEPS_ROUNDS", if quick { 1 } else { 3 });
    let max_ms = if quick { 50 } else { 1_000 };
    let delays: Vec<Duration> =
        measure::delays_ms(0, max_ms, n).into_iter().map(Duration::from_millis).collect();
    eprintln!(
        "# load average at start: {}",
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()
    );
    for _ in 0..rounds {
        let timer = Arc::new(Timer::new());
        let ours = {
            let timer = Arc::clone(&timer);
            report("delaywheel", &run(&delays, move |d| timer.sleep(d)))
        };
        assert!(timer.is_empty(), "every sleep fired");
        let own = timer.stats().lateness;
        eprintln!(
            "# delaywheel's own firing lateness (its tasks starting on its driver) p50 / p99 / max ms: {:.3} / {:.3} / {:.3}",
            own.p50.as_secs_f64() * 1e3,
            own.p99.as_secs_f64() * 1e3,
            own.max.as_secs_f64() * 1e3
        );
        let theirs = report("tokio", &run(&delays, tokio::time::sleep));
        eprintln!("# p99 tokio / delaywheel: {:.2}", theirs / ours);
    }
}
