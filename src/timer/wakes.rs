//! The batched hand-off of wake-ups: a task that wakes a [`Waker`] while its batch fires (the
//! async `Sleep`'s task does) hands the waker to [`wake`], which keeps it until the batch has run,
//! and the firing thread then wakes every waker so kept together, in the order they were handed
//! over (deadline order, `fire.rs`), with no lock of the timer held.
//!
//! Why: a waker of an executor that lives on other threads (tokio's multi-thread runtime, say) is
//! woken from the driver thread, outside the executor: each wake pushes the task on the executor's
//! shared queue and, when its workers are parked, unparks one. Woken one at a time between the
//! tasks of the batch, each wake meets a worker the previous wake unparked, busy on that queue:
//! the driver blocks mid-batch, and the rest of the batch waits. Woken back to back after the
//! batch, the wakes land on the queue before a worker gets going. Measured on 100,000 concurrent
//! sleeps under a 2-worker tokio runtime (`bench/benches/sleeps.rs`, docs/benchmarks.md
//! "Concurrent sleeps"):
//! the driver blocks about once per tick instead of two to three times and uses a quarter to a
//! third less CPU, and the workers park half as often. The price is that the first sleeps of a
//! batch are woken after its last task ran, not as each runs: the median lateness is 0.05 ms
//! higher there.
//!
//! The promises do not change: a waker is never woken before the timer task that hands it over
//! ran, each handed-over waker is woken exactly once (also when a wake of the batch
//! panics, which is caught and counted as a panicked task), and outside a batch, on a thread that
//! is not firing (a cancel), [`wake`] wakes at once. A shutdown's drain opens a batch of its own:
//! the wakers its drops hand over are woken after the drain, once the stop has let go of the
//! advance lock (`stop.rs`). A batch opened inside another (a task of one timer advancing
//! another on the same thread) wakes its own wakers when it closes. While the thread's locals are
//! being destroyed, every wake is at once.
//!
//! The list an outermost batch keeps its wakers in is kept, emptied, for the thread's next batch
//! (up to [`ROOM_KEPT`] wakers of room): a thread that fires a batch every tick does not grow a
//! new list each time.
//!
//! What it asks of tasks: a timer task must not block waiting for an async task that a sleep of
//! its own tick wakes (that wake comes after the batch, so after the blocked task): the rustdoc of
//! `Timer::sleep` says so.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::task::Waker;

use crate::unwind::wake_caught;

crate::sync::thread_local! {
    /// The wakers handed over on this thread since its outermost open batch, or `None` outside
    /// any batch; with the room the next outermost batch keeps them in.
    static KEPT: RefCell<Kept> = const { RefCell::new(Kept { open: None, room: Vec::new() }) };
}

/// A thread's kept wakers ([`KEPT`]).
struct Kept {
    /// The wakers handed over since the outermost open batch, or `None` outside any batch.
    open: Option<Vec<Waker>>,
    /// An empty list with the room of an earlier outermost batch, which the next one keeps its
    /// wakers in: a thread that fires a batch every tick allocates its list once, not on every
    /// tick as it grows (up to [`ROOM_KEPT`] wakers of room; a larger list is freed).
    room: Vec<Waker>,
}

/// The most wakers' room (16 bytes each) a thread keeps between its batches: 16 KiB. A batch of
/// more wakers grows its list again, a few reallocations against as many wakes.
const ROOM_KEPT: usize = 1024;

/// Wakes `waker` once the batch this thread is firing has run, or at once outside a batch. Also
/// at once while the thread's locals are being destroyed (a timer held in a thread-local, shut
/// down as its thread exits, drops its pending sleeps' tasks then): the list is gone, and a panic
/// there would abort the process.
pub(crate) fn wake(waker: Waker) {
    let mut waker = Some(waker);
    // (`try_with` fails only once the list itself is destroyed: the waker is still here then.)
    let _ = KEPT.try_with(|kept| {
        if let Some(open) = kept.borrow_mut().open.as_mut() {
            open.extend(waker.take());
        }
    });
    if let Some(waker) = waker {
        waker.wake();
    }
}

/// An open batch on this thread: [`wake`] keeps its wakers until [`close`](Batch::close).
#[must_use = "a batch wakes its wakers when closed"]
pub(crate) struct Batch {
    /// How many wakers were kept when this batch opened (those belong to an outer batch), or
    /// `None` if this is the thread's outermost batch.
    outer: Option<usize>,
    /// Not closed yet.
    open: bool,
    /// It names this thread's list: it stays on this thread (`!Send`).
    _here: PhantomData<*const ()>,
}

impl Batch {
    /// Opens a batch on this thread. While the thread's locals are being destroyed there is no
    /// list: the batch keeps nothing and [`wake`] wakes at once.
    pub(crate) fn open() -> Batch {
        let outer = KEPT
            .try_with(|kept| {
                let kept = &mut *kept.borrow_mut();
                match kept.open.as_ref() {
                    Some(outer) => Some(outer.len()),
                    None => {
                        kept.open = Some(std::mem::take(&mut kept.room));
                        None
                    }
                }
            })
            .unwrap_or(None);
        Batch { outer, open: true, _here: PhantomData }
    }

    /// Wakes the wakers handed over since this batch opened, in that order; returns how many of
    /// those wakes panicked (each caught). A wake that hands over a waker itself (an executor
    /// whose wake fires another timer, say) has it kept by an outer batch, if any, else woken at
    /// once.
    pub(crate) fn close(mut self) -> u64 {
        let mut wakers = self.take();
        let panicked = wakers.drain(..).map(|waker| u64::from(wake_caught(waker))).sum();
        if self.outer.is_none() && wakers.capacity() <= ROOM_KEPT {
            // The emptied list is the room of the next outermost batch (`Kept::room`). (A wake
            // above may have opened and closed batches of its own, which left their room there.)
            let _ = KEPT.try_with(|kept| {
                let mut kept = kept.borrow_mut();
                if kept.room.capacity() < wakers.capacity() {
                    kept.room = wakers;
                }
            });
        }
        panicked
    }

    /// Closes the batch: the wakers it kept, taken out of the thread's list.
    fn take(&mut self) -> Vec<Waker> {
        self.open = false;
        KEPT.try_with(|kept| {
            let mut kept = kept.borrow_mut();
            match self.outer {
                Some(from) => kept.open.as_mut().map_or_else(Vec::new, |open| open.split_off(from)),
                None => kept.open.take().unwrap_or_default(),
            }
        })
        .unwrap_or_default()
    }
}

impl Drop for Batch {
    /// A batch left by unwinding (a bug: tasks' panics are caught) still wakes what it kept, so
    /// no handed-over waker is lost.
    fn drop(&mut self) {
        if self.open {
            for waker in self.take() {
                wake_caught(waker);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    /// Counts its wakes; records the order of wakes across wakers in `log`.
    struct Counting {
        id: usize,
        log: Arc<std::sync::Mutex<Vec<usize>>>,
        wakes: AtomicUsize,
    }

    impl Wake for Counting {
        fn wake(self: Arc<Self>) {
            self.wakes.fetch_add(1, Ordering::SeqCst);
            self.log.lock().unwrap().push(self.id);
        }
    }

    fn counting(id: usize, log: &Arc<std::sync::Mutex<Vec<usize>>>) -> Arc<Counting> {
        Arc::new(Counting { id, log: Arc::clone(log), wakes: AtomicUsize::new(0) })
    }

    #[test]
    fn outside_a_batch_a_wake_is_at_once() {
        let log = Arc::default();
        let w = counting(1, &log);
        wake(Waker::from(Arc::clone(&w)));
        assert_eq!(w.wakes.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_batch_wakes_its_wakers_once_each_when_closed_in_the_order_handed_over() {
        let log = Arc::default();
        let (a, b) = (counting(1, &log), counting(2, &log));
        let batch = Batch::open();
        wake(Waker::from(Arc::clone(&a)));
        wake(Waker::from(Arc::clone(&b)));
        assert_eq!(a.wakes.load(Ordering::SeqCst) + b.wakes.load(Ordering::SeqCst), 0);
        assert_eq!(batch.close(), 0);
        assert_eq!(*log.lock().unwrap(), [1, 2]);
        assert_eq!((a.wakes.load(Ordering::SeqCst), b.wakes.load(Ordering::SeqCst)), (1, 1));
        wake(Waker::from(Arc::clone(&a)));
        assert_eq!(a.wakes.load(Ordering::SeqCst), 2, "after the batch, wakes are at once again");
    }

    #[test]
    fn a_nested_batch_wakes_only_its_own_wakers() {
        let log = Arc::default();
        let (a, b) = (counting(1, &log), counting(2, &log));
        let outer = Batch::open();
        wake(Waker::from(Arc::clone(&a)));
        let inner = Batch::open();
        wake(Waker::from(Arc::clone(&b)));
        assert_eq!(inner.close(), 0);
        assert_eq!(*log.lock().unwrap(), [2]);
        assert_eq!(outer.close(), 0);
        assert_eq!(*log.lock().unwrap(), [2, 1]);
    }

    #[test]
    fn a_closed_batch_leaves_its_room_to_the_next_and_wakes_at_once_outside() {
        let log = Arc::default();
        let a = counting(1, &log);
        let batch = Batch::open();
        for _ in 0..10 {
            wake(Waker::from(Arc::clone(&a)));
        }
        assert_eq!(batch.close(), 0);
        let room = KEPT.with(|kept| kept.borrow().room.capacity());
        assert!(room >= 10, "the emptied list is kept: {room}");
        wake(Waker::from(Arc::clone(&a)));
        assert_eq!(a.wakes.load(Ordering::SeqCst), 11, "outside a batch, at once");
        let batch = Batch::open();
        assert_eq!(KEPT.with(|kept| kept.borrow().room.capacity()), 0, "taken by the batch");
        wake(Waker::from(Arc::clone(&a)));
        assert_eq!(a.wakes.load(Ordering::SeqCst), 11);
        assert_eq!(batch.close(), 0);
        assert_eq!(a.wakes.load(Ordering::SeqCst), 12);
    }

    struct Panicking;

    impl Wake for Panicking {
        fn wake(self: Arc<Self>) {
            panic!("a waker that panics");
        }
    }

    #[test]
    fn a_panicking_wake_is_counted_and_the_others_still_run() {
        let log = Arc::default();
        let a = counting(1, &log);
        let batch = Batch::open();
        wake(Waker::from(Arc::new(Panicking)));
        wake(Waker::from(Arc::clone(&a)));
        assert_eq!(batch.close(), 1);
        assert_eq!(a.wakes.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_batch_dropped_unclosed_still_wakes() {
        let log = Arc::default();
        let a = counting(1, &log);
        let batch = Batch::open();
        wake(Waker::from(Arc::clone(&a)));
        drop(batch);
        assert_eq!(a.wakes.load(Ordering::SeqCst), 1);
        wake(Waker::from(Arc::clone(&a)));
        assert_eq!(a.wakes.load(Ordering::SeqCst), 2);
    }
}
