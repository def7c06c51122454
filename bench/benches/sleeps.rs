//! 100,000 concurrent sleeps under a multi-thread tokio runtime: the firing lateness of
//! `Timer::sleep` beside `tokio::time::sleep`, in the same process, alternating.
//!
//! ```sh
//! cargo bench -p delaywheel-bench --bench sleeps
//! SLEEPS_N=20000 SLEEPS_ROUNDS=1 cargo bench -p delaywheel-bench --bench sleeps   # quicker
//! SLEEPS_SPLIT=1 SLEEPS_TIMELINE=1 cargo bench -p delaywheel-bench --bench sleeps # where it accrues
//! ```
//!
//! One round per system: a 2-worker runtime spawns `SLEEPS_N` tasks (default 100,000) from its
//! `block_on` thread, as `#[tokio::main]` code does (`SLEEPS_SPAWN=inside`: from a task on a
//! worker instead); each, when first polled on a worker, reads `Instant::now()`, sleeps its delay
//! (whole milliseconds in [0, 1000), splitmix64 seed 42, the same for both systems) and records its
//! lateness, the time from that reading plus the delay to the instant it runs again (the timer's
//! rounding, its driver's wake-up and the runtime's scheduling of the woken task). A sleep that
//! returns before its delay counts as early (asserted: none).
//!
//! * `delaywheel`: `Timer::new()` (1 ms tick, default wheel, its own driver thread waking the tasks),
//!   shared by every task, `timer.sleep(d).await`;
//! * `delaywheel-in-runtime`: the same timer built without a driver thread
//!   (`Timer::builder().manual()`), driven by `Timer::drive` spawned on the same runtime before the
//!   sleeps, with tokio's `sleep_until`: the wake-ups come from a worker;
//! * `tokio`: the runtime's own timer, `tokio::time::sleep(d).await`.
//!
//! The rounds alternate (`SLEEPS_ROUNDS` each, default 3; `SLEEPS_SYSTEMS`, comma-separated, picks
//! the systems: default `delaywheel,delaywheel-in-runtime,tokio`), each on a fresh runtime and timer. Output,
//! one line per round: `<system> sleeps n=<n> late_p50_ms=<x> late_p99_ms=<x> late_p999_ms=<x>
//! late_max_ms=<x> early=<n>`. On stderr, per round: the load average; the p50/p99 of the sleeps due in the
//! first 100 ms (while the runtime still polls the spawned tasks for the first time, a backlog in its global
//! queue) and of the rest; delaywheel's own firing lateness (`Timer::stats`: when its driver started each
//! wake-up task); the CPU time and context switches (blocking, preempted) of the driver thread and of the
//! runtime's workers (procfs); the ratio of the p99s per pair of rounds.
//!
//! Diagnostics: `SLEEPS_SPLIT=1` polls each sleep through a waker that stamps the instant of its
//! wake (`sleeps/tap.rs`, the same for both systems), and splits the lateness into the timer's part
//! (deadline to wake) and the runtime's (wake to poll); `SLEEPS_TIMELINE=1` prints the lateness per
//! 50 ms window of due instants.

#[allow(dead_code)]
#[path = "spec/measure.rs"]
mod measure;
#[path = "sleeps/tap.rs"]
mod tap;

use std::sync::Arc;
use std::time::{Duration, Instant};

use delaywheel::Timer;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Lateness in ns of each sleep, or `None` for one that returned early; with `SLEEPS_SPLIT`, also
/// the part of it until its waker was woken (the timer's), or `None` if no wake was seen; and its
/// due instant, in ms since the round's start.
type Outcome = (Option<u64>, Option<u64>, u64);

fn lateness(start: Instant, delay: Duration, at: Instant) -> Option<u64> {
    at.duration_since(start).checked_sub(delay).map(|late| late.as_nanos() as u64)
}

/// Runs one round of `name` on a fresh runtime; `start`, called inside the runtime before the
/// sleeps are spawned, spawns what the system needs there (the drive future).
fn run<F, Fut>(
    name: &str,
    delays: &[Duration],
    (split, inside): (bool, bool),
    sleep: F,
    start: impl FnOnce() + Send + 'static,
) -> Vec<Outcome>
where
    F: Fn(Duration) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("a runtime");
    let delays = delays.to_vec();
    let base = Instant::now();
    let spawn_all = move || -> Vec<_> {
        delays
            .iter()
            .map(|&delay| {
                let sleep = sleep.clone();
                tokio::spawn(async move {
                    let start = Instant::now();
                    let woke = if split {
                        let tapped = tap::Tapped::new(sleep(delay));
                        let woke = tapped.woke();
                        tapped.await;
                        woke.get()
                    } else {
                        sleep(delay).await;
                        None
                    };
                    let end = Instant::now();
                    let due = (start + delay).duration_since(base).as_millis() as u64;
                    (lateness(start, delay, end), woke.and_then(|w| lateness(start, delay, w)), due)
                })
            })
            .collect()
    };
    let outcomes = rt.block_on(async move {
        start();
        let tasks = if inside {
            tokio::spawn(async move { spawn_all() }).await.expect("the spawning task panicked")
        } else {
            spawn_all()
        };
        let mut outcomes = Vec::with_capacity(tasks.len());
        for task in tasks {
            outcomes.push(task.await.expect("a sleeping task panicked"));
        }
        outcomes
    });
    eprintln!("# {name}'s {}", threads_line("2 runtime workers", "tokio-rt-worker"));
    outcomes
}

/// The CPU time (ms) and context switches (voluntary: it blocked; involuntary: it was preempted)
/// of this process's threads whose name starts with `prefix`, from procfs (zeros without it).
fn threads(prefix: &str) -> (f64, u64, u64) {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return (0.0, 0, 0) };
    let mut sum = (0.0, 0, 0);
    for task in tasks.flatten() {
        if !std::fs::read_to_string(task.path().join("comm")).is_ok_and(|c| c.starts_with(prefix)) {
            continue;
        }
        let read = |file: &str| std::fs::read_to_string(task.path().join(file)).unwrap_or_default();
        let cpu_ns: u64 =
            read("schedstat").split_whitespace().next().and_then(|f| f.parse().ok()).unwrap_or(0);
        let field = |status: &str, name: &str| -> u64 {
            status.lines().find_map(|l| l.strip_prefix(name)?.trim().parse().ok()).unwrap_or(0)
        };
        let status = read("status");
        sum.0 += cpu_ns as f64 / 1e6;
        sum.1 += field(&status, "voluntary_ctxt_switches:");
        sum.2 += field(&status, "nonvoluntary_ctxt_switches:");
    }
    sum
}

/// [`threads`] as a line of the report.
fn threads_line(what: &str, prefix: &str) -> String {
    let (cpu, voluntary, involuntary) = threads(prefix);
    format!("{what}: CPU {cpu:.0} ms, {voluntary} blocking and {involuntary} preempted switches")
}

/// The `q` quantile of sorted `ns`, in ms.
fn quantile_ms(ns: &[u64], q: f64) -> f64 {
    if ns.is_empty() {
        return f64::NAN;
    }
    let at = ((ns.len() as f64 * q).ceil() as usize).clamp(1, ns.len()) - 1;
    ns[at] as f64 / 1e6
}

fn sorted(values: impl Iterator<Item = u64>) -> Vec<u64> {
    let mut values: Vec<u64> = values.collect();
    values.sort_unstable();
    values
}

/// Prints the round's line; returns its p99 in ms.
fn report(name: &str, delays: &[Duration], outcomes: &[Outcome]) -> f64 {
    let early = outcomes.iter().filter(|o| o.0.is_none()).count();
    let late = sorted(outcomes.iter().filter_map(|o| o.0));
    let ms = |q: f64| quantile_ms(&late, q);
    println!(
        "{name} sleeps n={} late_p50_ms={:.3} late_p99_ms={:.3} late_p999_ms={:.3} late_max_ms={:.3} early={early}",
        outcomes.len(),
        ms(0.5),
        ms(0.99),
        ms(0.999),
        ms(1.0)
    );
    assert_eq!(early, 0, "{name}: a sleep returned before its delay");
    // Sleeps due while the runtime still polls the spawned tasks for the first time, and the rest;
    // with `SLEEPS_SPLIT`, the lateness until the wake (the timer's) and from the wake to the poll.
    for (band, keep) in [("under 100 ms", true), ("100 ms and over", false)] {
        let outcomes: Vec<Outcome> = delays
            .iter()
            .zip(outcomes)
            .filter(|(d, _)| (d.as_millis() < 100) == keep)
            .map(|(_, &o)| o)
            .collect();
        let late = sorted(outcomes.iter().filter_map(|o| o.0));
        let woke = sorted(outcomes.iter().filter_map(|o| o.1));
        let after = sorted(outcomes.iter().filter_map(|&(l, w, _)| Some(l?.saturating_sub(w?))));
        let p = |ns: &[u64]| format!("{:.3}/{:.3}", quantile_ms(ns, 0.5), quantile_ms(ns, 0.99));
        eprintln!(
            "# {name} delays {band} (n={}): late p50/p99 ms {}; to the wake {}; wake to poll {}",
            late.len(),
            p(&late),
            p(&woke),
            p(&after)
        );
    }
    if env("SLEEPS_TIMELINE", 0) != 0 {
        timeline(name, outcomes);
    }
    ms(0.99)
}

/// Per 50 ms window of due instants: how many sleeps, their lateness p50/p99/max, and the p99 of
/// the part after the wake (with `SLEEPS_SPLIT`).
fn timeline(name: &str, outcomes: &[Outcome]) {
    let windows = outcomes.iter().map(|o| o.2 / 50).max().unwrap_or(0) + 1;
    for w in 0..windows {
        let inside: Vec<Outcome> = outcomes.iter().filter(|o| o.2 / 50 == w).copied().collect();
        let late = sorted(inside.iter().filter_map(|o| o.0));
        let after = sorted(inside.iter().filter_map(|&(l, w, _)| Some(l?.saturating_sub(w?))));
        eprintln!(
            "# {name} due {:4}-{:4} ms n={:5} late p50/p99/max {:.2}/{:.2}/{:.2} after-wake p99 {:.2}",
            w * 50,
            w * 50 + 50,
            late.len(),
            quantile_ms(&late, 0.5),
            quantile_ms(&late, 0.99),
            quantile_ms(&late, 1.0),
            quantile_ms(&after, 0.99)
        );
    }
}

/// Checks that every sleep fired, and prints the timer's own firing lateness (`Timer::stats`:
/// when each wake-up task started).
fn own_lateness(name: &str, timer: &Timer) {
    assert!(timer.is_empty(), "every sleep fired");
    let own = timer.stats().lateness;
    eprintln!(
        "# {name}'s own firing lateness (its tasks starting on its driver) p50 / p99 / max ms: {:.3} / {:.3} / {:.3}",
        own.p50.as_secs_f64() * 1e3,
        own.p99.as_secs_f64() * 1e3,
        own.max.as_secs_f64() * 1e3
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing: run small then.
    let quick = !std::env::args().any(|a| a == "--bench");
    let n = env("SLEEPS_N", if quick { 1_000 } else { 100_000 });
    let rounds = env("SLEEPS_ROUNDS", if quick { 1 } else { 3 });
    let split = env("SLEEPS_SPLIT", 0) != 0;
    let inside = std::env::var("SLEEPS_SPAWN").is_ok_and(|v| v == "inside");
    let max_ms = if quick { 50 } else { 1_000 };
    let delays: Vec<Duration> =
        measure::delays_ms(0, max_ms, n).into_iter().map(Duration::from_millis).collect();
    eprintln!(
        "# load average at start: {}",
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()
    );
    // `SLEEPS_SYSTEMS`: the systems to run, comma-separated (default both).
    let systems =
        std::env::var("SLEEPS_SYSTEMS").unwrap_or_else(|_| "delaywheel,delaywheel-in-runtime,tokio".into());
    let runs = |name: &str| systems.split(',').any(|s| s == name);
    for _ in 0..rounds {
        let ours = runs("delaywheel").then(|| {
            let timer = Arc::new(Timer::new());
            let sleeper = Arc::clone(&timer);
            let outcomes = run("delaywheel", &delays, (split, inside), move |d| sleeper.sleep(d), || {});
            let driver = threads_line("driver", "delaywheel");
            let p99 = report("delaywheel", &delays, &outcomes);
            eprintln!("# delaywheel's {driver}");
            own_lateness("delaywheel", &timer);
            p99
        });
        let in_runtime = runs("delaywheel-in-runtime").then(|| {
            let name = "delaywheel-in-runtime";
            let timer = Arc::new(Timer::builder().manual().build());
            let (sleeper, driven) = (Arc::clone(&timer), Arc::clone(&timer));
            let start = move || {
                tokio::spawn(driven.drive(|at: Instant| tokio::time::sleep_until(at.into())));
            };
            let outcomes = run(name, &delays, (split, inside), move |d| sleeper.sleep(d), start);
            let p99 = report(name, &delays, &outcomes);
            own_lateness(name, &timer);
            p99
        });
        let theirs = runs("tokio").then(|| {
            report("tokio", &delays, &run("tokio", &delays, (split, inside), tokio::time::sleep, || {}))
        });
        for (name, ours) in [("delaywheel", ours), ("delaywheel-in-runtime", in_runtime)] {
            if let (Some(ours), Some(theirs)) = (ours, theirs) {
                eprintln!("# p99 tokio / {name}: {:.2}", theirs / ours);
            }
        }
    }
    eprintln!(
        "# load average at end: {}",
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()
    );
}
