//! `Shared`: the state a timer, its driver and its executor threads share, built on one `Core`
//! (shards of slots, each under one lock with its wheel, and the one delay queue of their
//! buckets), with the payload, the shard's extra and the tallies it keeps beside it. The parent
//! module's docs ("On the core") say what each holds and which room works on it.

use std::collections::HashMap;

use crate::builder::{Config, TaskExecution};
use crate::delay_queue::Timeline;
use crate::driver::Executor;
use crate::entry::stamps::Stamps;
use crate::entry::task_slab::TaskSlab;
use crate::entry::InlineTask;
use crate::shard::core::{Bucketed, Core, Extra as CoreExtra};
use crate::sync::{Arc, AtomicBool, AtomicU64, AtomicUsize, Mutex, Ordering, UnmodelledAtomicU64};

use super::shrink::AutoShrink;
use super::stats::Lateness;
use super::{advancing, unfired, ExecutorRoom, Time};

/// An entry's payload (the parent module's docs, "Payload").
pub(crate) type Payload = InlineTask;

/// The timer's core: payloads and each shard's [`Extra`].
pub(crate) type TimerCore = Core<Payload, Extra>;

/// A handle of the timer's core.
pub(crate) type CoreHandle = crate::shard::core::Handle<Payload, Extra>;

/// The delay queue of the core's buckets (the drivers wait on it).
pub(crate) type BucketQueue = crate::delay_queue::DelayQueue<Bucketed>;

/// What each shard keeps beside its wheel, under its lock (the parent module's docs, "Handles"):
/// set for every shard when the timer starts ([`Core::for_each_extra`]), read by the handles
/// through their shard.
#[derive(Debug, Default)]
pub(crate) struct Extra {
    /// The timer's clock and tick: a handle's reset and deadline read them.
    pub(super) time: Option<Time>,
    /// A bounded timer's gauge (`max_pending`), lowered by a handle's cancel.
    pub(super) bound: Option<Arc<AtomicUsize>>,
    /// Deadlines before the clock's origin, by stamp: signed nanoseconds from the clock's base,
    /// kept per shard (`handle.rs`, "Before the origin").
    pub(super) before_origin: HashMap<u64, i64>,
}

impl CoreExtra<Payload> for Extra {
    /// A tick group's entry is uncounted (`InlineTask::is_counted`): its members count themselves
    /// (`group_entries.rs`).
    #[inline]
    fn counts(payload: &Payload) -> bool {
        payload.is_counted()
    }

    /// A closure in a block of the task slab: its bytes fetched into the cache.
    #[inline]
    fn warm(payload: &Payload) {
        payload.prefetch();
    }
}

/// Counts beside the core's totals, shared with the executor threads.
#[derive(Debug, Default)]
pub(crate) struct Tallies {
    /// Tasks (and wakes, and drops of a closure) that panicked.
    pub(super) panicked: AtomicU64,
    /// Entries an executor claimed to discard (counted `fired` by the core): abandoned. Held
    /// across such a claim and its count, and across `stats`' read of the core's totals and this
    /// count, so that `fired` (the core's less this) never counts a discard the read misses.
    pub(super) discarded: Mutex<u64>,
}

/// The state shared by the timer, its driver and its executor threads.
pub(crate) struct Shared {
    pub(super) time: Time,
    pub(super) wheel_size: u64,
    /// The entries, the wheels and the queue of buckets; shared with the executor room.
    pub(super) core: Arc<TimerCore>,
    /// The blocks of closures over 16 bytes.
    pub(super) slab: Arc<TaskSlab>,
    /// The entries' stamps: generation, tie-break and round (`entry/stamps.rs`).
    pub(super) stamps: Stamps,
    pub(super) shut_down: AtomicBool,
    /// Serialises advancing and the shutdown's wait for it; never taken on the schedule path.
    pub(super) advance_lock: Mutex<super::advance::Scratch>,
    /// The driver's cursor: the last tick advanced to.
    pub(super) current_tick: AtomicU64,
    pub(super) executor: Option<Executor>,
    /// See `TimerBuilder::max_pending`.
    pub(super) max_pending: usize,
    /// A bounded timer's gauge of pending tasks (the parent module's docs, "Counts").
    pub(super) bound: Option<Arc<AtomicUsize>>,
    /// Firing lateness, recorded as tasks start; shared with executor threads.
    pub(super) lateness: Arc<Lateness>,
    pub(super) tallies: Arc<Tallies>,
    /// The tick groups' members (`group_entries.rs`).
    pub(super) members: super::group_entries::Members,
    /// Where fired value entries go (`values.rs`).
    pub(super) values: super::values::Sink,
    /// Value entries a shutdown's drain took that its queue has not yet counted out
    /// (`shutdown.rs`, `close_values`).
    pub(super) abandoned_values: AtomicU64,
    /// Shutdowns whose drain has not yet counted its values (`shutdown.rs`, `close_values`).
    pub(super) draining: AtomicUsize,
    /// When the driver may shrink next, since when the load is low, its shrink's steps (`shrink.rs`).
    pub(super) auto_shrink: Mutex<AutoShrink>,
    /// This timer's identity (`unfired.rs`).
    pub(super) id: usize,
    /// The thread inside this timer's advance, if any (`advancing.rs`).
    pub(super) advancer: UnmodelledAtomicU64,
}

impl Shared {
    /// The state of a timer built with `config`, its executor threads started (if it has any);
    /// not its driver (`Timer::start`).
    pub(crate) fn start(config: Config) -> std::io::Result<Arc<Shared>> {
        let shards = std::thread::available_parallelism().map_or(1, usize::from);
        let core = Arc::new(TimerCore::with_capacity(shards, config.wheel_size, config.capacity));
        let time = Time { clock: config.clock, ticks: config.ticks };
        let bound = (config.max_pending != usize::MAX).then(|| Arc::new(AtomicUsize::new(0)));
        core.for_each_extra(|extra| {
            extra.time = Some(time.clone());
            extra.bound.clone_from(&bound);
        });
        let (lateness, tallies, slab) =
            (Arc::new(Lateness::new()), Arc::default(), Arc::new(TaskSlab::new()));
        let executor = match config.execution {
            TaskExecution::OnDriver => None,
            TaskExecution::Threads(n) => {
                let room = ExecutorRoom::new(&core, &slab, (&lateness, &tallies), &time, &bound);
                Some(Executor::start(n, &config.thread_name, &room)?)
            }
        };
        let shared = Arc::new(Shared {
            time,
            wheel_size: config.wheel_size,
            core,
            slab,
            stamps: Stamps::new(),
            shut_down: AtomicBool::new(false),
            advance_lock: Mutex::new(super::advance::Scratch::default()),
            current_tick: AtomicU64::new(0),
            executor,
            max_pending: config.max_pending,
            bound,
            lateness,
            tallies,
            members: super::group_entries::Members::default(),
            values: super::values::Sink::new(),
            abandoned_values: AtomicU64::new(0),
            draining: AtomicUsize::new(0),
            auto_shrink: Mutex::new(AutoShrink::default()),
            id: unfired::TimerId::fresh(),
            advancer: UnmodelledAtomicU64::new(0),
        });
        shared.current_tick.store(shared.time.now_tick(), Ordering::Relaxed);
        Ok(shared)
    }

    /// The number of tasks pending ([`Timer::len`](super::Timer::len)): on a bounded timer its
    /// gauge, else the core's count and the tick groups' members.
    pub(crate) fn len(&self) -> usize {
        if let Some(bound) = &self.bound {
            return bound.load(Ordering::Relaxed);
        }
        self.core.len().wrapping_add(self.members.pending())
    }

    /// Slots per level ([`Timer::wheel_size`](super::Timer::wheel_size)).
    pub(crate) fn wheel_size(&self) -> usize {
        self.wheel_size as usize
    }

    #[inline]
    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::Acquire)
    }

    pub(crate) fn queue(&self) -> &BucketQueue {
        self.core.queue()
    }

    /// Warms the buckets due at the next tick, unless they were the last warmed (`done`)
    /// (`shard/core/warm.rs`): for a driver about to wait. The tick warmed, else `done`.
    pub(crate) fn warm_next(&self, done: Option<u64>) -> Option<u64> {
        self.core.warm_next(self.time.now_tick(), done).map(|(at, _)| at).or(done)
    }

    /// The driver's cursor (see [`Timer::current_time`](super::Timer::current_time)).
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

    /// Counts `n` panicked tasks or wakes (`shutdown.rs`).
    #[inline]
    pub(super) fn count_panicked(&self, n: u64) {
        if n > 0 {
            self.tallies.panicked.fetch_add(n, Ordering::Relaxed);
        }
    }
}
