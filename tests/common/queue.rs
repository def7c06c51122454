//! A delay queue of values on a manual timer, for the queue's tests.

use std::time::Duration;

use delaywheel::queue::DelayQueue;
use delaywheel::ManualClock;

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
