//! The minimal sharded timer core of `delaywheel_bench::lean_core` (a measurement prototype, not a
//! peer anyone ships: docs/lean_core.md) as two systems: `lean-core`, whose
//! handles are keys cancelled through the timer (no reference count), `lean-core-arc`, whose
//! handles hold their shard's `Arc` and cancel by themselves, and `lean-core-pool`, whose handles
//! name a shard header of the process-wide pool and cancel by themselves with no reference count;
//! each with parking_lot's mutex as the shard lock, or a lock unlocked by a plain store whose
//! waiters spin then yield (`-spin` after the name) or spin, yield, then sleep (`-backoff`). The
//! build's `LEAN_FIFO` and `LEAN_LEN` options apply to all of them.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::systems::System;
use delaywheel_bench::lean_core::{
    Backoff, Handle, Key, LeanTimer, Own, Owned, Parked, Pool, PoolHandle, Pooled, ShardLock, Spin,
    BACKOFF_SLEEPS, BACKOFF_WAITS,
};

/// The systems' names by shard lock.
pub trait Named: ShardLock {
    const KEYS: &'static str;
    const ARC: &'static str;
    const POOL: &'static str;
}

impl Named for Parked {
    const KEYS: &'static str = "lean-core";
    const ARC: &'static str = "lean-core-arc";
    const POOL: &'static str = "lean-core-pool";
}

impl Named for Spin {
    const KEYS: &'static str = "lean-core-spin";
    const ARC: &'static str = "lean-core-arc-spin";
    const POOL: &'static str = "lean-core-pool-spin";
}

impl Named for Backoff {
    const KEYS: &'static str = "lean-core-backoff";
    const ARC: &'static str = "lean-core-arc-backoff";
    const POOL: &'static str = "lean-core-pool-backoff";
}

/// How often the `-backoff` lock's waiters waited and slept, on stderr (zeros for the others).
fn backoff_counts() {
    let (waits, sleeps) = (BACKOFF_WAITS.load(Ordering::Relaxed), BACKOFF_SLEEPS.load(Ordering::Relaxed));
    eprintln!("# lean-core backoff lock: {waits} waits, {sleeps} sleeps");
}

/// `SPEC_CAPACITY` (as for delaywheel): that many slots written into the starting thread's shard
/// (the one W1 and W2 schedule into) before the clock starts.
fn reserved<L: ShardLock, O: Own<L>>(timer: LeanTimer<L, O>) -> LeanTimer<L, O> {
    if let Some(slots) = std::env::var("SPEC_CAPACITY").ok().and_then(|s| s.parse().ok()) {
        timer.reserve_here(slots);
    }
    timer
}

/// Keys: `LeanTimer::schedule` and `LeanTimer::cancel`.
pub struct LeanKeys<L: ShardLock>(LeanTimer<L, Owned>);

impl<L: Named> System for LeanKeys<L> {
    const NAME: &'static str = L::KEYS;
    type Handle = Key;
    type Local<'a> = ();

    fn start() -> Self {
        LeanKeys(reserved(LeanTimer::start()))
    }

    fn local(&self) {}

    fn schedule<F>(&self, _: &mut (), delay: Duration, task: F) -> Key
    where
        F: FnOnce() + Send + 'static,
    {
        self.0.schedule(delay, task)
    }

    fn cancel(&self, _: &mut (), key: &Key) -> bool {
        self.0.cancel(key)
    }

    fn pending(&self) -> usize {
        self.0.len()
    }

    fn shutdown(self) {
        drop(self.0);
        backoff_counts();
    }
}

/// Handles holding their shard: `LeanTimer::schedule_handle` and `Handle::cancel`.
pub struct LeanArc<L: ShardLock>(LeanTimer<L>);

/// Handles naming a pooled shard header: `LeanTimer::schedule_pooled` and `PoolHandle::cancel`.
pub struct LeanPool<L: Pooled>(LeanTimer<L, Pool>);

/// The `System` of a lean timer whose handles cancel by themselves: `$schedule` makes them.
macro_rules! self_cancelling {
    ($system:ident, $name:ident, $handle:ident, $schedule:ident $(, $bound:path)*) => {
        impl<L: Named $(+ $bound)*> System for $system<L> {
            const NAME: &'static str = L::$name;
            type Handle = $handle<L>;
            type Local<'a> = ();

            fn start() -> Self {
                $system(reserved(LeanTimer::start()))
            }

            fn local(&self) {}

            fn schedule<F>(&self, _: &mut (), delay: Duration, task: F) -> $handle<L>
            where
                F: FnOnce() + Send + 'static,
            {
                self.0.$schedule(delay, task)
            }

            fn cancel(&self, _: &mut (), handle: &$handle<L>) -> bool {
                handle.cancel()
            }

            fn pending(&self) -> usize {
                self.0.len()
            }

            fn shutdown(self) {
                drop(self.0);
                backoff_counts();
            }
        }
    };
}

self_cancelling!(LeanArc, ARC, Handle, schedule_handle);
self_cancelling!(LeanPool, POOL, PoolHandle, schedule_pooled, Pooled);
