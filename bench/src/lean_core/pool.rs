//! Shards from a process-wide pool, never freed, so that a handle can cancel by itself without a
//! reference count: a [`PoolHandle`] is (`&'static Shard`, epoch, slot, generation), `Copy`,
//! `Send + Sync + 'static`, 24 bytes.
//!
//! * **The pool**: one per lock type ([`Pooled::pool`]), a `Mutex<Vec<&'static Shard>>`. A timer
//!   takes its shards from it (or leaks a new one when it is empty) and gives them back when its
//!   core is dropped (its driver stopped first). A shard header (its lock, the count, the wheel's
//!   fixed part: list heads, time, epoch) is allocated once and lives as long as the process; the
//!   slab it points to is freed when its timer gives it back.
//! * **Giving back** (`Pool::give_back`): under the shard's lock, the wheel is replaced by an
//!   empty one (its slab, the slots and their tasks, moved out) whose epoch is one more; after the
//!   unlock the old wheel and the tasks still pending in it are dropped (never run), and the header
//!   goes back to the pool.
//! * **Cancel** (`PoolHandle::cancel`): locks the header, compares the epoch, and only if it is the
//!   handle's looks at the slot, as a key's cancel does.
//!
//! **Why it is sound.** What a handle reads after its timer is gone is only its header, whose
//! memory is never freed (`Box::leak`: the `&'static` is valid for the rest of the process), and
//! only under the header's lock: the lock word, then the epoch. The epoch is written only under the
//! lock, and changes exactly when the timer that scheduled the handle gives the shard back, before
//! that unlock; an epoch is never reused (64 bits, one more per give-back: 2⁶⁴ give-backs of one
//! header are out of reach). So under the lock, `epoch == handle.epoch` holds exactly while the
//! handle's timer still owns the shard, and then the slab the wheel points to is that timer's and
//! the (slot, generation) check is the key's. Otherwise the handle returns `false` having read
//! nothing else: neither the slab freed with the old wheel nor the slab of the timer that took the
//! header next. A cancel racing the give-back is ordered by the lock: before it, it takes the task
//! out (it wins, and the task is dropped by it); after it, it sees the new epoch (it loses, and the
//! task is dropped with the old wheel). Each task thus ends once: run, cancelled, or dropped with
//! its timer. The only cost is that memory: a process keeps as many headers (about 3.2 KiB each) as
//! the most shards its timers held at once.

use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Duration;

use super::lock::{Backoff, Parked, ShardLock, Spin};
use super::task::Task;
use super::{Generation, LeanTimer, Own, Shard};

/// A lock type with a pool of shard headers of its own.
pub trait Pooled: ShardLock + Sized {
    /// The free headers.
    fn pool() -> &'static Mutex<Vec<&'static Shard<Self>>>;
}

macro_rules! pooled {
    ($($lock:ty),*) => {$(
        impl Pooled for $lock {
            fn pool() -> &'static Mutex<Vec<&'static Shard<$lock>>> {
                static POOL: Mutex<Vec<&'static Shard<$lock>>> = Mutex::new(Vec::new());
                &POOL
            }
        }
    )*};
}

pooled!(Parked, Spin, Backoff);

/// Shards of the process-wide pool: a timer's [`PoolHandle`]s cancel by themselves, with no
/// reference count, also after the timer is dropped (then they find nothing).
pub struct Pool;

impl<L: Pooled> Own<L> for Pool {
    type Ref = &'static Shard<L>;

    fn take() -> &'static Shard<L> {
        let free = L::pool().lock().unwrap_or_else(|e| e.into_inner()).pop();
        free.unwrap_or_else(|| Box::leak(Box::new(Shard::new())))
    }

    fn give_back(shard: &&'static Shard<L>) {
        let mut wheel = shard.lock.lock();
        let old = std::mem::take(&mut *wheel);
        wheel.epoch = old.epoch + 1;
        shard.count.store(0, Ordering::Relaxed);
        drop(wheel);
        drop(old);
        L::pool().lock().unwrap_or_else(|e| e.into_inner()).push(shard);
    }
}

/// A scheduled timeout of a pooled timer: cancels by itself from any thread, also after its timer
/// is dropped (see the module's docs).
pub struct PoolHandle<L: 'static> {
    shard: &'static Shard<L>,
    epoch: u64,
    slot: u32,
    generation: Generation,
}

// By hand: a derive would ask `L: Copy`, and the lock types are not.
impl<L> Clone for PoolHandle<L> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<L> Copy for PoolHandle<L> {}

impl<L: Pooled> PoolHandle<L> {
    /// Whether the timeout was pending (then its task is dropped and never runs); `false` once its
    /// timer is dropped.
    #[inline]
    pub fn cancel(&self) -> bool {
        self.shard.remove(Some(self.epoch), self.slot, self.generation)
    }

    /// The header it names.
    #[cfg(test)]
    pub(crate) fn shard(&self) -> *const Shard<L> {
        self.shard
    }
}

impl<L: Pooled> LeanTimer<L, Pool> {
    /// Schedules `task` to run `delay` from now; a handle that cancels by itself.
    #[inline]
    pub fn schedule_pooled<F: FnOnce() + Send + 'static>(&self, delay: Duration, task: F) -> PoolHandle<L> {
        let (shard, slot, generation, epoch) = self.core.insert(delay, Task::new(task));
        PoolHandle { shard: self.core.shards[shard], epoch, slot, generation }
    }
}
