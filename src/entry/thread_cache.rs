//! `CachedFree<T>`: free items (a task-slab class's blocks) on per-stripe
//! free lists (`free_lists.rs`), with a cache on each thread in front of them, so that a schedule
//! takes its slot or block and a cancel on that thread gives it back with no lock and no atomic
//! read-modify-write. What each kind of item needs of its cache (its order, when it refills, its
//! capacity, which thread-local holds it) is its [`Cacheable`] impl: `block_cache.rs` for blocks,
//! whose module docs say why.
//!
//! A take from the free lists and a put back are a lock round trip each, two atomic
//! read-modify-writes on the stripe's line, about 18 cycles each when uncontended and far more when
//! two threads share a stripe. So each thread keeps a **cache** of free items of one owner (the
//! class it last took from):
//!
//! * a **take** pops an item; a cache down to [`Cacheable::REFILL_AT`] first moves a batch from the
//!   free lists to its front ([`FreeLists::take_batch`]: from the thread's stripe, else the pool,
//!   else never-used items), one lock per batch;
//! * a **put** on the owning thread appends to the cache, giving its oldest batch to the pool
//!   first when it is full ([`Cacheable::CAPACITY`]). The driver's return of a fired batch, on a
//!   thread that owns the cache (a manual timer's, or one running a task that re-arms), fills the
//!   cache up to its capacity and lists the rest in one lock, so the cache's buffer never outgrows
//!   it. A put of another owner's item, or on a thread that never took one, goes to the lists.
//!
//! **Lifetimes.** A cache names its owner by a `Weak`: it never keeps an owner alive, and its
//! pointer (which the `Weak` keeps from being reused) tells whether an item belongs to the owner at
//! hand. A thread that takes from another owner first gives its cached items back to the old one,
//! if it is still alive; a thread that exits does the same (its [`ExitGuard`], a thread-local
//! registered when a cache first takes an owner; the caches' own thread-local has no destructor,
//! so that a take or put checks no state of it). An owner dropped meanwhile just leaves the items
//! to be forgotten.
//!
//! **Counting what the caches hold** (for the kinds that count: [`Cacheable::COUNTED`]). Each
//! thread publishes how many items its cache holds in a
//! **cell** of its own (`Arc<AtomicUsize>`: a plain `Release` store, no read-modify-write),
//! registered with the owner when the thread takes it as owner. [`free_count`](CachedFree::free_count)
//! reads every list and every cell (`Acquire`) with every list's lock held. **Every window errs
//! low**: a cell is lowered before items leave its cache (a take, a spill to the pool) and raised
//! only after they are in it (a put, a refill), so a count racing a cache's moves may miss a free
//! item but never counts a taken one as free. A cache given back (its thread exits, or takes from
//! another owner) lists its items and zeroes its cell under one stripe lock
//! ([`FreeLists::put_all_then`]), so a count sees them exactly once. The task slab's drop relies
//! on this (`task_slab.rs`).
//!
//! **What the caches hold is on no list.** A shrink (`shrink.rs`) gives back only the pages whose
//! items are all on the lists, so a page with a cached item stays. A shrink therefore first
//! empties the calling thread's cache, and counts itself (`shrinks`): a thread whose cache is
//! older than the last shrink gives it back at its next take, so the next shrink finds those items
//! on the lists. Until then a cache keeps the pages of its items, and a thread that never takes
//! again keeps them until it exits.
//!
//! **Loom.** The models bypass the caches ([`Cacheable::with_local`] returns `None`: each model
//! thread would otherwise share the one OS thread's cache): their takes and puts go to the free
//! lists, whose hand-overs of items are not what the models explore (`free_lists.rs`).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use super::free_lists::{FreeLists, BATCH};
use crate::sync::UnmodelledMutex;

/// An item a thread's cache holds, and what its cache is like.
pub(crate) trait Cacheable: Copy + Send + Sized + 'static {
    /// Whether a take pops the oldest item (a slot, which waits behind older ones before its reuse)
    /// or the newest (a block, whose lines are the likeliest to be cached).
    const OLDEST_FIRST: bool;
    /// A take refills the cache first once it holds this many or fewer.
    const REFILL_AT: usize;
    /// The most items a cache holds before a put gives its oldest batch back.
    const CAPACITY: usize;
    /// Whether the caches publish their sizes ([`CachedFree::cached`] is 0 otherwise).
    const COUNTED: bool;
    /// How many caches of `T` a thread has (the classes of blocks; one for slots).
    const CACHES: usize;

    /// Runs `f` on this thread's cache number `which` (the class of a block); `None` under loom,
    /// or if the cache is in use further up this thread's stack. (A cache its thread's exit closed
    /// has no owner, and takes none: [`ExitGuard`].)
    fn with_local<R>(which: usize, f: impl FnOnce(&mut Local<Self>) -> R) -> Option<R>;

    /// Registers this thread's [`ExitGuard`] of `T`; `false` if it already ran (the thread is
    /// exiting), when a cache must not take an owner.
    fn exit_guard() -> bool;
}

/// Free items of one owner: its free lists, and the threads' caches in front of them (see the
/// module docs).
pub(crate) struct CachedFree<T: Cacheable> {
    pub(super) lists: FreeLists<T>,
    /// Which of a thread's caches of `T` is this owner's.
    which: usize,
    /// Shrinks begun: a cache whose count is older gives its items back at its next take.
    shrinks: AtomicU64,
    /// The cell of every thread whose cache took this owner (cells no thread holds any more are
    /// dropped as new ones come).
    cells: UnmodelledMutex<Vec<Arc<AtomicUsize>>>,
}

/// A thread's cache of one owner's items.
pub(crate) struct Local<T: Cacheable> {
    owner: Weak<CachedFree<T>>,
    /// The owner's address (`owner`'s pointer, 0 with no owner): what a take or put compares, one
    /// comparison where `Weak::as_ptr` first tells a dangling `Weak` apart.
    owner_at: usize,
    pub(super) items: VecDeque<T>,
    /// How many items `items` holds, for the owner's count (see the module docs).
    cell: Option<Arc<AtomicUsize>>,
    /// The owner's shrink count when this cache was last emptied or taken over.
    shrinks: u64,
    /// Set as the thread exits ([`ExitGuard`]): the cache is given back, and takes no owner again.
    closed: bool,
}

impl<T: Cacheable> Local<T> {
    /// An empty cache with no owner (a thread-local's first value).
    pub(crate) const fn new() -> Local<T> {
        Local {
            owner: Weak::new(),
            owner_at: 0,
            items: VecDeque::new(),
            cell: None,
            shrinks: 0,
            closed: false,
        }
    }

    #[inline]
    fn owned_by(&self, free: &Arc<CachedFree<T>>) -> bool {
        self.owner_at == Arc::as_ptr(free) as usize
    }

    /// Publishes that the cache holds `len` items.
    #[inline]
    fn publish(&self, len: usize) {
        if !T::COUNTED {
            return;
        }
        if let Some(cell) = &self.cell {
            cell.store(len, Ordering::Release);
        }
    }

    /// Gives every cached item back to the owner, if it is still alive, and forgets the owner.
    fn give_back(&mut self) {
        if let Some(owner) = self.owner.upgrade() {
            let cell = self.cell.take();
            // The cell goes to zero under the stripe's lock that lists the items (see the module
            // docs), so that a count sees each item once.
            owner.lists.put_all_then(self.items.drain(..), || {
                if let Some(cell) = &cell {
                    cell.store(0, Ordering::Release);
                }
            });
        }
        self.items.clear();
        self.cell = None;
        self.owner = Weak::new();
        self.owner_at = 0;
    }
}

/// A thread's caches of one kind, as its thread-local holds them: behind `ManuallyDrop`, so that
/// the thread-local needs no destructor and an access to it checks no state (where one with a
/// destructor checks, on every take and put, whether it is registered or destroyed). The kind's
/// [`ExitGuard`] gives the caches back as the thread exits.
pub(crate) type Locals<T, const N: usize> = [RefCell<ManuallyDrop<Local<T>>>; N];

/// What gives a thread's caches of `T` back as the thread exits, in a thread-local of its own
/// (with a destructor) that a cache registers when it takes an owner
/// ([`Cacheable::exit_guard`]). Its drop gives each cache's items back and closes it: a take or
/// put later in the thread's exit (another thread-local's destructor dropping a task) goes to the
/// lists.
pub(crate) struct ExitGuard<T: Cacheable>(PhantomData<T>);

impl<T: Cacheable> ExitGuard<T> {
    pub(crate) const fn new() -> ExitGuard<T> {
        ExitGuard(PhantomData)
    }
}

impl<T: Cacheable> Drop for ExitGuard<T> {
    fn drop(&mut self) {
        for which in 0..T::CACHES {
            T::with_local(which, |local| {
                local.give_back();
                local.closed = true;
                local.items = VecDeque::new();
            });
        }
    }
}

/// Runs `f` on the thread-local cache `local`, unless loom models run or the cache is in use
/// further up this thread's stack: for [`Cacheable::with_local`].
#[inline]
pub(crate) fn with<T: Cacheable, R, const N: usize>(
    local: &'static std::thread::LocalKey<Locals<T, N>>,
    which: usize,
    f: impl FnOnce(&mut Local<T>) -> R,
) -> Option<R> {
    if cfg!(delaywheel_loom) {
        return None;
    }
    local.try_with(|locals| locals[which].try_borrow_mut().ok().map(|mut local| f(&mut local))).ok().flatten()
}

impl<T: Cacheable> CachedFree<T> {
    /// Free items of an owner whose threads keep them in their cache number `which`.
    pub(crate) fn new(which: usize) -> Arc<CachedFree<T>> {
        Arc::new(CachedFree {
            lists: FreeLists::new(),
            which,
            shrinks: AtomicU64::new(0),
            cells: UnmodelledMutex::new(Vec::new()),
        })
    }

    /// A free item from this thread's cache, refilled first if it is down to
    /// [`Cacheable::REFILL_AT`] (`fresh`, called with no lock held, gives never-used items when the
    /// lists have none). `None` once neither the lists nor `fresh` have one.
    ///
    /// The common case (the cache is this owner's, current and above its refill mark) is inlined
    /// into the caller; everything else is [`take_slow`](Self::take_slow), out of line, so that the
    /// fast path keeps to a few registers.
    #[inline]
    pub(crate) fn take<I: DoubleEndedIterator<Item = T>>(
        self: &Arc<Self>,
        fresh: impl FnOnce() -> I,
    ) -> Option<T> {
        let shrinks = self.shrinks.load(Ordering::Relaxed);
        let hit = T::with_local(self.which, |local| {
            if !local.owned_by(self) || local.shrinks != shrinks || local.items.len() <= T::REFILL_AT {
                return None;
            }
            Self::pop(local)
        });
        match hit {
            Some(Some(item)) => Some(item),
            _ => self.take_slow(fresh),
        }
    }

    /// [`take`](Self::take) when the cache is not this owner's, is older than the last shrink, or
    /// is down to its refill mark, or when this thread has no cache to use.
    #[cold]
    #[inline(never)]
    fn take_slow<I: DoubleEndedIterator<Item = T>>(self: &Arc<Self>, fresh: impl FnOnce() -> I) -> Option<T> {
        let mut fresh = Some(fresh);
        let taken = T::with_local(self.which, |local| {
            // A cache takes an owner only while its thread's exit guard is still to run.
            let usable = !local.closed && (local.owned_by(self) || T::exit_guard());
            usable.then(|| self.take_cached(local, &mut fresh))
        });
        if let Some(taken) = taken.flatten() {
            return taken;
        }
        self.lists.take(fresh.take().expect("a take calls `fresh` at most once"))
    }

    fn take_cached<I: DoubleEndedIterator<Item = T>>(
        self: &Arc<Self>,
        local: &mut Local<T>,
        fresh: &mut Option<impl FnOnce() -> I>,
    ) -> Option<T> {
        let shrinks = self.shrinks.load(Ordering::Relaxed);
        if !local.owned_by(self) || local.items.len() <= T::REFILL_AT || local.shrinks != shrinks {
            self.refill(local, shrinks, fresh.take().expect("a take calls `fresh` at most once"));
        }
        Self::pop(local)
    }

    /// Takes the cache's next item (its oldest or its newest, as `T` says).
    #[inline]
    fn pop(local: &mut Local<T>) -> Option<T> {
        // Counted out before it leaves (see the module docs: every window errs low).
        local.publish(local.items.len().saturating_sub(1));
        if T::OLDEST_FIRST {
            local.items.pop_front()
        } else {
            local.items.pop_back()
        }
    }

    /// Makes this owner the cache's (giving the old owner's items back and registering a cell),
    /// or after a shrink gives this owner's back, and moves a batch from the lists to the front.
    #[cold]
    fn refill<I: DoubleEndedIterator<Item = T>>(
        self: &Arc<Self>,
        local: &mut Local<T>,
        shrinks: u64,
        fresh: impl FnOnce() -> I,
    ) {
        if !local.owned_by(self) || local.shrinks != shrinks {
            local.give_back();
            if T::COUNTED {
                let cell = Arc::new(AtomicUsize::new(0));
                let mut cells = self.cells.lock();
                cells.retain(|cell| Arc::strong_count(cell) > 1);
                cells.push(Arc::clone(&cell));
                drop(cells);
                local.cell = Some(cell);
            }
            local.owner = Arc::downgrade(self);
            local.owner_at = Arc::as_ptr(self) as usize;
            local.shrinks = shrinks;
        }
        self.lists.take_batch(&mut local.items, fresh);
        local.publish(local.items.len());
    }

    /// Returns a free item: to this thread's cache if this owner owns it (giving its oldest batch
    /// to the pool first if it is full), else to the lists. As in [`take`](Self::take), the common
    /// case (this owner's cache, with room) is inlined and the rest is out of line.
    #[inline]
    pub(crate) fn put(self: &Arc<Self>, item: T) {
        let kept = T::with_local(self.which, |local| {
            if !local.owned_by(self) || local.items.len() >= T::CAPACITY {
                return false;
            }
            local.items.push_back(item);
            local.publish(local.items.len());
            true
        });
        if kept != Some(true) {
            self.put_slow(item);
        }
    }

    /// [`put`](Self::put) when the cache is full or not this owner's, or when this thread has no
    /// cache to use.
    #[cold]
    #[inline(never)]
    fn put_slow(self: &Arc<Self>, item: T) {
        let kept = T::with_local(self.which, |local| {
            if !local.owned_by(self) {
                return false;
            }
            if local.items.len() >= T::CAPACITY {
                self.spill(local);
            }
            local.items.push_back(item);
            local.publish(local.items.len());
            true
        });
        if kept != Some(true) {
            self.lists.put(item);
        }
    }

    /// Returns several free items (a fired batch's): to this thread's cache if this owner owns it,
    /// as many as it has room for below [`Cacheable::CAPACITY`], the rest to the lists in one lock.
    pub(crate) fn put_all(self: &Arc<Self>, items: impl Iterator<Item = T>) {
        let mut items = items.peekable();
        T::with_local(self.which, |local| {
            if local.owned_by(self) {
                let room = T::CAPACITY.saturating_sub(local.items.len());
                local.items.extend(items.by_ref().take(room));
                local.publish(local.items.len());
            }
        });
        if items.peek().is_some() {
            self.lists.put_all(items);
        }
    }

    /// Gives a full cache's oldest batch to the pool. The cell says so first: while the batch is
    /// on its way it is counted nowhere, so a count errs low (see the module docs).
    #[cold]
    fn spill(&self, local: &mut Local<T>) {
        let keep = T::CAPACITY - BATCH;
        local.publish(keep);
        self.lists.spill_above(&mut local.items, keep);
    }

    /// Before a shrink, which only sees what is on the lists: gives this thread's cached items of
    /// this owner back, and has every other thread give its own back at its next take.
    pub(crate) fn before_shrink(self: &Arc<Self>) {
        self.shrinks.fetch_add(1, Ordering::Relaxed);
        T::with_local(self.which, |local| {
            if local.owned_by(self) {
                local.give_back();
            }
        });
    }

    /// Items in threads' caches: exact when no thread takes or puts meanwhile, else low (see the
    /// module docs); always 0 for a kind that does not count ([`Cacheable::COUNTED`]). Read with
    /// the lists' locks held, for a count of both.
    pub(crate) fn cached(&self) -> usize {
        self.cells.lock().iter().map(|cell| cell.load(Ordering::Acquire)).sum()
    }

    /// Free items: on the lists and in the threads' caches, counted with every list's lock held.
    pub(crate) fn free_count(&self) -> usize {
        self.lists.listed_count_with(|listed| listed + self.cached())
    }
}
