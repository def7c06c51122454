//! The delay queue's unit tests.

use super::*;
use crate::sync::{Arc, AtomicU64, Ordering};
use std::time::Instant;

impl Identity for u64 {
    fn identity(&self) -> u64 {
        *self
    }
}

/// Ticks of a millisecond since the start, on the real clock.
struct Millis(Instant);

impl Timeline for Millis {
    fn now_tick(&self) -> u64 {
        self.0.elapsed().as_millis() as u64
    }
    fn until(&self, tick: u64) -> Option<Duration> {
        Some((self.0 + Duration::from_millis(tick)).saturating_duration_since(Instant::now()))
    }
}

/// A clock that moves only when told to (no real time until a tick).
struct Manual(AtomicU64);

impl Timeline for Manual {
    fn now_tick(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
    fn until(&self, _: u64) -> Option<Duration> {
        None
    }
}

#[test]
fn polls_in_expiration_order_then_identity_and_only_when_due() {
    let q = DelayQueue::new();
    q.offer(30, 3);
    q.offer(10, 7);
    q.offer(20, 2);
    q.offer(10, 1);
    assert_eq!(q.len(), 4);
    assert!(q.poll_due(9, u64::MAX).is_none());
    let order: Vec<_> = std::iter::from_fn(|| q.poll_due(25, u64::MAX)).collect();
    assert_eq!(order, [(10, 1), (10, 7), (20, 2)]);
    assert_eq!(q.poll_due(u64::MAX, u64::MAX), Some((30, 3)));
    assert!(q.poll_due(u64::MAX, u64::MAX).is_none());
}

#[test]
fn a_round_leaves_what_was_filed_for_the_next_round_to_it() {
    let q = DelayQueue::new();
    q.offer(5, 1);
    let round = q.round();
    q.offer_next(4, 2); // filed for the next round while this one runs, and due
    q.offer(5, 4); // a schedule's offer: taken in this round
    q.offer_within(5, 3); // the round's own re-queue
    assert_eq!(q.poll_due(5, round), Some((5, 1)));
    assert_eq!(q.poll_due(5, round), Some((5, 3)));
    assert_eq!(q.poll_due(5, round), Some((5, 4)));
    assert_eq!(q.poll_due(5, round), None, "set aside for the next round");
    assert_eq!(q.end_round(), None, "nothing left to come but what it set aside");
    assert_eq!(q.len(), 1);
    q.offer(7, 5);
    let round = q.round();
    assert_eq!(q.poll_due(5, round), Some((4, 2)));
    assert_eq!(q.end_round(), Some(7), "what is left to come");
    assert_eq!(q.len(), 1);
}

#[test]
fn a_wait_ends_when_another_thread_pops_the_due_head() {
    let q = Arc::new(DelayQueue::new());
    let time = Arc::new(Manual(AtomicU64::new(0)));
    q.offer(1, 0);
    let waiter = {
        let (q, time) = (Arc::clone(&q), Arc::clone(&time));
        std::thread::spawn(move || q.wait_due(&*time, None))
    };
    // Once the waiter sleeps (it counts itself under the lock it waits with), the manual clock
    // moves without waking it (no listener here), and another thread pops.
    while q.state.lock().waiters == 0 {
        std::thread::yield_now();
    }
    time.0.store(1, Ordering::Relaxed);
    assert_eq!(q.poll_due(1, u64::MAX), Some((1, 0)));
    assert!(waiter.join().unwrap(), "the pop ended the wait");
}

#[test]
fn a_manual_wait_with_timeout_returns_and_sees_the_clock_move() {
    let q = DelayQueue::new();
    let time = Manual(AtomicU64::new(0));
    q.offer(5, 0);
    let start = Instant::now();
    assert!(!q.wait_due(&time, Some(Duration::from_millis(5))), "not due: gives up");
    assert!(start.elapsed() >= Duration::from_millis(5), "after the timeout, not before");
    time.0.store(5, Ordering::Relaxed);
    assert!(q.wait_due(&time, Some(Duration::from_secs(60))), "due at tick 5: at once");
    assert_eq!(q.poll_due(time.now_tick(), u64::MAX), Some((5, 0)));
}

#[test]
fn a_bound_changed_then_woken_ends_a_wait_that_began_without_one() {
    // The driver's wait for a shrink: `bound` reads what another thread changes, then wakes
    // the queue. Read under the lock at every wake, the change is never missed, whether it
    // comes before the wait reads it, while it sleeps, or between the two.
    for round in 0..500 {
        let q = Arc::new(DelayQueue::<u64>::new());
        let bounded = Arc::new(AtomicU64::new(0));
        q.offer(3_600_000, 0); // an hour away
        let (done, result) = std::sync::mpsc::channel();
        {
            let (q, bounded) = (Arc::clone(&q), Arc::clone(&bounded));
            std::thread::spawn(move || {
                let time = Millis(Instant::now());
                let bound = || (bounded.load(Ordering::Relaxed) == 1).then_some(Duration::ZERO);
                done.send(q.wait_due_within(&time, bound)).unwrap();
            });
        }
        if round % 2 == 1 {
            std::thread::yield_now();
        }
        bounded.store(1, Ordering::Relaxed);
        q.wake();
        let ended = result.recv_timeout(Duration::from_secs(10));
        assert_eq!(ended, Ok(false), "round {round}: the bound ran out, nothing due");
    }
}

#[test]
fn earlier_offer_wakes_a_real_time_waiter() {
    let q = Arc::new(DelayQueue::new());
    let time = Arc::new(Millis(Instant::now()));
    q.offer(3_600_000, 0); // an hour away
    let waiter = {
        let (q, time) = (Arc::clone(&q), Arc::clone(&time));
        std::thread::spawn(move || q.wait_due(&*time, None))
    };
    std::thread::sleep(Duration::from_millis(50));
    q.offer(0, 1); // due now: the waiter must not sleep for an hour
    assert!(waiter.join().unwrap());
    assert_eq!(q.poll_due(time.now_tick(), u64::MAX), Some((0, 1)));
}

#[test]
fn close_releases_waiters_and_empties_the_queue() {
    let q = Arc::new(DelayQueue::new());
    q.offer(3_600_000, 0);
    let waiter = {
        let q = Arc::clone(&q);
        std::thread::spawn(move || q.wait_due(&Millis(Instant::now()), None))
    };
    std::thread::sleep(Duration::from_millis(20));
    q.close();
    assert!(!waiter.join().unwrap());
    assert_eq!(q.len(), 0);
}
