//! # delaywheel
//!
//! A hierarchical timing wheel driven by a delay queue of buckets, in the style of Apache Kafka's
//! timer: keeps millions of pending timeouts cheaply, most of which are cancelled before they fire.
//!
//! ```text
//!  schedule(delay, task) ─► level 0: wheel_size slots of one tick
//!                            │ too far? ─► level 1: slots of tick × wheel_size ─► level 2 … (lazily)
//!                            ▼
//!                  slot = bucket (TimerTaskList): own lock, entries, expiration
//!                            │ expiration set/lowered? ─► pushed into ONE DelayQueue (min-heap)
//!                            ▼
//!  advance_clock: pop due buckets in expiration order; flush each; every entry is re-added:
//!                 into a finer level (cascade), or fired if due.
//! ```
//!
//! Only non-empty buckets are ever queued, so the driver sleeps until the earliest bucket is due and
//! never ticks through empty slots: an idle timer costs nothing.
//!
//! ## Time semantics
//!
//! A task's deadline is `now + delay` at the clock's full precision. It fires at the first tick
//! boundary at or after its deadline: **never early, at most one tick late** (plus the driver's
//! wake-up time). Deadlines as far as `u64::MAX - 1` ticks are served by further levels; beyond that
//! [`Timer::try_schedule`] returns [`ScheduleError::DelayTooLong`].
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
//! See `docs/design.md` in the repository for the locking rules and what differs from Kafka.
//!
//! On top of the timer, [`purgatory::Purgatory`] is Kafka's `DelayedOperationPurgatory`: operations
//! watched under keys until a check completes them or their timeout expires them, exactly once.

#![warn(missing_docs)]
#![warn(missing_debug_implementations)]
#![forbid(unsafe_code)]

mod bucket;
mod builder;
mod clock;
mod counters;
mod delay_queue;
mod driver;
mod entry;
mod error;
mod handle;
pub mod purgatory;
mod sync;
mod timer;
mod wheel;

pub use builder::{TaskExecution, TimerBuilder, DEFAULT_TICK, DEFAULT_WHEEL_SIZE};
pub use clock::ManualClock;
pub use error::{BuildError, ScheduleError};
pub use handle::TimerHandle;
pub use timer::{Timer, TimerStats, UnfiredTask};

/// The README's code blocks run as doctests, so the README stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
