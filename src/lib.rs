//! # delaywheel
//!
//! A hierarchical timing wheel driven by a delay queue of buckets, in the style of Apache Kafka's
//! timer: keeps millions of pending timeouts cheaply, most of which are cancelled before they fire.
//!
//! ```text
//!  schedule(delay, task) ─► the thread's shard (one lock): a wheel of its own
//!                            │ level 0: wheel_size slots of one tick
//!                            │ too far? ─► level 1: slots of tick × wheel_size ─► level 2 … (lazily)
//!                            ▼
//!                  slot = bucket (TimerTaskList): entries, expiration
//!                            │ expiration set? ─► pushed into ONE DelayQueue (min-heap), all shards
//!                            ▼
//!  advance_clock: pop due buckets in expiration order; flush each: an entry due at the cursor
//!                 fires, every other one is re-added into a finer level (cascade).
//! ```
//!
//! Only non-empty buckets are ever queued, so the driver sleeps until the earliest bucket is due and
//! never ticks through empty slots: an idle timer costs nothing.
//!
//! ## Time semantics
//!
//! A task's deadline is `now + delay` at the clock's full precision. It fires at the first tick
//! boundary at or after its deadline: **never early, at most one tick late** (plus the driver's
//! wake-up time: on Linux the driver lowers its thread's timer slack to a thousandth of a tick for
//! that, see [`TimerBuilder::precise_wakeups`]). The tasks due at one tick fire in the order of
//! their deadlines (to a 256th of a tick), and tasks due at the same instant in the order they were
//! scheduled (FIFO; a reset task by when it was first scheduled), whichever level each was filed
//! in; across threads for instants
//! ([`Timer::schedule_at`] and the other `_at` forms) and on a manual clock (delays that
//! different threads schedule on the system clock, with deadlines in the same 256th of a tick, fire
//! in either order: docs/design.md, "The stamp counter"). A zero
//! delay (or any deadline already passed) runs at the next advance, also when scheduled mid-tick,
//! and the tasks of the tick under way due at or before it run with it, in that order (the rest
//! of the tick waits for its end).
//! Deadlines as far as the clock reaches (its reading ends at `u64::MAX` nanoseconds, 584 years)
//! are served by further levels, up to 2^55 - 1 ticks; beyond that [`Timer::try_schedule`] returns
//! [`ScheduleError::DelayTooLong`] (see [`Timer::max_delay`]).
//!
//! ## Cancellation
//!
//! [`TimerHandle::cancel`] returns `true` iff that call cancelled a pending task, which then never
//! runs: exactly one of "runs once" and "a cancel returns true" happens, even under races. A
//! cancelled entry leaves its bucket at once, so schedule-and-cancel forever runs in flat memory.
//!
//! ## Example
//!
//! ```
//! use delaywheel::Timer;
//! use std::sync::mpsc;
//! use std::time::Duration;
//!
//! let timer = Timer::builder().tick(Duration::from_millis(1)).build();
//! let (tx, rx) = mpsc::channel();
//! let handle = timer.schedule(Duration::from_millis(10), move || tx.send("fired").unwrap());
//! let doomed = timer.schedule(Duration::from_secs(30), || unreachable!());
//! assert!(doomed.cancel());
//! assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok("fired"));
//! assert!(!handle.cancel());
//! ```
//!
//! ## Re-arming and absolute deadlines
//!
//! An idle or session timeout is re-armed on every message: [`TimerHandle::reset`] (or
//! [`reset_at`](TimerHandle::reset_at)) moves the pending task, earlier or later, keeping its
//! closure and handle; `true` iff it was pending and is now due then, and never before. Deadlines
//! can be instants on the timer's clock: [`Timer::now`], [`Timer::schedule_at`],
//! [`TimerHandle::deadline`], and [`Timer::next_wakeup`] for a simulation that jumps straight to
//! the next work.
//!
//! ```
//! use delaywheel::{ManualClock, Timer};
//! use std::time::Duration;
//!
//! let clock = ManualClock::new();
//! let timer = Timer::builder().clock(clock.clone()).manual().build();
//! let idle = timer.schedule(Duration::from_secs(30), || println!("idle: closing"));
//! clock.advance(Duration::from_secs(20)); // a message arrives
//! assert!(idle.reset(Duration::from_secs(30))); // due 30 s from now, not 10
//! assert_eq!(idle.deadline(), Some(timer.now() + Duration::from_secs(30)));
//! ```
//!
//! ## Beyond one-shot tasks
//!
//! * **Repeating work**: [`Timer::schedule_repeating`] with [`Repeat::FixedDelay`],
//!   [`Repeat::FixedRate`] or [`Repeat::Every`] (a period and a [`MissedTickBehavior`]: `Burst`,
//!   `Delay` or `Skip`, tokio's meanings), stopped by one [`RepeatingHandle`] that stays valid
//!   across re-arms.
//! * **One timer per process**: [`global()`] lazily starts a shared timer, so libraries need not
//!   start a driver thread each.
//! * **Async** (feature `async`): `Timer::sleep`, `sleep_until`, `timeout`, `timeout_at` and
//!   `interval` return runtime-agnostic futures (`Sleep`, `Timeout`) and an `Interval` (also a
//!   `Stream` of ticks) that work under tokio, async-std/smol or any executor and cancel their timer
//!   task when dropped. `Sleep::reset` re-arms a sleep in place (an idle timeout per message);
//!   a `Timeout` whose future is ready at its first poll never touches the wheel; the `try_` forms
//!   return the timer's refusal, and nothing panics when polled (a sleep whose timer shut down
//!   stays pending). `Timer::drive` runs the driver inside the runtime instead of on a thread:
//!   a future, spawned on a timer built without a driver thread, that advances it on a worker,
//!   waiting with the runtime's own sleep, so that the sleeps are woken from inside the runtime.
//! * **Observability**: [`Timer::stats`] returns totals, gauges and a firing-lateness summary
//!   ([`LatenessSummary`]); [`TimerHandle::position`] shows where a task sits in the wheel
//!   (diagnostic); the `tracing` feature emits trace-level events for bucket flushes and cascades.
//!
//! ```
//! use delaywheel::{ManualClock, Repeat, Timer};
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! // A heartbeat every 100 ms on a manual clock, stopped after three beats.
//! let clock = ManualClock::new();
//! let timer = Timer::builder().tick(Duration::from_millis(10)).clock(clock.clone()).manual().build();
//! let beats = Arc::new(AtomicU32::new(0));
//! let b = Arc::clone(&beats);
//! let heartbeat = timer.schedule_repeating(
//!     Duration::from_millis(100),
//!     Repeat::FixedRate(Duration::from_millis(100)),
//!     move || {
//!         b.fetch_add(1, Ordering::Relaxed);
//!     },
//! );
//! for _ in 0..3 {
//!     clock.advance(Duration::from_millis(100));
//!     timer.advance_clock(Duration::ZERO);
//! }
//! assert!(heartbeat.cancel());
//! assert_eq!(beats.load(Ordering::Relaxed), 3);
//! assert_eq!(timer.stats().lateness.max, Duration::ZERO); // each beat fired on its tick
//! ```
//!
//! ## Cargo features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `async` | off | `Timer::sleep`, `sleep_until`, `timeout`, `timeout_at`, `interval`, `interval_at`, the `try_sleep`, `try_sleep_until` and `try_timeout` forms, and their futures (dependencies: `pin-project-lite`, `futures-core`); `DelayQueue::poll_expired`, `next_expired` and its `Stream`; `Timer::drive` and its `Drive` future |
//! | `tracing` | off | trace-level `tracing` events (target `delaywheel`) for every bucket flush and cascade |
//!
//! ## Delay queue of values
//!
//! [`queue::DelayQueue`] holds values and hands each back once its deadline has passed (delayed
//! messages, retry back-off, TTLs): tokio-util's `DelayQueue` without tokio and without `&mut self`.
//! Producers and consumers share it by reference; [`remove`](queue::DelayQueue::remove) hands a
//! value back if it has not expired; expired values wait for a consumer.
//!
//! ```
//! use delaywheel::queue::DelayQueue;
//! use delaywheel::{ManualClock, Timer};
//! use std::time::Duration;
//!
//! let clock = ManualClock::new();
//! let queue = DelayQueue::with_timer(Timer::builder().clock(clock.clone()).manual().build());
//! let order = queue.insert("order 1: send reminder", Duration::from_secs(60));
//! let paid = queue.insert("order 2: send reminder", Duration::from_secs(60));
//! assert_eq!(queue.remove(&paid), Some("order 2: send reminder")); // paid in time: recalled
//! clock.advance(Duration::from_secs(60));
//! queue.advance_clock(Duration::ZERO);
//! let due = queue.try_recv().unwrap();
//! assert_eq!((due.key(), due.into_inner()), (order, "order 1: send reminder"));
//! assert!(queue.is_empty());
//! ```
//!
//! ## Purgatory
//!
//! On top of the timer, [`purgatory::Purgatory`] is Kafka's `DelayedOperationPurgatory`: operations
//! watched under keys until a check completes them or their timeout expires them, exactly once.
//!
//! ## Unsafe code
//!
//! The crate denies `unsafe_code` everywhere except ten private modules. One carries the tasks:
//! `entry::inline_task`, which stores a task's closure type-erased in a fixed 24 bytes (inline when it
//! captures at most two words) so that entries live densely in 48-byte slots. Its module docs give the
//! whole argument, and its tests run under AddressSanitizer (`scripts/asan.sh`), Miri and valgrind
//! (`scripts/valgrind.sh`). Two call the kernel (Linux, Android): `driver::timer_slack`, two `prctl` calls
//! by which the driver thread asks the kernel to wake it within a thousandth of a tick instead of the
//! default 50 µs (never raising its slack; Miri, which has no `prctl` on Linux, skips it), and
//! `clock::monotonic`, one `clock_gettime(CLOCK_MONOTONIC)` (the clock `Instant` reads) per reading of the
//! system clock, a fifth of what `Instant::elapsed` costs. Four hold memory the timer gives back after a
//! spike ([`Timer::shrink`]): `entry::task_slab` (blocks for closures of up to 256 bytes),
//! `entry::page_reclaim` (the task slab's shrink in steps, which gives back the pages whose blocks it
//! holds), `entry::os` (`mmap`, `mremap`, `madvise`, `malloc_trim`: integer arguments and mappings of
//! its own) and `entry::mapped_vec` (the free lists' pool, an array in a mapping of its own). One shares the timeouts'
//! tick groups (feature `async`): `sleep::group`, whose group is reached through a pointer and freed by the
//! last of its three holds (members, the thread's cache, the timer task), decided under the group's lock,
//! so that a timeout writes no reference count (loom models `sleep::group_*`). Three are the shard core's:
//! its lock, `shard::lock` (test-and-set, an `UnsafeCell` behind its guard; loom models `shard::*`), and
//! the room written ahead, `shard::reserve` (a mapping made resident at build, unmapped when dropped) and
//! `shard::slab::slots::mapped` (a shard's slots in a mapping of their own, into which the reserve's pages
//! are moved by `mremap`). In all ten, every `unsafe` block and `unsafe impl` carries a `// SAFETY:`
//! comment saying why it is sound (checked by clippy's `undocumented_unsafe_blocks`, denied in CI), and
//! every `unsafe fn` (all crate-private, which clippy's `missing_safety_doc` does not see) a `# Safety`
//! section with its caller's obligations.
//!
//! See `docs/design.md` in the repository for the locking rules and what differs from Kafka, and
//! the examples (`produce_purgatory`, `request_timeouts`, `heartbeat`, `delayed_messages`,
//! `retry_backoff`, `cascade_tour`, and with the `async` feature `tokio_server`).

#![warn(missing_docs)]
#![warn(missing_debug_implementations)]
// Ten modules may use `unsafe`: `entry::inline_task`, `entry::task_slab`, `entry::os`,
// `entry::mapped_vec`, `driver::timer_slack`, `clock::monotonic`, `sleep::group`, `shard::lock`,
// `shard::reserve` and `shard::slab::slots::mapped`
// (see "Unsafe code" above); everything else is safe Rust.
#![deny(unsafe_code)]
// In those modules every `unsafe` block and `unsafe impl` carries a `// SAFETY:` comment, every
// `unsafe fn` a `# Safety` section, and each unsafe operation in an `unsafe fn` a block of its own.
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc, unsafe_op_in_unsafe_fn)]
#![cfg_attr(docsrs, feature(doc_cfg))]

/// Whether the seeded fault `name` is on: `true` only in a loom build with
/// `--cfg delaywheel_loom_fault="name"` (`scripts/loom.sh --fault NAME`), a constant `false`
/// otherwise, so `if fault!("name") { ... }` folds away and the code inside only has to compile.
/// Each site is one such condition; a fault's alternative body lives in its room's `faults.rs`,
/// and docs/loom.md lists every fault with the model that catches it. `fault!("a" | "b")` is
/// whether either is on.
macro_rules! fault {
    ($($name:literal)|+) => {
        cfg!(all(delaywheel_loom, any($(delaywheel_loom_fault = $name),+)))
    };
}

mod builder;
mod clock;
mod deadline;
mod delay_queue;
mod driver;
mod entry;
#[cfg(test)]
mod fault_tests;
mod global;
#[cfg(feature = "async")]
mod interval;
mod missed_tick;
pub mod purgatory;
pub mod queue;
mod repeating;
mod shard;
#[cfg(feature = "async")]
mod sleep;
mod sync;
#[cfg(test)]
mod test_rng;
#[cfg(feature = "async")]
mod timeout;
mod timer;
mod unwind;
mod wheel;

pub use builder::{
    TaskExecution, TimerBuilder, DEFAULT_TICK, DEFAULT_WHEEL_SIZE, MAX_CAPACITY, MAX_WHEEL_SIZE,
};
pub use clock::ManualClock;
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub use driver::Drive;
pub use global::{global, GLOBAL_THREAD_NAME};
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub use interval::Interval;
pub use missed_tick::MissedTickBehavior;
pub use repeating::{Repeat, RepeatingHandle};
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub use sleep::Sleep;
#[cfg(feature = "async")]
#[cfg_attr(docsrs, doc(cfg(feature = "async")))]
pub use timeout::{Elapsed, Timeout};
pub use timer::error::{BuildError, ScheduleError};
pub use timer::handle::TimerHandle;
pub use timer::position::WheelPosition;
pub use timer::stats::{BucketLoad, LatenessSummary, TimerStats};
pub use timer::unfired::UnfiredTask;
pub use timer::Timer;

/// Only in loom builds: the shard core's lock, pool and assembled core (`loom_tests/shard.rs`,
/// `loom_tests/shard_core.rs`), and the system clock's reading, which the models of
/// `Timer::drive` move (`loom_tests/drive.rs`).
#[cfg(delaywheel_loom)]
#[doc(hidden)]
pub mod loom_internals {
    /// The shard core (`src/shard/`), under `Timer`.
    pub mod shard {
        pub use crate::shard::lock::{ShardLock, ShardLockGuard};
        pub use crate::shard::pool::{Handle, Pool, Shard, ShardGuard, ShardState};
        pub use crate::shard::stand_in::Slots;

        /// The assembled shard core (`src/shard/core.rs`) and what it is made of and hands out.
        pub mod core {
            pub use crate::deadline::Deadline;
            pub use crate::shard::core::{Core, Due, Handle, Merge};
            pub use crate::shard::life::Status;
            pub use crate::shard::wheel::{Fired, Refusal, Refused, Wheel};

            /// A deadline on the boundary of `tick` (the models know ticks only).
            pub fn at_tick(tick: u64) -> Deadline {
                Deadline::at_tick(tick)
            }

            /// A refused schedule's payload, handed back, and why.
            pub fn refused_parts<P>(refused: Refused<P>) -> (P, Refusal) {
                (refused.payload, refused.reason)
            }

            /// The units of `core`'s reserve: (held by the reserve, built with), `None` without one.
            pub fn reserve_units<P: Send + 'static>(core: &Core<P>) -> Option<(usize, usize)> {
                core.reserve_units()
            }

            /// The units each shard of `core` took from its reserve and holds.
            pub fn taken_units<P: Send + 'static>(core: &Core<P>) -> Vec<usize> {
                core.taken_units()
            }

            /// The least units a shard takes from a reserve at once, and slots a unit holds for
            /// payloads `P`.
            pub fn run_units<P>() -> (usize, usize) {
                let unit = crate::shard::reserve::unit_slots(Wheel::<P>::slot_bytes());
                (crate::shard::reserve::RUN_UNITS, unit)
            }

            /// Sets every shard's split size (`src/shard/wheel/split.rs`), at least 2.
            pub fn set_split_at<P: Send + 'static>(core: &Core<P>, entries: u32) {
                core.set_split_at(entries);
            }

            /// The entries in each level's buckets, summed over the shards (`Core::stats`).
            pub fn pending_per_level<P: Send + 'static>(core: &Core<P>) -> Vec<usize> {
                core.stats().pending_per_level
            }

            /// `Core::advance`, running `between` after each flush, before the next poll.
            pub fn advance_with<P: Send + 'static>(
                core: &Core<P>,
                (now, limit): (u64, u64),
                out: &mut Vec<Due>,
                merge: &mut Merge,
                between: impl FnMut(),
            ) {
                core.advance_with(now, limit, out, merge, between);
            }
        }
    }

    /// Moves the reading of `timer`'s system clock by `by`: under loom a system clock reads no
    /// real time, only what the model sets (`src/clock/`), so that every execution sees the same
    /// times. Panics on a timer on a [`ManualClock`](crate::ManualClock).
    pub fn advance_system_clock(timer: &crate::Timer, by: std::time::Duration) {
        timer.live().advance_model_clock(by);
    }
}

/// The README's code blocks run as doctests, so the README stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
