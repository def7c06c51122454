//! `DelayQueue`'s async consumers as a demanding user drives them: tokio's multi-thread runtime,
//! producer threads and removers racing expiry, and consumer tasks mixing `next_expired`, the
//! `Stream` of a shared reference, and `next_expired` dropped by a `select!` that a sleep on the
//! queue's own timer wins.
#![cfg(feature = "async")]

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use common::SplitMix;
use delaywheel::queue::{DelayQueue, Expired, Key};
use futures::StreamExt;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_consumers_and_removers_racing_expiry_see_each_value_once() {
    const PRODUCERS: usize = 2;
    const PER_PRODUCER: usize = 3_000;
    let queue = Arc::new(DelayQueue::new());
    let producing = Arc::new(AtomicUsize::new(PRODUCERS));
    let removed = Arc::new(Mutex::new(HashSet::new()));
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let (queue, producing, removed) =
                (Arc::clone(&queue), Arc::clone(&producing), Arc::clone(&removed));
            thread::spawn(move || {
                let mut rng = SplitMix(p as u64 + 11);
                let mut keys: Vec<(usize, Key)> = Vec::new();
                for i in 0..PER_PRODUCER {
                    let id = p * PER_PRODUCER + i;
                    keys.push((id, queue.insert(id, Duration::from_micros(rng.range(0, 4_000)))));
                    if rng.range(0, 3) == 0 {
                        let (id, key) = keys.swap_remove(rng.range(0, keys.len() as u64) as usize);
                        if let Some(value) = queue.remove(&key) {
                            assert_eq!(value, id);
                            assert!(removed.lock().unwrap().insert(id));
                        }
                    }
                    if i % 100 == 0 {
                        thread::sleep(Duration::from_micros(200));
                    }
                }
                producing.fetch_sub(1, Ordering::SeqCst);
            })
        })
        .collect();
    let consumers: Vec<_> = (0..3)
        .map(|c| {
            let (queue, producing) = (Arc::clone(&queue), Arc::clone(&producing));
            tokio::spawn(async move {
                let mut got = Vec::new();
                loop {
                    let next: Option<Expired<usize>> = match c {
                        0 => queue.next_expired().await,
                        1 => (&*queue).next().await,
                        _ => tokio::select! {
                            next = queue.next_expired() => next,
                            () = queue.timer().sleep(Duration::from_micros(300)) => continue,
                        },
                    };
                    match next {
                        Some(expired) => {
                            assert!(queue.timer().now() >= expired.deadline(), "early");
                            got.push(expired.into_inner());
                        }
                        None if producing.load(Ordering::SeqCst) == 0 && queue.is_empty() => break,
                        None => queue.timer().sleep(Duration::from_micros(100)).await,
                    }
                }
                got
            })
        })
        .collect();
    let mut taken = Vec::new();
    for consumer in consumers {
        taken.extend(consumer.await.unwrap());
    }
    for producer in producers {
        producer.join().unwrap();
    }
    let removed = removed.lock().unwrap();
    let taken_set: HashSet<usize> = taken.iter().copied().collect();
    assert_eq!(taken_set.len(), taken.len(), "a value taken twice");
    assert!(taken_set.is_disjoint(&removed), "a value both removed and taken");
    assert_eq!(taken.len() + removed.len(), PRODUCERS * PER_PRODUCER);
    assert_eq!(queue.len(), 0);
}
