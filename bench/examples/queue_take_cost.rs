//! One consumer's cost per value taken from a delay queue of values, for instruction counts under
//! callgrind: `N` `u64` values with delays in [0, 1000) ms (splitmix64, seed 42) on a manual timer,
//! expired by advancing its clock 1 ms at a time; after each advance the consumer takes every value
//! that expired, with `try_recv` one by one (`MODE=one`, the default) or with `try_recv_many`, up
//! to 1024 at a time (`MODE=many`). The taking is in functions of their own (`take_one_by_one`,
//! `take_batched`): their inclusive count divided by `N` is the cost per value.
//!
//! ```sh
//! cargo build --release -p delaywheel-bench --example queue_take_cost
//! MODE=many N=100000 valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.many \
//!     target/release/examples/queue_take_cost
//! callgrind_annotate --inclusive=yes /tmp/cg.many | grep take_
//! ```
//!
//! Prints the values' checksum and, on stderr, the wall time.

use std::time::{Duration, Instant};

use delaywheel::queue::{DelayQueue, Expired};
use delaywheel::{ManualClock, Timer};
use delaywheel_bench::splitmix;

#[inline(never)]
fn take_one_by_one(queue: &DelayQueue<u64>) -> u64 {
    let mut sum = 0u64;
    while let Some(expired) = queue.try_recv() {
        sum = sum.wrapping_add(expired.into_inner());
    }
    sum
}

#[inline(never)]
fn take_batched(queue: &DelayQueue<u64>, batch: &mut Vec<Expired<u64>>) -> u64 {
    let mut sum = 0u64;
    while queue.try_recv_many(batch, 1024) != 0 {
        sum = batch.drain(..).fold(sum, |sum, expired| sum.wrapping_add(expired.into_inner()));
    }
    sum
}

fn main() {
    let n: u64 = std::env::var("N").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let batched = std::env::var("MODE").is_ok_and(|mode| mode == "many");
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
    let queue = DelayQueue::with_timer(timer);
    let mut state = 42;
    for i in 0..n {
        queue.insert(i, Duration::from_millis(splitmix(&mut state) % 1_000));
    }
    let (started, mut sum, mut batch) = (Instant::now(), 0u64, Vec::with_capacity(1024));
    while !queue.is_empty() {
        clock.advance(Duration::from_millis(1));
        queue.advance_clock(Duration::ZERO);
        let taken = if batched { take_batched(&queue, &mut batch) } else { take_one_by_one(&queue) };
        sum = sum.wrapping_add(taken);
    }
    assert_eq!(sum, n * (n - 1) / 2, "every value taken once");
    println!("{sum}");
    eprintln!("{} values taken in {:?}", n, started.elapsed());
}
