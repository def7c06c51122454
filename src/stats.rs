//! Firing lateness: how long after its deadline the timer fired each task.
//!
//! **Lateness** = the time on the timer's clock when the driver fires a task, minus the task's
//! **tick-rounded deadline** (the first tick boundary at or after `now + delay`, where the wheel
//! places it). The rounding itself (up to one tick, by design) is therefore *not* counted: what is
//! measured is how late the driver was — waking up, flushing, running the tasks ahead in the batch.
//! With [`TaskExecution::Threads`](crate::TaskExecution::Threads) a task counts as fired when the
//! driver hands it to the executor threads (the time it then waits in their queue is not counted).
//!
//! ## Cost and ownership
//!
//! The clock is read **once per batch** (the due entries of one flushed bucket), not per task. Tasks
//! of a batch mostly share one deadline tick, so [`Batch`] run-length encodes them and records each
//! run with one `record_n`: the histogram's lock is taken about once per batch, by the thread
//! advancing the clock (only one does at a time, under `advance_lock`), and is never held while a
//! task runs, so a task may call `Timer::stats()` itself. Readers (`stats()`) take it briefly to
//! compute the quantiles.
//!
//! The histogram is [`hdrhistogram`]'s, auto-resizing, in nanoseconds with two significant digits:
//! quantiles are within 1 %, it starts at a few hundred bytes and grows only with the largest
//! lateness seen (about 25 KiB to cover up to one second). The maximum is also kept exactly.

use std::fmt;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::clock::TickLength;
use crate::sync::Mutex;

/// Significant decimal digits kept by the histogram: quantiles within 1 %.
const SIGNIFICANT_DIGITS: u8 = 2;

/// A summary of how late a timer fired its tasks, since the timer started; part of
/// [`TimerStats`](crate::TimerStats).
///
/// Lateness is the time on the timer's clock at which the driver fired a task minus the task's
/// deadline **rounded up to its tick** (where the wheel placed it). So it measures the driver's
/// delay (waking up, flushing, running earlier tasks of the same batch), not the up-to-one-tick
/// rounding the timer does by design. On a [`ManualClock`](crate::ManualClock) it is how far the
/// clock had been advanced past the deadline when `advance_clock` ran.
///
/// Quantiles come from an HDR histogram with two significant digits (within 1 %); `max` is exact.
/// All fields are zero until a task has fired.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct LatenessSummary {
    /// Tasks measured: every task fired since the timer started.
    pub count: u64,
    /// Median lateness.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// 99.9th percentile.
    pub p999: Duration,
    /// The largest lateness seen (exact).
    pub max: Duration,
}

/// The timer's lateness record (one per timer, in `Shared`).
pub(crate) struct Lateness {
    inner: Mutex<Recorded>,
}

struct Recorded {
    histogram: Histogram<u64>,
    max: u64,
}

impl Lateness {
    pub(crate) fn new() -> Self {
        let histogram = Histogram::new(SIGNIFICANT_DIGITS).expect("2 significant digits are valid");
        Lateness { inner: Mutex::new(Recorded { histogram, max: 0 }) }
    }

    /// Starts recording one batch of tasks fired at `now_nanos` on the timer's clock.
    pub(crate) fn batch(&self, now_nanos: u64, ticks: TickLength) -> Batch<'_> {
        Batch { lateness: self, now_nanos, ticks, run_tick: 0, run_len: 0 }
    }

    pub(crate) fn summary(&self) -> LatenessSummary {
        let recorded = self.inner.lock();
        let h = &recorded.histogram;
        if h.is_empty() {
            return LatenessSummary::default();
        }
        let at = |q: f64| Duration::from_nanos(h.value_at_quantile(q).min(recorded.max));
        LatenessSummary {
            count: h.len(),
            p50: at(0.5),
            p99: at(0.99),
            p999: at(0.999),
            max: Duration::from_nanos(recorded.max),
        }
    }

    fn record(&self, lateness_nanos: u64, count: u64) {
        let mut recorded = self.inner.lock();
        // Auto-resizing: recording only fails for values no u64 histogram can hold; drop those.
        let _ = recorded.histogram.record_n(lateness_nanos, count);
        recorded.max = recorded.max.max(lateness_nanos);
    }
}

impl fmt::Debug for Lateness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Lateness").field(&self.summary()).finish()
    }
}

/// Records the tasks of one batch; flushes to the histogram when the deadline tick changes and
/// when dropped (see the module docs).
pub(crate) struct Batch<'a> {
    lateness: &'a Lateness,
    now_nanos: u64,
    ticks: TickLength,
    run_tick: u64,
    run_len: u64,
}

impl Batch<'_> {
    /// Counts one fired task whose deadline tick is `deadline_tick`.
    #[inline]
    pub(crate) fn record(&mut self, deadline_tick: u64) {
        if self.run_len > 0 && deadline_tick == self.run_tick {
            self.run_len += 1;
        } else {
            self.flush();
            self.run_tick = deadline_tick;
            self.run_len = 1;
        }
    }

    fn flush(&mut self) {
        if self.run_len == 0 {
            return;
        }
        let late = u128::from(self.now_nanos).saturating_sub(self.ticks.start_nanos(self.run_tick));
        let late = u64::try_from(late).unwrap_or(u64::MAX);
        self.lateness.record(late, self.run_len);
        self.run_len = 0;
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn empty_summary_is_zero() {
        assert_eq!(Lateness::new().summary(), LatenessSummary::default());
    }

    #[test]
    fn batches_are_run_length_encoded_by_deadline_tick() {
        let lateness = Lateness::new();
        let ticks = TickLength::new(ms(1)).unwrap();
        {
            // Fired at 7.5 ms: three tasks due at tick 5 (2.5 ms late), one at tick 7 (0.5 ms late).
            let mut batch = lateness.batch(7_500_000, ticks);
            batch.record(5);
            batch.record(5);
            batch.record(7);
            batch.record(5);
        }
        let s = lateness.summary();
        assert_eq!(s.count, 4);
        assert_eq!(s.max, Duration::from_micros(2_500));
        let within_1pct = |got: Duration, want: Duration| got.abs_diff(want) <= want / 100;
        assert!(within_1pct(s.p50, Duration::from_micros(2_500)), "{s:?}");
        assert!(within_1pct(s.p99, Duration::from_micros(2_500)), "{s:?}");
    }

    #[test]
    fn on_time_is_zero() {
        let lateness = Lateness::new();
        let ticks = TickLength::new(ms(1)).unwrap();
        lateness.batch(5_000_000, ticks).record(5);
        let s = lateness.summary();
        assert_eq!((s.count, s.p50, s.max), (1, Duration::ZERO, Duration::ZERO));
    }
}
