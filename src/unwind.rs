//! Panics from user code where no caller can take them: a task's panic payload, and closures the
//! timer drops on its own threads or in its drains.
//!
//! A caught panic's payload is a user value too, and its `Drop` may panic again: dropped where the
//! driver runs, that second panic would end the driver thread. [`drop_payload`] drops it inside a
//! second `catch_unwind` and forgets whatever that one catches (a payload that panics on drop once
//! may do it again). [`drop_caught`] drops any value that way, and [`wake_caught`] wakes a waker
//! that way: a waker is user code too (an executor's, or a hand-written one). [`FirstPanic`] runs
//! several callbacks whose caller must see a panic, but only after all of them ran.

use std::any::Any;
use std::mem;
use std::panic::{self, AssertUnwindSafe};
use std::task::Waker;

/// Drops `value`, catching a panic of its `Drop` (whose payload is dropped by [`drop_payload`]).
/// Returns whether the drop panicked.
pub(crate) fn drop_caught<T>(value: T) -> bool {
    match panic::catch_unwind(AssertUnwindSafe(move || drop(value))) {
        Ok(()) => false,
        Err(payload) => {
            drop_payload(payload);
            true
        }
    }
}

/// Wakes `waker`, catching a panic of the wake (its payload dropped by [`drop_payload`]). Returns
/// whether the wake panicked.
pub(crate) fn wake_caught(waker: Waker) -> bool {
    match panic::catch_unwind(AssertUnwindSafe(move || waker.wake())) {
        Ok(()) => false,
        Err(payload) => {
            drop_payload(payload);
            true
        }
    }
}

/// Runs callbacks one after another, each to the end whatever the others do: the first panic is
/// kept and resumed by [`resume`](FirstPanic::resume), the later ones' payloads dropped.
#[derive(Default)]
pub(crate) struct FirstPanic(Option<Box<dyn Any + Send>>);

impl FirstPanic {
    /// Runs `f`, catching its panic.
    pub(crate) fn run(&mut self, f: impl FnOnce()) {
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(f)) {
            match self.0 {
                None => self.0 = Some(payload),
                Some(_) => drop_payload(payload),
            }
        }
    }

    /// Resumes the first panic caught, if any.
    pub(crate) fn resume(self) {
        if let Some(payload) = self.0 {
            panic::resume_unwind(payload);
        }
    }
}

/// Drops a caught panic's payload; if that panics too, forgets the second payload.
pub(crate) fn drop_payload(payload: Box<dyn Any + Send>) {
    if let Err(again) = panic::catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        mem::forget(again);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Panics when dropped, with another `Bomb` as the payload.
    struct Bomb;

    impl Drop for Bomb {
        fn drop(&mut self) {
            panic::panic_any(Bomb);
        }
    }

    #[test]
    fn a_payload_that_panics_on_drop_is_contained() {
        let caught = panic::catch_unwind(|| panic::panic_any(Bomb));
        drop_payload(caught.unwrap_err());
        assert!(drop_caught(Bomb));
        assert!(!drop_caught(String::from("quiet")));
    }
}
