//! The `BinaryHeap` peer: a hand-rolled timer as one writes it without a timer crate. A min-heap of
//! (deadline, sequence, task slot) behind a parking_lot `Mutex`; whoever drives it pops what is due
//! and fires it outside the lock. `benches/spec.rs` drives it with one thread sleeping on a `Condvar`
//! (woken when an insert becomes the new head); `benches/scaling.rs` drives it on a virtual clock.
//!
//! No tick: deadlines keep full (ns) precision. Cancellation is lazy: `cancel` takes the closure out
//! of its slot (dropped at once; exactly one of fire/cancel wins), but the heap entry stays until its
//! deadline pops it, so [`HeapCore::len`] still counts cancelled entries: that is what the heap holds.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex, MutexGuard};

/// One allocation per timer: the slot holds the closure inline; the heap entry and the handle share it.
pub trait HeapSlot: Send + Sync {
    fn fire(&self);
    fn cancel(&self) -> bool;
    fn is_live(&self) -> bool;
}

struct TaskSlot<F> {
    task: Mutex<Option<F>>,
}

impl<F: FnOnce() + Send> HeapSlot for TaskSlot<F> {
    fn fire(&self) {
        let task = self.task.lock().take();
        if let Some(task) = task {
            task();
        }
    }

    fn cancel(&self) -> bool {
        self.task.lock().take().is_some()
    }

    fn is_live(&self) -> bool {
        self.task.lock().is_some()
    }
}

struct HeapEntry {
    deadline_ns: u64,
    seq: u64,
    slot: Arc<dyn HeapSlot>,
}

impl PartialEq for HeapEntry {
    fn eq(&self, other: &Self) -> bool {
        (self.deadline_ns, self.seq) == (other.deadline_ns, other.seq)
    }
}

impl Eq for HeapEntry {}

impl PartialOrd for HeapEntry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for HeapEntry {
    /// Reversed: `BinaryHeap` is a max-heap, the earliest deadline must be on top.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.deadline_ns, other.seq).cmp(&(self.deadline_ns, self.seq))
    }
}

struct HeapState {
    heap: BinaryHeap<HeapEntry>,
    seq: u64,
    shut_down: bool,
}

/// Most due entries popped per lock hold, so inserting threads are not locked out by a big batch.
const BATCH: usize = 1024;

/// The heap, its lock, and the condition variable its driver sleeps on.
pub struct HeapCore {
    state: Mutex<HeapState>,
    wake: Condvar,
}

impl Default for HeapCore {
    fn default() -> Self {
        HeapCore {
            state: Mutex::new(HeapState { heap: BinaryHeap::new(), seq: 0, shut_down: false }),
            wake: Condvar::new(),
        }
    }
}

impl HeapCore {
    /// Adds `task`, due at `deadline_ns`; wakes the driver if it is the new head.
    pub fn insert<F>(&self, deadline_ns: u64, task: F) -> Arc<dyn HeapSlot>
    where
        F: FnOnce() + Send + 'static,
    {
        let slot: Arc<dyn HeapSlot> = Arc::new(TaskSlot { task: Mutex::new(Some(task)) });
        let mut state = self.state.lock();
        let new_head = state.heap.peek().map_or(true, |top| deadline_ns < top.deadline_ns);
        state.seq += 1;
        let seq = state.seq;
        state.heap.push(HeapEntry { deadline_ns, seq, slot: Arc::clone(&slot) });
        drop(state);
        if new_head {
            self.wake.notify_one();
        }
        slot
    }

    /// Entries held, cancelled ones included until they are popped.
    pub fn len(&self) -> usize {
        self.state.lock().heap.len()
    }

    /// Drops the entries of cancelled timers (O(held)): what a user of lazy cancellation does now
    /// and then to bound the garbage.
    pub fn purge_cancelled(&self) {
        self.state.lock().heap.retain(|entry| entry.slot.is_live());
    }

    /// Pops up to one batch of entries due at `now_ns` into `batch`.
    fn pop_due(state: &mut HeapState, now_ns: u64, batch: &mut Vec<Arc<dyn HeapSlot>>) {
        while batch.len() < BATCH && state.heap.peek().is_some_and(|top| top.deadline_ns <= now_ns) {
            batch.push(state.heap.pop().expect("peeked").slot);
        }
    }

    /// Fires everything due at `now_ns` on the calling thread; returns how many entries were popped.
    pub fn advance(&self, now_ns: u64) -> usize {
        let mut batch = Vec::with_capacity(BATCH);
        let mut popped = 0;
        loop {
            Self::pop_due(&mut self.state.lock(), now_ns, &mut batch);
            if batch.is_empty() {
                return popped;
            }
            popped += batch.len();
            batch.drain(..).for_each(|slot| slot.fire());
        }
    }

    /// The driver thread's loop, on the clock `now_ns`, until [`HeapCore::shut_down`].
    pub fn drive(&self, now_ns: impl Fn() -> u64) {
        let mut batch = Vec::with_capacity(BATCH);
        let mut state = self.state.lock();
        loop {
            if state.shut_down {
                return;
            }
            let now = now_ns();
            Self::pop_due(&mut state, now, &mut batch);
            if !batch.is_empty() {
                MutexGuard::unlocked(&mut state, || batch.drain(..).for_each(|slot| slot.fire()));
                continue;
            }
            match state.heap.peek().map(|top| top.deadline_ns) {
                None => self.wake.wait(&mut state),
                Some(deadline) => {
                    self.wake.wait_for(&mut state, Duration::from_nanos(deadline - now));
                }
            }
        }
    }

    /// Makes [`HeapCore::drive`] return.
    pub fn shut_down(&self) {
        self.state.lock().shut_down = true;
        self.wake.notify_all();
    }
}
