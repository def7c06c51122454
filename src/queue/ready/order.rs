//! Deadline order across batches.
//!
//! The timer hands the queue its expired values in batches, in due-tick order, and within a tick
//! in deadline order; the ticks of later batches come after those of earlier ones. Due-tick order
//! is deadline order except for values whose deadline had passed when it was set (inserted or
//! reset to an instant already passed, a zero delay in the middle of a tick, or a schedule while an
//! advance was under way with a deadline that advance had passed): such a value is due at the tick
//! under way and expires at the next advance, possibly after values due later that earlier batches
//! brought and no consumer has taken yet. Consumers still take values in deadline order:
//!
//! * the timer, appending values under the arrival lock, compares each with the latest deadline
//!   handed over so far (`Order::newest`, one comparison per value) and, if it is earlier, raises
//!   `reorder` before it releases the lock;
//! * a consumer, under the taking lock, reads `reorder` before it takes a value, and checks it
//!   again under the arrival lock as it moves arrivals over; when raised, it lowers it and moves
//!   all of `arrived` onto `taking` under both locks, then sorts `taking` by deadline (`sort`)
//!   under the taking lock alone: the driver never waits for a sort.
//!
//! So whenever `reorder` is low, `taking` followed by `arrived` is in deadline order, and a take
//! gets the earliest expired value. The sort is stable: of two values due at the same instant, the
//! one handed over first comes out first. It runs only after such a value arrived, and costs about
//! a pass over the values waiting (the two lists are runs already in order). A take racing the
//! arrival may come before it (and is then ordered before it); a take ordered after the arrival
//! sees `reorder` raised, since the timer raises it under the arrival lock.

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
    /// before one handed over earlier (the consumers must sort).
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
    /// Sorts the arrived values in with `taking` if a value due before values handed over
    /// earlier arrived (module docs), so that `taking`'s front is the earliest expired value.
    #[inline]
    pub(super) fn settle(&self, taking: &mut VecDeque<Expired<T>>) {
        if self.reorder.load(Ordering::Acquire) {
            let arrived = self.arrived.lock();
            self.move_over(taking, arrived);
        }
    }

    /// Moves the arrived values onto `taking` (which keeps its own first), under both locks, and
    /// sorts them by deadline if `reorder` was raised (with the arrival lock released).
    pub(super) fn move_over(
        &self,
        taking: &mut VecDeque<Expired<T>>,
        mut arrived: MutexGuard<'_, Arrived<T>>,
    ) {
        let unordered = self.reorder.load(Ordering::Relaxed) && self.reorder.swap(false, Ordering::Relaxed);
        if taking.is_empty() {
            // No copy, and the emptied list's buffer goes back to the timer.
            mem::swap(taking, &mut arrived.values);
        } else {
            taking.append(&mut arrived.values);
        }
        drop(arrived);
        if unordered {
            sort(taking);
        }
    }
}

/// Sorts the consumers' side by deadline, stably.
#[cold]
fn sort<T>(taking: &mut VecDeque<Expired<T>>) {
    taking.make_contiguous().sort_by_key(|expired| expired.deadline);
}
