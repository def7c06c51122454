//! A driven `DelayQueue` whose producers insert, remove and move values back and forth while
//! consumers take them, until one consumer shuts the queue's timer down: each value is taken once,
//! removed once, or dropped by the shutdown, exactly one of the three; a taken value carries the
//! deadline of its last `true` reset (or its insert) and is never taken before it.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::queue::Counted;
use common::SplitMix;
use delaywheel::queue::{DelayQueue, Expired, Key};
use delaywheel::{TaskExecution, Timer};

const PRODUCERS: usize = 3;
const PER_PRODUCER: usize = 2_000;

fn round(execution: TaskExecution, seed: u64) {
    let timer = Timer::builder().tick(Duration::from_millis(1)).wheel_size(8).execution(execution).build();
    let queue: DelayQueue<Counted> = DelayQueue::with_timer(timer);
    let drops = Arc::new(AtomicUsize::new(0));
    let inserted = AtomicUsize::new(0);
    let removed = AtomicUsize::new(0);
    // Per value: the deadline of its insert or last `true` reset, and the one it came out with.
    let last: Mutex<HashMap<usize, Instant>> = Mutex::default();
    let taken: Mutex<HashMap<usize, Instant>> = Mutex::default();
    let shut = AtomicBool::new(false);
    let producing = AtomicUsize::new(PRODUCERS);
    thread::scope(|s| {
        for p in 0..PRODUCERS {
            let (queue, drops, inserted, removed, last, producing) =
                (&queue, &drops, &inserted, &removed, &last, &producing);
            s.spawn(move || {
                let mut rng = SplitMix(seed * 7 + p as u64);
                let mut keys: Vec<(usize, Key, Instant)> = Vec::new();
                for i in 0..PER_PRODUCER {
                    let id = p * PER_PRODUCER + i;
                    let at = queue.timer().now() + Duration::from_micros(rng.range(0, 3_000));
                    // A refused value comes back in the error, and is dropped with it.
                    inserted.fetch_add(1, Ordering::SeqCst);
                    let Ok(key) = queue.try_insert_at(Counted { id, drops: Arc::clone(drops) }, at) else {
                        break;
                    };
                    keys.push((id, key, at));
                    let k = rng.range(0, keys.len() as u64) as usize;
                    match rng.range(0, 5) {
                        0 => {
                            let (id, key, _) = keys.swap_remove(k);
                            if let Some(value) = queue.remove(&key) {
                                assert_eq!(value.id, id, "remove handed back another value");
                                removed.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                        1 | 2 => {
                            // Earlier or later, or to now (a deadline that has passed).
                            let to = queue.timer().now()
                                + Duration::from_micros(rng.range(0, 3_500).saturating_sub(500));
                            if queue.reset_at(&keys[k].1, to) {
                                keys[k].2 = to;
                            }
                        }
                        _ => {}
                    }
                    if i % 64 == 0 {
                        thread::yield_now();
                    }
                }
                let mut last = last.lock().unwrap();
                last.extend(keys.into_iter().map(|(id, _, at)| (id, at)));
                producing.fetch_sub(1, Ordering::SeqCst);
            });
        }
        for c in 0..3u64 {
            let (queue, taken, shut, producing) = (&queue, &taken, &shut, &producing);
            s.spawn(move || {
                let mut batch: Vec<Expired<Counted>> = Vec::new();
                let mut n = 0u64;
                loop {
                    match c {
                        0 => batch.extend(queue.try_recv()),
                        1 => {
                            queue.try_recv_many(&mut batch, 5);
                        }
                        _ => batch.extend(queue.recv_timeout(Duration::from_millis(1))),
                    }
                    let now = queue.timer().now();
                    for expired in batch.drain(..) {
                        assert!(now >= expired.deadline(), "taken early");
                        let id = expired.get_ref().id;
                        assert!(taken.lock().unwrap().insert(id, expired.deadline()).is_none(), "twice");
                        n += 1;
                    }
                    // Consumer 2 shuts the timer down mid-stream, once.
                    if c == 2 && n > 500 + seed * 50 && !shut.swap(true, Ordering::SeqCst) {
                        drop(queue.timer().shutdown());
                    }
                    if producing.load(Ordering::SeqCst) == 0 && queue.is_empty() {
                        break;
                    }
                    thread::yield_now();
                }
            });
        }
    });
    if !shut.load(Ordering::SeqCst) {
        drop(queue.timer().shutdown());
    }
    assert_eq!(queue.len(), 0, "len at quiescence");
    let (last, taken) = (last.into_inner().unwrap(), taken.into_inner().unwrap());
    for (id, at) in &taken {
        // Values removed by key were dropped from `last` (swap_remove): only kept keys compare.
        if let Some(expected) = last.get(id) {
            assert_eq!(at, expected, "value {id} came out with another deadline than its last reset's");
        }
    }
    let (inserted, removed) = (inserted.load(Ordering::SeqCst), removed.load(Ordering::SeqCst));
    assert!(taken.len() + removed <= inserted, "{execution:?} seed {seed}");
    drop(queue);
    assert_eq!(drops.load(Ordering::SeqCst), inserted, "every value dropped exactly once");
}

#[test]
fn resets_removes_and_consumers_racing_a_shutdown_see_each_value_once() {
    for seed in 0..16 {
        round(TaskExecution::OnDriver, seed);
        round(TaskExecution::Threads(2), seed);
    }
}
