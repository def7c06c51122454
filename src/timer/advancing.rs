//! Which timer this thread is advancing: how a task that calls back into its own timer is detected.
//!
//! Tasks run inside `advance_clock` (on the driver, or on the caller's thread) while that thread
//! holds the timer's `advance_lock`. A task that calls `advance_clock` or `shutdown` on the same
//! timer must not wait for that lock: the timer checks this thread's mark first (`advance.rs`,
//! `mod.rs`). The mark is a thread-local holding the advancing timer's identity (`Shared::id`), set
//! for the duration of an advance by [`Advancing`] and restored on drop, also when a task unwinds,
//! so a task of one timer may still advance another.

use std::cell::Cell;

// Through the facade: under loom, model threads may share one OS thread, so a std thread-local
// would leak one model thread's mark into another.
crate::sync::thread_local! {
    /// The timer this thread is advancing, or 0.
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

/// Whether this thread is inside the advance of the timer identified by `timer`.
pub(crate) fn is_advancing(timer: usize) -> bool {
    ADVANCING.with(Cell::get) == timer
}

/// Marks this thread as advancing `timer` until dropped (also by unwinding); restores the previous
/// mark.
pub(crate) struct Advancing(usize);

impl Advancing {
    pub(crate) fn enter(timer: usize) -> Advancing {
        Advancing(ADVANCING.with(|a| a.replace(timer)))
    }
}

impl Drop for Advancing {
    fn drop(&mut self) {
        ADVANCING.with(|a| a.set(self.0));
    }
}
