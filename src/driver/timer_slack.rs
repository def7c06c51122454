//! The driver thread's **timer slack** (Linux, Android): how late the kernel may wake a sleeping
//! thread so as to batch its wake-up with others.
//!
//! The driver sleeps until the next bucket is due (`delay_queue/`: a futex wait with a timeout)
//! and the kernel may wake it up to the thread's timer slack late: 50 µs by default, 5 % of a 1 ms
//! tick, added to the lateness of every task of the batch it then fires. So a driver on the system
//! clock **lowers** its own slack to [`slack_for`] its tick, a thousandth of a tick (1 µs with the
//! default 1 ms tick), unless [`TimerBuilder::precise_wakeups`](crate::TimerBuilder::precise_wakeups)
//! is turned off. It never raises it: a slack the process was given (systemd's `TimerSlackNSec=`,
//! the application's own `prctl`) that is already finer stays, and a coarse tick (50 ms and more)
//! leaves the default alone.
//!
//! Only the driver's thread is changed (the setting is per thread), but what runs on that thread
//! has it too: the tasks run on the driver (the default [`TaskExecution`](crate::TaskExecution)),
//! and threads and processes they start, which inherit the slack. A failure leaves the slack as it
//! was, which is only less punctual. On other systems, and under Miri (which has no `prctl` on
//! Linux), this does nothing.
//!
//! The `unsafe` blocks are the two `prctl` calls (see their SAFETY comments); the crate allows
//! `unsafe` in eight other modules, listed in `lib.rs` and `docs/design.md` ("Unsafe code").

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

use crate::clock::TickLength;

/// The slack a driver of ticks of `ticks` asks for: a thousandth of a tick (a tick is at least
/// 1 µs, so at least 1 ns).
pub(crate) fn slack_for(ticks: TickLength) -> u64 {
    u64::try_from(ticks.as_duration().as_nanos() / 1000).unwrap_or(u64::MAX).max(1)
}

/// Lowers the calling thread's timer slack to [`slack_for`] `ticks` if it is above that (best
/// effort: see the module docs).
#[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
pub(crate) fn lower_for_this_thread(ticks: TickLength) {
    // `c_ulong` is what the kernel reads (32 bits on 32-bit targets: a slack over 4 s is capped,
    // which only matters for ticks over an hour, and the comparison below then keeps the current).
    let wanted = libc::c_ulong::try_from(slack_for(ticks)).unwrap_or(libc::c_ulong::MAX);
    let unused: libc::c_ulong = 0;
    // SAFETY: `prctl` is variadic; the libc wrappers (glibc, musl, bionic) read four further
    // `unsigned long` arguments whatever the option, so all four are passed, as `c_ulong`.
    // `PR_GET_TIMERSLACK` takes no pointer and only reads the calling thread's slack.
    let current = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, unused, unused, unused, unused) };
    // Negative: an error, or a slack past `c_int` (over 2 s): leave it.
    let Ok(current) = libc::c_ulong::try_from(current) else {
        return;
    };
    if current <= wanted {
        return;
    }
    // SAFETY: as above; `PR_SET_TIMERSLACK` reads its argument as an integer (no pointer) and
    // changes only the calling thread's slack.
    let set = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, wanted, unused, unused, unused) };
    // On failure the thread keeps its slack: only less punctual, nothing to undo.
    let _ = set;
}

/// Elsewhere (and under Miri): nothing to set.
#[cfg(not(all(any(target_os = "linux", target_os = "android"), not(miri))))]
pub(crate) fn lower_for_this_thread(_ticks: TickLength) {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ticks(d: Duration) -> TickLength {
        TickLength::new(d).expect("a valid tick")
    }

    #[test]
    fn the_slack_asked_for_is_a_thousandth_of_the_tick() {
        assert_eq!(slack_for(ticks(Duration::from_millis(1))), 1_000);
        assert_eq!(slack_for(ticks(Duration::from_micros(1))), 1);
        assert_eq!(slack_for(ticks(Duration::from_millis(10))), 10_000);
        assert_eq!(slack_for(ticks(Duration::from_secs(1))), 1_000_000);
    }

    /// The calling thread's timer slack, from procfs (`None` before Linux 4.6, or without procfs).
    /// A thread may read its own entry without privileges.
    #[cfg(target_os = "linux")]
    fn own_slack() -> Option<u64> {
        // `/proc/thread-self` links to `<pid>/task/<tid>`; the slack is under `/proc/<tid>`.
        let link = std::fs::read_link("/proc/thread-self").ok()?;
        let tid = link.file_name()?.to_str()?.to_owned();
        std::fs::read_to_string(format!("/proc/{tid}/timerslack_ns")).ok()?.trim().parse().ok()
    }

    #[cfg(target_os = "linux")]
    #[cfg_attr(miri, ignore)]
    #[test]
    fn it_lowers_the_calling_threads_slack_never_raises_it_and_touches_no_other() {
        let Some(before) = own_slack() else {
            return; // no procfs entry to read
        };
        let other = std::thread::spawn(move || {
            let inherited = own_slack();
            lower_for_this_thread(ticks(Duration::from_millis(2)));
            let lowered = own_slack();
            // A coarser tick would ask for 1 ms: not a reason to raise it back.
            lower_for_this_thread(ticks(Duration::from_secs(1)));
            (inherited, lowered, own_slack())
        });
        let (inherited, lowered, after_coarse) = other.join().unwrap();
        assert_eq!(inherited, Some(before), "a new thread inherits its creator's slack");
        assert_eq!(lowered, Some(before.min(2_000)));
        assert_eq!(after_coarse, lowered, "a coarser tick raised the slack");
        assert_eq!(own_slack(), Some(before), "the spawning thread's slack changed");
    }
}
