//! A delay queue of values on a manual timer, for the queue's tests.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use delaywheel::queue::DelayQueue;
use delaywheel::ManualClock;

/// A value that counts its drops, and says which it was.
pub struct Counted {
    pub id: usize,
    pub drops: Arc<AtomicUsize>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

/// A queue on a manual timer with a 1 ms tick and 8 slots, and the clock that drives it.
pub fn manual_queue<T: Send + 'static>() -> (ManualClock, DelayQueue<T>) {
    let (clock, timer) = super::manual_timer(Duration::from_millis(1), 8);
    (clock, DelayQueue::with_timer(timer))
}

/// Moves the clock by `by` and advances the queue's timer.
pub fn advance<T: Send + 'static>(clock: &ManualClock, queue: &DelayQueue<T>, by: Duration) {
    clock.advance(by);
    queue.advance_clock(Duration::ZERO);
}

/// Takes every value of `queue` with `consumers` tokio tasks, each looping on `next_expired`
/// until the queue is empty, and checking that no value comes out before its deadline; returns
/// the values taken, sorted.
#[cfg(feature = "async")]
pub async fn take_all_with_tasks<T: Ord + Send + 'static>(
    queue: &std::sync::Arc<DelayQueue<T>>,
    consumers: usize,
) -> Vec<T> {
    let consumers: Vec<_> = (0..consumers)
        .map(|_| {
            let queue = std::sync::Arc::clone(queue);
            tokio::spawn(async move {
                let mut got = Vec::new();
                while let Some(expired) = queue.next_expired().await {
                    assert!(queue.timer().now() >= expired.deadline(), "early");
                    got.push(expired.into_inner());
                }
                got
            })
        })
        .collect();
    let mut all = Vec::new();
    for consumer in consumers {
        all.extend(consumer.await.unwrap());
    }
    all.sort_unstable();
    all
}
