//! The timer's counters: the pending gauge behind `len()`, and monotonic totals.
//!
//! ## Stripes
//!
//! One shared cache line for a `pending` gauge and the `scheduled` total (and an `Arc` whose count
//! sits on it, cloned per handle) would have two threads scheduling at once spend their time moving
//! that line between cores (SPEC W3). So the gauge is a striped count of things in and out
//! (`sync/striped.rs`, whose module docs give the stripes and the order of `len()`'s reads), and
//! each [`Stripe`] carries the timer's other counters and its `Arc` too. A stripe counts:
//!
//! * `scheduled` (its ins): entries counted **in** (before they become visible in a bucket), minus
//!   schedules refused after counting in (only by a racing shutdown, before the entry was ever
//!   visible);
//! * `cancelled` and `left` (its two kinds of out): entries counted **out** of `Pending`, by the
//!   party whose claim moved them out (`entry/`): a winning `cancel()`, or a fire or an
//!   abandonment. Each entry is counted out exactly once, and after it was counted in.
//!
//! `len()` is Σ`scheduled` − Σ(`cancelled` + `left`). A `cancel()` counts on the stripe its handle
//! carries (the scheduler's; no per-entry pointer, and no reference count on a shared line), a
//! future's cancel (`handle.rs`, `LentHandle`) on its calling thread's, the driver on its own: only
//! the sums mean anything, so any stripe will do.
//!
//! ## `len()`
//!
//! The read order (every count-out, `Acquire`, before any count-in) needs the premise that an
//! entry's count-in happens-before its count-out. It holds: the scheduler counts in before it
//! inserts the entry under a bucket lock (or hands its handle out), and whoever counts it out got
//! the entry through that lock or that handle. So `len()` counts at least every task pending
//! throughout the call, is never negative, and is exact when no call is in flight: a `cancel()`
//! that returned `true` has counted out before returning, and a later `len()` no longer counts that
//! task. A loom model checks the order
//! (`len::len_never_below_pending_while_racing_schedule_and_cancel`), and the seeded faults
//! `len_reads_scheduled_first` and `len_relaxed_reads` (docs/loom.md) make it fail.
//!
//! ## A bounded timer
//!
//! [`TimerBuilder::max_pending`](crate::TimerBuilder::max_pending) must be an exact bound under
//! concurrency, which needs one shared gauge: a bounded timer admits with a CAS loop on it (a refused
//! attempt never shows in `len()`, nor makes a concurrent one fail) and counts out on it too, and
//! `len()` reads it. Only the unbounded default avoids the shared line.

use crate::sync::striped::{InOut, Striped};
use crate::sync::{Arc, AtomicU64, AtomicUsize, Ordering};

/// A timer's counters: its stripes, and the shared gauge of a bounded timer. Each stripe also
/// carries a context `C` of the timer's (what a handle needs besides the stripe: `handle.rs`), so
/// that a handle holds one reference count, on its scheduling thread's stripe.
#[derive(Debug)]
pub(crate) struct Counters<C> {
    stripes: Striped<Arc<Stripe<C>>>,
    /// The shared gauge, with `max_pending` set.
    bound: Option<Arc<Bound>>,
}

/// The gauge of a bounded timer: the exact number of pending tasks, at most `max`.
#[derive(Debug)]
struct Bound {
    max: usize,
    pending: AtomicUsize,
}

/// The monotonic totals of a timer's counters ([`Counters::snapshot`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Totals {
    pub(crate) scheduled: u64,
    pub(crate) fired: u64,
    pub(crate) cancelled: u64,
    pub(crate) panicked: u64,
    pub(crate) rearmed: u64,
    pub(crate) abandoned: u64,
}

/// The kind of count-out of an entry a `cancel()` claimed.
const CANCELLED: usize = 0;
/// The kind of count-out of an entry claimed for running, or abandoned.
const LEFT: usize = 1;

/// One stripe of a timer's counters (see the module docs), with the timer's context `C`. Aligned
/// so that no two stripes, and nothing else, share a cache line (128 bytes: adjacent-line
/// prefetching pairs lines).
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct Stripe<C> {
    /// `scheduled` in; out as [`CANCELLED`] or [`LEFT`].
    pending: InOut<2>,
    fired: AtomicU64,
    panicked: AtomicU64,
    /// Resets that moved a pending task (`reset.rs`).
    rearmed: AtomicU64,
    /// Entries counted out as `left` without running: abandoned (handed back or dropped by a
    /// shutdown, by a closed executor) and tick-group members their group's end left behind. So
    /// `left` = `fired` + `abandoned` once each count-out has counted its kind.
    abandoned: AtomicU64,
    bound: Option<Arc<Bound>>,
    context: C,
}

impl<C: Clone> Counters<C> {
    /// Counters for a timer holding at most `max_pending` tasks (`usize::MAX`: unbounded), each
    /// stripe with a clone of `context`.
    pub(crate) fn new(max_pending: usize, context: &C) -> Counters<C> {
        let bound = (max_pending != usize::MAX)
            .then(|| Arc::new(Bound { max: max_pending, pending: AtomicUsize::new(0) }));
        let stripes = Striped::new(|| {
            Arc::new(Stripe {
                pending: InOut::new(),
                fired: AtomicU64::new(0),
                panicked: AtomicU64::new(0),
                rearmed: AtomicU64::new(0),
                abandoned: AtomicU64::new(0),
                bound: bound.clone(),
                context: context.clone(),
            })
        });
        Counters { stripes, bound }
    }
}

impl<C> Counters<C> {
    /// The stripe of the calling thread.
    #[inline]
    pub(crate) fn local(&self) -> &Arc<Stripe<C>> {
        self.stripes.local()
    }

    /// The number of pending tasks (module docs).
    pub(crate) fn pending(&self) -> usize {
        if let Some(bound) = &self.bound {
            return bound.pending.load(Ordering::Relaxed);
        }
        if fault!("len_reads_scheduled_first" | "len_relaxed_reads") {
            return super::faults::misread_pending(self);
        }
        self.stripes.count(|s| &s.pending)
    }

    /// Σ(`cancelled` + `left`), each stripe loaded with `order` (for the seeded faults' misreads).
    pub(super) fn out(&self, order: Ordering) -> u64 {
        self.stripes.outs(|s| &s.pending, order)
    }

    /// Whether a stripe is held beyond the counters: by a handle (each holds its scheduler's
    /// stripe), which keeps the timer's store alive after the timer (`shrink.rs`, the stop's).
    pub(super) fn lent(&self) -> bool {
        self.stripes.any(|stripe| Arc::strong_count(stripe) > 1)
    }

    /// Σ`scheduled` (`Relaxed`; for the seeded faults' misreads).
    pub(super) fn scheduled(&self) -> u64 {
        self.stripes.ins(|s| &s.pending)
    }

    /// The totals, each summed over the stripes.
    pub(crate) fn snapshot(&self) -> Totals {
        Totals {
            scheduled: self.stripes.ins(|s| &s.pending),
            fired: self.stripes.sum(|s| &s.fired, Ordering::Relaxed),
            cancelled: self.stripes.total_out(|s| &s.pending, CANCELLED),
            panicked: self.stripes.sum(|s| &s.panicked, Ordering::Relaxed),
            rearmed: self.stripes.sum(|s| &s.rearmed, Ordering::Relaxed),
            abandoned: self.stripes.sum(|s| &s.abandoned, Ordering::Relaxed),
        }
    }
}

impl<C> Stripe<C> {
    /// The context the timer gave every stripe.
    #[inline]
    pub(crate) fn context(&self) -> &C {
        &self.context
    }

    /// Counts a reset that moved a pending task.
    #[inline]
    pub(crate) fn rearmed(&self) {
        self.rearmed.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one more pending task, before its entry becomes visible; `false` (and nothing
    /// counted) if a bounded timer is full.
    #[inline]
    pub(crate) fn try_schedule(&self) -> bool {
        if let Some(bound) = &self.bound {
            if bound
                .pending
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |p| (p < bound.max).then_some(p + 1))
                .is_err()
            {
                return false;
            }
        }
        self.pending.count_in();
        true
    }

    /// Undoes [`try_schedule`](Stripe::try_schedule) for an entry that never became visible (a
    /// schedule refused by a racing shutdown), on the same stripe and thread.
    pub(crate) fn unschedule(&self) {
        self.pending.uncount_in();
        if let Some(bound) = &self.bound {
            bound.pending.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Counts out an entry a `cancel()` claimed.
    #[inline]
    pub(crate) fn cancelled(&self) {
        self.pending.count_out(CANCELLED, 1);
        self.count_out_of_bound();
    }

    /// Counts out an entry claimed for running (then counted [`fired`](Stripe::fired) by the
    /// batch), or abandoned (then counted by [`abandoned`](Stripe::abandoned)).
    #[inline]
    pub(crate) fn left(&self) {
        self.pending.count_out(LEFT, 1);
        self.count_out_of_bound();
    }

    /// Counts out an entry claimed as abandoned: it never runs, nor was it cancelled.
    pub(crate) fn abandoned(&self) {
        self.left();
        self.abandoned.fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    fn count_out_of_bound(&self) {
        self.count_out_of_bound_n(1);
    }

    #[inline]
    fn count_out_of_bound_n(&self, n: u64) {
        if let Some(bound) = &self.bound {
            bound.pending.fetch_sub(n as usize, Ordering::Relaxed);
        }
    }

    /// Counts out `n` members of a tick group of timeouts (`sleep/group/`), each counted in by
    /// [`try_schedule`](Stripe::try_schedule) as it joined: as cancelled (a member that left
    /// before its group's tick) or as claimed for running (the group fired, which counts them
    /// fired, or was abandoned). The group's own entry counts nothing (`InlineTask::is_counted`).
    #[cfg(feature = "async")]
    pub(crate) fn members_out(&self, n: u64, cancelled: bool, fired: bool) {
        self.pending.count_out(if cancelled { CANCELLED } else { LEFT }, n);
        self.count_out_of_bound_n(n);
        if fired {
            self.fired(n);
        } else if !cancelled {
            self.abandoned.fetch_add(n, Ordering::Relaxed);
        }
    }

    pub(crate) fn fired(&self, n: u64) {
        if n > 0 {
            self.fired.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Counts `n` panicked tasks (or wakes, or drops of a closure).
    pub(crate) fn panicked(&self, n: u64) {
        if n > 0 {
            self.panicked.fetch_add(n, Ordering::Relaxed);
        }
    }
}

impl super::Shared {
    /// Counts `n` panicked tasks or wakes on the calling thread's stripe (`shutdown.rs`).
    #[inline]
    pub(super) fn count_panicked(&self, n: u64) {
        self.counters.local().panicked(n);
    }
}

/// The counts of a tick group's members (`groups.rs`), on the calling thread's stripe.
#[cfg(feature = "async")]
impl super::Shared {
    /// Counts a member in before it joins its group; refused by a bounded timer that is full.
    #[inline]
    pub(crate) fn count_member_in(&self) -> Result<(), crate::ScheduleError> {
        match self.counters.local().try_schedule() {
            true => Ok(()),
            false => Err(crate::ScheduleError::TooManyPending { max: self.max_pending }),
        }
    }

    /// Undoes [`count_member_in`](super::Shared::count_member_in) for a member that never joined.
    #[inline]
    pub(crate) fn uncount_member_in(&self) {
        self.counters.local().unschedule();
    }

    /// Counts `n` members of a group that fired out, and records their lateness from `tick`.
    #[inline]
    pub(crate) fn members_fired(&self, n: u64, tick: u64) {
        if n > 0 {
            self.members_out(n, false, true);
            self.lateness.record_n(self.time.ticks, tick, self.time.clock.now_nanos(), n);
        }
    }

    /// Counts `n` members out: left before the tick (`cancelled`), or with their group, fired
    /// (`fired`) or abandoned ([`Stripe::members_out`]).
    #[inline]
    pub(crate) fn members_out(&self, n: u64, cancelled: bool, fired: bool) {
        if n > 0 {
            self.counters.local().members_out(n, cancelled, fired);
        }
    }
}
