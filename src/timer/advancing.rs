//! Which timers this thread is advancing: how a task that calls back into its own timer is
//! detected.
//!
//! Tasks run inside `advance_clock` (on the driver, or on the caller's thread) while that thread
//! holds the timer's `advance_lock`. A task that calls `advance_clock` or `shutdown` on the same
//! timer must not wait for that lock: the timer first asks whether this thread holds it
//! (`advance.rs`, `mod.rs`). Each timer keeps the number of the thread advancing it (its
//! `advancer`: [`thread_index`] + 1, 0 for none), written only by the holder of `advance_lock`
//! ([`Advancing`]: set as the advance begins, cleared as it ends, also when a task unwinds). So a
//! task of one timer may advance another, and a task of that one, run inside that advance, still
//! finds the first timer marked with this thread. A thread looks there only for its own number,
//! which only it writes: a relaxed load tells, whatever other threads wrote before.
//!
//! The thread-locals here have no destructor, so they work while the thread's locals are being
//! destroyed (a timer kept in a thread-local is dropped then).

use std::cell::Cell;
use std::sync::atomic::Ordering;

use crate::sync::{thread_index, UnmodelledAtomicU64};

// Through the facade: under loom, model threads may share one OS thread, so a std thread-local
// would leak one model thread's count into another.
crate::sync::thread_local! {
    /// How many advances (of any timers) this thread is inside.
    static ADVANCING: Cell<usize> = const { Cell::new(0) };
}

crate::sync::thread_local! {
    /// Whether this thread is a driver or executor thread of some timer.
    static TIMER_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Marks this thread, for its whole life, as a timer's driver or executor thread.
pub(crate) fn mark_timer_thread() {
    TIMER_THREAD.with(|t| t.set(true));
}

/// Whether this thread is any timer's driver or executor thread, or inside any timer's advance:
/// a shutdown or drop called here must not wait for another timer's driver, which may be waiting
/// for this thread (two timers shutting each other down from their tasks).
pub(crate) fn on_timer_thread() -> bool {
    TIMER_THREAD.with(Cell::get) || ADVANCING.with(Cell::get) != 0
}

/// This thread's number in a timer's `advancer`.
fn this_thread() -> u64 {
    thread_index() as u64 + 1
}

/// Whether this thread is inside the advance of the timer whose `advancer` this is, innermost or
/// further up its stack.
pub(crate) fn is_advancing(advancer: &UnmodelledAtomicU64) -> bool {
    advancer.load(Ordering::Relaxed) == this_thread()
}

/// Marks this thread as advancing the timer whose `advancer` it holds, until dropped (also by
/// unwinding). Made only while holding that timer's `advance_lock`.
pub(crate) struct Advancing<'a>(&'a UnmodelledAtomicU64);

impl<'a> Advancing<'a> {
    pub(crate) fn enter(advancer: &'a UnmodelledAtomicU64) -> Advancing<'a> {
        advancer.store(this_thread(), Ordering::Relaxed);
        ADVANCING.with(|advancing| advancing.set(advancing.get() + 1));
        Advancing(advancer)
    }
}

impl Drop for Advancing<'_> {
    fn drop(&mut self) {
        ADVANCING.with(|advancing| advancing.set(advancing.get() - 1));
        self.0.store(0, Ordering::Relaxed);
    }
}
