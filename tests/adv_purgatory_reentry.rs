//! Purgatory callbacks that call back into the purgatory while it is iterating the very list
//! they came from, on a manual timer: an `on_complete` that cancels its own key in the middle of
//! a check of that key (the rest of the list is cancelled, not completed, and the check counts
//! only what it completed), one that checks its own key again (nested: each operation completes
//! once), and `on_expiration`s that check, cancel, register and advance during the advance that
//! expires them. Every operation ends exactly one way and nothing stays watched.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use common::{manual_timer, ms};
use delaywheel::purgatory::{DelayedOperation, Purgatory};
use delaywheel::ManualClock;

type P = Purgatory<u32, Op>;

/// What an operation does when a callback runs.
#[derive(Clone, Copy, PartialEq)]
enum Then {
    Nothing,
    CancelKey(u32),
    CheckKey(u32),
    Register(u32),
    Advance,
}

struct Op {
    id: usize,
    ready: AtomicBool,
    then: Then,
    /// Whether `then` is done by `on_expiration` (else by `on_complete`).
    on_expiry: bool,
    purgatory: OnceLock<Weak<P>>,
    completions: AtomicUsize,
    expirations: AtomicUsize,
    log: Arc<Mutex<Vec<String>>>,
}

impl Op {
    fn new(id: usize, ready: bool, then: Then, log: &Arc<Mutex<Vec<String>>>, p: &Arc<P>) -> Arc<Op> {
        Self::build(id, ready, then, false, log, p)
    }
    fn on_expiry(id: usize, then: Then, log: &Arc<Mutex<Vec<String>>>, p: &Arc<P>) -> Arc<Op> {
        Self::build(id, false, then, true, log, p)
    }
    fn build(
        id: usize,
        ready: bool,
        then: Then,
        on_expiry: bool,
        log: &Arc<Mutex<Vec<String>>>,
        p: &Arc<P>,
    ) -> Arc<Op> {
        let op = Arc::new(Op {
            id,
            ready: AtomicBool::new(ready),
            then,
            on_expiry,
            purgatory: OnceLock::new(),
            completions: AtomicUsize::new(0),
            expirations: AtomicUsize::new(0),
            log: Arc::clone(log),
        });
        op.purgatory.set(Arc::downgrade(p)).ok().unwrap();
        op
    }
    fn act(&self, what: &str) {
        let p = self.purgatory.get().unwrap().upgrade().unwrap();
        let out = match self.then {
            Then::Nothing => String::new(),
            Then::CancelKey(k) => format!(" cancel {k}: {}", p.cancel_for_key(&k).len()),
            Then::CheckKey(k) => format!(" check {k}: {}", p.check_and_complete(&k)),
            Then::Register(k) => {
                let next = Op::new(100 + self.id, true, Then::Nothing, &self.log, &p);
                format!(" register {k}: {}", p.try_complete_else_watch(next, ms(10), [k]))
            }
            Then::Advance => format!(" advance: {}", p.advance_clock(Duration::ZERO)),
        };
        self.log.lock().unwrap().push(format!("{what} {}{out}", self.id));
    }
    fn counts(&self) -> (usize, usize) {
        (self.completions.load(Ordering::SeqCst), self.expirations.load(Ordering::SeqCst))
    }
}

impl DelayedOperation for Op {
    fn try_complete(&self) -> bool {
        self.ready.load(Ordering::SeqCst)
    }
    fn on_complete(&self) {
        self.completions.fetch_add(1, Ordering::SeqCst);
        if self.on_expiry {
            self.log.lock().unwrap().push(format!("complete {}", self.id));
        } else {
            self.act("complete");
        }
    }
    fn on_expiration(&self) {
        self.expirations.fetch_add(1, Ordering::SeqCst);
        if self.on_expiry {
            self.act("expire");
        } else {
            self.log.lock().unwrap().push(format!("expire {}", self.id));
        }
    }
}

fn setup() -> (ManualClock, Arc<P>, Arc<Mutex<Vec<String>>>) {
    let (clock, timer) = manual_timer(ms(10), 60);
    (clock, Arc::new(Purgatory::with_timer(timer)), Arc::default())
}

/// Five ready operations under key 1, the second of which cancels key 1 when it completes: the
/// check completes the ones it reached first and no more, the rest are cancelled (returned to
/// the cancel, never completed, never expiring), and the check's count says what it completed.
#[test]
fn an_on_complete_cancelling_its_own_key_mid_check() {
    let (clock, p, log) = setup();
    let ops: Vec<Arc<Op>> = (0..5)
        .map(|i| Op::new(i, false, if i == 1 { Then::CancelKey(1) } else { Then::Nothing }, &log, &p))
        .collect();
    for op in &ops {
        assert!(!p.try_complete_else_watch(Arc::clone(op), ms(50), [1, 2]));
    }
    assert_eq!((p.delayed(), p.watched(), p.watched_keys()), (5, 10, 2));
    ops.iter().for_each(|op| op.ready.store(true, Ordering::SeqCst));
    let completed = p.check_and_complete(&1);
    let done: Vec<usize> = ops.iter().filter(|op| op.counts() == (1, 0)).map(|op| op.id).collect();
    let untouched: Vec<usize> = ops.iter().filter(|op| op.counts() == (0, 0)).map(|op| op.id).collect();
    assert_eq!(done.len() + untouched.len(), 5, "{:?}", log.lock().unwrap());
    assert_eq!(completed, done.len(), "the check counts what it completed");
    assert!(done.contains(&1));
    let cancel_line = log.lock().unwrap().iter().find(|l| l.starts_with("complete 1")).cloned().unwrap();
    assert_eq!(cancel_line, format!("complete 1 cancel 1: {}", untouched.len()));
    assert_eq!((p.delayed(), p.watched(), p.watched_keys()), (0, 0, 0));
    clock.advance(ms(100));
    p.advance_clock(Duration::ZERO);
    assert!(ops.iter().all(|op| op.counts().1 == 0), "a cancelled or completed operation never expires");
    assert_eq!(p.check_and_complete(&2), 0);
}

/// An `on_complete` that checks its own key again: the nested check completes the rest, the
/// outer check finds them done; every operation completes once and the counts add up.
#[test]
fn an_on_complete_checking_its_own_key_again() {
    let (_clock, p, log) = setup();
    let ops: Vec<Arc<Op>> = (0..4)
        .map(|i| Op::new(i, true, if i == 0 { Then::CheckKey(7) } else { Then::Nothing }, &log, &p))
        .collect();
    for op in &ops {
        op.ready.store(false, Ordering::SeqCst);
        assert!(!p.try_complete_else_watch(Arc::clone(op), ms(50), [7, 7]));
        op.ready.store(true, Ordering::SeqCst);
    }
    assert_eq!(p.watched(), 8);
    let outer = p.check_and_complete(&7);
    let line = log.lock().unwrap().iter().find(|l| l.starts_with("complete 0")).cloned().unwrap();
    let inner: usize = line.rsplit(": ").next().unwrap().parse().unwrap();
    assert_eq!(outer + inner, 4, "{:?}", log.lock().unwrap());
    assert!(ops.iter().all(|op| op.counts() == (1, 0)));
    assert_eq!((p.delayed(), p.watched(), p.watched_keys()), (0, 0, 0));
}

/// `on_expiration`s running inside an advance: one checks a key (completing a ready
/// operation not yet due), one cancels a key (an operation due in the same tick, later in the
/// batch, is then cancelled or already expired: never both), one registers a follow-up that
/// completes at once, and one calls `advance_clock` (nested: it returns false).
#[test]
fn on_expirations_calling_back_during_the_advance_that_expires_them() {
    let (clock, p, log) = setup();
    let a = Op::on_expiry(0, Then::CheckKey(5), &log, &p);
    let b = Op::on_expiry(1, Then::CancelKey(6), &log, &p);
    let c = Op::on_expiry(2, Then::Register(9), &log, &p);
    let d = Op::on_expiry(3, Then::Advance, &log, &p);
    let ready_later = Op::new(4, false, Then::Nothing, &log, &p);
    let same_tick = Op::new(5, false, Then::Nothing, &log, &p);
    for (op, key) in [(&a, 1), (&b, 2), (&c, 3), (&d, 4)] {
        assert!(!p.try_complete_else_watch(Arc::clone(op), ms(30), [key]));
    }
    assert!(!p.try_complete_else_watch(Arc::clone(&ready_later), Duration::from_secs(60), [5]));
    assert!(!p.try_complete_else_watch(Arc::clone(&same_tick), ms(30), [6]));
    ready_later.ready.store(true, Ordering::SeqCst);
    clock.advance(ms(30));
    p.advance_clock(Duration::ZERO);
    let got = log.lock().unwrap().clone();
    assert!(got.contains(&"expire 0 check 5: 1".to_string()), "{got:?}");
    assert!(got.contains(&"expire 3 advance: false".to_string()), "{got:?}");
    assert!(got.contains(&"expire 2 register 9: true".to_string()), "{got:?}");
    assert_eq!(ready_later.counts(), (1, 0));
    for op in [&a, &b, &c, &d] {
        assert_eq!(op.counts(), (1, 1));
    }
    // The operation under key 6: cancelled by b's expiry (then never expired) or expired before it.
    let cancelled = got.contains(&"expire 1 cancel 6: 1".to_string());
    let expired = got.contains(&"expire 5".to_string());
    assert!(cancelled != expired, "exactly one: {got:?}");
    assert_eq!(same_tick.counts(), if cancelled { (0, 0) } else { (1, 1) });
    assert_eq!((p.delayed(), p.watched(), p.watched_keys()), (0, 0, 0));
    let stats = p.stats();
    assert_eq!(stats.expired, if cancelled { 4 } else { 5 });
}
