//! The instructions one sleep costs end to end under a 2-worker tokio runtime (made, polled pending,
//! fired, woken, polled ready, dropped), for instruction counts under callgrind: the shape of
//! `benches/sleeps.rs` (`N` tasks spawned from the `block_on` thread, each sleeping its delay, whole
//! milliseconds in [0, `MAX_MS`), splitmix64 seed 42) for one system:
//!
//! * `delaywheel`: `Timer::new()`, its own driver thread waking the tasks;
//! * `delaywheel-in-runtime`: a `manual()` timer driven by `Timer::drive` on the runtime, with
//!   tokio's `sleep_until`;
//! * `tokio`: `tokio::time::sleep`;
//! * `none`: the same tasks without a sleep (the spawn and the runtime's part, to subtract).
//!
//! ```sh
//! cargo build --release -p delaywheel-bench --example sleep_cost
//! for s in none delaywheel delaywheel-in-runtime tokio; do
//!   valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file=/tmp/cg.$s \
//!     target/release/examples/sleep_cost $s 20000
//! done
//! callgrind_totals() { grep -h '^totals:' "$@" | awk '{s += $2} END {print s}'; }   # all threads
//! callgrind_annotate --inclusive=yes /tmp/cg.delaywheel-01        # one thread
//! ```
//!
//! `ROUNDS=r` (default 1) runs the `N` sleeps `r` times one after the other on the same runtime
//! and timer: the difference between two values of `r` is what the sleeps cost on a warm timer
//! (its buckets' lists, lanes and pages already there, and no shrink after the first spike).
//!
//! Prints the number of sleeps that returned (and none early); on stderr, the wall time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use delaywheel::Timer;
use delaywheel_bench::splitmix;

/// Spawns a task per delay that sleeps it with `sleep`, and awaits them all, `rounds` times: how
/// many returned no earlier than their delay.
async fn sleeps<F, Fut>(delays: &[Duration], rounds: usize, sleep: F) -> usize
where
    F: Fn(Duration) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let mut on_time = 0;
    for _ in 0..rounds {
        on_time += round(delays, sleep.clone()).await;
    }
    on_time
}

/// One round of [`sleeps`].
async fn round<F, Fut>(delays: &[Duration], sleep: F) -> usize
where
    F: Fn(Duration) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let tasks: Vec<_> = delays
        .iter()
        .map(|&delay| {
            let sleep = sleep.clone();
            tokio::spawn(async move {
                let start = Instant::now();
                sleep(delay).await;
                start.elapsed() >= delay
            })
        })
        .collect();
    let mut on_time = 0;
    for task in tasks {
        on_time += usize::from(task.await.expect("a sleeping task panicked"));
    }
    on_time
}

fn main() {
    let which = std::env::args().nth(1).unwrap_or_else(|| "delaywheel".to_string());
    let n: usize = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let max_ms: u64 = std::env::var("MAX_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000);
    let rounds: usize = std::env::var("ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let mut state = 42;
    let delays: Vec<_> = (0..n).map(|_| Duration::from_millis(splitmix(&mut state) % max_ms)).collect();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_time().build().unwrap();
    let start = Instant::now();
    let on_time = match which.as_str() {
        "delaywheel" => {
            let timer = Arc::new(Timer::new());
            rt.block_on(sleeps(&delays, rounds, move |d| timer.sleep(d)))
        }
        "delaywheel-in-runtime" => {
            let timer = Arc::new(Timer::builder().manual().build());
            let driven = Arc::clone(&timer);
            rt.block_on(async move {
                tokio::spawn(driven.drive(|at: Instant| tokio::time::sleep_until(at.into())));
                sleeps(&delays, rounds, move |d| timer.sleep(d)).await
            })
        }
        "tokio" => rt.block_on(sleeps(&delays, rounds, tokio::time::sleep)),
        "none" => rt.block_on(sleeps(&delays, rounds, |_| async {})),
        other => panic!("unknown system {other}: delaywheel, delaywheel-in-runtime, tokio or none"),
    };
    eprintln!("{which}: {n} sleeps, {rounds} rounds, in {:?}", start.elapsed());
    if which == "none" {
        println!("{} tasks", n * rounds);
    } else {
        assert_eq!(on_time, n * rounds, "a sleep returned early");
        println!("{on_time} sleeps, none early");
    }
}
