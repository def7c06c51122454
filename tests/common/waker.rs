//! Wakers for polling futures by hand (feature `async`). No `Waker::noop`: the crate's minimum Rust
//! (1.75) does not have it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

/// A waker that counts its wake-ups.
#[derive(Default)]
pub struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl CountingWaker {
    /// A counter and a waker that counts on it.
    pub fn new() -> (Arc<CountingWaker>, Waker) {
        let counter = Arc::new(CountingWaker::default());
        let waker = Waker::from(Arc::clone(&counter));
        (counter, waker)
    }

    /// The wake-ups so far.
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A waker whose wake-ups nobody reads (the test polls by hand after each advance).
pub fn ignored_waker() -> Waker {
    CountingWaker::new().1
}

/// Polls `future` once with `waker`.
pub fn poll<F: Future>(future: Pin<&mut F>, waker: &Waker) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(waker))
}
