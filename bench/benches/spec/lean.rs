//! The minimal sharded timer core of `delaywheel_bench::lean_core` (a measurement prototype, not a
//! peer anyone ships: docs/design.md, "A leaner core, measured") as two systems: `lean-core`, whose
//! handles are keys cancelled through the timer (no reference count), and `lean-core-arc`, whose
//! handles hold their shard's `Arc` and cancel by themselves; each with parking_lot's mutex as the
//! shard lock, or (`-spin` after the name) a spin lock unlocked by a plain store.

use std::time::Duration;

use crate::systems::System;
use delaywheel_bench::lean_core::{Handle, Key, LeanTimer, Parked, ShardLock, Spin};

/// The systems' names by shard lock.
pub trait Named: ShardLock {
    const KEYS: &'static str;
    const ARC: &'static str;
}

impl Named for Parked {
    const KEYS: &'static str = "lean-core";
    const ARC: &'static str = "lean-core-arc";
}

impl Named for Spin {
    const KEYS: &'static str = "lean-core-spin";
    const ARC: &'static str = "lean-core-arc-spin";
}

/// `SPEC_CAPACITY` (as for delaywheel): that many slots written into the starting thread's shard
/// (the one W1 and W2 schedule into) before the clock starts.
fn reserved<L: ShardLock>(timer: LeanTimer<L>) -> LeanTimer<L> {
    if let Some(slots) = std::env::var("SPEC_CAPACITY").ok().and_then(|s| s.parse().ok()) {
        timer.reserve_here(slots);
    }
    timer
}

/// Keys: `LeanTimer::schedule` and `LeanTimer::cancel`.
pub struct LeanKeys<L: ShardLock>(LeanTimer<L>);

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
    }
}

/// Handles holding their shard: `LeanTimer::schedule_handle` and `Handle::cancel`.
pub struct LeanArc<L: ShardLock>(LeanTimer<L>);

impl<L: Named> System for LeanArc<L> {
    const NAME: &'static str = L::ARC;
    type Handle = Handle<L>;
    type Local<'a> = ();

    fn start() -> Self {
        LeanArc(reserved(LeanTimer::start()))
    }

    fn local(&self) {}

    fn schedule<F>(&self, _: &mut (), delay: Duration, task: F) -> Handle<L>
    where
        F: FnOnce() + Send + 'static,
    {
        self.0.schedule_handle(delay, task)
    }

    fn cancel(&self, _: &mut (), handle: &Handle<L>) -> bool {
        handle.cancel()
    }

    fn pending(&self) -> usize {
        self.0.len()
    }

    fn shutdown(self) {
        drop(self.0);
    }
}
