//! The arena slots' lock on its own (`src/slot_lock/`): its state is two bits of the word that
//! also holds the owner's bits (an entry's generation and status), its waiters park. Under loom the
//! body is a `loom::cell::UnsafeCell`, so an access not ordered by the lock fails the model, and the
//! parking is a model of parking_lot_core's contract, so a waiter never woken is a deadlock.
//!
//! Each locker checks that the body and the owner's bits agree (both moved by every critical
//! section before it), then moves both on: a lost or unpublished critical section fails.

use delaywheel::loom_internals::{SlotLock, LOCK_BITS};
use loom::sync::Arc;

/// One step of the owner's bits, above the lock's.
const STEP: u64 = 1 << 8;
/// Owner's bits below the lock's, which every write-back must keep.
const LOW: u64 = 0b101;

fn bump(lock: &SlotLock<u64>) {
    let mut guard = lock.lock();
    assert_eq!(guard.bits(), *guard * STEP + LOW, "the bits and the body disagree");
    *guard += 1;
    let bits = guard.bits();
    guard.set_bits(bits + STEP);
}

fn lockers(threads: u64) {
    loom::model(move || {
        let lock = Arc::new(SlotLock::new(LOW, 0u64));
        let others: Vec<_> = (1..threads)
            .map(|_| {
                let lock = Arc::clone(&lock);
                loom::thread::spawn(move || bump(&lock))
            })
            .collect();
        bump(&lock);
        others.into_iter().for_each(|t| t.join().unwrap());
        let guard = lock.lock();
        assert_eq!((*guard, guard.bits()), (threads, threads * STEP + LOW), "a critical section was lost");
        assert_eq!(guard.bits() & LOCK_BITS, 0);
    });
}

/// Two lockers: mutual exclusion, and the body and the bits written under the lock are what the
/// next locker sees; a locker that finds the lock held parks and is woken.
#[test]
fn two_lockers_exclude_and_publish() {
    lockers(2);
}

/// Three lockers: two may be parked at once, so an unlock that wakes one must leave `PARKED` set
/// for the other (else the next unlock takes the fast path and the other sleeps forever).
#[test]
fn three_lockers_wake_every_parked_waiter() {
    lockers(3);
}
