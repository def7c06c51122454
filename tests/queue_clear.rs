//! `DelayQueue::clear`, `with_capacity` and `next_deadline`, exactly, on a manual clock: what a
//! clear drops (pending and expired values, once each) and what it leaves (tasks scheduled on the
//! queue's timer, values inserted after it), a clear from inside a task of the queue's own timer,
//! a consumer finding the queue ended during a clear, and the deadline the queue reports next.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread;
use std::time::{Duration, Instant};

use common::ms;
use common::queue::{advance, manual_queue, Counted};
use delaywheel::queue::{DelayQueue, Expired};

fn counted(id: usize, drops: &Arc<AtomicUsize>) -> Counted {
    Counted { id, drops: Arc::clone(drops) }
}

fn ids(queue: &DelayQueue<Counted>) -> Vec<usize> {
    std::iter::from_fn(|| queue.try_recv()).map(|expired| expired.get_ref().id).collect()
}

#[test]
fn a_clear_drops_every_pending_and_expired_value_once_and_leaves_plain_tasks() {
    let (clock, queue) = manual_queue::<Counted>();
    let drops = Arc::new(AtomicUsize::new(0));
    let ran = Arc::new(AtomicUsize::new(0));
    let keys: Vec<_> = (0..10).map(|id| queue.insert(counted(id, &drops), ms(2 + 3 * id as u64))).collect();
    let task = {
        let ran = Arc::clone(&ran);
        queue.timer().schedule(ms(20), move || {
            ran.fetch_add(1, Ordering::SeqCst);
        })
    };
    advance(&clock, &queue, ms(9)); // values 0 to 2 expire (2, 5, 8 ms)
    assert_eq!(queue.try_recv().map(|e| e.get_ref().id), Some(0));
    assert_eq!(drops.load(Ordering::SeqCst), 1, "the value taken");
    assert_eq!(queue.len(), 9);
    let cancelled_before = queue.timer().stats().cancelled;

    queue.clear();
    assert_eq!(drops.load(Ordering::SeqCst), 10, "two expired and seven pending values dropped, once");
    assert_eq!((queue.len(), queue.is_empty()), (0, true));
    assert!(queue.try_recv().is_none());
    assert!(keys.iter().all(|key| queue.remove(key).is_none() && queue.deadline(key).is_none()));
    assert_eq!(queue.timer().stats().cancelled - cancelled_before, 7, "the pending values, as removes");
    assert_eq!(queue.timer().len(), 1, "the plain task is still pending");
    assert!(task.is_pending());

    // Nothing of them comes out later; the plain task runs at its tick; the queue goes on.
    let later = queue.insert(counted(10, &drops), ms(5));
    advance(&clock, &queue, ms(11)); // 20 ms
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert_eq!(ids(&queue), [10]);
    assert!(queue.remove(&later).is_none());
    assert_eq!(drops.load(Ordering::SeqCst), 11);
    assert!(queue.is_empty());
    queue.clear();
    queue.clear();
    assert_eq!(drops.load(Ordering::SeqCst), 11, "a clear of an empty queue drops nothing");
}

#[test]
fn a_clear_wakes_a_consumer_waiting_on_the_values_it_dropped() {
    let (_clock, queue) = manual_queue::<Counted>();
    let drops = Arc::new(AtomicUsize::new(0));
    queue.insert(counted(0, &drops), ms(50));
    thread::scope(|s| {
        let waiter = s.spawn(|| {
            let started = Instant::now();
            (queue.recv_timeout(Duration::from_secs(30)).map(|e| e.get_ref().id), started.elapsed())
        });
        // The consumer finds a pending value and waits; the clear empties the queue.
        thread::sleep(ms(50));
        queue.clear();
        let (got, waited) = waiter.join().unwrap();
        assert_eq!(got, None);
        assert!(waited < Duration::from_secs(10), "woken by the clear, not by its timeout: {waited:?}");
    });
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn a_clear_from_a_task_of_the_queues_timer_leaves_the_values_its_batch_fired_before_it() {
    let (clock, queue) = manual_queue::<Counted>();
    let queue = Arc::new(queue);
    let drops = Arc::new(AtomicUsize::new(0));
    // Due at 5 ms, in this order: A fires before the task, B after it in the same batch.
    queue.insert(counted(0, &drops), ms(5));
    let len_seen = Arc::new(Mutex::new(None));
    {
        let (weak, len_seen) = (Arc::downgrade(&queue), Arc::clone(&len_seen));
        queue.timer().schedule(ms(5), move || {
            let queue = weak.upgrade().expect("the queue outlives its timer's tasks");
            queue.clear();
            *len_seen.lock().unwrap() = Some(queue.len());
        });
    }
    queue.insert(counted(1, &drops), ms(5));
    queue.insert(counted(2, &drops), ms(9));
    advance(&clock, &queue, ms(5));
    // A was fired (taken out of the wheel) before the task ran: the clear could not take it, and
    // it comes out after the batch. B, fired after the task, and C, pending, were dropped.
    assert_eq!(*len_seen.lock().unwrap(), Some(1), "A, fired and not handed over yet");
    assert_eq!(drops.load(Ordering::SeqCst), 2);
    assert_eq!(ids(&queue), [0]);
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    advance(&clock, &queue, ms(10));
    assert!(queue.try_recv().is_none() && queue.is_empty());
}

/// A value whose drop, the first time a clear drops it, shuts the queue's timer down and looks at
/// the queue as a consumer: what it finds.
struct ShutsDown {
    queue: Weak<DelayQueue<ShutsDown>>,
    seen: Arc<Mutex<Option<(bool, usize)>>>,
}

impl Drop for ShutsDown {
    fn drop(&mut self) {
        if let Some(queue) = self.queue.upgrade() {
            drop(queue.timer().shutdown_timeout(Duration::ZERO));
            let ended = queue.recv_timeout(Duration::from_secs(30)).is_none();
            *self.seen.lock().unwrap() = Some((ended, queue.len()));
        }
    }
}

/// The clear drops the pending values it claimed after it let advances run again: a shutdown of
/// the timer then (here from the drop of such a value, as it may come from any other thread)
/// closes the queue, and a consumer finds it ended. By then the clear has counted its values
/// out, so `len()` agrees: no consumer sees the end while the count still holds values the clear
/// took.
#[test]
fn a_consumer_that_finds_the_queue_ended_during_a_clear_finds_it_empty() {
    let (_clock, queue) = manual_queue::<ShutsDown>();
    let queue = Arc::new(queue);
    let seen = Arc::new(Mutex::new(None));
    queue.insert(ShutsDown { queue: Arc::downgrade(&queue), seen: Arc::clone(&seen) }, ms(50));
    queue.clear();
    assert_eq!(*seen.lock().unwrap(), Some((true, 0)), "(ended, len) as the clear dropped a value");
    assert_eq!(queue.len(), 0);
}

#[test]
fn with_capacity_builds_a_queue_that_works_at_any_capacity_zero_included() {
    for capacity in [0, 1, 300] {
        let queue = DelayQueue::with_capacity(capacity);
        let count = capacity.max(1) * 2;
        for id in 0..count {
            queue.insert(id, ms(1 + id as u64 % 5));
        }
        assert_eq!(queue.len(), count);
        let mut got: Vec<usize> = (0..count)
            .map(|_| queue.recv_timeout(Duration::from_secs(10)).expect("expires").into_inner())
            .collect();
        got.sort_unstable();
        assert_eq!(got, (0..count).collect::<Vec<_>>(), "capacity {capacity}");
        assert!(queue.is_empty());
    }
}

#[test]
fn next_deadline_is_the_oldest_expired_value_else_never_after_the_earliest_pending_tick() {
    let (clock, queue) = manual_queue::<u32>();
    let start = queue.timer().now();
    assert_eq!(queue.next_deadline(), None);
    // A plain task alone: the queue is empty, its next deadline none.
    let task = queue.timer().schedule(ms(3), || {});
    assert_eq!(queue.next_deadline(), None);
    assert!(task.cancel());

    let early = queue.insert(1, Duration::from_micros(6_500));
    let late = queue.insert(2, ms(30));
    let next = queue.next_deadline().expect("pending");
    assert!(next <= start + ms(7), "after the earliest value's tick: {:?}", next - start);
    assert_eq!(queue.remove(&early), Some(1));
    let next = queue.next_deadline().expect("pending");
    assert!(next <= start + ms(30), "after the remaining value's tick: {:?}", next - start);

    // Jumping from one reported instant to the next reaches the value at its tick, not earlier.
    let mut jumps = 0;
    let expired: Expired<u32> = loop {
        if let Some(expired) = queue.try_recv() {
            break expired;
        }
        let next = queue.next_deadline().expect("pending");
        assert!(next <= start + ms(30));
        clock.advance(next.saturating_duration_since(queue.timer().now()));
        queue.advance_clock(Duration::ZERO);
        jumps += 1;
        assert!(jumps < 10, "no progress");
    };
    assert_eq!((expired.key(), queue.timer().now() - start), (late, ms(30)));

    // Expired values not taken: the oldest one's deadline, in the past.
    let first = queue.insert(3, ms(2));
    queue.insert(4, ms(1));
    queue.insert(5, ms(20));
    advance(&clock, &queue, ms(5));
    assert_eq!(queue.next_deadline(), Some(start + ms(31)), "the value due at 1 ms, taken first");
    assert_eq!(queue.try_recv().map(Expired::into_inner), Some(4));
    assert_eq!((queue.deadline(&first), queue.next_deadline()), (None, Some(start + ms(32))));
    assert_eq!(queue.try_recv().map(Expired::into_inner), Some(3));
    assert!(queue.next_deadline().expect("the value due at 20 ms") <= start + ms(50));
    queue.clear();
    assert_eq!(queue.next_deadline(), None);
}
