//! The purgatory against a plain model on a manual timer (10 ms tick, 60 slots): random
//! registrations under several keys (some repeated, some none) with timeouts of whole ticks
//! (zero included), conditions turned on, checks, `cancel_for_key` and clock steps of whole
//! ticks. After every step `delayed`, `watched` (live watches, a
//! repeated key counted each time), `watched_keys`, every check's and cancel's result, and each
//! operation's callbacks match the model: `on_complete` exactly once for a completed or expired
//! operation, `on_expiration` only on expiry and after it, neither for a cancelled one, no
//! expiry before the timeout's tick, and no `try_complete` once an operation finished.

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{ceil_to_tick, manual_timer, SplitMix};
use delaywheel::purgatory::{DelayedOperation, Purgatory};
use delaywheel::ManualClock;

const TICK: Duration = Duration::from_millis(10);

/// 0 pending, 1 completed (by a check or at registration), 2 expired, 3 cancelled.
#[derive(Default)]
struct Op {
    ready: AtomicBool,
    state: AtomicU8,
    completions: AtomicUsize,
    expirations: AtomicUsize,
    violations: AtomicUsize,
    expired_at: std::sync::Mutex<Option<Duration>>,
    clock: std::sync::OnceLock<ManualClock>,
}

impl DelayedOperation for Op {
    fn try_complete(&self) -> bool {
        if self.completions.load(Ordering::SeqCst) > 0 || self.state.load(Ordering::SeqCst) == 3 {
            self.violations.fetch_add(1, Ordering::SeqCst);
        }
        self.ready.load(Ordering::SeqCst)
    }
    fn on_complete(&self) {
        self.completions.fetch_add(1, Ordering::SeqCst);
    }
    fn on_expiration(&self) {
        if self.completions.load(Ordering::SeqCst) != 1 {
            self.violations.fetch_add(1, Ordering::SeqCst);
        }
        self.expirations.fetch_add(1, Ordering::SeqCst);
        *self.expired_at.lock().unwrap() = Some(self.clock.get().unwrap().now());
    }
}

struct Model {
    op: Arc<Op>,
    keys: Vec<u8>,
    due: Duration,
    state: u8,
}

fn check(purgatory: &Purgatory<u8, Op>, model: &[Model], step: usize) {
    let live: Vec<&Model> = model.iter().filter(|m| m.state == 0).collect();
    let watched: usize = live.iter().map(|m| m.keys.len()).sum();
    let keys: HashSet<u8> = live.iter().flat_map(|m| m.keys.iter().copied()).collect();
    assert_eq!(purgatory.delayed(), live.len(), "step {step}: delayed");
    assert_eq!(purgatory.watched(), watched, "step {step}: watched");
    assert_eq!(purgatory.watched_keys(), keys.len(), "step {step}: watched_keys");
    for (i, m) in model.iter().enumerate() {
        let op = &m.op;
        let (c, e) = (op.completions.load(Ordering::SeqCst), op.expirations.load(Ordering::SeqCst));
        let want = match m.state {
            0 | 3 => (0, 0),
            1 => (1, 0),
            _ => (1, 1),
        };
        assert_eq!((c, e), want, "step {step}: op {i} in state {}", m.state);
        assert_eq!(op.violations.load(Ordering::SeqCst), 0, "step {step}: op {i}");
        if m.state == 2 {
            let at = op.expired_at.lock().unwrap().unwrap();
            assert!(at >= m.due, "step {step}: op {i} expired at {at:?}, due {:?}", m.due);
        }
    }
}

fn run(seed: u64) {
    let (clock, timer) = manual_timer(TICK, 60);
    let purgatory: Purgatory<u8, Op> = Purgatory::with_timer(timer);
    let mut rng = SplitMix(seed);
    let mut model: Vec<Model> = Vec::new();
    for step in 0..400 {
        match rng.range(0, 10) {
            0..=3 => {
                let op = Arc::new(Op::default());
                op.clock.set(clock.clone()).unwrap();
                let ready_now = rng.range(0, 8) == 0;
                op.ready.store(ready_now, Ordering::SeqCst);
                let keys: Vec<u8> = (0..rng.range(0, 4)).map(|_| rng.range(0, 6) as u8).collect();
                let timeout = TICK * (rng.range(0, 3) * rng.range(1, 500)) as u32;
                let done = purgatory.try_complete_else_watch(Arc::clone(&op), timeout, keys.clone());
                assert_eq!(done, ready_now, "step {step}");
                let due = ceil_to_tick(clock.now() + timeout, TICK);
                model.push(Model { op, keys, due, state: if done { 1 } else { 0 } });
            }
            4 | 5 => {
                let pending: Vec<usize> = (0..model.len()).filter(|&i| model[i].state == 0).collect();
                if let Some(&i) = pending.get(rng.range(0, pending.len() as u64 + 1) as usize) {
                    model[i].op.ready.store(true, Ordering::SeqCst);
                }
            }
            6 | 7 => {
                let key = rng.range(0, 6) as u8;
                let mut want = 0;
                for m in model.iter_mut() {
                    if m.state == 0 && m.keys.contains(&key) && m.op.ready.load(Ordering::SeqCst) {
                        m.state = 1;
                        want += 1;
                    }
                }
                assert_eq!(purgatory.check_and_complete(&key), want, "step {step}: check {key}");
            }
            8 => {
                let key = rng.range(0, 6) as u8;
                let got = purgatory.cancel_for_key(&key);
                let mut want = 0;
                for m in model.iter_mut() {
                    if m.state == 0 && m.keys.contains(&key) {
                        m.state = 3;
                        want += 1;
                        assert_eq!(got.iter().filter(|op| Arc::ptr_eq(op, &m.op)).count(), 1, "step {step}");
                    }
                }
                assert_eq!(got.len(), want, "step {step}: cancel {key}");
                for m in model.iter().filter(|m| m.state == 3) {
                    m.op.state.store(3, Ordering::SeqCst);
                }
            }
            _ => {
                let by = TICK * (rng.range(0, 3) * rng.range(1, 80)) as u32;
                clock.advance(by);
                purgatory.advance_clock(Duration::ZERO);
                let now = clock.now();
                for m in model.iter_mut() {
                    if m.state == 0 && m.due <= now {
                        m.state = 2;
                    }
                }
            }
        }
        check(&purgatory, &model, step);
    }
    let stats = purgatory.stats();
    let count = |s: u8| model.iter().filter(|m| m.state == s).count() as u64;
    assert_eq!(stats.expired, count(2));
    assert_eq!(stats.completed + stats.expired, count(1) + count(2), "{stats:?}");
}

#[test]
fn random_registrations_checks_cancels_and_expiries_match_the_model() {
    for seed in 1..=24 {
        run(seed);
    }
}

/// An operation completed by a check in the same tick as its timeout, before the advance that
/// would expire it: it completes once and never expires; one the check misses expires at the
/// advance with both callbacks, also when its key is checked again afterwards.
#[test]
fn a_check_in_the_expiry_tick_wins_over_the_advance() {
    let (clock, timer) = manual_timer(TICK, 60);
    let purgatory: Purgatory<&str, Op> = Purgatory::with_timer(timer);
    let a = Arc::new(Op::default());
    let b = Arc::new(Op::default());
    for op in [&a, &b] {
        op.clock.set(clock.clone()).unwrap();
        assert!(!purgatory.try_complete_else_watch(
            Arc::clone(op),
            Duration::from_millis(25),
            ["k", "k", "j"]
        ));
    }
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (2, 6, 2));
    clock.advance(Duration::from_millis(30));
    a.ready.store(true, Ordering::SeqCst);
    assert_eq!(purgatory.check_and_complete(&"k"), 1, "a key repeated counts its operation once");
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (1, 3, 2));
    purgatory.advance_clock(Duration::ZERO);
    assert_eq!((a.completions.load(Ordering::SeqCst), a.expirations.load(Ordering::SeqCst)), (1, 0));
    assert_eq!((b.completions.load(Ordering::SeqCst), b.expirations.load(Ordering::SeqCst)), (1, 1));
    b.ready.store(true, Ordering::SeqCst);
    assert_eq!(purgatory.check_and_complete(&"k"), 0);
    assert!(purgatory.cancel_for_key(&"j").is_empty());
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (0, 0, 0));
    assert_eq!(a.violations.load(Ordering::SeqCst) + b.violations.load(Ordering::SeqCst), 0);
}
