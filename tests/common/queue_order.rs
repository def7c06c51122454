//! The order in which the queue model (`queue_model.rs`) lets expired values come out.

use super::Entry;

/// Whether `a` may come out right before `b`, both expired by the same advance.
fn in_order(entries: &[Entry], a: usize, b: usize) -> bool {
    let (x, y) = (&entries[a], &entries[b]);
    if x.tick != y.tick {
        return x.tick < y.tick;
    }
    if x.deadline == y.deadline && (x.due == y.due || x.ordered && y.ordered) {
        return a < b;
    }
    !(x.ordered && y.ordered) || x.deadline <= y.deadline
}

/// Whether `x` may come out while `y` waits, both expired: in deadline order where the timer keeps
/// both deadlines exactly (equal deadlines in the order the advances expired them, and within one
/// advance in the timer's order); else, within one advance, in the timer's order or by the
/// deadlines they come out with.
pub(super) fn may_precede(entries: &[Entry], x: usize, y: usize) -> bool {
    let (a, b) = (&entries[x], &entries[y]);
    if a.ordered && b.ordered {
        return a.deadline < b.deadline
            || (a.deadline == b.deadline
                && (a.batch < b.batch || (a.batch == b.batch && in_order(entries, x, y))));
    }
    a.batch != b.batch || in_order(entries, x, y) || a.reads_back() < b.reads_back()
}
