//! [`Timer::drive`]: the driver as a future, run by an async runtime on its own workers instead of
//! on a thread of the timer's.
//!
//! ## Why
//!
//! A sleep's wake-up from the driver thread needs two threads scheduled, the driver and then the
//! runtime's worker, and the woken task queues in the runtime's global queue, behind whatever was
//! spawned from outside; a runtime's own timer fires on a worker, which queues the woken tasks in
//! its local queue (docs/benchmarks.md, "Concurrent sleeps"). Run as a task of the runtime, the
//! driver fires on a worker too: the wakes of the timer's sleeps come from inside the runtime.
//!
//! ## The loop
//!
//! Each poll: [watch](crate::delay_queue::DelayQueue::watch) the delay queue (under its lock: is it
//! closed, is the head due, and if neither register this future's waker and read the head; the
//! hand-shake with the schedules that lower the head is in `delay_queue/watchers.rs`); if the head
//! is due, run an `advance` (non-blocking, bounded work, the thread driver's) and the driver's
//! automatic shrink (`timer/shrink.rs`), then watch again: a tick begun during the advance is
//! taken by the next one in the same poll, up to `ADVANCES_PER_POLL`; still due after those
//! (a chain of zero delays), wake this task and yield, so that one poll does bounded work. A
//! yield queues the future behind the runtime's queues, which under a burst of tasks spawned from
//! outside the runtime hold all of them: yielding after every advance left the drive future, and
//! the wakes of a late tick, tens to hundreds of milliseconds behind (docs/benchmarks.md,
//! "Concurrent sleeps"). If nothing is due, sleep
//! with the runtime's sleep until the tick the head is due at begins (on the system clock) or the
//! next automatic shrink may come, whichever is first, keeping that sleep across polls while
//! its deadline is no later than wanted. Closed, it completes.
//!
//! Any number of these futures and threads may drive one timer: their advances are serialised by
//! the timer's advance lock, as `advance_clock` calls are, and each is woken when the head is
//! lowered. On a manual clock it does not sleep with the runtime: a listener on the clock wakes it
//! on every advance (as it wakes the driver thread), and under loom (which runs no runtime) the
//! models poll it by hand.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use crate::delay_queue::Watched;
use crate::sync::Arc;
use crate::timer::{Shared, Timer};

impl Timer {
    /// A future that drives this timer from an async runtime: spawn it, and the timer advances
    /// on the runtime's workers, with `sleep_until` (the runtime's sleep to an [`Instant`]) to wait
    /// for the next due tick, instead of on a driver thread of its own.
    ///
    /// Build the timer with [`manual()`](crate::TimerBuilder::manual) (no driver thread) on the
    /// system clock, and spawn the future on the runtime whose tasks await the timer's sleeps: the
    /// wake-ups of the sleeps then come from a worker, as the runtime's own timer's do. The
    /// library stays runtime-agnostic: any runtime's sleep works (tokio's `sleep_until`,
    /// `smol::Timer::at`, ...); its output is ignored.
    ///
    /// * **Time**: never early; at most one tick late plus the runtime sleep's own lateness
    ///   (tokio's rounds up to its millisecond) and the runtime's scheduling of this task. It
    ///   sleeps until the tick at which the earliest bucket is due begins, and is woken early
    ///   when a schedule or a reset makes an earlier bucket the earliest.
    /// * **Where tasks run**: inside this future's poll, on the runtime's worker, as they would
    ///   on the driver thread: callbacks ([`schedule`](Timer::schedule)) must be short and must
    ///   not block the worker. One poll runs at most four advances (each does bounded work);
    ///   more due work yields first. The automatic shrink after a spike runs here too, in a lull (it holds the poll
    ///   about 20 ms after a million tasks: [`Timer::shrink`]).
    /// * **End**: it completes when the timer shuts down ([`shutdown`](Timer::shutdown), or
    ///   the drop of the [`Timer`]); it keeps the timer's shared state alive until then, not the
    ///   timer running.
    /// * **Dropped** before that: the timer stops advancing (nothing fires) until another drive
    ///   future, [`advance_clock`](Timer::advance_clock) or a driver thread advances it; nothing
    ///   is lost, what came due meanwhile runs at that next advance.
    /// * **Several at once**, or beside a driver thread: correct, pointless; advances are
    ///   serialised by the timer's advance lock (one waits, blocking its worker, while the other's
    ///   runs).
    /// * **Manual clock**: it advances whenever the [`ManualClock`](crate::ManualClock) moves
    ///   (the clock wakes it), and never calls `sleep_until`; the automatic shrink then comes
    ///   only after advances.
    ///
    /// The future is `Send` when `F` and `S` are, and always `Unpin` (the runtime's sleep is kept
    /// boxed).
    ///
    /// ```
    /// use delaywheel::Timer;
    /// use std::time::{Duration, Instant};
    ///
    /// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
    /// # async fn main() {
    /// let timer = Timer::builder().manual().build(); // no driver thread
    /// let driver = tokio::spawn(timer.drive(|at: Instant| tokio::time::sleep_until(at.into())));
    /// let start = Instant::now();
    /// timer.sleep(Duration::from_millis(20)).await; // woken on a worker, by the drive future
    /// assert!(start.elapsed() >= Duration::from_millis(20));
    /// drop(timer); // shuts it down: the drive future completes
    /// driver.await.unwrap();
    /// # }
    /// ```
    pub fn drive<F, S>(&self, sleep_until: F) -> Drive<F, S>
    where
        F: FnMut(Instant) -> S,
        S: Future,
    {
        Drive::new(Arc::clone(self.shared_state()), sleep_until)
    }
}

/// The future of [`Timer::drive`]: advances its timer whenever a bucket is due, until the timer
/// shuts down.
#[must_use = "a drive future does nothing unless polled (spawn it)"]
pub struct Drive<F, S> {
    shared: Arc<Shared>,
    /// Its number among the delay queue's watchers.
    id: u64,
    sleep_until: F,
    /// The runtime's sleep under way, and its deadline.
    sleeping: Option<(Instant, Pin<Box<S>>)>,
    /// On a manual clock: the listener that wakes it when the clock moves.
    #[cfg(not(delaywheel_loom))]
    listener: Option<super::ClockListener>,
    ended: bool,
}

/// How many advances one poll may run while work is due (each does bounded work): see the module
/// docs.
const ADVANCES_PER_POLL: u32 = 4;

// The sleep is boxed and `sleep_until` is never pinned: moving a `Drive` moves neither.
impl<F, S> Unpin for Drive<F, S> {}

impl<F, S> Drive<F, S>
where
    F: FnMut(Instant) -> S,
    S: Future,
{
    fn new(shared: Arc<Shared>, sleep_until: F) -> Self {
        // Not a loom atomic: the number orders nothing (as a timer's identity, `Shared::new_id`).
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        #[cfg(not(delaywheel_loom))]
        let listener = super::ClockListener::wake_on_advance(&shared);
        // The first spike wakes it, so that its waits are bounded by the shrink's from then on.
        #[cfg(not(delaywheel_loom))]
        Shared::wake_driver_at_spikes(&shared);
        Drive {
            shared,
            id,
            sleep_until,
            sleeping: None,
            #[cfg(not(delaywheel_loom))]
            listener,
            ended: false,
        }
    }

    /// When to look again with nothing due, head `head` (`None`: only when woken): the start of
    /// the head's tick, or when the next automatic shrink may come, whichever is first
    /// (`timer/shrink.rs`). On a manual clock, only when woken: the clock wakes the future when it
    /// moves, and the shrink comes after advances.
    fn wake_at(&self, head: Option<u64>) -> Option<Instant> {
        let time = self.shared.time();
        if time.clock.is_manual() {
            return None;
        }
        let due = head.and_then(|tick| time.clock.tick_instant(time.ticks, tick));
        let shrink = self.shared.shrink_wait().and_then(|wait| Instant::now().checked_add(wait));
        due.into_iter().chain(shrink).min()
    }

    fn end(&mut self) {
        self.ended = true;
        self.sleeping = None;
        #[cfg(not(delaywheel_loom))]
        drop(self.listener.take());
    }
}

impl<F, S> Future for Drive<F, S>
where
    F: FnMut(Instant) -> S,
    S: Future,
{
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        if this.ended {
            return Poll::Ready(());
        }
        let (mut advances, mut slept) = (0, false);
        loop {
            let shared = &*this.shared;
            match shared.queue().watch(this.id, cx.waker(), shared.time()) {
                Watched::Closed => {
                    this.end();
                    return Poll::Ready(());
                }
                Watched::Due if advances < ADVANCES_PER_POLL => {
                    this.sleeping = None;
                    shared.advance();
                    shared.shrink_if_spent();
                    advances += 1;
                }
                // Still due after as many advances (work each left to the next, a chain of zero
                // delays): yield, so that one poll does bounded work.
                Watched::Due => {
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                Watched::Waiting(head) => {
                    let Some(at) = this.wake_at(head) else {
                        this.sleeping = None;
                        return Poll::Pending;
                    };
                    // A sleep ending no later than wanted is kept: waking early only looks again.
                    if !this.sleeping.as_ref().is_some_and(|(due, _)| *due <= at) {
                        this.sleeping = Some((at, Box::pin((this.sleep_until)(at))));
                    }
                    let Some((_, sleep)) = this.sleeping.as_mut() else { unreachable!("set above") };
                    if sleep.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    this.sleeping = None;
                    shared.shrink_if_spent();
                    // A second sleep over in one poll (one that ends before its deadline, or a
                    // clock behind `Instant`): yield rather than spin.
                    if slept {
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                    slept = true;
                }
            }
        }
    }
}

impl<F, S> Drop for Drive<F, S> {
    fn drop(&mut self) {
        self.shared.queue().unwatch(self.id);
    }
}

impl<F, S> fmt::Debug for Drive<F, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Drive")
            .field("sleeping_until", &self.sleeping.as_ref().map(|(at, _)| at))
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}
