//! A minimal thread-safe timer core, for measurement only: what a schedule + cancel pair costs in a
//! design other than delaywheel's (docs/lean_core.md).
//!
//! * **Shards**: `S` shards (the cores rounded up to a power of two, at least 8), each a
//!   [`ShardLock`] (parking_lot's `Mutex`, or a test-and-set lock whose waiters spin or back off
//!   to sleeps: `lock.rs`) over a [`wheel::Wheel`] (a slab of slots and a hierarchical wheel of
//!   list heads). A thread schedules into the shard of its index (taken from a process-wide counter
//!   at its first schedule) modulo `S`: uncontended while threads do not share one.
//! * **Schedule**: read the clock, lock the shard, pop a free slot (or grow the slab), write the
//!   deadline and the task (inline when it fits 16 bytes), link it at its bucket's head (tail with `LEAN_FIFO`), read the
//!   driver's wake-up tick, unlock; unpark the driver if the deadline is earlier than that.
//! * **Cancel**, from any thread: lock the key's shard, check the slot's generation, unlink, free,
//!   unlock; the task is dropped after the unlock. Exactly once with the fire by the shard lock.
//! * **Handles**: a [`Key`] (shard, slot, generation; `Copy`, no reference count) cancelled through
//!   the timer, as tokio-util's `DelayQueue` keys are; a [`Handle`], which holds its shard's
//!   `Arc` (one reference count up per schedule, one down per drop) and cancels by itself; or, on a
//!   timer whose shards come from the process-wide pool ([`Pool`]), a [`PoolHandle`] (the shard's
//!   `&'static` header, the timer's epoch, slot, generation; `Copy`) that cancels by itself with
//!   no reference count (`pool.rs` argues why that is sound).
//! * **Driver** (or [`LeanTimer::advance`] on a manual timer): locks each shard in turn, takes what
//!   is due (O(buckets reached + entries due)), unlocks, runs it; then publishes the earliest tick
//!   any shard needs and sleeps until it. It publishes "none" before it looks, so a schedule that
//!   comes after its look at the shard reads either that or the new tick, and wakes it if earlier.
//!
//! Options, each one of delaywheel's features, chosen when the crate is built (environment
//! variables read by `option_env!`, so that each costs nothing when off; docs/lean_core.md):
//!
//! * `LEAN_FIFO=1` ([`FIFO`]): equal deadlines fire in the order they were scheduled (on one
//!   thread; across threads by deadline to a 256th of the tick): entries appended at their bucket's
//!   tail, and a fired batch sorted by (deadline in 256ths of a tick, the shard's sequence) before
//!   it runs, all shards' due tasks in one batch.
//! * `LEAN_GEN64=1` ([`Generation`]): generations of 64 bits (a slot reused 2⁶⁴ times between a
//!   schedule and its cancel is out of reach), 32 otherwise; the slot stays 56 bytes, `Key` grows by 4 to
//!   16 bytes, [`PoolHandle`] by 8 to 32.
//! * `LEAN_LEN=store` or `LEAN_LEN=rmw` ([`LEN`]): [`LeanTimer::len`] read without locks, from a
//!   count per shard written under the shard's lock by a load and a store (`store`), or by
//!   `fetch_add` / `fetch_sub` (`rmw`).
//!
//! Left out (what delaywheel offers beyond it): tick fixed at 1 ms; FIFO among equal deadlines
//! and order within a tick unless `LEAN_FIFO`; an exact length without locks unless `LEAN_LEN`;
//! memory given back (the slab never shrinks while its timer lives); re-arm in place; async
//! futures, the value queue, lanes by thread, statistics, executor threads; without `LEAN_GEN64`
//! keys are only as safe as a 32-bit generation (a slot reused 2³² times between a schedule and
//! its cancel would cancel the wrong timeout); deadlines beyond about 2 years (2³⁶ − 2³⁰ ticks
//! after a shard's time, `wheel::MAX_DELAY_TICKS`) panic instead of returning an error.

mod lock;
mod options;
mod pool;
mod task;
pub mod wheel;

#[cfg(test)]
mod pool_tests;
#[cfg(test)]
mod tests;

use std::cell::Cell;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

pub use lock::{
    Backoff, Parked, ShardLock, Sleep, Spin, SpinGuard, TestAndSet, Wait, Yield, BACKOFF_CAP, BACKOFF_SLEEPS,
    BACKOFF_WAITS,
};
pub use options::{Generation, Len, Next, Width, FIFO, GEN64, LEN};
pub use pool::{Pool, PoolHandle, Pooled};
use task::Task;
use wheel::{Fired, Wheel};

const TICK_NS: u64 = 1_000_000;
const NEVER: u64 = u64::MAX;

/// One shard, on cache lines of its own: its lock over its wheel, and (with [`LEN`]) its count.
#[repr(align(128))]
pub struct Shard<L> {
    lock: L,
    count: AtomicUsize,
}

impl<L: ShardLock> Shard<L> {
    fn new() -> Shard<L> {
        Shard { lock: L::new(Wheel::default()), count: AtomicUsize::new(0) }
    }

    /// Adds `delta` (wrapping: `usize::MAX` is -1) to the count, the shard's lock held.
    #[inline(always)]
    fn count(&self, delta: usize) {
        match LEN {
            Len::Locked => {}
            Len::Store => {
                let count = self.count.load(Ordering::Relaxed);
                self.count.store(count.wrapping_add(delta), Ordering::Relaxed);
            }
            Len::Rmw => {
                self.count.fetch_add(delta, Ordering::Relaxed);
            }
        }
    }

    /// Takes the task of `(slot, generation)` out if it is pending (and, with `epoch`, if the
    /// shard's wheel is still of that epoch); drops it after the unlock. Whether it was pending.
    #[inline(always)]
    fn remove(&self, epoch: Option<u64>, slot: u32, generation: Generation) -> bool {
        let mut wheel = self.lock.lock();
        if epoch.is_some_and(|epoch| epoch != wheel.epoch) {
            return false;
        }
        let task = wheel.remove(slot, generation);
        if task.is_some() {
            self.count(usize::MAX);
        }
        drop(wheel);
        task.is_some()
    }
}

/// Where a timer's shards come from, and where they go when it is dropped.
pub trait Own<L: ShardLock>: Send + Sync + 'static {
    /// How the timer holds a shard.
    type Ref: Deref<Target = Shard<L>> + Send + Sync + 'static;
    fn take() -> Self::Ref;
    /// Called once per shard when the timer's core is dropped (its driver stopped).
    fn give_back(shard: &Self::Ref);
}

/// Shards of the timer's own, each in an `Arc` ([`Handle`]s hold one); freed with the timer.
pub struct Owned;

impl<L: ShardLock> Own<L> for Owned {
    type Ref = Arc<Shard<L>>;

    fn take() -> Arc<Shard<L>> {
        Arc::new(Shard::new())
    }

    fn give_back(_: &Arc<Shard<L>>) {}
}

/// What the timer and its driver share.
struct Core<L: ShardLock, O: Own<L>> {
    shards: Box<[O::Ref]>,
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
    generation: Generation,
}

/// A scheduled timeout holding its shard: cancels by itself, from any thread.
pub struct Handle<L: ShardLock = Parked> {
    shard: Arc<Shard<L>>,
    slot: u32,
    generation: Generation,
}

impl<L: ShardLock> Handle<L> {
    /// Whether the timeout was pending (then its task is dropped and never runs).
    #[inline]
    pub fn cancel(&self) -> bool {
        self.shard.remove(None, self.slot, self.generation)
    }
}

/// The minimal timer: [`LeanTimer::new`] with its own driver thread, or [`LeanTimer::manual`].
pub struct LeanTimer<L: ShardLock = Parked, O: Own<L> = Owned> {
    core: Arc<Core<L, O>>,
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

impl<L: ShardLock, O: Own<L>> Core<L, O> {
    fn new(origin: Option<Instant>, driver: Option<Thread>) -> Core<L, O> {
        Core {
            shards: (0..shard_count()).map(|_| O::take()).collect(),
            wake: AtomicU64::new(NEVER),
            origin,
            manual: AtomicU64::new(0),
            driver,
            stop: AtomicBool::new(false),
        }
    }

    /// The deadline tick of a delay from now (rounded up: never fires early), and with [`FIFO`]
    /// the 256th of that tick it falls in (0 to 255; 255 on a manual timer).
    #[inline(always)]
    fn deadline(&self, delay: Duration) -> (u64, u8) {
        let delay_ns =
            delay.as_secs().saturating_mul(1_000_000_000).saturating_add(u64::from(delay.subsec_nanos()));
        match self.origin {
            Some(origin) if FIFO => {
                let at_ns = (origin.elapsed().as_nanos() as u64).saturating_add(delay_ns);
                // 256ths of a tick, rounded up; `ceil(ceil(x) / 256) = ceil(x / 256)`.
                // Whole ticks and the rest apart, so that no product saturates (never early).
                let fine = at_ns / TICK_NS * 256 + (at_ns % TICK_NS * 256).div_ceil(TICK_NS);
                (fine.div_ceil(256), (fine.wrapping_sub(1) & 255) as u8)
            }
            Some(origin) => {
                let now_ns = origin.elapsed().as_nanos() as u64;
                (now_ns.saturating_add(delay_ns).saturating_add(TICK_NS - 1) / TICK_NS, 255)
            }
            None => (self.manual.load(Ordering::Relaxed).saturating_add(delay_ns.div_ceil(TICK_NS)), 255),
        }
    }

    /// (shard index, slot, generation, the shard's epoch).
    #[inline(always)]
    fn insert(&self, delay: Duration, task: Task) -> (usize, u32, Generation, u64) {
        let (deadline, sub) = self.deadline(delay);
        let index = thread_index() & (self.shards.len() - 1);
        let shard = &*self.shards[index];
        let mut wheel = shard.lock.lock();
        let (slot, generation) = wheel.insert(deadline, sub, task);
        shard.count(1);
        let epoch = wheel.epoch;
        let wake = self.wake.load(Ordering::Relaxed);
        drop(wheel);
        if deadline < wake {
            if let Some(driver) = &self.driver {
                driver.unpark();
            }
        }
        (index, slot, generation, epoch)
    }

    /// Advances every shard to `now`, runs what fell due (each shard's after its unlock; with
    /// [`FIFO`] all shards' together, in deadline order); the earliest tick a shard needs next.
    fn advance(&self, now: u64, fired: &mut Vec<Fired>) -> u64 {
        let mut next = NEVER;
        for shard in self.shards.iter() {
            let mut wheel = shard.lock.lock();
            let before = fired.len();
            wheel.advance(now, fired);
            shard.count(before.wrapping_sub(fired.len()));
            next = next.min(wheel.next_tick().unwrap_or(NEVER));
            drop(wheel);
            if !FIFO {
                fired.drain(..).for_each(|due| due.task.run());
            }
        }
        if FIFO {
            fired.sort_unstable_by_key(|due| (due.key, due.seq));
            fired.drain(..).for_each(|due| due.task.run());
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

impl<L: ShardLock, O: Own<L>> Drop for Core<L, O> {
    /// Its driver stopped (it held the core): each shard given back, the last first, so that the
    /// next timer to take as many gets them in the same order.
    fn drop(&mut self) {
        self.shards.iter().rev().for_each(O::give_back);
    }
}

impl<L: ShardLock, O: Own<L>> LeanTimer<L, O> {
    /// A timer of 1 ms ticks on the real clock, with its own driver thread.
    pub fn start() -> LeanTimer<L, O> {
        let origin = Instant::now();
        let (core_tx, core_rx) = std::sync::mpsc::channel::<Arc<Core<L, O>>>();
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
    pub fn start_manual() -> LeanTimer<L, O> {
        LeanTimer { core: Arc::new(Core::new(None, None)), driver: None }
    }

    /// Schedules `task` to run `delay` from now; its key.
    #[inline]
    pub fn schedule<F: FnOnce() + Send + 'static>(&self, delay: Duration, task: F) -> Key {
        let (shard, slot, generation, _) = self.core.insert(delay, Task::new(task));
        Key { shard: shard as u32, slot, generation }
    }

    /// Whether the timeout of `key` was pending (then its task is dropped and never runs). A key
    /// of another timer names nothing or another timeout.
    #[inline]
    pub fn cancel(&self, key: &Key) -> bool {
        let Some(shard) = self.core.shards.get(key.shard as usize) else { return false };
        shard.remove(None, key.slot, key.generation)
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
        self.core.shards[thread_index() & (self.core.shards.len() - 1)].lock.lock().reserve(slots);
    }

    /// Timeouts pending: summed over the shards one lock at a time, or with [`LEN`] over their
    /// counts without locks.
    pub fn len(&self) -> usize {
        match LEN {
            Len::Locked => self.core.shards.iter().map(|shard| shard.lock.lock().len()).sum(),
            _ => self
                .core
                .shards
                .iter()
                .fold(0usize, |sum, shard| sum.wrapping_add(shard.count.load(Ordering::Relaxed))),
        }
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

impl<L: ShardLock> LeanTimer<L, Owned> {
    /// Schedules `task` to run `delay` from now; a handle holding its shard.
    #[inline]
    pub fn schedule_handle<F: FnOnce() + Send + 'static>(&self, delay: Duration, task: F) -> Handle<L> {
        let (shard, slot, generation, _) = self.core.insert(delay, Task::new(task));
        Handle { shard: Arc::clone(&self.core.shards[shard]), slot, generation }
    }
}

impl<L: ShardLock, O: Own<L>> Drop for LeanTimer<L, O> {
    /// Stops the driver and waits for it; pending tasks are dropped with the shards (owned shards
    /// live on while an `Arc` handle holds one: its pending tasks with them, still cancellable).
    fn drop(&mut self) {
        if let Some(driver) = self.driver.take() {
            self.core.stop.store(true, Ordering::Release);
            driver.thread().unpark();
            let _ = driver.join();
        }
    }
}
