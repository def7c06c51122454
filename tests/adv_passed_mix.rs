//! One advance on the seeds' wheel (10 ms tick) mid-tick, at 3.424 s, that meets every kind of
//! passed deadline at once: instants before the clock's origin, instants passed within the tick
//! under way (scheduled, inserted, or set by `reset_at` from a far level), a zero delay, and
//! tasks scheduled earlier for that tick. The advance runs the ones due by then, before-origin
//! instants first in instant order, then in deadline order, and leaves the rest of the tick (due
//! after 3.424 s) for its boundary; the timer's tasks and the delay queue's values alike.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::ms;
use delaywheel::queue::DelayQueue;
use delaywheel::{ManualClock, Timer};

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

fn seed_timer() -> (ManualClock, Timer) {
    common::manual_timer(ms(10), 60)
}

#[test]
fn an_advance_mid_tick_runs_every_passed_deadline_in_order_and_leaves_the_rest_of_the_tick() {
    let (clock, timer) = seed_timer();
    let o = timer.now();
    let log: Arc<Mutex<Vec<(&'static str, Duration)>>> = Arc::default();
    let task = |name: &'static str| {
        let (log, clock) = (Arc::clone(&log), clock.clone());
        move || log.lock().unwrap().push((name, clock.now()))
    };
    let _a = timer.schedule_at(o + us(3_422_500), task("a"));
    let _b = timer.schedule_at(o + us(3_426_000), task("b"));
    let h = timer.schedule_at(o + Duration::from_secs(3000), task("h"));
    clock.advance(us(3_424_000));
    timer.advance_clock(Duration::ZERO);
    assert!(log.lock().unwrap().is_empty(), "nothing due before the tick's first passed deadline is set");
    let _z = timer.schedule(Duration::ZERO, task("z"));
    let _p = timer.schedule_at(o + us(3_421_000), task("p"));
    let _q = timer.schedule_at(o - Duration::from_secs(1), task("q"));
    let _r = timer.schedule_at(o - Duration::from_secs(5), task("r"));
    assert!(h.reset_at(o + us(3_421_500)));
    let _n = timer.schedule_at(o + us(3_423_000), task("n"));
    let _m = timer.schedule_at(o + us(3_425_000), task("m"));
    timer.advance_clock(Duration::ZERO);
    let now = us(3_424_000);
    let names = |from: usize| log.lock().unwrap()[from..].iter().map(|&(n, _)| n).collect::<Vec<_>>();
    assert_eq!(names(0), ["r", "q", "p", "h", "a", "n", "z"]);
    assert!(log.lock().unwrap().iter().all(|&(_, at)| at == now));
    assert_eq!(timer.len(), 2);
    clock.advance(ms(5));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(timer.len(), 2, "the rest of the tick waits for its boundary");
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(names(7), ["m", "b"]);
    assert!(timer.is_empty());
}

#[test]
fn a_delay_queue_hands_out_the_same_mix_in_the_same_order() {
    let (clock, timer) = seed_timer();
    let q = DelayQueue::with_timer(timer);
    let o = q.timer().now();
    q.insert_at("a", o + us(3_422_500));
    q.insert_at("b", o + us(3_426_000));
    let h = q.insert_at("h", o + Duration::from_secs(3000));
    clock.advance(us(3_424_000));
    q.advance_clock(Duration::ZERO);
    assert!(q.try_recv().is_none());
    q.insert("z", Duration::ZERO);
    q.insert_at("p", o + us(3_421_000));
    q.insert_at("q", o - Duration::from_secs(1));
    q.insert_at("r", o - Duration::from_secs(5));
    assert!(q.reset_at(&h, o + us(3_421_500)));
    q.insert_at("m", o + us(3_425_000));
    q.advance_clock(Duration::ZERO);
    let mut got = Vec::new();
    while let Some(e) = q.try_recv() {
        assert!(e.deadline() <= o + us(3_424_000));
        got.push((*e.get_ref(), e.deadline().checked_duration_since(o)));
    }
    assert_eq!(
        got,
        [
            ("r", None),
            ("q", None),
            ("p", Some(us(3_421_000))),
            ("h", Some(us(3_421_500))),
            ("a", Some(us(3_422_500))),
            ("z", Some(us(3_424_000))),
        ]
    );
    assert_eq!(q.len(), 2);
    clock.advance(ms(6));
    q.advance_clock(Duration::ZERO);
    let rest: Vec<&str> = std::iter::from_fn(|| q.try_recv().map(|e| e.into_inner())).collect();
    assert_eq!(rest, ["m", "b"]);
    assert!(q.is_empty());
}
