//! Clocks, and the conversion between clock time and wheel ticks.
//!
//! A timer reads one monotonic clock, measured as a [`Duration`] since that clock's own origin:
//! the system clock (`std::time::Instant`, origin = when the timer was built) or a [`ManualClock`]
//! that only moves when told to (tests and simulations: nothing then depends on wall time).
//!
//! ## Instants
//!
//! Both kinds of clock have a **base** [`Instant`]: the system clock's origin, or the instant taken
//! when the `ManualClock` was created. A reading `r` is the instant `base + r`, and an instant `i`
//! is the reading `i - base`, or zero for an instant before the base (such an instant has passed).
//! So `Timer::now`, `Timer::schedule_at` and `TimerHandle::deadline` agree on both kinds of clock;
//! on a manual clock the instants only name its readings, and wall time still plays no part.
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

use crate::deadline::{Deadline, Fractions, Ranker, MAX_DEADLINE_TICK};
use crate::sync::{Arc, AtomicU64, Mutex, Ordering};

#[cfg(delaywheel_loom)]
mod loom_model;
// A module with `unsafe` code (see the crate's "Unsafe code"): one `clock_gettime` call.
#[cfg(any(target_os = "linux", target_os = "android"))]
#[allow(unsafe_code)]
mod monotonic;

/// A clock that moves only when told to, for deterministic tests and simulations.
///
/// It starts at zero, which is the [`Instant`] taken when it was created (its base: a timer on this
/// clock reports [`Timer::now`](crate::Timer::now) as the base plus the reading). Clones share the
/// same time and the same base, so a test keeps one clone and hands another to
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
#[derive(Clone)]
pub struct ManualClock {
    inner: Arc<ManualInner>,
}

struct ManualInner {
    /// The instant that reading zero stands for (see the module docs).
    base: Instant,
    nanos: AtomicU64,
    /// Called after every advance (driver threads waiting on this clock), each with the id that
    /// [`ManualClock::remove_listener`] takes; and the next id.
    listeners: Mutex<(Vec<(u64, Listener)>, u64)>,
}

impl Default for ManualClock {
    fn default() -> Self {
        let inner = ManualInner {
            base: Instant::now(),
            nanos: AtomicU64::new(0),
            listeners: Mutex::new((Vec::new(), 0)),
        };
        ManualClock { inner: Arc::new(inner) }
    }
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

    /// Runs the listeners under the listeners lock. That is sound because a listener only wakes
    /// its driver's delay queue (no user code, no other clock call), and the reference to the
    /// timer it upgrades is the last only for a timer whose driver thread failed to start (nothing
    /// pending, so its drop runs no user code): a timer stopping its driver removes the listener
    /// first, and that removal waits for a notify under way. A listener that could run user code,
    /// or drop a timer holding tasks, would have to be called outside the lock.
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
    /// `Instant`-based, measured from `origin`; on Linux and Android read directly from the same
    /// clock, as nanoseconds since `raw_origin`, the value `origin` holds, when that is known
    /// (`monotonic.rs`).
    System {
        origin: Instant,
        #[cfg(any(target_os = "linux", target_os = "android"))]
        raw_origin: Option<u64>,
        /// Under loom, the reading (see [`advance_model`](ClockSource::advance_model)): a std
        /// atomic, not loom's, as the reading orders nothing (the models move it on their main
        /// thread before they spawn the others).
        #[cfg(delaywheel_loom)]
        model: std::sync::Arc<std::sync::atomic::AtomicU64>,
    },
    /// Moves only when told to; the timer never waits on it.
    Manual(ManualClock),
}

impl ClockSource {
    pub(crate) fn system() -> Self {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let (origin, raw_origin) = monotonic::origin();
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        let origin = Instant::now();
        ClockSource::System {
            origin,
            #[cfg(any(target_os = "linux", target_os = "android"))]
            raw_origin,
            #[cfg(delaywheel_loom)]
            model: Default::default(),
        }
    }

    /// Nanoseconds since the clock's origin (saturating). On every schedule: inlined into the
    /// caller's crate, and in `u64` (`Duration::as_nanos` is a `u128` multiply-add).
    #[inline]
    pub(crate) fn now_nanos(&self) -> u64 {
        #[cfg(delaywheel_loom)]
        if let ClockSource::System { model, .. } = self {
            return model.load(std::sync::atomic::Ordering::SeqCst);
        }
        match self {
            #[cfg(any(target_os = "linux", target_os = "android"))]
            ClockSource::System { raw_origin: Some(raw_origin), .. } => {
                monotonic::monotonic_nanos().saturating_sub(*raw_origin)
            }
            ClockSource::System { origin, .. } => duration_nanos(origin.elapsed()),
            ClockSource::Manual(clock) => clock.now_nanos(),
        }
    }

    pub(crate) fn is_manual(&self) -> bool {
        matches!(self, ClockSource::Manual(_))
    }

    /// The instant that reading zero stands for (see the module docs).
    pub(crate) fn base(&self) -> Instant {
        match self {
            ClockSource::System { origin, .. } => *origin,
            ClockSource::Manual(clock) => clock.inner.base,
        }
    }

    /// The instant of the reading `nanos`; `None` past what `Instant` represents (only for
    /// readings hundreds of billions of years away).
    pub(crate) fn instant_at(&self, nanos: u128) -> Option<Instant> {
        self.base().checked_add(nanos_to_duration(nanos))
    }

    /// The reading at `instant` in nanoseconds: zero for an instant before the base, whatever its
    /// distance (it has passed).
    pub(crate) fn nanos_at(&self, instant: Instant) -> u128 {
        instant.saturating_duration_since(self.base()).as_nanos()
    }

    /// The instant of the clock's current reading.
    pub(crate) fn now_instant(&self) -> Instant {
        self.reading_instant(self.now_nanos())
    }

    /// The instant of the reading `now` (nanoseconds, as [`now_nanos`](ClockSource::now_nanos)).
    #[inline]
    pub(crate) fn reading_instant(&self, now: u64) -> Instant {
        // A reading is at most `u64::MAX` ns past the base: about 584 years, within `Instant`'s
        // range wherever the base is (its range is that of an `i64` of seconds, or more).
        self.instant_at(u128::from(now)).unwrap_or_else(|| self.base())
    }

    /// The instant at which tick `tick` begins, `None` past what `Instant` represents.
    pub(crate) fn tick_instant(&self, ticks: TickLength, tick: u64) -> Option<Instant> {
        self.instant_at(ticks.start_nanos(tick))
    }

    /// The instant of `deadline` ([`TickLength::deadline_nanos`]), `None` past what `Instant`
    /// represents.
    pub(crate) fn deadline_instant(&self, ticks: TickLength, deadline: Deadline) -> Option<Instant> {
        self.instant_at(ticks.deadline_nanos(deadline))
    }
}

/// The tick length, and conversions between nanoseconds and ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TickLength {
    /// The tick as configured.
    length: Duration,
    /// Its nanoseconds; `u64::MAX` for a tick longer than that, whose first boundary the clock
    /// never reaches (`last` is then 0).
    nanos: u64,
    /// Ranks far deadlines within a tick (`deadline.rs`).
    ranker: Ranker,
    /// Keeps exact deadlines' place within a tick (`deadline.rs`); `None` for ticks too long.
    fractions: Option<Fractions>,
    /// The last deadline tick: the last tick the clock can reach (its reading saturates at
    /// `u64::MAX` nanoseconds, so a later tick would never begin), or [`MAX_DEADLINE_TICK`].
    last: u64,
    /// The deadline of the clock's origin, and of every instant before it: [`origin`](Self::origin).
    origin: Deadline,
}

impl TickLength {
    /// `None` if `tick` is below 1 µs. A tick longer than `u64::MAX` nanoseconds is counted as
    /// that long, with tick 0 the last deadline tick: its first boundary lies past the clock's end,
    /// so only tasks already due have a deadline (tick 0, or the one the clock's last reading
    /// floors to).
    pub(crate) fn new(tick: Duration) -> Option<Self> {
        let (nanos, last) = match u64::try_from(tick.as_nanos()) {
            Ok(nanos) => (nanos, (u64::MAX / nanos.max(1)).min(MAX_DEADLINE_TICK)),
            Err(_) => (u64::MAX, 0),
        };
        (nanos >= 1_000).then(|| {
            let (ranker, fractions) = (Ranker::new(nanos), Fractions::new(nanos));
            let ticks =
                TickLength { length: tick, nanos, ranker, fractions, last, origin: Deadline::default() };
            // Tick 0 is a deadline tick whatever the length.
            TickLength { origin: ticks.ceil(0).unwrap_or_default(), ..ticks }
        })
    }

    /// The deadline word of the clock's origin: the word of every deadline at or before it (the
    /// ceiling of 0; also of a zero delay at reading 0). It reads back as the origin; a handle
    /// whose entry has this word finds the instant of a deadline before the origin beside the
    /// entry (`timer/handle.rs`, "Before the origin").
    #[inline]
    pub(crate) fn origin(self) -> Deadline {
        self.origin
    }

    /// The deadline `below` nanoseconds into the interval before `tick` (less one: `below` is in
    /// `0..nanos`), exact where its word can be (`deadline.rs`); `None` beyond
    /// [`MAX_DEADLINE_TICK`].
    #[inline]
    fn encode(&self, tick: u64, below: u64) -> Option<Deadline> {
        match self.fractions.and_then(|fractions| fractions.deadline(tick, below)) {
            Some(exact) => Some(exact),
            None => Deadline::new(tick, self.ranker.rank(below)),
        }
    }

    /// The deadline on the boundary of `tick` itself, the latest of its interval: [`ceil`] of the
    /// tick's start, without the division. `None` beyond [`MAX_DEADLINE_TICK`].
    ///
    /// [`ceil`]: TickLength::ceil
    #[cfg(feature = "async")]
    #[inline]
    pub(crate) fn boundary(self, tick: u64) -> Option<Deadline> {
        self.encode(tick, self.nanos - 1)
    }

    /// The clock time of `deadline` in nanoseconds: exact for an exact word, its tick's start
    /// (the deadline rounded up to the tick) for a far one (`deadline.rs`).
    pub(crate) fn deadline_nanos(self, deadline: Deadline) -> u128 {
        let tick = deadline.tick();
        // The interval the fraction is of: `(tick - 1, tick]`, or the one after `tick` for a
        // deadline filed there, passed within the tick under way (`deadline.rs`, `P`).
        let interval = if deadline.passed_mid_tick() { Some(tick) } else { tick.checked_sub(1) };
        match (self.fractions, deadline.fraction(), interval) {
            (Some(fractions), Some(fraction), Some(start)) => {
                let below = fractions.below(fraction);
                u128::from(start) * u128::from(self.nanos) + u128::from(below) + 1
            }
            _ => self.start_nanos(tick),
        }
    }

    pub(crate) fn as_duration(self) -> Duration {
        self.length
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
        self.encode(tick, (x % u128::from(self.nanos)) as u64)
    }

    /// The deadline of a task due at `now_nanos` itself: a deadline equal to now has passed, so it
    /// is filed at the current tick (`floor`), which the next advance reaches whatever the time
    /// within the tick: [`passed_at`](TickLength::passed_at).
    #[inline]
    pub(crate) fn passed(self, now_nanos: u64) -> Deadline {
        self.passed_at(self.floor(now_nanos), now_nanos)
    }

    /// The deadline of clock time `at_nanos`, passed already, filed at tick `floor`, the current
    /// one (`at_nanos` lies in `(floor - 1, floor + 1]` in tick lengths): on `floor`'s own
    /// interval if it falls there, else in the next one, filed early (`deadline.rs`, `P`), after
    /// the tick's other tasks either way. A far word has no room for that: it is filed on
    /// `floor`'s boundary rank.
    fn passed_at(self, floor: u64, at_nanos: u64) -> Deadline {
        // `floor` starts at or before `at_nanos` (a clock reading), so the product fits.
        let into_next = at_nanos.saturating_sub(floor * self.nanos);
        let filed_early = (into_next > 0).then_some(self.fractions).flatten();
        filed_early
            .and_then(|fractions| fractions.passed(floor, into_next - 1))
            // On `floor`'s boundary itself, or no exact word: the boundary word. (`floor(u64::MAX
            // / nanos)` is at most `last`: always a deadline tick.)
            .or_else(|| self.encode(floor, self.nanos - 1))
            .unwrap_or_default()
    }

    /// The deadline of a task scheduled at `now_nanos` with `delay`, if representable.
    #[inline(always)]
    pub(crate) fn deadline(&self, now_nanos: u64, delay: Duration) -> Option<Deadline> {
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
            Some(x) if x / self.nanos <= self.last => self.encode(x / self.nanos, x % self.nanos),
            Some(_) => None,
            None => self.ceil(u128::from(now_nanos) + delay.as_nanos()),
        }
    }

    /// The deadline of clock time `at_nanos`, read at `now_nanos`: [`ceil`](TickLength::ceil), or
    /// for a time already passed (a time equal to now has passed) its tick rounded up but not past
    /// the current tick, so that the next advance fires it also mid-tick ([`passed`](TickLength::passed)
    /// when it rounds up past now).
    pub(crate) fn deadline_at(self, now_nanos: u64, at_nanos: u128) -> Option<Deadline> {
        if at_nanos <= u128::from(now_nanos) {
            let floor = self.floor(now_nanos);
            return Some(match self.ceil(at_nanos) {
                Some(deadline) if deadline.tick() <= floor => deadline,
                // Within the tick under way: `at_nanos <= now_nanos` fits in u64.
                _ => self.passed_at(floor, at_nanos as u64),
            });
        }
        self.ceil(at_nanos)
    }

    /// The clock time (nanoseconds since the origin) at which tick `tick` begins.
    pub(crate) fn start_nanos(self, tick: u64) -> u128 {
        u128::from(tick) * u128::from(self.nanos)
    }

    /// The longest delay that still has a deadline tick when scheduled at `now_nanos`: one whose
    /// tick the clock can reach (see `last`). A schedule accepts every delay up to this.
    pub(crate) fn reach(self, now_nanos: u64) -> Duration {
        nanos_to_duration(self.start_nanos(self.last).saturating_sub(u128::from(now_nanos)))
    }

    /// What `Timer::max_delay` reports at `now_nanos`: [`reach`](TickLength::reach) less
    /// [`MAX_DELAY_SLACK`], so that a schedule reading the clock up to that much later still
    /// accepts it (zero where the reach is shorter than the slack).
    pub(crate) fn max_delay(self, now_nanos: u64) -> Duration {
        self.reach(now_nanos).saturating_sub(MAX_DELAY_SLACK)
    }
}

/// How much later than `Timer::max_delay` read the clock a schedule of that delay may read it and
/// still be accepted: the clock (a system one) moves between the two readings, and a second covers
/// any prompt schedule, a preempted thread's too. Nothing of the range is lost that matters: it
/// ends centuries away (`TickLength::last`).
pub(crate) const MAX_DELAY_SLACK: Duration = Duration::from_secs(1);

/// `at + by`, or the farthest instant a halving search finds (thousands of years ahead: a deadline
/// that never comes) when `Instant` cannot represent the sum.
pub(crate) fn saturating_add(at: Instant, by: Duration) -> Instant {
    let mut by = by;
    loop {
        if let Some(sum) = at.checked_add(by) {
            return sum;
        }
        by /= 2;
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
mod tests;
