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
//! outside the runtime hold all of them: yielding after every advance would leave the drive future,
//! and the wakes of a late tick, behind that whole burst (docs/benchmarks.md, "Concurrent sleeps",
//! measures sleeps on a timer this future drives under such a burst). If nothing is due, sleep
//! with the runtime's sleep until the tick the head is due at begins (on the system clock) or the
//! next automatic shrink may come, whichever is first, keeping that sleep across polls while
//! its deadline is no later than wanted; before that sleep, the entries due at the next tick are
//! read into the cache, as the driver thread does (`shard/core/warm.rs`). Closed, it completes.
//!
//! ## Where the advance runs: in the sleep's waker
//!
//! The runtime's sleep is polled with a waker of this module's (`TickWaker`), not the drive
//! future's: woken, it advances the timer itself if the advance lock is free (`try_lock`: a waker
//! never waits), then wakes the drive future, which takes what is left and sleeps again. So the
//! advance runs where the runtime's timer fires: tokio's, on a worker as it parks or between two
//! polls (every few dozen), where the wakes of that advance go to the worker's local queue and the
//! other workers are told once, after the batch, as for its own sleeps. From a task's poll (the
//! drive future's), each wake may unpark an idle worker, which on a busy host takes the CPU from
//! the waking worker at once (docs/benchmarks.md, "Concurrent sleeps", gives the workers' context
//! switches with the advance in the waker).
//!
//! That advance fires only the tasks that run no user code (`Shared::try_advance_wakes`): the
//! timer's sleeps, which hand their waker over, and a delay queue's values. The runtime's timer
//! fires inside its driver (tokio's, as a worker parks, holding the driver; smol's, holding its
//! reactor's lock), where user code that blocks holds up the whole runtime's I/O and timers, and
//! some calls cannot be made at all: tokio's `block_in_place` aborts the process there, smol's
//! `block_on` waits for the reactor its own thread holds. A due closure is put back, pending, for
//! the next round (under its shard's lock, by its payload's kind), and the drive future's poll,
//! woken right after, runs it (loom models `drive::sleep_waker_leaves_a_closure_racing_its_cancel`
//! and `..._racing_its_reset`). A closure taken beside a deadline passed within the tick under way
//! goes back into the next tick's bucket, so the advance carries the latest such deadline to the
//! next advance, and offers the queue an item due at once: the next poll then takes them by that
//! deadline and runs them at once, in deadline then scheduling order (`timer/advance.rs`,
//! "The drive waker's advance", which has the protocol; loom models
//! `drive::closures_taken_beside_a_passed_deadline_racing_*`).
//!
//! The hand-shake: each poll stores the drive future's waker in the tick waker (under its lock,
//! replacing it unless it wakes the same task) **before** it polls the sleep, so a firing after
//! that poll wakes the latest one. The tick waker wakes the drive future whatever its advance did:
//! an advance holding the lock may have read the clock before the tick came due, and then only the
//! drive future's poll (which waits for the lock) takes it. (The loom model
//! `drive::sleep_wake_racing_an_advance` races the waker's advance with another and checks the
//! task runs once; the wake despite a held lock matters when the tick came due by the passing of
//! time, which loom cannot drive: `tests/async_drive.rs` pins it, with the lock held by a task.)
//!
//! Any number of these futures and threads may drive one timer: their advances are serialised by
//! the timer's advance lock, as `advance_clock` calls are, and each is woken when the head is
//! lowered. On a manual clock it does not sleep with the runtime: a listener on the clock wakes it
//! on every advance (as it wakes the driver thread), and under loom (which runs no runtime) the
//! models poll it by hand.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

use crate::delay_queue::Watched;
use crate::sync::{Arc, Mutex};
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
    /// * **Where tasks run**: the timer's own sleeps, timeouts and intervals are woken, and a
    ///   delay queue's values expire, where the runtime's timer fires the sleep (the sleep's
    ///   waker advances the timer, if no other advance is under way: with tokio, on a worker as it
    ///   parks or between polls), or in this future's poll. Callbacks
    ///   ([`schedule`](Timer::schedule), repeating tasks, the purgatory's) never run in that
    ///   waker, where a callback that blocks would hold up every worker's I/O and timers (tokio's
    ///   `block_in_place` there aborts the process, and smol's `block_on` deadlocks its
    ///   reactor): they run in this future's poll, on a worker, as any task's code (or on the
    ///   executor threads of [`TaskExecution::Threads`](crate::TaskExecution::Threads), or in
    ///   whatever else advances the timer: [`advance_clock`](Timer::advance_clock), a driver
    ///   thread). A callback the sleep's waker finds due waits for the poll that the waker wakes,
    ///   so wake-ups and values of that advance may come before callbacks due earlier. Callbacks
    ///   should still be short: one that blocks holds this future, and every task due after it,
    ///   for that long (`block_in_place` lets tokio move the worker's other tasks).
    ///   One poll runs at most four advances (each does
    ///   bounded work); more due work yields first. The automatic shrink after a spike runs in
    ///   the poll, in a lull (it holds the poll about 20 ms after a million tasks:
    ///   [`Timer::shrink`]).
    /// * **End**: it completes when the timer shuts down ([`shutdown`](Timer::shutdown), or
    ///   the drop of the [`Timer`]); it keeps the timer's shared state alive until then, not the
    ///   timer running.
    /// * **Dropped** before that: the timer stops advancing (nothing fires) until another drive
    ///   future, [`advance_clock`](Timer::advance_clock) or a driver thread advances it (a
    ///   firing of its last sleep racing the drop may still advance it once); nothing is lost,
    ///   what came due meanwhile runs at that next advance.
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
    /// The waker the runtime's sleeps are polled with, made with the first of them.
    tick: Option<std::sync::Arc<TickWaker>>,
    /// The tick whose buckets it last warmed before a sleep (`shard/core/warm.rs`).
    warmed: Option<u64>,
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
        // Not a loom atomic: the number orders nothing (as a timer's identity, `TimerId::fresh`).
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
            tick: None,
            warmed: None,
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
                    this.warmed = shared.warm_next(this.warmed);
                    let Some(at) = this.wake_at(head) else {
                        this.sleeping = None;
                        return Poll::Pending;
                    };
                    // A sleep ending no later than wanted is kept: waking early only looks again.
                    if !this.sleeping.as_ref().is_some_and(|(due, _)| *due <= at) {
                        this.sleeping = Some((at, Box::pin((this.sleep_until)(at))));
                    }
                    let Some((_, sleep)) = this.sleeping.as_mut() else { unreachable!("set above") };
                    let tick = this.tick.get_or_insert_with(|| TickWaker::new(&this.shared));
                    tick.follow(cx.waker());
                    let tick = Waker::from(std::sync::Arc::clone(tick));
                    if sleep.as_mut().poll(&mut Context::from_waker(&tick)).is_pending() {
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

/// The waker of the runtime's sleep: it advances the timer where the runtime's timer fires the
/// sleep, if no other advance is under way, then wakes the drive future (which takes what is
/// left, and sleeps again). A runtime whose timer fires on a worker while it polls no task
/// (tokio's, as its worker parks or every few dozen polls) queues the wakes of that advance
/// locally and tells the other workers once, as it does its own timers' wakes; an advance in
/// the drive future's poll wakes them from inside a task, where each wake may unpark an idle
/// worker to steal it (docs/benchmarks.md, "Concurrent sleeps").
struct TickWaker {
    shared: Arc<Shared>,
    /// The drive future's waker, from its latest poll.
    task: Mutex<Option<Waker>>,
}

impl TickWaker {
    fn new(shared: &Arc<Shared>) -> std::sync::Arc<TickWaker> {
        std::sync::Arc::new(TickWaker { shared: Arc::clone(shared), task: Mutex::new(None) })
    }

    /// Keeps `waker` as the drive future's, unless it wakes the same task as the one kept.
    fn follow(&self, waker: &Waker) {
        let mut task = self.task.lock();
        if !task.as_ref().is_some_and(|kept| kept.will_wake(waker)) {
            *task = Some(waker.clone());
        }
    }
}

impl Wake for TickWaker {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        // The drive future is woken also when another advance held the lock: that advance may
        // have read the clock before the tick came due.
        self.shared.try_advance_wakes();
        let task = self.task.lock().clone();
        if let Some(task) = task {
            task.wake();
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
