//! The timer's time in ticks ([`Time`]: its clock and tick length) and when a task is due as its
//! caller says it ([`When`]): kept by every core under `Timer`, read by the drivers, the facade and
//! the extras through `Shared::time`.

use std::time::{Duration, Instant};

use crate::clock::{nanos_to_duration, ClockSource, TickLength};
use crate::deadline::Deadline;
use crate::delay_queue::Timeline;
use crate::entry::StampBy;

use super::error::ScheduleError;

/// The timer's clock and tick length: time in ticks, for the delay queue and the threads.
#[derive(Clone, Debug)]
pub(crate) struct Time {
    pub(crate) clock: ClockSource,
    pub(crate) ticks: TickLength,
}

/// When a task is due, as its caller says it: a delay from now, or an instant on the timer's clock
/// (`clock/`, "Instants").
#[derive(Clone, Copy, Debug)]
pub(crate) enum When {
    After(Duration),
    At(Instant),
}

impl Time {
    /// Reads the clock once and returns the reading with the deadline of `when` on it, or the
    /// refusal of a deadline past the last representable tick (its `delay` is the distance from
    /// now). The one place a schedule (`schedule.rs`) and a reset (`handle.rs`) turn what the
    /// caller gave into a deadline. Inlined into each: a call would pass the result through memory.
    #[inline(always)]
    pub(crate) fn deadline(&self, when: When) -> Result<(u64, Deadline), ScheduleError> {
        let now = self.clock.now_nanos();
        Ok((now, self.deadline_on(now, when)?))
    }

    /// The deadline of `when` on the reading `now` (nanoseconds), or its refusal: see
    /// [`deadline`](Time::deadline).
    #[inline(always)]
    pub(crate) fn deadline_on(&self, now: u64, when: When) -> Result<Deadline, ScheduleError> {
        match when {
            When::After(delay) => self
                .ticks
                .deadline(now, delay)
                .ok_or_else(|| ScheduleError::DelayTooLong { delay, max: self.ticks.max_delay(now) }),
            When::At(at) => {
                let at = self.clock.nanos_at(at);
                self.ticks.deadline_at(now, at).ok_or_else(|| ScheduleError::DelayTooLong {
                    delay: nanos_to_duration(at - u128::from(now)),
                    max: self.ticks.max_delay(now),
                })
            }
        }
    }

    /// Where the stamp of a task due at `when` comes from (`entry/stamps.rs`): a delay on the
    /// system clock takes one from its thread's block; an instant, or any schedule on a manual
    /// clock (where equal deadlines are common), one drawn alone, ordered across threads.
    #[inline(always)]
    pub(crate) fn stamp_by(&self, when: When) -> StampBy {
        match when {
            When::After(_) if !self.clock.is_manual() => StampBy::Thread,
            _ => StampBy::Timer,
        }
    }
}

impl Timeline for Time {
    fn now_tick(&self) -> u64 {
        self.ticks.floor(self.clock.now_nanos())
    }

    fn until(&self, tick: u64) -> Option<Duration> {
        if self.clock.is_manual() {
            return None;
        }
        let nanos = self.ticks.start_nanos(tick).saturating_sub(u128::from(self.clock.now_nanos()));
        Some(Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX)))
    }
}
