//! `TimerHandle::deadline` of a task due before the clock's origin (the timer's creation on the
//! system clock, a `ManualClock`'s creation) reads back the instant given, as `Sleep::deadline`
//! and the queue's `deadline` do: after `schedule_at`, after `reset_at` (from and to such a
//! deadline), and with slots reused by later tasks. The task itself is due at once.

mod common;

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::thread;
use std::time::{Duration, Instant};

use common::{manual_timer, ms};
use delaywheel::queue::DelayQueue;
use delaywheel::Timer;

#[test]
fn a_deadline_before_the_manual_clocks_origin_reads_back_as_given() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let origin = timer.now();
    let at = origin - ms(5);
    let h = timer.schedule_at(at, || {});
    assert_eq!(h.deadline(), Some(at));
    clock.advance(ms(3));
    let long_ago = origin.checked_sub(Duration::from_secs(3_600)).unwrap_or(at);
    let far = timer.schedule_at(long_ago, || {});
    assert_eq!(far.deadline(), Some(long_ago));
    // Reset: to another instant before the origin, to the origin itself, after it, and back.
    assert!(h.reset_at(at - ms(2)));
    assert_eq!(h.deadline(), Some(at - ms(2)));
    assert!(h.reset_at(origin));
    assert_eq!(h.deadline(), Some(origin));
    assert!(h.reset_at(origin + ms(7)));
    assert_eq!(h.deadline(), Some(origin + ms(7)));
    assert!(h.reset_at(at));
    assert_eq!(h.deadline(), Some(at));
    assert!(h.reset(ms(4)));
    assert_eq!(h.deadline(), Some(origin + ms(7)));
    // A task scheduled by a delay, reset to before the origin.
    let plain = timer.schedule(ms(10), || {});
    assert!(plain.reset_at(at - ms(1)));
    assert_eq!(plain.deadline(), Some(at - ms(1)));
    // All due: they fire at the next advance.
    assert!(h.reset_at(at));
    timer.advance_clock(Duration::ZERO);
    assert!(h.is_fired() && far.is_fired() && plain.is_fired());
    assert_eq!((h.deadline(), far.deadline(), plain.deadline()), (None, None, None));
}

#[test]
fn a_deadline_before_the_system_clocks_origin_reads_back_as_given() {
    let before = Instant::now();
    std::thread::sleep(ms(2));
    let timer = Timer::builder().tick(ms(1)).manual().build();
    let at = before - ms(1);
    let h = timer.schedule_at(at, || {});
    assert_eq!(h.deadline(), Some(at));
    assert!(h.cancel());
    // The queue reads it back the same.
    let queue = DelayQueue::with_timer(timer);
    let key = queue.insert_at(1, at);
    assert_eq!(queue.deadline(&key), Some(at));
}

#[test]
fn many_deadlines_before_the_origin_and_the_slots_reused_after_them_read_back_as_given() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let origin = timer.now();
    for round in 0..4u32 {
        let handles: Vec<_> = (0..1_000u32)
            .map(|i| (origin - ms(u64::from(i) + 1), i))
            .map(|(at, _)| (timer.schedule_at(at, || {}), at))
            .collect();
        for (h, at) in &handles {
            assert_eq!(h.deadline(), Some(*at), "round {round}");
        }
        // Half cancelled, half fired; their slots then go to tasks due at the origin itself.
        handles.iter().step_by(2).for_each(|(h, _)| assert!(h.cancel()));
        timer.advance_clock(Duration::ZERO);
        let at_origin: Vec<_> = (0..1_000).map(|_| timer.schedule_at(origin, || {})).collect();
        assert!(at_origin.iter().all(|h| h.deadline() == Some(origin)), "round {round}");
        clock.advance(ms(1));
        timer.advance_clock(Duration::ZERO);
        assert!(timer.is_empty());
    }
}

/// A reset to the origin racing `deadline`, after resets before the origin and later: `deadline`
/// never reads the origin's word beside the record of an earlier reset, so while the deadline is
/// the later instant (between that reset and the next) it never reads the one before the origin.
#[test]
fn a_reset_to_the_origin_never_shows_an_earlier_resets_instant_before_the_origin() {
    let (_clock, timer) = manual_timer(ms(1), 8);
    let origin = timer.now();
    let (before, later) = (origin - ms(5), origin + ms(10));
    let h = timer.schedule(ms(50), || {});
    let (phase, stop) = (AtomicU64::new(0), AtomicU64::new(0));
    let mut bad = 0;
    thread::scope(|s| {
        s.spawn(|| {
            for i in 0..300_000u64 {
                assert!(h.reset_at(before));
                phase.store(i * 4 + 1, SeqCst);
                assert!(h.reset_at(later));
                phase.store(i * 4 + 2, SeqCst);
                assert!(h.reset_at(origin));
                phase.store(i * 4 + 3, SeqCst);
            }
            stop.store(1, SeqCst);
        });
        while stop.load(SeqCst) == 0 {
            let p1 = phase.load(SeqCst);
            let d = h.deadline();
            let p2 = phase.load(SeqCst);
            bad += usize::from(p1 % 4 == 2 && p2 == p1 && d == Some(before));
        }
    });
    assert_eq!(bad, 0, "read an instant the task was not due at");
}

/// Tasks due before the clock's origin fire in deadline order, as passed deadlines after it do:
/// on a fresh `ManualClock` every instant in the past is before the origin. Ties (and the origin
/// itself, the latest of them) keep the scheduling order; a reset to such an instant counts.
#[test]
fn tasks_due_before_the_origin_fire_in_deadline_order() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let origin = timer.now();
    let fired = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let at = |n: u32, instant: Instant| {
        let fired = std::sync::Arc::clone(&fired);
        timer.schedule_at(instant, move || fired.lock().unwrap().push(n))
    };
    at(0, origin);
    at(1, origin - ms(1));
    at(2, origin - ms(5));
    at(3, origin - Duration::from_nanos(1));
    at(4, origin - ms(5));
    let moved = at(5, origin + ms(50));
    assert!(moved.reset_at(origin - ms(3)));
    at(6, origin - Duration::from_secs(3_600));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(*fired.lock().unwrap(), [6, 2, 4, 5, 1, 3, 0]);
    // Later, with the cursor past the origin: before the origin, then after it, by deadline.
    fired.lock().unwrap().clear();
    clock.advance(ms(10));
    timer.advance_clock(Duration::ZERO);
    at(7, origin + ms(2));
    at(8, origin - ms(2));
    at(9, origin);
    at(10, origin - ms(4));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(*fired.lock().unwrap(), [10, 8, 9, 7]);
}
