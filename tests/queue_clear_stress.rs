//! `DelayQueue::clear` racing everything else on a queue with its own driver thread: producers
//! inserting values due within a few ticks, a remover removing some by key, consumers taking
//! them, plain tasks on the queue's timer, and a thread that clears the queue again and again.
//! Every value is dropped exactly once (counted per value) and goes to at most one of remove and
//! take; every plain task runs; and each clear made while no insert or remove is in flight leaves
//! `len()` at 0, although values keep expiring and being taken meanwhile. And clears racing a
//! shutdown: the queue ends at `len()` 0 and its consumers are told it ended.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread;
use std::time::{Duration, Instant};

use common::Stop;
use delaywheel::queue::{DelayQueue, Key};
use delaywheel::Timer;

const PRODUCERS: usize = 2;
const PER_ROUND: usize = 150;
const ROUNDS: usize = 250;
const VALUES: usize = PRODUCERS * PER_ROUND * ROUNDS;
const TASKS_PER_ROUND: usize = 10;

/// A value that counts its drops in its own cell.
struct Tracked {
    id: usize,
    drops: Arc<Vec<AtomicU8>>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.drops[self.id].fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn clears_racing_inserts_removes_expiries_and_consumers_drop_each_value_once() {
    let timer = Timer::builder().tick(Duration::from_millis(1)).wheel_size(16).build();
    let queue = DelayQueue::with_timer(timer);
    let drops: Arc<Vec<AtomicU8>> = Arc::new((0..VALUES).map(|_| AtomicU8::new(0)).collect());
    // How each value left other than by a clear: 1 taken, 2 removed (both would be 3).
    let routes: Vec<AtomicU8> = (0..VALUES).map(|_| AtomicU8::new(0)).collect();
    let keys: Mutex<Vec<Key>> = Mutex::new(Vec::new());
    let tasks_ran = Arc::new(AtomicUsize::new(0));
    // Producers insert, and the remover removes, holding the gate's read side; the clearer takes
    // the write side to clear with no insert or remove in flight.
    let gate = RwLock::new(0usize);
    let done = AtomicBool::new(false);
    let (taken, removed) = (AtomicUsize::new(0), AtomicUsize::new(0));

    thread::scope(|s| {
        let stop = Stop(&done);
        let mut producers = Vec::new();
        for producer in 0..PRODUCERS {
            let (queue, drops, keys, gate, tasks_ran, done) =
                (&queue, &drops, &keys, &gate, &tasks_ran, &done);
            producers.push(s.spawn(move || {
                for round in 0..ROUNDS {
                    // Wait for the clearer to open this round.
                    while *gate.read().unwrap() < round {
                        if done.load(Ordering::SeqCst) {
                            return;
                        }
                        thread::sleep(Duration::from_micros(50));
                    }
                    let open = gate.read().unwrap();
                    for i in 0..PER_ROUND {
                        let id = (round * PRODUCERS + producer) * PER_ROUND + i;
                        let value = Tracked { id, drops: Arc::clone(drops) };
                        let key = queue.insert(value, Duration::from_micros((id as u64 * 7_919) % 4_000));
                        if i % 3 == 0 {
                            keys.lock().unwrap().push(key);
                        }
                        if i % (PER_ROUND / TASKS_PER_ROUND) == 0 {
                            let tasks_ran = Arc::clone(tasks_ran);
                            queue.timer().schedule(Duration::from_micros(id as u64 % 3_000), move || {
                                tasks_ran.fetch_add(1, Ordering::SeqCst);
                            });
                        }
                    }
                    drop(open);
                }
            }));
        }
        for consumer in 0..2 {
            let (queue, routes, taken, done) = (&queue, &routes, &taken, &done);
            s.spawn(move || {
                let mut batch = Vec::new();
                while !done.load(Ordering::SeqCst) {
                    let got = if consumer == 0 {
                        queue.recv_timeout(Duration::from_millis(1)).into_iter().collect()
                    } else {
                        if queue.try_recv_many(&mut batch, 16) == 0 {
                            thread::sleep(Duration::from_micros(200));
                        }
                        std::mem::take(&mut batch)
                    };
                    for expired in got {
                        routes[expired.get_ref().id].fetch_add(1, Ordering::SeqCst);
                        taken.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
        }
        {
            let (queue, routes, keys, removed, done, gate) = (&queue, &routes, &keys, &removed, &done, &gate);
            s.spawn(move || {
                while !done.load(Ordering::SeqCst) {
                    let key = keys.lock().unwrap().pop();
                    // A remove counts its value out as it returns, after its claim: one in flight
                    // keeps `len()` above 0 meanwhile. The clearer's check waits for it.
                    let _removing = gate.read().unwrap();
                    match key.and_then(|key| queue.remove(&key)) {
                        Some(value) => {
                            routes[value.id].fetch_add(2, Ordering::SeqCst);
                            removed.fetch_add(1, Ordering::SeqCst);
                        }
                        None => thread::sleep(Duration::from_micros(100)),
                    }
                }
            });
        }
        // The clearer: lets a round's inserts run a moment against the others, then closes the
        // gate and clears with no insert or remove in flight; `len()` must be 0 although the
        // driver and the consumers go on. Then it opens the next round.
        for round in 1..=ROUNDS {
            thread::sleep(Duration::from_micros(300));
            queue.clear(); // racing inserts too
            let mut open = gate.write().unwrap();
            queue.clear();
            assert_eq!(queue.len(), 0, "round {round}: a clear with no insert in flight left values");
            *open = round;
        }
        // The producers' last rounds: wait for them to end, then clear what they left.
        producers.into_iter().for_each(|producer| producer.join().unwrap());
        queue.clear();
        assert!(queue.is_empty());
        drop(stop);
    });

    for (id, (dropped, route)) in drops.iter().zip(&routes).enumerate() {
        let (dropped, route) = (dropped.load(Ordering::SeqCst), route.load(Ordering::SeqCst));
        assert_eq!(dropped, 1, "value {id} dropped {dropped} times");
        assert!(route <= 2, "value {id} both taken and removed");
    }
    let (taken, removed) = (taken.into_inner(), removed.into_inner());
    assert!(taken > 0 && removed > 0, "the races happened: {taken} taken, {removed} removed");
    // Every plain task runs: the clears leave them alone. They are due within 3 ms; the wait is
    // for a driver that a loaded machine holds off the processor.
    let tasks = PRODUCERS * ROUNDS * TASKS_PER_ROUND;
    let give_up = Instant::now() + Duration::from_secs(20);
    while tasks_ran.load(Ordering::SeqCst) < tasks && Instant::now() < give_up {
        thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(tasks_ran.load(Ordering::SeqCst), tasks);
    assert!(queue.is_empty() && queue.try_recv().is_none());
}

/// A clear, a shutdown that does not wait and a waiting consumer, racing, round after round:
/// whoever claims each value (the clear, the shutdown, the firing and then the consumer), it is
/// dropped once, `len()` ends at 0, and the consumer is told the queue ended rather than waiting
/// out its timeout (a shutdown that finds the advance lock held by the clear leaves the closing
/// to the clear), with `len()` 0 as it is told.
#[test]
fn clears_racing_a_shutdown_leave_the_queue_empty_and_ended() {
    const VALUES: usize = 64;
    for round in 0..200 {
        let timer = Timer::builder().tick(Duration::from_micros(100)).build();
        let queue = DelayQueue::with_timer(timer);
        let drops: Arc<Vec<AtomicU8>> = Arc::new((0..VALUES).map(|_| AtomicU8::new(0)).collect());
        for id in 0..VALUES {
            let value = Tracked { id, drops: Arc::clone(&drops) };
            queue.insert(value, Duration::from_micros(50 * (id as u64 % 8)));
        }
        thread::scope(|s| {
            s.spawn(|| queue.clear());
            s.spawn(|| drop(queue.timer().shutdown_timeout(Duration::ZERO)));
            s.spawn(|| {
                // Told the end, it returns at once; not told, it waits out its 30 s timeout.
                let started = Instant::now();
                while queue.recv_timeout(Duration::from_secs(30)).is_some() {}
                assert!(started.elapsed() < Duration::from_secs(20), "round {round}: never told the end");
                // Told the end, it finds nothing counted: the clear and the shutdown's drains
                // count their values out before the queue is closed.
                assert_eq!(queue.len(), 0, "round {round}: ended while values were counted");
            });
        });
        assert_eq!(queue.len(), 0, "round {round}: values counted after the clear and the shutdown");
        assert!(
            drops.iter().all(|d| d.load(Ordering::SeqCst) == 1),
            "round {round}: a value not dropped once"
        );
    }
}
