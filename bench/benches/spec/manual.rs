//! The timers of `systems.rs` driven by hand on a virtual clock, for the criterion benches
//! (`benches/timer.rs`, `benches/scaling.rs`): no driver thread or runtime task runs beside the
//! bench, so only the operation is timed, nothing fires until the bench moves the clock, and a whole
//! expiry is one timed call on the bench's thread. Each timer keeps the form `systems.rs` measures
//! (same structure, same lock, same API), only its clock and its driver change:
//!
//! * [`ManualDelayWheel`]: `Timer::builder().clock(ManualClock).manual().build()` (default tick 1 ms
//!   and wheel size, no driver thread); advancing = `ManualClock::advance` then one
//!   `advance_clock(0)`, which flushes every due bucket and runs the due tasks on the calling thread.
//! * [`ManualTokio`]: the [`SharedDelayQueue`] of `systems.rs` (tokio-util's `DelayQueue` of boxed
//!   closures behind a std `Mutex`), on a current-thread runtime whose clock is paused
//!   (`start_paused`; needs tokio's `test-util`). The bench thread holds the runtime context
//!   ([`Manual::context`]) while it inserts, as a task on the runtime would. Advancing =
//!   `block_on` of `tokio::time::advance(d)` (whose yield lets the time driver fire the queue's
//!   `Sleep`) and then the polling loop of `systems.rs` ([`poll_expired_task`]) until nothing is due,
//!   yielding to the runtime whenever tokio's cooperative budget runs out, as a task polling it does.
//! * [`ManualHeap`]: [`HeapCore`] (the `BinaryHeap` + parking_lot `Mutex` of the heap peer) on a
//!   virtual nanosecond clock; advancing = [`HeapCore::advance`] (pop what is due in batches, fire
//!   outside the lock).
//! * [`ManualHhwt`]: hierarchical_hash_wheel_timer's `ManualTimer`: the same `TimerRef` handle, message
//!   channel and wheel core (four 256-slot byte wheels of 1 ms, overflow list) as its thread timer in
//!   `systems.rs`, advanced by the caller instead of its thread. Schedule and cancel only send a
//!   message; [`Manual::apply`] (`advance_by(0)`) makes the timer apply every queued message, as its
//!   thread would, and the benches count it in the operation's time.

use std::future::poll_fn;
use std::sync::OnceLock;
use std::task::Poll;
use std::time::Duration;

use crate::heap::{HeapCore, HeapSlot};
use crate::systems::{hhwt_schedule, lock_queue, poll_expired_task, HhwtRef, SharedDelayQueue};
use delaywheel::{ManualClock, Timer, TimerHandle};
use hierarchical_hash_wheel_timer::manual_timer::ManualTimer;
use hierarchical_hash_wheel_timer::{OneShotClosureState, PeriodicClosureState};

/// One timer on a virtual clock, as the criterion benches see it.
pub trait Manual: Sized + 'static {
    /// The name in the bench ids (the one `systems.rs` prints on the SPEC lines).
    const NAME: &'static str;
    /// What `schedule` returns and `cancel` takes.
    type Handle;
    /// What the bench thread holds while it uses timers of this kind (tokio: the runtime context).
    type Context;

    /// Enters what the timer needs on this thread; hold it around a whole benchmark.
    fn context() -> Self::Context;
    /// A fresh timer at virtual time 0, nothing pending.
    fn new() -> Self;
    /// Schedules `task`, `delay_ms` milliseconds from the virtual now.
    fn schedule<F>(&mut self, delay_ms: u64, task: F) -> Self::Handle
    where
        F: FnOnce() + Send + 'static;
    /// Makes every operation submitted so far take effect. Only hierarchical_hash_wheel_timer needs
    /// it: its schedule and cancel are messages to the timer.
    fn apply(&mut self) {}
    /// Cancels; `Some(won)` where the API tells whether the task will not run, `None` where it
    /// does not (hierarchical_hash_wheel_timer: its cancel is a message with no reply).
    fn cancel(&mut self, handle: &Self::Handle) -> Option<bool>;
    /// Re-arms the pending timer `handle` names to `delay_ms` from the virtual now, in place;
    /// `None` where the timer has no such operation (then a re-arm is a cancel and a schedule).
    #[allow(dead_code)] // only benches/timer.rs re-arms
    fn reset(&mut self, _handle: &Self::Handle, _delay_ms: u64) -> Option<bool> {
        None
    }
    /// Moves the virtual clock `ms` forward and runs every task due by then, on this thread.
    fn advance(&mut self, ms: u64);
    /// Drops what lazy cancellation left in the timer, as its own driving would eventually (the
    /// heap: a purge of cancelled entries; hierarchical_hash_wheel_timer: time passing over their
    /// slots, [`LAZY_HORIZON_MS`], which also fires every live timer due by then). No-op for timers
    /// that cancel eagerly.
    fn collect_garbage(&mut self) {}
    /// Entries held, lazily cancelled ones included; `None` where the API has no count.
    fn held(&self) -> Option<usize>;
}

/// How far hierarchical_hash_wheel_timer's clock is moved to sweep the slots of cancelled timers:
/// past the longest delay the benches that collect garbage use (SPEC W1's 70 s).
pub const LAZY_HORIZON_MS: u64 = 70_001;

// ------------------------------------------------------------------------------------------------

/// delaywheel on a `ManualClock`, no driver thread.
pub struct ManualDelayWheel {
    clock: ManualClock,
    timer: Timer,
}

impl Manual for ManualDelayWheel {
    const NAME: &'static str = "delaywheel";
    type Handle = TimerHandle;
    type Context = ();

    fn context() {}

    fn new() -> Self {
        let clock = ManualClock::new();
        let timer = Timer::builder().clock(clock.clone()).manual().build();
        ManualDelayWheel { clock, timer }
    }

    fn schedule<F>(&mut self, delay_ms: u64, task: F) -> TimerHandle
    where
        F: FnOnce() + Send + 'static,
    {
        self.timer.schedule(Duration::from_millis(delay_ms), task)
    }

    fn cancel(&mut self, handle: &TimerHandle) -> Option<bool> {
        Some(handle.cancel())
    }

    fn reset(&mut self, handle: &TimerHandle, delay_ms: u64) -> Option<bool> {
        Some(handle.reset(Duration::from_millis(delay_ms)))
    }

    fn advance(&mut self, ms: u64) {
        self.clock.advance(Duration::from_millis(ms));
        self.timer.advance_clock(Duration::ZERO);
    }

    fn held(&self) -> Option<usize> {
        Some(self.timer.len())
    }
}

// ------------------------------------------------------------------------------------------------

/// The paused current-thread runtime every [`ManualTokio`] runs on (its clock only moves when a
/// bench advances it; it never reaches the 10–70 s deadlines of the schedule benches by itself).
fn paused_runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("paused current-thread runtime")
    })
}

/// tokio-util's `DelayQueue`, shared as in `systems.rs`, on a paused runtime clock.
pub struct ManualTokio {
    queue: SharedDelayQueue,
}

impl Manual for ManualTokio {
    const NAME: &'static str = "tokio-delayqueue";
    type Handle = tokio_util::time::delay_queue::Key;
    type Context = tokio::runtime::EnterGuard<'static>;

    fn context() -> Self::Context {
        paused_runtime().enter()
    }

    fn new() -> Self {
        ManualTokio { queue: SharedDelayQueue::new(tokio_util::time::DelayQueue::new()) }
    }

    fn schedule<F>(&mut self, delay_ms: u64, task: F) -> Self::Handle
    where
        F: FnOnce() + Send + 'static,
    {
        lock_queue(&self.queue).insert(Box::new(task), Duration::from_millis(delay_ms))
    }

    fn cancel(&mut self, handle: &Self::Handle) -> Option<bool> {
        Some(lock_queue(&self.queue).try_remove(handle).is_some())
    }

    /// `DelayQueue::reset` (it panics on a key that is no longer in the queue: the benches re-arm
    /// only pending timers).
    fn reset(&mut self, handle: &Self::Handle, delay_ms: u64) -> Option<bool> {
        lock_queue(&self.queue).reset(handle, Duration::from_millis(delay_ms));
        Some(true)
    }

    fn advance(&mut self, ms: u64) {
        let queue = &self.queue;
        paused_runtime().block_on(async {
            tokio::time::advance(Duration::from_millis(ms)).await;
            loop {
                match poll_fn(|cx| Poll::Ready(poll_expired_task(queue, cx))).await {
                    Poll::Ready(Some(task)) => task(),
                    Poll::Ready(None) => return,
                    // Pending with budget left: nothing else is due.
                    Poll::Pending if tokio::task::coop::has_budget_remaining() => return,
                    // Pending because the task's budget is spent: tokio makes it yield first.
                    Poll::Pending => tokio::task::yield_now().await,
                }
            }
        });
    }

    fn held(&self) -> Option<usize> {
        Some(lock_queue(&self.queue).len())
    }
}

// ------------------------------------------------------------------------------------------------

/// [`HeapCore`] on a virtual nanosecond clock.
pub struct ManualHeap {
    core: HeapCore,
    now_ns: u64,
}

impl Manual for ManualHeap {
    const NAME: &'static str = "binaryheap-mutex";
    type Handle = std::sync::Arc<dyn HeapSlot>;
    type Context = ();

    fn context() {}

    fn new() -> Self {
        ManualHeap { core: HeapCore::default(), now_ns: 0 }
    }

    fn schedule<F>(&mut self, delay_ms: u64, task: F) -> Self::Handle
    where
        F: FnOnce() + Send + 'static,
    {
        self.core.insert(self.now_ns + delay_ms * 1_000_000, task)
    }

    fn cancel(&mut self, handle: &Self::Handle) -> Option<bool> {
        Some(handle.cancel())
    }

    fn advance(&mut self, ms: u64) {
        self.now_ns += ms * 1_000_000;
        self.core.advance(self.now_ns);
    }

    fn collect_garbage(&mut self) {
        self.core.purge_cancelled();
    }

    fn held(&self) -> Option<usize> {
        Some(self.core.len())
    }
}

// ------------------------------------------------------------------------------------------------

type HhwtManual = ManualTimer<u64, OneShotClosureState<u64>, PeriodicClosureState<u64>>;

/// hierarchical_hash_wheel_timer's `ManualTimer`, used through its `TimerRef` with `u64` ids.
pub struct ManualHhwt {
    timer: HhwtManual,
    handle: HhwtRef,
    next_id: u64,
}

impl Manual for ManualHhwt {
    const NAME: &'static str = "hierarchical_hash_wheel_timer";
    type Handle = u64;
    type Context = ();

    fn context() {}

    fn new() -> Self {
        let timer = HhwtManual::new();
        let handle = timer.timer_ref();
        ManualHhwt { timer, handle, next_id: 0 }
    }

    fn schedule<F>(&mut self, delay_ms: u64, task: F) -> u64
    where
        F: FnOnce() + Send + 'static,
    {
        let id = self.next_id;
        self.next_id += 1;
        hhwt_schedule(&mut self.handle, id, Duration::from_millis(delay_ms), task);
        id
    }

    fn apply(&mut self) {
        self.timer.advance_by(Duration::ZERO);
    }

    fn cancel(&mut self, id: &u64) -> Option<bool> {
        hierarchical_hash_wheel_timer::Timer::cancel(&mut self.handle, id);
        None
    }

    fn advance(&mut self, ms: u64) {
        self.timer.advance_by(Duration::from_millis(ms));
    }

    fn collect_garbage(&mut self) {
        self.timer.advance_by(Duration::from_millis(LAZY_HORIZON_MS));
    }

    fn held(&self) -> Option<usize> {
        None
    }
}
