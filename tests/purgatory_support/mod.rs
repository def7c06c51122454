//! A mock delayed operation that records every call and every broken promise, shared by the
//! purgatory tests (which also declare `mod common;`).
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use delaywheel::purgatory::{DelayedOperation, Purgatory};
use delaywheel::ManualClock;

use crate::common::{manual_timer, ms};

/// An operation that completes once `completable` is set, and counts what the purgatory did to it.
///
/// Promises the purgatory makes are checked inside the callbacks; a broken one is counted in
/// `violations` (a panic on the reaper thread would be caught by the timer and lost).
#[derive(Default)]
pub struct MockOp {
    pub completable: AtomicBool,
    /// Set `completable` after this many tries (0: never by itself).
    pub completable_after_tries: AtomicUsize,
    pub tries: AtomicUsize,
    pub completions: AtomicUsize,
    pub expirations: AtomicUsize,
    pub violations: AtomicUsize,
    in_try: AtomicBool,
}

impl MockOp {
    pub fn new() -> Self {
        Self::default()
    }

    /// An operation whose condition already holds.
    pub fn completable() -> Self {
        let op = Self::default();
        op.completable.store(true, Ordering::SeqCst);
        op
    }

    pub fn set_completable(&self) {
        self.completable.store(true, Ordering::SeqCst);
    }

    pub fn completions(&self) -> usize {
        self.completions.load(Ordering::SeqCst)
    }

    pub fn expirations(&self) -> usize {
        self.expirations.load(Ordering::SeqCst)
    }

    pub fn tries(&self) -> usize {
        self.tries.load(Ordering::SeqCst)
    }

    pub fn violations(&self) -> usize {
        self.violations.load(Ordering::SeqCst)
    }

    pub fn is_completed(&self) -> bool {
        self.completions() > 0
    }

    fn violation(&self) {
        self.violations.fetch_add(1, Ordering::SeqCst);
    }
}

impl DelayedOperation for MockOp {
    fn try_complete(&self) -> bool {
        if self.in_try.swap(true, Ordering::SeqCst) {
            self.violation(); // two tries at once: the operation's lock was not held
        }
        if self.completions() > 0 {
            self.violation(); // tried after completion
        }
        let tries = self.tries.fetch_add(1, Ordering::SeqCst) + 1;
        let result = self.completable.load(Ordering::SeqCst);
        let after = self.completable_after_tries.load(Ordering::SeqCst);
        if after != 0 && tries >= after {
            self.set_completable();
        }
        self.in_try.store(false, Ordering::SeqCst);
        result
    }

    fn on_complete(&self) {
        if self.in_try.load(Ordering::SeqCst) {
            self.violation(); // on_complete overlapping a try
        }
        if self.completions.fetch_add(1, Ordering::SeqCst) != 0 {
            self.violation(); // completed twice
        }
    }

    fn on_expiration(&self) {
        if self.completions() != 1 {
            self.violation(); // expiration not after exactly one on_complete
        }
        if self.expirations.fetch_add(1, Ordering::SeqCst) != 0 {
            self.violation(); // expired twice
        }
    }
}

/// A purgatory on a manual timer (1 ms tick) on a fresh manual clock.
pub fn manual_purgatory<K, T>() -> (ManualClock, Purgatory<K, T>)
where
    K: std::hash::Hash + Eq + Clone + Send + Sync + 'static,
    T: DelayedOperation + ?Sized,
{
    let (clock, timer) = manual_timer(ms(1), 8);
    (clock, Purgatory::with_timer(timer))
}

/// Moves the clock forward by `by` and expires what is due.
pub fn advance<K, T>(clock: &ManualClock, purgatory: &Purgatory<K, T>, by: Duration)
where
    K: std::hash::Hash + Eq + Clone + Send + Sync + 'static,
    T: DelayedOperation + ?Sized,
{
    clock.advance(by);
    purgatory.advance_clock(Duration::ZERO);
}
