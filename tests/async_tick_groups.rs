//! The timeouts' tick groups (`src/sleep/group/`): the lazily armed timeouts of one thread, on one
//! timer, due in the same tick, share one timer entry. Each completes at its tick's boundary, never
//! before its own deadline; `len()` counts each armed timeout once; drops on other threads, a
//! drop after the fire, a shutdown, and two timers on one thread.
#![cfg(feature = "async")]

mod common;

use std::future::{pending, Pending};
use std::pin::Pin;
use std::time::Duration;

use common::waker::{poll, CountingWaker};
use common::{manual_timer, ms};
use delaywheel::{ManualClock, Timeout, Timer};

fn advance(clock: &ManualClock, timer: &Timer, by: Duration) {
    clock.advance(by);
    timer.advance_clock(Duration::ZERO);
}

type Limit = Pin<Box<Timeout<Pending<()>>>>;

/// A timeout of `d` around a future that never completes, armed by a first poll, with its waker.
fn armed(timer: &Timer, d: Duration) -> (Limit, std::sync::Arc<CountingWaker>, std::task::Waker) {
    let mut t = Box::pin(timer.timeout(d, pending::<()>()));
    let (count, waker) = CountingWaker::new();
    assert!(poll(t.as_mut(), &waker).is_pending());
    (t, count, waker)
}

#[test]
fn members_of_one_tick_complete_at_its_boundary_never_before_their_deadlines() {
    let (clock, timer) = manual_timer(ms(10), 64);
    let start = timer.now();
    let (mut a, wa, waker_a) = armed(&timer, ms(3)); // due 3 ms: tick boundary 10 ms
    advance(&clock, &timer, ms(2));
    let (mut b, wb, waker_b) = armed(&timer, ms(5)); // due 7 ms: the same tick
    assert_eq!(a.deadline(), start + ms(3), "the deadline stays exact");
    assert_eq!(b.deadline(), start + ms(7));
    assert_eq!(timer.len(), 2);
    advance(&clock, &timer, ms(7)); // 9 ms: both deadlines may have passed, not the boundary
    assert!(poll(a.as_mut(), &waker_a).is_pending());
    assert!(poll(b.as_mut(), &waker_b).is_pending());
    assert_eq!((wa.count(), wb.count()), (0, 0));
    advance(&clock, &timer, ms(1)); // 10 ms
    assert_eq!((wa.count(), wb.count()), (1, 1), "each member woken once");
    assert_eq!(timer.len(), 0);
    assert!(poll(a.as_mut(), &waker_a).is_ready());
    assert!(poll(b.as_mut(), &waker_b).is_ready());
    assert_eq!(timer.stats().fired, 2, "the members fired, not the group's entry");
}

/// An advance run mid-tick for a deadline passed there fires the tick's entries whose exact
/// deadlines have passed: the group's entry, filed at the tick's boundary, is not one of them
/// while a member's deadline is still ahead.
#[test]
fn an_advance_mid_tick_fires_no_group_before_a_members_deadline() {
    let (clock, timer) = manual_timer(ms(10), 64);
    let (mut a, wa, waker_a) = armed(&timer, ms(3));
    let (mut b, wb, waker_b) = armed(&timer, ms(7));
    clock.advance(ms(5));
    timer.schedule(Duration::ZERO, || {}); // passed at 5 ms: the next advance runs mid-tick
    timer.advance_clock(Duration::ZERO);
    assert_eq!(wb.count(), 0, "a member woken before its deadline");
    assert!(poll(b.as_mut(), &waker_b).is_pending());
    advance(&clock, &timer, ms(4)); // 9 ms
    assert!(poll(b.as_mut(), &waker_b).is_pending());
    advance(&clock, &timer, ms(1)); // 10 ms
    assert_eq!((wa.count(), wb.count()), (1, 1));
    assert!(poll(a.as_mut(), &waker_a).is_ready());
    assert!(poll(b.as_mut(), &waker_b).is_ready());
}

#[test]
fn a_member_never_completes_before_its_own_deadline_in_a_later_tick() {
    let (clock, timer) = manual_timer(ms(1), 64);
    let (mut a, wa, waker) = armed(&timer, ms(5));
    advance(&clock, &timer, ms(4));
    assert!(poll(a.as_mut(), &waker).is_pending());
    advance(&clock, &timer, ms(1));
    assert_eq!(wa.count(), 1);
    assert!(poll(a.as_mut(), &waker).is_ready());
}

#[test]
fn len_counts_each_armed_timeout_once_and_falls_at_each_drop() {
    let (clock, timer) = manual_timer(ms(10), 64);
    let mut armed_ones: Vec<_> = (0..3).map(|_| armed(&timer, ms(5))).collect();
    assert_eq!(timer.len(), 3);
    armed_ones.pop();
    assert_eq!(timer.len(), 2);
    armed_ones.clear();
    assert_eq!(timer.len(), 0, "an empty group pending counts nothing");
    assert!(timer.is_empty());
    let (mut again, count, waker) = armed(&timer, ms(5));
    assert_eq!(timer.len(), 1);
    advance(&clock, &timer, ms(10));
    assert_eq!(timer.len(), 0);
    assert_eq!(count.count(), 1);
    assert!(poll(again.as_mut(), &waker).is_ready());
    let stats = timer.stats();
    assert_eq!((stats.scheduled, stats.cancelled, stats.fired, stats.pending), (4, 3, 1, 0));
}

#[test]
fn a_bounded_timer_counts_members_against_max_pending() {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(ms(10)).clock(clock.clone()).manual().max_pending(2).build();
    let (_a, ..) = armed(&timer, ms(5));
    let (_b, ..) = armed(&timer, ms(5));
    let (mut c, count, waker) = armed(&timer, ms(5)); // refused: never elapses
    assert_eq!(timer.len(), 2);
    advance(&clock, &timer, ms(10));
    assert_eq!(count.count(), 0);
    assert!(poll(c.as_mut(), &waker).is_pending());
}

#[test]
fn a_member_dropped_on_another_thread_leaves_its_group() {
    let (clock, timer) = manual_timer(ms(10), 64);
    let (a, wa, _) = armed(&timer, ms(5));
    let (mut b, wb, waker_b) = armed(&timer, ms(5));
    assert_eq!(timer.len(), 2);
    std::thread::spawn(move || drop(a)).join().unwrap();
    assert_eq!(timer.len(), 1);
    advance(&clock, &timer, ms(10));
    assert_eq!((wa.count(), wb.count()), (0, 1), "the dropped member is not woken");
    assert!(poll(b.as_mut(), &waker_b).is_ready());
    // The last member of a group the thread no longer caches, dropped elsewhere: its entry goes.
    let (c, ..) = armed(&timer, ms(5));
    let (_d, ..) = armed(&timer, ms(25)); // another tick: the cache moves on
    std::thread::spawn(move || drop(c)).join().unwrap();
    assert_eq!(timer.len(), 1);
    assert_eq!(timer.shutdown().len(), 1, "only d's own sleep is left: no group is handed back");
}

/// The first timeout of a tick on a thread arms a sleep of its own; the second makes the tick's
/// group, which the rest join. A thread whose timeouts fall in a new tick each time (sporadic
/// timeouts, or two limits interleaved) so arms sleeps only, as a `Sleep` per timeout would.
#[test]
fn the_first_timeout_of_a_tick_arms_a_sleep_of_its_own() {
    let (_clock, timer) = manual_timer(ms(10), 64);
    let interleaved: Vec<_> = [5, 500, 5, 500].iter().map(|&d| armed(&timer, ms(d))).collect();
    assert_eq!(timer.len(), 4);
    assert_eq!(timer.stats().pending_per_level.iter().sum::<usize>(), 4, "a sleep each");
    let grouped: Vec<_> = (0..4).map(|_| armed(&timer, ms(7))).collect();
    assert_eq!(timer.len(), 8);
    let filed = timer.stats().pending_per_level.iter().sum::<usize>();
    assert_eq!(filed, 6, "one sleep and one group's entry for the four of one tick");
    assert_eq!(timer.shutdown().len(), 5, "the five sleeps' tasks, and no group's");
    assert_eq!(timer.len(), 0);
    drop((interleaved, grouped));
}

/// A shutdown abandons a group's members as it drains (counted out, woken), and hands back only
/// tasks someone scheduled: no group's entry, not even an empty one the thread still caches.
#[test]
fn a_shutdown_hands_back_no_group_and_counts_its_members_out_at_once() {
    let (_clock, timer) = manual_timer(ms(10), 64);
    let all: Vec<_> = (0..3).map(|_| armed(&timer, ms(5))).collect();
    assert_eq!(timer.len(), 3);
    let unfired = timer.shutdown();
    assert_eq!(unfired.len(), 1, "the first timeout's own sleep");
    assert_eq!(timer.len(), 0, "the members counted out before the list is dropped");
    assert_eq!(all.iter().map(|(_, count, _)| count.count()).collect::<Vec<_>>(), [0, 1, 1]);
    drop(unfired);
    assert_eq!(all[0].1.count(), 1, "the sleep's waker woken as its task is dropped");

    let (_clock, timer) = manual_timer(ms(10), 64);
    drop((0..3).map(|_| armed(&timer, ms(5))).collect::<Vec<_>>());
    assert!(timer.is_empty());
    assert!(timer.shutdown().is_empty(), "the emptied group the thread caches is no task");
}

#[test]
fn ten_thousand_members_of_one_group_each_complete_once() {
    let (clock, timer) = manual_timer(ms(10), 64);
    let mut all: Vec<_> = (0..10_000).map(|_| armed(&timer, ms(5))).collect();
    assert_eq!(timer.len(), 10_000);
    advance(&clock, &timer, ms(10));
    assert_eq!(timer.len(), 0);
    for (t, count, waker) in &mut all {
        assert_eq!(count.count(), 1);
        assert!(poll(t.as_mut(), waker).is_ready());
    }
    assert_eq!(timer.stats().fired, 10_000);
}

#[test]
fn a_timeout_dropped_after_its_group_fired() {
    let (clock, timer) = manual_timer(ms(10), 64);
    let (a, wa, _) = armed(&timer, ms(5));
    let (b, wb, _) = armed(&timer, ms(5));
    advance(&clock, &timer, ms(10));
    assert_eq!((wa.count(), wb.count()), (1, 1));
    drop(a);
    assert_eq!(timer.len(), 0, "counted out once, by the fire");
    let (mut c, wc, waker_c) = armed(&timer, ms(5)); // a new tick, a new group
    assert_eq!(timer.len(), 1);
    drop(b);
    assert_eq!(timer.len(), 1);
    advance(&clock, &timer, ms(10));
    assert_eq!(wc.count(), 1);
    assert!(poll(c.as_mut(), &waker_c).is_ready());
    assert_eq!(timer.stats().cancelled, 0);
}

#[test]
fn shutdown_leaves_members_pending_forever_woken_once() {
    let (clock, timer) = manual_timer(ms(10), 64);
    let (mut a, wa, waker_a) = armed(&timer, ms(5));
    let (mut b, wb, waker_b) = armed(&timer, ms(5));
    drop(timer.shutdown());
    assert_eq!((wa.count(), wb.count()), (1, 1));
    assert_eq!(timer.len(), 0);
    advance(&clock, &timer, ms(100));
    assert!(poll(a.as_mut(), &waker_a).is_pending());
    assert!(poll(b.as_mut(), &waker_b).is_pending());
    assert_eq!((wa.count(), wb.count()), (1, 1));
    // Armed after the shutdown: dead at once, never woken.
    let (mut c, wc, waker_c) = armed(&timer, ms(5));
    assert!(poll(c.as_mut(), &waker_c).is_pending());
    assert_eq!(wc.count(), 0);
}

#[test]
fn a_dropped_timer_leaves_members_pending_forever_woken_once() {
    let (clock, timer) = manual_timer(ms(10), 64);
    let (mut a, wa, waker_a) = armed(&timer, ms(5));
    drop(timer);
    assert_eq!(wa.count(), 1);
    clock.advance(ms(100));
    assert!(poll(a.as_mut(), &waker_a).is_pending());
    drop(a);
}

#[test]
fn timeouts_on_two_timers_from_one_thread_never_share_a_group() {
    let (clock, one) = manual_timer(ms(10), 64);
    let two = Timer::builder().tick(ms(10)).clock(clock.clone()).manual().build();
    let (mut a, wa, waker_a) = armed(&one, ms(5));
    let (mut b, wb, waker_b) = armed(&two, ms(5));
    let (mut c, wc, waker_c) = armed(&one, ms(5));
    assert_eq!((one.len(), two.len()), (2, 1));
    clock.advance(ms(10));
    one.advance_clock(Duration::ZERO);
    assert_eq!((wa.count(), wb.count(), wc.count()), (1, 0, 1));
    assert!(poll(a.as_mut(), &waker_a).is_ready());
    assert!(poll(c.as_mut(), &waker_c).is_ready());
    assert!(poll(b.as_mut(), &waker_b).is_pending());
    two.advance_clock(Duration::ZERO);
    assert_eq!(wb.count(), 1);
    assert!(poll(b.as_mut(), &waker_b).is_ready());
    assert_eq!((one.len(), two.len()), (0, 0));
}

#[test]
fn a_new_poll_waker_replaces_the_stored_one() {
    let (clock, timer) = manual_timer(ms(10), 64);
    let (mut a, first, _) = armed(&timer, ms(5));
    let (second, waker) = CountingWaker::new();
    assert!(poll(a.as_mut(), &waker).is_pending());
    advance(&clock, &timer, ms(10));
    assert_eq!((first.count(), second.count()), (0, 1));
}

/// Wakes by calling back into its timer (user code in a waker: here, a second shutdown).
struct Reentering(std::sync::Arc<Timer>);

impl std::task::Wake for Reentering {
    fn wake(self: std::sync::Arc<Self>) {
        drop(self.0.shutdown());
    }
}

/// Panics when woken.
struct Panicking;

impl std::task::Wake for Panicking {
    fn wake(self: std::sync::Arc<Self>) {
        panic!("a waker that panics");
    }
}

/// A timeout of `d` armed by a first poll with `waker`.
fn armed_with(timer: &Timer, d: Duration, waker: &std::task::Waker) -> Limit {
    let mut t = Box::pin(timer.timeout(d, pending::<()>()));
    assert!(poll(t.as_mut(), waker).is_pending());
    t
}

/// A shutdown wakes a group's members once it has let go of the timer's locks: a waker that
/// calls back into the timer (another shutdown, which takes the advance lock) does not deadlock.
#[test]
fn a_member_woken_by_a_shutdown_may_call_back_into_the_timer() {
    common::watched("reentering waker", || {
        let (_clock, timer) = manual_timer(ms(10), 64);
        let timer = std::sync::Arc::new(timer);
        let waker = std::task::Waker::from(std::sync::Arc::new(Reentering(std::sync::Arc::clone(&timer))));
        let all: Vec<_> = (0..3).map(|_| armed_with(&timer, ms(5), &waker)).collect();
        let unfired = timer.shutdown();
        assert_eq!((unfired.len(), timer.len()), (1, 0));
        drop((unfired, all));
    });
}

/// One member's waker panicking costs the others nothing: woken all the same, by a shutdown and
/// by a fire on an executor thread (where the wakes run as the group's task ends), the panic
/// counted.
#[test]
fn a_panicking_member_waker_leaves_the_other_members_woken() {
    let boom = std::task::Waker::from(std::sync::Arc::new(Panicking));
    let (_clock, timer) = manual_timer(ms(10), 64);
    let (count, waker) = CountingWaker::new();
    let all = [
        armed_with(&timer, ms(5), &waker),
        armed_with(&timer, ms(5), &boom),
        armed_with(&timer, ms(5), &waker),
    ];
    let unfired = timer.shutdown();
    assert_eq!((count.count(), timer.stats().panicked), (1, 1), "the third member woken");
    drop((unfired, all));
    assert_eq!(count.count(), 2, "the first timeout's sleep woken as its task is dropped");

    let clock = ManualClock::new();
    let execution = delaywheel::TaskExecution::Threads(1);
    let timer = Timer::builder().tick(ms(10)).clock(clock.clone()).manual().execution(execution).build();
    let (count, waker) = CountingWaker::new();
    let mut all = [
        armed_with(&timer, ms(5), &waker),
        armed_with(&timer, ms(5), &boom),
        armed_with(&timer, ms(5), &waker),
    ];
    advance(&clock, &timer, ms(10));
    let waited = std::time::Instant::now();
    while count.count() < 2 && waited.elapsed() < common::DEADLOCK {
        std::thread::yield_now();
    }
    assert_eq!(count.count(), 2, "the sleep and the third member woken");
    assert!(poll(all[2].as_mut(), &waker).is_ready());
    while timer.stats().panicked < 1 && waited.elapsed() < common::DEADLOCK {
        std::thread::yield_now();
    }
    assert_eq!(timer.stats().panicked, 1);
}

/// `stats().lateness` counts every timeout its firing woke, the members of a group as a task of
/// their own would count: from the tick's boundary (where each is filed) to the advance.
#[test]
fn a_groups_firing_records_each_members_lateness() {
    let (clock, timer) = manual_timer(ms(10), 64);
    // The first of the tick arms a sleep of its own, the next three make and join the group.
    let limits: Vec<_> = (1..=4).map(|k| armed(&timer, ms(k))).collect();
    assert_eq!(timer.len(), 4);
    advance(&clock, &timer, ms(13)); // the tick's boundary is 10 ms: 3 ms late
    let stats = timer.stats();
    assert_eq!(stats.fired, 4);
    assert_eq!(stats.lateness.count, 4, "a member's firing recorded no lateness");
    assert_eq!(stats.lateness.max, ms(3));
    assert_eq!(stats.lateness.p50, ms(3));
    for (_, woken, _) in &limits {
        assert_eq!(woken.count(), 1);
    }
}

/// Deadlines passed within the tick under way are filed at the tick before their own; their
/// lateness still counts from their own tick's boundary, as a task's does (`stats.rs`), also in a
/// group: fired by the next advance in that tick, they are not late. So they make groups apart
/// from the deadlines filed at their own tick, which count from the earlier boundary.
#[test]
fn members_passed_mid_tick_count_their_lateness_as_a_task_does() {
    let (clock, timer) = manual_timer(ms(10), 64);
    let base = timer.now();
    let waker = common::waker::ignored_waker();
    let arm = |at: u64| {
        let mut t = Box::pin(timer.timeout_at(base + ms(at), pending::<()>()));
        assert!(poll(t.as_mut(), &waker).is_pending());
        t
    };
    let mut all: Vec<_> = [8, 9].map(arm).into(); // filed at the tick ending at 10 ms: a group
    clock.advance(ms(15)); // not advanced: 5 ms late at the next advance
    let task = timer.schedule_at(base + ms(12), || {}); // passed mid-tick: not late at 15 ms
    all.extend([12, 13, 14].map(arm)); // filed at the same tick, a sleep and a group of their own
    timer.advance_clock(Duration::ZERO);
    assert!(task.is_fired() && all.iter_mut().all(|t| poll(t.as_mut(), &waker).is_ready()));
    let late = timer.stats().lateness;
    assert_eq!(late.count, 6);
    assert_eq!((late.p50, late.max), (Duration::ZERO, ms(5)), "the deadlines passed mid-tick counted late");
}
