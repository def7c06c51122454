//! The shard's lock, two ways: parking_lot's `Mutex` (a waiter parks; lock and unlock each a
//! read-modify-write), or a spin lock (a waiter spins, then yields; the unlock a plain `Release`
//! store, so one read-modify-write per critical section).

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

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

/// A test-and-set lock: `compare_exchange` to lock, a `Release` store to unlock.
pub struct Spin {
    held: AtomicBool,
    wheel: UnsafeCell<Wheel>,
}

// SAFETY: the wheel is reached only through a `SpinGuard`, which exists only while `held` is set by
// its `lock` (taken with `Acquire`, given back with `Release` when the guard drops): one thread at a
// time, each seeing the last one's writes.
unsafe impl Sync for Spin {}

/// The wheel of a held [`Spin`]; unlocks when dropped.
pub struct SpinGuard<'a>(&'a Spin);

impl Deref for SpinGuard<'_> {
    type Target = Wheel;

    #[inline(always)]
    fn deref(&self) -> &Wheel {
        // SAFETY: the lock is held while the guard lives (see the `Sync` impl).
        unsafe { &*self.0.wheel.get() }
    }
}

impl DerefMut for SpinGuard<'_> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Wheel {
        // SAFETY: the lock is held while the guard lives, and `&mut self` makes this the only
        // reference through it.
        unsafe { &mut *self.0.wheel.get() }
    }
}

impl Drop for SpinGuard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.0.held.store(false, Ordering::Release);
    }
}

impl Spin {
    #[cold]
    fn wait(&self) {
        let mut spins = 0;
        while self.held.load(Ordering::Relaxed) {
            if spins < 100 {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
    }
}

impl ShardLock for Spin {
    type Guard<'a> = SpinGuard<'a>;

    fn new(wheel: Wheel) -> Self {
        Spin { held: AtomicBool::new(false), wheel: UnsafeCell::new(wheel) }
    }

    #[inline(always)]
    fn lock(&self) -> SpinGuard<'_> {
        while self.held.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            self.wait();
        }
        SpinGuard(self)
    }
}
