//! Warming the buckets due at the next tick before the driver waits for it.
//!
//! A bucket is a linked list of slots spread over the slab, so its flush reads one slot after
//! another, each read waiting for the one before: a cache miss an entry for a bucket scheduled
//! some time ago (docs/benchmarks.md, "What W4's lateness holds"). The tasks of a tick wait for the
//! whole flush before the first runs, and the flush follows the driver's wake-up at the tick's
//! boundary. So a driver about to wait for the next tick walks the buckets queued at it first
//! ([`Core::warm_next`]): the misses are taken while it has nothing else to do, and the flush at
//! the boundary finds the slots in the cache.
//!
//! The walk only reads: under the shard's lock, as every other look at a wheel, after the queue's
//! lock is released (the lock order of the module docs of `core.rs`), at most [`MOST`] entries
//! over all the buckets, so that a schedule into the shard waits no longer for it than for a
//! flush. Only the next tick's buckets: a later one's entries may be cancelled before it comes,
//! and would leave the cache meanwhile. A stale queued item, or a split bucket (whose round is a
//! visit of its stages), is not walked. Nothing it reads decides anything.

use super::{Bucketed, Core, Extra};

/// The most buckets warmed at once (shards with a bucket due at the same tick).
const BUCKETS: usize = 64;

/// The most entries read by one warming, over its buckets.
pub(crate) const MOST: usize = 1024;

impl<P: Send + 'static, X: Extra<P>> Core<P, X> {
    /// Reads the slots of at most [`MOST`] entries of the buckets queued at the earliest
    /// expiration, if that is tick `now + 1` and not `done` (the last expiration warmed), each
    /// under its shard's lock: that expiration if it walked its buckets, and the entries read.
    pub(crate) fn warm_next(&self, now: u64, done: Option<u64>) -> Option<(u64, usize)> {
        let mut heads = Vec::new();
        self.queue.heads(|at| at == now.wrapping_add(1) && Some(at) != done, BUCKETS, &mut heads);
        let at = heads.first()?.0;
        let mut read = 0;
        for (expiration, Bucketed { shard, bucket }) in heads {
            let mut guard = self.shards[usize::from(shard)].lock();
            read += guard.state().wheel.warm(bucket, expiration, MOST - read, X::warm);
            drop(guard);
            if read >= MOST {
                break;
            }
        }
        Some((at, read))
    }
}

#[cfg(all(test, not(delaywheel_loom)))]
#[path = "warm_tests.rs"]
mod tests;
