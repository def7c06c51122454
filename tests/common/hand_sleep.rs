//! A runtime's sleep made by hand, for the tests of `Timer::drive` (tests/async_drive.rs) and its
//! loom models (loom_tests/drive.rs, which include this file by path): pending until
//! [`HandSleep::fire`], which wakes the waker it was last polled with, on the calling thread, as a
//! runtime's timer does. Its lock is std's under loom too: observation, not part of the timer.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// Pending until fired; clones share one sleep.
#[derive(Clone, Default)]
pub struct HandSleep(Arc<Mutex<(bool, Option<Waker>)>>);

impl HandSleep {
    /// Completes the sleep and wakes the waker of its last poll (it must have been polled); fired
    /// again, wakes that waker again, as a runtime may wake a waker twice.
    pub fn fire(&self) {
        let waker = {
            let mut state = self.0.lock().unwrap();
            state.0 = true;
            state.1.clone()
        };
        waker.expect("the sleep was polled before it fired").wake();
    }

    /// Makes the sleep pending again, as a fresh one, forgetting the waker of its last poll.
    pub fn rearm(&self) {
        *self.0.lock().unwrap() = (false, None);
    }
}

impl Future for HandSleep {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.0.lock().unwrap();
        if state.0 {
            return Poll::Ready(());
        }
        state.1 = Some(cx.waker().clone());
        Poll::Pending
    }
}
