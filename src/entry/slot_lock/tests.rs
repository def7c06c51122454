//! The slot lock's unit tests (std build; the loom build has `loom_tests/slot_lock.rs`).

use super::*;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

const GENERATION: u64 = 1 << 8;

/// Waits (up to ten seconds) until `lock`'s word has `PARKED` set.
fn wait_parked<T>(lock: &SlotLock<T>) {
    let start = Instant::now();
    while lock.raw() & PARKED == 0 {
        assert!(start.elapsed() < Duration::from_secs(10), "no thread parked");
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_slot_lock_adds_one_word() {
    assert_eq!(std::mem::size_of::<SlotLock<[u64; 5]>>(), 48);
}

#[test]
fn the_guard_reads_and_writes_the_owners_bits() {
    let lock = SlotLock::new(GENERATION + 0b101, 7u32);
    {
        let mut guard = lock.lock();
        assert_eq!((guard.bits(), *guard), (GENERATION + 0b101, 7));
        assert_eq!(lock.raw(), (GENERATION + 0b101) | LOCKED, "the word keeps its bits until the unlock");
        guard.set_bits(2 * GENERATION + 0b10);
        *guard = 8;
    }
    assert_eq!(lock.raw(), 2 * GENERATION + 0b10, "written back, unlocked");
    let guard = lock.lock();
    assert_eq!((guard.bits(), *guard), (2 * GENERATION + 0b10, 8));
}

#[test]
fn a_prefetch_changes_nothing_held_or_not() {
    let lock = SlotLock::new(GENERATION, 7u32);
    lock.prefetch();
    assert_eq!(lock.raw(), GENERATION);
    let guard = lock.lock();
    lock.prefetch();
    assert_eq!((lock.raw(), *guard), (GENERATION | LOCKED, 7));
    drop(guard);
    assert_eq!(lock.raw(), GENERATION);
}

#[test]
fn threads_exclude_each_other_and_see_each_others_bits() {
    const THREADS: u64 = 8;
    // Miri runs this about a thousand times slower.
    const ROUNDS: u64 = if cfg!(miri) { 50 } else { 20_000 };
    let lock = Arc::new(SlotLock::new(0b11, 0u64));
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let lock = Arc::clone(&lock);
            thread::spawn(move || {
                for _ in 0..ROUNDS {
                    let mut guard = lock.lock();
                    // The body and the bits move together, under the one lock.
                    assert_eq!(guard.bits(), *guard * GENERATION + 0b11);
                    *guard += 1;
                    let bits = guard.bits();
                    guard.set_bits(bits + GENERATION);
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let guard = lock.lock();
    assert_eq!((*guard, guard.bits()), (THREADS * ROUNDS, THREADS * ROUNDS * GENERATION + 0b11));
}

#[test]
fn a_parked_waiter_is_woken_and_sees_the_bits_written_while_it_slept() {
    let lock = Arc::new(SlotLock::new(GENERATION, 0u64));
    let mut guard = lock.lock();
    let waiter = {
        let lock = Arc::clone(&lock);
        thread::spawn(move || {
            let guard = lock.lock();
            (guard.bits(), *guard)
        })
    };
    wait_parked(&lock);
    // The waiter's PARKED is in the word now; the write-back must keep the bits and wake it.
    guard.set_bits(5 * GENERATION + 1);
    *guard = 42;
    drop(guard);
    assert_eq!(waiter.join().unwrap(), (5 * GENERATION + 1, 42));
    assert_eq!(lock.raw(), 5 * GENERATION + 1, "unlocked, no thread left parked");
}

#[test]
fn every_parked_waiter_is_woken() {
    const WAITERS: usize = 6;
    let lock = Arc::new(SlotLock::new(0, 0usize));
    let guard = lock.lock();
    let start = Arc::new(Barrier::new(WAITERS + 1));
    let waiters: Vec<_> = (0..WAITERS)
        .map(|_| {
            let (lock, start) = (Arc::clone(&lock), Arc::clone(&start));
            thread::spawn(move || {
                start.wait();
                let mut guard = lock.lock();
                *guard += 1;
                // Held a while, so that the others stay parked behind it.
                thread::sleep(Duration::from_millis(2));
            })
        })
        .collect();
    start.wait();
    wait_parked(&lock);
    thread::sleep(Duration::from_millis(50));
    drop(guard);
    waiters.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(*lock.lock(), WAITERS);
    assert_eq!(lock.raw(), 0, "unlocked, PARKED cleared by the last wake-up");
}

#[test]
fn a_panic_under_the_lock_unlocks_with_the_bits_set_so_far() {
    let lock = SlotLock::new(0, ());
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut guard = lock.lock();
        guard.set_bits(3 * GENERATION);
        panic!("in the critical section");
    }));
    assert!(result.is_err());
    assert_eq!(lock.lock().bits(), 3 * GENERATION);
}

#[test]
fn the_body_is_dropped_with_the_lock() {
    let body = Arc::new(());
    drop(SlotLock::new(0, Arc::clone(&body)));
    assert_eq!(Arc::strong_count(&body), 1);
}
