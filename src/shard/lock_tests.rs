//! `ShardLock`: mutual exclusion under many threads (exact counts, and no critical section seen
//! half done), `try_lock`, a waiter that reaches its sleeps and still takes the lock, and a panic
//! under the lock.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use super::lock::{ShardLock, SLEEPS};

/// 8 threads, each 20,000 critical sections that move two plain words together; every fourth
/// tried with `try_lock` first. Each section finds the words equal, and the totals are exact.
#[test]
fn many_threads_hammering_count_exactly() {
    const THREADS: u64 = 8;
    const EACH: u64 = 20_000;
    let lock = Arc::new(ShardLock::new((0u64, 0u64)));
    let start = Arc::new(Barrier::new(THREADS as usize));
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let (lock, start) = (Arc::clone(&lock), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                let mut tried = 0u64;
                for i in 0..EACH {
                    let mut guard = match i % 4 {
                        0 => match lock.try_lock() {
                            Some(guard) => {
                                tried += 1;
                                guard
                            }
                            None => lock.lock(),
                        },
                        _ => lock.lock(),
                    };
                    assert_eq!(guard.0, guard.1, "a critical section seen half done");
                    guard.0 += 1;
                    std::hint::black_box(&mut *guard);
                    guard.1 += 1;
                }
                tried
            })
        })
        .collect();
    let tried: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(*lock.lock(), (THREADS * EACH, THREADS * EACH));
    assert!(tried <= THREADS * EACH / 4);
}

#[test]
fn try_lock_fails_while_held_and_succeeds_after() {
    let lock = ShardLock::new(5u32);
    let guard = lock.lock();
    std::thread::scope(|s| {
        assert!(s.spawn(|| lock.try_lock().is_none()).join().unwrap(), "try_lock took a held lock");
    });
    drop(guard);
    let mut guard = lock.try_lock().expect("a free lock");
    *guard += 1;
    drop(guard);
    assert_eq!(*lock.lock(), 6);
    assert!(format!("{lock:?}").contains("held: false"));
}

/// A holder keeps the lock until a waiter has slept (at least 20 ms; on a loaded host a waiter's
/// yields alone may take longer): the waiter sleeps, looks again, and takes the lock once it is
/// free, seeing the holder's write.
#[test]
fn a_waiter_past_its_spins_sleeps_and_takes_the_lock() {
    let lock = ShardLock::new(0u32);
    let sleeps_before = SLEEPS.load(Ordering::Relaxed);
    let holding = Barrier::new(2);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut guard = lock.lock();
            holding.wait();
            std::thread::sleep(Duration::from_millis(20));
            while SLEEPS.load(Ordering::Relaxed) == sleeps_before {
                std::thread::sleep(Duration::from_millis(1));
            }
            *guard = 1;
        });
        holding.wait();
        let mut guard = lock.lock();
        assert_eq!(*guard, 1, "the waiter took the lock before the holder's unlock");
        *guard = 2;
    });
    assert_eq!(*lock.lock(), 2);
    assert!(SLEEPS.load(Ordering::Relaxed) > sleeps_before, "the waiter never slept");
}

/// A panic inside a critical section unwinds through the guard, which unlocks: the lock has no
/// poisoning, and the next holder sees what was written before the panic.
#[test]
fn a_panic_under_the_lock_unlocks_it() {
    let lock = ShardLock::new(Vec::<u32>::new());
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        let mut guard = lock.lock();
        guard.push(1);
        panic!("a panic under the shard lock (expected by this test)");
    }));
    assert!(result.is_err());
    let guard = lock.try_lock().expect("unlocked by the unwinding guard");
    assert_eq!(*guard, [1]);
    assert!(format!("{guard:?}").contains('1'));
}
