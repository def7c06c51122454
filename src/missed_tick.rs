//! [`MissedTickBehavior`]: what a periodic schedule does after a late tick, and the one piece of
//! arithmetic behind it, shared by [`Interval`](crate::Interval) (feature `async`) and
//! [`Repeat::Every`](crate::Repeat::Every).
//!
//! ## The arithmetic
//!
//! A periodic schedule has ticks due at `start + k × period`. When the tick due at `due` is taken
//! at `now` (its lateness is `late = now - due`), the next tick is due at `due + offset`, where
//! `offset` is [`next_offset`]`(late, period)`:
//!
//! | behaviour | `offset` | the next tick |
//! |---|---|---|
//! | `Burst` | `period` | on the grid; possibly already passed, then due at once |
//! | `Delay` | `late + period` | a period after `now` |
//! | `Skip` | `late + period - late % period` (`period` while `late < period`) | the first grid point after `now` |
//!
//! As tokio's, a tick taken at most 5 ms after its due time is on time whatever the behaviour
//! (`offset` is `period`): the timer fires every task up to one tick late by design, and that
//! rounding must not move the grid. With ticks longer than 5 ms, the bound is one tick
//! ([`on_time`]). Everything is in `u128` nanoseconds: no overflow for any `Duration`.

use std::time::Duration;

/// How late a tick may be taken and still count as on time, on a timer of `tick`-long ticks: 5 ms
/// as tokio's `Interval` allows, or one tick if that is longer (the timer's own rounding).
pub(crate) fn on_time(tick: Duration) -> Duration {
    tick.max(Duration::from_millis(5))
}

/// What a periodic schedule does when a tick comes late: when the previous tick was taken after the
/// next one was already due (a slow consumer, a stalled executor, a clock moved in one jump).
/// The same three behaviours as tokio's `MissedTickBehavior`, with the same meanings; `Burst` is
/// the default.
///
/// Say the period is 10 ms, ticks are due at 10, 20, 30 … ms, and the tick due at 10 ms is taken at
/// 35 ms:
///
/// * `Burst`: the ticks due at 20 and 30 ms follow at once, then 40, 50 ms … (the grid is kept,
///   every tick is delivered);
/// * `Delay`: the next tick is due at 45 ms, then 55, 65 ms … (the grid moves to the late tick);
/// * `Skip`: the next tick is due at 40 ms, then 50 ms … (the grid is kept, missed ticks dropped).
///
/// A tick taken at most 5 ms after its due time (one timer tick, if ticks are longer) is not late,
/// as in tokio, whatever the behaviour.
///
/// ```
/// use delaywheel::{ManualClock, MissedTickBehavior, Repeat, Timer};
/// use std::sync::{Arc, Mutex};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let timer = Timer::builder().clock(clock.clone()).manual().build();
/// let runs = Arc::new(Mutex::new(Vec::new()));
/// let (r, c) = (Arc::clone(&runs), clock.clone());
/// let ms = Duration::from_millis;
/// let every = Repeat::Every(ms(10), MissedTickBehavior::Skip);
/// let handle = timer.schedule_repeating(ms(10), every, move || r.lock().unwrap().push(c.now()));
/// clock.advance(ms(35)); // the run due at 10 ms runs at 35 ms; 20 and 30 ms are skipped
/// timer.advance_clock(Duration::ZERO);
/// clock.advance(ms(5));
/// timer.advance_clock(Duration::ZERO);
/// assert_eq!(*runs.lock().unwrap(), [ms(35), ms(40)]);
/// assert!(handle.cancel());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MissedTickBehavior {
    /// Deliver every missed tick, back to back, then continue on the original grid.
    #[default]
    Burst,
    /// Start a new grid one period after the late tick was taken.
    Delay,
    /// Drop the missed ticks: the next tick is the first one of the original grid still ahead.
    Skip,
}

impl MissedTickBehavior {
    /// The offset from a tick's due time to the next tick's, in nanoseconds, for a tick taken
    /// `late` nanoseconds after it was due, with ticks `period` (at least 1) nanoseconds apart on a
    /// timer of `tolerance`-nanosecond ticks (see the module docs). At least `period`.
    pub(crate) fn next_offset(self, late: u128, period: u128, tolerance: u128) -> u128 {
        let period = period.max(1);
        match self {
            _ if late <= tolerance => period,
            MissedTickBehavior::Burst => period,
            MissedTickBehavior::Delay => late + period,
            MissedTickBehavior::Skip => late + period - late % period,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::MissedTickBehavior::{self, Burst, Delay, Skip};

    const MS: u128 = 1_000_000;

    #[test]
    fn on_time_ticks_keep_the_grid_whatever_the_behaviour() {
        for b in [Burst, Delay, Skip] {
            assert_eq!(b.next_offset(0, 10 * MS, MS), 10 * MS, "{b:?}");
            assert_eq!(
                b.next_offset(MS, 10 * MS, MS),
                10 * MS,
                "{b:?}: late within the tolerance is on time"
            );
            assert_eq!(b.next_offset(5 * MS, 2 * MS, 5 * MS), 2 * MS, "{b:?}: also past a short period");
        }
        assert_eq!(MissedTickBehavior::default(), Burst);
    }

    #[test]
    fn late_ticks_follow_tokios_rules() {
        // Period 10 ms, the tick due at 10 ms taken at 35 ms (25 ms late).
        let late = 25 * MS;
        assert_eq!(Burst.next_offset(late, 10 * MS, MS), 10 * MS, "next due at 20 ms: already passed");
        assert_eq!(Delay.next_offset(late, 10 * MS, MS), 35 * MS, "next due at 45 ms");
        assert_eq!(Skip.next_offset(late, 10 * MS, MS), 30 * MS, "next due at 40 ms");
        // Late by exactly whole periods: Skip moves to the grid point after now.
        assert_eq!(Skip.next_offset(20 * MS, 10 * MS, MS), 30 * MS);
        // Late by less than a period but more than a timer tick.
        assert_eq!(Skip.next_offset(3 * MS, 10 * MS, MS), 10 * MS);
        assert_eq!(Delay.next_offset(3 * MS, 10 * MS, MS), 13 * MS);
    }

    #[test]
    fn extreme_values_do_not_overflow_and_never_go_backwards() {
        let huge = u128::from(u64::MAX) * 1_000_000_000;
        for b in [Burst, Delay, Skip] {
            for (late, period) in [(huge, huge), (huge, 1), (1, huge), (huge, 0), (0, 0)] {
                let offset = b.next_offset(late, period, 0);
                assert!(offset >= period.max(1), "{b:?} {late} {period}");
                if b != Burst {
                    assert!(offset > late, "{b:?}: the next tick is after now");
                }
            }
        }
    }
}
