//! `Timer::drive` under the extras built on the timer: a delay queue whose producer threads insert,
//! remove and re-arm values while tokio tasks consume them (`next_expired`, the `Stream`, a
//! `select!` against a sleep), a purgatory whose operations are watched and checked from tokio
//! tasks, and, on a manual clock, a drive future serving sleeps, callbacks and values while a
//! simulation jumps from one `next_wakeup()` to the next.
//!
//! Each value comes out once or is removed once, never before the deadline its last accepted
//! re-arm set; each operation completes once; on the manual clock each item comes at exactly the
//! tick boundary at or after its deadline, with no further move of the clock.
#![cfg(feature = "async")]

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{ms, SplitMix};
use delaywheel::purgatory::{DelayedOperation, Purgatory};
use delaywheel::queue::{DelayQueue, Expired, Key};
use delaywheel::{ManualClock, Timer};
use futures::StreamExt;

/// Far beyond any lateness: waiting this long means something was lost.
const LOST: Duration = Duration::from_secs(10);

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

fn runtime(workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(workers).enable_time().build().unwrap()
}

/// The deadline each value was last given by an insert or an accepted re-arm.
type Deadlines = Arc<Mutex<HashMap<usize, Instant>>>;

fn produce(queue: &DelayQueue<usize>, p: usize, deadlines: &Deadlines, removed: &Mutex<HashSet<usize>>) {
    const PER_PRODUCER: usize = 3_000;
    let mut rng = SplitMix(p as u64 + 17);
    let mut keys: Vec<(usize, Key)> = Vec::new();
    for i in 0..PER_PRODUCER {
        let id = p * PER_PRODUCER + i;
        let at = queue.timer().now() + us(rng.range(0, 3_000));
        deadlines.lock().unwrap().insert(id, at);
        keys.push((id, queue.insert_at(id, at)));
        match rng.range(0, 6) {
            0 => {
                let (id, key) = keys.swap_remove(rng.range(0, keys.len() as u64) as usize);
                if let Some(value) = queue.remove(&key) {
                    assert_eq!(value, id);
                    assert!(removed.lock().unwrap().insert(id), "{id} removed twice");
                }
            }
            1 | 2 => {
                let (id, key) = &keys[rng.range(0, keys.len() as u64) as usize];
                let at = queue.timer().now() + us(rng.range(0, 2_000));
                // Recorded under the lock the consumers read it with, after the re-arm: a value
                // taken meanwhile was taken after the re-arm made it due at `at` at the earliest.
                let mut deadlines = deadlines.lock().unwrap();
                if queue.reset_at(key, at) {
                    deadlines.insert(*id, at);
                }
            }
            _ => {}
        }
        if i % 50 == 0 {
            std::thread::sleep(us(300));
        }
    }
}

async fn consume(
    queue: Arc<DelayQueue<usize>>,
    how: usize,
    producing: Arc<AtomicUsize>,
    deadlines: Deadlines,
) -> Vec<usize> {
    let mut taken = Vec::new();
    loop {
        let next: Option<Expired<usize>> = match how {
            0 => tokio::time::timeout(LOST, queue.next_expired()).await.expect("a consumer was never woken"),
            1 => tokio::time::timeout(LOST, (&*queue).next()).await.expect("a consumer was never woken"),
            _ => tokio::select! {
                next = queue.next_expired() => next,
                () = queue.timer().sleep(us(200)) => continue,
            },
        };
        match next {
            Some(expired) => {
                let (id, now) = (*expired.get_ref(), queue.timer().now());
                let due = deadlines.lock().unwrap()[&id];
                assert!(now >= due, "value {id} taken {:?} before the deadline last set", due - now);
                taken.push(expired.into_inner());
            }
            None if producing.load(Ordering::SeqCst) == 0 && queue.is_empty() => return taken,
            None => tokio::time::sleep(us(100)).await,
        }
    }
}

#[test]
fn a_delay_queue_on_a_drive_future_hands_each_value_out_once_never_before_its_last_deadline() {
    for (workers, seed) in [(2, 0), (4, 1)] {
        let rt = runtime(workers);
        let timer = Timer::builder().tick(ms(1)).wheel_size(8 + seed).manual().build();
        let drive = rt.spawn(timer.drive(|at: Instant| tokio::time::sleep_until(at.into())));
        let queue = Arc::new(DelayQueue::with_timer(timer));
        const PRODUCERS: usize = 3;
        let producing = Arc::new(AtomicUsize::new(PRODUCERS));
        let (deadlines, removed) = (Deadlines::default(), Arc::new(Mutex::new(HashSet::new())));
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let (queue, producing) = (Arc::clone(&queue), Arc::clone(&producing));
                let (deadlines, removed) = (Arc::clone(&deadlines), Arc::clone(&removed));
                std::thread::spawn(move || {
                    produce(&queue, p, &deadlines, &removed);
                    producing.fetch_sub(1, Ordering::SeqCst);
                })
            })
            .collect();
        let taken = rt.block_on(async {
            let consumers: Vec<_> = (0..3)
                .map(|how| {
                    let (queue, producing, deadlines) =
                        (Arc::clone(&queue), Arc::clone(&producing), Arc::clone(&deadlines));
                    tokio::spawn(consume(queue, how, producing, deadlines))
                })
                .collect();
            let mut taken = Vec::new();
            for consumer in consumers {
                taken.extend(consumer.await.unwrap());
            }
            taken
        });
        producers.into_iter().for_each(|p| p.join().unwrap());
        let removed = removed.lock().unwrap();
        let mut seen = HashSet::new();
        for id in &taken {
            assert!(seen.insert(*id), "{id} taken twice");
            assert!(!removed.contains(id), "{id} taken and removed");
        }
        assert_eq!(seen.len() + removed.len(), PRODUCERS * 3_000, "values lost");
        assert_eq!((queue.len(), queue.timer().len()), (0, 0));
        drop(Arc::try_unwrap(queue).expect("the consumers let go of the queue"));
        rt.block_on(async {
            tokio::time::timeout(LOST, drive).await.expect("the drive future ends").unwrap()
        });
    }
}

/// Completes once `ready`; counts its completions and expirations.
#[derive(Default)]
struct Request {
    ready: AtomicBool,
    completed: AtomicUsize,
    expired: AtomicUsize,
}

impl DelayedOperation for Request {
    fn try_complete(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
    fn on_complete(&self) {
        self.completed.fetch_add(1, Ordering::SeqCst);
    }
    fn on_expiration(&self) {
        self.expired.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_purgatory_on_a_drive_future_completes_each_operation_once() {
    let rt = runtime(2);
    let timer = Timer::builder().tick(ms(1)).manual().build();
    let drive = rt.spawn(timer.drive(|at: Instant| tokio::time::sleep_until(at.into())));
    let purgatory: Arc<Purgatory<u64, Request>> = Arc::new(Purgatory::with_timer(timer));
    let requests = Arc::new(Mutex::new(Vec::new()));
    rt.block_on(async {
        let handlers: Vec<_> = (0..50u64)
            .map(|t| {
                let (purgatory, requests) = (Arc::clone(&purgatory), Arc::clone(&requests));
                tokio::spawn(async move {
                    let mut rng = SplitMix(t + 5);
                    for _ in 0..100 {
                        let request = Arc::new(Request::default());
                        requests.lock().unwrap().push(Arc::clone(&request));
                        let key = rng.range(0, 20);
                        purgatory.try_complete_else_watch(
                            Arc::clone(&request),
                            us(rng.range(0, 3_000)),
                            [key, key + 1],
                        );
                        tokio::time::sleep(us(rng.range(0, 500))).await;
                        request.ready.store(rng.next() % 2 == 0, Ordering::Release);
                        purgatory.check_and_complete(&key);
                    }
                })
            })
            .collect();
        for handler in handlers {
            handler.await.unwrap();
        }
        let give_up = Instant::now() + LOST;
        while purgatory.delayed() > 0 {
            assert!(Instant::now() < give_up, "{} operations never expired", purgatory.delayed());
            tokio::time::sleep(ms(2)).await;
        }
    });
    for request in requests.lock().unwrap().iter() {
        let (completed, expired) =
            (request.completed.load(Ordering::SeqCst), request.expired.load(Ordering::SeqCst));
        assert_eq!(completed, 1, "completed {completed} times");
        assert!(expired <= 1);
    }
    assert_eq!(purgatory.watched(), 0);
    drop(Arc::try_unwrap(purgatory).expect("the handlers let go of the purgatory"));
    rt.block_on(async { tokio::time::timeout(LOST, drive).await.expect("the drive future ends").unwrap() });
}

/// Yields to the runtime until `done`, failing after [`LOST`].
async fn until(what: impl Fn() -> String, done: impl Fn() -> bool) {
    let give_up = Instant::now() + LOST;
    while !done() {
        assert!(Instant::now() < give_up, "{}", what());
        tokio::time::sleep(ms(1)).await;
    }
}

/// Sleeps, callbacks and values on a manual timer with a drive future; the clock jumps to each
/// `next_wakeup()` once, and what is due then must come without the clock moving again.
fn jumps(rt: tokio::runtime::Runtime, seed: u64) {
    let clock = ManualClock::new();
    let tick = ms(1);
    let timer = Timer::builder().tick(tick).wheel_size(4).clock(clock.clone()).manual().build();
    let queue: Arc<DelayQueue<u64>> = Arc::new(DelayQueue::with_timer(timer));
    rt.block_on(async {
        let timer = queue.timer();
        let _drive = tokio::spawn(timer.drive(|_: Instant| async { unreachable!("a manual clock") }));
        let base = timer.now();
        let tick_boundary =
            |at: Instant| base + tick * ((at - base).as_nanos().div_ceil(tick.as_nanos()) as u32);
        let mut rng = SplitMix(seed);
        // (item, deadline, the clock when it came)
        let came = Arc::new(Mutex::new(Vec::<(u64, Instant, Instant)>::new()));
        let mut items = Vec::new();
        let mut sleepers = Vec::new();
        for id in 0..40u64 {
            let deadline = base + us(rng.range(0, 40_000));
            items.push((id, deadline));
            let came = Arc::clone(&came);
            match id % 3 {
                0 => {
                    let (mut sleep, queue) = (timer.sleep_until(deadline), Arc::clone(&queue));
                    sleepers.push(tokio::spawn(async move {
                        (&mut sleep).await;
                        came.lock().unwrap().push((id, sleep.deadline(), queue.timer().now()));
                    }));
                }
                1 => {
                    let clock = clock.clone();
                    timer.schedule_at(deadline, move || {
                        came.lock().unwrap().push((id, deadline, base + clock.now()))
                    });
                }
                _ => drop(queue.insert_at(id, deadline)),
            }
        }
        let consumer = {
            let (queue, came) = (Arc::clone(&queue), Arc::clone(&came));
            tokio::spawn(async move {
                while let Some(expired) = queue.next_expired().await {
                    came.lock().unwrap().push((*expired.get_ref(), expired.deadline(), queue.timer().now()));
                }
            })
        };
        while let Some(next) = timer.next_wakeup() {
            clock.advance_to(next - base);
            let now = timer.now();
            until(
                || format!("seed {seed}: no advance at {:?}", now - base),
                || timer.next_wakeup().map_or(true, |n| n > now),
            )
            .await;
            let due: Vec<u64> =
                items.iter().filter(|(_, d)| tick_boundary(*d) <= now).map(|(id, _)| *id).collect();
            let all_came = || due.iter().all(|id| came.lock().unwrap().iter().any(|(c, _, _)| c == id));
            until(|| format!("seed {seed}: {due:?} due by {:?}", now - base), all_came).await;
            for (id, deadline, at) in came.lock().unwrap().iter() {
                assert_eq!(
                    *at,
                    tick_boundary(*deadline),
                    "seed {seed}: {id} due {:?} came at {:?}",
                    *deadline - base,
                    *at - base
                );
            }
        }
        for sleeper in sleepers {
            sleeper.await.unwrap();
        }
        until(|| format!("seed {seed}: items missing"), || came.lock().unwrap().len() == items.len()).await;
        consumer.await.unwrap();
    });
}

#[test]
fn a_drive_future_on_a_manual_clock_serves_each_jump_at_its_tick() {
    for seed in 0..8 {
        jumps(tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap(), seed);
        jumps(
            tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_time().build().unwrap(),
            seed,
        );
    }
}
