//! `ShardLock<T>`: a shard's one lock. Test-and-set over an `UnsafeCell`, one read-modify-write
//! per critical section, and waiters that back off to bounded sleeps (the prototype's `Backoff`,
//! `bench/src/lean_core/lock.rs`; docs/lean_core.md measures it against parking_lot's `Mutex`).
//!
//! **Protocol.** One word, `held`. [`ShardLock::lock`] and [`ShardLock::try_lock`] take it with a
//! `compare_exchange` from `false` to `true` (`Acquire`); the guard gives it back with one
//! `Release` store. The next holder's `compare_exchange` reads that store (or a later one of the
//! same kind), so every critical section happens-before the next, and the value in the cell is
//! reached only through the one guard that exists while the word is set. The word records no
//! waiter and the holder wakes nobody, so the unlock needs no read-modify-write: a critical
//! section costs one (parking_lot's costs two, one to lock, one to unlock).
//!
//! **Waiting.** A thread that finds the word set waits in a backoff: it reads the word with plain
//! loads (which leave the cache line shared with the holder), spinning [`SPINS`] times with
//! `spin_loop` hints, then yielding [`YIELDS`] times, then sleeping 1 µs, 2, 4, … up to
//! [`SLEEP_CAP`] (64 µs) a step, and it tries the `compare_exchange` again whenever a look finds
//! the word clear.
//!
//! * **Fairness: none.** A waiter takes the word only if its `compare_exchange` comes first; a
//!   later arrival, or the last holder locking again, can win any number of times, and a waiter
//!   asleep loses every race it sleeps through. The shard's critical sections are short (a slot
//!   and a few list links), so the word is seldom held at a waiter's look; nothing bounds how often
//!   it may be.
//! * **The worst wake-up latency of a sleeping waiter.** Nobody wakes it: it sees the unlock at
//!   its next look, up to one step after it, plus the kernel's timer slack that every sleep pays
//!   (50 µs by default on Linux). From its first sleep (after its spins and yields, a few
//!   microseconds into its wait) that is up to about 50 µs; once its steps reach 64 µs (after six
//!   sleeps, up to about half a millisecond into its wait), up to about 115 µs. Before its first
//!   sleep, its spins and yields see the unlock within one yield.
//! * **No waiter burns a core.** Its spins are bounded (64 `spin_loop` hints, a few microseconds
//!   at most) and so are its yields; from then on it sleeps between looks, each look one load, at
//!   least 1 µs and at most 64 µs apart: a thread waiting for a holder preempted for a whole time
//!   slice spends nearly all of it asleep.
//!
//! **Under loom** (`cfg(delaywheel_loom)`): the word is a loom atomic and the cell loom's
//! (`crate::sync::UnsafeCell`), which tracks the access a guard holds from its lock to its unlock:
//! an access that the lock does not order (an unlock too weak, a guard that outlived its unlock)
//! fails the model. Loom has no clock, and a waiter that yields before each look lets loom run
//! two waiters yielding to each other for as long as it likes before it runs the holder (a search
//! with no end), so a waiter parks instead: it tries the word under a loom `Mutex` and, finding it
//! set, waits on a loom `Condvar`; the unlock, after its store, takes that mutex and wakes every
//! waiter. A waiter's try under the mutex either sees the store or comes before the unlocker
//! takes the mutex, whose wake then finds it waiting: no wake is lost. The mutex orders nothing
//! that the word does not: a waiter that takes the word straight after a store (its first try
//! in [`ShardLock::lock`], or another thread's) reads it with no mutex between, so an unlock too
//! weak still fails the model.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::time::Duration;

use crate::sync::{AtomicBool, CellAccess, Ordering, UnsafeCell};

/// How many times a waiter looks at the word with a `spin_loop` hint between looks, first.
pub const SPINS: u32 = 64;
/// How many times a waiter then yields its thread between looks, before it sleeps.
pub const YIELDS: u32 = 16;
/// The longest sleep of a waiter between two looks at the word (the sleeps start at 1 µs and
/// double).
pub const SLEEP_CAP: Duration = Duration::from_micros(64);

/// A test-and-set lock over a `T` (see the module docs): one read-modify-write per critical
/// section, no fairness, waiters that end up sleeping in bounded steps.
pub struct ShardLock<T> {
    held: AtomicBool,
    value: UnsafeCell<T>,
    /// Under loom, where a waiter parks (the module docs, "Under loom").
    #[cfg(delaywheel_loom)]
    parking: Parking,
}

/// Under loom, the waiters' parking: the mutex a waiter tries the word under, and the condvar it
/// waits on until an unlock wakes it.
#[cfg(delaywheel_loom)]
#[derive(Default)]
struct Parking {
    mutex: loom::sync::Mutex<()>,
    wake: loom::sync::Condvar,
}

// SAFETY: the value is reached only through a `ShardLockGuard`, and a guard exists only while
// `held` is set by the `compare_exchange` that made it (an `Acquire`), until its `Release` store:
// one thread at a time, each after the last one's writes. So sharing the lock hands the `T` from
// thread to thread, which `T: Send` allows, and never shares it, so `T: Sync` is not needed (as for
// `std::sync::Mutex`).
unsafe impl<T: Send> Sync for ShardLock<T> {}

impl<T> ShardLock<T> {
    /// An unlocked lock over `value`.
    pub fn new(value: T) -> ShardLock<T> {
        ShardLock {
            held: AtomicBool::new(false),
            value: UnsafeCell::new(value),
            #[cfg(delaywheel_loom)]
            parking: Parking::default(),
        }
    }

    /// Locks, waiting (spinning, yielding, then sleeping in steps) while another thread holds it.
    /// Not reentrant: a thread that locks again while its guard lives waits forever.
    #[inline]
    pub fn lock(&self) -> ShardLockGuard<'_, T> {
        if self.held.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            self.wait_and_lock();
        }
        self.guard()
    }

    /// Locks if the word is clear now; `None` if another thread holds it.
    #[inline]
    pub fn try_lock(&self) -> Option<ShardLockGuard<'_, T>> {
        match self.held.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => Some(self.guard()),
            Err(_) => None,
        }
    }

    /// The slow path of [`lock`](Self::lock): backs off until a look finds the word clear, tries,
    /// and backs off again if another thread came first.
    #[cfg(not(delaywheel_loom))]
    #[cold]
    #[inline(never)]
    fn wait_and_lock(&self) {
        let mut backoff = Backoff::new();
        loop {
            backoff.step();
            if !self.held.load(Ordering::Relaxed)
                && self.held.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
            {
                return;
            }
        }
    }

    /// The slow path of [`lock`](Self::lock) under loom: tries the word under the parking mutex,
    /// and waits for an unlock's wake while another thread holds it.
    #[cfg(delaywheel_loom)]
    fn wait_and_lock(&self) {
        let mut parked = self.parking.mutex.lock().unwrap();
        while self.held.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            parked = self.parking.wake.wait(parked).unwrap();
        }
    }

    /// The guard of a lock this thread just took.
    #[inline(always)]
    fn guard(&self) -> ShardLockGuard<'_, T> {
        ShardLockGuard {
            access: self.value.get_mut(),
            _held: Held {
                held: &self.held,
                #[cfg(delaywheel_loom)]
                parking: &self.parking,
            },
        }
    }
}

impl<T> fmt::Debug for ShardLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardLock").field("held", &self.held.load(Ordering::Relaxed)).finish_non_exhaustive()
    }
}

/// The value of a held [`ShardLock`]; unlocks when dropped.
pub struct ShardLockGuard<'a, T> {
    // Declared before `_held`, so dropped first (fields drop in declaration order): under loom the
    // access to the value ends before the unlock.
    access: CellAccess<T>,
    // Never read: its drop is the unlock.
    _held: Held<'a>,
}

/// The unlock, when dropped: the one `Release` store (under loom, then the parked waiters' wake).
struct Held<'a> {
    held: &'a AtomicBool,
    #[cfg(delaywheel_loom)]
    parking: &'a Parking,
}

impl Drop for Held<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        let order = if fault!("shard_unlock_relaxed") { Ordering::Relaxed } else { Ordering::Release };
        self.held.store(false, order);
        #[cfg(delaywheel_loom)]
        {
            let _parked = self.parking.mutex.lock().unwrap();
            self.parking.wake.notify_all();
        }
    }
}

impl<T> Deref for ShardLockGuard<'_, T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: the pointer is the cell's of a lock this guard borrows, so it is live; the lock
        // is held while the guard lives (see the `Sync` impl), so no other thread reaches the
        // value, and this guard hands out a `&T` only while it is borrowed shared.
        unsafe { &*self.access.ptr() }
    }
}

impl<T> DerefMut for ShardLockGuard<'_, T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only reference through the guard.
        unsafe { &mut *self.access.ptr() }
    }
}

impl<T: fmt::Debug> fmt::Debug for ShardLockGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ShardLockGuard").field(&**self).finish()
    }
}

/// A waiter's steps between looks at the word: [`SPINS`] spins, [`YIELDS`] yields, then sleeps
/// of 1 µs doubling up to [`SLEEP_CAP`]. (Under loom a waiter parks instead.)
#[cfg(not(delaywheel_loom))]
struct Backoff {
    steps: u32,
    sleep: Duration,
}

#[cfg(not(delaywheel_loom))]
impl Backoff {
    fn new() -> Backoff {
        Backoff { steps: 0, sleep: Duration::from_micros(1) }
    }

    /// Waits one step; the caller looks at the word after it.
    fn step(&mut self) {
        if self.steps < SPINS {
            std::hint::spin_loop();
        } else if self.steps < SPINS + YIELDS {
            crate::sync::yield_now();
        } else {
            #[cfg(test)]
            SLEEPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            std::thread::sleep(self.sleep);
            self.sleep = (self.sleep * 2).min(SLEEP_CAP);
        }
        self.steps = self.steps.saturating_add(1);
    }
}

/// How many sleeps waiters took, in the whole test process: the tests' evidence that a waiter
/// reached its sleeps and still took the lock.
#[cfg(test)]
pub(super) static SLEEPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
