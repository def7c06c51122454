//! A delay queue shared through an `Arc` by producers, consumers and a remover, whose values come
//! due every tick, dropped wherever its last reference ends while its driver (or executor
//! threads) hands batches over: every value is dropped exactly once, by the thread that took or
//! removed it, or by the queue's drop, or as its batch arrives after that drop; none is taken
//! twice, and none is left undropped.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::{watched, SplitMix};
use delaywheel::queue::{DelayQueue, Key};
use delaywheel::{TaskExecution, Timer};

const MAX_VALUES: usize = 200_000;

struct Value {
    id: usize,
    drops: Arc<Vec<AtomicU8>>,
}

impl Drop for Value {
    fn drop(&mut self) {
        self.drops[self.id].fetch_add(1, Ordering::SeqCst);
    }
}

fn round(seed: u64) {
    let mut rng = SplitMix(seed);
    let execution = if rng.next() % 2 == 0 { TaskExecution::OnDriver } else { TaskExecution::Threads(2) };
    let timer = Timer::builder().tick(Duration::from_millis(1)).wheel_size(4).execution(execution).build();
    let queue = Arc::new(DelayQueue::with_timer(timer));
    let drops: Arc<Vec<AtomicU8>> = Arc::new((0..MAX_VALUES).map(|_| AtomicU8::new(0)).collect());
    let taken: Arc<Vec<AtomicU8>> = Arc::new((0..MAX_VALUES).map(|_| AtomicU8::new(0)).collect());
    let next = Arc::new(Mutex::new(0usize));
    let keys = Arc::new(Mutex::new(Vec::<Key>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..5)
        .map(|role| {
            let (queue, drops, taken, next, keys, stop) = (
                Arc::clone(&queue),
                Arc::clone(&drops),
                Arc::clone(&taken),
                Arc::clone(&next),
                Arc::clone(&keys),
                Arc::clone(&stop),
            );
            let mut rng = SplitMix(rng.next());
            // Each lets its reference go at a moment of its own once told to stop.
            let linger = Duration::from_micros(rng.range(0, 3_000));
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match role {
                        0 | 1 => {
                            let id = {
                                let mut next = next.lock().unwrap();
                                if *next == MAX_VALUES {
                                    continue;
                                }
                                *next += 1;
                                *next - 1
                            };
                            let value = Value { id, drops: Arc::clone(&drops) };
                            let key = queue.insert(value, Duration::from_micros(rng.range(0, 3_000)));
                            if rng.range(0, 4) == 0 {
                                keys.lock().unwrap().push(key);
                            }
                        }
                        2 | 3 => {
                            if let Some(expired) = queue.recv_timeout(Duration::from_micros(500)) {
                                taken[expired.get_ref().id].fetch_add(1, Ordering::SeqCst);
                            }
                        }
                        _ => {
                            let key = keys.lock().unwrap().pop();
                            if let Some(value) = key.and_then(|k| queue.remove(&k)) {
                                taken[value.id].fetch_add(1, Ordering::SeqCst);
                            }
                        }
                    }
                }
                thread::sleep(linger);
                drop(queue);
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(rng.range(5, 25)));
    drop(queue);
    stop.store(true, Ordering::Relaxed);
    threads.into_iter().for_each(|t| t.join().unwrap());
    let made = *next.lock().unwrap();
    // A batch on its way to the dropped queue is dropped as it arrives, on the timer's thread.
    let until = Instant::now() + Duration::from_secs(5);
    while (0..made).any(|id| drops[id].load(Ordering::SeqCst) == 0) && Instant::now() < until {
        thread::sleep(Duration::from_millis(1));
    }
    for id in 0..made {
        let (d, t) = (drops[id].load(Ordering::SeqCst), taken[id].load(Ordering::SeqCst));
        assert_eq!(d, 1, "value {id} of {made} dropped {d} times (seed {seed})");
        assert!(t <= 1, "value {id} taken or removed {t} times (seed {seed})");
    }
}

#[test]
fn a_queue_dropped_by_its_last_user_mid_batch_drops_each_value_once() {
    watched("queue dropped mid batch", || {
        for seed in 0..12 {
            round(0xD0D0 + seed);
        }
    });
}
