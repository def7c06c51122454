//! The model of parking_lot_core's contract that loom explores (see `slot_lock/`'s module
//! docs). Each lock has its own queue: parking_lot_core orders parking and unparking per key
//! (under its bucket's lock), and a queue shared by every lock would add orderings between
//! threads waiting on different slots that the real table does not promise, which could hide a
//! missing `Acquire` or `Release`.

use loom::sync::Mutex;
use loom::thread::{self, Thread};

use crate::sync::AtomicU64;

/// The threads parked on one lock, in parking order.
#[derive(Default)]
pub(super) struct Queue(Mutex<Vec<Thread>>);

/// No spinning: a contended locker parks at once.
#[derive(Default)]
pub(super) struct Spin;

impl Spin {
    pub(super) fn spin(&mut self) -> bool {
        false
    }
}

/// # Safety
///
/// As in the std build (nothing here relies on it).
pub(super) unsafe fn park(_word: &AtomicU64, queue: &Queue, validate: impl FnOnce() -> bool) {
    let me = thread::current();
    {
        let mut parked = queue.0.lock().unwrap();
        if !validate() {
            return;
        }
        parked.push(me.clone());
    }
    // Woken once an unpark took us out of the queue (a token left by any other unpark is
    // spurious: look again).
    loop {
        thread::park();
        if !queue.0.lock().unwrap().iter().any(|thread| thread.id() == me.id()) {
            return;
        }
    }
}

/// # Safety
///
/// As in the std build (nothing here relies on it).
pub(super) unsafe fn unpark_one(_word: &AtomicU64, queue: &Queue, callback: impl FnOnce(bool)) {
    let woken = {
        let mut parked = queue.0.lock().unwrap();
        let woken = (!parked.is_empty()).then(|| parked.remove(0));
        callback(woken.is_some() && !parked.is_empty());
        woken
    };
    if let Some(thread) = woken {
        thread.unpark();
    }
}
