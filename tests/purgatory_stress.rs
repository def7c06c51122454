//! The purgatory under load: flat memory over a million operations, and exactly-once completion
//! when checks race the expiry and the registration.

mod common;
mod purgatory_support;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Weak};
use std::thread;
use std::time::{Duration, Instant};

use common::{ms, SplitMix};
use delaywheel::purgatory::{DelayedOperation, Purgatory};
use delaywheel::{TaskExecution, Timer};
use purgatory_support::{advance, manual_purgatory, MockOp};

/// Totals over many light operations (a `MockOp` each would be the memory under test).
#[derive(Default)]
struct Totals {
    completed: AtomicUsize,
    expired: AtomicUsize,
    violations: AtomicUsize,
}

struct Light {
    ready: AtomicBool,
    done: AtomicBool,
    totals: Arc<Totals>,
}

impl Light {
    fn new(totals: &Arc<Totals>) -> Self {
        Light { ready: AtomicBool::new(false), done: AtomicBool::new(false), totals: Arc::clone(totals) }
    }
}

impl DelayedOperation for Light {
    fn try_complete(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
    fn on_complete(&self) {
        if self.done.swap(true, Ordering::AcqRel) {
            self.totals.violations.fetch_add(1, Ordering::Relaxed);
        }
        self.totals.completed.fetch_add(1, Ordering::Relaxed);
    }
    fn on_expiration(&self) {
        if !self.done.load(Ordering::Acquire) {
            self.totals.violations.fetch_add(1, Ordering::Relaxed);
        }
        self.totals.expired.fetch_add(1, Ordering::Relaxed);
    }
}

/// A million operations, each watched under its own key and a shared one: half complete through a
/// check a few thousand registrations later, 1 % are cancelled, the rest expire after 50 ms of a
/// clock that moves 1 ms per thousand registrations. The purgatory must hold only the live ones:
/// its counts stay at the live level throughout (no growth from finished operations), the key map
/// never holds more than the live keys, and everything is released at the end.
#[test]
fn a_million_operations_run_in_flat_memory() {
    const N: u64 = 1_000_000;
    const SHARED: u64 = 1 << 40;
    const COMPLETE_AFTER: u64 = 5_000;
    let (clock, purgatory) = manual_purgatory::<u64, Light>();
    let totals = Arc::new(Totals::default());
    let mut to_complete: VecDeque<(u64, Arc<Light>)> = VecDeque::new();
    let mut samples: Vec<Weak<Light>> = Vec::new();
    let (mut cancelled, mut peak_first_half, mut peak_second_half) = (0, 0, 0);

    for id in 0..N {
        let op = Arc::new(Light::new(&totals));
        if id % 10_000 == 0 {
            samples.push(Arc::downgrade(&op));
        }
        assert!(!purgatory.try_complete_else_watch(Arc::clone(&op), ms(50), [id, SHARED + id % 16]));
        if id % 2 == 0 {
            to_complete.push_back((id, op));
        }
        while to_complete.front().is_some_and(|(first, _)| first + COMPLETE_AFTER <= id) {
            let (key, op) = to_complete.pop_front().unwrap();
            op.ready.store(true, Ordering::Release);
            assert_eq!(purgatory.check_and_complete(&key), 1);
        }
        if id % 100 == 1 {
            cancelled += purgatory.cancel_for_key(&id).len();
        }
        if id % 1_000 == 999 {
            advance(&clock, &purgatory, ms(1));
            let live = purgatory.watched_keys();
            if id < N / 2 {
                peak_first_half = peak_first_half.max(live);
            } else {
                peak_second_half = peak_second_half.max(live);
            }
            // Live: ~2 500 waiting for their check, ~25 000 odd ones waiting for their timeout.
            assert!(purgatory.delayed() <= 30_000, "delayed grew: {}", purgatory.delayed());
            assert!(purgatory.watched() <= 60_000, "watched grew: {}", purgatory.watched());
        }
    }
    assert!(peak_second_half <= peak_first_half + 1_000, "{peak_first_half} then {peak_second_half}");
    assert!(peak_second_half <= 30_016);

    for (key, op) in to_complete.drain(..) {
        op.ready.store(true, Ordering::Release);
        assert_eq!(purgatory.check_and_complete(&key), 1);
    }
    advance(&clock, &purgatory, ms(100));
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (0, 0, 0));
    let (completed, expired) =
        (totals.completed.load(Ordering::Relaxed), totals.expired.load(Ordering::Relaxed));
    assert_eq!(completed + cancelled, N as usize, "every operation finished once");
    assert_eq!(cancelled, 10_000);
    assert_eq!(expired, N as usize / 2 - cancelled);
    assert_eq!(totals.violations.load(Ordering::Relaxed), 0);
    assert!(samples.iter().all(|w| w.strong_count() == 0), "finished operations are all released");
}

/// Checks from several threads race a real reaper thread on operations with 1–4 ms timeouts.
/// Every operation completes exactly once; `on_expiration` only after `on_complete`, and only for
/// those the checks did not complete.
#[test]
fn checks_racing_the_reaper_complete_each_operation_exactly_once() {
    checks_racing_expiry_on(TaskExecution::OnDriver);
}

/// The same with the expirations run on executor threads, several at a time.
#[test]
fn checks_racing_expiry_on_executor_threads_complete_each_operation_exactly_once() {
    checks_racing_expiry_on(TaskExecution::Threads(2));
}

fn checks_racing_expiry_on(execution: TaskExecution) {
    const OPS: usize = 40_000;
    const CHECKERS: usize = 3;
    let purgatory: Arc<Purgatory<u64, MockOp>> =
        Arc::new(Purgatory::with_timer(Timer::builder().tick(ms(1)).execution(execution).build()));
    let ops: Arc<Vec<Arc<MockOp>>> = Arc::new((0..OPS).map(|_| Arc::new(MockOp::new())).collect());
    let registered = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(CHECKERS + 1));

    let checkers: Vec<_> = (0..CHECKERS)
        .map(|t| {
            let (purgatory, ops, registered, start) =
                (Arc::clone(&purgatory), Arc::clone(&ops), Arc::clone(&registered), Arc::clone(&start));
            thread::spawn(move || {
                let mut rng = SplitMix(t as u64 + 1);
                start.wait();
                loop {
                    let upto = registered.load(Ordering::Acquire);
                    if upto == OPS && purgatory.delayed() == 0 {
                        return;
                    }
                    if upto == 0 {
                        continue;
                    }
                    // Recent operations, whose timeouts are about to fire.
                    let i = upto - 1 - (rng.next() as usize % upto.min(2_000));
                    if rng.next() % 2 == 0 {
                        ops[i].set_completable();
                    }
                    let key = if rng.next() % 2 == 0 { i as u64 % 64 } else { 64 + i as u64 % 5 };
                    purgatory.check_and_complete(&key);
                }
            })
        })
        .collect();

    start.wait();
    for (i, op) in ops.iter().enumerate() {
        let timeout = ms(1 + (i % 4) as u64);
        purgatory.try_complete_else_watch(Arc::clone(op), timeout, [i as u64 % 64, 64 + i as u64 % 5]);
        registered.store(i + 1, Ordering::Release);
        if i % 64 == 0 {
            thread::sleep(Duration::from_micros(200));
        }
    }
    checkers.into_iter().for_each(|t| t.join().unwrap());
    // `delayed()` drops when the reaper claims a timeout, just before its expire runs: let the last
    // expirations finish before counting (bounded wait).
    let settle = std::time::Instant::now() + Duration::from_secs(10);
    while (purgatory.watched() > 0 || ops.iter().any(|op| op.completions() == 0))
        && std::time::Instant::now() < settle
    {
        thread::sleep(ms(1));
    }

    let (mut by_check, mut by_expiry) = (0, 0);
    for op in ops.iter() {
        assert_eq!((op.completions(), op.violations()), (1, 0));
        match op.expirations() {
            0 => by_check += 1,
            1 => by_expiry += 1,
            n => panic!("expired {n} times"),
        }
    }
    assert!(by_check > 0 && by_expiry > 0, "both sides won some races: {by_check} / {by_expiry}");
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (0, 0, 0));
}

/// One thread drives a manual clock while others register and check: the same promises, with the
/// expiries run by a caller of `advance_clock` instead of a reaper.
#[test]
fn checks_racing_a_manually_advanced_clock_complete_each_operation_exactly_once() {
    let (clock, purgatory) = manual_purgatory::<u64, MockOp>();
    let purgatory = Arc::new(purgatory);
    let stop = Arc::new(AtomicBool::new(false));
    let advancer = spawn_advancer(clock, Arc::clone(&purgatory), Arc::clone(&stop));
    let workers: Vec<_> = (0..2u64)
        .map(|t| {
            let purgatory = Arc::clone(&purgatory);
            thread::spawn(move || {
                let mut rng = SplitMix(t + 10);
                let mut mine = Vec::new();
                for i in 0..20_000u64 {
                    let op = Arc::new(MockOp::new());
                    let key = t * 1_000 + i % 50;
                    purgatory.try_complete_else_watch(Arc::clone(&op), ms(1 + i % 3), [key, 9_999]);
                    mine.push(op);
                    let j = mine.len() - 1 - (rng.next() as usize % mine.len().min(100));
                    mine[j].set_completable();
                    purgatory.check_and_complete(&(t * 1_000 + j as u64 % 50));
                }
                mine
            })
        })
        .collect();
    let ops: Vec<_> = workers.into_iter().flat_map(|w| w.join().unwrap()).collect();
    stop.store(true, Ordering::Release);
    advancer.join().unwrap();
    for op in &ops {
        assert_eq!((op.completions(), op.violations()), (1, 0));
        assert!(op.expirations() <= 1);
    }
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (0, 0, 0));
}

/// A registration racing the check that carries its trigger: whichever order they interleave in,
/// the operation completes (the second try, or the check, sees the condition).
#[test]
fn a_watch_racing_its_trigger_never_misses_it() {
    const ROUNDS: u64 = 20_000;
    let purgatory: Arc<Purgatory<u64, MockOp>> = Arc::new(Purgatory::new());
    let ops: Arc<Vec<Arc<MockOp>>> = Arc::new((0..ROUNDS).map(|_| Arc::new(MockOp::new())).collect());
    let barrier = Arc::new(Barrier::new(2));
    let triggerer = {
        let (purgatory, ops, barrier) = (Arc::clone(&purgatory), Arc::clone(&ops), Arc::clone(&barrier));
        thread::spawn(move || {
            for (i, op) in ops.iter().enumerate() {
                barrier.wait();
                op.set_completable();
                purgatory.check_and_complete(&(i as u64));
            }
        })
    };
    let start = Instant::now();
    for (i, op) in ops.iter().enumerate() {
        barrier.wait();
        purgatory.try_complete_else_watch(Arc::clone(op), Duration::from_secs(100), [i as u64]);
    }
    triggerer.join().unwrap();
    for op in ops.iter() {
        assert_eq!((op.completions(), op.expirations(), op.violations()), (1, 0, 0), "trigger lost");
    }
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (0, 0, 0));
    assert!(start.elapsed() < Duration::from_secs(60));
}

/// A thread cancelling keys races a thread checking others and a manually advanced clock, with
/// every operation watched under one key of each: each operation finishes exactly once, as one of
/// completed, expired or returned by one `cancel_for_key` (then with no callback), and the stats
/// add up to the registrations with nothing left watched.
#[test]
fn cancels_racing_checks_and_expiry_finish_each_operation_exactly_once() {
    const OPS: usize = 6_000;
    let (clock, purgatory) = manual_purgatory::<u64, MockOp>();
    let purgatory = Arc::new(purgatory);
    let ops: Arc<Vec<Arc<MockOp>>> = Arc::new((0..OPS).map(|_| Arc::new(MockOp::new())).collect());
    let (registered, stop) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
    let advancer = spawn_advancer(clock, Arc::clone(&purgatory), Arc::clone(&stop));
    let racers: Vec<_> = (0..2u64)
        .map(|t| {
            let (purgatory, ops) = (Arc::clone(&purgatory), Arc::clone(&ops));
            let (registered, stop) = (Arc::clone(&registered), Arc::clone(&stop));
            thread::spawn(move || {
                let (mut rng, mut cancelled) = (SplitMix(t + 20), Vec::new());
                while !stop.load(Ordering::Acquire) {
                    let upto = registered.load(Ordering::Acquire);
                    if upto == 0 {
                        thread::yield_now();
                        continue;
                    }
                    let i = upto - 1 - (rng.next() as usize % upto.min(200));
                    if t == 0 {
                        ops[i].set_completable();
                        purgatory.check_and_complete(&(i as u64 % 16));
                    } else {
                        cancelled.extend(purgatory.cancel_for_key(&(100 + i as u64 % 7)));
                    }
                }
                cancelled
            })
        })
        .collect();
    for (i, op) in ops.iter().enumerate() {
        purgatory.try_complete_else_watch(
            Arc::clone(op),
            ms(1 + i as u64 % 4),
            [i as u64 % 16, 100 + i as u64 % 7],
        );
        registered.store(i + 1, Ordering::Release);
    }
    let settle = Instant::now() + Duration::from_secs(20);
    while purgatory.delayed() + purgatory.watched() > 0 && Instant::now() < settle {
        thread::sleep(ms(1));
    }
    stop.store(true, Ordering::Release);
    let cancelled: Vec<Arc<MockOp>> = racers.into_iter().flat_map(|t| t.join().unwrap()).collect();
    advancer.join().unwrap();
    for op in ops.iter() {
        let times_cancelled = cancelled.iter().filter(|c| Arc::ptr_eq(c, op)).count();
        let finished = (op.completions(), op.expirations(), times_cancelled);
        assert!(matches!(finished, (1, 0 | 1, 0) | (0, 0, 1)), "finished as {finished:?}");
        assert_eq!(op.violations(), 0);
    }
    let stats = purgatory.stats();
    assert_eq!((stats.delayed, stats.watched, stats.keys), (0, 0, 0));
    assert_eq!(stats.completed + stats.expired + cancelled.len() as u64, OPS as u64, "{stats:?}");
}

/// A thread that advances `purgatory`'s manual clock by 1 ms at a time until `stop`, then by
/// 100 ms, past every operation's timeout.
fn spawn_advancer(
    clock: delaywheel::ManualClock,
    purgatory: Arc<Purgatory<u64, MockOp>>,
    stop: Arc<AtomicBool>,
) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        while !stop.load(Ordering::Acquire) {
            advance(&clock, &purgatory, ms(1));
            thread::yield_now();
        }
        advance(&clock, &purgatory, ms(100));
    })
}
