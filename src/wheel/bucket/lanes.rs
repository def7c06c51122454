//! A bucket's making and its lanes (see the bucket's module docs, "Lanes"): its identity, how
//! many lanes, which one a thread adds to, and every lane's lock at once for a visit or a flush.

use super::{Stage, TimerTaskList, NO_EXPIRATION};
use crate::entry::location::{BucketKey, MAX_LANES};
use crate::sync::{thread_index, AtomicU64, Mutex, MutexGuard, OnceLock, Ordering, UnmodelledAtomicU8};
use crate::wheel::place::STAGES;

/// The most lanes a bucket may have (`TimerBuilder::bucket_lanes`): what a location holds.
pub(crate) const MAX_BUCKET_LANES: usize = MAX_LANES;

/// The fewest lanes a bucket has: two, so that a scheduler and the driver's cascade re-adds in
/// the other lane do not meet on one lock (with one thread scheduling, which lane it is depends on
/// its index; at level 0, once they contend in lane 0).
pub(crate) const MIN_BUCKET_LANES: usize = 2;

/// The fewest lanes a bucket has by default, whatever the cores: thread indices are numbered
/// across the process (every thread that touches any timer), so with 2 lanes two threads of one
/// timer share a lane half the time, and threads outnumbering the cores are preempted holding a
/// lane's lock. On a 2-core host, SPEC W3 (two threads) measured 85–108 ns per insert with 2
/// lanes against 65–79 with 8, and W7's scaling at 16 threads 1.48–1.63 against 1.79–1.83
/// (docs/design.md, "Contention on many cores"); 16 lanes measured the same as 8, and cost up to
/// twice the lanes' memory under thread churn (a lane is created when a thread first adds to it).
#[cfg(not(delaywheel_loom))]
const MIN_DEFAULT_LANES: usize = 8;

/// Lanes per bucket unless configured (see the module docs): the cores (`available_parallelism`)
/// rounded up to a power of two, from [`MIN_DEFAULT_LANES`] to [`MAX_BUCKET_LANES`]. Under loom,
/// 4: the models' threads (indices 0, 1 and 2) each create and add to a lane of their own, and a
/// visit has fewer cells to walk.
pub(crate) fn default_lanes() -> usize {
    #[cfg(delaywheel_loom)]
    return 4;
    #[cfg(not(delaywheel_loom))]
    {
        let cores = std::thread::available_parallelism().map_or(MIN_DEFAULT_LANES, |n| n.get());
        cores.next_power_of_two().clamp(MIN_DEFAULT_LANES, MAX_BUCKET_LANES)
    }
}

/// The lanes a new bucket spreads its adds over, as a mask of a thread's index: lane 0 alone at
/// level 0, every lane above (see the module docs, "Lanes spread on contention"). Under loom and
/// in the unit tests every lane at every level, so that the models see each thread add to a lane
/// of its own and create it, as the unit tests expect (`tests.rs` narrows buckets where it tests
/// the spreading).
fn first_spread(level: usize, lanes: usize) -> u8 {
    if level > 0 || cfg!(any(test, delaywheel_loom)) {
        (lanes - 1) as u8
    } else {
        0
    }
}

/// One lane of a bucket: its own lock over its own stages, alone on its cache lines (128 bytes:
/// adjacent-line prefetching pairs 64-byte lines).
#[repr(align(128))]
pub(super) struct Lane {
    /// Inline, so that a schedule touches no other block than the list it appends to.
    pub(super) stages: Mutex<[Stage; STAGES as usize]>,
}

/// What a visit or a flush holds: the creation gate, then the lock of every lane created, in lane
/// order (the rest `None`: no allocation per visit).
pub(super) struct AllLanes<'a> {
    _gate: MutexGuard<'a, ()>,
    pub(super) locked: [Option<MutexGuard<'a, [Stage; STAGES as usize]>>; MAX_BUCKET_LANES],
}

impl Lane {
    fn new() -> Box<Lane> {
        Box::new(Lane { stages: Mutex::new(std::array::from_fn(|_| Stage::new())) })
    }
}

impl TimerTaskList {
    /// An empty bucket, `slot` of `level` in a wheel whose slots take `slot_bits` bits
    /// ([`BucketKey`]), of `lanes` lanes (a power of two, from [`MIN_BUCKET_LANES`] to
    /// [`MAX_BUCKET_LANES`]), none of them created yet.
    pub(crate) fn new(level: usize, slot: usize, slot_bits: u32, lanes: usize) -> Self {
        debug_assert!(lanes.is_power_of_two() && (MIN_BUCKET_LANES..=MAX_BUCKET_LANES).contains(&lanes));
        TimerTaskList {
            key: BucketKey::new(level, slot, slot_bits),
            slot_bits: slot_bits as u8,
            expiration: AtomicU64::new(NO_EXPIRATION),
            gate: Mutex::new(()),
            spread: UnmodelledAtomicU8::new(first_spread(level, lanes)),
            lanes: (0..lanes).map(|_| OnceLock::new()).collect(),
        }
    }

    /// The bucket's level and slot.
    pub(crate) fn key(&self) -> BucketKey {
        self.key
    }

    /// The bucket's level (0 is the finest).
    #[inline]
    pub(crate) fn level(&self) -> usize {
        self.key.level(u32::from(self.slot_bits))
    }

    /// The bucket's slot in its level.
    pub(crate) fn slot(&self) -> usize {
        self.key.slot(u32::from(self.slot_bits))
    }

    /// The lane of the calling thread (unit tests; see [`lock_local`](TimerTaskList::lock_local)).
    #[cfg(test)]
    pub(super) fn local_lane(&self) -> usize {
        thread_index() & usize::from(self.spread.load(Ordering::Relaxed))
    }

    /// The calling thread's lane and its lock for an add: its `thread_index` modulo the lanes the
    /// bucket spreads over (the same round robin as the counter stripes, `sync/striped.rs`). A
    /// bucket that keeps to lane 0 spreads if the lane's lock is held (see the module docs, "Lanes
    /// spread on contention").
    #[inline(always)]
    pub(super) fn lock_local(&self) -> (usize, MutexGuard<'_, [Stage; STAGES as usize]>) {
        // Relaxed: the spread only picks a lane, and any created lane is a correct one to add to.
        let spread = self.spread.load(Ordering::Relaxed);
        if spread == 0 {
            return match self.lane(0).stages.try_lock() {
                Some(stages) => (0, stages),
                None => self.lock_contended(),
            };
        }
        let index = thread_index() & usize::from(spread);
        (index, self.lane(index).stages.lock())
    }

    /// [`lock_local`](TimerTaskList::lock_local) when lane 0 was held: spreads the bucket unless
    /// a visit or a flush holds the gate (they hold every lane: more lanes would not help), then
    /// waits for the calling thread's lane.
    #[cold]
    #[inline(never)]
    fn lock_contended(&self) -> (usize, MutexGuard<'_, [Stage; STAGES as usize]>) {
        if self.gate.try_lock().is_some() {
            self.widen();
        }
        let index = thread_index() & usize::from(self.spread.load(Ordering::Relaxed));
        (index, self.lane(index).stages.lock())
    }

    /// Spreads the adds over every lane for good (a store only if it changes the spread: the byte
    /// shares its line with the expiration, which every add reads).
    fn widen(&self) {
        if self.spread.load(Ordering::Relaxed) == 0 {
            self.spread.store((self.lanes.len() - 1) as u8, Ordering::Relaxed);
        }
    }

    /// The lanes' mask the bucket spreads its adds over (unit tests).
    #[cfg(test)]
    pub(super) fn spread(&self) -> usize {
        usize::from(self.spread.load(Ordering::Relaxed))
    }

    /// The bucket, keeping to lane 0 as a level-0 bucket does in a build (unit tests).
    #[cfg(test)]
    pub(super) fn narrow(self) -> Self {
        self.spread.store(0, Ordering::Relaxed);
        self
    }

    /// Lane `index`, created on first use (see the module docs, "Lanes created on first use").
    #[inline]
    pub(super) fn lane(&self, index: usize) -> &Lane {
        match self.lanes[index].get() {
            Some(lane) => lane,
            None => self.create(index),
        }
    }

    /// Creates lane `index` under the gate, unless another thread did first.
    #[cold]
    fn create(&self, index: usize) -> &Lane {
        // Seeded fault `lane_created_outside_gate` (docs/loom.md): a lane is created without the
        // gate, so a visit that found it missing may set the expiration after an add to it read it.
        let _gate = (!fault!("lane_created_outside_gate")).then(|| self.gate.lock());
        self.lanes[index].get_or_init(Lane::new)
    }

    /// The lanes created so far, for `len` (a snapshot).
    pub(super) fn created(&self) -> impl Iterator<Item = &Lane> {
        self.lanes.iter().filter_map(|lane| lane.get().map(|lane| &**lane))
    }

    /// The gate and every created lane's lock, in lane order (a visit, the shutdown flush: see the
    /// module docs).
    pub(super) fn lock_all(&self) -> AllLanes<'_> {
        let gate = self.gate.lock();
        let locked = std::array::from_fn(|lane| self.lanes.get(lane)?.get().map(|lane| lane.stages.lock()));
        AllLanes { _gate: gate, locked }
    }
}
