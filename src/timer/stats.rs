//! Firing lateness: how long after its deadline the timer fired each task.
//!
//! **Lateness** = the time on the timer's clock when a task **starts running**, minus the task's
//! **tick-rounded deadline** (the first tick boundary at or after `now + delay`, where the wheel
//! places it; a deadline already passed within the tick under way is filed at that tick's start so
//! that the next advance fires it, and still counts from the boundary after it). The rounding
//! itself (up to one tick, by design) is therefore *not* counted: what is measured is how late the
//! task started — the driver waking up, flushing, and running the tasks ahead of it (a slow task
//! shows up in the lateness of those after it). A deadline set already ticks in the past counts
//! from its own boundary, so the time it had passed by then counts too. (A far deadline word,
//! `deadline.rs`, has no room to tell a deadline passed within the tick under way: such a one
//! counts from that tick's start.) With
//! [`TaskExecution::Threads`](crate::TaskExecution::Threads) it is measured on the executor thread
//! when the task starts, so the wait in the executor's queue is included, and a task cancelled while
//! queued is not counted.
//!
//! ## Cost and ownership
//!
//! The clock is read once per task, just before it runs. Values in a row that fall in one histogram
//! bin (on a manual clock, every task of one advance; on the driver, tasks run a few hundred
//! nanoseconds apart) are run-length encoded by [`Batch`] and written with one `record_n`;
//! the histogram's lock is never held while a task runs, so a task may call `Timer::stats()` itself.
//! Writers are the thread advancing the clock (one at a time, under `advance_lock`) and the executor
//! threads; readers (`stats()`) take the lock briefly to compute the quantiles.
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

/// A snapshot of a timer's counters, gauges and firing lateness ([`Timer::stats`](crate::Timer::stats)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TimerStats {
    /// Tasks waiting now (what [`Timer::len`](crate::Timer::len) returns).
    pub pending: usize,
    /// Tasks accepted since the timer started.
    pub scheduled: u64,
    /// Tasks claimed for running since the timer started.
    pub fired: u64,
    /// Tasks cancelled by a `cancel()` that returned `true`, and values a delay queue handed back
    /// by `remove` or dropped by `clear` before they expired.
    pub cancelled: u64,
    /// Tasks that will never run and were not cancelled: handed back by a shutdown
    /// ([`UnfiredTask`](crate::UnfiredTask)s), dropped unrun by a shutdown or by the drop of a
    /// timer a [`DelayQueue`](crate::queue::DelayQueue) or a handle outlives, discarded by a
    /// closed executor, and lazily armed timeouts that a shutdown woke unelapsed. With no call in
    /// flight, `scheduled = pending + fired + cancelled + abandoned`: every task is counted once,
    /// by how it ended.
    pub abandoned: u64,
    /// Tasks that panicked while running, and wakes the timer made that panicked (of a sleep, of a
    /// delay queue's waiting consumers); each panic was caught and the timer went on.
    pub panicked: u64,
    /// Re-arms: resets ([`TimerHandle::reset`](crate::TimerHandle::reset),
    /// [`reset_at`](crate::TimerHandle::reset_at)) that returned `true`.
    pub rearmed: u64,
    /// Entries in the delay queue (about the number of non-empty buckets).
    pub queued_buckets: usize,
    /// Levels of the wheel with buckets created so far, the most of any shard (each thread
    /// schedules into a shard of its own, with its own wheel). A level's buckets are created (in
    /// chunks: [`resident_buckets`](TimerStats::resident_buckets)) when a task first needs one, not
    /// the levels below it: a task 100 s out on a fresh timer creates its level alone, so this can
    /// be smaller than `pending_per_level.len()`.
    pub levels_in_use: usize,
    /// Buckets created so far, over every level, summed over the shards. A level's buckets are
    /// created in chunks of up to 512 consecutive slots, each when a task first needs one of them
    /// ([`TimerBuilder::wheel_size`](crate::TimerBuilder::wheel_size)), and kept, so this grows
    /// with the slots used so far, up to whole levels.
    pub resident_buckets: usize,
    /// Tasks in the buckets of each level now, summed over the shards: index 0 is the finest
    /// level, up to the highest level created (empty before any; levels not created count zero).
    /// Each shard's counts are read under its lock, one shard after the other, when `stats()` is
    /// called, so it is a snapshot: tasks in transit (due at the next advance, or being fired) are
    /// in no level, and the sum may differ from `pending` under concurrent use. With the `async`
    /// feature, the lazily armed timeouts of one thread due in one tick share one entry (a tick
    /// group, `Timer::timeout`): here that entry counts once, however many timeouts it holds,
    /// while `pending` counts each.
    pub pending_per_level: Vec<usize>,
    /// The bucket holding the most tasks now, in any shard (the wheel's slot load balance), `None`
    /// when every bucket is empty; on a tie, the one at the lowest level, then slot. A snapshot, as
    /// `pending_per_level`.
    pub fullest_bucket: Option<BucketLoad>,
    /// How late tasks fired, since the timer started (see [`LatenessSummary`]).
    pub lateness: LatenessSummary,
}

/// One bucket of the wheel and how many tasks it holds ([`TimerStats::fullest_bucket`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct BucketLoad {
    /// Its level (0 is the finest: one tick per slot).
    pub level: usize,
    /// Its slot within the level, `0..wheel_size`.
    pub slot: usize,
    /// Tasks in it when `stats()` walked it.
    pub entries: usize,
}

/// A summary of how late a timer fired its tasks, since the timer started; part of
/// [`TimerStats`](crate::TimerStats).
///
/// Lateness is the time on the timer's clock at which a task started running minus the task's
/// deadline **rounded up to its tick** (where the wheel placed it). So it measures the driver's
/// delay (waking up, flushing, running earlier tasks, and with executor threads the wait in their
/// queue), not the up-to-one-tick rounding the timer does by design. On a
/// [`ManualClock`](crate::ManualClock) it is how far the clock had been advanced past the deadline
/// when `advance_clock` ran.
///
/// Quantiles come from an HDR histogram with two significant digits (within 1 %); `max` is exact.
/// All fields are zero until a task has fired.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct LatenessSummary {
    /// Tasks measured: every task started since the timer started (and every timeout that a
    /// tick group's task woke, `async`).
    pub count: u64,
    /// Mean lateness, from the histogram (within 1 %, as the quantiles).
    pub mean: Duration,
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

    /// Starts recording one batch of tasks (see [`Batch`]).
    pub(crate) fn batch(&self, ticks: TickLength) -> Batch<'_> {
        Batch { lateness: self, ticks, run_late: 0, run_len: 0, run_max: 0 }
    }

    /// Records one task started at `now_nanos` (executor threads, which run tasks one by one).
    pub(crate) fn record_one(&self, ticks: TickLength, deadline_tick: u64, now_nanos: u64) {
        self.record_n(ticks, deadline_tick, now_nanos, 1);
    }

    /// Records `n` tasks filed at `deadline_tick`, started together at `now_nanos` (the
    /// timeouts of a tick group, `sleep/group/`, woken by one task).
    pub(crate) fn record_n(&self, ticks: TickLength, deadline_tick: u64, now_nanos: u64, n: u64) {
        let late = lateness_nanos(ticks, deadline_tick, now_nanos);
        self.record(late, n, late);
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
            mean: Duration::from_nanos((h.mean() as u64).min(recorded.max)),
            p50: at(0.5),
            p99: at(0.99),
            p999: at(0.999),
            max: Duration::from_nanos(recorded.max),
        }
    }

    /// Records `count` tasks about `lateness_nanos` late (one bin, see [`same_bucket`]), the latest
    /// of them `max_nanos`.
    fn record(&self, lateness_nanos: u64, count: u64, max_nanos: u64) {
        let mut recorded = self.inner.lock();
        // Auto-resizing: recording only fails for values no u64 histogram can hold; drop those.
        let _ = recorded.histogram.record_n(lateness_nanos, count);
        recorded.max = recorded.max.max(max_nanos);
    }
}

impl fmt::Debug for Lateness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Lateness").field(&self.summary()).finish()
    }
}

/// Records the tasks of one batch, each with the clock read just before it runs. Lateness values
/// in a row that the histogram cannot tell apart ([`same_bucket`]: the tasks of one tick handed over
/// at one instant, on a manual clock; or tasks run a few hundred nanoseconds apart, as the driver
/// runs a tick's tasks) are run-length encoded, and the histogram is written (one lock) when a run
/// ends and when the batch is dropped. The maximum is kept exactly.
pub(crate) struct Batch<'a> {
    lateness: &'a Lateness,
    ticks: TickLength,
    run_late: u64,
    run_len: u64,
    run_max: u64,
}

impl Batch<'_> {
    /// Counts one task with deadline tick `deadline_tick`, started at `now_nanos` on the clock.
    #[inline]
    pub(crate) fn record(&mut self, deadline_tick: u64, now_nanos: u64) {
        let late = lateness_nanos(self.ticks, deadline_tick, now_nanos);
        if self.run_len > 0 && same_bucket(late, self.run_late) {
            self.run_len += 1;
            self.run_max = self.run_max.max(late);
        } else {
            self.flush();
            (self.run_late, self.run_len, self.run_max) = (late, 1, late);
        }
    }

    fn flush(&mut self) {
        if self.run_len > 0 {
            self.lateness.record(self.run_late, self.run_len, self.run_max);
            self.run_len = 0;
        }
    }
}

/// Whether two lateness values fall in one bin no coarser than the histogram's (within 1 / 256 of
/// the value, or equal below 512 ns): recording either counts the same, as far as the summary's
/// two significant digits can tell. (The driver reads the clock per task, so a tick's tasks rarely
/// have equal values; a record per value would take a lock per task.)
fn same_bucket(a: u64, b: u64) -> bool {
    let shift = (u64::BITS - 1 - (a | b | 1).leading_zeros()).saturating_sub(8);
    a >> shift == b >> shift
}

/// How far `now_nanos` is past the start of `deadline_tick` (zero if not past).
fn lateness_nanos(ticks: TickLength, deadline_tick: u64, now_nanos: u64) -> u64 {
    let late = u128::from(now_nanos).saturating_sub(ticks.start_nanos(deadline_tick));
    u64::try_from(late).unwrap_or(u64::MAX)
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
    fn batches_record_each_task_with_its_own_start_time() {
        let lateness = Lateness::new();
        let ticks = TickLength::new(ms(1)).unwrap();
        {
            // Started at 7.5 ms: three tasks due at tick 5 (2.5 ms late), one at tick 7 (0.5 ms late).
            let mut batch = lateness.batch(ticks);
            batch.record(5, 7_500_000);
            batch.record(5, 7_500_000);
            batch.record(7, 7_500_000);
            batch.record(5, 7_500_000);
        }
        let s = lateness.summary();
        assert_eq!(s.count, 4);
        assert_eq!(s.max, Duration::from_micros(2_500));
        let within_1pct = |got: Duration, want: Duration| got.abs_diff(want) <= want / 100;
        assert!(within_1pct(s.p50, Duration::from_micros(2_500)), "{s:?}");
        assert!(within_1pct(s.p99, Duration::from_micros(2_500)), "{s:?}");
        assert!(within_1pct(s.mean, Duration::from_micros(2_000)), "(3 · 2.5 + 0.5) / 4 ms: {s:?}");
    }

    #[test]
    fn a_run_of_nearly_equal_values_keeps_its_exact_max_and_its_quantiles() {
        let lateness = Lateness::new();
        let ticks = TickLength::new(ms(1)).unwrap();
        {
            // A driver running a tick's tasks ~300 ns apart, 250 µs late and more: one bin at a time.
            let mut batch = lateness.batch(ticks);
            for i in 0..1_000u64 {
                batch.record(5, 5_250_000 + 300 * i);
            }
        }
        let s = lateness.summary();
        assert_eq!(s.count, 1_000);
        assert_eq!(s.max, Duration::from_nanos(250_000 + 300 * 999), "exact");
        let within_1pct =
            |got: Duration, want: u64| got.as_nanos().abs_diff(u128::from(want)) <= u128::from(want) / 100;
        assert!(within_1pct(s.p50, 250_000 + 300 * 500), "{s:?}");
        assert!(within_1pct(s.p99, 250_000 + 300 * 990), "{s:?}");
    }

    #[test]
    fn same_bucket_is_exact_below_512_and_within_a_256th_above() {
        assert!(same_bucket(0, 0) && same_bucket(511, 511));
        assert!(!same_bucket(510, 511) && !same_bucket(0, 1));
        assert!(same_bucket(1_024, 1_027) && !same_bucket(1_027, 1_028));
        for v in [600u64, 12_345, 987_654_321, u64::MAX / 3] {
            // The bin of `v`: [lo, hi], at most a 256th of its values wide.
            let width = 1u64 << (63 - v.leading_zeros() - 8);
            let (lo, hi) = (v / width * width, v / width * width + width - 1);
            assert!(same_bucket(lo, v) && same_bucket(v, hi), "{v}");
            assert!(!same_bucket(lo - 1, lo) && !same_bucket(hi, hi + 1), "{v}");
            assert!((hi - lo) * 256 <= lo, "bin of {v}: {lo}..={hi}");
        }
    }

    #[test]
    fn a_same_bucket_bin_never_straddles_two_histogram_bins() {
        // What makes recording one value for a whole run exact (`Batch`): checked against the
        // histogram itself, so a change of `SIGNIFICANT_DIGITS` or of hdrhistogram shows here.
        let histogram = Histogram::<u64>::new(SIGNIFICANT_DIGITS).unwrap();
        let mut rng = crate::test_rng::XorShift::new(0x9E37_79B9_7F4A_7C15);
        for i in 0..200_000u64 {
            let x = rng.next();
            // Values of every magnitude, and neighbours within a few bins of each other.
            let a = x >> (x % 64);
            let b = a.wrapping_add(i % 5_000);
            if same_bucket(a, b) {
                assert!(histogram.equivalent(a, b), "{a} and {b}");
            }
        }
        for a in 0..70_000u64 {
            assert!(!same_bucket(a, a + 1) || histogram.equivalent(a, a + 1), "{a}");
        }
    }

    #[test]
    fn on_time_is_zero() {
        let lateness = Lateness::new();
        let ticks = TickLength::new(ms(1)).unwrap();
        lateness.batch(ticks).record(5, 5_000_000);
        let s = lateness.summary();
        assert_eq!((s.count, s.p50, s.max), (1, Duration::ZERO, Duration::ZERO));
    }
}
