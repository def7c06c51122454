//! Errors of building a timer and of scheduling on it.

use std::error::Error;
use std::fmt;
use std::time::Duration;

/// Why [`TimerBuilder::try_build`](crate::TimerBuilder::try_build) refused a configuration.
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// The tick is shorter than 1 µs (this includes a zero tick).
    TickTooShort(Duration),
    /// The wheel has fewer than 2 slots.
    WheelSizeTooSmall(usize),
    /// The wheel has more than [`MAX_WHEEL_SIZE`](crate::builder::MAX_WHEEL_SIZE) slots
    /// (2^24 = 16 777 216: the most an entry's location can number in three levels).
    WheelSizeTooLarge(usize),
    /// [`TaskExecution::Threads(0)`](crate::TaskExecution::Threads): tasks would never run.
    NoExecutorThreads,
    /// The thread name contains a NUL byte, which threads cannot be named with.
    InvalidThreadName(String),
    /// [`TimerBuilder::bucket_lanes`](crate::TimerBuilder::bucket_lanes) is not a power of two
    /// from 2 to 16.
    InvalidBucketLanes(usize),
    /// [`TimerBuilder::capacity`](crate::TimerBuilder::capacity) asks for more than
    /// [`MAX_CAPACITY`](crate::builder::MAX_CAPACITY) tasks, the most a timer can hold.
    CapacityTooLarge(usize),
    /// The driver or an executor thread could not be started.
    Spawn(std::io::Error),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::TickTooShort(tick) => write!(f, "timer tick must be at least 1µs, got {tick:?}"),
            BuildError::WheelSizeTooSmall(size) => {
                write!(f, "timer wheel size must be at least 2, got {size}")
            }
            BuildError::WheelSizeTooLarge(size) => {
                write!(f, "timer wheel size must be at most {}, got {size}", crate::builder::MAX_WHEEL_SIZE)
            }
            BuildError::NoExecutorThreads => {
                write!(f, "TaskExecution::Threads needs at least one thread, got 0")
            }
            BuildError::InvalidThreadName(name) => {
                write!(f, "timer thread name must not contain a NUL byte, got {name:?}")
            }
            BuildError::InvalidBucketLanes(lanes) => {
                write!(f, "timer bucket lanes must be a power of two from 2 to 16, got {lanes}")
            }
            BuildError::CapacityTooLarge(tasks) => {
                write!(
                    f,
                    "timer capacity must be at most {} tasks, got {tasks}",
                    crate::builder::MAX_CAPACITY
                )
            }
            BuildError::Spawn(err) => write!(f, "could not start a timer thread: {err}"),
        }
    }
}

impl Error for BuildError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            BuildError::Spawn(err) => Some(err),
            _ => None,
        }
    }
}

/// Why [`Timer::try_schedule`](crate::Timer::try_schedule) refused a task. The task is dropped
/// unrun (and so are the values it captured).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScheduleError {
    /// The timer has been shut down (or is shutting down).
    ShutDown,
    /// The timer already holds its configured maximum of pending tasks
    /// ([`TimerBuilder::max_pending`](crate::TimerBuilder::max_pending)).
    TooManyPending {
        /// The configured maximum.
        max: usize,
    },
    /// The deadline lies beyond the last tick the timer can reach: tick 2^55 - 1 from the clock's
    /// origin, and no tick that begins after the clock's end at 2^64 - 1 ns (about 584 years).
    /// `max` is [`Timer::max_delay`](crate::Timer::max_delay) at the time of the call: a delay a
    /// schedule made promptly accepts.
    DelayTooLong {
        /// The delay asked for.
        delay: Duration,
        /// [`Timer::max_delay`](crate::Timer::max_delay) at that moment.
        max: Duration,
    },
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScheduleError::ShutDown => write!(f, "the timer has been shut down"),
            ScheduleError::TooManyPending { max } => {
                write!(f, "the timer already holds its maximum of {max} pending tasks")
            }
            ScheduleError::DelayTooLong { delay, max } => {
                let end = "the range ends at most a second later";
                write!(f, "delay {delay:?} is beyond the timer's range (max_delay {max:?}: {end})")
            }
        }
    }
}

impl Error for ScheduleError {}
