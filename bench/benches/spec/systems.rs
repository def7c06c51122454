//! The timers under test, each behind one small interface and each driven the way its users drive it
//! (see the crate docs of `benches/spec.rs` for the why). The pieces of the tokio and
//! hierarchical_hash_wheel_timer peers that do not depend on who drives the clock (the shared queue
//! and how its expired tasks are polled; how a task is scheduled with an id) are public here: the
//! manually driven forms in `manual.rs` use them too.

use std::future::poll_fn;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::heap::{HeapCore, HeapSlot};
use crate::measure::{now_ns, FIRED};
use hierarchical_hash_wheel_timer::thread_timer::{TimerRef, TimerWithThread};
use hierarchical_hash_wheel_timer::{ClosureTimer, OneShotClosureState, PeriodicClosureState};
use tokio_util::time::DelayQueue;

/// One timer as the workloads see it.
///
/// `Local` is what a thread needs to use the timer (a runtime context, a channel sender, nothing);
/// `sync` waits until every operation this thread submitted has taken effect, for timers whose
/// schedule/cancel only enqueue a message to the timer's own thread.
pub trait System: Send + Sync + Sized + 'static {
    /// The name printed on the SPEC lines.
    const NAME: &'static str;
    /// Whether schedule/cancel only enqueue work for the timer's thread (then `sync` waits for it).
    const ASYNC: bool = false;
    /// What `schedule` returns and `cancel` takes.
    type Handle: Send + 'static;
    /// Per-thread state.
    type Local<'a>
    where
        Self: 'a;

    /// A fresh timer, its driver running.
    fn start() -> Self;
    fn local(&self) -> Self::Local<'_>;
    fn schedule<F>(&self, local: &mut Self::Local<'_>, delay: Duration, task: F) -> Self::Handle
    where
        F: FnOnce() + Send + 'static;
    /// Whether the cancel took effect, as far as the API tells at once.
    fn cancel(&self, local: &mut Self::Local<'_>, handle: &Self::Handle) -> bool;
    /// Re-arms the pending timeout behind `handle` to `delay` from now, as the system's users do:
    /// in place where the system has a re-arm; otherwise (this default) a cancel and a schedule of a
    /// new task made by `task`, its handle stored in `handle`. `handle` must still be pending (the
    /// workloads re-arm only timeouts that cannot have fired): a re-arm of one that is not panics.
    #[allow(dead_code)] // benches/broker.rs re-arms; spec.rs and the criterion benches do not
    fn rearm<F>(
        &self,
        local: &mut Self::Local<'_>,
        handle: &mut Self::Handle,
        delay: Duration,
        task: impl FnOnce() -> F,
    ) where
        F: FnOnce() + Send + 'static,
    {
        assert!(self.cancel(local, handle), "re-armed a timeout that was not pending");
        *handle = self.schedule(local, delay, task());
    }
    fn sync(&self, _local: &mut Self::Local<'_>) {}
    /// Timers the timer still holds (pending, or cancelled but not yet removed).
    fn pending(&self) -> usize;
    /// Stops the driver and waits for it; unfired tasks are dropped.
    fn shutdown(self);
}

// ------------------------------------------------------------------------------------------------
// delaywheel

/// `delaywheel::Timer` with its own driver thread, tick 1 ms, default wheel size (512).
pub struct DelayWheel(delaywheel::Timer);

impl System for DelayWheel {
    const NAME: &'static str = "delaywheel";
    type Handle = delaywheel::TimerHandle;
    type Local<'a> = ();

    fn start() -> Self {
        let mut builder = delaywheel::Timer::builder().tick(Duration::from_millis(1));
        // SPEC_WHEEL_SIZE: try another wheel size (the SPEC runs use the default).
        if let Some(size) = std::env::var("SPEC_WHEEL_SIZE").ok().and_then(|s| s.parse().ok()) {
            builder = builder.wheel_size(size);
        }
        // SPEC_CAPACITY: a timer warmed up for this many tasks (`TimerBuilder::capacity`).
        if let Some(tasks) = std::env::var("SPEC_CAPACITY").ok().and_then(|s| s.parse().ok()) {
            builder = builder.capacity(tasks);
        }
        // SPEC_LANES: lanes per bucket (`TimerBuilder::bucket_lanes`) instead of the host's default.
        if let Some(lanes) = std::env::var("SPEC_LANES").ok().and_then(|s| s.parse().ok()) {
            builder = builder.bucket_lanes(lanes);
        }
        DelayWheel(builder.build())
    }

    fn local(&self) {}

    fn schedule<F>(&self, _: &mut (), delay: Duration, task: F) -> Self::Handle
    where
        F: FnOnce() + Send + 'static,
    {
        self.0.schedule(delay, task)
    }

    fn cancel(&self, _: &mut (), handle: &Self::Handle) -> bool {
        handle.cancel()
    }

    /// `TimerHandle::reset`: the same handle and closure, the deadline moved (a `false` reset, of
    /// a timeout that fired or was cancelled, is a failed run: `handle` must be pending).
    fn rearm<F>(&self, _: &mut (), handle: &mut Self::Handle, delay: Duration, _: impl FnOnce() -> F)
    where
        F: FnOnce() + Send + 'static,
    {
        assert!(handle.reset(delay), "re-armed a timeout that was not pending");
    }

    fn pending(&self) -> usize {
        self.0.len()
    }

    fn shutdown(self) {
        drop(self.0.shutdown());
    }
}

// ------------------------------------------------------------------------------------------------
// tokio-util DelayQueue

/// What tokio-util's `DelayQueue` holds: one boxed closure per timer.
pub type BoxedTask = Box<dyn FnOnce() + Send + 'static>;

/// The `DelayQueue` as code that inserts and removes from several places shares it (see
/// [`TokioDelayQueue`]).
pub type SharedDelayQueue = std::sync::Mutex<DelayQueue<BoxedTask>>;

/// Locks the shared queue (a panicked holder does not poison the benches).
pub fn lock_queue(queue: &SharedDelayQueue) -> std::sync::MutexGuard<'_, DelayQueue<BoxedTask>> {
    queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One poll of the queue for its next expired task, as its polling task does it: `Ready(None)` when
/// the queue is empty, `Pending` when nothing is due yet (the waker is registered: the next insert
/// or the queue's own `Sleep` wakes it) or tokio's cooperative budget is spent.
pub fn poll_expired_task(queue: &SharedDelayQueue, cx: &mut Context<'_>) -> Poll<Option<BoxedTask>> {
    lock_queue(queue).poll_expired(cx).map(|expired| expired.map(|expired| expired.into_inner()))
}

/// tokio-util's `DelayQueue` shared as `Arc<std::sync::Mutex<DelayQueue<_>>>` by the inserting
/// threads and one runtime task that polls it and runs what expired; a default multi-thread runtime
/// (2 workers here). Inserting threads enter the runtime's context (`Handle::enter`), as code running
/// on the runtime is: `insert` arms a tokio `Sleep` and needs it.
pub struct TokioDelayQueue {
    runtime: tokio::runtime::Runtime,
    queue: Arc<SharedDelayQueue>,
}

impl TokioDelayQueue {
    fn queue(&self) -> std::sync::MutexGuard<'_, DelayQueue<BoxedTask>> {
        lock_queue(&self.queue)
    }
}

impl System for TokioDelayQueue {
    const NAME: &'static str = "tokio-delayqueue";
    type Handle = tokio_util::time::delay_queue::Key;
    type Local<'a> = tokio::runtime::EnterGuard<'a>;

    fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_time().build().expect("runtime");
        let queue = Arc::new(SharedDelayQueue::new(DelayQueue::new()));
        let polled = Arc::clone(&queue);
        runtime.spawn(async move {
            loop {
                let task = poll_fn(|cx| match poll_expired_task(&polled, cx) {
                    Poll::Ready(Some(task)) => Poll::Ready(task),
                    // Empty: the waker is registered, and the next insert wakes this task.
                    Poll::Ready(None) | Poll::Pending => Poll::Pending,
                })
                .await;
                task();
            }
        });
        TokioDelayQueue { runtime, queue }
    }

    fn local(&self) -> Self::Local<'_> {
        self.runtime.enter()
    }

    fn schedule<F>(&self, _: &mut Self::Local<'_>, delay: Duration, task: F) -> Self::Handle
    where
        F: FnOnce() + Send + 'static,
    {
        self.queue().insert(Box::new(task), delay)
    }

    fn cancel(&self, _: &mut Self::Local<'_>, handle: &Self::Handle) -> bool {
        self.queue().try_remove(handle).is_some()
    }

    /// `DelayQueue::reset` (it panics on a key that has expired: `handle` must be pending).
    fn rearm<F>(
        &self,
        _: &mut Self::Local<'_>,
        handle: &mut Self::Handle,
        delay: Duration,
        _: impl FnOnce() -> F,
    ) where
        F: FnOnce() + Send + 'static,
    {
        self.queue().reset(handle, delay);
    }

    fn pending(&self) -> usize {
        self.queue().len()
    }

    fn shutdown(self) {
        self.runtime.shutdown_timeout(Duration::from_secs(10));
    }
}

// ------------------------------------------------------------------------------------------------
// BinaryHeap + parking_lot Mutex + one driver thread

/// [`HeapCore`] (a `BinaryHeap` behind a parking_lot `Mutex`, lazy cancellation) with one driver
/// thread sleeping on its `Condvar` until the head is due.
pub struct HeapTimer {
    core: Arc<HeapCore>,
    driver: JoinHandle<()>,
}

impl System for HeapTimer {
    const NAME: &'static str = "binaryheap-mutex";
    type Handle = Arc<dyn HeapSlot>;
    type Local<'a> = ();

    fn start() -> Self {
        let core = Arc::new(HeapCore::default());
        let driven = Arc::clone(&core);
        let driver = std::thread::Builder::new()
            .name("heap-timer".into())
            .spawn(move || driven.drive(now_ns))
            .expect("spawn heap driver");
        HeapTimer { core, driver }
    }

    fn local(&self) {}

    fn schedule<F>(&self, _: &mut (), delay: Duration, task: F) -> Self::Handle
    where
        F: FnOnce() + Send + 'static,
    {
        let delay_ns = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
        self.core.insert(now_ns().saturating_add(delay_ns), task)
    }

    fn cancel(&self, _: &mut (), handle: &Self::Handle) -> bool {
        handle.cancel()
    }

    /// The heap's length: lazily cancelled entries are still held.
    fn pending(&self) -> usize {
        self.core.len()
    }

    fn shutdown(self) {
        self.core.shut_down();
        self.driver.join().expect("heap driver panicked");
    }
}

// ------------------------------------------------------------------------------------------------
// hierarchical_hash_wheel_timer

type HhwtCore = TimerWithThread<u64, OneShotClosureState<u64>, PeriodicClosureState<u64>>;
/// The handle its users schedule and cancel through; its `ManualTimer` hands out the same type.
pub type HhwtRef = TimerRef<u64, OneShotClosureState<u64>, PeriodicClosureState<u64>>;

/// Sends "schedule `task` as `id`, `delay` from now" to the timer behind `timer` (`u64` ids: the
/// cheapest for it to hash); the timer's driver applies it.
pub fn hhwt_schedule<F>(timer: &mut HhwtRef, id: u64, delay: Duration, task: F)
where
    F: FnOnce() + Send + 'static,
{
    timer.schedule_action_once(id, delay, move |_| task());
}

/// `hierarchical_hash_wheel_timer`'s `TimerWithThread` (its real-time timer: four 256-slot byte
/// wheels of 1 ms, its own thread), used through cloned `TimerRef`s: `schedule_action_once(id,
/// delay, closure)` and `cancel(&id)` send a message over its crossbeam channel, which its thread
/// applies. Ids are `u64`s (cheapest for it), unique per thread.
pub struct Hhwt {
    core: HhwtCore,
    threads: AtomicU64,
    scheduled: AtomicU64,
}

/// A thread's `TimerRef` and its id range.
pub struct HhwtLocal<'a> {
    timer: HhwtRef,
    next_id: u64,
    scheduled: u64,
    owner: &'a Hhwt,
}

impl Drop for HhwtLocal<'_> {
    fn drop(&mut self) {
        self.owner.scheduled.fetch_add(self.scheduled, Ordering::SeqCst);
    }
}

impl System for Hhwt {
    const NAME: &'static str = "hierarchical_hash_wheel_timer";
    const ASYNC: bool = true;
    type Handle = u64;
    type Local<'a> = HhwtLocal<'a>;

    fn start() -> Self {
        Hhwt {
            core: HhwtCore::new().expect("timer thread"),
            threads: AtomicU64::new(0),
            scheduled: AtomicU64::new(0),
        }
    }

    fn local(&self) -> HhwtLocal<'_> {
        let thread = self.threads.fetch_add(1, Ordering::Relaxed);
        HhwtLocal { timer: self.core.timer_ref(), next_id: thread << 40, scheduled: 0, owner: self }
    }

    fn schedule<F>(&self, local: &mut HhwtLocal<'_>, delay: Duration, task: F) -> u64
    where
        F: FnOnce() + Send + 'static,
    {
        let id = local.next_id;
        local.next_id += 1;
        local.scheduled += 1;
        hhwt_schedule(&mut local.timer, id, delay, task);
        id
    }

    fn cancel(&self, local: &mut HhwtLocal<'_>, id: &u64) -> bool {
        hierarchical_hash_wheel_timer::Timer::cancel(&mut local.timer, id);
        true // sent; the API reports nothing
    }

    /// Waits until the timer thread has applied every message this thread sent: a zero-delay action
    /// (run at once when applied, after everything sent before it on the FIFO channel) signals back.
    fn sync(&self, local: &mut HhwtLocal<'_>) {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let id = local.next_id | (1 << 63);
        local.next_id += 1;
        local.timer.schedule_action_once(id, Duration::ZERO, move |_| {
            let _ = tx.send(());
        });
        rx.recv_timeout(Duration::from_secs(600)).expect("hierarchical_hash_wheel_timer applied the marker");
    }

    /// Scheduled minus fired. Its `cancel` only removes the id from a hash map: the wheel keeps a
    /// `Weak` (and the `Rc` allocation it points to) for every cancelled entry until the wheel reaches
    /// that entry's slot, so cancelled entries are still held (lazy by the crate's design). Valid once
    /// every `Local` is dropped and the workload's tasks count into [`FIRED`].
    fn pending(&self) -> usize {
        let held = self.scheduled.load(Ordering::SeqCst).saturating_sub(FIRED.load(Ordering::SeqCst));
        usize::try_from(held).unwrap_or(usize::MAX)
    }

    fn shutdown(self) {
        if self.core.shutdown().is_err() {
            eprintln!("# hierarchical_hash_wheel_timer: timer thread did not shut down cleanly");
        }
    }
}
