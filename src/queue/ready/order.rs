//! Deadline order across batches.
//!
//! The timer hands the queue its expired values in batches, in due-tick order, and within a tick
//! in deadline order; the ticks of later batches come after those of earlier ones. Due-tick order
//! is deadline order except for values whose deadline had passed when it was set (inserted or
//! reset to an instant already passed, a zero delay in the middle of a tick, or a schedule while an
//! advance was under way with a deadline that advance had passed): such a value is due at the tick
//! under way and expires at the next advance, with the values of the next tick due by then in its
//! batch (`shard/core.rs`, "Passed deadlines mid-tick"), possibly after values due later that
//! earlier batches brought and no consumer has taken yet, or, inserted while that advance ran,
//! before values of the next tick due before it. Consumers still take values in deadline order:
//!
//! * the timer, appending values under the arrival lock, compares each with the latest deadline
//!   handed over so far (`Order::newest`, one comparison per value) and, if it is earlier, raises
//!   `reorder` before it releases the lock;
//! * a consumer, under the taking lock, reads `reorder` before it takes a value, and again under
//!   the arrival lock as it moves arrivals over; when raised, it lowers it, takes all of `arrived`
//!   out under both locks and, with the arrival lock released (the driver never waits for it),
//!   puts each value into `taking` after every value due at or before it (`place`).
//!
//! So `taking` is always in deadline order, and so is `taking` followed by `arrived` whenever
//! `reorder` is low: a take gets the earliest expired value; of two values due at the same
//! instant, the one handed over first. A value due at or after the last one waiting is appended;
//! an earlier one is placed by a binary search and a shift of the values after it, towards the
//! nearer end: values handed over late are mostly due just before the latest ones (a zero delay
//! set in the middle of a tick, say), so the shift is short; one due long before a large backlog
//! of values waiting untaken shifts the part of the backlog before it or after it, whichever is
//! smaller. A take racing the arrival may come before it (it is then ordered before the arrival);
//! a take ordered after the arrival sees `reorder` raised, since the timer raises it under the
//! arrival lock. A `try_recv_many` looks at the arrivals once, so one call's values are in order.

use std::collections::VecDeque;
use std::mem;
use std::time::Instant;

use super::super::Expired;
use super::{Arrived, Ready};
use crate::sync::{MutexGuard, Ordering};

/// The latest deadline handed over, kept under the arrival lock.
#[derive(Default)]
pub(super) struct Order {
    newest: Option<Instant>,
}

impl Order {
    /// Appends `batch` to `values`, in the timer's order; returns whether a value of it is due
    /// before one handed over earlier (the consumers must place the arrivals in order).
    pub(super) fn append<T>(
        &mut self,
        values: &mut VecDeque<Expired<T>>,
        batch: impl Iterator<Item = Expired<T>>,
    ) -> bool {
        let mut earlier = false;
        for expired in batch {
            match self.newest {
                Some(newest) if expired.deadline < newest => earlier = true,
                _ => self.newest = Some(expired.deadline),
            }
            values.push_back(expired);
        }
        // Seeded fault `queue_batch_order_unchecked` (docs/loom.md): a value due before those
        // waiting is taken after them.
        earlier && !fault!("queue_batch_order_unchecked")
    }
}

impl<T> Ready<T> {
    /// Places the arrived values in `taking` if a value due before values handed over earlier
    /// arrived (module docs), so that `taking`'s front is the earliest expired value.
    #[inline]
    pub(super) fn settle(&self, taking: &mut VecDeque<Expired<T>>) {
        if self.reorder.load(Ordering::Acquire) {
            self.move_over(taking, self.arrived.lock());
        }
    }

    /// Moves the arrived values onto `taking`, taking them out under both locks: appended when
    /// `reorder` is low (they are due at or after every value of `taking`), else each placed in
    /// order with the arrival lock released.
    pub(super) fn move_over(
        &self,
        taking: &mut VecDeque<Expired<T>>,
        mut arrived: MutexGuard<'_, Arrived<T>>,
    ) {
        let unordered = self.reorder.load(Ordering::Relaxed) && self.reorder.swap(false, Ordering::Relaxed);
        if !unordered {
            if taking.is_empty() {
                // No copy, and the emptied list's buffer goes back to the timer.
                mem::swap(taking, &mut arrived.values);
            } else {
                taking.append(&mut arrived.values);
            }
            return;
        }
        let arrivals = mem::take(&mut arrived.values);
        drop(arrived);
        taking.reserve(arrivals.len());
        for expired in arrivals {
            place(taking, expired);
        }
    }
}

/// Puts `expired` into `taking`, which is in deadline order, after every value due at or before it.
fn place<T>(taking: &mut VecDeque<Expired<T>>, expired: Expired<T>) {
    match taking.back() {
        Some(last) if expired.deadline < last.deadline => {
            let at = taking.partition_point(|waiting| waiting.deadline <= expired.deadline);
            taking.insert(at, expired);
        }
        _ => taking.push_back(expired),
    }
}
