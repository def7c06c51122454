//! tokio-util's `DelayQueue` tests (`tokio-util/tests/time_delay_queue.rs`), ported to
//! `delaywheel::queue::DelayQueue`'s `poll_expired` on a manual clock: the same inserts, resets and
//! removes, the same instants, and whether the consumer was woken. Where tokio-util differs by
//! design, the port says so: a deadline already passed (an insert or a reset into the past) expires
//! by the next advance of the timer, not at the poll, and a wake-up comes only when a value expires
//! or the queue becomes empty (never for the wheel's own housekeeping). Then the shutdown of a
//! queue's real driver while consumer tasks wait, under both tokio runtime flavours.
#![cfg(feature = "async")]

mod common;

use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use common::ms;
use common::queue::{advance, manual_queue};
use common::waker::CountingWaker;
use delaywheel::queue::DelayQueue;
use delaywheel::ManualClock;
use futures::StreamExt;

/// A task polling the queue: tells whether it was woken since its last poll (tokio-test's
/// `is_woken`).
struct Task {
    counter: Arc<CountingWaker>,
    waker: Waker,
    seen: usize,
}

impl Task {
    fn new() -> Task {
        let (counter, waker) = CountingWaker::new();
        Task { counter, waker, seen: 0 }
    }

    fn poll<T>(&mut self, queue: &DelayQueue<T>) -> Poll<Option<T>> {
        self.seen = self.counter.count();
        queue.poll_expired(&mut Context::from_waker(&self.waker)).map(|e| e.map(|e| e.into_inner()))
    }

    fn is_woken(&self) -> bool {
        self.counter.count() > self.seen
    }
}

/// A queue on a manual clock already moved `at` from its origin, and a task polling it.
fn queue_at<T: Send + 'static>(at: Duration) -> (ManualClock, DelayQueue<T>, Task) {
    let (clock, queue) = manual_queue();
    advance(&clock, &queue, at);
    (clock, queue, Task::new())
}

#[test]
fn immediate_delays_expire_by_the_next_advance_then_the_queue_ends() {
    let (clock, queue, mut task) = queue_at(ms(0));
    let now = queue.timer().now();
    for value in ["1", "2", "3"] {
        queue.insert_at(value, now);
    }
    assert!(task.poll(&queue).is_pending(), "expires by the next advance, not at the poll");
    advance(&clock, &queue, ms(0));
    assert!(task.is_woken());
    for value in ["1", "2", "3"] {
        assert_eq!(task.poll(&queue), Poll::Ready(Some(value)), "FIFO for equal deadlines");
    }
    assert_eq!(task.poll(&queue), Poll::Ready(None));
}

#[test]
fn single_short_delay() {
    let (clock, queue, mut task) = queue_at(ms(0));
    queue.insert_at("foo", queue.timer().now() + ms(5));
    assert!(task.poll(&queue).is_pending());
    advance(&clock, &queue, ms(1));
    assert!(!task.is_woken());
    advance(&clock, &queue, ms(4));
    assert!(task.is_woken());
    assert_eq!(task.poll(&queue), Poll::Ready(Some("foo")));
    assert_eq!(task.poll(&queue), Poll::Ready(None));
}

/// tokio-util's `multi_delay_at_start`: woken exactly at each delay (tokio-util's wheel also wakes
/// for its cascades; this queue never does), over a wheel whose levels the long one crosses.
#[test]
fn multi_delay_at_start_wakes_exactly_at_each_deadline() {
    let long = 262_144 + 9 * 4096;
    let delays = [1000u64, 2, 234, long, 60, 10];
    let (clock, queue, mut task) = queue_at(ms(0));
    let start = queue.timer().now();
    for &d in &delays {
        queue.insert_at(d, start + ms(d));
    }
    assert!(task.poll(&queue).is_pending());
    let mut got = Vec::new();
    for elapsed in 1..=1200 {
        advance(&clock, &queue, ms(1));
        assert_eq!(task.is_woken(), delays.contains(&elapsed), "at {elapsed} ms");
        if task.is_woken() {
            assert_eq!(task.poll(&queue), Poll::Ready(Some(elapsed)));
            got.push(elapsed);
            assert!(task.poll(&queue).is_pending());
        }
    }
    assert_eq!(got, [2, 10, 60, 234, 1000]);
    advance(&clock, &queue, ms(long - 1201));
    assert!(!task.is_woken());
    advance(&clock, &queue, ms(1));
    assert!(task.is_woken());
    assert_eq!(task.poll(&queue), Poll::Ready(Some(long)));
    assert_eq!(task.poll(&queue), Poll::Ready(None));
}

#[test]
fn inserts_and_resets_into_the_past_expire_by_the_next_advance() {
    let (clock, queue, mut task) = queue_at(ms(10));
    let now = queue.timer().now();
    queue.insert_at("foo", now - ms(10));
    assert!(task.poll(&queue).is_pending());
    advance(&clock, &queue, ms(0));
    assert!(task.is_woken());
    assert_eq!(task.poll(&queue), Poll::Ready(Some("foo")));

    // Reset to the past: tokio-util wakes at the reset; here the next advance expires it.
    let key = queue.insert("bar", ms(10_000));
    assert!(task.poll(&queue).is_pending());
    assert!(queue.reset_at(&key, queue.timer().now() - ms(100)));
    advance(&clock, &queue, ms(0));
    assert!(task.is_woken());
    assert_eq!(task.poll(&queue), Poll::Ready(Some("bar")));

    // An insert in the past after a pending poll, before the first value.
    queue.insert_at("later", queue.timer().now() + ms(200));
    assert!(task.poll(&queue).is_pending());
    advance(&clock, &queue, ms(80));
    assert!(!task.is_woken());
    queue.insert_at("past", queue.timer().now() - ms(40));
    advance(&clock, &queue, ms(0));
    assert!(task.is_woken());
    assert_eq!(task.poll(&queue), Poll::Ready(Some("past")));
    assert!(task.poll(&queue).is_pending());
}

#[test]
fn remove_before_expiry_and_of_an_inserted_expired_value_before_the_advance() {
    let (clock, queue, mut task) = queue_at(ms(10));
    let key = queue.insert_at("foo", queue.timer().now() + ms(5));
    assert!(task.poll(&queue).is_pending());
    assert_eq!(queue.remove(&key), Some("foo"));
    assert!(task.is_woken(), "the queue became empty");
    advance(&clock, &queue, ms(10));
    assert_eq!(task.poll(&queue), Poll::Ready(None));
    // Due already, but the timer has not handed it over: it is still pending, so it comes back.
    let key = queue.insert_at("past", queue.timer().now() - ms(10));
    assert_eq!(queue.remove(&key), Some("past"));
    advance(&clock, &queue, ms(1));
    assert_eq!(task.poll(&queue), Poll::Ready(None));
}

#[test]
fn reset_entry_and_reset_twice_and_much_later() {
    let (clock, queue, mut task) = queue_at(ms(0));
    let now = queue.timer().now();
    let key = queue.insert_at("foo", now + ms(5));
    assert!(task.poll(&queue).is_pending());
    advance(&clock, &queue, ms(1));
    assert!(queue.reset_at(&key, now + ms(10)));
    assert!(task.poll(&queue).is_pending());
    advance(&clock, &queue, ms(7));
    assert!(!task.is_woken(), "woken at the old deadline");
    advance(&clock, &queue, ms(2));
    assert!(task.is_woken());
    assert_eq!(task.poll(&queue), Poll::Ready(Some("foo")));
    assert_eq!(task.poll(&queue), Poll::Ready(None));

    // tokio#849: from 200 ms to 50 ms, then to 40 ms, once the first 3 ms and 23 ms have passed.
    let now = queue.timer().now();
    let key = queue.insert_at("bar", now + ms(200));
    assert!(task.poll(&queue).is_pending());
    advance(&clock, &queue, ms(3));
    assert!(queue.reset_at(&key, now + ms(50)));
    advance(&clock, &queue, ms(20));
    assert!(queue.reset_at(&key, now + ms(40)));
    advance(&clock, &queue, ms(16));
    assert!(!task.is_woken());
    advance(&clock, &queue, ms(1));
    assert!(task.is_woken(), "not woken at the second reset's deadline");
    assert_eq!(task.poll(&queue), Poll::Ready(Some("bar")));
}

#[test]
fn an_entry_inserted_expired_then_reset_to_the_future_keeps_its_place() {
    let (clock, queue, mut task) = queue_at(ms(1000));
    let now = queue.timer().now();
    let key = queue.insert_at("foo", now - ms(100));
    assert!(queue.reset_at(&key, now + ms(100)));
    assert!(queue.reset_at(&key, now + ms(50)));
    assert_eq!((queue.len(), queue.deadline(&key)), (1, Some(now + ms(50))));
    assert!(task.poll(&queue).is_pending());
    advance(&clock, &queue, ms(49));
    assert!(!task.is_woken(), "expired at its inserted deadline after all");
    advance(&clock, &queue, ms(11));
    assert!(task.is_woken());
    assert_eq!(task.poll(&queue), Poll::Ready(Some("foo")));
    assert_eq!((task.poll(&queue), queue.len()), (Poll::Ready(None), 0));
}

#[test]
fn removing_the_other_of_two_values_due_at_a_level_boundary() {
    let (clock, queue, mut task) = queue_at(ms(0));
    let now = queue.timer().now();
    let foo = queue.insert_at("foo", now + ms(64));
    let bar = queue.insert_at("bar", now + ms(64));
    advance(&clock, &queue, ms(80));
    assert_eq!(task.poll(&queue), Poll::Ready(Some("foo")));
    assert_eq!(queue.remove(&bar), None, "expired: it is the queue's to hand out");
    assert_eq!(queue.remove(&foo), None);
    assert_eq!(task.poll(&queue), Poll::Ready(Some("bar")));
}

/// tokio-util's `multi_reset`, `expire_*_key_when_reset_to_expire_earlier`,
/// `reset_first_expiring_item_to_expire_later`, `insert_before_first_after_poll` and
/// `expires_before_last_insert`: resets and inserts that change which value is first.
#[test]
fn resets_and_inserts_that_change_the_first_value() {
    let (clock, queue, mut task) = queue_at(ms(0));
    let now = queue.timer().now();
    let one = queue.insert_at("one", now + ms(200));
    let two = queue.insert_at("two", now + ms(250));
    assert!(task.poll(&queue).is_pending());
    assert!(queue.reset_at(&one, now + ms(300)));
    assert!(queue.reset_at(&two, now + ms(350)));
    assert!(queue.reset_at(&one, now + ms(400)));
    queue.insert_at("three", now + ms(100)); // before the first, after the poll
    advance(&clock, &queue, ms(99));
    assert!(!task.is_woken());
    advance(&clock, &queue, ms(1));
    assert!(task.is_woken());
    assert_eq!(task.poll(&queue), Poll::Ready(Some("three")));
    advance(&clock, &queue, ms(210));
    assert!(task.poll(&queue).is_pending(), "310 ms: the old deadlines passed, the new ones have not");
    advance(&clock, &queue, ms(40));
    assert_eq!(task.poll(&queue), Poll::Ready(Some("two")));
    assert!(task.poll(&queue).is_pending());
    advance(&clock, &queue, ms(50));
    assert_eq!(task.poll(&queue), Poll::Ready(Some("one")));
    assert_eq!(task.poll(&queue), Poll::Ready(None));

    let now = queue.timer().now();
    queue.insert_at("far", now + ms(10_000));
    assert!(task.poll(&queue).is_pending());
    let first = queue.insert_at("first", now + ms(200));
    let second = queue.insert_at("second", now + ms(250));
    assert!(queue.reset_at(&second, now + ms(100)));
    assert!(queue.reset_at(&first, now + ms(300)));
    advance(&clock, &queue, ms(100));
    assert!(task.is_woken());
    assert_eq!(task.poll(&queue), Poll::Ready(Some("second")));
    assert!(task.poll(&queue).is_pending());
    advance(&clock, &queue, ms(200));
    assert_eq!(task.poll(&queue), Poll::Ready(Some("first")));
    assert_eq!(queue.len(), 1, "the far one is still pending");
}

/// tokio-util's `reset_later_after_slot_starts` and `reset_earlier_after_slot_starts`: a value
/// reset within a level's slot that has started is neither early nor late.
#[test]
fn resets_within_a_started_slot_are_exact() {
    for first in [100, 200] {
        let (clock, queue, mut task) = queue_at(ms(0));
        let now = queue.timer().now();
        let foo = queue.insert_at("foo", now + ms(first));
        assert!(task.poll(&queue).is_pending());
        advance(&clock, &queue, ms(80));
        assert!(!task.is_woken());
        assert!(queue.reset_at(&foo, now + ms(120)));
        assert!(task.poll(&queue).is_pending());
        advance(&clock, &queue, ms(39));
        assert!(!task.is_woken(), "from {first} ms: woken before 120 ms");
        advance(&clock, &queue, ms(1));
        assert!(task.is_woken(), "from {first} ms");
        assert_eq!(task.poll(&queue), Poll::Ready(Some("foo")));
    }
}

#[test]
fn inserts_after_a_ready_poll_and_a_clock_far_from_its_origin() {
    let (clock, queue, mut task) = queue_at(ms(0));
    let now = queue.timer().now();
    for value in ["1", "2", "3"] {
        queue.insert_at(value, now + ms(100));
    }
    assert!(task.poll(&queue).is_pending());
    advance(&clock, &queue, ms(100));
    assert!(task.is_woken());
    for value in ["1", "2", "3"] {
        assert_eq!(task.poll(&queue), Poll::Ready(Some(value)));
        queue.insert_at("foo", now + ms(500));
    }
    assert_eq!(queue.len(), 3);

    // tokio-util's `item_expiry_greater_than_wheel`: 2^36 ms after the origin, inserts still work.
    let (clock, mut queue) = manual_queue::<u32>();
    for _ in 0..2 {
        clock.advance(ms(1 << 35));
        queue.insert(0, Duration::ZERO);
        queue.advance_clock(Duration::ZERO);
        assert!(futures::executor::block_on(queue.next()).is_some());
    }
    queue.insert(1, ms(1));
    advance(&clock, &queue, ms(1));
    assert_eq!(futures::executor::block_on(queue.next()).map(|e| e.into_inner()), Some(1));
}

/// The queue's own driver shut down while consumer tasks wait (a `next_expired` future, the
/// `Stream`, a bare `poll_expired`): each is woken and ends with `None`, whether it registered
/// before the shutdown or polls after it, and the queue is empty (the value that expired before
/// was taken first, the pending ones went with the shutdown).
fn shutdown_ends_every_waiting_consumer(runtime: tokio::runtime::Runtime) {
    let queue = Arc::new(DelayQueue::new());
    queue.insert(0u32, Duration::ZERO);
    for i in 1..=10 {
        queue.insert(i, Duration::from_secs(3_600));
    }
    while queue.try_recv().is_none() {
        std::thread::sleep(ms(1)); // the zero delay expires at the driver's next tick
    }
    runtime.block_on(async {
        let consumers: Vec<_> = (0..6)
            .map(|c| {
                let queue = Arc::clone(&queue);
                tokio::spawn(async move {
                    let mut got = 0;
                    loop {
                        let next = match c % 3 {
                            0 => queue.next_expired().await,
                            1 => (&*queue).next().await,
                            _ => std::future::poll_fn(|cx| queue.poll_expired(cx)).await,
                        };
                        match next {
                            Some(_) => got += 1,
                            None => return got,
                        }
                    }
                })
            })
            .collect();
        tokio::task::yield_now().await;
        assert_eq!(queue.timer().shutdown().len(), 10);
        // A guard against a consumer left waiting: the queue's timer is shut down, so another.
        let guard = delaywheel::Timer::new();
        let mut taken = 0;
        for consumer in consumers {
            let ended = guard.timeout(Duration::from_secs(20), consumer).await;
            taken += ended.expect("a consumer still waits after the shutdown").unwrap();
        }
        assert_eq!(taken, 0, "the expired value was taken before the consumers started");
        assert!(queue.is_empty(), "len {} after the shutdown", queue.len());
    });
}

#[test]
fn shutdown_ends_every_waiting_consumer_current_thread() {
    shutdown_ends_every_waiting_consumer(tokio::runtime::Builder::new_current_thread().build().unwrap());
}

#[test]
fn shutdown_ends_every_waiting_consumer_multi_thread() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    shutdown_ends_every_waiting_consumer(runtime);
}
