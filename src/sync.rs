//! The one place that chooses synchronisation primitives.
//!
//! Every lock, condition variable, atomic, `Arc` and once-cell used by the timer's algorithm is
//! imported from here, never from `std::sync`, `parking_lot` or `loom` directly. Normal builds get
//! `parking_lot` locks (one byte each, no poisoning) and `std` atomics; builds with
//! `RUSTFLAGS="--cfg delaywheel_loom"` get `loom`'s types so the loom models in `loom_tests/` can explore
//! every interleaving. The cfg is namespaced on purpose: a plain `--cfg loom` would also flip
//! dependencies that look at it.
//!
//! The API is `parking_lot`'s shape (`lock()` returns the guard, no poisoning) in both builds.
//!
//! Under loom there is no clock: the blocking waits of [`Condvar`] are not part of any model (the models
//! drive the timer on a manual clock, which never waits), so the loom `Condvar` only supports notifying,
//! and a wait there is a bug in the model.

#[cfg(not(delaywheel_loom))]
mod imp {
    pub(crate) use parking_lot::{Condvar, Mutex, MutexGuard};
    pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
    pub(crate) use std::sync::{Arc, OnceLock};

    // For `repeating.rs`: a repeating task's way back to its timer must not keep the timer alive.
    pub(crate) use std::sync::Weak;

    /// `Arc::downgrade`, as a free function so that both branches offer the same call.
    pub(crate) fn downgrade<T>(arc: &Arc<T>) -> Weak<T> {
        Arc::downgrade(arc)
    }
}

#[cfg(delaywheel_loom)]
mod imp {
    pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
    pub(crate) use loom::sync::{Arc, MutexGuard};

    /// `parking_lot`-shaped wrapper over loom's mutex.
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(loom::sync::Mutex::new(value))
        }
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().expect("loom mutex poisoned")
        }
        pub(crate) fn into_inner(self) -> T {
            self.0.into_inner().expect("loom mutex poisoned")
        }
    }

    /// Notify-only condition variable: models never block on a clock (see the module docs).
    #[derive(Debug, Default)]
    pub(crate) struct Condvar;

    impl Condvar {
        pub(crate) fn new() -> Self {
            Condvar
        }
        pub(crate) fn notify_one(&self) -> bool {
            false
        }
        pub(crate) fn notify_all(&self) -> usize {
            0
        }
        pub(crate) fn wait<T>(&self, _guard: &mut MutexGuard<'_, T>) {
            unreachable!("blocking waits are outside loom models; drive a manual clock instead")
        }
        pub(crate) fn wait_for<T>(
            &self,
            _guard: &mut MutexGuard<'_, T>,
            _timeout: std::time::Duration,
        ) -> WaitTimeoutResult {
            unreachable!("blocking waits are outside loom models; drive a manual clock instead")
        }
    }

    /// Mirrors `parking_lot::WaitTimeoutResult`.
    pub(crate) struct WaitTimeoutResult;
    impl WaitTimeoutResult {
        #[allow(dead_code)]
        pub(crate) fn timed_out(&self) -> bool {
            true
        }
    }

    /// A once-cell whose initialisation race loom can see: the value lives in a std `OnceLock`
    /// (correct by itself), and every access goes through a loom mutex so that the model explores the
    /// orders in which threads observe and perform the initialisation.
    #[derive(Debug)]
    pub(crate) struct OnceLock<T> {
        gate: loom::sync::Mutex<()>,
        cell: std::sync::OnceLock<T>,
    }

    impl<T> OnceLock<T> {
        pub(crate) fn new() -> Self {
            Self { gate: loom::sync::Mutex::new(()), cell: std::sync::OnceLock::new() }
        }
        pub(crate) fn get(&self) -> Option<&T> {
            let _gate = self.gate.lock().expect("loom mutex poisoned");
            self.cell.get()
        }
        pub(crate) fn get_or_init(&self, init: impl FnOnce() -> T) -> &T {
            let _gate = self.gate.lock().expect("loom mutex poisoned");
            self.cell.get_or_init(init)
        }
    }

    /// loom has no weak references: under loom a `Weak` is a strong reference (it keeps its value
    /// alive and `upgrade` always succeeds). Only `repeating.rs` uses it, and no model drives it.
    #[derive(Debug)]
    pub(crate) struct Weak<T>(Arc<T>);

    impl<T> Weak<T> {
        pub(crate) fn upgrade(&self) -> Option<Arc<T>> {
            Some(Arc::clone(&self.0))
        }
    }

    /// See the `Weak` above.
    pub(crate) fn downgrade<T>(arc: &Arc<T>) -> Weak<T> {
        Weak(Arc::clone(arc))
    }
}

#[allow(unused_imports)]
pub(crate) use imp::*;
