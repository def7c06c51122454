//! The blocking consumers of `std::sync::mpsc::Receiver`'s shape: `DelayQueue::recv`, `iter` (and
//! `for expired in &queue`) and `try_iter`, on manual timers: exact deadlines, deadline order,
//! each value to one consumer, and the end when nothing is pending or expired.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;

use common::ms;
use common::queue::{advance, manual_queue, Counted};
use delaywheel::queue::{DelayQueue, Expired};

/// Advances `queue`'s clock 1 ms at a time until `taken` reaches `n` (the consumers have taken
/// every value).
fn drive_until(clock: &delaywheel::ManualClock, queue: &DelayQueue<u64>, n: usize, taken: &AtomicUsize) {
    while taken.load(Ordering::SeqCst) < n {
        advance(clock, queue, ms(1));
        thread::yield_now();
    }
}

#[test]
fn recv_and_an_empty_queue_return_none_at_once() {
    let (_clock, queue) = manual_queue::<u32>();
    assert!(queue.recv().is_none());
    assert_eq!(queue.iter().count(), 0);
    assert_eq!(queue.try_iter().count(), 0);
}

#[test]
fn iter_yields_every_value_at_its_deadline_in_deadline_order_then_ends() {
    let (clock, queue) = manual_queue::<u64>();
    let queue = Arc::new(queue);
    let start = queue.timer().now();
    for delay in [7, 3, 5, 3, 9] {
        queue.insert(delay, ms(delay));
    }
    let taken = Arc::new(AtomicUsize::new(0));
    let consumer = {
        let (queue, taken) = (Arc::clone(&queue), Arc::clone(&taken));
        thread::spawn(move || {
            let mut seen = Vec::new();
            for expired in &*queue {
                let now = queue.timer().now();
                assert!(now >= expired.deadline(), "early: {:?} before {:?}", now, expired.deadline());
                seen.push((expired.deadline() - start, expired.into_inner()));
                taken.fetch_add(1, Ordering::SeqCst);
            }
            seen
        })
    };
    drive_until(&clock, &queue, 5, &taken);
    let seen = consumer.join().unwrap();
    let expect: Vec<_> = [3, 3, 5, 7, 9].iter().map(|&d| (ms(d), d)).collect();
    assert_eq!(seen, expect);
    assert!(queue.is_empty());
}

#[test]
fn each_value_goes_to_one_of_many_iterating_threads() {
    let (clock, queue) = manual_queue::<u64>();
    let queue = Arc::new(queue);
    let n = 200;
    for i in 0..n {
        queue.insert(i, ms(1 + i % 20));
    }
    let taken = Arc::new(AtomicUsize::new(0));
    let consumers: Vec<_> = (0..4)
        .map(|_| {
            let (queue, taken) = (Arc::clone(&queue), Arc::clone(&taken));
            thread::spawn(move || {
                queue
                    .iter()
                    .map(|expired| {
                        taken.fetch_add(1, Ordering::SeqCst);
                        expired.into_inner()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    drive_until(&clock, &queue, n as usize, &taken);
    let mut all: Vec<u64> = consumers.into_iter().flat_map(|c| c.join().unwrap()).collect();
    all.sort_unstable();
    assert_eq!(all, (0..n).collect::<Vec<_>>(), "every value once");
}

#[test]
fn recv_waiting_ends_when_the_last_pending_value_is_removed() {
    let (_clock, queue) = manual_queue::<u32>();
    let queue = Arc::new(queue);
    let key = queue.insert(1, ms(5));
    let (started, wait_started) = mpsc::channel();
    let consumer = {
        let queue = Arc::clone(&queue);
        thread::spawn(move || {
            started.send(()).unwrap();
            queue.recv().map(Expired::into_inner)
        })
    };
    wait_started.recv().unwrap();
    assert_eq!(queue.remove(&key), Some(1));
    assert_eq!(consumer.join().unwrap(), None, "the queue became empty: recv ends");
}

#[test]
fn recv_waiting_ends_when_the_timer_shuts_down() {
    let (_clock, queue) = manual_queue::<Counted>();
    let queue = Arc::new(queue);
    let drops = Arc::new(AtomicUsize::new(0));
    queue.insert(Counted { id: 1, drops: Arc::clone(&drops) }, ms(5));
    let (started, wait_started) = mpsc::channel();
    let consumer = {
        let queue = Arc::clone(&queue);
        thread::spawn(move || {
            started.send(()).unwrap();
            let mut iter = queue.iter();
            let first = iter.next().map(|e| e.into_inner().id);
            (first, iter.next().is_none())
        })
    };
    wait_started.recv().unwrap();
    drop(queue.timer().shutdown());
    assert_eq!(consumer.join().unwrap(), (None, true), "ended, and stays ended (fused)");
    assert_eq!(drops.load(Ordering::SeqCst), 1, "the pending value dropped once");
}

#[test]
fn try_iter_takes_what_has_expired_and_never_waits() {
    let (clock, queue) = manual_queue::<u64>();
    for delay in [1, 2, 3, 10] {
        queue.insert(delay, ms(delay));
    }
    advance(&clock, &queue, ms(3));
    let taken: Vec<u64> = queue.try_iter().map(Expired::into_inner).collect();
    assert_eq!(taken, [1, 2, 3]);
    assert_eq!(queue.len(), 1, "the value due at 10 ms is still pending");
    assert_eq!(queue.try_iter().count(), 0, "nothing expired: ends at once, the value still pending");
    advance(&clock, &queue, ms(7));
    assert_eq!(queue.try_iter().map(Expired::into_inner).collect::<Vec<_>>(), [10]);
}
