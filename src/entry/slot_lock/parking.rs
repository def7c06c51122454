//! Sleeping until an unlock: parking_lot_core, keyed by the word's address (`loom_parking.rs`
//! has the model loom explores).

use parking_lot_core::{DEFAULT_PARK_TOKEN, DEFAULT_UNPARK_TOKEN};

use crate::sync::AtomicU64;

/// parking_lot_core's brief spinning (a few `spin_loop` hints, then `yield`s) before parking.
pub(super) type Spin = parking_lot_core::SpinWait;

/// parking_lot_core keeps the queues (keyed by address): a lock needs nothing of its own.
#[derive(Default)]
pub(super) struct Queue;

/// The parking key of a lock: its word's address (a word we own, as parking_lot_core requires).
fn key(word: &AtomicU64) -> usize {
    word as *const AtomicU64 as usize
}

/// Parks the thread on `word`'s lock if `validate` (run under the queue lock) holds, until an
/// [`unpark_one`] of the same lock wakes it.
///
/// # Safety
///
/// `validate` must not panic or call into parking_lot (parking_lot_core's contract).
pub(super) unsafe fn park(word: &AtomicU64, _queue: &Queue, validate: impl FnOnce() -> bool) {
    // SAFETY: the key is the address of a lock word we own, which lives while a thread parks on
    // it (the parker borrows its lock); `validate` keeps the contract, by this function's; the
    // `before_sleep` and `timed_out` callbacks do nothing.
    unsafe { parking_lot_core::park(key(word), validate, || {}, |_, _| {}, DEFAULT_PARK_TOKEN, None) };
}

/// Wakes one thread parked on `word`'s lock, if any, and calls `callback` under the queue lock
/// with whether threads remain parked on it.
///
/// # Safety
///
/// `callback` must not panic or call into parking_lot (parking_lot_core's contract).
pub(super) unsafe fn unpark_one(word: &AtomicU64, _queue: &Queue, callback: impl FnOnce(bool)) {
    // SAFETY: the key as in `park`; `callback` keeps the contract, by this function's.
    unsafe {
        parking_lot_core::unpark_one(key(word), |result| {
            callback(result.have_more_threads);
            DEFAULT_UNPARK_TOKEN
        })
    };
}
