//! Retries with exponential back-off on a [`DelayQueue`]: webhook deliveries that fail wait in the
//! queue until their next attempt; signals from outside re-arm a waiting retry in place with
//! `reset` (an endpoint reported healthy again is retried at once; a `Retry-After` answer pushes
//! the retry out).
//!
//! ```text
//! cargo run --release --example retry_backoff
//! ```
//!
//! Everything runs on a [`ManualClock`], one tick (1 ms) at a time, so the timeline it prints is
//! the same on every run and the example can check it exactly: every attempt happens at the tick
//! its deadline falls on, never before. Four endpoints fail a few times each before they accept
//! (`search` would fail for a long time, but is reported healthy at 35 ms; `billing` answers 429
//! with `Retry-After: 300 ms` at 50 ms). The back-off doubles from 10 ms up to 160 ms.

use std::collections::HashMap;
use std::time::Duration;

use delaywheel::queue::{DelayQueue, Key};
use delaywheel::{ManualClock, Timer};

const TICK: Duration = Duration::from_millis(1);
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
const MAX_BACKOFF: Duration = Duration::from_millis(160);

/// A webhook delivery waiting for its next attempt.
#[derive(Debug)]
struct Delivery {
    endpoint: &'static str,
    attempt: u32,
    backoff: Duration,
}

/// How many attempts each endpoint refuses before it accepts.
fn refusals(endpoint: &str) -> u32 {
    match endpoint {
        "orders" => 2,
        "billing" => 3,
        "search" => 100, // until it is reported healthy, see `main`
        _ => 1,
    }
}

fn ms(d: Duration) -> u128 {
    d.as_millis()
}

fn main() {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(TICK).clock(clock.clone()).manual().build();
    let queue = DelayQueue::with_timer(timer);
    let start = queue.timer().now();
    let mut waiting: HashMap<&'static str, Key> = HashMap::new();
    let mut search_healthy = false;

    // The first attempts all failed: each endpoint's delivery waits one back-off.
    for endpoint in ["orders", "billing", "search", "audit"] {
        let delivery = Delivery { endpoint, attempt: 1, backoff: FIRST_BACKOFF };
        waiting.insert(endpoint, queue.insert(delivery, FIRST_BACKOFF));
        println!("{:>4} ms  {endpoint:<8} attempt 1 failed, retry in {} ms", 0, ms(FIRST_BACKOFF));
    }

    let mut attempts = 0;
    while !queue.is_empty() {
        clock.advance(TICK);
        let now = queue.timer().now();
        let at = ms(now - start);

        // Signals from outside, re-arming a waiting retry in place (same key, same value).
        if at == 35 {
            search_healthy = true;
            let moved = queue.reset(&waiting["search"], Duration::ZERO);
            assert!(moved, "search's retry was waiting");
            println!("{at:>4} ms  search   reported healthy: retry now");
        }
        if at == 50 {
            let retry_after = now + Duration::from_millis(300);
            let was = queue.deadline(&waiting["billing"]).expect("billing's retry is waiting");
            assert!(queue.reset_at(&waiting["billing"], retry_after));
            println!(
                "{at:>4} ms  billing  answered 429, Retry-After 300 ms: retry moved from {} ms to {} ms",
                ms(was - start),
                ms(retry_after - start)
            );
        }

        queue.advance_clock(Duration::ZERO);
        while let Some(due) = queue.try_recv() {
            assert!(now >= due.deadline(), "retried early");
            assert!(now - due.deadline() < TICK, "retried more than a tick late");
            assert_eq!(waiting.remove(due.get_ref().endpoint), Some(due.key()));
            let mut delivery = due.into_inner();
            delivery.attempt += 1;
            attempts += 1;
            let accepted = delivery.attempt > refusals(delivery.endpoint)
                || (delivery.endpoint == "search" && search_healthy);
            if accepted {
                println!("{at:>4} ms  {:<8} attempt {} delivered", delivery.endpoint, delivery.attempt);
                continue;
            }
            delivery.backoff = (delivery.backoff * 2).min(MAX_BACKOFF);
            let (endpoint, backoff) = (delivery.endpoint, delivery.backoff);
            println!(
                "{at:>4} ms  {endpoint:<8} attempt {} failed, retry in {} ms",
                delivery.attempt,
                ms(backoff)
            );
            waiting.insert(endpoint, queue.insert(delivery, backoff));
        }
    }
    assert!(waiting.is_empty());
    println!("\nall delivered after {attempts} retries, at {} ms", ms(queue.timer().now() - start));
}
