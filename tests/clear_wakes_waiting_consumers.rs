//! Consumers that start waiting (`recv_timeout` with an hour's limit, and, with feature `async`,
//! `next_expired` on tokio tasks) just as a clear, a remove of the last value or a shutdown empties
//! a queue whose values are all far from due: each returns `None` promptly. A consumer that
//! missed the wake would wait out its hour; the round gives it seconds.

mod common;

use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use common::{watched, SplitMix};
use delaywheel::queue::{DelayQueue, Key};
use delaywheel::Timer;

const CONSUMERS: usize = 3;
const HOUR: Duration = Duration::from_secs(3600);
const PROMPTLY: Duration = Duration::from_secs(5);

/// How a round empties the queue.
#[derive(Clone, Copy, Debug)]
enum Empty {
    Clear,
    RemoveEach,
    Shutdown,
}

fn empty(queue: &DelayQueue<u64>, keys: Vec<Key>, how: Empty) {
    match how {
        Empty::Clear => queue.clear(),
        Empty::RemoveEach => keys.iter().for_each(|k| assert!(queue.remove(k).is_some())),
        Empty::Shutdown => drop(queue.timer().shutdown()),
    }
}

fn round(seed: u64) {
    let mut rng = SplitMix(seed);
    let how = [Empty::Clear, Empty::RemoveEach, Empty::Shutdown][rng.range(0, 3) as usize];
    let queue = Arc::new(DelayQueue::with_timer(Timer::builder().tick(Duration::from_millis(1)).build()));
    let keys: Vec<Key> = (0..rng.range(1, 4)).map(|v| queue.insert(v, Duration::from_secs(60))).collect();
    let start = Arc::new(Barrier::new(CONSUMERS + 1));
    let (tx, rx) = mpsc::channel();
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|_| {
            let (queue, start, tx) = (Arc::clone(&queue), Arc::clone(&start), tx.clone());
            thread::spawn(move || {
                start.wait();
                tx.send(queue.recv_timeout(HOUR).map(|e| e.into_inner())).unwrap();
            })
        })
        .collect();
    start.wait();
    for _ in 0..rng.range(0, 200) {
        std::hint::spin_loop();
    }
    empty(&queue, keys, how);
    for _ in 0..CONSUMERS {
        let got = rx
            .recv_timeout(PROMPTLY)
            .unwrap_or_else(|_| panic!("a consumer missed the {how:?} (seed {seed})"));
        assert_eq!(got, None, "seed {seed}");
    }
    consumers.into_iter().for_each(|c| c.join().unwrap());
}

#[test]
fn consumers_starting_to_wait_as_the_queue_empties_return_none_promptly() {
    watched("consumers racing the queue's emptying", || {
        for seed in 0..300 {
            round(0xE7 + seed);
        }
    });
}

#[cfg(feature = "async")]
#[test]
fn async_consumers_starting_to_wait_as_the_queue_empties_return_none_promptly() {
    watched("async consumers racing the queue's emptying", || {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
        for seed in 0..300 {
            let mut rng = SplitMix(seed);
            let how = [Empty::Clear, Empty::RemoveEach, Empty::Shutdown][rng.range(0, 3) as usize];
            let queue =
                Arc::new(DelayQueue::with_timer(Timer::builder().tick(Duration::from_millis(1)).build()));
            let keys: Vec<Key> =
                (0..rng.range(1, 4)).map(|v| queue.insert(v, Duration::from_secs(60))).collect();
            let consumers: Vec<_> = (0..CONSUMERS)
                .map(|_| {
                    let queue = Arc::clone(&queue);
                    runtime.spawn(async move { queue.next_expired().await.map(|e| e.into_inner()) })
                })
                .collect();
            for _ in 0..rng.range(0, 2_000) {
                std::hint::spin_loop();
            }
            empty(&queue, keys, how);
            runtime.block_on(async {
                for consumer in consumers {
                    let got = consumer.await.unwrap();
                    assert_eq!(got, None, "seed {seed}");
                }
            });
        }
    });
}
