//! `delaywheel::queue::DelayQueue`: values out exactly once, never early, in deadline order; values
//! back on remove; keys harmless after reuse; refusals lose nothing; many producers and consumers.
//! Everything runs on a manual clock unless it says otherwise.

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use common::queue::{advance, manual_queue};
use common::{manual_timer, ms};
use delaywheel::queue::{DelayQueue, Expired, InsertError, Key};
use delaywheel::{ManualClock, ScheduleError, Timer};

const TICK: Duration = Duration::from_millis(1);

fn drain<T>(queue: &DelayQueue<T>) -> Vec<T> {
    std::iter::from_fn(|| queue.try_recv()).map(Expired::into_inner).collect()
}

#[test]
fn the_queue_is_send_and_sync_and_its_key_is_a_plain_value() {
    fn send_sync<T: Send + Sync>() {}
    fn key_traits<T: Clone + Copy + Eq + std::hash::Hash + std::fmt::Debug + Send + Sync>() {}
    send_sync::<DelayQueue<std::cell::Cell<u8>>>(); // Send but not Sync values are enough
    send_sync::<Expired<u8>>();
    send_sync::<InsertError<u8>>();
    key_traits::<Key>();
}

#[test]
fn a_value_expires_at_its_deadline_tick_never_before() {
    let (clock, queue) = manual_queue();
    let key = queue.insert("a", ms(5) + Duration::from_micros(300));
    let deadline = queue.deadline(&key).expect("pending");
    for _ in 0..5 {
        advance(&clock, &queue, ms(1));
        assert!(queue.try_recv().is_none(), "early at {:?}", clock.now());
    }
    advance(&clock, &queue, ms(1)); // 6 ms: the first tick boundary after 5.3 ms
    let expired = queue.try_recv().expect("due");
    assert_eq!((*expired.get_ref(), expired.key(), expired.deadline()), ("a", key, deadline));
    assert_eq!(queue.deadline(&key), None);
    assert!(queue.try_recv().is_none(), "exactly once");
    assert!(queue.is_empty());
}

#[test]
fn deadlines_a_tick_apart_come_out_in_deadline_order_and_ties_first_in_first_out() {
    let (clock, queue) = manual_queue();
    let delays = [7, 3, 12, 3, 40, 1, 7, 3, 0, 25];
    for (id, delay) in delays.iter().enumerate() {
        queue.insert(id, ms(*delay));
    }
    assert_eq!(queue.len(), delays.len());
    // One jump over every deadline, several levels deep: the timer cascades and fires in order.
    advance(&clock, &queue, ms(50));
    assert_eq!(drain(&queue), vec![8, 5, 1, 3, 7, 0, 6, 2, 9, 4]);
    assert!(queue.is_empty());
}

#[test]
fn within_one_tick_values_come_out_in_deadline_order() {
    let (clock, queue) = manual_queue();
    for (id, micros) in [900, 100, 500, 100].into_iter().enumerate() {
        queue.insert(id, Duration::from_micros(micros));
    }
    advance(&clock, &queue, ms(1));
    assert_eq!(drain(&queue), vec![1, 3, 2, 0]);
}

#[test]
fn values_inserted_at_instants_passed_within_the_tick_come_out_at_once_in_deadline_order() {
    let (clock, queue) = manual_queue();
    clock.advance(Duration::from_micros(10_900)); // tick 10 began 0.9 ms ago
    let now = queue.timer().now();
    let us = Duration::from_micros;
    for (value, ago) in [("b", 100), ("a", 800), ("c", 0), ("boundary", 900)] {
        queue.insert_at(value, now - us(ago));
    }
    queue.advance_clock(Duration::ZERO);
    let out: Vec<(&str, Duration)> =
        std::iter::from_fn(|| queue.try_recv()).map(|e| (*e.get_ref(), now - e.deadline())).collect();
    let expected = [("boundary", us(900)), ("a", us(800)), ("b", us(100)), ("c", us(0))];
    assert_eq!(out, expected, "by the next advance, mid-tick, in deadline order, deadlines exact");
}

#[test]
fn with_executor_threads_the_driver_hands_values_over_in_order() {
    let clock = ManualClock::new();
    let timer = Timer::builder()
        .tick(TICK)
        .clock(clock.clone())
        .execution(delaywheel::TaskExecution::Threads(2))
        .manual()
        .build();
    let queue = DelayQueue::with_timer(timer);
    let delays = [5, 1, 3, 1, 4];
    let keys: Vec<Key> = delays.iter().enumerate().map(|(id, d)| queue.insert(id, ms(*d))).collect();
    assert_eq!(queue.remove(&keys[4]), Some(4));
    advance(&clock, &queue, ms(5));
    assert_eq!(drain(&queue), vec![1, 3, 2, 0]);
    assert!(queue.is_empty() && queue.timer().is_empty());
}

#[test]
fn values_too_big_for_the_entry_come_back_whole() {
    let (clock, queue) = manual_queue();
    let big = |n: u8| ([n; 100], String::from("big"));
    let removed = queue.insert(big(1), ms(2));
    let kept = queue.insert(big(2), ms(2));
    assert_eq!(queue.remove(&removed), Some(big(1)));
    advance(&clock, &queue, ms(2));
    let expired = queue.try_recv().unwrap();
    assert_eq!((expired.key(), expired.into_inner()), (kept, big(2)));
}

#[test]
fn remove_hands_back_pending_values_only() {
    let (clock, queue) = manual_queue();
    let kept = queue.insert(String::from("kept"), ms(2));
    let recalled = queue.insert(String::from("recalled"), ms(2));
    assert_eq!(queue.len(), 2);
    assert_eq!(queue.remove(&recalled).as_deref(), Some("recalled"));
    assert_eq!(queue.remove(&recalled), None, "removed once");
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.timer().len(), 1, "its timer task is cancelled");

    advance(&clock, &queue, ms(2));
    assert_eq!(queue.remove(&kept), None, "expired values stay with the consumers");
    assert_eq!(queue.len(), 1, "expired but not taken yet");
    assert_eq!(drain(&queue), vec![String::from("kept")]);
    assert!(queue.is_empty());
}

#[test]
fn keys_name_nothing_once_their_slot_holds_a_later_value() {
    let (clock, queue) = manual_queue();
    let removed = queue.insert(1, ms(3));
    assert_eq!(queue.remove(&removed), Some(1));
    let reused = queue.insert(2, ms(3)); // same thread, same slot
    assert_ne!(removed, reused);
    assert_eq!(queue.remove(&removed), None);
    assert_eq!(queue.deadline(&removed), None);
    assert!(!queue.reset(&removed, ms(1)));
    assert!(queue.deadline(&reused).is_some());

    advance(&clock, &queue, ms(3));
    let expired = queue.try_recv().unwrap();
    assert_eq!((expired.into_inner(), queue.len()), (2, 0));
    let later = queue.insert(3, ms(3)); // the expired value's slot
    assert_eq!(queue.remove(&reused), None);
    assert_eq!(queue.remove(&later), Some(3));
}

#[test]
fn refused_values_come_back_with_the_reason() {
    let (_clock, timer) = manual_timer(TICK, 8);
    // Past the range, which ends a second (`max_delay`'s slack) past `max_delay`.
    let too_far = timer.max_delay() + Duration::from_secs(1) + ms(1);
    let queue = DelayQueue::with_timer(timer);
    for delay in [Duration::MAX, too_far] {
        let refused = queue.try_insert(vec![7u8], delay).unwrap_err();
        assert!(matches!(refused.error(), ScheduleError::DelayTooLong { .. }), "{refused:?}");
        assert_eq!(refused.into_inner(), vec![7]);
    }
    assert!(queue.is_empty() && queue.timer().is_empty());

    // `insert` drops a refused value and returns a key that names nothing.
    let (_clock, queue) = manual_queue();
    let dropped = Arc::new(());
    let key = queue.insert(Arc::clone(&dropped), Duration::MAX);
    assert_eq!(Arc::strong_count(&dropped), 1);
    assert!(queue.remove(&key).is_none() && queue.deadline(&key).is_none() && queue.is_empty());

    let timer = Timer::builder().max_pending(1).clock(ManualClock::new()).manual().build();
    let bounded = DelayQueue::with_timer(timer);
    bounded.insert(1, ms(5));
    let refused = bounded.try_insert(2, ms(5)).unwrap_err();
    assert_eq!(refused.error(), &ScheduleError::TooManyPending { max: 1 });
    assert_eq!(refused.into_inner(), 2);
    assert_eq!(bounded.len(), 1);

    bounded.timer().shutdown();
    let refused = bounded.try_insert(3, ms(5)).unwrap_err();
    assert_eq!(refused.error(), &ScheduleError::ShutDown);
    assert_eq!(
        format!("{refused}"),
        format!("value refused by the delay queue: {}", ScheduleError::ShutDown)
    );
}

#[test]
fn insert_error_is_debug_for_any_value() {
    struct Opaque;
    let (_clock, queue) = manual_queue();
    let refused = queue.try_insert(Opaque, Duration::MAX).unwrap_err();
    assert!(matches!(refused.error(), ScheduleError::DelayTooLong { delay: Duration::MAX, .. }));
    assert_eq!(format!("{refused:?}"), format!("InsertError {{ error: {:?}, .. }}", refused.error()));
    let source = std::error::Error::source(&refused).unwrap();
    assert!(source.downcast_ref::<ScheduleError>().is_some());
}

#[test]
fn expired_values_wait_for_consumers_without_holding_up_the_timer() {
    let (clock, queue) = manual_queue();
    for id in 0..10_000u32 {
        queue.insert(id, ms(u64::from(id % 4)));
    }
    let fired = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&fired);
    queue.timer().schedule(ms(5), move || flag.store(true, Ordering::SeqCst));
    advance(&clock, &queue, ms(5));
    assert!(fired.load(Ordering::SeqCst), "the timer's other task ran");
    assert_eq!((queue.len(), queue.timer().len()), (10_000, 0));
    let values = drain(&queue);
    assert_eq!(values.len(), 10_000);
    assert!(values.windows(2).all(|w| w[0] % 4 <= w[1] % 4), "deadline order");
}

#[test]
fn dropping_the_queue_drops_every_value_it_holds() {
    let (clock, queue) = manual_queue();
    let value = Arc::new(());
    let first_key = queue.insert(Arc::clone(&value), ms(1)); // taken below
    queue.insert(Arc::clone(&value), ms(100)); // pending
    queue.insert(Arc::clone(&value), ms(1)); // expired, not taken
    advance(&clock, &queue, ms(1));
    let first = queue.try_recv().unwrap();
    assert_eq!(first.key(), first_key);
    assert_eq!(Arc::strong_count(&value), 4);
    drop(queue);
    assert_eq!(Arc::strong_count(&value), 2, "only the taken value and ours are left");
    drop(first);
    assert_eq!(Arc::strong_count(&value), 1);
}

#[test]
fn dropping_a_driven_queue_drops_its_values_too() {
    let queue = DelayQueue::new();
    let value = Arc::new(());
    for _ in 0..100 {
        queue.insert(Arc::clone(&value), Duration::from_secs(3600));
    }
    drop(queue);
    assert_eq!(Arc::strong_count(&value), 1);
}

#[test]
fn recv_timeout_returns_at_once_when_nothing_is_pending() {
    let (_clock, queue) = manual_queue::<u8>();
    let started = Instant::now();
    assert!(queue.recv_timeout(Duration::from_secs(600)).is_none());
    assert!(started.elapsed() < Duration::from_secs(300));
}

#[test]
fn recv_timeout_times_out_while_values_are_pending() {
    let (_clock, queue) = manual_queue();
    queue.insert(1, ms(1));
    assert!(queue.recv_timeout(ms(20)).is_none());
    assert_eq!(queue.len(), 1);
}

#[test]
fn blocked_consumers_wake_when_values_expire_and_when_the_queue_empties() {
    let (clock, queue) = manual_queue();
    let expiring = queue.insert(1, ms(2));
    let removed = queue.insert(2, ms(4));
    let barrier = Barrier::new(3);
    let long = Duration::from_secs(600);
    thread::scope(|s| {
        let consumers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    let started = Instant::now();
                    let got = queue.recv_timeout(long).map(Expired::into_inner);
                    (got, started.elapsed())
                })
            })
            .collect();
        barrier.wait();
        // Whether the consumers are already blocked or not: one gets the value, the other sees the
        // queue emptied by the remove, and neither waits out its timeout.
        advance(&clock, &queue, ms(2));
        while queue.len() == 2 {
            thread::yield_now(); // until a consumer has taken value 1
        }
        assert_eq!(queue.remove(&removed), Some(2));
        let mut results: Vec<_> = consumers.into_iter().map(|c| c.join().unwrap()).collect();
        results.sort();
        assert_eq!((results[0].0, results[1].0), (None, Some(1)));
        assert!(results.iter().all(|(_, waited)| *waited < Duration::from_secs(300)));
    });
    assert_eq!(queue.remove(&expiring), None);
    assert!(queue.is_empty());
}

#[test]
fn two_producers_two_consumers_and_a_clock_thread_see_each_value_exactly_once() {
    const PER_PRODUCER: u64 = 20_000;
    let (clock, queue) = manual_queue();
    let producers_done = AtomicBool::new(false);
    let mut seen = Vec::new();
    thread::scope(|s| {
        let producers: Vec<_> = (0..2u64)
            .map(|producer| {
                let queue = &queue;
                s.spawn(move || {
                    for i in 0..PER_PRODUCER {
                        let id = producer * PER_PRODUCER + i;
                        let key = queue.insert(id, ms(i % 17));
                        // Recalled and sent again: it must come out once (once only, if it had
                        // expired already and `remove` found nothing).
                        if i % 5 == 0 && queue.remove(&key).is_some() {
                            queue.insert(id, ms(3));
                        }
                    }
                })
            })
            .collect();
        let ticker = s.spawn(|| {
            while !producers_done.load(Ordering::SeqCst) || !queue.timer().is_empty() {
                advance(&clock, &queue, ms(1));
                thread::yield_now();
            }
        });
        let consumers: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let mut got = Vec::new();
                    loop {
                        match queue.recv_timeout(ms(50)) {
                            Some(expired) => got.push(expired.into_inner()),
                            None if producers_done.load(Ordering::SeqCst) && queue.is_empty() => break got,
                            None => {}
                        }
                    }
                })
            })
            .collect();
        producers.into_iter().for_each(|p| p.join().unwrap());
        producers_done.store(true, Ordering::SeqCst);
        ticker.join().unwrap();
        for consumer in consumers {
            seen.extend(consumer.join().unwrap());
        }
    });
    let unique: HashSet<u64> = seen.iter().copied().collect();
    assert_eq!(unique.len(), seen.len(), "a value came out twice");
    assert_eq!(seen.len() as u64, 2 * PER_PRODUCER, "a value was lost");
    assert!(queue.is_empty());
}

#[test]
fn deadlines_are_instants_on_the_timer_clock() {
    let (clock, queue) = manual_queue();
    clock.advance(ms(7) + Duration::from_micros(250)); // mid-tick
    let now = queue.timer().now();
    let key = queue.insert('a', ms(3));
    assert_eq!(queue.deadline(&key), Some(now + ms(3)), "now + delay at full precision");
    let at = queue.insert_at('b', now + ms(2));
    assert_eq!(queue.deadline(&at), Some(now + ms(2)));
    advance(&clock, &queue, ms(2)); // 9.25 ms: b (due 9.25) fires at the 10 ms tick, not yet
    assert!(queue.try_recv().is_none());
    advance(&clock, &queue, Duration::from_micros(750)); // 10 ms
    let b = queue.try_recv().unwrap();
    assert_eq!((b.into_inner(), queue.timer().now() - now), ('b', ms(2) + Duration::from_micros(750)));
    advance(&clock, &queue, ms(1)); // 11 ms: a is due at 10.25, fires at 11
    let a = queue.try_recv().unwrap();
    assert_eq!((a.key(), a.deadline()), (key, now + ms(3)));
}

#[test]
fn a_deadline_already_passed_expires_at_the_next_advance() {
    let (clock, queue) = manual_queue();
    clock.advance(ms(20));
    let past = queue.timer().now() - ms(5);
    let key = queue.insert_at("late", past);
    let zero = queue.insert("now", Duration::ZERO);
    assert!(queue.try_recv().is_none(), "never inside insert");
    queue.advance_clock(Duration::ZERO);
    let first = queue.try_recv().unwrap();
    assert_eq!((first.key(), first.deadline()), (key, past));
    assert_eq!(queue.try_recv().map(|e| e.key()), Some(zero));
}

#[test]
fn reset_moves_a_pending_value_and_keeps_its_key() {
    let (clock, queue) = manual_queue();
    let start = queue.timer().now();
    let sooner = queue.insert("sooner", ms(50));
    let later = queue.insert("later", ms(5));
    assert!(queue.reset(&sooner, ms(3)));
    assert!(queue.reset_at(&later, start + ms(8)));
    assert_eq!(queue.deadline(&sooner), Some(start + ms(3)));
    assert_eq!(queue.deadline(&later), Some(start + ms(8)));
    advance(&clock, &queue, ms(3));
    let e = queue.try_recv().unwrap();
    assert_eq!((e.key(), e.deadline(), e.into_inner()), (sooner, start + ms(3), "sooner"));
    advance(&clock, &queue, ms(2)); // 5 ms: the old deadline of `later` passes, nothing comes
    assert!(queue.try_recv().is_none());
    advance(&clock, &queue, ms(3));
    let e = queue.try_recv().unwrap();
    assert_eq!((e.key(), e.deadline()), (later, start + ms(8)));
    assert!(!queue.reset(&later, ms(1)), "expired: nothing to move");
    assert!(queue.is_empty() && queue.timer().is_empty());
}

#[test]
fn a_refused_reset_changes_nothing() {
    let (clock, queue) = manual_queue();
    let key = queue.insert(1, ms(4));
    let deadline = queue.deadline(&key);
    assert!(!queue.reset(&key, Duration::MAX), "beyond the timer's range");
    assert_eq!(queue.deadline(&key), deadline);
    advance(&clock, &queue, ms(4));
    assert_eq!(queue.try_recv().map(|e| e.into_inner()), Some(1));
}

/// The queue's timer shut down: a consumer takes what had expired, then returns `None` instead of
/// waiting for values that will never expire, also one already blocked in `recv_timeout`.
#[test]
fn after_the_timer_shuts_down_consumers_take_what_expired_and_stop_waiting() {
    let (clock, queue) = manual_queue::<u32>();
    let queue = Arc::new(queue);
    queue.insert(1, ms(5));
    queue.insert(2, ms(50));
    advance(&clock, &queue, ms(5));
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let queue = Arc::clone(&queue);
        thread::spawn(move || {
            let first = queue.recv_timeout(Duration::MAX).map(|e| e.into_inner());
            tx.send((first, queue.recv_timeout(Duration::MAX).map(|e| e.into_inner()))).unwrap();
        });
    }
    thread::sleep(Duration::from_millis(50)); // (most likely) blocked waiting for 2 by now
    drop(queue.timer().shutdown());
    let taken = rx.recv_timeout(Duration::from_secs(20)).expect("the consumer stopped waiting");
    assert_eq!(taken, (Some(1), None), "the expired value, then no wait for ever");
    assert!(queue.try_recv().is_none());
    assert_eq!(queue.recv_timeout(Duration::MAX).map(|e| e.into_inner()), None);
}
