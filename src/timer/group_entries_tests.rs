//! The tick groups' side of the timer on the core (`group_entries.rs`): the group's entry counts
//! nothing, its members count themselves in `len()` and the totals, and a bounded timer's gauge
//! admits members and solo sleeps alike while the group's entry passes uncounted.

use std::time::Duration;

use crate::deadline::Deadline;
use crate::entry::StampBy;
use crate::timer::{Timer, When};
use crate::{ManualClock, ScheduleError};

fn manual(max_pending: usize) -> Timer {
    Timer::builder().clock(ManualClock::new()).manual().max_pending(max_pending).build()
}

/// The word `delay` from the manual clock's reading, stamped by the timer.
fn due(timer: &Timer, delay: u64) -> (Deadline, StampBy) {
    let (_, deadline) = timer.shared().time().deadline(When::After(Duration::from_millis(delay))).unwrap();
    (deadline, StampBy::Timer)
}

#[test]
fn a_group_entry_counts_nothing_and_its_members_count_themselves() {
    let timer = manual(usize::MAX);
    let shared = timer.shared();
    let group = shared.schedule_group(0, due(&timer, 5), || {}).unwrap();
    assert_eq!((shared.len(), shared.core.len()), (0, 0), "the group's entry is uncounted");
    assert_eq!(shared.core.totals().scheduled, 0);
    for _ in 0..3 {
        shared.count_member_in().unwrap();
    }
    assert_eq!(shared.len(), 3);
    shared.members_out(1, true, false);
    assert_eq!(shared.len(), 2);
    shared.members_fired(2, 5);
    assert_eq!(shared.len(), 0);
    assert_eq!(shared.lateness.summary().count, 2, "each member's lateness recorded");
    let totals = shared.members.totals();
    assert_eq!((totals.scheduled, totals.cancelled, totals.fired, totals.abandoned), (3, 1, 2, 0));
    assert!(group.cancel(timer.live()));
    assert!(!group.cancel(timer.live()));
    let core = shared.core.totals();
    assert_eq!((core.scheduled, core.cancelled, shared.len()), (0, 0, 0), "its cancel counts nothing");
}

#[test]
fn a_group_entry_moved_by_a_reset_is_not_counted_rearmed() {
    let timer = manual(usize::MAX);
    let (shared, live) = (timer.shared(), timer.live());
    let group = shared.schedule_group(0, due(&timer, 5), || {}).unwrap();
    let solo = shared.schedule_solo(0, due(&timer, 5), || {}).unwrap();
    let later = timer.now() + Duration::from_millis(9);
    assert!(group.reset_at(live, later) && solo.reset_at(live, later));
    assert_eq!(timer.stats().rearmed, 1, "the solo sleep's reset only");
    assert!(group.cancel(live) && solo.cancel(live));
}

#[test]
fn a_solo_sleep_counts_as_any_task() {
    let timer = manual(usize::MAX);
    let shared = timer.shared();
    let solo = shared.schedule_solo(0, due(&timer, 5), || {}).unwrap();
    assert_eq!((shared.len(), shared.core.totals().scheduled), (1, 1));
    assert!(solo.cancel(timer.live()));
    assert_eq!((shared.len(), shared.core.totals().cancelled), (0, 1));
}

#[test]
fn a_bounded_timer_admits_members_and_sleeps_up_to_its_bound() {
    let timer = manual(2);
    let (shared, live) = (timer.shared(), timer.live());
    let full = Err(ScheduleError::TooManyPending { max: 2 });
    shared.count_member_in().unwrap();
    let solo = shared.schedule_solo(0, due(&timer, 5), || {}).unwrap();
    assert_eq!(shared.len(), 2);
    assert_eq!(shared.count_member_in(), full);
    assert_eq!(shared.schedule_solo(0, due(&timer, 5), || {}).map(|_| ()), full);
    let group = shared.schedule_group(0, due(&timer, 5), || {}).expect("a group's entry is not bounded");
    assert_eq!(shared.len(), 2);
    shared.uncount_member_in();
    assert_eq!(shared.len(), 1);
    shared.count_member_in().unwrap();
    assert!(group.cancel(live));
    assert_eq!(shared.len(), 2, "the group's cancel lowers nothing");
    assert!(solo.cancel(live));
    assert_eq!(shared.len(), 1);
    shared.members_out(1, false, false);
    assert_eq!(shared.len(), 0);
    assert_eq!(shared.members.totals().abandoned, 1);
    shared.count_member_in().unwrap();
    assert_eq!(shared.len(), 1);
    shared.members_out(1, true, false);
}
