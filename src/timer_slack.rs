//! The driver thread's **timer slack** (Linux): how late the kernel may wake a sleeping thread so
//! as to batch its wake-up with others.
//!
//! The driver sleeps until the next bucket is due (`delay_queue.rs`: a futex wait with a timeout)
//! and the kernel may wake it up to the thread's timer slack late: 50 µs by default, 5 % of a 1 ms
//! tick, added to the lateness of every task of the batch it then fires. The driver therefore sets
//! its own slack to [`slack_for`] its tick: a thousandth of the tick, at least 1 ns and at most the
//! kernel's default. With a 1 ms tick that is 1 µs. SPEC W4 (1M timers over 1 s), eleven alternating
//! pairs: lateness p50 lower in all eleven (0.75–0.81 vs 0.81–0.87 ms), p99 in nine
//! (`docs/benchmarks.md`, "Session 6"). A coarse tick keeps (nearly) the default: its tasks are
//! rounded to the tick anyway.
//!
//! Only the driver's own thread is changed (the setting is per thread), and only a driver that
//! sleeps on the system clock; a failure leaves the default, which is only less punctual. Elsewhere
//! this does nothing.
//!
//! The one `unsafe` block is the `prctl` call (see its SAFETY comment); the crate otherwise allows
//! `unsafe` only in `inline_task` and `slot_lock` (`lib.rs`, `docs/design.md`).

#![deny(clippy::undocumented_unsafe_blocks)]

use crate::clock::TickLength;

/// The kernel's default timer slack (`prctl(2)`: 50 µs), the most the driver asks for.
const DEFAULT_SLACK_NANOS: u64 = 50_000;

/// The slack for a driver of ticks of `ticks`: a thousandth of a tick, between 1 ns and the
/// kernel's default.
pub(crate) fn slack_for(ticks: TickLength) -> u64 {
    let slack = (ticks.as_duration().as_nanos() / 1000).clamp(1, u128::from(DEFAULT_SLACK_NANOS));
    u64::try_from(slack).expect("clamped to the default")
}

/// Sets the calling thread's timer slack to [`slack_for`] `ticks` (best effort: see the module docs).
#[cfg(target_os = "linux")]
pub(crate) fn set_for_this_thread(ticks: TickLength) {
    let slack = libc::c_ulong::try_from(slack_for(ticks)).unwrap_or(1);
    // SAFETY: `PR_SET_TIMERSLACK` reads its one argument as an integer (no pointer is passed) and
    // changes only the calling thread's slack; the unused arguments are zero, as `prctl(2)` asks.
    // Its result is ignored on purpose: on failure the thread keeps the default slack.
    let _ = unsafe {
        libc::prctl(
            libc::PR_SET_TIMERSLACK,
            slack,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    };
}

/// Elsewhere: nothing to set.
#[cfg(not(target_os = "linux"))]
pub(crate) fn set_for_this_thread(_ticks: TickLength) {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ticks(d: Duration) -> TickLength {
        TickLength::new(d).expect("a valid tick")
    }

    #[test]
    fn the_slack_is_a_thousandth_of_the_tick_within_bounds() {
        assert_eq!(slack_for(ticks(Duration::from_millis(1))), 1_000);
        assert_eq!(slack_for(ticks(Duration::from_micros(1))), 1, "at least 1 ns");
        assert_eq!(slack_for(ticks(Duration::from_millis(10))), 10_000);
        assert_eq!(slack_for(ticks(Duration::from_secs(1))), DEFAULT_SLACK_NANOS, "at most the default");
    }

    /// The calling thread's timer slack, from procfs (`None` before Linux 4.6, or without procfs).
    #[cfg(target_os = "linux")]
    fn own_slack() -> Option<u64> {
        // `/proc/thread-self` links to `<pid>/task/<tid>`; the slack is under `/proc/<tid>`.
        let link = std::fs::read_link("/proc/thread-self").ok()?;
        let tid = link.file_name()?.to_str()?.to_owned();
        std::fs::read_to_string(format!("/proc/{tid}/timerslack_ns")).ok()?.trim().parse().ok()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn it_sets_the_calling_threads_slack_and_no_other() {
        let before = own_slack();
        let set = std::thread::spawn(|| {
            set_for_this_thread(ticks(Duration::from_millis(2)));
            own_slack()
        });
        let Some(set) = set.join().unwrap() else {
            return; // no procfs entry to read: nothing to check
        };
        assert_eq!(set, 2_000);
        assert_eq!(own_slack(), before, "the spawning thread's slack changed");
        assert_ne!(before, Some(2_000));
    }
}
