//! [`Shared`]: the state a timer, its driver and its executor threads share, and how it is built.
//!
//! The facade (`Timer`'s public methods in `mod.rs`), `weak.rs`, `groups.rs`, `values.rs`'s
//! `Timer` methods and the drivers (`driver/`) reach it only through methods: the
//! **seam** (docs/lean_core.md, "The seam", lists each with its signature and the slice of the
//! move onto the sharded core that provides it). Its fields are the rooms' (`schedule.rs`,
//! `advance.rs`, `fire.rs`, `cancel.rs`, `reset.rs`, `shutdown.rs`, `shrink.rs`, `counters.rs`,
//! `stats.rs`, ...), which a core-backed `Shared` rewrites; the seam's methods keep their names
//! and signatures there. Of them, this file has the state's construction ([`Shared::start`]) and
//! the plain reads: [`is_shut_down`](Shared::is_shut_down), [`queue`](Shared::queue),
//! [`time`](Shared::time), [`current_tick`](Shared::current_tick), [`len`](Shared::len),
//! [`wheel_size`](Shared::wheel_size), [`timer_id`](Shared::timer_id) and
//! [`advancing_here`](Shared::advancing_here).

use crate::builder::{Config, TaskExecution};
use crate::delay_queue::{DelayQueue, Timeline};
use crate::driver::Executor;
use crate::entry::{EntryArena, EntryId};
use crate::sync::{Arc, AtomicBool, AtomicU64, AtomicUsize, Mutex, Ordering, UnmodelledAtomicU64};
use crate::wheel::TimingWheel;

use super::advance::Scratch;
use super::counters::Counters;
use super::fire::ExecutorRoom;
use super::stats::Lateness;
use super::{advancing, shrink, unfired, values, BucketQueue, Store, Time};

/// The state shared by the timer, its driver and its executor threads.
pub(crate) struct Shared {
    pub(super) time: Time,
    /// The entries and the wheel; shared with the handles (through the counter stripes).
    pub(super) store: Store,
    /// Shared with the store, like the shutdown flag: a reset re-adds through them (`reset.rs`).
    pub(super) queue: Arc<BucketQueue>,
    pub(super) counters: Arc<Counters<Store>>,
    pub(super) shut_down: Arc<AtomicBool>,
    /// Serialises advancing and the final drain; never taken on the schedule path.
    pub(super) advance_lock: Mutex<Scratch>,
    /// The driver's cursor: the expiration of the last flushed bucket, or the last advanced-to tick.
    pub(super) current_tick: AtomicU64,
    pub(super) executor: Option<Executor>,
    /// See `TimerBuilder::max_pending`.
    pub(super) max_pending: usize,
    /// Firing lateness, recorded as tasks start (see `stats.rs`); shared with executor threads.
    pub(super) lateness: Arc<Lateness>,
    /// Where fired value entries go: the delay queue of values that owns this timer (`values.rs`).
    pub(super) values: values::Sink,
    /// Value entries a shutdown's drain claimed and its queue has not yet counted out
    /// (`shutdown.rs`).
    pub(super) abandoned_values: AtomicU64,
    /// Shutdowns whose drain has not yet counted its values: the queue's consumers are told of
    /// the shutdown only once none is left (`shutdown.rs`, `close_values`).
    pub(super) draining: AtomicUsize,
    /// When the driver shrinks the arena next (`shrink.rs`).
    pub(super) auto_shrink: shrink::AutoShrink,
    /// This timer's identity, never another timer's (`TimerId::fresh`).
    pub(super) id: usize,
    /// The thread inside this timer's advance, if any (`advancing.rs`).
    pub(super) advancer: UnmodelledAtomicU64,
}

impl Shared {
    /// The state of a timer built with `config`, its executor threads started (if it has any);
    /// not its driver (`Timer::start`).
    pub(super) fn start(config: Config) -> std::io::Result<Arc<Shared>> {
        const _: () = assert!(EntryId::MAX_INDEX as usize == crate::builder::MAX_CAPACITY);
        let mut arena = EntryArena::new();
        arena.reserve(config.capacity);
        let arena = Arc::new(arena);
        let wheel = Arc::new(TimingWheel::with_lanes(config.wheel_size, config.bucket_lanes));
        let time = Time { clock: config.clock, ticks: config.ticks };
        let (queue, shut_down) = (Arc::new(DelayQueue::new()), Arc::new(AtomicBool::new(false)));
        let store = Store {
            arena,
            wheel,
            queue: Arc::clone(&queue),
            shut_down: Arc::clone(&shut_down),
            time: time.clone(),
            resets: Arc::default(),
            before_origin: Arc::default(),
        };
        let counters = Arc::new(Counters::new(config.max_pending, &store));
        let lateness = Arc::new(Lateness::new());
        let executor = match config.execution {
            TaskExecution::OnDriver => None,
            TaskExecution::Threads(n) => Some(Executor::start(
                n,
                &config.thread_name,
                &ExecutorRoom::new(&counters, &store, &lateness),
            )?),
        };
        let shared = Arc::new(Shared {
            time,
            store,
            queue,
            counters,
            shut_down,
            advance_lock: Mutex::new(Scratch::default()),
            current_tick: AtomicU64::new(0),
            executor,
            max_pending: config.max_pending,
            lateness,
            values: values::Sink::new(),
            abandoned_values: AtomicU64::new(0),
            draining: AtomicUsize::new(0),
            auto_shrink: shrink::AutoShrink::default(),
            id: unfired::TimerId::fresh(),
            advancer: UnmodelledAtomicU64::new(0),
        });
        shared.current_tick.store(shared.time.now_tick(), Ordering::Relaxed);
        Ok(shared)
    }

    /// The number of tasks pending ([`Timer::len`](super::Timer::len)).
    pub(crate) fn len(&self) -> usize {
        self.counters.pending()
    }

    /// Slots per level ([`Timer::wheel_size`](super::Timer::wheel_size)).
    pub(crate) fn wheel_size(&self) -> usize {
        self.store.wheel.wheel_size() as usize
    }

    #[inline]
    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::Acquire)
    }

    pub(crate) fn queue(&self) -> &BucketQueue {
        &self.queue
    }

    /// The driver's cursor (see [`Timer::current_time`]).
    pub(crate) fn current_tick(&self) -> u64 {
        self.current_tick.load(Ordering::Acquire)
    }

    pub(crate) fn time(&self) -> &Time {
        &self.time
    }

    /// This timer's identity, as its unfired tasks carry it (`unfired.rs`).
    pub(crate) fn timer_id(&self) -> unfired::TimerId {
        unfired::TimerId(self.id)
    }

    /// Whether this thread is inside this timer's `advance` (running one of its tasks).
    pub(super) fn advancing_here(&self) -> bool {
        advancing::is_advancing(&self.advancer)
    }
}
