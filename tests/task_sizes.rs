//! Tasks of every size through the public API: closures inline in their slot (up to 16 bytes), in a
//! block of the timer's task slab (up to 256) and boxed (bigger) all fire at their tick with their
//! captures intact, cancel and shutdown hand them back or drop them once, and a panic in any of
//! them (in its call or its drop) is caught and counted with nothing lost. Manual clocks throughout.

mod common;

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{manual_timer, ms};

/// Counts its drops; panics when dropped if `panics`.
struct Guard {
    drops: Arc<AtomicUsize>,
    panics: bool,
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        if self.panics && !std::thread::panicking() {
            panic!("a captured value panics when dropped (expected by this test)");
        }
    }
}

/// A task of `W` captured words (plus the guard and the log), which logs `(id, sum of its words)`.
fn task<const W: usize>(
    id: usize,
    log: &Arc<Mutex<Vec<(usize, u64)>>>,
    guard: Guard,
) -> impl FnOnce() + Send {
    let words: [u64; W] = std::array::from_fn(|k| (id * 1000 + k) as u64);
    let log = Arc::clone(log);
    move || {
        let _guard = &guard;
        log.lock().unwrap().push((id, words.iter().sum()));
    }
}

fn expected_sum(id: usize, words: usize) -> u64 {
    (0..words).map(|k| (id * 1000 + k) as u64).sum()
}

fn guard(panics: bool) -> (Guard, Arc<AtomicUsize>) {
    let drops = Arc::new(AtomicUsize::new(0));
    (Guard { drops: Arc::clone(&drops), panics }, drops)
}

#[test]
fn tasks_of_every_size_fire_at_their_tick_with_their_captures_intact() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let log = Arc::new(Mutex::new(Vec::new()));
    // 1, 4, 8, 16, 28 and 64 words: inline, then each class, then boxed.
    timer.schedule(ms(1), task::<1>(0, &log, guard(false).0));
    timer.schedule(ms(2), task::<4>(1, &log, guard(false).0));
    timer.schedule(ms(3), task::<8>(2, &log, guard(false).0));
    timer.schedule(ms(4), task::<16>(3, &log, guard(false).0));
    timer.schedule(ms(5), task::<28>(4, &log, guard(false).0));
    timer.schedule(ms(6), task::<64>(5, &log, guard(false).0));
    let words = [1, 4, 8, 16, 28, 64];
    for (id, &w) in words.iter().enumerate() {
        clock.advance(ms(1));
        timer.advance_clock(Duration::ZERO);
        assert_eq!(
            log.lock().unwrap().last(),
            Some(&(id, expected_sum(id, w))),
            "task {id} at tick {}",
            id + 1
        );
    }
    assert_eq!(log.lock().unwrap().len(), words.len());
    assert!(timer.is_empty());
}

#[test]
fn cancelled_tasks_of_every_size_drop_their_captures_once() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let log = Arc::new(Mutex::new(Vec::new()));
    let (g1, d1) = guard(false);
    let (g2, d2) = guard(false);
    let (g3, d3) = guard(false);
    let handles = [
        timer.schedule(ms(5), task::<1>(0, &log, g1)),
        timer.schedule(ms(5), task::<12>(1, &log, g2)),
        timer.schedule(ms(5), task::<40>(2, &log, g3)),
    ];
    for h in &handles {
        assert!(h.cancel());
        assert!(!h.cancel(), "exactly once");
    }
    assert_eq!([d1.load(Ordering::SeqCst), d2.load(Ordering::SeqCst), d3.load(Ordering::SeqCst)], [1, 1, 1]);
    clock.advance(ms(10));
    timer.advance_clock(Duration::ZERO);
    assert!(log.lock().unwrap().is_empty(), "nothing cancelled runs");
    assert!(timer.is_empty());
}

#[test]
fn a_panic_in_a_block_task_is_caught_and_counted_and_its_slot_reused() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let log = Arc::new(Mutex::new(Vec::new()));
    for round in 0..3u64 {
        let words = [7u64; 20];
        timer.schedule(ms(1), move || panic!("a 160-byte task panics (expected by this test): {}", words[0]));
        timer.schedule(ms(1), task::<20>(round as usize, &log, guard(false).0));
        // A closure whose captures panic when dropped, cancelled: the panic reaches cancel()'s caller.
        let (g, drops) = guard(true);
        let h = timer.schedule(ms(1), task::<20>(99, &log, g));
        let cancelled = panic::catch_unwind(AssertUnwindSafe(|| h.cancel()));
        assert!(cancelled.is_err(), "the drop's panic leaves cancel()");
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        clock.advance(ms(1));
        timer.advance_clock(Duration::ZERO);
        assert_eq!(timer.stats().panicked, round + 1, "the run's panic counted (the drop's left cancel())");
        assert_eq!(log.lock().unwrap().len(), round as usize + 1, "the other task ran");
        assert!(timer.is_empty(), "nothing left pending");
    }
}

#[test]
fn shutdown_hands_back_tasks_of_every_size_runnable() {
    let (_clock, timer) = manual_timer(ms(1), 8);
    let log = Arc::new(Mutex::new(Vec::new()));
    timer.schedule(ms(3), task::<2>(0, &log, guard(false).0));
    timer.schedule(ms(4), task::<30>(1, &log, guard(false).0));
    timer.schedule(ms(5), task::<50>(2, &log, guard(false).0));
    let unfired = timer.shutdown();
    assert_eq!(unfired.len(), 3);
    for task in unfired {
        task.run();
    }
    let mut ran = log.lock().unwrap().clone();
    ran.sort_unstable();
    assert_eq!(ran, vec![(0, expected_sum(0, 2)), (1, expected_sum(1, 30)), (2, expected_sum(2, 50))]);
}

#[test]
fn dropping_the_timer_drops_pending_block_tasks_once() {
    let (_clock, timer) = manual_timer(ms(1), 8);
    let log = Arc::new(Mutex::new(Vec::new()));
    let drops: Vec<_> = (0..300)
        .map(|i| {
            let (g, d) = guard(false);
            timer.schedule(ms(10 + i), task::<10>(i as usize, &log, g));
            d
        })
        .collect();
    drop(timer);
    assert!(drops.iter().all(|d| d.load(Ordering::SeqCst) == 1));
    assert!(log.lock().unwrap().is_empty());
}
