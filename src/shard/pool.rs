//! Shard headers from a pool, with epochs, so that a handle cancels by itself with no reference
//! count (the prototype's `Pool`, `bench/src/lean_core/pool.rs`; docs/lean_core.md).
//!
//! * **A header** ([`Header`]) is what a handle may read after its owner is gone: a
//!   [`ShardLock`] over the shard's body (its epoch and its state, a type of the caller's:
//!   [`ShardState`]), and the shard's count of pending entries, a word that [`Shard::len`] reads
//!   without the lock and that only a holder of the lock writes, by a load and a store
//!   ([`ShardGuard::count_in`], [`ShardGuard::count_out`]).
//! * **The pool** ([`Pool`]): the free headers of one state type under a lock, process-wide
//!   ([`Pool::global`]). [`Pool::take`] pops one, or makes one and leaks it (`Box::leak`: a header
//!   is never freed), and returns the owner's hold on it, a [`Shard`].
//! * **Giving back** (dropping the [`Shard`], or [`Shard::retire`]): under the header's lock the
//!   state is swapped for an empty one (`Default`), the epoch moves one on and the count goes to
//!   zero; after the unlock the header goes back on the pool's list, and then the old state, with
//!   the payloads still pending in it, is dropped (or handed back by `retire`, for a shutdown that
//!   returns them), never while the lock is held.
//! * **A handle** ([`Handle`]): (`&'static` header, epoch, slot, generation, and the owner's
//!   index of the shard in the padding), `Copy`, 32 bytes, `Send + Sync + 'static`, made under the
//!   lock by [`ShardGuard::handle`]. The pool never reads the index: it is the owner's, to find
//!   the shard without a search, and not proof that the handle is the owner's ([`Handle::index`]).
//!   [`Handle::lock`]
//!   locks the header and compares the epoch, and only if it is the handle's hands out the
//!   state; [`Handle::cancel`] then takes the payload of (slot, generation) out, counts it out,
//!   and returns it to be dropped after the unlock.
//!
//! **Why it is sound.** What a handle reads after its owner is gone is only its header, whose
//! memory lives as long as the process (`Box::leak`), and only under the header's lock: the lock
//! word, then the epoch. The epoch is written only under the lock, and moves exactly when the
//! owner that made the handle gives the header back, before that unlock; it is never reused (64
//! bits, one more per give-back). So under the lock `epoch == handle.epoch` holds exactly while
//! the handle's owner still holds the header, and then the state is that owner's and the (slot,
//! generation) check is its state's. Otherwise the handle finds nothing, having read nothing
//! else: neither the state dropped with the give-back nor the state of an owner that took the
//! header next (whose slots and generations may be the same). A cancel racing the give-back is
//! ordered by the lock: before it, it takes the payload out (the cancel ends it); after it, it
//! sees the new epoch (the payload ends with the old state). Each payload thus ends once. The
//! epoch moves before the header is back in the pool: a header a new owner can take never shows
//! an old owner's handles the epoch they were made with.
//!
//! **`len` without the lock.** Each entry is counted in and out on its own shard's word, always
//! under that shard's lock, whose `Release`/`Acquire` orders each holder's store before the next
//! holder's load: the word's modification order is the sequence of critical sections, every value
//! in it exact at its unlock. A read (`Relaxed`: coherence is all it needs) returns one of them,
//! no older than any store that happens-before the read and none that the read happens-before: so
//! it counts every entry counted in before the read and counted out after it (pending throughout
//! the read), and it is exact when no insert or remove is in flight. A sum over shards read one by
//! one holds the same bound (each entry lives on one word). A read-modify-write would add one to
//! every critical section; the load and store add none (docs/lean_core.md: 10.7 ns a pair against
//! nothing).
//!
//! **A payload whose `Drop` panics** while its state is dropped after a give-back: the header is
//! already unlocked and back in the pool by then, so the panic leaves neither behind; it unwinds
//! out of the drop of the [`Shard`] (or of the state `retire` returned) to the caller, and the
//! state's own drop goes on dropping the other payloads (a `Vec`'s drop does: a second panic
//! aborts, as anywhere in Rust).
//!
//! **Under loom** the code paths are the same; only the pool's life differs. loom objects (the
//! lock, the count, the pool's own lock) cannot outlive the model execution that made them, so
//! [`Pool::global`] is one pool per execution (`crate::sync::type_static`): each execution makes
//! its headers anew and leaks them as a process does, and no header of one execution is taken in
//! the next.

use std::fmt;

use super::faults;
use super::lock::{ShardLock, ShardLockGuard};
use crate::sync::{AtomicUsize, Mutex, Ordering};

/// What a shard's lock guards, besides its epoch: the slots, the wheel and whatever else the
/// shard keeps, with the pending payloads in it.
pub trait ShardState: Default + Send + 'static {
    /// What an entry holds: handed back by a cancel, dropped with the state otherwise.
    type Payload: Send;

    /// Takes out the payload of the entry in `slot` if it is pending and of `generation`.
    fn take(&mut self, slot: u32, generation: u64) -> Option<Self::Payload>;

    /// Whether the entry of `payload` counts in the shard's count: every entry's, unless the
    /// state says otherwise (the core's uncounted payloads, `core/state.rs`).
    #[inline]
    fn counts(payload: &Self::Payload) -> bool {
        let _ = payload;
        true
    }
}

/// A shard's header (see the module docs), on cache lines of its own.
#[repr(align(128))]
pub struct Header<S> {
    pub(super) lock: ShardLock<Body<S>>,
    /// The pending entries, written under `lock` only.
    pub(super) count: AtomicUsize,
}

/// What a header's lock guards.
pub(super) struct Body<S> {
    /// Moves one on at every give-back.
    pub(super) epoch: u64,
    pub(super) state: S,
}

impl<S: ShardState> Header<S> {
    fn new() -> Header<S> {
        Header { lock: ShardLock::new(Body { epoch: 0, state: S::default() }), count: AtomicUsize::new(0) }
    }

    /// Locks the header.
    #[inline]
    fn lock(&'static self) -> ShardGuard<'static, S> {
        ShardGuard { body: self.lock.lock(), header: self }
    }
}

impl<S: 'static> fmt::Debug for Header<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Header").field("count", &self.count.load(Ordering::Relaxed)).finish_non_exhaustive()
    }
}

/// The free headers of one state type (see the module docs).
pub struct Pool<S: 'static> {
    pub(super) free: Mutex<Vec<&'static Header<S>>>,
}

impl<S: 'static> Default for Pool<S> {
    fn default() -> Pool<S> {
        Pool { free: Mutex::new(Vec::new()) }
    }
}

impl<S: ShardState> Pool<S> {
    /// The pool of `S`'s headers: process-wide (one per model execution under loom).
    pub fn global() -> &'static Pool<S> {
        crate::sync::type_static::<Pool<S>>()
    }

    /// A header for a new owner: a free one, or a new one, leaked.
    pub fn take(&'static self) -> Shard<S> {
        let free = self.free.lock().pop();
        let header = free.unwrap_or_else(|| Box::leak(Box::new(Header::new())));
        Shard { header, pool: self }
    }

    /// How many headers are free.
    pub fn free(&self) -> usize {
        self.free.lock().len()
    }

    /// Gives `header` back (see the module docs): the state it held, for the caller to drop or
    /// hand back after the header is in the pool again.
    fn give_back(&'static self, header: &'static Header<S>) -> S {
        if fault!("shard_epoch_bumped_after_give_back") {
            return faults::give_back_then_bump(self, header);
        }
        let mut shard = header.lock();
        let old = std::mem::take(&mut shard.body.state);
        shard.body.epoch += 1;
        header.count.store(0, Ordering::Relaxed);
        drop(shard);
        self.free.lock().push(header);
        old
    }
}

impl<S: 'static> fmt::Debug for Pool<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool").finish_non_exhaustive()
    }
}

/// An owner's hold on a header taken from a [`Pool`]: gives it back when dropped.
pub struct Shard<S: ShardState> {
    pub(super) header: &'static Header<S>,
    pool: &'static Pool<S>,
}

impl<S: ShardState> Shard<S> {
    /// Locks the shard.
    #[inline]
    pub fn lock(&self) -> ShardGuard<'_, S> {
        self.header.lock()
    }

    /// The pending entries, read without the lock (see the module docs for what a read racing
    /// inserts and removes returns).
    #[inline]
    pub fn len(&self) -> usize {
        self.header.count.load(Ordering::Relaxed)
    }

    /// Whether [`len`](Self::len) is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Gives the header back and hands back the state it held, with its pending payloads.
    pub fn retire(self) -> S {
        let this = std::mem::ManuallyDrop::new(self);
        this.pool.give_back(this.header)
    }
}

impl<S: ShardState> Drop for Shard<S> {
    fn drop(&mut self) {
        drop(self.pool.give_back(self.header));
    }
}

impl<S: ShardState> fmt::Debug for Shard<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shard").field("header", &(self.header as *const Header<S>)).finish()
    }
}

/// A locked shard: its state, its count, and the handles of its entries.
pub struct ShardGuard<'a, S: 'static> {
    body: ShardLockGuard<'a, Body<S>>,
    header: &'static Header<S>,
}

impl<S: ShardState> ShardGuard<'_, S> {
    /// The shard's state.
    #[inline]
    pub fn state(&mut self) -> &mut S {
        &mut self.body.state
    }

    /// Counts `n` entries in (a load and a store: the lock is held).
    #[inline]
    pub fn count_in(&mut self, n: usize) {
        let count = self.header.count.load(Ordering::Relaxed);
        self.header.count.store(count + n, Ordering::Relaxed);
    }

    /// Counts `n` entries out (a load and a store: the lock is held).
    #[inline]
    pub fn count_out(&mut self, n: usize) {
        let count = self.header.count.load(Ordering::Relaxed);
        debug_assert!(count >= n, "counting {n} out of a shard that counts {count}");
        self.header.count.store(count.wrapping_sub(n), Ordering::Relaxed);
    }

    /// The handle of the entry in `slot` of `generation`, for this shard's owner now, which keeps
    /// the shard at `index` of its own ([`Handle::index`]).
    #[inline]
    pub fn handle(&self, index: u16, slot: u32, generation: u64) -> Handle<S> {
        Handle { header: self.header, epoch: self.body.epoch, slot, generation, index }
    }
}

impl<S: 'static> fmt::Debug for ShardGuard<'_, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardGuard").field("epoch", &self.body.epoch).finish_non_exhaustive()
    }
}

/// An entry of a pooled shard: cancels by itself from any thread, also after its owner gave the
/// shard back (then it finds nothing). See the module docs.
pub struct Handle<S: 'static> {
    pub(super) header: &'static Header<S>,
    pub(super) epoch: u64,
    pub(super) slot: u32,
    pub(super) generation: u64,
    /// The owner's index of the shard, in the padding ([`Handle::index`]).
    index: u16,
}

// Four bytes of padding hold the index: a handle stays as small as (header, epoch, slot,
// generation) padded.
const _: () = assert!(std::mem::size_of::<Handle<()>>() <= 32);

// By hand: a derive would ask `S: Copy`.
impl<S: 'static> Clone for Handle<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S: 'static> Copy for Handle<S> {}

impl<S: ShardState> Handle<S> {
    /// Locks the handle's shard if its owner is still the one that made the handle; `None`
    /// (having read nothing but the header's epoch) if it gave the shard back.
    #[inline]
    pub fn lock(&self) -> Option<ShardGuard<'static, S>> {
        let shard = self.header.lock();
        if shard.body.epoch != self.epoch && !fault!("shard_epoch_unchecked") {
            return None;
        }
        Some(shard)
    }

    /// Takes the entry's payload out if it is pending, counted out; the caller drops it (after
    /// the unlock). `None` if it is not pending, or its owner gave the shard back.
    #[inline]
    pub fn cancel(&self) -> Option<S::Payload> {
        self.cancel_with(|_| {})
    }

    /// [`cancel`](Self::cancel), running `f` on the state under the lock once the payload is out
    /// and counted out (not if nothing was taken); the payload is still dropped after the unlock,
    /// also when `f` panics (the entry then stays taken and counted out).
    #[inline]
    pub fn cancel_with(&self, f: impl FnOnce(&mut S)) -> Option<S::Payload> {
        if fault!("shard_count_after_unlock") {
            return faults::cancel_counting_after_unlock(self);
        }
        // Bound before the guard, so that a panicking `f` drops it after the unlock.
        let payload;
        let mut shard = self.lock()?;
        payload = shard.state().take(self.slot, self.generation)?;
        shard.count_out(usize::from(S::counts(&payload)));
        f(shard.state());
        drop(shard);
        Some(payload)
    }

    /// The entry's slot and generation in its shard's state.
    pub fn entry(&self) -> (u32, u64) {
        (self.slot, self.generation)
    }

    /// The index its owner gave the shard when it made the handle ([`ShardGuard::handle`]): where
    /// to look first, not proof that the handle is the owner's (another owner's shard may have the
    /// same index), which only the header compared at that index gives.
    #[inline]
    pub fn index(&self) -> usize {
        usize::from(self.index)
    }

    /// Whether `other` names the same header (of this owner or another).
    pub fn same_header(&self, other: &Handle<S>) -> bool {
        std::ptr::eq(self.header, other.header)
    }
}

impl<S: 'static> fmt::Debug for Handle<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("header", &(self.header as *const Header<S>))
            .field("epoch", &self.epoch)
            .field("slot", &self.slot)
            .field("generation", &self.generation)
            .field("index", &self.index)
            .finish()
    }
}
