//! `TimerBuilder`: configuration, validated once, then a running [`Timer`].

use std::time::Duration;

use crate::clock::{ClockSource, ManualClock, TickLength};
use crate::timer::Timer;
use crate::BuildError;

/// The default tick: 1 ms.
pub const DEFAULT_TICK: Duration = Duration::from_millis(1);

/// The default number of slots per level.
///
/// 512 slots give level spans of 512 ms, 4.4 min and 37 h at a 1 ms tick: request timeouts up to
/// half a second never cascade, heartbeats of seconds to minutes cascade once, and far deadlines
/// spread over many buckets. A level costs 512 buckets of 24 bytes (12 KiB) in each shard that
/// files a task in it (each thread schedules into a shard of its own, with its own wheel), created
/// only when first needed. See `docs/design.md`, "Defaults".
pub const DEFAULT_WHEEL_SIZE: usize = 512;

/// The largest wheel size accepted: 2^24 = 16 777 216 slots; a larger one is refused with
/// [`BuildError::WheelSizeTooLarge`].
///
/// Each shard's wheel (each thread schedules into a shard of its own) creates a level's buckets in
/// chunks of up to 512 consecutive slots, each when a task first needs one of them (24 bytes a
/// bucket: 12 KiB a chunk), and never frees them; a level keeps a list of its chunks. So a
/// `wheel_size(86_400)` at a 1 s tick (a day of seconds in level 0) or `wheel_size(1 << 24)` with a
/// few tasks starts small, and grows as the wheel's time moves round level 0 with tasks pending:
/// after `wheel_size` ticks with a task in every chunk's span, level 0 is whole (2 MiB a shard at
/// 86 400 slots, 384 MiB at 2^24). Size the wheel for a whole level 0. The bound is the wheel's
/// code of a bucket, which names a slot in 24 bits (docs/design.md, "Levels, buckets and the delay
/// queue").
pub const MAX_WHEEL_SIZE: usize = 1 << 24;

// The shard wheel's bound is the builder's.
const _: () = assert!(MAX_WHEEL_SIZE as u64 == crate::shard::wheel::MAX_WHEEL_SIZE);

/// The fewest lanes [`TimerBuilder::bucket_lanes`] accepts.
const MIN_BUCKET_LANES: usize = 2;

/// The most lanes [`TimerBuilder::bucket_lanes`] accepts.
const MAX_BUCKET_LANES: usize = 16;

/// The most pending tasks a timer holds, and the largest [`TimerBuilder::capacity`]: 2^32 - 2 (48
/// bytes a task's slot: all of them are 206 GB). A schedule beyond it is
/// refused with [`ScheduleError::TooManyPending`](crate::ScheduleError::TooManyPending).
pub const MAX_CAPACITY: usize = crate::shard::core::MAX_CAPACITY;

/// Where fired tasks run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskExecution {
    /// On the thread that advances the clock (the driver thread, or the caller of
    /// [`Timer::advance_clock`]). Cheapest, and firing order follows deadlines; but a slow task delays
    /// every firing after it. Keep tasks short (hand heavy work to your own pool). The default.
    #[default]
    OnDriver,
    /// On this many executor threads (at least 1), fed through a channel, so a slow task cannot
    /// delay the wheel.
    /// Costs a channel hop per task. With `manual()` timers tasks then run on those threads, not
    /// inside `advance_clock`.
    Threads(usize),
}

/// Configures and builds a [`Timer`]. Created by [`Timer::builder`].
///
/// ```
/// use delaywheel::Timer;
/// use std::time::Duration;
///
/// let timer = Timer::builder()
///     .tick(Duration::from_millis(1))
///     .wheel_size(20)
///     .thread_name("request-timeouts")
///     .build();
/// assert!(timer.is_empty());
/// ```
#[derive(Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct TimerBuilder {
    tick: Duration,
    wheel_size: usize,
    clock: Option<ManualClock>,
    manual: bool,
    thread_name: String,
    execution: TaskExecution,
    max_pending: usize,
    precise_wakeups: bool,
    capacity: usize,
    bucket_lanes: Option<usize>,
}

impl Default for TimerBuilder {
    fn default() -> Self {
        TimerBuilder {
            tick: DEFAULT_TICK,
            wheel_size: DEFAULT_WHEEL_SIZE,
            clock: None,
            manual: false,
            thread_name: "delaywheel-driver".to_owned(),
            execution: TaskExecution::OnDriver,
            max_pending: usize::MAX,
            precise_wakeups: true,
            capacity: 0,
            bucket_lanes: None,
        }
    }
}

impl std::fmt::Debug for TimerBuilder {
    /// Every setting, `bucket_lanes` only when set (it has no default: it has no effect).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut out = f.debug_struct("TimerBuilder");
        out.field("tick", &self.tick)
            .field("wheel_size", &self.wheel_size)
            .field("clock", &self.clock)
            .field("manual", &self.manual)
            .field("thread_name", &self.thread_name)
            .field("execution", &self.execution)
            .field("max_pending", &self.max_pending)
            .field("precise_wakeups", &self.precise_wakeups)
            .field("capacity", &self.capacity);
        if let Some(lanes) = self.bucket_lanes {
            out.field("bucket_lanes", &lanes);
        }
        out.finish()
    }
}

/// A validated configuration (what `Timer` is built from).
pub(crate) struct Config {
    pub(crate) ticks: TickLength,
    pub(crate) wheel_size: u64,
    pub(crate) clock: ClockSource,
    pub(crate) manual: bool,
    pub(crate) thread_name: String,
    pub(crate) execution: TaskExecution,
    pub(crate) max_pending: usize,
    pub(crate) precise_wakeups: bool,
    pub(crate) capacity: usize,
}

impl TimerBuilder {
    /// The length of one tick of level 0: the timer's resolution. Tasks fire at the first tick
    /// boundary at or after their deadline. At least 1 µs; any longer `Duration` is a tick too
    /// (one longer than the clock's whole range, `u64::MAX` ns, has no boundary the clock reaches:
    /// only tasks already due run, and every later deadline is refused as out of range). Default
    /// [`DEFAULT_TICK`].
    pub fn tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// Slots per level; from 2 to [`MAX_WHEEL_SIZE`] (2^24), any integer between. Default
    /// [`DEFAULT_WHEEL_SIZE`].
    ///
    /// Level 0 has `wheel_size` slots of one tick, level `k` slots of `wheel_size^k` ticks, so a
    /// bigger wheel cascades less: `wheel_size(86_400)` at a 1 s tick keeps every deadline within a
    /// day in level 0. Buckets are created in chunks of up to 512 slots as tasks need them and
    /// kept, so memory follows the slots used so far
    /// ([`TimerStats::resident_buckets`](crate::TimerStats::resident_buckets)), up to a whole level
    /// 0 once the cursor has gone round it ([`MAX_WHEEL_SIZE`] says what that weighs). A
    /// size over [`MAX_WHEEL_SIZE`] (`usize::MAX` too) makes [`try_build`](TimerBuilder::try_build)
    /// return [`BuildError::WheelSizeTooLarge`].
    pub fn wheel_size(mut self, wheel_size: usize) -> Self {
        self.wheel_size = wheel_size;
        self
    }

    /// Reads this manual clock instead of the system clock.
    pub fn clock(mut self, clock: ManualClock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// No driver thread: time advances only when [`Timer::advance_clock`] is called, and tasks run
    /// inside it (unless [`TaskExecution::Threads`] is chosen).
    pub fn manual(mut self) -> Self {
        self.manual = true;
        self
    }

    /// The name of the driver thread (executor threads get this name with `-exec-N` appended).
    pub fn thread_name(mut self, name: impl Into<String>) -> Self {
        self.thread_name = name.into();
        self
    }

    /// Where fired tasks run. Default [`TaskExecution::OnDriver`].
    pub fn execution(mut self, execution: TaskExecution) -> Self {
        self.execution = execution;
        self
    }

    /// The most tasks that may be pending at once; beyond it
    /// [`try_schedule`](Timer::try_schedule) fails with
    /// [`ScheduleError::TooManyPending`](crate::ScheduleError::TooManyPending) (and `schedule` drops the
    /// task and returns an inert handle). Unlimited by default. Netty added the same bound
    /// (`maxPendingTimeouts`) after out-of-memory reports: a runaway producer then gets an error
    /// instead of taking the process down.
    pub fn max_pending(mut self, max_pending: usize) -> Self {
        self.max_pending = max_pending;
        self
    }

    /// Whether the driver thread asks the OS to wake it within a thousandth of a tick (default
    /// `true`). On Linux and Android this lowers the driver thread's *timer slack* (`prctl(2)`), by
    /// which the kernel may wake a sleeping thread late to batch wake-ups: 50 µs by default, 5 % of
    /// a 1 ms tick, which would add to every task's lateness. It is only ever lowered, never
    /// raised, and only with the system clock; elsewhere nothing is done.
    ///
    /// The setting belongs to the thread, so tasks run on the driver
    /// ([`TaskExecution::OnDriver`], the default) and the threads and processes they start run with
    /// it too. Turn it off to leave the driver thread's slack as the process set it (e.g. to save
    /// power on a timer whose lateness does not matter to a few tens of microseconds).
    pub fn precise_wakeups(mut self, precise: bool) -> Self {
        self.precise_wakeups = precise;
        self
    }

    /// Room for this many pending tasks, allocated and written when the timer is built (default 0:
    /// none until needed). On Linux it is one mapping of that many slots made resident at the
    /// build, in units of 256, from which whichever shard grows (each scheduling thread schedules
    /// into a shard of its own) takes runs of units, moved into its slots by `mremap` with no
    /// first-touch fault; elsewhere the slots are written into the building thread's shard. The
    /// slots of a timer are otherwise created on first use, and the first touch of fresh memory is
    /// a page fault: about a quarter of an insert's time while a timer first grows (SPEC W1 on a
    /// cold timer). A server that knows its load pays that at start-up instead, as tokio-util's
    /// `DelayQueue::with_capacity` and the warm-up of the source articles do. The room stays (48
    /// bytes a slot; 1,000,000 are 48 MB): [`Timer::shrink`](crate::Timer::shrink), and the
    /// driver's own shrink after a spike, give back only what the shards grew beyond it. More than
    /// [`MAX_CAPACITY`] makes [`try_build`](TimerBuilder::try_build) fail with
    /// [`BuildError::CapacityTooLarge`] before anything is allocated; below it, the memory asked
    /// for is allocated and written at once, so a capacity beyond the host's memory exhausts it.
    ///
    /// It covers the tasks' slots and closures of up to 16 bytes; bigger closures' blocks
    /// (`schedule`'s "What a task's size costs") and the wheels' buckets grow on first use.
    ///
    /// ```
    /// use delaywheel::Timer;
    ///
    /// let timer = Timer::builder().capacity(100_000).build();
    /// assert!(timer.is_empty());
    /// ```
    pub fn capacity(mut self, tasks: usize) -> Self {
        self.capacity = tasks;
        self
    }

    /// Lanes per bucket, a power of two from 2 to 16: accepted and validated, and otherwise
    /// without effect. Buckets have no lanes: each thread schedules into a shard of its own, under
    /// that shard's lock, so threads that do not share a shard do not share a lock whatever the
    /// delay. The setting is kept so that builds that set it compile and are validated.
    ///
    /// A value that is not a power of two from 2 to 16 makes [`try_build`](TimerBuilder::try_build)
    /// fail with [`BuildError::InvalidBucketLanes`].
    ///
    /// ```
    /// use delaywheel::Timer;
    ///
    /// let timer = Timer::builder().bucket_lanes(16).build();
    /// assert!(timer.is_empty());
    /// ```
    pub fn bucket_lanes(mut self, lanes: usize) -> Self {
        self.bucket_lanes = Some(lanes);
        self
    }

    /// Builds the timer and starts its threads.
    ///
    /// # Errors
    ///
    /// [`BuildError`] for a tick under 1 µs, a wheel size under 2 or over [`MAX_WHEEL_SIZE`], zero
    /// executor threads, a thread name with a NUL byte, bucket lanes that are not a power of two
    /// from 2 to 16, a [`capacity`](TimerBuilder::capacity) over [`MAX_CAPACITY`], or if a thread
    /// cannot start.
    pub fn try_build(self) -> Result<Timer, BuildError> {
        let ticks = TickLength::new(self.tick).ok_or(BuildError::TickTooShort(self.tick))?;
        if self.wheel_size < 2 {
            return Err(BuildError::WheelSizeTooSmall(self.wheel_size));
        }
        if self.wheel_size > MAX_WHEEL_SIZE {
            return Err(BuildError::WheelSizeTooLarge(self.wheel_size));
        }
        if self.execution == TaskExecution::Threads(0) {
            return Err(BuildError::NoExecutorThreads);
        }
        if self.thread_name.contains('\0') {
            return Err(BuildError::InvalidThreadName(self.thread_name));
        }
        if let Some(lanes) = self.bucket_lanes {
            if !lanes.is_power_of_two() || !(MIN_BUCKET_LANES..=MAX_BUCKET_LANES).contains(&lanes) {
                return Err(BuildError::InvalidBucketLanes(lanes));
            }
        }
        if self.capacity > MAX_CAPACITY {
            return Err(BuildError::CapacityTooLarge(self.capacity));
        }
        let config = Config {
            ticks,
            wheel_size: self.wheel_size as u64,
            clock: self.clock.map_or_else(ClockSource::system, ClockSource::Manual),
            manual: self.manual,
            thread_name: self.thread_name,
            execution: self.execution,
            max_pending: self.max_pending,
            precise_wakeups: self.precise_wakeups,
            capacity: self.capacity,
        };
        Timer::start(config).map_err(BuildError::Spawn)
    }

    /// Builds the timer and starts its threads.
    ///
    /// # Panics
    ///
    /// On an invalid configuration, with the message of the [`BuildError`] that
    /// [`try_build`](TimerBuilder::try_build) would return.
    #[track_caller]
    pub fn build(self) -> Timer {
        match self.try_build() {
            Ok(timer) => timer,
            Err(err) => panic!("invalid timer configuration: {err}"),
        }
    }
}
