//! Deadline order of a shared delay queue under load, on the system clock: two producers insert,
//! re-arm and remove values while two consumers take them. Ignored by default (it runs for a
//! while and loads both cores):
//!
//! ```text
//! DELAYWHEEL_QUEUE_ORDER_SECS=30 cargo test --release --test queue_order_under_load -- --ignored --nocapture
//! ```
//!
//! The rule checked: a value whose deadline was set at least [`KNOWN`] before it came due was
//! scheduled before any advance that reaches it began, so that advance fires it, in deadline order
//! with everything else it fires; a consumer therefore never takes it after a value due more than
//! [`KNOWN`] later. It loads the host (twelve threads): a scheduler preempted in the middle of a
//! schedule that offers a bucket must not keep that bucket from the driver (`src/shard/core.rs`,
//! "The queue of buckets": an offer is made after the entry is linked).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use delaywheel::queue::{DelayQueue, Key};
use delaywheel::Timer;

/// How long before its deadline a value's last set must have returned for the rule to apply.
const KNOWN: Duration = Duration::from_millis(2);

/// Each value's effective deadline and when the set that gave it returned.
#[derive(Clone, Copy)]
struct Set {
    deadline: Instant,
    returned: Instant,
}

/// A small xorshift generator: no dependency, a different stream per thread.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

type Sets = Arc<Vec<Mutex<HashMap<u64, Set>>>>;

fn produce(queue: &DelayQueue<u64>, sets: &Sets, next: &AtomicU64, seed: u64, until: Instant) {
    let mut rng = Rng(seed);
    let mut keys: Vec<(u64, Key)> = Vec::new();
    let shard = |id: u64| &sets[(id % 64) as usize];
    while Instant::now() < until {
        let now = queue.timer().now();
        let micros = |rng: &mut Rng, n| Duration::from_micros(rng.below(n));
        // Mostly within 3 ms, some passed already, some up to 40 ms away.
        let deadline = match rng.below(10) {
            0 => now.checked_sub(micros(&mut rng, 2_000)).unwrap_or(now),
            1 => now + micros(&mut rng, 40_000),
            _ => now + micros(&mut rng, 3_000),
        };
        match rng.below(100) {
            0..=44 => {
                let id = next.fetch_add(1, Ordering::Relaxed);
                // Recorded under the shard's lock, so that a consumer never meets an unknown id.
                let mut shard = shard(id).lock().unwrap();
                let key = queue.insert_at(id, deadline);
                shard.insert(id, Set { deadline, returned: Instant::now() });
                keys.push((id, key));
                if keys.len() > 4_000 {
                    keys.drain(..2_000);
                }
            }
            45..=79 if !keys.is_empty() => {
                let (id, key) = keys[rng.below(keys.len() as u64) as usize];
                // Half the time a little earlier than the value's deadline: often the same tick.
                let deadline = match queue.deadline(&key) {
                    Some(current) if rng.below(2) == 0 => {
                        current.checked_sub(micros(&mut rng, 1_000)).unwrap_or(current)
                    }
                    _ => deadline,
                };
                let mut shard = shard(id).lock().unwrap();
                if queue.reset_at(&key, deadline) {
                    shard.insert(id, Set { deadline, returned: Instant::now() });
                }
            }
            80..=91 if !keys.is_empty() => {
                let (_, key) = keys.swap_remove(rng.below(keys.len() as u64) as usize);
                queue.remove(&key);
            }
            92 => thread::sleep(micros(&mut rng, 1_500)),
            _ => {}
        }
    }
}

/// One queue on a timer with `wheel` slots, its producers and consumers for `secs`: the out-of-order
/// pairs found, as how much later the first value was due.
fn out_of_order(wheel: usize, secs: u64, seed: u64) -> Vec<Duration> {
    let timer = Timer::builder().tick(Duration::from_millis(1)).wheel_size(wheel).build();
    let queue = Arc::new(DelayQueue::with_timer(timer));
    let sets: Sets = Arc::new((0..64).map(|_| Mutex::default()).collect());
    let (next, producing) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(true)));
    let until = Instant::now() + Duration::from_secs(secs);
    let producers: Vec<_> = (0..2)
        .map(|p| {
            let (queue, sets, next) = (Arc::clone(&queue), Arc::clone(&sets), Arc::clone(&next));
            thread::spawn(move || produce(&queue, &sets, &next, seed + p, until))
        })
        .collect();
    let consumers: Vec<_> = (0..2)
        .map(|_| {
            let (queue, producing) = (Arc::clone(&queue), Arc::clone(&producing));
            thread::spawn(move || {
                let mut taken = Vec::new();
                loop {
                    match queue.recv_timeout(Duration::from_millis(50)) {
                        Some(expired) => taken.push((*expired.get_ref(), expired.deadline())),
                        None if !producing.load(Ordering::SeqCst) && queue.is_empty() => return taken,
                        None => {}
                    }
                }
            })
        })
        .collect();
    producers.into_iter().for_each(|p| p.join().unwrap());
    producing.store(false, Ordering::SeqCst);
    let taken: Vec<Vec<(u64, Instant)>> = consumers.into_iter().map(|c| c.join().unwrap()).collect();
    let sets: HashMap<u64, Set> =
        sets.iter().flat_map(|shard| shard.lock().unwrap().clone().into_iter()).collect();
    let mut found = Vec::new();
    for pair in taken.iter().flat_map(|list| list.windows(2)) {
        let ((_, first), (id, second)) = (pair[0], pair[1]);
        assert_eq!(sets[&id].deadline, second, "value {id} came out with the deadline last set");
        if sets[&id].returned + KNOWN <= second && second + KNOWN < first {
            found.push(first - second);
        }
    }
    found
}

/// Three queues at once (two timers of 4 slots, one of 512), so that their drivers run late.
#[test]
#[ignore = "a load test: run with --ignored (module docs)"]
fn values_known_in_time_come_out_in_deadline_order_under_load() {
    let secs = std::env::var("DELAYWHEEL_QUEUE_ORDER_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let runs: Vec<_> = [(4, 1), (4, 2), (512, 3)]
        .into_iter()
        .map(|(wheel, seed)| thread::spawn(move || (wheel, out_of_order(wheel, secs, 0x9E37_79B9 * seed))))
        .collect();
    let found: Vec<(usize, Vec<Duration>)> = runs.into_iter().map(|run| run.join().unwrap()).collect();
    assert!(found.iter().all(|(_, pairs)| pairs.is_empty()), "values taken after one due later: {found:?}");
}
