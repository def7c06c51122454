//! EXPERIMENT (not the crate): a timing wheel whose entries live in a dense slab, addressed by
//! (shard, index, generation), instead of one `Arc<dyn TimerTaskEntry>` allocation per timer.
//! Safe Rust only (no `unsafe` anywhere in this file). See `docs/experiments/dense-entries.md`.
//!
//! What it keeps from delaywheel's semantics (the parts the W1/W2/W6 measurements depend on):
//! * deadline tick = ceil((clock read + delay) / tick), the clock being `Instant` (vDSO);
//! * a level-0 wheel (512 one-tick slots) and a level-1 wheel (512 slots of 512 ticks), plus one
//!   overflow list re-examined at the end of each level-1 window (so any u64 deadline has a place);
//! * buckets with an expiration that is only lowered by adds; a bucket is pushed into ONE shared
//!   delay queue (`Mutex<BinaryHeap>` + `Condvar`) when its expiration is set or lowered, and a
//!   popped queue entry whose key is not the bucket's expiration is stale (delaywheel's rule);
//! * O(1) unlink on cancel (intrusive doubly linked lists of u32 indices) that frees the slot, and
//!   drops the closure, before `cancel` returns; `len()` drops at once;
//! * `DenseHandle::cancel()` from any thread, `true` iff it won: the task is taken out of its slot
//!   (and the slot's generation bumped) under the shard lock, by exactly one of cancel / fire;
//! * tasks run on a driver thread, outside every lock.
//!
//! What differs (and why): entries cannot move between per-bucket slabs (a handle would lose them
//! on a cascade), so the unit of locking is a **shard**: its slab and its own 1 025 bucket heads
//! behind one `parking_lot::Mutex`. A scheduling thread always uses the same shard (assigned
//! round-robin on its first schedule), so two threads contend only if they share a shard. The
//! driver visits a bucket under its shard's lock. Not modelled: stages / chunked cascades (a visit
//! handles the whole bucket under the lock), shutdown-vs-schedule, max_pending, stats, executors.
//!
//! `T` is what a slot stores: `Box<dyn FnOnce() + Send>` for the type-erased prototype, or a
//! concrete type to model inline storage of the closure (which, type-erased, needs `unsafe`).

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// The type-erased task: what the public API's `FnOnce() + Send + 'static` becomes without unsafe.
pub type BoxedTask = Box<dyn FnOnce() + Send + 'static>;

/// What a slot stores and the driver runs. (A trait of our own rather than `FnOnce`, so that the
/// harness can store a named struct inline: stable Rust cannot implement `FnOnce` for a struct.)
pub trait Run: Send + 'static {
    fn run(self);
}

impl Run for BoxedTask {
    #[inline]
    fn run(self) {
        self()
    }
}

const WHEEL_BITS: u32 = 9;
const WHEEL: u64 = 1 << WHEEL_BITS;
const MASK: u64 = WHEEL - 1;
const L1_SPAN_BITS: u32 = 2 * WHEEL_BITS;
const L1_BASE: u16 = WHEEL as u16;
const OVERFLOW: u16 = 2 * WHEEL as u16;
const BUCKETS: usize = 2 * WHEEL as usize + 1;
const NIL: u32 = u32::MAX;
const NO_EXPIRATION: u64 = u64::MAX;

/// One timer's slot. 24 bytes of header + the task: 40 bytes with a `Box<dyn FnOnce>` (16-byte fat
/// pointer, `None` by niche), plus the box's own heap block.
pub struct Slot<T> {
    /// Deadline tick (needed to re-place the entry when its level-1 bucket cascades).
    deadline: u64,
    /// Neighbours in the bucket's list, or, for a free slot, `next` is the free list.
    prev: u32,
    next: u32,
    /// Bumped each time the slot is freed: a handle names (index, generation).
    gen: u32,
    /// The bucket holding the entry (0..512 level 0, 512..1024 level 1, 1024 overflow).
    bucket: u16,
    /// `Some` iff the timer is pending.
    task: Option<T>,
}

#[derive(Clone, Copy)]
struct Bucket {
    head: u32,
    expiration: u64,
}

/// A shard's state: its slab, free list and bucket lists.
struct Wheel<T> {
    slots: Vec<Slot<T>>,
    free: u32,
    len: usize,
    buckets: Box<[Bucket]>,
}

/// One shard: one lock over a slab and a full set of bucket lists.
pub struct Shard<T> {
    id: u32,
    wheel: Mutex<Wheel<T>>,
}

/// Where a deadline goes relative to `base`: bucket and the bucket's expiration (delaywheel's
/// `place_pow2` restricted to two levels; an already due deadline goes to the level-0 slot of its
/// deadline, whose expiration is then in the past, so the next advance fires it).
#[inline]
fn place(base: u64, deadline: u64) -> (u16, u64) {
    if deadline <= base || deadline - base < WHEEL {
        return ((deadline & MASK) as u16, deadline);
    }
    let window = base >> WHEEL_BITS << WHEEL_BITS;
    if deadline - window < 1 << L1_SPAN_BITS {
        let round = deadline >> WHEEL_BITS;
        return (L1_BASE + (round & MASK) as u16, round << WHEEL_BITS);
    }
    // Beyond level 1: revisit when level 1's window ends, and re-place then.
    let window1 = base >> L1_SPAN_BITS << L1_SPAN_BITS;
    (OVERFLOW, window1.saturating_add(1 << L1_SPAN_BITS))
}

impl<T> Wheel<T> {
    fn new() -> Self {
        Wheel {
            slots: Vec::new(),
            free: NIL,
            len: 0,
            buckets: vec![Bucket { head: NIL, expiration: NO_EXPIRATION }; BUCKETS].into_boxed_slice(),
        }
    }

    /// A free slot's index (from the free list, else a new one), holding `task`.
    #[inline]
    fn alloc(&mut self, deadline: u64, task: T) -> Option<(u32, u32)> {
        let idx = self.free;
        if idx != NIL {
            let slot = &mut self.slots[idx as usize];
            self.free = slot.next;
            slot.deadline = deadline;
            slot.task = Some(task);
            return Some((idx, slot.gen));
        }
        let idx = u32::try_from(self.slots.len()).ok().filter(|&i| i != NIL)?;
        self.slots.push(Slot { deadline, prev: NIL, next: NIL, gen: 0, bucket: 0, task: Some(task) });
        Some((idx, 0))
    }

    /// Links slot `idx` at the head of `bucket`; returns the expiration to queue the bucket at if
    /// this lowered it.
    #[inline]
    fn link(&mut self, idx: u32, bucket: u16, expiration: u64) -> Option<u64> {
        let b = &mut self.buckets[bucket as usize];
        let old_head = b.head;
        b.head = idx;
        let lowered = expiration < b.expiration;
        if lowered {
            b.expiration = expiration;
        }
        if old_head != NIL {
            self.slots[old_head as usize].prev = idx;
        }
        let slot = &mut self.slots[idx as usize];
        slot.prev = NIL;
        slot.next = old_head;
        slot.bucket = bucket;
        lowered.then_some(expiration)
    }

    #[inline]
    fn unlink(&mut self, idx: u32) {
        let (prev, next, bucket) = {
            let s = &self.slots[idx as usize];
            (s.prev, s.next, s.bucket)
        };
        if prev == NIL {
            self.buckets[bucket as usize].head = next;
        } else {
            self.slots[prev as usize].next = next;
        }
        if next != NIL {
            self.slots[next as usize].prev = prev;
        }
    }

    /// Takes the task of an unlinked slot and puts the slot on the free list.
    #[inline]
    fn release(&mut self, idx: u32) -> Option<T> {
        let free = self.free;
        let slot = &mut self.slots[idx as usize];
        let task = slot.task.take();
        slot.gen = slot.gen.wrapping_add(1);
        slot.next = free;
        self.free = idx;
        self.len -= 1;
        task
    }
}

/// The caller's side of a scheduled task: cancel from any thread. 16 bytes.
pub struct DenseHandle<T> {
    shard: Arc<Shard<T>>,
    idx: u32,
    gen: u32,
}

impl<T> DenseHandle<T> {
    /// `true` iff this call cancelled a pending task; its closure is dropped before this returns
    /// and its slot is free.
    pub fn cancel(&self) -> bool {
        let mut wheel = self.shard.wheel.lock();
        let Some(slot) = wheel.slots.get(self.idx as usize) else { return false };
        if slot.gen != self.gen || slot.task.is_none() {
            return false;
        }
        wheel.unlink(self.idx);
        let task = wheel.release(self.idx);
        drop(wheel);
        drop(task);
        true
    }
}

struct Queue {
    heap: BinaryHeap<Reverse<(u64, u32, u16)>>,
    shut_down: bool,
}

struct Inner<T> {
    origin: Instant,
    tick_ns: u64,
    shards: Box<[Arc<Shard<T>>]>,
    queue: Mutex<Queue>,
    wake: Condvar,
}

/// The prototype timer: `shards` shards (rounded up to a power of two), a driver thread.
pub struct DenseTimer<T: Run> {
    inner: Arc<Inner<T>>,
    driver: Option<JoinHandle<()>>,
}

static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);
thread_local! {
    static SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// This thread's shard number (any timer maps it modulo its shard count).
#[inline]
fn thread_shard() -> usize {
    SHARD.with(|s| {
        let v = s.get();
        if v != usize::MAX {
            return v;
        }
        let v = NEXT_SHARD.fetch_add(1, Ordering::Relaxed);
        s.set(v);
        v
    })
}

#[inline]
fn duration_nanos(d: Duration) -> Option<u64> {
    d.as_secs().checked_mul(1_000_000_000)?.checked_add(u64::from(d.subsec_nanos()))
}

impl<T: Run> DenseTimer<T> {
    pub fn new(tick: Duration, shards: usize) -> Self {
        let tick_ns = duration_nanos(tick).filter(|&n| n >= 1_000).expect("tick >= 1 us");
        let shards = (0..shards.max(1).next_power_of_two())
            .map(|id| Arc::new(Shard { id: id as u32, wheel: Mutex::new(Wheel::new()) }))
            .collect();
        let inner = Arc::new(Inner {
            origin: Instant::now(),
            tick_ns,
            shards,
            queue: Mutex::new(Queue { heap: BinaryHeap::new(), shut_down: false }),
            wake: Condvar::new(),
        });
        let driven = Arc::clone(&inner);
        let driver = std::thread::Builder::new()
            .name("dense-driver".into())
            .spawn(move || driven.drive())
            .expect("spawn driver");
        DenseTimer { inner, driver: Some(driver) }
    }

    /// Schedules `task` `delay` from now; `None` if the deadline is not representable or the
    /// shard's slab is full (2^32 - 1 slots).
    #[inline]
    pub fn schedule(&self, delay: Duration, task: T) -> Option<DenseHandle<T>> {
        let inner = &*self.inner;
        let now = inner.now_ns();
        let deadline_ns = now.checked_add(duration_nanos(delay)?)?;
        let deadline = deadline_ns.div_ceil(inner.tick_ns);
        if deadline == NO_EXPIRATION {
            return None;
        }
        let base = now / inner.tick_ns;
        let shard = &inner.shards[thread_shard() & (inner.shards.len() - 1)];
        let (bucket, expiration) = place(base, deadline);
        let mut wheel = shard.wheel.lock();
        let (idx, gen) = wheel.alloc(deadline, task)?;
        wheel.len += 1;
        let queue = wheel.link(idx, bucket, expiration);
        drop(wheel);
        if let Some(at) = queue {
            inner.offer(at, shard.id, bucket);
        }
        Some(DenseHandle { shard: Arc::clone(shard), idx, gen })
    }

    /// The clock read of `schedule` alone (for the harness's floors).
    pub fn now_ns(&self) -> u64 {
        self.inner.now_ns()
    }

    /// Pending timers (sum over the shards).
    pub fn len(&self) -> usize {
        self.inner.shards.iter().map(|s| s.wheel.lock().len).sum()
    }

    /// Stops the driver and drops every unfired task (outside the locks).
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.inner.queue.lock().shut_down = true;
        self.inner.wake.notify_all();
        if let Some(driver) = self.driver.take() {
            let _ = driver.join();
        }
        for shard in self.inner.shards.iter() {
            let tasks: Vec<T> = {
                let mut wheel = shard.wheel.lock();
                let live: Vec<u32> = (0..wheel.slots.len() as u32)
                    .filter(|&i| wheel.slots[i as usize].task.is_some())
                    .collect();
                live.into_iter()
                    .filter_map(|i| {
                        wheel.unlink(i);
                        wheel.release(i)
                    })
                    .collect()
            };
            drop(tasks);
        }
    }
}

impl<T: Run> Drop for DenseTimer<T> {
    fn drop(&mut self) {
        self.stop();
    }
}

impl<T: Run> Inner<T> {
    #[inline]
    fn now_ns(&self) -> u64 {
        let e = self.origin.elapsed();
        e.as_secs().wrapping_mul(1_000_000_000).wrapping_add(u64::from(e.subsec_nanos()))
    }

    fn offer(&self, at: u64, shard: u32, bucket: u16) {
        let mut q = self.queue.lock();
        let new_head = q.heap.peek().map_or(true, |Reverse((head, ..))| at < *head);
        q.heap.push(Reverse((at, shard, bucket)));
        drop(q);
        if new_head {
            self.wake.notify_one();
        }
    }

    fn drive(&self) {
        let mut due: Vec<T> = Vec::new();
        let mut offers: Vec<(u64, u16)> = Vec::new();
        let mut q = self.queue.lock();
        loop {
            if q.shut_down {
                return;
            }
            let now_tick = self.now_ns() / self.tick_ns;
            match q.heap.peek().copied() {
                Some(Reverse((at, shard, bucket))) if at <= now_tick => {
                    q.heap.pop();
                    drop(q);
                    self.visit(&self.shards[shard as usize], bucket, at, &mut due, &mut offers);
                    for (at, b) in offers.drain(..) {
                        self.offer(at, shard, b);
                    }
                    for task in due.drain(..) {
                        task.run();
                    }
                    q = self.queue.lock();
                }
                Some(Reverse((at, ..))) => {
                    let when = self.origin + Duration::from_nanos(at.saturating_mul(self.tick_ns));
                    self.wake.wait_until(&mut q, when);
                }
                None => self.wake.wait(&mut q),
            }
        }
    }

    /// Visits bucket `b` of `shard` popped at `at` (its expiration, unless stale): fires what is
    /// due, re-places the rest relative to `at` (cascade).
    fn visit(&self, shard: &Shard<T>, b: u16, at: u64, due: &mut Vec<T>, offers: &mut Vec<(u64, u16)>) {
        let mut wheel = shard.wheel.lock();
        let bucket = &mut wheel.buckets[b as usize];
        if bucket.expiration != at {
            return; // stale queue entry
        }
        bucket.expiration = NO_EXPIRATION;
        let mut idx = std::mem::replace(&mut bucket.head, NIL);
        while idx != NIL {
            let (next, deadline) = {
                let s = &wheel.slots[idx as usize];
                (s.next, s.deadline)
            };
            if deadline <= at {
                wheel.slots[idx as usize].prev = NIL; // already out of the list
                if let Some(task) = wheel.release_unlinked(idx) {
                    due.push(task);
                }
            } else {
                let (nb, exp) = place(at, deadline);
                if let Some(exp) = wheel.link(idx, nb, exp) {
                    offers.push((exp, nb));
                }
            }
            idx = next;
        }
    }
}

impl<T> Wheel<T> {
    /// `release` for a slot already detached from its list (the visit took the whole list).
    fn release_unlinked(&mut self, idx: u32) -> Option<T> {
        self.release(idx)
    }
}

#[cfg(test)]
mod tests {}
