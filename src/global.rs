//! [`global()`]: one lazily created, process-wide timer.

// Deliberately `std`'s once-cell, not `crate::sync`'s: a `static` needs a `const` constructor,
// which loom's types lack, and creating the global timer is not part of any loom model (the models
// build their own manual timers). The timer inside uses the facade as every timer does.
use std::sync::OnceLock;

use crate::Timer;

static GLOBAL: OnceLock<Timer> = OnceLock::new();

/// The name of the global timer's driver thread.
pub const GLOBAL_THREAD_NAME: &str = "delaywheel-global";

/// The process-wide timer, created on first use with the defaults (1 ms tick,
/// [`DEFAULT_WHEEL_SIZE`](crate::DEFAULT_WHEEL_SIZE) slots, the system clock, tasks run on its
/// driver thread, named [`GLOBAL_THREAD_NAME`]).
///
/// Libraries that each need a few timeouts should share this one instead of building a timer (and
/// a driver thread) each; Netty logs a warning about exactly that ("too many HashedWheelTimer
/// instances"). Creation is thread-safe and happens once (`std::sync::OnceLock`); later calls cost
/// an atomic load.
///
/// Because everyone shares it:
///
/// * **keep tasks short** — they run on the one driver thread, so a slow task delays every other
///   user's timeouts; hand heavy work to your own threads or runtime;
/// * **do not shut it down** — [`Timer::shutdown`] on it would make every later `try_schedule`
///   in the process fail with [`ScheduleError::ShutDown`](crate::ScheduleError::ShutDown) (it is
///   never dropped: its driver thread lives until the process exits, idle when nothing is pending).
///
/// # Panics
///
/// On first use, if the driver thread cannot be started (the operating system refused a thread).
///
/// ```
/// use std::sync::mpsc;
/// use std::time::Duration;
///
/// let (tx, rx) = mpsc::channel();
/// delaywheel::global().schedule(Duration::from_millis(5), move || tx.send(()).unwrap());
/// rx.recv_timeout(Duration::from_secs(5)).unwrap();
/// assert!(std::ptr::eq(delaywheel::global(), delaywheel::global()));
/// ```
pub fn global() -> &'static Timer {
    GLOBAL.get_or_init(|| Timer::builder().thread_name(GLOBAL_THREAD_NAME).build())
}
