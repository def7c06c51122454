//! Each value's owner re-arming it (later, earlier, to a passed instant) while removers, consumers
//! (`try_recv`, `try_recv_many`, `recv_timeout`), a clear, `shrink()` and the queue's driver race
//! it: every value is dropped once and comes out to at most one of take and remove, never before
//! the deadline of its last `true` reset and carrying that deadline; and at every pause of all
//! threads `len()` counts exactly the values not yet dropped.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use common::{watched, SplitMix};
use delaywheel::queue::{DelayQueue, Key};
use delaywheel::{TaskExecution, Timer};

const VALUES: usize = 1_500;
const OWNERS: usize = 2;
const NEVER: u64 = u64::MAX;

struct Tally {
    base: Instant,
    drops: Vec<AtomicUsize>,
    taken: Vec<AtomicUsize>,
    removed: Vec<AtomicUsize>,
    /// Nanoseconds after `base`: the deadline of the last `true` reset (or the insert's), written
    /// by the value's owner only; for a reset by a duration, the least it can be (the queue reads
    /// the clock after the owner did), and `inexact` is set.
    due: Vec<AtomicU64>,
    inexact: Vec<AtomicBool>,
    /// Nanoseconds after `base`: when a consumer took it, and the deadline it carried.
    taken_at: Vec<AtomicU64>,
    carried: Vec<AtomicU64>,
}

impl Tally {
    fn new(base: Instant) -> Tally {
        let zeros = || (0..VALUES).map(|_| AtomicUsize::new(0)).collect();
        let nevers = || (0..VALUES).map(|_| AtomicU64::new(NEVER)).collect();
        Tally {
            base,
            drops: zeros(),
            taken: zeros(),
            removed: zeros(),
            due: nevers(),
            inexact: (0..VALUES).map(|_| AtomicBool::new(false)).collect(),
            taken_at: nevers(),
            carried: nevers(),
        }
    }

    fn nanos(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.base).as_nanos() as u64
    }

    fn alive(&self) -> usize {
        self.drops.iter().filter(|d| d.load(Ordering::SeqCst) == 0).count()
    }
}

struct Value {
    id: usize,
    tally: Arc<Tally>,
}

impl Drop for Value {
    fn drop(&mut self) {
        self.tally.drops[self.id].fetch_add(1, Ordering::SeqCst);
    }
}

fn took(queue: &DelayQueue<Value>, tally: &Tally, expired: delaywheel::queue::Expired<Value>) {
    let now = tally.nanos(queue.timer().now());
    let id = expired.get_ref().id;
    tally.taken[id].fetch_add(1, Ordering::SeqCst);
    tally.taken_at[id].store(now, Ordering::SeqCst);
    tally.carried[id].store(tally.nanos(expired.deadline()), Ordering::SeqCst);
}

/// What the owners, removers and consumers do between pauses.
fn work(me: usize, queue: &DelayQueue<Value>, tally: &Tally, keys: &[Key], rng: &mut SplitMix) {
    let id = rng.range(0, VALUES as u64) as usize;
    match (me, rng.range(0, 8)) {
        // Owners: re-arm their own values.
        (0..OWNERS, 0..=5) => {
            let id = id - id % OWNERS + me;
            let now = queue.timer().now();
            let to = match rng.range(0, 3) {
                0 => now.checked_sub(Duration::from_micros(rng.range(0, 2_000))).unwrap_or(now),
                1 => now + Duration::from_micros(rng.range(0, 1_500)),
                _ => now + Duration::from_micros(rng.range(0, 25_000)),
            };
            let by_duration = rng.next() % 2 == 0;
            let before = tally.due[id].swap(tally.nanos(to), Ordering::SeqCst);
            let was = tally.inexact[id].swap(by_duration, Ordering::SeqCst);
            let moved = if by_duration {
                queue.reset(&keys[id], to.saturating_duration_since(now))
            } else {
                queue.reset_at(&keys[id], to)
            };
            if !moved {
                tally.due[id].store(before, Ordering::SeqCst);
                tally.inexact[id].store(was, Ordering::SeqCst);
            }
        }
        (_, 0 | 6) => {
            if let Some(value) = queue.remove(&keys[id]) {
                assert_eq!(value.id, id, "remove handed back another value");
                tally.removed[id].fetch_add(1, Ordering::SeqCst);
            }
        }
        (_, 1 | 2) => {
            if let Some(expired) = queue.try_recv() {
                took(queue, tally, expired);
            }
        }
        (_, 3 | 4) => {
            let mut batch = Vec::new();
            queue.try_recv_many(&mut batch, rng.range(1, 16) as usize);
            batch.into_iter().for_each(|expired| took(queue, tally, expired));
        }
        (_, 5) => {
            if let Some(expired) = queue.recv_timeout(Duration::from_micros(rng.range(0, 500))) {
                took(queue, tally, expired);
            }
        }
        _ => queue.timer().shrink(),
    }
}

fn round(seed: u64) {
    let mut rng = SplitMix(seed);
    let execution = if rng.next() % 2 == 0 { TaskExecution::OnDriver } else { TaskExecution::Threads(2) };
    let wheel_size = [2, 4, 16][rng.range(0, 3) as usize];
    let timer = Timer::builder()
        .tick(Duration::from_micros([1, 50, 1_000][rng.range(0, 3) as usize]))
        .bucket_lanes([2, 16][rng.range(0, 2) as usize])
        .wheel_size(wheel_size)
        .execution(execution)
        .build();
    let queue = DelayQueue::with_timer(timer);
    let tally = Arc::new(Tally::new(queue.timer().now()));
    let keys: Vec<Key> = (0..VALUES)
        .map(|id| {
            let at = queue.timer().now() + Duration::from_micros(rng.range(0, 20_000));
            tally.due[id].store(tally.nanos(at), Ordering::SeqCst);
            queue.insert_at(Value { id, tally: Arc::clone(&tally) }, at)
        })
        .collect();
    let threads = OWNERS + 2;
    // Phases of work, each followed by a pause of every thread in which `len()` is checked.
    let phases = 6;
    let clear_in = rng.range(0, 2 * phases);
    let pause = Barrier::new(threads + 1);
    let resume = Barrier::new(threads + 1);
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        for me in 0..threads {
            let (queue, tally, keys, pause, resume, stop) =
                (&queue, &*tally, &keys[..], &pause, &resume, &stop);
            let mut rng = SplitMix(rng.next());
            s.spawn(move || loop {
                let until = Instant::now() + Duration::from_millis(4);
                while Instant::now() < until {
                    work(me, queue, tally, keys, &mut rng);
                }
                pause.wait();
                resume.wait();
                if stop.load(Ordering::SeqCst) {
                    break;
                }
            });
        }
        for phase in 0..phases {
            if phase == clear_in {
                thread::sleep(Duration::from_millis(2));
                queue.clear();
            }
            pause.wait();
            // Values keep expiring meanwhile: counted in `len()` until taken.
            let (len, alive) = (queue.len(), tally.alive());
            assert_eq!(len, alive, "len() with every thread paused, phase {phase} (seed {seed})");
            if phase == phases - 1 {
                stop.store(true, Ordering::SeqCst);
            }
            resume.wait();
        }
    });
    // Take what is left, once its last deadline passed.
    let until = Instant::now() + Duration::from_secs(5);
    while tally.alive() > 0 && Instant::now() < until {
        if let Some(expired) = queue.recv_timeout(Duration::from_millis(5)) {
            took(&queue, &tally, expired);
        }
    }
    assert_eq!((queue.len(), queue.is_empty()), (0, true), "seed {seed}");
    for id in 0..VALUES {
        let load = |v: &Vec<AtomicUsize>| v[id].load(Ordering::SeqCst);
        let (drops, taken, removed) = (load(&tally.drops), load(&tally.taken), load(&tally.removed));
        assert_eq!(drops, 1, "value {id} dropped {drops} times (seed {seed})");
        assert!(taken + removed <= 1, "value {id} taken {taken} and removed {removed} times (seed {seed})");
        if taken == 1 {
            let due = tally.due[id].load(Ordering::SeqCst);
            let (at, carried) =
                (tally.taken_at[id].load(Ordering::SeqCst), tally.carried[id].load(Ordering::SeqCst));
            assert!(at >= due, "value {id} taken {} ns before its deadline (seed {seed})", due - at);
            assert!(at >= carried, "value {id} taken before the deadline it carries (seed {seed})");
            if tally.inexact[id].load(Ordering::SeqCst) {
                assert!(
                    carried >= due,
                    "value {id} carries an earlier deadline than its last reset's (seed {seed})"
                );
            } else {
                assert_eq!(
                    carried, due,
                    "value {id} carries another deadline than its last reset's (seed {seed})"
                );
            }
        }
    }
}

#[test]
fn resets_racing_removes_takes_clears_and_shrinks_keep_each_value_once_and_never_early() {
    watched("queue resets racing takes", || {
        for seed in 0..10 {
            round(0x5EED_0000 + seed);
        }
    });
}
