//! The timer's counters: the pending gauge behind `len()`, and monotonic totals.
//!
//! ## Stripes
//!
//! One shared cache line for a `pending` gauge and the `scheduled` total (and an `Arc` whose count
//! sits on it, cloned per handle) would have two threads scheduling at once spend their time moving
//! that line between cores (SPEC W3). So the counters are **striped**: a timer has a few
//! [`Stripe`]s, each alone on its cache line(s), and a thread counts on the stripe of its
//! [`thread_index`] (round robin, so concurrent threads get distinct
//! stripes until there are more threads than stripes; sharing one is still correct, only slower).
//! A stripe counts:
//!
//! * `scheduled`: entries counted **in** (before they become visible in a bucket), minus schedules
//!   refused after counting in (only by a racing shutdown, before the entry was ever visible);
//! * `cancelled` and `left`: entries counted **out** of `Pending`, by the party whose claim moved
//!   them out (`entry/`): a winning `cancel()`, or a fire or an abandonment. Each entry is
//!   counted out exactly once, and after it was counted in.
//!
//! `len()` is Σ`scheduled` − Σ(`cancelled` + `left`). A stripe is chosen by the thread doing the
//! counting, not by the entry: a `cancel()` counts on the stripe its handle carries (the scheduler's;
//! no per-entry pointer, and no reference count on a shared line), the driver on its own.
//!
//! ## Why `len()` reads every "out" stripe before any "in" stripe
//!
//! Increments of `scheduled` are `Relaxed`; increments of `cancelled` and `left` are `Release`
//! read-modify-writes; `len()` first loads every `cancelled` and `left` (`Acquire`), *then* every
//! `scheduled`.
//!
//! * **Never below the truth, never negative.** Take an entry whose count-out `O` is included in a
//!   value `len()` read. The count-in `I` of that entry happens-before `O`: the scheduler counts in
//!   before it inserts the entry under a bucket lock (or hands its handle out), and whoever counts it
//!   out got the entry through that lock or that handle. `O` is a `Release` read-modify-write, and
//!   every later write to the same counter is a read-modify-write too, so the `Acquire` load that
//!   read `O` (or a later value) synchronises with it (a release sequence): `I` happens-before that
//!   load, hence before the later loads of the `scheduled` stripes, which therefore include `I`
//!   (read-read coherence). So every entry counted out in what `len()` read is also counted in, and
//!   the difference counts exactly the entries counted in but not (yet, as read) out: at least every
//!   task pending throughout the call (its count-in came before the call, its count-out did not),
//!   and never a negative number.
//! * **The wrong order fails.** Reading `scheduled` first, `len()` can miss the count-in of an entry
//!   scheduled during the call and then see its count-out: one less than the truth, which wraps
//!   below zero when nothing else is pending. `Relaxed` loads fail the same way: nothing makes the
//!   later `scheduled` load see the count-in. A loom model catches both
//!   (`len::len_never_below_pending_while_racing_schedule_and_cancel`, with the faults
//!   `len_reads_scheduled_first` and `len_relaxed_reads`: docs/loom.md).
//! * **Exact when quiet.** With no call in flight, every increment has happened-before the read
//!   (threads joined, or synchronised through the data they passed), so the sums are exact. A
//!   `cancel()` that returned `true` has counted out before returning: a later `len()` no longer
//!   counts that task.
//!
//! `len()` may over-count an entry scheduled *and* counted out while it reads (count-out missed,
//! count-in seen); that is a call in flight, whose effect may or may not be visible.
//!
//! ## A bounded timer
//!
//! [`TimerBuilder::max_pending`](crate::TimerBuilder::max_pending) must be an exact bound under
//! concurrency, which needs one shared gauge: a bounded timer admits with a CAS loop on it (a refused
//! attempt never shows in `len()`, nor makes a concurrent one fail) and counts out on it too, and
//! `len()` reads it. Only the unbounded default avoids the shared line.

use crate::sync::{stripe_count, thread_index, Arc, AtomicU64, AtomicUsize, Ordering};

/// A timer's counters: its stripes, and the shared gauge of a bounded timer. Each stripe also
/// carries a context `C` of the timer's (what a handle needs besides the stripe: `handle.rs`), so
/// that a handle holds one reference count, on its scheduling thread's stripe.
#[derive(Debug)]
pub(crate) struct Counters<C> {
    stripes: Box<[Arc<Stripe<C>>]>,
    /// `stripes.len() - 1` (a power of two).
    mask: usize,
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
}

/// One stripe of a timer's counters (see the module docs), with the timer's context `C`. Aligned
/// so that no two stripes, and nothing else, share a cache line (128 bytes: adjacent-line
/// prefetching pairs lines).
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct Stripe<C> {
    scheduled: AtomicU64,
    cancelled: AtomicU64,
    /// Counted out by a fire or an abandonment.
    left: AtomicU64,
    fired: AtomicU64,
    panicked: AtomicU64,
    /// Resets that moved a pending task (`reset.rs`).
    rearmed: AtomicU64,
    bound: Option<Arc<Bound>>,
    context: C,
}

impl<C: Clone> Counters<C> {
    /// Counters for a timer holding at most `max_pending` tasks (`usize::MAX`: unbounded), each
    /// stripe with a clone of `context`.
    pub(crate) fn new(max_pending: usize, context: &C) -> Counters<C> {
        let bound = (max_pending != usize::MAX)
            .then(|| Arc::new(Bound { max: max_pending, pending: AtomicUsize::new(0) }));
        let count = stripe_count();
        let stripes = (0..count)
            .map(|_| {
                Arc::new(Stripe {
                    scheduled: AtomicU64::new(0),
                    cancelled: AtomicU64::new(0),
                    left: AtomicU64::new(0),
                    fired: AtomicU64::new(0),
                    panicked: AtomicU64::new(0),
                    rearmed: AtomicU64::new(0),
                    bound: bound.clone(),
                    context: context.clone(),
                })
            })
            .collect();
        Counters { stripes, mask: count - 1, bound }
    }
}

impl<C> Counters<C> {
    /// The stripe of the calling thread.
    #[inline]
    pub(crate) fn local(&self) -> &Arc<Stripe<C>> {
        &self.stripes[thread_index() & self.mask]
    }

    /// The number of pending tasks (see the module docs for why this order).
    pub(crate) fn pending(&self) -> usize {
        if let Some(bound) = &self.bound {
            return bound.pending.load(Ordering::Relaxed);
        }
        if fault!("len_reads_scheduled_first" | "len_relaxed_reads") {
            return super::faults::misread_pending(self);
        }
        let out = self.out(Ordering::Acquire);
        let scheduled = self.scheduled();
        Self::difference(scheduled, out)
    }

    /// Σ(`cancelled` + `left`), each stripe loaded with `order`.
    pub(super) fn out(&self, order: Ordering) -> u64 {
        self.sum(|s| &s.cancelled, order).wrapping_add(self.sum(|s| &s.left, order))
    }

    /// Σ`scheduled` (`Relaxed`).
    pub(super) fn scheduled(&self) -> u64 {
        self.sum(|s| &s.scheduled, Ordering::Relaxed)
    }

    /// What is pending given the sums: never negative (module docs); a wrapped value would mean a
    /// counting bug, and it shows.
    pub(super) fn difference(scheduled: u64, out: u64) -> usize {
        usize::try_from(scheduled.wrapping_sub(out)).unwrap_or(usize::MAX)
    }

    fn sum(&self, counter: impl Fn(&Stripe<C>) -> &AtomicU64, order: Ordering) -> u64 {
        self.stripes.iter().fold(0u64, |sum, stripe| sum.wrapping_add(counter(stripe).load(order)))
    }

    /// The totals, each summed over the stripes.
    pub(crate) fn snapshot(&self) -> Totals {
        Totals {
            scheduled: self.sum(|s| &s.scheduled, Ordering::Relaxed),
            fired: self.sum(|s| &s.fired, Ordering::Relaxed),
            cancelled: self.sum(|s| &s.cancelled, Ordering::Relaxed),
            panicked: self.sum(|s| &s.panicked, Ordering::Relaxed),
            rearmed: self.sum(|s| &s.rearmed, Ordering::Relaxed),
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
        self.scheduled.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Undoes [`try_schedule`](Stripe::try_schedule) for an entry that never became visible (a
    /// schedule refused by a racing shutdown). Same stripe, same thread: `len()` sees both or the
    /// first alone (a transient over-count, never an under-count).
    pub(crate) fn unschedule(&self) {
        self.scheduled.fetch_sub(1, Ordering::Relaxed);
        if let Some(bound) = &self.bound {
            bound.pending.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Counts out an entry a `cancel()` claimed.
    #[inline]
    pub(crate) fn cancelled(&self) {
        self.cancelled.fetch_add(1, Ordering::Release);
        self.count_out_of_bound();
    }

    /// Counts out an entry claimed for running, or abandoned.
    #[inline]
    pub(crate) fn left(&self) {
        self.left.fetch_add(1, Ordering::Release);
        self.count_out_of_bound();
    }

    #[inline]
    fn count_out_of_bound(&self) {
        if let Some(bound) = &self.bound {
            bound.pending.fetch_sub(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn fired(&self, n: u64) {
        if n > 0 {
            self.fired.fetch_add(n, Ordering::Relaxed);
        }
    }

    pub(crate) fn panicked(&self) {
        self.panicked.fetch_add(1, Ordering::Relaxed);
    }
}
