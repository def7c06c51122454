//! The timer's rounding of deadlines as the reference model (`model.rs`) expects it: when a task
//! becomes due, and what `TimerHandle::deadline` reads back (`src/deadline.rs`, `src/clock/`).

use std::time::Duration;

/// The start of tick `tick` of `tick_nanos` nanoseconds. Exact, also past the clock's u64
/// nanoseconds (such a deadline is never reached; it must not wrap to an early one).
fn tick_start(tick: u128, tick_nanos: u128) -> Duration {
    let nanos = tick * tick_nanos;
    Duration::new((nanos / 1_000_000_000) as u64, (nanos % 1_000_000_000) as u32)
}

/// The tick boundary at which a task given `delay` at `now` becomes due: the first one at or after
/// its deadline, or for a zero delay (a deadline already passed) the current tick, also mid-tick.
pub(super) fn due_tick(now: Duration, delay: Duration, tick: Duration) -> Duration {
    let nanos = tick.as_nanos();
    match delay.is_zero() {
        true => tick_start(now.as_nanos() / nanos, nanos),
        false => tick_start(now.saturating_add(delay).as_nanos().div_ceil(nanos), nanos),
    }
}

/// What the timer reports as the deadline of a task given `delay` at `now` (`TimerHandle::deadline`,
/// `UnfiredTask::deadline`): the deadline itself, to the nanosecond; its due tick instead when that
/// tick is too far for an exact deadline word (from 2^56 ns of the clock on, whatever the tick), or
/// for ticks over 2^41 ns (`src/deadline.rs`).
pub(super) fn reported(now: Duration, delay: Duration, tick: Duration) -> Duration {
    let due = due_tick(now, delay, tick);
    let nanos = tick.as_nanos();
    if exact_word(nanos, due.as_nanos() / nanos) {
        now + delay
    } else {
        due
    }
}

/// Whether a deadline tick has an exact deadline word (`src/deadline.rs`): its tick leaves room for
/// the fraction's `s` bits and the bit that marks a deadline passed mid-tick in 58, and `s` (the
/// bits the tick's nanoseconds need) is at most 41.
fn exact_word(tick_nanos: u128, tick: u128) -> bool {
    let split = (u128::BITS - (tick_nanos - 1).leading_zeros()).max(10);
    split <= 41 && tick < 1u128 << (58 - split - 1)
}

/// When a task scheduled at `now` for the instant `at`, already passed, is due, and what its
/// deadline reads back as: its instant's tick, or the tick under way if `at` lies within it
/// (`TickLength::deadline_at`); read back exactly, or as that tick's start.
pub(super) fn passed_instant(now: Duration, at: Duration, tick: Duration) -> (Duration, Duration) {
    let nanos = tick.as_nanos();
    let (ceil, floor) = (at.as_nanos().div_ceil(nanos), now.as_nanos() / nanos);
    let due = ceil.min(floor);
    match exact_word(nanos, due) {
        true => (tick_start(due, nanos), at),
        false => (tick_start(due, nanos), tick_start(due, nanos)),
    }
}
