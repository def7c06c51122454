//! A minimal thread-safe timer core, for measurement only: what a schedule + cancel pair costs in a
//! design other than delaywheel's (docs/design.md, "A leaner core, measured").
//!
//! * **Shards**: `S` shards (the cores rounded up to a power of two, at least 8), each a
//!   `parking_lot::Mutex` over a [`wheel::Wheel`] (a slab of slots and a hierarchical wheel of
//!   list heads). A thread schedules into the shard of its index (taken from a process-wide counter
//!   at its first schedule) modulo `S`: uncontended while threads do not share one.
//! * **Schedule**: read the clock, lock the shard, pop a free slot (or grow the slab), write the
//!   deadline and the task (inline when it fits 16 bytes), link it at its bucket's head, read the
//!   driver's wake-up tick, unlock; unpark the driver if the deadline is earlier than that.
//! * **Cancel**, from any thread: lock the key's shard, check the slot's generation, unlink, free,
//!   unlock; the task is dropped after the unlock. Exactly once with the fire by the shard lock.
//! * **Handles**: a [`Key`] (shard, slot, generation; `Copy`, no reference count) cancelled through
//!   the timer, as tokio-util's `DelayQueue` keys are; or a [`Handle`], which holds its shard's
//!   `Arc` (one reference count up per schedule, one down per drop) and cancels by itself.
//! * **Driver** (or [`LeanTimer::advance`] on a manual timer): locks each shard in turn, takes what
//!   is due (O(buckets reached + entries due)), unlocks, runs it; then publishes the earliest tick
//!   any shard needs and sleeps until it. It publishes "none" before it looks, so a schedule that
//!   comes after its look at the shard reads either that or the new tick, and wakes it if earlier.
//!
//! Left out (what delaywheel offers beyond it): tick fixed at 1 ms; FIFO among equal deadlines and
//! any order within a tick; an exact length across threads (`len` sums the shards one lock at a
//! time); memory given back (the slab never shrinks); re-arm in place; async futures, the value
//! queue, lanes by thread, statistics, executor threads; keys are only as safe as a 32-bit
//! generation (a slot reused 2³² times between a schedule and its cancel would cancel the wrong
//! timeout).

mod lock;
mod task;
pub mod wheel;

#[cfg(test)]
mod tests;

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

pub use lock::{Parked, ShardLock, Spin, SpinGuard};
use task::Task;
use wheel::Wheel;

const TICK_NS: u64 = 1_000_000;
const NEVER: u64 = u64::MAX;

/// One shard, on cache lines of its own.
#[repr(align(128))]
pub struct Shard<L>(L);

/// What the timer and its driver share.
struct Core<L> {
    shards: Box<[Arc<Shard<L>>]>,
    /// The tick the driver sleeps until (`NEVER`: no wake-up planned, or looking).
    wake: AtomicU64,
    /// `None`: a manual timer, whose time is `manual` (ticks).
    origin: Option<Instant>,
    manual: AtomicU64,
    driver: Option<Thread>,
    stop: AtomicBool,
}

/// A scheduled timeout, cancelled through [`LeanTimer::cancel`].
#[derive(Clone, Copy, Debug)]
pub struct Key {
    shard: u32,
    slot: u32,
    generation: u32,
}

/// A scheduled timeout holding its shard: cancels by itself, from any thread.
pub struct Handle<L: ShardLock = Parked> {
    shard: Arc<Shard<L>>,
    slot: u32,
    generation: u32,
}

impl<L: ShardLock> Handle<L> {
    /// Whether the timeout was pending (then its task is dropped and never runs).
    pub fn cancel(&self) -> bool {
        let task = self.shard.0.lock().remove(self.slot, self.generation);
        task.is_some()
    }
}

/// The minimal timer: [`LeanTimer::new`] with its own driver thread, or [`LeanTimer::manual`].
pub struct LeanTimer<L: ShardLock = Parked> {
    core: Arc<Core<L>>,
    driver: Option<JoinHandle<()>>,
}

static THREADS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static THREAD_INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
}

#[inline(always)]
fn thread_index() -> usize {
    THREAD_INDEX.with(|index| {
        if index.get() == usize::MAX {
            index.set(THREADS.fetch_add(1, Ordering::Relaxed));
        }
        index.get()
    })
}

fn shard_count() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).next_power_of_two().clamp(8, 64)
}

impl<L: ShardLock> Core<L> {
    fn new(origin: Option<Instant>, driver: Option<Thread>) -> Core<L> {
        Core {
            shards: (0..shard_count()).map(|_| Arc::new(Shard(L::new(Wheel::default())))).collect(),
            wake: AtomicU64::new(NEVER),
            origin,
            manual: AtomicU64::new(0),
            driver,
            stop: AtomicBool::new(false),
        }
    }

    /// The deadline tick of a delay from now (rounded up: never fires early).
    #[inline(always)]
    fn deadline(&self, delay: Duration) -> u64 {
        let delay_ns =
            delay.as_secs().saturating_mul(1_000_000_000).saturating_add(u64::from(delay.subsec_nanos()));
        match self.origin {
            Some(origin) => {
                let now_ns = origin.elapsed().as_nanos() as u64;
                now_ns.saturating_add(delay_ns).saturating_add(TICK_NS - 1) / TICK_NS
            }
            None => self.manual.load(Ordering::Relaxed).saturating_add(delay_ns.div_ceil(TICK_NS)),
        }
    }

    #[inline(always)]
    fn insert(&self, delay: Duration, task: Task) -> (usize, u32, u32) {
        let deadline = self.deadline(delay);
        let index = thread_index() & (self.shards.len() - 1);
        let mut wheel = self.shards[index].0.lock();
        let (slot, generation) = wheel.insert(deadline, task);
        let wake = self.wake.load(Ordering::Relaxed);
        drop(wheel);
        if deadline < wake {
            if let Some(driver) = &self.driver {
                driver.unpark();
            }
        }
        (index, slot, generation)
    }

    /// Advances every shard to `now`, runs what fell due; the earliest tick a shard needs next.
    fn advance(&self, now: u64, fired: &mut Vec<Task>) -> u64 {
        let mut next = NEVER;
        for shard in self.shards.iter() {
            let mut wheel = shard.0.lock();
            wheel.advance(now, fired);
            next = next.min(wheel.next_tick().unwrap_or(NEVER));
            drop(wheel);
            for task in fired.drain(..) {
                task.run();
            }
        }
        next
    }

    fn drive(&self, origin: Instant) {
        let mut fired = Vec::new();
        while !self.stop.load(Ordering::Acquire) {
            self.wake.store(NEVER, Ordering::SeqCst);
            let now = origin.elapsed().as_nanos() as u64 / TICK_NS;
            let next = self.advance(now, &mut fired);
            self.wake.store(next, Ordering::SeqCst);
            if next == NEVER {
                std::thread::park();
            } else {
                let at = Duration::from_nanos(next.saturating_mul(TICK_NS));
                std::thread::park_timeout(at.saturating_sub(origin.elapsed()));
            }
        }
    }
}

impl LeanTimer {
    /// A timer of 1 ms ticks on the real clock, with its own driver thread; parking_lot locks.
    pub fn new() -> LeanTimer {
        LeanTimer::start()
    }

    /// A manual timer (see [`LeanTimer::start_manual`]) with parking_lot locks.
    pub fn manual() -> LeanTimer {
        LeanTimer::start_manual()
    }
}

impl<L: ShardLock> LeanTimer<L> {
    /// A timer of 1 ms ticks on the real clock, with its own driver thread.
    pub fn start() -> LeanTimer<L> {
        let origin = Instant::now();
        let (core_tx, core_rx) = std::sync::mpsc::channel::<Arc<Core<L>>>();
        let driver = std::thread::Builder::new()
            .name("lean-timer".into())
            .spawn(move || {
                let core = core_rx.recv().expect("the timer's core");
                core.drive(origin);
            })
            .expect("spawn the lean timer's driver");
        let core = Arc::new(Core::new(Some(origin), Some(driver.thread().clone())));
        core_tx.send(Arc::clone(&core)).expect("the driver waits for its core");
        LeanTimer { core, driver: Some(driver) }
    }

    /// A timer whose time moves only by [`LeanTimer::advance`] (ticks of 1 ms from 0).
    pub fn start_manual() -> LeanTimer<L> {
        LeanTimer { core: Arc::new(Core::new(None, None)), driver: None }
    }

    /// Schedules `task` to run `delay` from now; its key.
    #[inline]
    pub fn schedule<F: FnOnce() + Send + 'static>(&self, delay: Duration, task: F) -> Key {
        let (shard, slot, generation) = self.core.insert(delay, Task::new(task));
        Key { shard: shard as u32, slot, generation }
    }

    /// Schedules `task` to run `delay` from now; a handle holding its shard.
    #[inline]
    pub fn schedule_handle<F: FnOnce() + Send + 'static>(&self, delay: Duration, task: F) -> Handle<L> {
        let (shard, slot, generation) = self.core.insert(delay, Task::new(task));
        Handle { shard: Arc::clone(&self.core.shards[shard]), slot, generation }
    }

    /// Whether the timeout of `key` was pending (then its task is dropped and never runs). A key
    /// of another timer names nothing or another timeout.
    #[inline]
    pub fn cancel(&self, key: &Key) -> bool {
        let Some(shard) = self.core.shards.get(key.shard as usize) else { return false };
        let task = shard.0.lock().remove(key.slot, key.generation);
        task.is_some()
    }

    /// Manual timers: moves the time to `now` ticks (never back) and runs every task due by it.
    pub fn advance(&self, now: u64) {
        assert!(self.core.origin.is_none(), "advance: a manual timer's");
        self.core.manual.fetch_max(now, Ordering::Relaxed);
        self.core.advance(now, &mut Vec::new());
    }

    /// Writes `slots` free slots into the calling thread's shard (their memory touched), so that
    /// its next `slots` schedules take no new memory.
    pub fn reserve_here(&self, slots: usize) {
        self.core.shards[thread_index() & (self.core.shards.len() - 1)].0.lock().reserve(slots);
    }

    /// Timeouts pending, summed over the shards one lock at a time.
    pub fn len(&self) -> usize {
        self.core.shards.iter().map(|shard| shard.0.lock().len()).sum()
    }

    /// Whether [`LeanTimer::len`] is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Default for LeanTimer {
    fn default() -> Self {
        LeanTimer::new()
    }
}

impl<L: ShardLock> Drop for LeanTimer<L> {
    /// Stops the driver and waits for it; pending tasks are dropped with the shards.
    fn drop(&mut self) {
        if let Some(driver) = self.driver.take() {
            self.core.stop.store(true, Ordering::Release);
            driver.thread().unpark();
            let _ = driver.join();
        }
    }
}
