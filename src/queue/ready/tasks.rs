//! The consumers that are tasks: a poll of `poll_expired` or of a `next_expired` future, which
//! registers its waker when nothing has expired (the parent module's docs, "Waiting, and the queue
//! becoming empty"), and the drop of such a future, which takes its registration out.

use std::mem;
use std::task::{Context, Poll};

use super::super::bare::Purged;
use super::super::Expired;
use super::Ready;
use crate::sync::{fence, Ordering};

impl<T> Ready<T> {
    /// The oldest expired value; `Ready(None)` if nothing is pending or expired; otherwise
    /// `Pending`, with the task's waker registered: under `registration` (a `next_expired`
    /// future's, 0 before its first registration, which this sets), or with `None` (a bare
    /// `poll_expired`) once per task, purging the kept ones at their limit (`bare.rs`).
    pub(in crate::queue) fn poll_pop(
        &self,
        cx: &mut Context<'_>,
        registration: Option<&mut u64>,
    ) -> Poll<Option<Expired<T>>> {
        let mut taking = self.taking.lock();
        let mut arrived = match self.look(&mut taking) {
            Ok(expired) => {
                self.taken(taking, 1);
                return Poll::Ready(Some(expired));
            }
            Err(arrived) => arrived,
        };
        if arrived.closed || self.len.get() == 0 {
            return Poll::Ready(None);
        }
        // A task (or a future) that polls again before it was woken is registered once: its
        // registration stays counted in `waiting` until a wake takes its waker, and only the read
        // is repeated (with the waker of this poll: a waker it replaces is dropped after the locks
        // are released, as its task's last reference may run code that takes them).
        let registered = match &registration {
            // A future not registered yet (0) has no entry.
            Some(registration) => arrived
                .futures
                .get_mut(*registration)
                .map(|kept| (!kept.will_wake(cx.waker())).then(|| mem::replace(kept, cx.waker().clone()))),
            None => arrived.bare.holds(cx.waker()).then_some(None),
        };
        if let Some(replaced) = registered {
            fence(Ordering::SeqCst);
            let polled = if self.len.get() == 0 { Poll::Ready(None) } else { Poll::Pending };
            drop((arrived, taking));
            drop(replaced);
            return polled;
        }
        // A future's number is taken only once it is registered: one that found the queue empty
        // holds none, and its drop has nothing to take out.
        let id = registration.as_ref().map_or(0, |_| arrived.registrations + 1);
        // A bare poll may purge the kept tasks first (`bare.rs`): a wake that takes their
        // registrations, woken once the locks are released.
        let purged = match registration {
            Some(_) => Purged::default(),
            None => arrived.bare.make_room(cx.waker()),
        };
        self.waiting.fetch_sub(purged.wakers.len(), Ordering::Relaxed);
        let polled = if purged.took() && fault!("queue_purge_registers_unfenced") {
            // Seeded fault `queue_purge_registers_unfenced` (docs/loom.md): the purging task is
            // kept without the fence and the count read; a remove emptying the queue can miss it.
            self.waiting.fetch_add(1, Ordering::Relaxed);
            arrived.bare.push(cx.waker().clone());
            Poll::Pending
        } else if self.register(&mut arrived, Some((id, cx.waker()))) {
            if let Some(registration) = registration {
                arrived.registrations = id;
                *registration = id;
            }
            Poll::Pending
        } else {
            Poll::Ready(None)
        };
        drop((arrived, taking));
        purged.wake();
        polled
    }

    /// Takes a dropped `next_expired` future's registration out, if a wake has not taken it: a
    /// future cancelled while waiting (the loser of a `select!`) holds no waker, so no task's
    /// memory is kept by a queue that many such futures polled.
    pub(in crate::queue) fn unregister(&self, registration: u64) {
        let mut arrived = self.arrived.lock();
        if let Some(waker) = arrived.futures.remove(&registration) {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            // Seeded fault `queue_unregister_by_waker` (docs/loom.md): the drop takes out every
            // registration with the same waker, so another future of the same task, still
            // waiting, is never woken.
            let mut others = Vec::new();
            if fault!("queue_unregister_by_waker") {
                let before = arrived.futures.len();
                arrived.futures.retain(|_, other| {
                    let same = other.will_wake(&waker);
                    if same {
                        others.push(other.clone());
                    }
                    !same
                });
                self.waiting.fetch_sub(before - arrived.futures.len(), Ordering::Relaxed);
            }
            drop(arrived);
            drop((waker, others));
        }
    }
}
