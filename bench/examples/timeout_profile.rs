//! A small driver for profiling one timeout that is pending once (the `timeout_pending_once` group
//! of `benches/async_timeout.rs`) under `valgrind --tool=callgrind`, where criterion's own analysis
//! would drown it: one task on a 2-worker runtime awaits `N` such timeouts in a loop, with
//! delaywheel's `Timer::timeout` (a default timer with its driver thread) or `tokio::time::timeout`.
//!
//! ```sh
//! cargo build --release -p delaywheel-bench --example timeout_profile
//! valgrind --tool=callgrind target/release/examples/timeout_profile delaywheel 100000
//! valgrind --tool=callgrind target/release/examples/timeout_profile tokio 100000
//! valgrind --tool=callgrind target/release/examples/timeout_profile delaywheel 100000 alternate
//! callgrind_annotate --inclusive=yes callgrind.out.<pid>
//! ```

use std::time::Duration;

use delaywheel_bench::PendingOnce;

/// The limit of the `i`th timeout: 30 s, or with `alternate` 30 s and 60 s by turns (a thread
/// whose consecutive timeouts never fall in one tick: two limits interleaved).
fn limit(i: u64, alternate: bool) -> Duration {
    Duration::from_secs(if alternate && i % 2 == 1 { 60 } else { 30 })
}

async fn ours(timer: &delaywheel::Timer, n: u64, alternate: bool) -> u64 {
    let mut s = 0;
    for i in 0..n {
        s += timer.timeout(limit(i, alternate), PendingOnce::new()).await.unwrap_or(0);
    }
    s
}

async fn theirs(n: u64, alternate: bool) -> u64 {
    let mut s = 0;
    for i in 0..n {
        s += tokio::time::timeout(limit(i, alternate), PendingOnce::new()).await.unwrap_or(0);
    }
    s
}

fn main() {
    let which = std::env::args().nth(1).unwrap_or_else(|| "delaywheel".to_string());
    let n: u64 = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let alternate = std::env::args().nth(3).is_some_and(|a| a == "alternate");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_time().build().unwrap();
    let timer = std::sync::Arc::new(delaywheel::Timer::new());
    let t = timer.clone();
    let s = rt.block_on(async move {
        if which == "tokio" {
            tokio::spawn(theirs(n, alternate)).await.unwrap()
        } else {
            tokio::spawn(async move { ours(&t, n, alternate).await }).await.unwrap()
        }
    });
    println!("{s}");
}
