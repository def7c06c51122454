//! The shard's lock, three ways: parking_lot's `Mutex` (a waiter parks; lock and unlock each a
//! read-modify-write), or a test-and-set lock whose unlock is a plain `Release` store (one
//! read-modify-write per critical section), whose waiter either spins then yields ([`Spin`]), or
//! spins, yields, then sleeps in bounded steps re-checking the word ([`Backoff`]).
//!
//! [`Backoff`]'s holder never wakes anyone: a waiter past its spins and yields sleeps 1 µs, then
//! 2, 4, … up to [`BACKOFF_CAP`] (64 µs) a step, and looks at the word after each. So it costs a
//! waiter at most one step past the unlock plus the kernel's timer slack (50 µs by default on
//! Linux), which every sleep pays: from its first sleep, a few microseconds into its wait, up to
//! about 50 µs, and up to about 115 µs once its steps reach 64 µs; before its first sleep, the
//! spins and yields see the unlock within one yield. A waiter asleep burns no core.

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use super::wheel::Wheel;

/// A lock over one shard's [`Wheel`].
pub trait ShardLock: Send + Sync + 'static {
    /// The wheel, the lock held until the guard drops.
    type Guard<'a>: DerefMut<Target = Wheel>
    where
        Self: 'a;
    fn new(wheel: Wheel) -> Self;
    fn lock(&self) -> Self::Guard<'_>;
}

/// parking_lot's `Mutex`.
pub struct Parked(parking_lot::Mutex<Wheel>);

impl ShardLock for Parked {
    type Guard<'a> = parking_lot::MutexGuard<'a, Wheel>;

    fn new(wheel: Wheel) -> Self {
        Parked(parking_lot::Mutex::new(wheel))
    }

    #[inline(always)]
    fn lock(&self) -> Self::Guard<'_> {
        self.0.lock()
    }
}

/// How a [`TestAndSet`] waiter waits for the word to clear.
pub trait Wait: Send + Sync + 'static {
    /// Waits until `held` reads `false` (then the caller tries again).
    fn wait(held: &AtomicBool);
}

/// Spin 100 times, then yield until free: a waiter burns its core.
pub struct Yield;

/// Spin 64 times, yield 16 times, then sleep 1, 2, 4, … up to [`BACKOFF_CAP`] a step.
pub struct Sleep;

/// How often [`Backoff`] waiters waited (once per `lock` that found the word set and spun) and
/// slept (once per step), in the whole process: the waits' cold path counts them.
pub static BACKOFF_WAITS: AtomicU64 = AtomicU64::new(0);
/// See [`BACKOFF_WAITS`].
pub static BACKOFF_SLEEPS: AtomicU64 = AtomicU64::new(0);

/// The longest sleep of a [`Backoff`] waiter between two looks at the word.
pub const BACKOFF_CAP: Duration = Duration::from_micros(64);

impl Wait for Yield {
    #[cold]
    fn wait(held: &AtomicBool) {
        let mut spins = 0;
        while held.load(Ordering::Relaxed) {
            if spins < 100 {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
    }
}

impl Wait for Sleep {
    #[cold]
    fn wait(held: &AtomicBool) {
        BACKOFF_WAITS.fetch_add(1, Ordering::Relaxed);
        let mut round = 0u32;
        let mut sleep = Duration::from_micros(1);
        while held.load(Ordering::Relaxed) {
            if round < 64 {
                std::hint::spin_loop();
            } else if round < 80 {
                std::thread::yield_now();
            } else {
                BACKOFF_SLEEPS.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(sleep);
                sleep = (sleep * 2).min(BACKOFF_CAP);
            }
            round = round.saturating_add(1);
        }
    }
}

/// A test-and-set lock: `compare_exchange` to lock, a `Release` store to unlock; its waiters wait
/// as `W` says.
pub struct TestAndSet<W> {
    held: AtomicBool,
    wheel: UnsafeCell<Wheel>,
    wait: PhantomData<W>,
}

/// Waiters spin, then yield.
pub type Spin = TestAndSet<Yield>;

/// Waiters spin, yield, then sleep in steps up to [`BACKOFF_CAP`].
pub type Backoff = TestAndSet<Sleep>;

// SAFETY: the wheel is reached only through a `SpinGuard`, which exists only while `held` is set by
// its `lock` (taken with `Acquire`, given back with `Release` when the guard drops): one thread at a
// time, each seeing the last one's writes. (`W` is a marker: no data.)
unsafe impl<W: Wait> Sync for TestAndSet<W> {}

/// The wheel of a held [`TestAndSet`]; unlocks when dropped.
pub struct SpinGuard<'a, W>(&'a TestAndSet<W>);

impl<W> Deref for SpinGuard<'_, W> {
    type Target = Wheel;

    #[inline(always)]
    fn deref(&self) -> &Wheel {
        // SAFETY: the lock is held while the guard lives (see the `Sync` impl).
        unsafe { &*self.0.wheel.get() }
    }
}

impl<W> DerefMut for SpinGuard<'_, W> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Wheel {
        // SAFETY: the lock is held while the guard lives, and `&mut self` makes this the only
        // reference through it.
        unsafe { &mut *self.0.wheel.get() }
    }
}

impl<W> Drop for SpinGuard<'_, W> {
    #[inline(always)]
    fn drop(&mut self) {
        self.0.held.store(false, Ordering::Release);
    }
}

impl<W: Wait> ShardLock for TestAndSet<W> {
    type Guard<'a> = SpinGuard<'a, W>;

    fn new(wheel: Wheel) -> Self {
        TestAndSet { held: AtomicBool::new(false), wheel: UnsafeCell::new(wheel), wait: PhantomData }
    }

    #[inline(always)]
    fn lock(&self) -> SpinGuard<'_, W> {
        while self.held.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            W::wait(&self.held);
        }
        SpinGuard(self)
    }
}
