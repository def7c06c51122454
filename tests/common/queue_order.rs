//! The order in which the queue model (`queue_model.rs`) lets expired values come out: deadline
//! order, to the nanosecond where the timer keeps deadlines exactly, to a 256th of the tick where
//! it keeps them as far words (`src/deadline.rs`), and equal deadlines first in, first out (the
//! model inserts from one thread, so program order is the order promised).

use std::cmp::Ordering;

use super::Entry;

/// Whether `a` may come out right before `b`, of equal or exact deadlines and expired by the same
/// advance.
fn in_order(entries: &[Entry], a: usize, b: usize) -> bool {
    let (x, y) = (&entries[a], &entries[b]);
    if x.tick != y.tick {
        return x.tick < y.tick;
    }
    if x.deadline == y.deadline {
        return a < b;
    }
    x.deadline <= y.deadline
}

/// Whether `x` may come out while `y` waits, both expired: in deadline order, equal deadlines in
/// the order the advances expired them, and within one advance in insertion order. Two far words
/// (`Entry::slot`) are ordered to a 256th of the tick: within one 256th, values of other deadlines
/// may come out in either order.
pub(super) fn may_precede(entries: &[Entry], x: usize, y: usize) -> bool {
    let (a, b) = (&entries[x], &entries[y]);
    let fifo = || a.batch < b.batch || (a.batch == b.batch && in_order(entries, x, y));
    match (a.slot, b.slot) {
        (Some(sa), Some(sb)) => match sa.cmp(&sb) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => a.deadline != b.deadline || fifo(),
        },
        _ => a.deadline < b.deadline || (a.deadline == b.deadline && fifo()),
    }
}
