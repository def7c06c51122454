//! The queue's room, seen from inside: `with_capacity(n)` writes the pages of its slots up front,
//! and up to `n` values inserted from one thread take slots of those pages only.

use std::time::Duration;

use super::DelayQueue;
use crate::entry::arena::PAGE;

#[test]
fn values_up_to_the_capacity_take_only_the_slots_written_up_front() {
    for values in [0, 1, PAGE - 1, PAGE, PAGE + 1, 1_000, 20_000] {
        let queue = DelayQueue::with_capacity(values);
        let timer = queue.timer();
        let written = timer.arena_pages();
        assert!(written * PAGE >= values, "capacity {values}: {written} pages written");
        assert_eq!(timer.arena_high_water(), 0, "capacity {values}: nothing handed out yet");
        for value in 0..values as u64 {
            queue.insert(value, Duration::from_secs(60));
        }
        assert_eq!(queue.len(), values);
        assert_eq!(timer.arena_pages(), written, "capacity {values}: the arena grew");
        // Past the capacity, the timer grows as it needs.
        for value in 0..2 * PAGE as u64 {
            queue.insert(value, Duration::from_secs(60));
        }
        assert!(timer.arena_pages() > written, "capacity {values}: no page added");
        assert_eq!(queue.len(), values + 2 * PAGE);
    }
}
