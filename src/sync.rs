//! The one place that chooses synchronisation primitives.
//!
//! Every lock, condition variable, atomic, `Arc`, once-cell and thread-local used by the timer's
//! algorithm is imported from here, never from `std::sync`, `parking_lot` or `loom` directly. Normal
//! builds get `parking_lot` locks (one byte each, no poisoning) and `std` atomics; builds with
//! `RUSTFLAGS="--cfg delaywheel_loom"` get `loom`'s types so the loom models in `loom_tests/` can explore
//! every interleaving. The cfg is namespaced on purpose: a plain `--cfg loom` would also flip
//! dependencies that look at it.
//!
//! The API is `parking_lot`'s shape (`lock()` returns the guard, no poisoning) in both builds.
//!
//! What loom imposes on the rest of the crate:
//!
//! * loom's `Arc` cannot be a method receiver (`self: &Arc<Self>` needs std's `Arc`), so a function
//!   that needs the `Arc` of its own value must take it as `this: &Arc<Self>`;
//! * the thread-local that marks a thread as advancing a timer is declared with this module's
//!   [`thread_local!`]: model threads may share one OS thread, so a std thread-local would leak one
//!   model thread's mark into another;
//! * the timer's own threads (driver, executors) are `std` threads and stay outside the models, which
//!   drive a manual timer from `loom::thread`s instead.
//!
//! Under loom there is no clock: the blocking waits of [`Condvar`] are not part of any model (the models
//! drive the timer on a manual clock, which never waits), so the loom `Condvar` only supports notifying,
//! and a wait there is a bug in the model.
//!
//! Two more, for the shard core (`shard/`): [`UnsafeCell`], std's or loom's in loom's shape (the
//! access a lock hands out is a value, [`CellAccess`], which loom tracks until it is dropped, so
//! that an access the lock does not order fails a model; dereferencing its pointer is the lock's
//! `unsafe`, not this module's), and [`type_static`], one value per type made on first use and
//! never freed: process-wide normally, one per model execution under loom (loom objects cannot
//! outlive the execution that made them).
//!
//! Built on these: the per-thread striped count of things in and out, with the order of its reads
//! (`striped.rs`), which the timer's `len()` and the delay queue's `len` share.

pub(crate) mod striped;

#[cfg(not(delaywheel_loom))]
mod imp {
    pub(crate) use parking_lot::{Condvar, Mutex, MutexGuard};
    pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
    pub(crate) use std::sync::{Arc, OnceLock};
    pub(crate) use std::thread::yield_now;
    pub(crate) use std::thread_local;

    // For `repeating.rs`: a repeating task's way back to its timer must not keep the timer alive.
    pub(crate) use std::sync::Weak;

    /// `Arc::downgrade`, as a free function so that both branches offer the same call.
    pub(crate) fn downgrade<T>(arc: &Arc<T>) -> Weak<T> {
        Arc::downgrade(arc)
    }

    /// std's `UnsafeCell` in loom's shape: [`UnsafeCell::get_mut`] hands out the access as a value.
    #[derive(Debug, Default)]
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        pub(crate) const fn new(value: T) -> Self {
            Self(std::cell::UnsafeCell::new(value))
        }

        /// A write access to the value: its pointer (under loom, tracked until it is dropped).
        #[inline(always)]
        pub(crate) fn get_mut(&self) -> CellAccess<T> {
            CellAccess(self.0.get())
        }
    }

    /// A write access to an [`UnsafeCell`]'s value, from [`UnsafeCell::get_mut`].
    #[derive(Debug)]
    pub(crate) struct CellAccess<T>(*mut T);

    impl<T> CellAccess<T> {
        /// The value's address; dereferencing it is the caller's `unsafe`.
        #[inline(always)]
        pub(crate) fn ptr(&self) -> *mut T {
            self.0
        }
    }

    /// The one value of type `T` in the process, made by `T::default()` on first use and never
    /// freed (`Box::leak`; found again by its type under a lock, so a call costs a lock and a scan
    /// of the types made so far: for set-up paths, not hot ones).
    pub(crate) fn type_static<T: std::any::Any + Default + Send + Sync>() -> &'static T {
        static VALUES: parking_lot::Mutex<super::TypeStatics> = parking_lot::Mutex::new(Vec::new());
        super::find_or_leak(&mut VALUES.lock())
    }

    /// A small number for the calling thread, handed out round robin on first use: threads
    /// started one after the other get consecutive numbers (striped counts, `striped.rs`).
    #[inline]
    pub(crate) fn thread_index() -> usize {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        std::thread_local! {
            static INDEX: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
        }
        INDEX.with(|index| match index.get() {
            usize::MAX => {
                let assigned = NEXT.fetch_add(1, Ordering::Relaxed) & (usize::MAX >> 1);
                index.set(assigned);
                assigned
            }
            assigned => assigned,
        })
    }
}

#[cfg(delaywheel_loom)]
mod imp {
    pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
    pub(crate) use loom::sync::{Arc, MutexGuard};

    /// `loom::thread_local!`, accepting std's `const { … }` initialiser (loom's macro does not).
    macro_rules! loom_thread_local {
        ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = const { $init:expr };) => {
            loom::thread_local! { $(#[$attr])* $vis static $name: $t = $init; }
        };
    }
    pub(crate) use loom_thread_local as thread_local;

    /// The model thread's number (0 for the main model thread, then in spawn order): deterministic
    /// across executions, as loom requires, and without a loom object of its own (a round-robin
    /// counter would be one more atomic for every model to explore).
    pub(crate) fn thread_index() -> usize {
        let id = format!("{:?}", loom::thread::current().id());
        id.trim_start_matches("ThreadId(").trim_end_matches(')').parse().unwrap_or(0)
    }

    /// `parking_lot`-shaped wrapper over loom's mutex.
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T: ?Sized>(loom::sync::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(loom::sync::Mutex::new(value))
        }
    }

    impl<T: ?Sized> Mutex<T> {
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().expect("loom mutex poisoned")
        }

        /// `parking_lot`'s `try_lock`: `None` if the lock is held.
        pub(crate) fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            self.0.try_lock().ok()
        }

        /// `parking_lot`'s `try_lock_for`, without the wait: loom has no clock, so a model sees
        /// the lock taken at once or the wait run out, as `try_lock`.
        pub(crate) fn try_lock_for(&self, _timeout: std::time::Duration) -> Option<MutexGuard<'_, T>> {
            self.try_lock()
        }
    }

    /// Notify-only condition variable: models never block on a clock (see the module docs).
    #[derive(Debug, Default)]
    pub(crate) struct Condvar;

    impl Condvar {
        pub(crate) fn new() -> Self {
            Condvar
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

    /// A once-cell with `std::sync::OnceLock`'s memory model, made visible to loom.
    ///
    /// The value is stored in a std `OnceLock` (which cannot be initialised twice), but whether a
    /// thread *sees* it is decided by a loom atomic, exactly as in std: `get` is an `Acquire` load of
    /// the "ready" flag, and the initialiser publishes with a `Release` store. So a `get` that races
    /// the initialisation may return `None` even though another thread has already stored the value,
    /// and loom explores that. Initialisations are serialised by a loom mutex, as std blocks the
    /// losers of the race until the winner is done.
    #[derive(Debug)]
    pub(crate) struct OnceLock<T> {
        ready: loom::sync::atomic::AtomicBool,
        init: loom::sync::Mutex<()>,
        cell: std::sync::OnceLock<T>,
    }

    impl<T> OnceLock<T> {
        pub(crate) fn new() -> Self {
            Self {
                ready: loom::sync::atomic::AtomicBool::new(false),
                init: loom::sync::Mutex::new(()),
                cell: std::sync::OnceLock::new(),
            }
        }
        pub(crate) fn get(&self) -> Option<&T> {
            if self.ready.load(Ordering::Acquire) {
                self.cell.get()
            } else {
                None
            }
        }
        pub(crate) fn get_or_init(&self, init: impl FnOnce() -> T) -> &T {
            if let Some(value) = self.get() {
                return value;
            }
            let _init = self.init.lock().expect("loom mutex poisoned");
            // Under the mutex, the winner's `Release` store happens-before this load.
            if let Some(value) = self.get() {
                return value;
            }
            let value = self.cell.get_or_init(init);
            self.ready.store(true, Ordering::Release);
            value
        }
    }

    /// loom has no weak references: under loom a `Weak` is a strong reference (it keeps its value
    /// alive and `upgrade` always succeeds). Only the extras' `WeakTimer` (`timer/weak.rs`) uses it; an
    /// upgrade after the timer was dropped succeeds there, and finds the timer shut down.
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

    /// loom's `UnsafeCell`, which checks every access against the orderings that should order it.
    pub(crate) struct UnsafeCell<T>(loom::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(loom::cell::UnsafeCell::new(value))
        }

        /// A write access to the value, tracked by loom until it is dropped: an access by another
        /// thread that does not happen-after its end (or before its start) fails the model.
        #[track_caller]
        pub(crate) fn get_mut(&self) -> CellAccess<T> {
            CellAccess(self.0.get_mut())
        }
    }

    /// A write access to an [`UnsafeCell`]'s value, from [`UnsafeCell::get_mut`].
    pub(crate) struct CellAccess<T>(loom::cell::MutPtr<T>);

    impl<T> CellAccess<T> {
        /// The value's address, valid while the access lives.
        pub(crate) fn ptr(&self) -> *mut T {
            self.0.with(|ptr| ptr)
        }
    }

    loom::lazy_static! {
        /// The values of `type_static`, one set per model execution.
        static ref TYPE_STATICS: Mutex<super::TypeStatics> = Mutex::new(Vec::new());
    }

    /// One value of type `T` per model execution, made by `T::default()` on first use: it holds
    /// loom objects, which cannot outlive the execution that made them. Leaked (`Box::leak`) as in
    /// normal builds, so a reference to it stays valid; the next execution makes its own.
    pub(crate) fn type_static<T: std::any::Any + Default + Send + Sync>() -> &'static T {
        super::find_or_leak(&mut TYPE_STATICS.lock())
    }
}

#[allow(unused_imports)]
pub(crate) use imp::*;

/// What `type_static` keeps (under a lock of its build's kind): a value of each type asked for so
/// far.
type TypeStatics = Vec<&'static (dyn std::any::Any + Send + Sync)>;

/// `type_static`'s body in both builds: the value of type `T` among `values`, or a new one
/// (`T::default()`, leaked: never freed) added to them.
fn find_or_leak<T: std::any::Any + Default + Send + Sync>(values: &mut TypeStatics) -> &'static T {
    if let Some(value) = values.iter().find_map(|&value| value.downcast_ref::<T>()) {
        return value;
    }
    let value: &'static T = Box::leak(Box::default());
    values.push(value);
    value
}

// **Unmodelled** primitives: the same in both builds, invisible to loom. Only for the task slab's
// free lists, thread caches and page source (`entry/task_slab.rs`, `entry/free_lists.rs`,
// `entry/thread_cache.rs`, `entry/os.rs`), the stamp counter (`entry/stamps.rs`: one
// read-modify-write makes each stamp unique, and a stamp orders nothing but entries, whose moves
// their shard's lock orders), a seeded fault's stand-in lock (`shard/faults.rs`), and the thread a
// timer's advance runs on (`timer/advancing.rs`: each thread reads
// there only whether it wrote its own number, which orders nothing across threads). Blocks do
// travel through the free lists, from the thread that freed one to the one that reuses it, but a
// block is reached only through its entry's payload, whose moves its shard's lock orders, which is
// modelled; so the models need not explore the lists. The rule that makes hiding them sound: **no
// loom operation inside an unmodelled lock** (loom would switch threads while a real lock is held,
// and block forever).
pub(crate) use parking_lot::Mutex as UnmodelledMutex;
pub(crate) use parking_lot::MutexGuard as UnmodelledMutexGuard;
pub(crate) use std::sync::atomic::AtomicU64 as UnmodelledAtomicU64;

/// How many stripes a per-thread structure gets (the striped counts, the task slab's free lists),
/// indexed by [`thread_index`] modulo this: enough that the threads of a busy process rarely share
/// one, few enough that summing them stays cheap. Under loom, two (models stay small).
pub(crate) fn stripe_count() -> usize {
    #[cfg(delaywheel_loom)]
    return 2;
    #[cfg(not(delaywheel_loom))]
    {
        static COUNT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        *COUNT.get_or_init(|| {
            let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
            (cores * 4).next_power_of_two().clamp(4, 64)
        })
    }
}
