//! What the benchmarks and their profiling examples share: the inner futures the async timeout
//! groups wrap (`benches/async_timeout.rs`, `examples/timeout_profile.rs`).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A future pending at its first poll (waking its task at once) and ready with 1 at the second:
/// the inner future of a timeout that has to arm its limit once and then cancels it.
#[derive(Debug, Default)]
pub struct PendingOnce(bool);

impl PendingOnce {
    /// A future not polled yet.
    pub fn new() -> PendingOnce {
        PendingOnce(false)
    }
}

impl Future for PendingOnce {
    type Output = u64;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u64> {
        if self.0 {
            return Poll::Ready(1);
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
