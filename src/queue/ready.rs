//! The expired values of a [`DelayQueue`](super::DelayQueue), waiting for consumers, and the
//! consumers waiting for them.
//!
//! One lock guards the list (first in, first out: the order the timer expired the values in), the
//! number of threads blocked in `recv_timeout` and the wakers of tasks waiting in `poll_expired`.
//! The timer appends each fired batch under it and never waits for anything else: the list is unbounded, so
//! a slow consumer never holds up the timer.
//!
//! **No lost wake-up.** A consumer checks the list and the queue's count of values (pending plus
//! expired) under the lock and, finding the list empty but the count not zero, registers (a waker,
//! or a waiting thread) before it releases the lock. Whoever makes that state change appends to the
//! list, or (when the count reaches zero) calls [`Ready::wake_all`], both under the same lock: so the
//! change happens either before the consumer's check, which then sees it, or after its
//! registration, which the change then wakes. Every registered consumer is woken each time.

use std::collections::VecDeque;
use std::task::Waker;
#[cfg(feature = "async")]
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::Expired;
use crate::sync::{AtomicUsize, Condvar, Mutex, MutexGuard, Ordering};

struct State<T> {
    values: VecDeque<Expired<T>>,
    /// Threads blocked in `recv_timeout`.
    waiting_threads: usize,
    /// Tasks waiting in `poll_expired` (each task once: see `register`).
    wakers: Vec<Waker>,
    /// The timer shut down: no value expires any more, so a consumer finding none waits no more.
    closed: bool,
}

/// See the module docs.
pub(super) struct Ready<T> {
    state: Mutex<State<T>>,
    available: Condvar,
}

/// What a consumer found: a value, nothing to wait for (no value pending or expired), or nothing
/// yet.
enum Found<T> {
    Value(Expired<T>),
    Empty,
    NotYet,
}

impl<T> Ready<T> {
    pub(super) fn new() -> Self {
        Ready {
            state: Mutex::new(State {
                values: VecDeque::new(),
                waiting_threads: 0,
                wakers: Vec::new(),
                closed: false,
            }),
            available: Condvar::new(),
        }
    }

    /// Appends a batch of expired values, in order, under one lock, and wakes every waiting
    /// consumer once.
    pub(super) fn push_all(&self, expired: impl Iterator<Item = Expired<T>>) {
        let mut state = self.state.lock();
        state.values.extend(expired);
        Self::wake(state, &self.available);
    }

    /// The timer shut down: consumers take what expired and then wait no more; wakes every
    /// waiting consumer.
    pub(super) fn close(&self) {
        let mut state = self.state.lock();
        state.closed = true;
        Self::wake(state, &self.available);
    }

    /// Wakes every waiting consumer, so that each looks again (the queue has become empty).
    pub(super) fn wake_all(&self) {
        Self::wake(self.state.lock(), &self.available);
    }

    fn wake(mut state: MutexGuard<'_, State<T>>, available: &Condvar) {
        if state.waiting_threads == 0 && state.wakers.is_empty() {
            return;
        }
        let threads = state.waiting_threads != 0;
        let wakers = std::mem::take(&mut state.wakers);
        drop(state);
        if threads {
            available.notify_all();
        }
        wakers.into_iter().for_each(Waker::wake);
    }

    /// Takes the oldest expired value, if any. `len` counts it out (see [`count_out`]).
    pub(super) fn try_pop(&self, len: &AtomicUsize) -> Option<Expired<T>> {
        let popped = self.state.lock().values.pop_front();
        if popped.is_some() {
            count_out(len, self);
        }
        popped
    }

    fn find(state: &mut State<T>, len: &AtomicUsize) -> Found<T> {
        match state.values.pop_front() {
            Some(expired) => Found::Value(expired),
            None if state.closed || len.load(Ordering::Acquire) == 0 => Found::Empty,
            None => Found::NotYet,
        }
    }

    /// Takes the oldest expired value, waiting up to `timeout` for one; `None` at once if nothing
    /// is pending or expired (and as soon as that becomes so while waiting).
    pub(super) fn pop_timeout(&self, len: &AtomicUsize, timeout: Duration) -> Option<Expired<T>> {
        // A timeout too long for an `Instant` waits without end.
        let give_up = Instant::now().checked_add(timeout);
        let mut state = self.state.lock();
        loop {
            match Self::find(&mut state, len) {
                Found::Value(expired) => {
                    drop(state);
                    count_out(len, self);
                    return Some(expired);
                }
                Found::Empty => return None,
                Found::NotYet => {}
            }
            let left = match give_up {
                Some(give_up) => give_up.saturating_duration_since(Instant::now()),
                None => Duration::MAX,
            };
            if left.is_zero() {
                return None;
            }
            state.waiting_threads += 1;
            if give_up.is_some() {
                self.available.wait_for(&mut state, left);
            } else {
                self.available.wait(&mut state);
            }
            state.waiting_threads -= 1;
        }
    }

    /// The oldest expired value; `Ready(None)` if nothing is pending or expired; otherwise
    /// `Pending`, with the task's waker registered.
    #[cfg(feature = "async")]
    pub(super) fn poll_pop(&self, len: &AtomicUsize, cx: &mut Context<'_>) -> Poll<Option<Expired<T>>> {
        let mut state = self.state.lock();
        match Self::find(&mut state, len) {
            Found::Value(expired) => {
                drop(state);
                count_out(len, self);
                Poll::Ready(Some(expired))
            }
            Found::Empty => Poll::Ready(None),
            Found::NotYet => {
                // A task that polls again before it was woken is registered once.
                if !state.wakers.iter().any(|waker| waker.will_wake(cx.waker())) {
                    state.wakers.push(cx.waker().clone());
                }
                Poll::Pending
            }
        }
    }
}

/// Counts one value out of the queue's `len` (taken by a consumer, removed, or refused), and when
/// that leaves the queue empty wakes every waiting consumer so that each returns `None`. Called
/// with no lock held.
pub(super) fn count_out<T>(len: &AtomicUsize, ready: &Ready<T>) {
    if len.fetch_sub(1, Ordering::AcqRel) == 1 {
        ready.wake_all();
    }
}
