//! The timer's rounding of deadlines as the reference models (`model.rs`, `queue_model.rs`) expect
//! it: when a task becomes due, what `TimerHandle::deadline` reads back (`src/deadline.rs`,
//! `src/clock/`), and which schedules the timer refuses, and why.

use std::time::Duration;

use delaywheel::ScheduleError;

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

/// The longest delay a schedule at `now` accepts, worked out from the tick alone: up to the start
/// of the last deadline tick, the last tick that begins by the clock's end (2^64 - 1 ns) and at
/// most tick 2^55 - 1, the most a deadline word holds (`src/deadline.rs`, `MAX_DEADLINE_TICK`).
fn reach(now: Duration, tick: Duration) -> Duration {
    let nanos = tick.as_nanos();
    let last = (u128::from(u64::MAX) / nanos).min((1 << 55) - 1);
    tick_start(last, nanos).saturating_sub(now)
}

/// Whether a delay given at `now` has a deadline the timer accepts (also a reset's).
pub(super) fn in_range(now: Duration, delay: Duration, tick: Duration) -> bool {
    delay <= reach(now, tick)
}

/// What the model's own bookkeeping says a schedule at `now` gets: `None` (accepted) or the
/// refusal, checked in the order `try_schedule` checks: shut down first, then the deadline's range
/// (`delay`: `None` for an instant already passed, always in range; the `max` reported is
/// `max_delay`, the reach less its second of slack), then room for one more (`pending` of
/// `max_pending`, `usize::MAX` for none).
pub(super) fn refusal(
    shut_down: bool,
    (now, tick, delay): (Duration, Duration, Option<Duration>),
    (pending, max_pending): (usize, usize),
) -> Option<ScheduleError> {
    if shut_down {
        return Some(ScheduleError::ShutDown);
    }
    if let Some(delay) = delay.filter(|&delay| !in_range(now, delay, tick)) {
        let max = reach(now, tick).saturating_sub(Duration::from_secs(1));
        return Some(ScheduleError::DelayTooLong { delay, max });
    }
    (pending >= max_pending).then_some(ScheduleError::TooManyPending { max: max_pending })
}

/// For a deadline the timer keeps as a far word (`src/deadline.rs`: its due tick `due` has no
/// exact word, so the timer knows the deadline to a 256th of the tick), which 256th of a tick,
/// counted from the clock's origin, it falls in: `k` for `((k - 1) / 256, k / 256]` in tick
/// lengths. `None` where the word is exact.
pub(super) fn far_slot(deadline: Duration, due: Duration, tick: Duration) -> Option<u128> {
    let nanos = tick.as_nanos();
    (!exact_word(nanos, due.as_nanos() / nanos)).then(|| (deadline.as_nanos() * 256).div_ceil(nanos))
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

/// Which of the tasks, each `(deadline, due, exact)` if pending (`due` the tick boundary it is due
/// at, `exact` whether the timer keeps its deadline exactly), an advance at `now` fires, and the
/// tick whose batch each fires in: beside a deadline passed within the tick under way (exact,
/// filed at the tick `f` before its own: its deadline after `due`) that fires, the tasks due at
/// `f + tick` whose exact deadlines are not after the latest such one filed at `f`, in `f`'s batch
/// (also when `now` reaches their own tick); the others due by `now`, at their due tick (`src/shard/core.rs`, "Passed deadlines
/// mid-tick"). `zero_delays` adds the times of zero delays the model does not list as tasks.
pub(super) fn fired_by_advance(
    pending: &[Option<(Duration, Duration, bool)>],
    zero_delays: impl IntoIterator<Item = Duration>,
    now: Duration,
    tick: Duration,
) -> Vec<Option<Duration>> {
    let zero_delays = zero_delays.into_iter().map(|at| (at, due_tick(at, Duration::ZERO, tick)));
    let passed: Vec<_> = zero_delays.filter(|&(at, filed)| at > filed).collect();
    let mut latest = std::collections::BTreeMap::<Duration, Duration>::new();
    let listed =
        pending.iter().flatten().filter(|&&(deadline, due, exact)| exact && due <= now && deadline > due);
    for (deadline, filed) in listed.map(|&(deadline, due, _)| (deadline, due)).chain(passed) {
        let at = latest.entry(filed).or_insert(deadline);
        *at = (*at).max(deadline);
    }
    let beside = |deadline: Duration, due: Duration| {
        let filed = due.checked_sub(tick)?;
        latest.get(&filed).filter(|&&latest| deadline <= latest).map(|_| filed)
    };
    // Beside the passed deadline also when the advance reaches the task's own tick.
    let fires = |&(deadline, due, exact): &(Duration, Duration, bool)| {
        beside(deadline, due).filter(|_| exact).or((due <= now).then_some(due))
    };
    pending.iter().map(|task| task.as_ref().and_then(fires)).collect()
}
