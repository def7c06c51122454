//! Clocks, and the conversion between clock time and wheel ticks.
//!
//! A timer reads one monotonic clock, measured as a [`Duration`] since that clock's own origin:
//! the system clock (`std::time::Instant`, origin = when the timer was built) or a [`ManualClock`]
//! that only moves when told to (tests and simulations: nothing then depends on wall time).
//!
//! ## Time in ticks
//!
//! The wheels count in whole ticks. Two conversions, rounded in opposite directions, give the
//! time semantics:
//!
//! * the **current tick** is `floor(now / tick)`: the last tick boundary at or before now;
//! * a task's **deadline tick** is `ceil(deadline / tick)`: the first tick boundary at or after its
//!   deadline.
//!
//! A task fires when the current tick reaches its deadline tick, i.e. at the first tick boundary at
//! or after its deadline: never early, at most one tick late. (Kafka truncates the deadline, so a
//! sub-tick deadline can fire up to one tick early; we round up.)

use std::fmt;
use std::time::{Duration, Instant};

use crate::deadline::{Deadline, Ranker, MAX_DEADLINE_TICK};
use crate::sync::{Arc, AtomicU64, Mutex, Ordering};

/// A clock that moves only when told to, for deterministic tests and simulations.
///
/// It starts at zero. Clones share the same time, so a test keeps one clone and hands another to
/// [`TimerBuilder::clock`](crate::TimerBuilder::clock). Time never goes backwards: see
/// [`advance_to`](ManualClock::advance_to).
///
/// A timer built with `.manual()` on this clock runs tasks only inside
/// [`Timer::advance_clock`](crate::Timer::advance_clock), which never waits. A timer with a driver
/// thread on this clock works too: the driver is woken whenever the clock advances.
///
/// ```
/// use delaywheel::ManualClock;
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let other = clock.clone();
/// clock.advance(Duration::from_millis(5));
/// assert_eq!(other.now(), Duration::from_millis(5));
/// ```
#[derive(Clone, Default)]
pub struct ManualClock {
    inner: Arc<ManualInner>,
}

#[derive(Default)]
struct ManualInner {
    nanos: AtomicU64,
    /// Called after every advance (driver threads waiting on this clock), each with the id that
    /// [`ManualClock::remove_listener`] takes; and the next id.
    listeners: Mutex<(Vec<(u64, Listener)>, u64)>,
}

type Listener = Box<dyn Fn() -> bool + Send + Sync>;

impl ManualClock {
    /// A new clock at time zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// The time elapsed since the clock's origin.
    pub fn now(&self) -> Duration {
        Duration::from_nanos(self.inner.nanos.load(Ordering::Acquire))
    }

    /// Moves the clock forward by `by` (saturating at about 584 years).
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let mut cur = self.inner.nanos.load(Ordering::Relaxed);
        loop {
            let next = cur.saturating_add(by);
            match self.inner.nanos.compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => break,
                Err(seen) => cur = seen,
            }
        }
        self.notify();
    }

    /// Moves the clock forward to `to`. A clock is monotonic: if `to` is earlier than now, nothing
    /// changes and `false` is returned.
    pub fn advance_to(&self, to: Duration) -> bool {
        let to = u64::try_from(to.as_nanos()).unwrap_or(u64::MAX);
        let prev = self.inner.nanos.fetch_max(to, Ordering::AcqRel);
        if prev <= to {
            self.notify();
        }
        prev <= to
    }

    #[inline]
    fn now_nanos(&self) -> u64 {
        self.inner.nanos.load(Ordering::Acquire)
    }

    /// Registers a callback run after every advance; it returns `false` once it is no longer
    /// needed (its timer is gone) and is then dropped. Returns its id, for
    /// [`remove_listener`](ManualClock::remove_listener). (Unused under loom: no driver in models.)
    #[cfg_attr(delaywheel_loom, allow(dead_code))]
    pub(crate) fn on_advance(&self, listener: Listener) -> u64 {
        let mut listeners = self.inner.listeners.lock();
        let id = listeners.1;
        listeners.1 += 1;
        listeners.0.push((id, listener));
        id
    }

    /// Drops the listener `id` at once (its driver stopped), so that a clock that never moves does
    /// not collect the listeners of timers long gone.
    #[cfg_attr(delaywheel_loom, allow(dead_code))]
    pub(crate) fn remove_listener(&self, id: u64) {
        self.inner.listeners.lock().0.retain(|&(other, _)| other != id);
    }

    /// Listeners registered and not yet removed (for tests).
    #[cfg(test)]
    pub(crate) fn listeners(&self) -> usize {
        self.inner.listeners.lock().0.len()
    }

    fn notify(&self) {
        self.inner.listeners.lock().0.retain(|(_, listener)| listener());
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualClock").field("now", &self.now()).finish()
    }
}

/// The clock a timer reads.
#[derive(Clone, Debug)]
pub(crate) enum ClockSource {
    /// `Instant`-based, measured from `origin`.
    System { origin: Instant },
    /// Moves only when told to; the timer never waits on it.
    Manual(ManualClock),
}

impl ClockSource {
    pub(crate) fn system() -> Self {
        ClockSource::System { origin: Instant::now() }
    }

    /// Nanoseconds since the clock's origin (saturating). On every schedule: inlined into the
    /// caller's crate, and in `u64` (`Duration::as_nanos` is a `u128` multiply-add).
    #[inline]
    pub(crate) fn now_nanos(&self) -> u64 {
        match self {
            ClockSource::System { origin } => duration_nanos(origin.elapsed()),
            ClockSource::Manual(clock) => clock.now_nanos(),
        }
    }

    pub(crate) fn is_manual(&self) -> bool {
        matches!(self, ClockSource::Manual(_))
    }
}

/// The tick length, and conversions between nanoseconds and ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TickLength {
    nanos: u64,
    /// Ranks deadlines within a tick (`deadline.rs`).
    ranker: Ranker,
    /// The last deadline tick: the last tick the clock can reach (its reading saturates at
    /// `u64::MAX` nanoseconds, so a later tick would never begin), or [`MAX_DEADLINE_TICK`].
    last: u64,
}

impl TickLength {
    /// `None` if `tick` is below 1 µs or above `u64::MAX` nanoseconds.
    pub(crate) fn new(tick: Duration) -> Option<Self> {
        let nanos = u64::try_from(tick.as_nanos()).ok()?;
        let last = (u64::MAX / nanos.max(1)).min(MAX_DEADLINE_TICK);
        (nanos >= 1_000).then(|| TickLength { nanos, ranker: Ranker::new(nanos), last })
    }

    pub(crate) fn as_duration(self) -> Duration {
        Duration::from_nanos(self.nanos)
    }

    /// The last tick boundary at or before `nanos`.
    #[inline]
    pub(crate) fn floor(self, nanos: u64) -> u64 {
        nanos / self.nanos
    }

    /// The deadline at clock time `nanos`: its tick, the first tick boundary at or after `nanos`,
    /// with its rank in that tick (`deadline.rs`); `None` beyond [`MAX_DEADLINE_TICK`].
    pub(crate) fn ceil(self, nanos: u128) -> Option<Deadline> {
        // With `x = nanos + n - 1`: the tick is `x / n`, and `x % n` is how far the deadline lies
        // into the interval `(tick - 1, tick]` (less one), which the rank needs.
        let x = nanos + u128::from(self.nanos - 1);
        let tick = u64::try_from(x / u128::from(self.nanos)).ok().filter(|&tick| tick <= self.last)?;
        Deadline::new(tick, self.ranker.rank((x % u128::from(self.nanos)) as u64))
    }

    /// The deadline of a task due at `now_nanos` itself: a deadline equal to now has passed, so it
    /// is filed at the current tick (`floor`), which the next advance reaches whatever the time
    /// within the tick, on the boundary rank (after the tick's other tasks).
    #[inline]
    pub(crate) fn passed(self, now_nanos: u64) -> Deadline {
        // `floor(u64::MAX / nanos)` is at most `last`: always a deadline tick.
        Deadline::new(self.floor(now_nanos), Deadline::ON_BOUNDARY).unwrap_or_default()
    }

    /// The deadline of a task scheduled at `now_nanos` with `delay`, if representable.
    #[inline]
    pub(crate) fn deadline(self, now_nanos: u64, delay: Duration) -> Option<Deadline> {
        if delay.is_zero() {
            return Some(self.passed(now_nanos));
        }
        // Fast path: `ceil`'s arithmetic in u64 (a u128 division costs several times more), taken
        // whenever its `x` fits.
        let x = delay
            .as_secs()
            .checked_mul(1_000_000_000)
            .and_then(|nanos| nanos.checked_add(u64::from(delay.subsec_nanos())))
            .and_then(|delay| now_nanos.checked_add(delay))
            .and_then(|deadline| deadline.checked_add(self.nanos - 1));
        match x {
            Some(x) if x / self.nanos <= self.last => {
                Deadline::new(x / self.nanos, self.ranker.rank(x % self.nanos))
            }
            Some(_) => None,
            None => self.ceil(u128::from(now_nanos) + delay.as_nanos()),
        }
    }

    /// The clock time (nanoseconds since the origin) at which tick `tick` begins.
    pub(crate) fn start_nanos(self, tick: u64) -> u128 {
        u128::from(tick) * u128::from(self.nanos)
    }

    /// The longest delay that still has a deadline tick when scheduled at `now_nanos`: one whose
    /// tick the clock can reach (see `last`).
    pub(crate) fn max_delay(self, now_nanos: u64) -> Duration {
        nanos_to_duration(self.start_nanos(self.last).saturating_sub(u128::from(now_nanos)))
    }
}

/// A `Duration` in nanoseconds, saturating at `u64::MAX` (about 584 years).
#[inline]
fn duration_nanos(d: Duration) -> u64 {
    d.as_secs()
        .checked_mul(1_000_000_000)
        .and_then(|nanos| nanos.checked_add(u64::from(d.subsec_nanos())))
        .unwrap_or(u64::MAX)
}

/// Nanoseconds as a `Duration`, saturating at `Duration::MAX`.
pub(crate) fn nanos_to_duration(nanos: u128) -> Duration {
    match u64::try_from(nanos / 1_000_000_000) {
        Ok(secs) => Duration::new(secs, (nanos % 1_000_000_000) as u32),
        Err(_) => Duration::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn tick_length_bounds() {
        assert!(TickLength::new(Duration::ZERO).is_none());
        assert!(TickLength::new(Duration::from_nanos(999)).is_none());
        assert!(TickLength::new(Duration::from_micros(1)).is_some());
        assert!(TickLength::new(Duration::MAX).is_none());
    }

    #[test]
    fn floor_and_ceil_round_in_opposite_directions() {
        let t = TickLength::new(ms(10)).unwrap();
        assert_eq!(t.floor(0), 0);
        assert_eq!(t.floor(9_999_999), 0);
        assert_eq!(t.floor(10_000_000), 1);
        assert_eq!(t.ceil(0).map(Deadline::tick), Some(0));
        assert_eq!(t.ceil(1).map(Deadline::tick), Some(1));
        assert_eq!(t.ceil(10_000_000).map(Deadline::tick), Some(1));
        assert_eq!(t.ceil(10_000_001).map(Deadline::tick), Some(2));
    }

    #[test]
    fn deadline_tick_never_before_deadline_and_ranked_within_it() {
        let t = TickLength::new(Duration::from_micros(7)).unwrap();
        for now in [0u64, 1, 6_999, 7_000, 123_456_789] {
            // A zero delay has passed: filed at the current tick (`passed`).
            assert_eq!(t.deadline(now, Duration::ZERO), Some(t.passed(now)));
            assert_eq!(t.passed(now), Deadline::new(now / 7_000, Deadline::ON_BOUNDARY).unwrap());
            for delay in [1u64, 3_500, 6_999, 7_000, 7_001, 1_000_000] {
                let d = t.deadline(now, Duration::from_nanos(delay)).unwrap();
                let deadline = u128::from(now) + u128::from(delay);
                assert!(t.start_nanos(d.tick()) >= deadline, "tick starts before the deadline");
                assert!(t.start_nanos(d.tick()) < deadline + 7_000, "more than one tick late");
                // The rank: which 256th of (tick - 1, tick] the deadline falls in.
                let below = deadline + 7_000 - 1 - t.start_nanos(d.tick());
                let exact = (below * 256 / 7_000) as u8;
                assert!(d.rank() == exact || d.rank() + 1 == exact, "now {now} delay {delay}: {d:?}");
            }
        }
        let on_boundary = t.deadline(0, Duration::from_micros(14)).unwrap();
        let just_after = t.deadline(0, Duration::from_nanos(14_001)).unwrap();
        let mid = t.deadline(0, Duration::from_nanos(17_500)).unwrap();
        assert_eq!((on_boundary.tick(), on_boundary.rank()), (2, Deadline::ON_BOUNDARY));
        assert_eq!((just_after.tick(), just_after.rank()), (3, 0));
        assert_eq!((mid.tick(), mid.rank()), (3, 127));
        assert!(on_boundary < just_after && just_after < mid);
    }

    #[test]
    fn the_u64_fast_paths_agree_with_u128_arithmetic() {
        let t = TickLength::new(Duration::from_micros(1_003)).unwrap();
        let delays = [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::new(1, 999_999_999),
            Duration::from_nanos(u64::MAX - 5),
            Duration::from_nanos(u64::MAX),
            Duration::new(u64::MAX / 1_000_000_000, 999_999_999),
            Duration::new(u64::MAX / 1_000_000_000 + 1, 0),
            Duration::MAX,
        ];
        for now in [0u64, 1, 1_002_999, u64::MAX / 2, u64::MAX - 1, u64::MAX] {
            for &delay in delays.iter().filter(|d| !d.is_zero()) {
                assert_eq!(
                    t.deadline(now, delay),
                    t.ceil(u128::from(now) + delay.as_nanos()),
                    "now {now} delay {delay:?}"
                );
            }
        }
        for &d in &delays {
            assert_eq!(u128::from(duration_nanos(d)), d.as_nanos().min(u128::from(u64::MAX)), "{d:?}");
        }
    }

    /// The deadline word against an independent `u128` reference, over tick lengths from 1 µs to
    /// `u64::MAX` ns, clocks up to `u64::MAX` and delays up to `Duration::MAX`: the tick is the
    /// reference ceiling (never early, never a whole tick late) or `None` exactly past the range,
    /// the rank is the exact 256th or one less, the fast and slow paths agree, a later deadline
    /// never gets a smaller word, and `max_delay` is exactly the largest delay accepted.
    #[test]
    fn deadlines_match_a_u128_reference_across_the_range() {
        let mut rng = crate::test_rng::XorShift::new(0x1234_5678_9abc_def1);
        let mut next = move || rng.next();
        // A value of a random bit length (0 to 64 bits), so that every magnitude is visited.
        let wide = |next: &mut dyn FnMut() -> u64| match next() % 65 {
            0 => 0,
            64 => next(),
            bits => next() & ((1u64 << bits) - 1),
        };
        // The last tick the clock (saturating at `u64::MAX` ns) reaches, within the word's range.
        let reference = |n: u64, d: u128| {
            let last = (u64::MAX / n).min(MAX_DEADLINE_TICK);
            let (n, x) = (u128::from(n), d + u128::from(n) - 1);
            let tick = u64::try_from(x / n).ok().filter(|&t| t <= last)?;
            Some((tick, x % n * 256 / n))
        };
        for i in 0..300_000u64 {
            let n = match next() % 4 {
                0 => 1_000 + next() % 10_000,
                1 => u64::MAX - next() % 1_000,
                2 => [1_000_000, 256_000_000_000, 257_000_000_000, (1 << 63) + 1][(next() % 4) as usize],
                _ => wide(&mut next).max(1_000),
            };
            let now = match next() % 3 {
                0 => u64::MAX - next() % (1 << 40),
                _ => wide(&mut next),
            };
            let delay = match next() % 4 {
                0 => Duration::from_nanos(wide(&mut next)),
                1 => Duration::new(wide(&mut next), (next() % 1_000_000_000) as u32),
                2 => Duration::MAX - Duration::from_nanos(wide(&mut next)),
                _ => Duration::from_nanos(next() % (1 << 20)),
            };
            let t = TickLength::new(Duration::from_nanos(n)).unwrap();
            let delay = delay.max(Duration::from_nanos(1)); // zero has passed: `passed`
            let at = u128::from(now) + delay.as_nanos();
            let got = t.deadline(now, delay);
            assert_eq!(got, t.ceil(at), "fast and slow paths: tick {n} now {now} delay {delay:?}");
            match (got, reference(n, at)) {
                (None, None) => {}
                (Some(word), Some((tick, rank))) => {
                    assert_eq!(word.tick(), tick, "tick {n} at {at}");
                    let got_rank = u128::from(word.rank());
                    assert!(
                        got_rank == rank || got_rank + 1 == rank,
                        "rank {got_rank} vs {rank}: tick {n} at {at}"
                    );
                    if let Some(later) = t.ceil(at + u128::from(wide(&mut next) % n)) {
                        assert!(later >= word, "a later deadline ranked earlier: tick {n} at {at}");
                    }
                }
                (got, expected) => {
                    panic!("tick {n} now {now} delay {delay:?}: {got:?}, expected {expected:?}")
                }
            }
            if i % 16 == 0 {
                let max = t.max_delay(now);
                assert!(t.deadline(now, max).is_some(), "max_delay refused: tick {n} now {now}");
                assert!(
                    t.deadline(now, max).is_some_and(|d| t.start_nanos(d.tick()) <= u128::from(u64::MAX)),
                    "max_delay's tick is out of the clock's reach: tick {n} now {now}"
                );
                match max.checked_add(Duration::from_nanos(1)) {
                    Some(more) => assert_eq!(t.deadline(now, more), None, "max_delay {max:?} is not the max"),
                    None => assert_eq!(max, Duration::MAX),
                }
            }
        }
    }

    #[test]
    fn far_future_has_no_deadline_tick() {
        let t = TickLength::new(ms(1)).unwrap();
        assert_eq!(t.deadline(0, Duration::MAX), None);
        let max = t.max_delay(5);
        // The clock saturates at u64::MAX ns: its last tick is the last deadline tick.
        assert_eq!(t.deadline(5, max).map(Deadline::tick), Some(u64::MAX / 1_000_000));
        assert_eq!(t.deadline(5, max + Duration::from_nanos(1)), None);
        // In the clock's last partial tick only a zero delay is left.
        assert_eq!(t.max_delay(u64::MAX - 1), Duration::ZERO);
        assert_eq!(t.deadline(u64::MAX - 1, Duration::from_micros(1)), None);
        assert_eq!(t.deadline(u64::MAX, Duration::ZERO).map(Deadline::tick), Some(u64::MAX / 1_000_000));
    }

    #[test]
    fn long_ticks_reach_as_far_as_the_clock_and_say_so() {
        // 2^56 - 1 ticks of 257 s would pass `Duration::MAX`, but the clock ends at u64::MAX ns
        // (584 years): the last tick that begins by then is the last deadline tick.
        let t = TickLength::new(Duration::from_secs(257)).unwrap();
        let last = u64::MAX / 257_000_000_000;
        assert_eq!(t.max_delay(0), Duration::from_secs(last * 257));
        assert!(t.deadline(0, t.max_delay(0)).is_some());
        assert_eq!(t.deadline(0, Duration::MAX), None);
        let t = TickLength::new(Duration::from_nanos(u64::MAX)).unwrap();
        assert_eq!(t.max_delay(0), Duration::from_nanos(u64::MAX), "one tick, the whole clock");
        assert_eq!(nanos_to_duration(u128::from(u64::MAX) * 10), Duration::from_nanos(u64::MAX) * 10);
        assert_eq!(nanos_to_duration(u128::MAX), Duration::MAX);
    }

    #[test]
    fn manual_clock_is_shared_and_monotonic() {
        let c = ManualClock::new();
        let d = c.clone();
        c.advance(ms(3));
        assert_eq!(d.now(), ms(3));
        assert!(!d.advance_to(ms(2)));
        assert_eq!(c.now(), ms(3));
        assert!(d.advance_to(ms(7)));
        assert_eq!(c.now(), ms(7));
        c.advance(Duration::MAX);
        assert_eq!(c.now(), Duration::from_nanos(u64::MAX));
    }
}
