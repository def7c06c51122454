//! `delaywheel::queue::DelayQueue`'s consumer side: `try_recv_many`, values taken a batch at a time
//! from the ready list, several consumers sharing one queue (each value once, in deadline order),
//! and `len` exact across threads. On a manual clock.

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use common::ms;
use common::queue::{advance, manual_queue};
use delaywheel::queue::{DelayQueue, Expired};
use delaywheel::{ManualClock, ScheduleError, Timer};

const TICK: Duration = Duration::from_millis(1);

fn values<T>(batch: &mut Vec<Expired<T>>) -> Vec<T> {
    batch.drain(..).map(Expired::into_inner).collect()
}

#[test]
fn try_recv_many_takes_up_to_its_limit_in_deadline_order_across_fired_batches() {
    let (clock, queue) = manual_queue();
    for (value, delay_us) in [(3, 2_900), (0, 400), (4, 3_100), (1, 700), (2, 2_200), (5, 3_500)] {
        queue.insert(value, Duration::from_micros(delay_us));
    }
    advance(&clock, &queue, ms(1)); // fires 0 and 1
    assert_eq!(queue.try_recv().map(Expired::into_inner), Some(0));
    advance(&clock, &queue, ms(2)); // fires 2 and 3, behind the 1 not yet taken
    let mut batch = Vec::new();
    assert_eq!(queue.try_recv_many(&mut batch, 2), 2);
    assert_eq!(values(&mut batch), [1, 2]);
    assert_eq!(queue.len(), 3, "3 expired and not taken, 4 and 5 pending");
    advance(&clock, &queue, ms(1)); // fires 4 and 5
    batch.push(queue.try_recv().expect("3 is ready"));
    assert_eq!(queue.try_recv_many(&mut batch, 0), 0, "a limit of 0 takes nothing");
    assert_eq!(queue.try_recv_many(&mut batch, 100), 2, "appended after what the buffer held");
    assert_eq!(values(&mut batch), [3, 4, 5]);
    assert_eq!(queue.try_recv_many(&mut batch, 100), 0);
    assert!(batch.is_empty() && queue.is_empty());
}

#[test]
fn len_counts_inserts_and_takes_made_on_different_threads_exactly() {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(TICK).clock(clock.clone()).manual().max_pending(40).build();
    let queue = DelayQueue::with_timer(timer);
    thread::scope(|s| {
        for producer in 0..4u64 {
            let queue = &queue;
            s.spawn(move || {
                (0..10).for_each(|i| {
                    queue.insert(producer * 10 + i, ms(1 + i % 3));
                })
            });
        }
    });
    assert_eq!(queue.len(), 40);
    let refused = queue.try_insert(99, ms(1)).expect_err("max_pending reached");
    assert!(matches!(refused.error(), ScheduleError::TooManyPending { .. }));
    assert_eq!(queue.len(), 40, "a refused value is counted out again");
    advance(&clock, &queue, ms(2)); // the 28 values due by 2 ms (7 of each producer's 10)
    let taken: Vec<usize> = thread::scope(|s| {
        let takers: Vec<_> = (0..3)
            .map(|i| {
                let queue = &queue;
                s.spawn(move || {
                    let mut batch = Vec::new();
                    match i {
                        0 => (0..5).filter(|_| queue.try_recv().is_some()).count(),
                        _ => queue.try_recv_many(&mut batch, 4),
                    }
                })
            })
            .collect();
        takers.into_iter().map(|t| t.join().unwrap()).collect()
    });
    assert_eq!(taken, [5, 4, 4]);
    assert_eq!(queue.len(), 40 - 13);
    let mut rest = Vec::new();
    assert_eq!(queue.try_recv_many(&mut rest, usize::MAX), 28 - 13);
    assert_eq!(queue.len(), 12, "the values due at 3 ms");
}

/// Three consumers (two one value at a time, one in batches of up to 3) race for values expiring
/// tick by tick: each value comes out once, and what each consumer gets is in deadline order.
#[test]
fn consumers_sharing_a_queue_each_get_values_once_and_in_deadline_order() {
    const VALUES: u64 = 3_000;
    let (clock, queue) = manual_queue();
    // Value i is due at i * 37 µs: value order is deadline order, several values per tick.
    for i in (0..VALUES).rev() {
        queue.insert(i, Duration::from_micros(i * 37));
    }
    let clock_done = AtomicBool::new(false);
    let barrier = Barrier::new(4);
    let got: Vec<Vec<u64>> = thread::scope(|s| {
        let consumers: Vec<_> = (0..3)
            .map(|kind| {
                let (queue, clock_done, barrier) = (&queue, &clock_done, &barrier);
                s.spawn(move || {
                    let (mut got, mut batch) = (Vec::new(), Vec::new());
                    barrier.wait();
                    loop {
                        let done = clock_done.load(Ordering::SeqCst);
                        let before = got.len();
                        if kind == 2 {
                            queue.try_recv_many(&mut batch, 3);
                            got.extend(values(&mut batch));
                        } else {
                            got.extend(queue.try_recv().map(Expired::into_inner));
                        }
                        if done && got.len() == before && queue.is_empty() {
                            return got;
                        }
                    }
                })
            })
            .collect();
        barrier.wait();
        while !queue.timer().is_empty() {
            advance(&clock, &queue, ms(1));
            thread::yield_now();
        }
        clock_done.store(true, Ordering::SeqCst);
        consumers.into_iter().map(|c| c.join().unwrap()).collect()
    });
    for (consumer, values) in got.iter().enumerate() {
        assert!(values.windows(2).all(|w| w[0] < w[1]), "consumer {consumer} got values out of order");
    }
    let all: Vec<u64> = got.concat();
    let unique: HashSet<u64> = all.iter().copied().collect();
    assert_eq!((all.len(), unique.len()), (VALUES as usize, VALUES as usize), "lost or doubled");
    assert!(queue.is_empty());
}

/// A consumer blocked in `recv_timeout` returns `None` as soon as another takes the last value
/// with `try_recv_many` (the taker wakes it: the queue became empty), not at its timeout.
#[test]
fn a_batch_taking_the_last_value_wakes_a_consumer_waiting_for_more() {
    let (clock, queue) = manual_queue();
    queue.insert(1, ms(3));
    let long = Duration::from_secs(600);
    thread::scope(|s| {
        let waiter = s.spawn(|| {
            let started = Instant::now();
            (queue.recv_timeout(long).map(Expired::into_inner), started.elapsed())
        });
        // Whether the waiter blocks before the value expires, or finds it and takes it first.
        advance(&clock, &queue, ms(3));
        let mut batch = Vec::new();
        let taken = queue.try_recv_many(&mut batch, 8);
        let (got, waited) = waiter.join().unwrap();
        assert_eq!((taken, got.is_some()), if taken == 1 { (1, false) } else { (0, true) });
        assert!(waited < Duration::from_secs(300), "the waiter was not woken");
    });
    assert!(queue.is_empty());
}
