//! Tokio consumer tasks on a driven `DelayQueue` (`next_expired` and the `Stream`) while producer
//! threads insert, remove and move values, until one consumer shuts the timer down: each value is
//! taken once, removed once, or dropped by the shutdown; no consumer waits on after the end.
#![cfg(feature = "async")]

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

use common::queue::Counted;
use common::SplitMix;
use delaywheel::queue::{DelayQueue, Expired, Key};
use delaywheel::{TaskExecution, Timer};
use futures::StreamExt;

const PRODUCERS: usize = 2;
const PER_PRODUCER: usize = 2_000;

/// Returns whether the consumer shut the timer down (rather than finding the queue drained).
fn round(runtime: &tokio::runtime::Runtime, execution: TaskExecution, seed: u64) -> bool {
    let timer = Timer::builder().tick(Duration::from_millis(1)).wheel_size(8).execution(execution).build();
    let queue: Arc<DelayQueue<Counted>> = Arc::new(DelayQueue::with_timer(timer));
    let drops = Arc::new(AtomicUsize::new(0));
    let (inserted, removed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let producing = Arc::new(AtomicUsize::new(PRODUCERS));
    let shut = Arc::new(AtomicBool::new(false));
    let taken = Arc::new(Mutex::new(HashSet::new()));
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let (queue, drops, inserted, removed, producing) = (
                Arc::clone(&queue),
                Arc::clone(&drops),
                Arc::clone(&inserted),
                Arc::clone(&removed),
                Arc::clone(&producing),
            );
            thread::spawn(move || {
                let mut rng = SplitMix(seed * 13 + p as u64);
                let mut keys: Vec<Key> = Vec::new();
                for i in 0..PER_PRODUCER {
                    let id = p * PER_PRODUCER + i;
                    inserted.fetch_add(1, Ordering::SeqCst); // a refused value is dropped too
                    let value = Counted { id, drops: Arc::clone(&drops) };
                    let Ok(key) = queue.try_insert(value, Duration::from_micros(rng.range(0, 3_000))) else {
                        break;
                    };
                    keys.push(key);
                    let k = rng.range(0, keys.len() as u64) as usize;
                    match rng.range(0, 4) {
                        0 if queue.remove(&keys.swap_remove(k)).is_some() => {
                            removed.fetch_add(1, Ordering::SeqCst);
                        }
                        1 => {
                            queue.reset(&keys[k], Duration::from_micros(rng.range(0, 2_000)));
                        }
                        _ => {}
                    }
                    if i % 50 == 0 {
                        thread::sleep(Duration::from_micros(100));
                    }
                }
                producing.fetch_sub(1, Ordering::SeqCst);
            })
        })
        .collect();
    let consumers: Vec<_> = (0..3u64)
        .map(|c| {
            let (queue, producing, shut, taken) =
                (Arc::clone(&queue), Arc::clone(&producing), Arc::clone(&shut), Arc::clone(&taken));
            runtime.spawn(async move {
                loop {
                    let next: Option<Expired<Counted>> =
                        if c == 1 { (&*queue).next().await } else { queue.next_expired().await };
                    match next {
                        Some(expired) => {
                            assert!(queue.timer().now() >= expired.deadline(), "early");
                            let total = {
                                let mut taken = taken.lock().unwrap();
                                assert!(taken.insert(expired.get_ref().id), "twice");
                                taken.len()
                            };
                            // The consumer that takes the round's share shuts the timer down, from
                            // its task (it waits for the driver, as any shutdown).
                            if total >= 200 + seed as usize * 40 && !shut.swap(true, Ordering::SeqCst) {
                                drop(queue.timer().shutdown());
                            }
                        }
                        None if producing.load(Ordering::SeqCst) == 0 && queue.is_empty() => break,
                        None => tokio::task::yield_now().await,
                    }
                }
            })
        })
        .collect();
    for producer in producers {
        producer.join().unwrap();
    }
    runtime.block_on(async {
        for consumer in consumers {
            consumer.await.unwrap();
        }
    });
    assert_eq!(queue.len(), 0, "{execution:?} seed {seed}");
    let (taken, removed) = (taken.lock().unwrap().len(), removed.load(Ordering::SeqCst));
    assert!(taken + removed <= inserted.load(Ordering::SeqCst));
    assert_eq!(Arc::strong_count(&queue), 1, "the consumers are done");
    drop(queue);
    assert_eq!(drops.load(Ordering::SeqCst), inserted.load(Ordering::SeqCst), "each value dropped once");
    shut.load(Ordering::SeqCst)
}

#[test]
fn async_consumers_and_producers_racing_a_shutdown_see_each_value_once() {
    let (done_tx, done_rx) = mpsc::channel();
    thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(3).build().unwrap();
        let mut shut = 0;
        for seed in 0..8 {
            shut += usize::from(round(&runtime, TaskExecution::OnDriver, seed));
            shut += usize::from(round(&runtime, TaskExecution::Threads(2), seed));
        }
        done_tx.send(shut).unwrap();
    });
    let shut = done_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("a consumer never saw the end (or a round failed)");
    assert!(shut >= 12, "only {shut} of 16 rounds shut the timer down mid-stream");
}
