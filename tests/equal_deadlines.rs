//! Tasks due at the same instant fire in the order they were scheduled (FIFO), whatever path
//! through the wheel each took: filed long ago in a coarser level and cascaded (also early, in
//! chunks, from a big stage), filed later straight into level 0, or scheduled from two threads
//! (two shards, each with its own wheel, on a host of two cores or more). Each test asserts the
//! exact firing order on a manual clock.

mod common;

use std::time::Duration;

use common::{ms, FireLog};
use delaywheel::{ManualClock, Timer};

/// A manual timer of `wheel_size` slots with a 1 ms tick, and a log of what fired.
fn timer(wheel_size: usize) -> (ManualClock, Timer, FireLog) {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(ms(1)).wheel_size(wheel_size).clock(clock.clone()).manual().build();
    (clock, timer, FireLog::default())
}

/// Moves the clock to `at` and advances the timer there (cascading what is due on the way).
fn advance_to(clock: &ManualClock, timer: &Timer, at: Duration) {
    assert!(clock.advance_to(at));
    timer.advance_clock(Duration::ZERO);
}

/// Schedules tasks `ids` for the instant `deadline` on a new thread, joined before this returns:
/// successive calls schedule in order, each from a new thread (threads take the shards in turn).
fn schedule_on_a_thread(
    timer: &Timer,
    clock: &ManualClock,
    log: &FireLog,
    ids: std::ops::Range<usize>,
    deadline: Duration,
) {
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for id in ids {
                timer.schedule(deadline - clock.now(), log.task(id, clock));
            }
        });
    });
}

#[test]
fn equal_deadlines_filed_in_coarser_levels_and_in_level_0_fire_in_scheduling_order() {
    // Wheel 8: level 0 spans 8 ticks, level 1 64, level 2 512, level 3 4096. Each deadline is
    // scheduled from four times: far ahead (level 3), then into level 2, level 1 and level 0. 600
    // starts a level-1 round and 640 a level-2 one (tasks filed there for that very tick are due at
    // the round's start); 603 starts none.
    for (deadline, times) in [(600, [0, 540, 560, 595]), (640, [0, 200, 590, 635]), (603, [0, 300, 560, 598])]
    {
        let (clock, timer, log) = timer(8);
        let deadline = ms(deadline);
        let mut next = 0;
        for at in times {
            advance_to(&clock, &timer, ms(at));
            for _ in 0..5 {
                timer.schedule(deadline - clock.now(), log.task(next, &clock));
                next += 1;
            }
        }
        advance_to(&clock, &timer, deadline - ms(1));
        assert_eq!(log.count(), 0, "never early");
        advance_to(&clock, &timer, deadline);
        assert_eq!(log.ids(), (0..next).collect::<Vec<_>>(), "deadline {deadline:?}");
        assert!(log.runs().iter().all(|&(_, at)| at == deadline));
    }
}

#[test]
fn equal_deadlines_fire_in_scheduling_order_across_a_big_stage_cascaded_early_in_chunks() {
    // Wheel 64: at time 0 the deadline (tick 5000) is in level 2, whose bucket holds 1,100 tasks
    // per thread (two threads, so two shards on two cores, each past the split at 1,024): its
    // stage opens at tick 1024 and goes into level 1 in chunks of 256 a tick. Tasks scheduled at 2000 go straight
    // into that level-1 bucket, whose big stage opens at 4944 and goes into level 0 in chunks too,
    // after the tasks scheduled at 4940 straight into level 0; the last ones come at 4999.
    let (clock, timer, log) = timer(64);
    let deadline = ms(5_000);
    let mut next = 0;
    let mut batch = |clock: &ManualClock, timer: &Timer, n: usize| {
        schedule_on_a_thread(timer, clock, &log, next..next + n, deadline);
        next += n;
    };
    batch(&clock, &timer, 1_100);
    batch(&clock, &timer, 1_100);
    for at in [1_024, 1_025, 2_000] {
        advance_to(&clock, &timer, ms(at));
    }
    batch(&clock, &timer, 300);
    batch(&clock, &timer, 300);
    advance_to(&clock, &timer, ms(4_940));
    batch(&clock, &timer, 50);
    batch(&clock, &timer, 50);
    for at in [4_944, 4_945, 4_990] {
        advance_to(&clock, &timer, ms(at));
    }
    batch(&clock, &timer, 20);
    advance_to(&clock, &timer, ms(4_999));
    batch(&clock, &timer, 20);
    assert_eq!(log.count(), 0, "never early");
    advance_to(&clock, &timer, deadline);
    let ids = log.ids();
    assert_eq!(ids.len(), 2_940);
    if let Some(at) = ids.windows(2).position(|w| w[0] > w[1]) {
        panic!("out of scheduling order at {at}: {:?}", &ids[at.saturating_sub(3)..(at + 3).min(ids.len())]);
    }
    assert_eq!(ids, (0..2_940).collect::<Vec<_>>());
}

#[test]
fn equal_deadlines_scheduled_from_two_threads_in_turn_fire_in_scheduling_order() {
    // Threads take the shards in turn: the turns alternate between two shards' buckets of the
    // tick, in level 0 and (scheduled 100 ms ahead on a wheel of 8) in level 2.
    for ahead in [ms(5), ms(100)] {
        let (clock, timer, log) = timer(8);
        let deadline = clock.now() + ahead;
        for turn in 0..8 {
            schedule_on_a_thread(&timer, &clock, &log, turn * 10..turn * 10 + 10, deadline);
        }
        advance_to(&clock, &timer, deadline);
        assert_eq!(log.ids(), (0..80).collect::<Vec<_>>(), "{ahead:?} ahead");
    }
}

/// A deadline already passed when it is scheduled (here a zero delay at 7.5 ms, and 7.4 ms) runs
/// at the next advance, mid-tick, and the tasks scheduled earlier for 7.3 ms and for that very
/// instant run with it, in deadline and scheduling order; 7.6 ms, later than both, waits for the
/// end of the tick (docs/design.md, "Time semantics").
#[test]
fn a_passed_deadline_runs_mid_tick_with_the_tasks_of_that_tick_due_by_then() {
    let (clock, timer, log) = timer(8);
    let us = Duration::from_micros;
    timer.schedule(us(7_500), log.task(0, &clock));
    timer.schedule(us(7_300), log.task(1, &clock));
    timer.schedule(us(7_500), log.task(2, &clock));
    timer.schedule(us(7_600), log.task(5, &clock));
    advance_to(&clock, &timer, us(7_500));
    assert_eq!(log.count(), 0, "7.3 ms is due at 8 ms");
    timer.schedule(Duration::ZERO, log.task(3, &clock));
    timer.schedule_at(timer.now() - us(100), log.task(4, &clock)); // earlier, scheduled later
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.ids(), [1, 4, 0, 2, 3], "at once, in deadline order, ties in scheduling order");
    assert!(log.runs().iter().all(|&(_, at)| at == us(7_500)));
    advance_to(&clock, &timer, ms(8));
    assert_eq!(log.ids(), [1, 4, 0, 2, 3, 5], "the rest at the tick's end");
}

/// On the system clock a thread takes the stamps of its delays from a block of its own, but an
/// instant is stamped alone: two long-lived threads that each hold a block (the second one's
/// newer) schedule the same instant in turn, each turn ordered after the previous one by channels,
/// the newer block's thread first; they fire in that order.
#[test]
fn one_instant_scheduled_by_two_threads_in_turn_fires_in_order_on_the_system_clock() {
    use std::sync::mpsc;
    use std::sync::{Arc, Mutex};

    let timer = Timer::builder().tick(ms(1)).build();
    let log = Arc::new(Mutex::new(Vec::new()));
    let deadline = timer.now() + ms(200);
    let (done, finished) = mpsc::channel::<()>();
    std::thread::scope(|scope| {
        let turns: Vec<mpsc::Sender<Option<usize>>> = (0..2)
            .map(|_| {
                let (turn, orders) = mpsc::channel::<Option<usize>>();
                let (timer, log, done) = (&timer, &log, done.clone());
                scope.spawn(move || {
                    for order in orders {
                        match order {
                            // Delays, cancelled: this thread's block grows and stays partly unused.
                            None => (0..40).for_each(|_| {
                                timer.schedule(Duration::from_secs(60), || {}).cancel();
                            }),
                            Some(id) => {
                                let log = Arc::clone(log);
                                timer.schedule_at(deadline, move || log.lock().unwrap().push(id));
                            }
                        }
                        done.send(()).unwrap();
                    }
                });
                turn
            })
            .collect();
        let turn = |thread: usize, order| {
            turns[thread].send(order).unwrap();
            finished.recv().unwrap();
        };
        // Thread 0 reserves its blocks, then thread 1 its newer ones.
        turn(0, None);
        turn(1, None);
        for id in 0..6 {
            turn(1 - id % 2, Some(id));
        }
        drop(turns);
    });
    // All six fire at the deadline's tick; the wait also covers a driver that runs late.
    let give_up = deadline + Duration::from_secs(20);
    while log.lock().unwrap().len() < 6 && std::time::Instant::now() < give_up {
        std::thread::sleep(ms(1));
    }
    assert_eq!(*log.lock().unwrap(), (0..6).collect::<Vec<_>>());
}

/// A reset keeps the task's place in the schedule order: among tasks due at one instant, a task
/// moved there (from later, from earlier, or from there and back) fires in the order it was first
/// scheduled, in a coarser level or in level 0 alike.
#[test]
fn a_reset_task_keeps_its_place_among_equal_deadlines() {
    for (first_to, then_to) in [(ms(10), ms(10)), (ms(50), ms(10)), (ms(5), ms(10)), (ms(5000), ms(10))] {
        let (clock, timer, log) = timer(4);
        let deadline = timer.now() + ms(10);
        let a = timer.schedule_at(timer.now() + ms(70), log.task(0, &clock));
        timer.schedule_at(deadline, log.task(1, &clock));
        let c = timer.schedule_at(timer.now() + ms(3), log.task(2, &clock));
        timer.schedule_at(deadline, log.task(3, &clock));
        for handle in [&a, &c] {
            assert!(handle.reset_at(timer.now() + first_to));
            assert!(handle.reset_at(timer.now() + then_to));
        }
        advance_to(&clock, &timer, ms(9));
        assert_eq!(log.count(), 0, "{first_to:?}: early");
        advance_to(&clock, &timer, ms(10));
        assert_eq!(log.ids(), [0, 1, 2, 3], "{first_to:?} then {then_to:?}");
    }
}
