//! `Watchers`: the sharded map from key to the list of operations watched under it.
//!
//! Kafka keeps one `Watchers` object per key in a pool of maps, and lets completed operations stay
//! in them until a purge pass (every `purgeInterval` completions) or a check of that key walks the
//! list; with few checks and many completions that is where its brokers ran out of memory
//! (KAFKA-19389, KAFKA-19763). Here an operation leaves every list **at once** when it finishes, in
//! O(1) per key, and an empty list is removed from its map, so the memory held is proportional to
//! the live watches only.
//!
//! ## Layout
//!
//! ```text
//!  key ──hash──► shard (one of a power of two, each padded to its own cache lines)
//!                  lock ─ HashMap<K, Vec<Watcher>>          Watcher = (Arc<Operation>, slot)
//!                                       │                            │
//!                                       ▼                            ▼
//!                                [w0][w1][w2]…         operation.watches[slot] = { key, shard, index }
//! ```
//!
//! Each list is a dense `Vec` (or, for a key with a single watcher, that watcher stored in the map
//! itself); each entry knows which of its operation's watches it is (`slot`), and that watch knows
//! its position in the list (`index`) and its shard. Removal is a swap-remove that fixes the index of
//! the entry moved into the hole, like the timer's buckets.
//!
//! ## Locking
//!
//! * A watch's `index` is read and written only under the lock of the shard holding its key.
//! * A shard lock is held only for map and list bookkeeping: never while calling the user's code,
//!   never while taking an operation's lock or a wheel lock. Checks copy the list (cloning the `Arc`s)
//!   and release the shard before trying any operation (Kafka's KAFKA-3994 deadlock came from trying
//!   operations under a watcher lock).
//! * Checks on keys in different shards never touch the same lock or counter.
//!
//! Each shard keeps its own counts (written under its lock, read lock-free), so `watched()` sums
//! them instead of every watch bouncing one shared counter between cores.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};

use super::operation::{DelayedOperation, Operation, UNWATCHED};
use crate::sync::{Arc, AtomicUsize, Mutex, Ordering};
use crate::unwind::drop_caught;

/// A list is shrunk when it uses less than a quarter of a capacity above this.
const SHRINK_ABOVE: usize = 64;

/// One entry of a key's list: an operation, and which of its watches this is.
struct Watcher<K, T: ?Sized> {
    op: Arc<Operation<K, T>>,
    slot: usize,
}

impl<K, T: ?Sized> Watcher<K, T> {
    /// Tells the watch this entry stands for that it now sits at `index`.
    fn moved_to(&self, index: usize) {
        self.op.watches()[self.slot].index.store(index, Ordering::Relaxed);
    }
}

/// A key's list. Most keys in a request-per-key workload have one watcher: that one is stored in
/// the map itself, with no allocation of its own.
enum List<K, T: ?Sized> {
    One(Watcher<K, T>),
    Many(Vec<Watcher<K, T>>),
}

impl<K, T: ?Sized> List<K, T> {
    /// The list's watchers, in order.
    fn into_vec(self) -> Vec<Watcher<K, T>> {
        match self {
            List::One(only) => vec![only],
            List::Many(list) => list,
        }
    }

    fn as_slice(&self) -> &[Watcher<K, T>] {
        match self {
            List::One(watcher) => std::slice::from_ref(watcher),
            List::Many(watchers) => watchers,
        }
    }

    /// Appends `watcher`; returns its index.
    fn push(&mut self, watcher: Watcher<K, T>) -> usize {
        match self {
            List::Many(watchers) => {
                watchers.push(watcher);
                watchers.len() - 1
            }
            List::One(_) => {
                let List::One(first) = std::mem::replace(self, List::Many(Vec::with_capacity(4))) else {
                    unreachable!()
                };
                let List::Many(watchers) = self else { unreachable!() };
                watchers.extend([first, watcher]);
                1
            }
        }
    }

    /// Swap-removes the entry at `index` (fixing the index of the entry moved into its place).
    /// Returns the entry and whether the list is now empty.
    fn swap_remove(&mut self, index: usize) -> (Watcher<K, T>, bool) {
        match self {
            List::One(_) => {
                debug_assert_eq!(index, 0);
                let List::One(only) = std::mem::replace(self, List::Many(Vec::new())) else { unreachable!() };
                (only, true)
            }
            List::Many(watchers) => {
                let removed = watchers.swap_remove(index);
                if let Some(moved) = watchers.get(index) {
                    moved.moved_to(index);
                }
                if watchers.capacity() > SHRINK_ABOVE && watchers.len() < watchers.capacity() / 4 {
                    let target = watchers.capacity() / 2;
                    watchers.shrink_to(target);
                }
                (removed, watchers.is_empty())
            }
        }
    }
}

/// A shard of the key space: its lock, its lists, and its counts, on their own cache lines.
#[repr(align(128))]
struct Shard<K, T: ?Sized> {
    lists: Mutex<HashMap<K, List<K, T>>>,
    /// Entries in all lists of this shard (written under `lists`' lock).
    watched: AtomicUsize,
    /// Lists (keys) in this shard (written under `lists`' lock).
    keys: AtomicUsize,
}

/// Adds or subtracts `n` on a counter that only its shard's lock holder writes.
fn bump(counter: &AtomicUsize, up: bool, n: usize) {
    let value = counter.load(Ordering::Relaxed);
    counter.store(if up { value + n } else { value - n }, Ordering::Relaxed);
}

impl<K, T> Shard<K, T>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    T: DelayedOperation + ?Sized,
{
    fn new() -> Self {
        Shard { lists: Mutex::new(HashMap::new()), watched: AtomicUsize::new(0), keys: AtomicUsize::new(0) }
    }
}

/// Operations copied out of a list: the first apart, so a one-watcher list needs no allocation.
pub(crate) type Snapshot<K, T> = (Option<Arc<Operation<K, T>>>, Vec<Arc<Operation<K, T>>>);

/// The sharded watcher lists of one purgatory.
pub(crate) struct Watchers<K, T: ?Sized> {
    shards: Box<[Shard<K, T>]>,
    /// Picks the shard; independent of the maps' own hashers so keys of one shard still spread.
    hasher: RandomState,
}

/// The number of shards: enough that checks on different keys rarely meet, few enough that summing
/// the counters stays cheap. Under loom, two (models stay small).
pub(crate) fn default_shards() -> usize {
    if cfg!(delaywheel_loom) {
        return 2;
    }
    let cpus = std::thread::available_parallelism().map_or(4, usize::from);
    (cpus * 16).next_power_of_two().clamp(32, 1024)
}

impl<K, T> Watchers<K, T>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    T: DelayedOperation + ?Sized,
{
    /// `shards` is rounded up to a power of two (at least 1).
    pub(crate) fn new(shards: usize) -> Self {
        let shards = shards.max(1).next_power_of_two();
        Watchers { shards: (0..shards).map(|_| Shard::new()).collect(), hasher: RandomState::new() }
    }

    /// The index of the shard that holds `key`'s list.
    pub(crate) fn shard_of(&self, key: &K) -> usize {
        (self.hasher.hash_one(key) as usize) & (self.shards.len() - 1)
    }

    /// Appends `op`'s watch number `slot` to its key's list (creating the list if needed).
    pub(crate) fn watch(&self, op: &Arc<Operation<K, T>>, slot: usize) {
        let watch = &op.watches()[slot];
        let shard = &self.shards[watch.shard];
        let mut lists = shard.lists.lock();
        debug_assert_eq!(watch.index.load(Ordering::Relaxed), UNWATCHED, "watched twice");
        let entry = Watcher { op: Arc::clone(op), slot };
        let index = match lists.get_mut(&watch.key) {
            Some(list) => list.push(entry),
            None => {
                lists.insert(watch.key.clone(), List::One(entry));
                bump(&shard.keys, true, 1);
                0
            }
        };
        watch.index.store(index, Ordering::Relaxed);
        bump(&shard.watched, true, 1);
    }

    /// Removes `op`'s watch number `slot` from its key's list, if it is still there (a `cancel_for_key`
    /// may have taken the whole list already). O(1); an emptied list is removed.
    pub(crate) fn unwatch(&self, op: &Operation<K, T>, slot: usize) {
        let watch = &op.watches()[slot];
        let shard = &self.shards[watch.shard];
        let mut lists = shard.lists.lock();
        let index = watch.index.load(Ordering::Relaxed);
        if index == UNWATCHED {
            return;
        }
        let list = lists.get_mut(&watch.key).expect("a listed watch's key has a list");
        debug_assert!(
            list.as_slice().get(index).is_some_and(|w| std::ptr::eq(&*w.op, op) && w.slot == slot),
            "watch index out of date: slot {slot}, index {index}, list length {}",
            list.as_slice().len()
        );
        let (removed, empty) = list.swap_remove(index);
        watch.index.store(UNWATCHED, Ordering::Relaxed);
        bump(&shard.watched, false, 1);
        let gone = empty.then(|| {
            // The key comes out with its list, dropped below: no user code runs between the
            // removal and its count.
            let gone = lists.remove_entry(&watch.key);
            bump(&shard.keys, false, 1);
            shrink_map(&mut lists);
            gone
        });
        drop(lists);
        // The list's reference may be the last one: release it (and maybe the user's value) unlocked,
        // and the map's copy of the key with it (its `Drop` is user code too).
        drop_caught(removed);
        drop_caught(gone);
    }

    /// The operations watched under `key` that have not finished, copied out so the caller can try
    /// them without holding the shard lock.
    pub(crate) fn snapshot(&self, key: &K) -> Snapshot<K, T> {
        let lists = self.shards[self.shard_of(key)].lists.lock();
        match lists.get(key) {
            None => (None, Vec::new()),
            Some(List::One(only)) => (Some(Arc::clone(&only.op)), Vec::new()),
            Some(List::Many(list)) => {
                (None, list.iter().filter(|w| !w.op.is_done()).map(|w| Arc::clone(&w.op)).collect())
            }
        }
    }

    /// Removes `key`'s whole list and returns its operations (an operation watched twice under
    /// `key` appears twice).
    pub(crate) fn take(&self, key: &K) -> Vec<Arc<Operation<K, T>>> {
        let shard = &self.shards[self.shard_of(key)];
        let mut lists = shard.lists.lock();
        let Some((listed_key, list)) = lists.remove_entry(key) else {
            return Vec::new();
        };
        let list = list.into_vec();
        for w in &list {
            w.op.watches()[w.slot].index.store(UNWATCHED, Ordering::Relaxed);
        }
        bump(&shard.watched, false, list.len());
        bump(&shard.keys, false, 1);
        shrink_map(&mut lists);
        drop(lists);
        // The map's copy of the key, dropped unlocked with its `Drop`'s panic caught: the counts are
        // already right, and the operations go back to the caller whatever the key does.
        drop_caught(listed_key);
        list.into_iter().map(|w| w.op).collect()
    }

    /// Room for keys the maps hold allocated (for the flat-memory tests).
    #[cfg(test)]
    pub(crate) fn key_capacity(&self) -> usize {
        self.shards.iter().map(|s| s.lists.lock().capacity()).sum()
    }
}

impl<K, T: ?Sized> Watchers<K, T> {
    /// Watch entries in all lists.
    pub(crate) fn watched(&self) -> usize {
        self.shards.iter().map(|s| s.watched.load(Ordering::Relaxed)).sum()
    }

    /// Keys with a (non-empty) list.
    pub(crate) fn keys(&self) -> usize {
        self.shards.iter().map(|s| s.keys.load(Ordering::Relaxed)).sum()
    }

    /// Takes every list out, each watch marked unwatched under its shard's lock as
    /// [`take`](Watchers::take) marks them (an expiry still running on a detached driver then
    /// finds nothing to unwatch), and releases the operations unlocked, each drop's panic caught.
    pub(crate) fn clear(&self) {
        for shard in self.shards.iter() {
            let mut lists = shard.lists.lock();
            let taken = std::mem::take(&mut *lists);
            for w in taken.values().flat_map(List::as_slice) {
                w.op.watches()[w.slot].index.store(UNWATCHED, Ordering::Relaxed);
            }
            shard.watched.store(0, Ordering::Relaxed);
            shard.keys.store(0, Ordering::Relaxed);
            drop(lists);
            // One by one, each drop caught: a list may hold the last reference to an operation
            // (one that never expires), whose `Drop` is user code, and a second panic while the
            // first unwinds would abort the process.
            for (key, list) in taken {
                drop_caught(key);
                for watcher in list.into_vec() {
                    drop_caught(watcher);
                }
            }
        }
    }
}

/// Gives back map capacity that is mostly unused (after a burst of keys has drained).
fn shrink_map<K: Hash + Eq, V>(lists: &mut HashMap<K, V>) {
    if lists.capacity() > SHRINK_ABOVE && lists.len() < lists.capacity() / 4 {
        let target = lists.capacity() / 2;
        lists.shrink_to(target);
    }
}

#[cfg(all(test, not(delaywheel_loom)))]
mod tests {
    use super::*;
    use crate::purgatory::operation::{Watch, Watches};

    struct Never;
    impl DelayedOperation for Never {
        fn try_complete(&self) -> bool {
            false
        }
        fn on_complete(&self) {}
        fn on_expiration(&self) {}
    }

    fn op(watchers: &Watchers<u64, Never>, keys: &[u64]) -> Arc<Operation<u64, Never>> {
        let watches = keys.iter().map(|&key| Watch {
            key,
            shard: watchers.shard_of(&key),
            index: AtomicUsize::new(UNWATCHED),
        });
        Arc::new(Operation::new(Arc::new(Never), Watches::from_iter(watches)))
    }

    fn watch_all(watchers: &Watchers<u64, Never>, op: &Arc<Operation<u64, Never>>) {
        for slot in 0..op.watches().len() {
            watchers.watch(op, slot);
        }
    }

    fn unwatch_all(watchers: &Watchers<u64, Never>, op: &Arc<Operation<u64, Never>>) {
        for slot in 0..op.watches().len() {
            watchers.unwatch(op, slot);
        }
    }

    #[test]
    fn swap_remove_keeps_every_index_true() {
        let watchers = Watchers::new(4);
        let ops: Vec<_> = (0..50).map(|i| op(&watchers, &[1, 2, i % 3])).collect();
        ops.iter().for_each(|op| watch_all(&watchers, op));
        assert_eq!(watchers.watched(), 150);
        // Remove in a scrambled order; after each removal every remaining index must be true
        // (the debug assertion in `unwatch` checks the ones it uses).
        for i in (0..50).map(|i| (i * 17) % 50) {
            unwatch_all(&watchers, &ops[i]);
        }
        assert_eq!(watchers.watched(), 0);
        assert_eq!(watchers.keys(), 0);
        assert!(ops.iter().all(|op| Arc::strong_count(op) == 1), "lists released every operation");
    }

    #[test]
    fn take_marks_the_watches_unlisted_and_unwatch_then_skips_them() {
        let watchers = Watchers::new(2);
        let a = op(&watchers, &[7, 8]);
        let b = op(&watchers, &[7, 7]);
        watch_all(&watchers, &a);
        watch_all(&watchers, &b);
        assert_eq!((watchers.watched(), watchers.keys()), (4, 2));
        let taken = watchers.take(&7);
        assert_eq!(taken.len(), 3, "b is listed twice under 7");
        assert_eq!((watchers.watched(), watchers.keys()), (1, 1));
        unwatch_all(&watchers, &a);
        unwatch_all(&watchers, &b);
        assert_eq!((watchers.watched(), watchers.keys()), (0, 0));
        assert!(watchers.take(&7).is_empty());
    }

    /// A key whose `Drop` panics while `ARMED` is set.
    #[derive(Clone, PartialEq, Eq, Hash)]
    struct Bomb(u64);
    static ARMED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    impl Drop for Bomb {
        fn drop(&mut self) {
            if ARMED.load(Ordering::Relaxed) {
                panic!("key {} dropped", self.0);
            }
        }
    }

    #[test]
    fn a_key_whose_drop_panics_leaves_the_counts_exact() {
        let watchers: Watchers<Bomb, Never> = Watchers::new(2);
        let op = |key: u64| {
            let watch = Watch {
                key: Bomb(key),
                shard: watchers.shard_of(&Bomb(key)),
                index: AtomicUsize::new(UNWATCHED),
            };
            Arc::new(Operation::new(Arc::new(Never), Watches::from_iter([watch].into_iter())))
        };
        let (a, b) = (op(1), op(2));
        watchers.watch(&a, 0);
        watchers.watch(&b, 0);
        assert_eq!((watchers.watched(), watchers.keys()), (2, 2));
        let two = Bomb(2);
        ARMED.store(true, Ordering::Relaxed);
        // The last watch of key 1 goes, and with it the map's copy of the key, whose drop panics.
        watchers.unwatch(&a, 0);
        let taken = watchers.take(&two);
        ARMED.store(false, Ordering::Relaxed);
        assert_eq!(taken.len(), 1);
        assert_eq!((watchers.watched(), watchers.keys()), (0, 0), "counts follow the lists");
        drop(taken);
        assert!(Arc::strong_count(&a) == 1 && Arc::strong_count(&b) == 1, "lists released both operations");
    }

    #[test]
    fn maps_and_lists_give_memory_back_after_a_burst() {
        let watchers = Watchers::new(8);
        let ops: Vec<_> = (0..100_000).map(|i| op(&watchers, &[i, u64::MAX])).collect();
        ops.iter().for_each(|op| watch_all(&watchers, op));
        let peak = watchers.key_capacity();
        assert!(peak >= 100_000);
        ops.iter().for_each(|op| unwatch_all(&watchers, op));
        assert_eq!((watchers.watched(), watchers.keys()), (0, 0));
        assert!(watchers.key_capacity() <= 8 * SHRINK_ABOVE * 2, "maps shrank: {}", watchers.key_capacity());
    }
}
