//! `DelayQueue` as a demanding user drives it: real driver threads, several producers, consumers
//! mixing every way of taking, removers racing expiry, values that count their drops, resets of
//! values in every state, and waits that must never come back early.

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::queue::{advance, manual_queue, Counted};
use common::{ms, SplitMix};
use delaywheel::queue::{DelayQueue, Expired, Key};
use delaywheel::{ManualClock, ScheduleError, TaskExecution, Timer};

/// Several producers, removers racing the expiry of what they inserted, and consumers taking by
/// `try_recv`, `try_recv_many` and `recv_timeout` on a driven queue: every value comes out once or
/// comes back from `remove` once, never both, never before its deadline; `len` ends at zero and
/// every value is dropped exactly once.
fn exactly_once_on(queue: DelayQueue<Counted>, rounds: usize) {
    const PRODUCERS: usize = 3;
    const PER_PRODUCER: usize = 1_500;
    let drops = Arc::new(AtomicUsize::new(0));
    let seen = Mutex::new(HashSet::new());
    let removed = Mutex::new(HashSet::new());
    let early = AtomicUsize::new(0);
    let producing = AtomicUsize::new(PRODUCERS);
    for round in 0..rounds {
        producing.store(PRODUCERS, Ordering::SeqCst);
        thread::scope(|s| {
            for p in 0..PRODUCERS {
                let (queue, drops, removed, producing) = (&queue, &drops, &removed, &producing);
                s.spawn(move || {
                    let mut rng = SplitMix((round * PRODUCERS + p) as u64 + 1);
                    let mut keys: Vec<(usize, Key)> = Vec::new();
                    for i in 0..PER_PRODUCER {
                        let id = (round * PRODUCERS + p) * PER_PRODUCER + i;
                        let delay = Duration::from_micros(rng.range(0, 3_000));
                        let key = queue.insert(Counted { id, drops: Arc::clone(drops) }, delay);
                        keys.push((id, key));
                        // Remove some right away, some a little later: both race the expiry.
                        if rng.range(0, 4) == 0 {
                            let (id, key) = keys.swap_remove(rng.range(0, keys.len() as u64) as usize);
                            if let Some(value) = queue.remove(&key) {
                                assert_eq!(value.id, id, "remove handed back another value");
                                assert!(removed.lock().unwrap().insert(id));
                            }
                        }
                        if i % 64 == 0 {
                            thread::yield_now();
                        }
                    }
                    producing.fetch_sub(1, Ordering::SeqCst);
                });
            }
            for c in 0..3 {
                let (queue, seen, early, producing) = (&queue, &seen, &early, &producing);
                s.spawn(move || {
                    let mut batch: Vec<Expired<Counted>> = Vec::new();
                    loop {
                        match c {
                            0 => batch.extend(queue.try_recv()),
                            1 => {
                                queue.try_recv_many(&mut batch, 7);
                            }
                            _ => batch.extend(queue.recv_timeout(ms(2))),
                        }
                        let now = queue.timer().now();
                        for expired in batch.drain(..) {
                            if now < expired.deadline() {
                                early.fetch_add(1, Ordering::SeqCst);
                            }
                            assert!(seen.lock().unwrap().insert(expired.get_ref().id), "twice");
                        }
                        if producing.load(Ordering::SeqCst) == 0 && queue.is_empty() {
                            break;
                        }
                        if c == 0 {
                            thread::yield_now();
                        }
                    }
                });
            }
        });
        assert_eq!(queue.len(), 0, "quiescent and drained");
    }
    let total = rounds * PRODUCERS * PER_PRODUCER;
    let (seen, removed) = (seen.into_inner().unwrap(), removed.into_inner().unwrap());
    assert!(seen.is_disjoint(&removed), "a value both removed and taken");
    assert_eq!(seen.len() + removed.len(), total);
    assert_eq!(early.load(Ordering::SeqCst), 0, "values taken before their deadline");
    assert_eq!(drops.load(Ordering::SeqCst), total, "every value dropped exactly once");
    drop(queue);
    assert_eq!(drops.load(Ordering::SeqCst), total);
}

#[test]
fn producers_removers_and_mixed_consumers_on_a_driven_queue_see_each_value_once() {
    exactly_once_on(DelayQueue::new(), 3);
}

#[test]
fn the_same_with_executor_threads_handing_values_over() {
    let timer = Timer::builder().execution(TaskExecution::Threads(2)).build();
    exactly_once_on(DelayQueue::with_timer(timer), 2);
}

/// A remove racing the firing of the very value it names, on a manual timer advanced by another
/// thread: the value goes to exactly one side, and `len` accounts for it either way.
#[test]
fn remove_racing_the_advance_that_expires_the_value_gives_it_to_one_side() {
    let (clock, queue) = manual_queue::<usize>();
    let (mut to_remover, mut to_consumer) = (0, 0);
    for round in 0..2_000 {
        let keys: Vec<Key> = (0..4).map(|i| queue.insert(round * 4 + i, ms(1))).collect();
        clock.advance(ms(1));
        let got: Vec<usize> = thread::scope(|s| {
            s.spawn(|| queue.advance_clock(Duration::ZERO));
            keys.iter().rev().filter_map(|key| queue.remove(key)).collect()
        });
        let taken: Vec<usize> = std::iter::from_fn(|| queue.try_recv()).map(Expired::into_inner).collect();
        to_remover += got.len();
        to_consumer += taken.len();
        let mut all: Vec<usize> = got.into_iter().chain(taken).collect();
        all.sort_unstable();
        assert_eq!(all, (round * 4..round * 4 + 4).collect::<Vec<_>>(), "round {round}");
        assert!(queue.is_empty(), "round {round}: len {}", queue.len());
        assert!(keys.iter().all(|key| queue.remove(key).is_none() && queue.deadline(key).is_none()));
    }
    assert_eq!(to_remover + to_consumer, 8_000);
}

/// `reset`/`reset_at` return `true` iff the value was pending: not once it expired (even while it
/// waits to be taken), was removed, was refused, or when the new deadline is out of range (and
/// then the value keeps its old deadline).
#[test]
fn reset_is_true_only_for_pending_values_and_a_refused_reset_keeps_the_deadline() {
    let (clock, queue) = manual_queue::<&str>();
    let now = queue.timer().now();
    let pending = queue.insert("pending", ms(10));
    let expired = queue.insert("expired", ms(1));
    let removed = queue.insert("removed", ms(10));
    let refused = queue.insert("refused", Duration::MAX);
    assert_eq!(queue.remove(&removed), Some("removed"));
    advance(&clock, &queue, ms(1));
    assert_eq!(queue.len(), 2);

    let before = queue.deadline(&pending).unwrap();
    assert!(!queue.reset(&pending, Duration::MAX));
    assert!(!queue.reset_at(&pending, now + Duration::from_secs(3_600 * 24 * 365 * 10_000_000)));
    assert_eq!(queue.deadline(&pending), Some(before), "a refused reset changes nothing");
    for key in [&expired, &removed, &refused] {
        assert!(!queue.reset(key, ms(5)), "{key:?}");
        assert!(!queue.reset_at(key, now + ms(5)), "{key:?}");
        assert_eq!(queue.deadline(key), None);
    }
    // The expired value still comes out, with its own deadline, and only once.
    let out = queue.try_recv().unwrap();
    assert_eq!((*out.get_ref(), out.deadline()), ("expired", now + ms(1)));

    // A reset to a deadline already passed (even before the clock's origin) is true and expires
    // the value at the next advance.
    assert!(queue.reset_at(&pending, now.checked_sub(ms(1)).unwrap_or(now)));
    assert!(queue.try_recv().is_none());
    queue.advance_clock(Duration::ZERO);
    assert_eq!(queue.try_recv().map(Expired::into_inner), Some("pending"));
    assert!(!queue.reset(&pending, ms(5)));
    assert!(queue.is_empty());
}

/// Many resets of one pending value: it comes out once, at the last deadline set.
#[test]
fn a_value_reset_back_and_forth_comes_out_once_at_its_last_deadline() {
    let (clock, queue) = manual_queue::<u32>();
    let key = queue.insert(7, ms(3));
    let mut rng = SplitMix(9);
    for _ in 0..1_000 {
        assert!(queue.reset(&key, ms(rng.range(2, 5_000))));
    }
    assert!(queue.reset(&key, ms(20)));
    advance(&clock, &queue, ms(19));
    assert!(queue.try_recv().is_none(), "early");
    advance(&clock, &queue, ms(1));
    let out = queue.try_recv().expect("due at its last deadline");
    assert_eq!((out.into_inner(), queue.len()), (7, 0));
    advance(&clock, &queue, ms(10_000));
    assert!(queue.try_recv().is_none(), "once");
    assert_eq!(queue.timer().len(), 0);
}

/// A value refused after shutdown comes back whole (not dropped), and values pending at the
/// shutdown are dropped exactly once, by the shutdown's unfired tasks or by the queue.
#[test]
fn shutdown_hands_refused_values_back_and_drops_the_pending_ones_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let counted = |id| Counted { id, drops: Arc::clone(&drops) };
    let (clock, queue) = manual_queue::<Counted>();
    for id in 0..10 {
        queue.insert(counted(id), ms(id as u64 % 3));
    }
    advance(&clock, &queue, ms(1)); // ids 0,1,3,4,6,7,9 expire (delays 0 and 1)
    assert_eq!(queue.len(), 10);
    let unfired = queue.timer().shutdown();
    assert_eq!((unfired.len(), queue.len()), (3, 7), "the pending values left with the shutdown");
    assert_eq!(drops.load(Ordering::SeqCst), 0, "values handed back, not yet dropped");
    drop(unfired);
    assert_eq!(drops.load(Ordering::SeqCst), 3, "the three pending values");
    let refused = queue.try_insert(counted(99), ms(1)).unwrap_err();
    assert_eq!(refused.error(), &ScheduleError::ShutDown);
    assert_eq!(drops.load(Ordering::SeqCst), 3, "a refused value is not dropped");
    assert_eq!(refused.into_inner().id, 99);
    assert_eq!(drops.load(Ordering::SeqCst), 4);
    let taken: Vec<usize> = std::iter::from_fn(|| queue.try_recv()).map(|e| e.get_ref().id).collect();
    assert_eq!(taken, [0, 3, 6, 9, 1, 4, 7]);
    assert!(queue.is_empty());
    assert_eq!(drops.load(Ordering::SeqCst), 11);
    drop(queue);
    assert_eq!(drops.load(Ordering::SeqCst), 11, "nothing dropped twice");
}

/// `recv_timeout` on a driven queue: the value comes out at or after its deadline on the timer's
/// clock, and a wait for a value due later times out no sooner than asked.
#[test]
fn recv_timeout_on_a_driven_queue_is_never_early() {
    let queue = DelayQueue::new();
    for round in 0..20u64 {
        let asked = Instant::now();
        let key = queue.insert(round, ms(3 + round % 5));
        let deadline = queue.deadline(&key).unwrap();
        let out = queue.recv_timeout(Duration::from_secs(5)).expect("expires");
        assert!(queue.timer().now() >= deadline && Instant::now() >= deadline, "early");
        assert!(asked.elapsed() >= ms(3 + round % 5) - ms(1), "{:?}", asked.elapsed());
        assert_eq!(out.deadline(), deadline);
    }
    queue.insert(0, Duration::from_secs(60));
    let asked = Instant::now();
    assert!(queue.recv_timeout(ms(30)).is_none());
    assert!(asked.elapsed() >= ms(30), "timed out after {:?}", asked.elapsed());
}

/// A queue dropped while its timer's driver is running a task scheduled on it (so the drop does
/// not wait for the driver), with expired values waiting for a consumer and pending ones: each is
/// dropped before the drop returns, not when the driver gets round to exiting.
#[test]
fn dropping_a_queue_whose_driver_is_busy_drops_its_expired_values_before_it_returns() {
    let drops = Arc::new(AtomicUsize::new(0));
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(ms(1)).clock(clock.clone()).build();
    let queue = DelayQueue::with_timer(timer);
    for id in 0..40 {
        queue.insert(Counted { id, drops: Arc::clone(&drops) }, ms(1 + id as u64 % 2 * 100));
    }
    let (running, is_running) = std::sync::mpsc::channel();
    let (release, released) = std::sync::mpsc::channel::<()>();
    queue.timer().schedule(ms(2), move || {
        running.send(()).unwrap();
        let _ = released.recv_timeout(Duration::from_secs(10));
    });
    clock.advance(ms(1));
    // One value out means its whole batch (the other 19 due at 1 ms) is in the queue.
    let taken = queue.recv_timeout(Duration::from_secs(5)).expect("the driver fired");
    clock.advance(ms(1));
    is_running.recv_timeout(Duration::from_secs(5)).expect("the driver runs the task");
    assert_eq!(queue.len(), 39);
    drop(queue);
    let right_after = drops.load(Ordering::SeqCst);
    release.send(()).unwrap();
    assert_eq!(right_after, 39, "values outlived the queue");
    drop(taken);
    assert_eq!(drops.load(Ordering::SeqCst), 40);
}

/// Two queues used alike hand out equal slots and generations: a key names its own queue's value
/// only. Given to another queue it names nothing there, and never touches that queue's timer
/// entries, a plain task's included (whose own cancel must still be the one that wins).
#[test]
fn a_key_of_another_queue_names_nothing() {
    let (clock_a, a) = manual_queue::<&str>();
    let (clock_b, b) = manual_queue::<&str>();
    let key_a = a.insert("a", ms(5));
    let key_b = b.insert("b", ms(5));
    assert_eq!(a.remove(&key_b), None, "b's key names nothing in a");
    assert!(!a.reset(&key_b, ms(1)) && !a.reset_at(&key_b, a.timer().now()));
    assert_eq!(a.deadline(&key_b), None);
    assert_eq!(a.len(), 1);
    // A plain task on b's timer in the slot a's next key will name.
    let ran = Arc::new(AtomicUsize::new(0));
    assert_eq!(b.remove(&key_b), Some("b"));
    let task = {
        let ran = Arc::clone(&ran);
        b.timer().schedule(ms(5), move || {
            ran.fetch_add(1, Ordering::SeqCst);
        })
    };
    assert_eq!(a.remove(&key_a), Some("a"));
    let key_a2 = a.insert("a2", ms(5));
    assert_eq!(b.remove(&key_a2), None, "a's key names nothing in b");
    assert!(task.is_pending(), "the plain task is untouched");
    advance(&clock_b, &b, ms(5));
    assert_eq!(ran.load(Ordering::SeqCst), 1, "it ran, once");
    advance(&clock_a, &a, ms(5));
    assert_eq!(a.try_recv().map(Expired::into_inner), Some("a2"));
}

/// A value due further out than the 292 years an `i64` of nanoseconds from the clock's base
/// holds (the clock reaches 584): its deadline reads back as the start of the tick it is due in,
/// never before the deadline asked for, pending and expired, by `insert`, `insert_at` and `reset`.
#[test]
fn a_value_due_centuries_away_reads_back_never_early_and_expires_at_its_tick() {
    let (clock, queue) = manual_queue::<&str>();
    let tick = queue.timer().tick();
    let now = queue.timer().now();
    let far = Duration::from_secs(400 * 365 * 24 * 3_600) + Duration::from_nanos(1);
    let by_delay = queue.insert("by delay", far);
    let due = queue.deadline(&by_delay).expect("pending");
    assert!(due >= now + far && due < now + far + tick, "{due:?} for a deadline of {:?}", now + far);
    let by_instant = queue.insert_at("by instant", now + far);
    assert_eq!(queue.deadline(&by_instant), Some(due));
    let reset = queue.insert("reset", ms(5));
    assert!(queue.reset(&reset, far));
    assert_eq!(queue.deadline(&reset), Some(due));

    advance(&clock, &queue, far - Duration::from_nanos(1));
    assert!(queue.try_recv().is_none(), "nothing before its deadline");
    advance(&clock, &queue, tick);
    let out: Vec<_> = std::iter::from_fn(|| queue.try_recv()).map(|e| (*e.get_ref(), e.deadline())).collect();
    assert_eq!(out, [("by delay", due), ("by instant", due), ("reset", due)]);
    assert!(queue.is_empty());
}

/// A queue dropped by its shutdown (the timer's drop path: nothing handed back) and one shut
/// down while other threads remove, insert and take: `len` ends at what is still to be taken, and
/// a consumer that drains until `is_empty` returns.
#[test]
fn len_after_a_shutdown_racing_removes_and_inserts_counts_only_what_can_be_taken() {
    for round in 0..20u64 {
        let queue = Arc::new(DelayQueue::<u64>::new());
        let keys: Vec<Key> =
            (0..2_000).map(|i| queue.insert(i, Duration::from_micros(i * 7 % 3_000))).collect();
        let remover = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || keys.iter().filter(|k| queue.remove(k).is_some()).count())
        };
        let inserter = {
            let queue = Arc::clone(&queue);
            thread::spawn(move || (0..2_000).filter(|&i| queue.try_insert(i, ms(i % 5)).is_ok()).count())
        };
        thread::sleep(Duration::from_micros(round * 150));
        let unfired = queue.timer().shutdown().len();
        let (removed, inserted) = (remover.join().unwrap(), inserter.join().unwrap());
        let mut taken = 0;
        while !queue.is_empty() {
            assert!(queue.try_recv().is_some(), "len {} with nothing to take", queue.len());
            taken += 1;
        }
        assert_eq!(removed + unfired + taken, 2_000 + inserted, "round {round}");
    }
}
