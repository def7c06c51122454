//! A future wrapper that records when its waker is first woken: the instant the timer handed the
//! sleep back to the runtime, which splits a sleep's lateness into the timer's part (deadline to
//! wake) and the runtime's (wake to poll). It works the same for any timer and any runtime.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

/// The instant of the first wake, shared by the wrapper and the wakers it hands out.
#[derive(Clone, Default)]
pub struct Woke(Arc<OnceLock<Instant>>);

impl Woke {
    pub fn get(&self) -> Option<Instant> {
        self.0.get().copied()
    }
}

/// A waker that stamps [`Woke`] then wakes the runtime's waker.
struct Tap {
    woke: Woke,
    inner: Waker,
}

impl Wake for Tap {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let _ = self.woke.0.set(Instant::now());
        self.inner.wake_by_ref();
    }
}

/// `F`, polled with a [`Tap`] around the runtime's waker.
pub struct Tapped<F> {
    inner: Pin<Box<F>>,
    woke: Woke,
    waker: Option<Waker>,
}

impl<F> Tapped<F> {
    pub fn new(inner: F) -> Self {
        Tapped { inner: Box::pin(inner), woke: Woke::default(), waker: None }
    }

    pub fn woke(&self) -> Woke {
        self.woke.clone()
    }
}

impl<F: Future> Future for Tapped<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let fresh = match &this.waker {
            Some(_) => None,
            None => Some(Waker::from(Arc::new(Tap { woke: this.woke.clone(), inner: cx.waker().clone() }))),
        };
        if let Some(waker) = fresh {
            this.waker = Some(waker);
        }
        let waker = this.waker.as_ref().expect("set above");
        this.inner.as_mut().poll(&mut Context::from_waker(waker))
    }
}
