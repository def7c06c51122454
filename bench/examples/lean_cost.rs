//! One thread's instructions per schedule + cancel pair of the measurement prototype
//! `delaywheel_bench::lean_core` on a manual timer, in the shapes of `task_cost`'s `MODE=window`
//! (W7 on one thread: `N` timeouts 20–40 s out, each cancelled once 512 newer ones are pending)
//! and `MODE=insert` (`N` timeouts 10–70 s out, then all cancelled), with the same 8-byte task.
//! `ARC=1` takes handles that hold their shard's `Arc` instead of keys, `HANDLE=pool` handles of
//! pooled shards; `LOCK=spin` the spin lock, `LOCK=backoff` the one whose waiters sleep. `MODE=fire`
//! is `task_cost`'s default shape: `N` timeouts 0–1 s out, fired by advancing 1 ms at a time. The
//! crate's build options (`LEAN_FIFO`, `LEAN_LEN`: `lean_core`'s docs) are printed on stderr.
//!
//! ```sh
//! cargo build --release -p delaywheel-bench --example lean_cost --example task_cost
//! MODE=window N=200000 valgrind --tool=callgrind target/release/examples/lean_cost
//! MODE=window N=200000 valgrind --tool=callgrind target/release/examples/task_cost
//! ```

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use delaywheel_bench::lean_core::{
    Backoff, LeanTimer, Own, Owned, Parked, Pool, Pooled, ShardLock, Spin, FIFO, GEN64, LEN,
};
use delaywheel_bench::splitmix;

static SUM: AtomicU64 = AtomicU64::new(0);

fn task(seed: u64) -> impl FnOnce() + Send + 'static {
    move || {
        SUM.fetch_add(std::hint::black_box(seed), Ordering::Relaxed);
    }
}

fn main() {
    eprintln!("FIFO {FIFO}, LEN {LEN:?}, GEN64 {GEN64}");
    let pool = std::env::var("HANDLE").is_ok_and(|v| v == "pool");
    match (std::env::var("LOCK").as_deref(), pool) {
        (Ok("spin"), false) => run::<Spin>(),
        (Ok("spin"), true) => run_pool::<Spin>(),
        (Ok("backoff"), false) => run::<Backoff>(),
        (Ok("backoff"), true) => run_pool::<Backoff>(),
        (_, false) => run::<Parked>(),
        (_, true) => run_pool::<Parked>(),
    }
}

fn env_n() -> u64 {
    std::env::var("N").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000)
}

/// `MODE=fire`: `n` timeouts 0–1 s out, fired by advancing 1 ms at a time.
fn fire<L: ShardLock, O: Own<L>>(timer: &LeanTimer<L, O>, n: u64, state: &mut u64) {
    for i in 0..n {
        timer.schedule(Duration::from_millis(splitmix(state) % 1_000), task(i));
    }
    let mut now = 0;
    while !timer.is_empty() {
        now += 1;
        timer.advance(now);
    }
}

/// W7's shape with pooled handles (`HANDLE=pool`), or `MODE=fire`.
fn run_pool<L: Pooled>() {
    let n = env_n();
    let timer = LeanTimer::<L, Pool>::start_manual();
    let mut state = 42;
    let start = Instant::now();
    if std::env::var("MODE").is_ok_and(|m| m == "fire") {
        fire(&timer, n, &mut state);
    } else {
        let mut window = VecDeque::with_capacity(512);
        for i in 0..n {
            if window.len() == 512 {
                let oldest: delaywheel_bench::lean_core::PoolHandle<L> =
                    window.pop_front().expect("a full window");
                assert!(oldest.cancel());
            }
            let delay = Duration::from_millis(20_000 + splitmix(&mut state) % 20_000);
            window.push_back(timer.schedule_pooled(delay, task(i)));
        }
    }
    eprintln!("{n} timeouts: {:?}", start.elapsed());
    println!("checksum {}", SUM.load(Ordering::Relaxed));
}

fn run<L: ShardLock>() {
    let n = env_n();
    let mode = std::env::var("MODE").unwrap_or_else(|_| "window".into());
    let arc = std::env::var("ARC").is_ok_and(|v| v == "1");
    let timer = LeanTimer::<L, Owned>::start_manual();
    let mut state = 42;
    let start = Instant::now();
    match (mode.as_str(), arc) {
        ("window", false) => {
            let mut window = VecDeque::with_capacity(512);
            for i in 0..n {
                if window.len() == 512 {
                    assert!(timer.cancel(&window.pop_front().expect("a full window")));
                }
                window.push_back(
                    timer.schedule(Duration::from_millis(20_000 + splitmix(&mut state) % 20_000), task(i)),
                );
            }
        }
        ("window", true) => {
            let mut window = VecDeque::with_capacity(512);
            for i in 0..n {
                if window.len() == 512 {
                    let oldest: delaywheel_bench::lean_core::Handle<L> =
                        window.pop_front().expect("a full window");
                    assert!(oldest.cancel());
                }
                let delay = Duration::from_millis(20_000 + splitmix(&mut state) % 20_000);
                window.push_back(timer.schedule_handle(delay, task(i)));
            }
        }
        ("insert", _) => {
            let keys: Vec<_> = (0..n)
                .map(|i| {
                    timer.schedule(Duration::from_millis(10_000 + splitmix(&mut state) % 60_000), task(i))
                })
                .collect();
            assert!(keys.iter().all(|key| timer.cancel(key)));
        }
        ("fire", _) => fire(&timer, n, &mut state),
        _ => panic!("MODE: window, insert or fire"),
    }
    eprintln!("{n} timeouts: {:?}", start.elapsed());
    println!("checksum {}", SUM.load(Ordering::Relaxed));
}
