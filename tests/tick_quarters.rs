//! A level-0 bucket fires its tick a quarter at a time (`wheel/place.rs`, "Level 0 by quarters"):
//! the tick still fires in deadline order, whatever path its tasks took (a coarser level, a reset
//! within the tick, a task of the tick scheduling into it, another tick's bucket visited
//! meanwhile), every advance returns, and a concurrent shutdown never runs a later quarter while
//! it hands back an earlier one. Exact firing order on a manual clock.

mod common;

use std::sync::{mpsc, Arc};
use std::time::Duration;

use common::{manual_timer, ms, FireLog};

/// The tasks of a tick filed in a coarser level join the quarters of the tick's level-0 bucket.
#[test]
fn a_ticks_tasks_from_level_1_and_level_0_fire_in_deadline_order_by_quarters() {
    let us = Duration::from_micros;
    let (clock, timer) = manual_timer(ms(1), 8);
    let log = FireLog::default();
    // Tick 16 (deadlines in (15, 16] ms) is past level 0's 8 ms at first: 1 and 3 go to level 1,
    // whose bucket's round starts at tick 16.
    let _ = timer.schedule(us(15_400), log.task(1, &clock));
    let _ = timer.schedule(us(15_900), log.task(3, &clock));
    clock.advance(ms(10));
    timer.advance_clock(Duration::ZERO);
    // Now within level 0's window: 0 and 2 go to the level-0 bucket of tick 16.
    let _ = timer.schedule(us(5_100), log.task(0, &clock));
    let _ = timer.schedule(us(5_600), log.task(2, &clock));
    clock.advance(ms(6));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.ids(), vec![0, 1, 2, 3], "the quarters of tick 16 in turn, both levels merged");
    assert!(log.runs().iter().all(|&(_, at)| at == ms(16)), "{:?}", log.runs());
}

/// A reset within its tick keeps the tick's deadline order: moved to an earlier quarter, the task
/// leaves its quarter's list; moved to a later one, it stays and waits for that quarter.
#[test]
fn resets_within_a_tick_keep_its_deadline_order() {
    let us = Duration::from_micros;
    let (clock, timer) = manual_timer(ms(1), 8);
    let log = FireLog::default();
    // Tick 5: deadlines in (4, 5] ms.
    let a = timer.schedule(us(4_600), log.task(0, &clock));
    let b = timer.schedule(us(4_400), log.task(1, &clock));
    let _ = timer.schedule(us(4_700), log.task(2, &clock));
    let _ = timer.schedule(us(4_300), log.task(3, &clock));
    assert!(a.reset(us(4_100)), "to the tick's first quarter");
    assert!(b.reset(us(4_900)), "to its last");
    clock.advance(ms(5));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.ids(), vec![0, 3, 2, 1]);
    assert!(log.runs().iter().all(|&(_, at)| at == ms(5)), "{:?}", log.runs());
}

/// Runs `advance_clock(ZERO)` on another thread; panics if it does not return within 5 s.
fn advance_bounded(timer: &Arc<delaywheel::Timer>) {
    let (tx, rx) = mpsc::channel();
    let t = Arc::clone(timer);
    std::thread::spawn(move || {
        t.advance_clock(Duration::ZERO);
        let _ = tx.send(());
    });
    rx.recv_timeout(Duration::from_secs(5)).expect("advance_clock did not return: livelock");
}

/// A task of tick 5's first quarter schedules another for an instant already passed in that same
/// first quarter, while the tick's last quarter is still in the bucket: the advance returns, and
/// the new task runs at the next one (one advance does bounded work).
#[test]
fn a_task_scheduling_into_its_own_quarter_leaves_it_to_the_next_advance() {
    let us = Duration::from_micros;
    let (clock, timer) = manual_timer(ms(1), 8);
    let timer = Arc::new(timer);
    let log = FireLog::default();
    let origin = timer.now();
    let weak = Arc::downgrade(&timer);
    let (l, c) = (log.clone(), clock.clone());
    let _ = timer.schedule_at(origin + us(4_100), move || {
        l.task(0, &c)();
        let t = weak.upgrade().unwrap();
        let _ = t.schedule_at(origin + us(4_200), l.task(2, &c)); // passed; tick 5, quarter 0
    });
    let _ = timer.schedule_at(origin + us(4_900), log.task(1, &clock)); // tick 5, quarter 3
    clock.advance(ms(5));
    advance_bounded(&timer);
    assert_eq!(log.ids(), vec![0, 1], "scheduled during the advance: left to the next");
    advance_bounded(&timer);
    assert_eq!(log.ids(), vec![0, 1, 2]);
}

/// A task of tick 16's first quarter resets an old entry to an instant of tick 15, whose level-0
/// bucket the advance then visits between two quarters of tick 16: tick 16 still fires in
/// deadline order, its last quarter (filed in level 1) after its second.
#[test]
fn another_ticks_bucket_visited_between_quarters_keeps_the_order() {
    let us = Duration::from_micros;
    let (clock, timer) = manual_timer(ms(1), 8);
    let timer = Arc::new(timer);
    let log = FireLog::default();
    let origin = timer.now();
    let x = timer.schedule_at(origin + ms(30), log.task(9, &clock)); // old stamp, level 1
    let _ = timer.schedule_at(origin + us(15_900), log.task(3, &clock)); // tick 16 q3, level 1
    clock.advance(ms(10));
    timer.advance_clock(Duration::ZERO);
    let (l, c) = (log.clone(), clock.clone());
    let _ = timer.schedule_at(origin + us(15_100), move || {
        l.task(0, &c)();
        assert!(x.reset_at(origin + us(14_500)), "x to tick 15, passed");
    });
    let _ = timer.schedule_at(origin + us(15_400), log.task(1, &clock)); // tick 16 q1, level 0
    clock.advance(ms(6));
    advance_bounded(&timer);
    let ids: Vec<usize> = log.ids().into_iter().filter(|&id| id != 9).collect();
    assert_eq!(ids, vec![0, 1, 3], "tick 16 in deadline order; all: {:?}", log.ids());
}

/// A shutdown from another thread while tick 16 fires by quarters: what it hands back is never
/// earlier than what ran (the level-1 task of the last quarter does not run while the level-0 task
/// of the second is handed back).
#[test]
fn a_concurrent_shutdown_never_runs_a_later_quarter_than_it_hands_back() {
    let us = Duration::from_micros;
    let (clock, timer) = manual_timer(ms(1), 8);
    let timer = Arc::new(timer);
    let log = FireLog::default();
    let origin = timer.now();
    let _ = timer.schedule_at(origin + us(15_900), log.task(3, &clock)); // tick 16 q3, level 1
    clock.advance(ms(10));
    timer.advance_clock(Duration::ZERO);
    let (l, c, t) = (log.clone(), clock.clone(), Arc::clone(&timer));
    let (tx, rx) = mpsc::channel();
    let _ = timer.schedule_at(origin + us(15_100), move || {
        l.task(0, &c)();
        let t = Arc::clone(&t);
        let tx = tx.clone();
        std::thread::spawn(move || tx.send(t.shutdown().len()).unwrap());
        std::thread::sleep(Duration::from_millis(300)); // the shutdown closes the queue meanwhile
    });
    let _ = timer.schedule_at(origin + us(15_400), log.task(1, &clock)); // tick 16 q1, level 0
    clock.advance(ms(6));
    advance_bounded(&timer);
    let returned = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(
        !(log.ids().contains(&3) && returned == 1),
        "15.9 ran after 15.4 was handed back: ran {:?}, returned {returned}",
        log.ids()
    );
}

/// Deadlines already passed go to the level-0 slot of their own tick, which may also hold another,
/// later tick: overdue ticks leave the bucket whole, so they still fire in deadline order.
#[test]
fn passed_deadlines_of_two_ticks_in_one_bucket_fire_in_deadline_order() {
    let us = Duration::from_micros;
    let (clock, timer) = manual_timer(ms(1), 8);
    let log = FireLog::default();
    let origin = timer.now();
    clock.advance(ms(16));
    timer.advance_clock(Duration::ZERO);
    let _ = timer.schedule_at(origin + us(15_100), log.task(1, &clock)); // tick 16, first quarter: slot 0
    let _ = timer.schedule_at(origin + us(7_900), log.task(0, &clock)); // tick 8, last quarter: slot 0
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.ids(), vec![0, 1], "7.9 ms before 15.1 ms");
}

/// Passed deadlines of ticks filed in different level-0 buckets (a wheel of 4: ticks 109 and 133
/// share a slot, 130 has another) fire in tick order: the bucket popped for tick 109 does not
/// take tick 133's task along before tick 130's bucket has fired.
#[test]
fn passed_deadlines_of_ticks_in_different_buckets_fire_in_tick_order() {
    let us = Duration::from_micros;
    let (clock, timer) = manual_timer(ms(1), 4);
    let log = FireLog::default();
    let base = timer.now();
    clock.advance(us(135_612));
    timer.advance_clock(Duration::ZERO);
    let _ = timer.schedule_at(base + us(108_516), log.task(0, &clock));
    let _ = timer.schedule_at(base + us(132_971), log.task(2, &clock));
    let _ = timer.schedule_at(base + us(129_831), log.task(1, &clock));
    clock.advance(us(410));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.ids(), vec![0, 1, 2], "{:?}", log.runs());
}
