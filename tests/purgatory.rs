//! The purgatory's contract, after Kafka's `DelayedOperationTest` (in our own words, and with our
//! stronger promises: finished operations leave every list at once, cancels are final).

mod common;
mod purgatory_support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex, Weak};
use std::thread;
use std::time::{Duration, Instant};

use common::ms;
use delaywheel::purgatory::{DelayedOperation, Purgatory};
use delaywheel::Timer;
use purgatory_support::{advance, manual_purgatory, MockOp};

const LONG: Duration = Duration::from_secs(100);

#[test]
fn operations_complete_when_a_check_of_their_key_finds_them_satisfied() {
    let (_clock, purgatory) = manual_purgatory::<&str, MockOp>();
    let (r1, r2) = (Arc::new(MockOp::new()), Arc::new(MockOp::new()));
    assert_eq!(purgatory.check_and_complete(&"test1"), 0, "nothing waits, nothing completes");
    assert!(!purgatory.try_complete_else_watch(r1.clone(), LONG, ["test1"]));
    assert_eq!(purgatory.check_and_complete(&"test1"), 0, "r1 is not satisfied yet");
    assert!(!purgatory.try_complete_else_watch(r2.clone(), LONG, ["test2"]));
    assert_eq!(purgatory.check_and_complete(&"test2"), 0, "r2 is not satisfied yet");

    r1.set_completable();
    assert_eq!(purgatory.check_and_complete(&"test2"), 0, "a check of another key leaves r1 waiting");
    assert_eq!(purgatory.check_and_complete(&"test1"), 1, "r1 satisfied");
    assert_eq!(purgatory.check_and_complete(&"test1"), 0, "r1 completes only once");
    r2.set_completable();
    assert_eq!(purgatory.check_and_complete(&"test2"), 1, "r2 satisfied");
    assert_eq!(purgatory.check_and_complete(&"test2"), 0);

    for r in [&r1, &r2] {
        assert_eq!((r.completions(), r.expirations(), r.violations()), (1, 0, 0));
    }
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (0, 0, 0));
}

#[test]
fn operations_expire_on_the_manual_clock_never_early() {
    let (clock, purgatory) = manual_purgatory::<&str, MockOp>();
    let (r1, r2) = (Arc::new(MockOp::new()), Arc::new(MockOp::new()));
    assert!(!purgatory.try_complete_else_watch(r1.clone(), ms(20), ["test1"]));
    assert!(!purgatory.try_complete_else_watch(r2.clone(), ms(200_000), ["test2"]));

    advance(&clock, &purgatory, ms(19));
    assert!(!r1.is_completed(), "not before its timeout");
    advance(&clock, &purgatory, ms(1));
    assert_eq!((r1.completions(), r1.expirations()), (1, 1), "r1 expired: on_complete, then on_expiration");
    assert!(!r2.is_completed(), "r2 still waits");
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (1, 1, 1));

    r1.set_completable();
    assert_eq!(purgatory.check_and_complete(&"test1"), 0, "an expired operation is gone");
    assert_eq!(r1.violations() + r2.violations(), 0);
}

#[test]
fn watched_counts_live_watches_only() {
    let (_clock, purgatory) = manual_purgatory::<&str, MockOp>();
    let ops: Vec<_> = (0..3).map(|_| Arc::new(MockOp::new())).collect();
    purgatory.try_complete_else_watch(ops[0].clone(), LONG, ["test1"]);
    purgatory.try_complete_else_watch(ops[1].clone(), LONG, ["test1", "test2"]);
    purgatory.try_complete_else_watch(ops[2].clone(), LONG, ["test1", "test2", "test3"]);
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (3, 6, 3));

    // Kafka leaves completed operations in their lists until a purge; here they leave all at once,
    // including the lists of keys that were never checked.
    ops[1].set_completable();
    assert_eq!(purgatory.check_and_complete(&"test2"), 1);
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (2, 4, 3));

    ops[2].set_completable();
    assert_eq!(purgatory.check_and_complete(&"test3"), 1);
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (1, 1, 1));

    ops[0].set_completable();
    assert_eq!(purgatory.check_and_complete(&"test1"), 1);
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (0, 0, 0));
}

#[test]
fn cancel_for_key_returns_its_operations_which_then_never_complete() {
    let (clock, purgatory) = manual_purgatory::<&str, MockOp>();
    let ops: Vec<_> = (0..3).map(|_| Arc::new(MockOp::new())).collect();
    purgatory.try_complete_else_watch(ops[0].clone(), ms(10), ["key"]);
    purgatory.try_complete_else_watch(ops[1].clone(), ms(10), ["key", "other"]);
    purgatory.try_complete_else_watch(ops[2].clone(), ms(10), ["key2"]);

    let cancelled = purgatory.cancel_for_key(&"key");
    assert_eq!(cancelled.len(), 2);
    assert!(cancelled.iter().any(|op| Arc::ptr_eq(op, &ops[0])));
    assert!(cancelled.iter().any(|op| Arc::ptr_eq(op, &ops[1])));
    assert_eq!(purgatory.delayed(), 1);
    assert_eq!(purgatory.watched(), 1, "the cancelled operation left \"other\" too");
    assert_eq!(purgatory.watched_keys(), 1);

    ops[1].set_completable();
    assert_eq!(purgatory.check_and_complete(&"other"), 0);
    advance(&clock, &purgatory, ms(20));
    for op in &ops[..2] {
        assert_eq!((op.completions(), op.expirations()), (0, 0), "cancelled: neither callback");
        assert_eq!(Arc::strong_count(op), 2, "held by this test and the returned list only");
    }
    assert_eq!(ops[2].expirations(), 1);
    assert!(purgatory.cancel_for_key(&"key").is_empty(), "the key is gone");
    assert!(purgatory.cancel_for_key(&"never-seen").is_empty());
}

#[test]
fn cancel_for_key_returns_an_operation_watched_twice_under_it_once() {
    let (_clock, purgatory) = manual_purgatory::<u32, MockOp>();
    let op = Arc::new(MockOp::new());
    purgatory.try_complete_else_watch(op.clone(), LONG, [1, 1, 2]);
    assert_eq!(purgatory.watched(), 3, "a repeated key is watched twice, as in Kafka");
    let cancelled = purgatory.cancel_for_key(&1);
    assert_eq!(cancelled.len(), 1);
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (0, 0, 0));
}

#[test]
fn an_operation_satisfied_at_once_is_completed_and_never_kept() {
    let (_clock, purgatory) = manual_purgatory::<&str, MockOp>();
    let op = Arc::new(MockOp::completable());
    assert!(purgatory.try_complete_else_watch(op.clone(), LONG, ["k"]));
    assert_eq!((op.completions(), op.tries()), (1, 1));
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (0, 0, 0));
    assert_eq!(Arc::strong_count(&op), 1, "the purgatory kept no reference");
}

/// The trigger arrives after the first try but before the watch: its check finds nothing to try.
/// The second try, after the watch, must catch it.
#[test]
fn a_trigger_between_the_first_try_and_the_watch_is_not_lost() {
    let (_clock, purgatory) = manual_purgatory::<&str, MockOp>();
    let op = Arc::new(MockOp::new());
    op.completable_after_tries.store(1, Ordering::SeqCst); // becomes true right after the first try
    assert!(purgatory.try_complete_else_watch(op.clone(), LONG, ["a", "b"]));
    assert_eq!((op.tries(), op.completions(), op.violations()), (2, 1, 0));
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (0, 0, 0));
    assert_eq!(Arc::strong_count(&op), 1, "no list, no timer closure holds it");
}

#[test]
fn expiry_completes_first_then_expires_and_a_checked_operation_never_expires() {
    let (clock, purgatory) = manual_purgatory::<&str, MockOp>();
    let (checked, timed_out) = (Arc::new(MockOp::new()), Arc::new(MockOp::new()));
    purgatory.try_complete_else_watch(checked.clone(), ms(5), ["k"]);
    purgatory.try_complete_else_watch(timed_out.clone(), ms(5), ["k"]);
    checked.set_completable();
    assert_eq!(purgatory.check_and_complete(&"k"), 1);
    advance(&clock, &purgatory, ms(10));
    assert_eq!((checked.completions(), checked.expirations()), (1, 0));
    assert_eq!((timed_out.completions(), timed_out.expirations()), (1, 1));
    assert_eq!(checked.violations() + timed_out.violations(), 0);
    for op in [&checked, &timed_out] {
        assert_eq!(Arc::strong_count(op), 1, "finished operations are released");
    }
}

#[test]
fn keyless_operations_complete_only_by_their_timeout() {
    let (clock, purgatory) = manual_purgatory::<u64, MockOp>();
    let op = Arc::new(MockOp::new());
    assert!(!purgatory.try_complete_else_watch(op.clone(), ms(3), []));
    assert_eq!((purgatory.delayed(), purgatory.watched()), (1, 0));
    advance(&clock, &purgatory, ms(3));
    assert_eq!((op.completions(), op.expirations()), (1, 1));
    assert_eq!(purgatory.delayed(), 0);
}

#[test]
fn a_timeout_beyond_the_timer_range_never_expires() {
    let (clock, purgatory) = manual_purgatory::<u64, MockOp>();
    let op = Arc::new(MockOp::new());
    assert!(!purgatory.try_complete_else_watch(op.clone(), Duration::MAX, [1]));
    advance(&clock, &purgatory, Duration::from_secs(1_000_000));
    assert_eq!(op.completions(), 0);
    op.set_completable();
    assert_eq!(purgatory.check_and_complete(&1), 1);
}

#[test]
fn heterogeneous_operations_behind_dyn() {
    struct Always;
    impl DelayedOperation for Always {
        fn try_complete(&self) -> bool {
            true
        }
        fn on_complete(&self) {}
        fn on_expiration(&self) {}
    }
    let (clock, purgatory) = manual_purgatory::<u8, dyn DelayedOperation>();
    let mock = Arc::new(MockOp::new());
    assert!(!purgatory.try_complete_else_watch(mock.clone(), ms(1), vec![1, 2]));
    assert!(purgatory.try_complete_else_watch(Arc::new(Always), ms(1), (0..3).map(|k| k as u8)));
    advance(&clock, &purgatory, ms(1));
    assert_eq!(mock.expirations(), 1);
}

/// Kafka's `testTryCompleteWithMultipleThreads`: many threads check the same operations; the check
/// that makes an operation completable must not be lost because another thread was trying it.
#[test]
fn many_threads_checking_complete_every_operation_exactly_once() {
    const OPS: usize = 10;
    const ATTEMPTS: usize = 20;

    /// Tries take a while, so checks of one operation overlap and must wait for each other.
    struct SlowOp {
        inner: MockOp,
        attempts_left: AtomicUsize,
    }
    impl DelayedOperation for SlowOp {
        fn try_complete(&self) -> bool {
            let result = self.inner.try_complete();
            thread::sleep(Duration::from_micros(200));
            result
        }
        fn on_complete(&self) {
            self.inner.on_complete()
        }
        fn on_expiration(&self) {
            self.inner.on_expiration()
        }
    }

    let purgatory: Arc<Purgatory<usize, SlowOp>> = Arc::new(Purgatory::new());
    let ops: Vec<_> = (0..OPS)
        .map(|key| {
            let op = Arc::new(SlowOp { inner: MockOp::new(), attempts_left: AtomicUsize::new(ATTEMPTS) });
            assert!(!purgatory.try_complete_else_watch(op.clone(), LONG, [key]));
            op
        })
        .collect();
    let start = Arc::new(Barrier::new(8));
    let work: Arc<Mutex<Vec<usize>>> =
        Arc::new(Mutex::new((0..OPS * ATTEMPTS).map(|i| (i * 7) % OPS).collect()));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (purgatory, ops, start, work) =
                (Arc::clone(&purgatory), ops.clone(), Arc::clone(&start), Arc::clone(&work));
            thread::spawn(move || {
                start.wait();
                while let Some(key) = work.lock().unwrap().pop() {
                    let op = &ops[key];
                    if op.attempts_left.fetch_sub(1, Ordering::SeqCst) == 1 {
                        op.inner.set_completable();
                    }
                    purgatory.check_and_complete(&key);
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    for op in &ops {
        assert_eq!((op.inner.completions(), op.inner.expirations(), op.inner.violations()), (1, 0, 0));
    }
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (0, 0, 0));
}

/// `try_complete` holds no purgatory lock: it may read the purgatory and check other keys (here
/// keys in every shard); the callbacks hold no lock at all and may register new operations.
#[test]
fn callbacks_may_call_back_into_the_purgatory() {
    struct Chained {
        purgatory: Weak<Purgatory<u64, Chained>>,
        key: u64,
        ready: AtomicBool,
        completed: AtomicBool,
    }
    impl DelayedOperation for Chained {
        fn try_complete(&self) -> bool {
            // try_complete may read the purgatory's counts; it must not check, cancel or register
            // (that can wait for another operation's lock while holding its own: see the docs).
            let purgatory = self.purgatory.upgrade().unwrap();
            let _ = (purgatory.delayed(), purgatory.watched(), purgatory.watched_keys());
            self.ready.load(Ordering::SeqCst)
        }
        fn on_complete(&self) {
            self.completed.store(true, Ordering::SeqCst);
            let purgatory = self.purgatory.upgrade().unwrap();
            if self.key < 3 {
                let next = Arc::new(Chained {
                    purgatory: Weak::clone(&self.purgatory),
                    key: self.key + 1,
                    ready: AtomicBool::new(true),
                    completed: AtomicBool::new(false),
                });
                purgatory.try_complete_else_watch(next, LONG, [self.key + 1]);
                purgatory.check_and_complete(&(self.key + 1));
            }
        }
        fn on_expiration(&self) {}
    }

    let (clock, purgatory) = manual_purgatory::<u64, Chained>();
    let purgatory = Arc::new(purgatory);
    let weak = Arc::downgrade(&purgatory);
    let waiters: Vec<_> = (1_000..1_256)
        .map(|key| {
            let op = Arc::new(Chained {
                purgatory: Weak::clone(&weak),
                key,
                ready: AtomicBool::new(false),
                completed: AtomicBool::new(false),
            });
            purgatory.try_complete_else_watch(op.clone(), ms(5), [key]);
            op
        })
        .collect();
    let first = Arc::new(Chained {
        purgatory: Weak::clone(&weak),
        key: 0,
        ready: AtomicBool::new(false),
        completed: AtomicBool::new(false),
    });
    assert!(!purgatory.try_complete_else_watch(first.clone(), LONG, [0]));
    first.ready.store(true, Ordering::SeqCst);
    assert_eq!(purgatory.check_and_complete(&0), 1);
    assert!(first.completed.load(Ordering::SeqCst));
    advance(&clock, &purgatory, ms(5)); // expiries also run the callbacks, on the advancing thread
    assert!(waiters.iter().all(|op| op.completed.load(Ordering::SeqCst)));
    assert_eq!((purgatory.delayed(), purgatory.watched()), (0, 0));
}

#[test]
fn the_reaper_thread_expires_on_the_real_clock_never_early() {
    let purgatory: Purgatory<u8, MockOp> = Purgatory::new();
    let op = Arc::new(MockOp::new());
    let start = Instant::now();
    assert!(!purgatory.try_complete_else_watch(op.clone(), ms(20), [1]));
    while op.expirations() == 0 {
        assert!(start.elapsed() < Duration::from_secs(10), "the reaper never expired it");
        thread::sleep(Duration::from_millis(1));
    }
    assert!(start.elapsed() >= ms(20), "expired early: {:?}", start.elapsed());
    assert_eq!((op.completions(), op.violations()), (1, 0));
    assert_eq!((purgatory.delayed(), purgatory.watched()), (0, 0));
}

#[test]
fn expirations_on_executor_threads_keep_the_contract() {
    let timer = Timer::builder().tick(ms(1)).execution(delaywheel::TaskExecution::Threads(2)).build();
    let purgatory: Purgatory<u32, MockOp> = Purgatory::with_timer(timer);
    let ops: Vec<_> = (0..200).map(|_| Arc::new(MockOp::new())).collect();
    for (i, op) in ops.iter().enumerate() {
        purgatory.try_complete_else_watch(op.clone(), ms(1 + (i % 5) as u64), [i as u32 % 7]);
    }
    let start = Instant::now();
    while ops.iter().any(|op| op.expirations() == 0) {
        assert!(start.elapsed() < Duration::from_secs(10));
        thread::sleep(Duration::from_millis(1));
    }
    assert!(ops.iter().all(|op| (op.completions(), op.violations()) == (1, 0)));
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (0, 0, 0));
}

#[test]
fn dropping_the_purgatory_releases_pending_operations_without_callbacks() {
    let (_clock, purgatory) = manual_purgatory::<u64, MockOp>();
    let ops: Vec<_> = (0..100).map(|_| Arc::new(MockOp::new())).collect();
    for (i, op) in ops.iter().enumerate() {
        purgatory.try_complete_else_watch(op.clone(), ms(10), [i as u64, 1_000]);
    }
    drop(purgatory);
    for op in &ops {
        assert_eq!(Arc::strong_count(op), 1, "released");
        assert_eq!(op.completions(), 0);
    }
    // A driven purgatory drops promptly too.
    let purgatory: Purgatory<u64, MockOp> = Purgatory::default();
    purgatory.try_complete_else_watch(ops[0].clone(), LONG, [1]);
    drop(purgatory);
    assert_eq!(Arc::strong_count(&ops[0]), 1);
}

#[test]
fn purgatory_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Purgatory<String, MockOp>>();
    assert_send_sync::<Purgatory<u64, dyn DelayedOperation>>();
}

#[test]
fn purgatory_debug_shows_its_counts_and_its_timer() {
    let (clock, purgatory) = manual_purgatory::<u64, MockOp>();
    let (a, b) = (Arc::new(MockOp::new()), Arc::new(MockOp::new()));
    assert!(!purgatory.try_complete_else_watch(a, ms(5), [1, 2]));
    assert!(!purgatory.try_complete_else_watch(b, ms(50), [2]));
    advance(&clock, &purgatory, ms(5));
    let timer = "Timer { tick: 1ms, wheel_size: 8, manual_clock: true, pending: 1, .. }";
    let expected =
        format!("Purgatory {{ delayed: 1, watched: 1, watched_keys: 1, expired: 1, timer: {timer}, .. }}");
    assert_eq!(format!("{purgatory:?}"), expected);
}

/// Regression (review): a timer refusing the timeout for capacity (`max_pending`) left the
/// operation watched forever with no timeout. It now expires at once, exactly once.
#[test]
fn a_timeout_refused_for_capacity_expires_the_operation_at_once() {
    let clock = delaywheel::ManualClock::new();
    let timer = Timer::builder().tick(ms(1)).clock(clock.clone()).manual().max_pending(1).build();
    let purgatory: Purgatory<u64, MockOp> = Purgatory::with_timer(timer);
    let (a, b) = (Arc::new(MockOp::new()), Arc::new(MockOp::new()));
    assert!(!purgatory.try_complete_else_watch(Arc::clone(&a), ms(10), [1]));
    assert!(!purgatory.try_complete_else_watch(Arc::clone(&b), ms(10), [1]));
    assert_eq!((b.completions(), b.expirations()), (1, 1), "refused timeout: expired at once");
    assert_eq!(purgatory.watched(), 1, "only A is still watched");
    clock.advance(ms(10));
    purgatory.advance_clock(Duration::ZERO);
    assert_eq!((a.completions(), a.expirations()), (1, 1));
    assert_eq!((purgatory.delayed(), purgatory.watched()), (0, 0));
    assert_eq!(b.completions(), 1, "still exactly once");
    assert_eq!(purgatory.expired(), 2, "both counted in the expired total");
}

/// A burst of operations completed by their keys: `shrink` gives the timer's pages of timeouts
/// back, and the purgatory keeps working on fresh ones.
#[test]
fn shrink_after_a_burst_of_completed_operations_keeps_the_purgatory_working() {
    let (clock, purgatory) = manual_purgatory::<u64, MockOp>();
    let ops: Vec<_> = (0..20_000u64).map(|_| Arc::new(MockOp::new())).collect();
    for (key, op) in ops.iter().enumerate() {
        assert!(!purgatory.try_complete_else_watch(Arc::clone(op), ms(30_000), [key as u64]));
    }
    ops.iter().for_each(|op| op.set_completable());
    let completed: usize = (0..20_000u64).map(|key| purgatory.check_and_complete(&key)).sum();
    assert_eq!((completed, purgatory.delayed(), purgatory.watched()), (20_000, 0, 0));
    purgatory.shrink();
    let later = Arc::new(MockOp::new());
    assert!(!purgatory.try_complete_else_watch(Arc::clone(&later), ms(5), [7]));
    advance(&clock, &purgatory, ms(5));
    assert_eq!((later.expirations(), purgatory.delayed()), (1, 0));
}
