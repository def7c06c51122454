//! The futures waiting for the queue's head: the async counterpart of the condition variable.
//!
//! A future that drives a timer from a runtime (`driver/drive.rs`) cannot block in
//! [`wait_due`](super::DelayQueue::wait_due): it sleeps with the runtime's own timer until the head
//! is due, and must be woken when an **earlier** item becomes the head, exactly when the condition
//! variable is notified. Each such future keeps its [`Waker`] here, under its number, inside the
//! queue's state, so that one lock orders the registration and the head.
//!
//! ## The hand-shake
//!
//! * **watch** ([`DelayQueue::watch`](super::DelayQueue::watch)): under the queue's lock, read
//!   whether the queue is closed, read the head and the clock's tick, and, if the head is not due,
//!   register (or refresh) the watcher's waker **in the same critical section**; the future then
//!   sleeps until the head it read is due.
//! * **lower** (every push that makes an item the earliest, the `offer`s and `end_round`): under
//!   the same lock, push, and if the item is now the earliest, take every registered waker; wake
//!   them after the lock is released.
//! * **close** and **wake** (a manual clock moved, a spike to shrink): take them all, likewise.
//!
//! Either the lowering's critical section comes first, and the watch reads the lowered head, or
//! the watch's does, and the lowering finds its waker and wakes it. No schedule that lowers the
//! head is missed, nor a close (loom model `drive::earlier_schedule_racing_the_watch`, seeded fault
//! `drive_watch_after_head`: the waker registered in a second critical section after the head was
//! read). A waker taken is gone: the woken future watches again at its next poll. A watch that
//! finds the head due takes its own waker out, so that the advance it is about to run (whose
//! re-queues may lower the head) does not wake it for nothing.
//!
//! The wakers are woken outside the queue's lock, but the thread that lowers the head may be
//! inside a timer's call (a schedule offers its bucket): a waker must not poll the future in place
//! or block, which no runtime's waker does.

use std::task::Waker;

/// The wakers of the watching futures, by their number.
#[derive(Default)]
pub(crate) struct Watchers {
    wakers: Vec<(u64, Waker)>,
}

impl Watchers {
    /// Registers `waker` as watcher `id`'s, replacing its previous one unless it wakes the same
    /// task.
    #[cfg(feature = "async")]
    pub(crate) fn watch(&mut self, id: u64, waker: &Waker) {
        match self.wakers.iter_mut().find(|(watcher, _)| *watcher == id) {
            Some((_, kept)) if kept.will_wake(waker) => {}
            Some((_, kept)) => kept.clone_from(waker),
            None => self.wakers.push((id, waker.clone())),
        }
    }

    /// Takes watcher `id`'s waker out, if registered.
    #[cfg(feature = "async")]
    pub(crate) fn unwatch(&mut self, id: u64) -> Option<Waker> {
        let at = self.wakers.iter().position(|(watcher, _)| *watcher == id)?;
        Some(self.wakers.swap_remove(at).1)
    }

    /// Takes every waker out, to be woken once the queue's lock is released.
    pub(crate) fn take(&mut self) -> Woken {
        Woken(std::mem::take(&mut self.wakers))
    }
}

/// Wakers taken out of [`Watchers`]: [`wake`](Woken::wake) them with the queue's lock released.
#[must_use = "the watchers must be woken"]
#[derive(Default)]
pub(crate) struct Woken(Vec<(u64, Waker)>);

impl Woken {
    /// Adds `other`'s wakers to these.
    pub(crate) fn join(&mut self, other: Woken) {
        self.0.extend(other.0);
    }

    /// Wakes them all; a wake that panics is caught (the thread may be inside a schedule), and the
    /// others are woken all the same.
    pub(crate) fn wake(self) {
        for (_, waker) in self.0 {
            crate::unwind::wake_caught(waker);
        }
    }
}
