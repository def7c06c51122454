//! A count of things **in** minus things **out**, **striped** per thread, and the order in which
//! it is read. The count of the tick groups' members behind `Timer::len()` (`timer/group_entries.rs`)
//! and the delay queue's (`queue/len.rs`) are both this.
//!
//! ## Stripes
//!
//! One shared counter written by every count-in and every count-out would move its cache line
//! between the cores of the threads counting on every count. So a count is a few stripes
//! ([`Striped`], [`stripe_count`] of them), each alone on its cache line(s), and a thread counts on
//! the stripe of its [`thread_index`] (round robin, so concurrent threads get distinct stripes until
//! there are more threads than stripes; sharing one is still correct, only slower). A stripe is
//! chosen by the thread doing the counting, not by the thing counted. A stripe's [`InOut`] holds
//! its count-ins and `OUTS` kinds of count-out (the timer tells cancellations from the rest).
//!
//! The count is Σ`ins` − Σ`outs` ([`Striped::count`]). Its user brings one **premise**: each thing is
//! counted out at most once, and its count-in happens-before its count-out (the module docs of each
//! user say why that holds there).
//!
//! ## Why a read loads every "out" before any "in"
//!
//! Count-ins are `Relaxed` ([`InOut::count_in`]), count-outs `Release` read-modify-writes
//! ([`InOut::count_out`]); [`Striped::count`] first loads every stripe's outs (`Acquire`), *then*
//! every stripe's ins.
//!
//! * **Never below the truth, never negative.** Take a thing whose count-out `O` is included in
//!   what a read loaded. Its count-in `I` happens-before `O` (the premise). `O` is a `Release`
//!   read-modify-write, and every later write to the same counter is a read-modify-write too, so
//!   the `Acquire` load that read `O` (or a later value) synchronises with it (a release sequence):
//!   `I` happens-before that load, hence before the later loads of the ins, which therefore include
//!   `I` (write-read coherence). So every thing counted out in what the read loaded is also counted
//!   in, and the difference counts exactly the things counted in but not (yet, as read) out: at
//!   least every thing in throughout the read (its count-in came before the read, its count-out did
//!   not), and never a negative number.
//! * **The wrong order fails.** Loading the ins first, a read can miss the count-in of a thing
//!   counted in during the read and then see its count-out: one less than the truth, which wraps
//!   below zero when nothing else is in. `Relaxed` loads of the outs fail the same way: nothing
//!   makes the later loads of the ins see the count-in.
//! * **Exact when quiet.** With no count in flight, every count has happened-before the read
//!   (threads joined, or synchronised through the data they passed), so the sums are exact.
//!
//! A read may over-count a thing counted in *and* out while it reads (count-out missed, count-in
//! seen); that is a call in flight, whose effect may or may not be visible.

use super::{stripe_count, thread_index, AtomicU64, Ordering};

/// Per-thread stripes of `T`: [`stripe_count`] of them, the calling thread's chosen by its
/// [`thread_index`] (module docs). `T` keeps each stripe on its own cache line(s).
#[derive(Debug)]
pub(crate) struct Striped<T> {
    stripes: Box<[T]>,
    /// `stripes.len() - 1` (a power of two).
    mask: usize,
}

/// One stripe's count-ins and its `OUTS` kinds of count-out (module docs).
#[derive(Debug)]
pub(crate) struct InOut<const OUTS: usize> {
    ins: AtomicU64,
    outs: [AtomicU64; OUTS],
}

impl<T> Striped<T> {
    /// [`stripe_count`] stripes, each made by `stripe`.
    pub(crate) fn new(stripe: impl FnMut() -> T) -> Self {
        let count = stripe_count();
        Striped { stripes: std::iter::repeat_with(stripe).take(count).collect(), mask: count - 1 }
    }

    /// The stripe of the calling thread.
    #[inline]
    pub(crate) fn local(&self) -> &T {
        &self.stripes[thread_index() & self.mask]
    }

    /// Σ`counter` over the stripes, each loaded with `order`.
    pub(crate) fn sum(&self, counter: impl Fn(&T) -> &AtomicU64, order: Ordering) -> u64 {
        self.stripes.iter().fold(0u64, |sum, stripe| sum.wrapping_add(counter(stripe).load(order)))
    }

    /// The count Σ`ins` − Σ`outs` of the stripes' [`InOut`]s, read in the order of the module docs.
    pub(crate) fn count<const OUTS: usize>(&self, in_out: impl Fn(&T) -> &InOut<OUTS>) -> usize {
        let outs = self.outs(&in_out, Ordering::Acquire);
        let ins = self.ins(&in_out);
        difference(ins, outs)
    }

    /// Σ`outs`, all kinds, each loaded with `order` (`Acquire` in [`count`](Striped::count)).
    pub(crate) fn outs<const OUTS: usize>(
        &self,
        in_out: impl Fn(&T) -> &InOut<OUTS>,
        order: Ordering,
    ) -> u64 {
        let outs = self.stripes.iter().flat_map(|stripe| &in_out(stripe).outs);
        outs.fold(0u64, |sum, out| sum.wrapping_add(out.load(order)))
    }

    /// Σ`ins` (`Relaxed`).
    pub(crate) fn ins<const OUTS: usize>(&self, in_out: impl Fn(&T) -> &InOut<OUTS>) -> u64 {
        self.sum(|stripe| &in_out(stripe).ins, Ordering::Relaxed)
    }

    /// Σ`outs` of kind `kind` alone (`Relaxed`): a monotonic total, not part of a count.
    pub(crate) fn total_out<const OUTS: usize>(
        &self,
        in_out: impl Fn(&T) -> &InOut<OUTS>,
        kind: usize,
    ) -> u64 {
        self.sum(|stripe| &in_out(stripe).outs[kind], Ordering::Relaxed)
    }
}

/// The count given the sums: never negative (module docs); a wrapped value would mean a counting
/// bug, and it shows.
pub(crate) fn difference(ins: u64, outs: u64) -> usize {
    usize::try_from(ins.wrapping_sub(outs)).unwrap_or(usize::MAX)
}

impl<const OUTS: usize> InOut<OUTS> {
    pub(crate) fn new() -> Self {
        InOut { ins: AtomicU64::new(0), outs: std::array::from_fn(|_| AtomicU64::new(0)) }
    }

    /// Counts one thing in, before anyone can count it out (module docs: the premise).
    #[inline]
    pub(crate) fn count_in(&self) {
        self.ins.fetch_add(1, Ordering::Relaxed);
    }

    /// Undoes a [`count_in`](InOut::count_in) of a thing no one could count out, on the same
    /// stripe and thread: a read sees both or the first alone (a transient over-count, never an
    /// under-count). (The tick groups' members, feature `async`.)
    #[cfg_attr(not(feature = "async"), allow(dead_code))]
    pub(crate) fn uncount_in(&self) {
        self.ins.fetch_sub(1, Ordering::Relaxed);
    }

    /// Counts `n` things out, as kind `kind` (`Release`: module docs).
    #[inline]
    pub(crate) fn count_out(&self, kind: usize, n: u64) {
        self.outs[kind].fetch_add(n, Ordering::Release);
    }
}
