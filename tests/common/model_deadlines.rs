//! The timer's rounding of deadlines as the reference model (`model.rs`) expects it: when a task
//! becomes due, and what `TimerHandle::deadline` reads back (`src/deadline.rs`, `src/clock/`).

use std::time::Duration;

/// The first tick boundary at or after `deadline`.
fn ceil_to_tick(deadline: Duration, tick: Duration) -> Duration {
    let nanos = deadline.as_nanos().div_ceil(tick.as_nanos()) * tick.as_nanos();
    // Exact, also past the clock's u64 nanoseconds (such a deadline is never reached; it must not
    // wrap to an early one).
    Duration::new((nanos / 1_000_000_000) as u64, (nanos % 1_000_000_000) as u32)
}

/// The tick boundary at which a task given `delay` at `now` becomes due: the first one at or after
/// its deadline, or for a zero delay (a deadline already passed) the current tick, also mid-tick.
pub(super) fn due_tick(now: Duration, delay: Duration, tick: Duration) -> Duration {
    if delay.is_zero() {
        let nanos = now.as_nanos() / tick.as_nanos() * tick.as_nanos();
        return Duration::new((nanos / 1_000_000_000) as u64, (nanos % 1_000_000_000) as u32);
    }
    ceil_to_tick(now.saturating_add(delay), tick)
}

/// What the timer reports as the deadline of a task given `delay` at `now` (`TimerHandle::deadline`,
/// `UnfiredTask::deadline`): the deadline itself, to the nanosecond; its due tick instead when it had
/// passed as it was set (a zero delay), when that tick is too far for an exact deadline word (from
/// 2^57 ns of the clock on, whatever the tick), or for ticks over 2^41 ns (`src/deadline.rs`).
pub(super) fn reported(now: Duration, delay: Duration, tick: Duration) -> Duration {
    let due = due_tick(now, delay, tick);
    let nanos = tick.as_nanos();
    let exact = !delay.is_zero() && exact_word(nanos, due.as_nanos() / nanos);
    if exact {
        now + delay
    } else {
        due
    }
}

/// Whether a deadline tick has an exact deadline word (`src/deadline.rs`): its tick leaves room for
/// the fraction's `s` bits in 58, and `s` (the bits the tick's nanoseconds need) is at most 41.
fn exact_word(tick_nanos: u128, tick: u128) -> bool {
    let split = (u128::BITS - (tick_nanos - 1).leading_zeros()).max(10);
    split <= 41 && tick < 1u128 << (58 - split)
}

/// When a task scheduled at `now` for the instant `at`, already passed, is due, and what its
/// deadline reads back as: its instant's tick, or the tick under way if `at` lies within it
/// (`TickLength::deadline_at`); read back exactly, or as that tick's start.
pub(super) fn passed_instant(now: Duration, at: Duration, tick: Duration) -> (Duration, Duration) {
    let nanos = tick.as_nanos();
    let (ceil, floor) = (at.as_nanos().div_ceil(nanos), now.as_nanos() / nanos);
    let to_tick = |tick: u128| Duration::from_nanos((tick * nanos) as u64);
    match ceil <= floor {
        true if exact_word(nanos, ceil) => (to_tick(ceil), at),
        true => (to_tick(ceil), to_tick(ceil)),
        false => (to_tick(floor), to_tick(floor)),
    }
}
