//! What a handle reaches its task through ([`Store`]), and the timer's time in ticks ([`Time`]).

use std::time::{Duration, Instant};

use crate::clock::{nanos_to_duration, ClockSource, TickLength};
use crate::deadline::Deadline;
use crate::delay_queue::{DelayQueue, Identity, Timeline};
use crate::entry::{EntryArena, StampBy};
use crate::sync::{Arc, AtomicBool};
use crate::wheel::{TimerTaskList, TimingWheel};

use super::before_origin::BeforeOrigin;
use super::counters::Stripe;
use super::error::ScheduleError;
use super::reset::ResetsInFlight;

/// A timer's entries and wheel, and what a reset needs to re-add an entry as a schedule adds one
/// (`reset.rs`: the clock and tick, the delay queue, the shutdown flag): what a handle reaches its
/// task through. Every counter stripe carries a copy (`counters.rs`), so that a handle holds one
/// reference count, on its scheduling thread's stripe, not on a line every thread shares. Not the
/// timer nor its threads: a handle outliving its timer keeps these alive, and finds its task
/// abandoned.
#[derive(Clone, Debug)]
pub(crate) struct Store {
    /// Where the entries live (`entry/arena.rs`).
    pub(crate) arena: Arc<EntryArena>,
    pub(crate) wheel: Arc<TimingWheel>,
    pub(crate) queue: Arc<BucketQueue>,
    pub(crate) shut_down: Arc<AtomicBool>,
    pub(crate) time: Time,
    /// The resets that may hold an entry out of every bucket, for the drain (`reset.rs`).
    pub(crate) resets: Arc<ResetsInFlight>,
    /// The instants of deadlines before the clock's origin (`before_origin.rs`).
    pub(crate) before_origin: Arc<BeforeOrigin>,
}

impl Store {
    /// The store of a timer of `arena` and `wheel` on a manual clock at zero with 1 ms ticks, not
    /// shut down, with a queue of its own (unit tests).
    #[cfg(test)]
    pub(crate) fn for_test(arena: EntryArena, wheel: TimingWheel) -> Store {
        let ticks = TickLength::new(Duration::from_millis(1)).expect("1 ms is a valid tick");
        Store {
            arena: Arc::new(arena),
            wheel: Arc::new(wheel),
            queue: Arc::new(DelayQueue::new()),
            shut_down: Arc::new(AtomicBool::new(false)),
            time: Time { clock: ClockSource::Manual(crate::clock::ManualClock::new()), ticks },
            resets: Arc::default(),
            before_origin: Arc::default(),
        }
    }
}

/// The delay queue of a timer's buckets.
pub(crate) type BucketQueue = DelayQueue<Arc<TimerTaskList>>;

/// The counter stripe a handle keeps: its `cancel()` counts there, and it reaches the timer's
/// [`Store`] through it.
pub(crate) type HandleStripe = Stripe<Store>;

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

/// Buckets due at one tick are visited in the order of their level and slot.
impl Identity for Arc<TimerTaskList> {
    fn identity(&self) -> u64 {
        u64::from(self.key())
    }
}
