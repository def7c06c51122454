//! The contract's blocking and clock edges pushed as a demanding user pushes them: waits with
//! unbounded timeouts that earlier work must cut short, a manual clock run to its end, handles
//! used from inside their own task, consumers blocked on a queue that empties or shuts down, and
//! the real-clock drivers of the timer, the queue and the purgatory. Every wait is bounded by a
//! watchdog, so a hang fails the test instead of stalling it.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::{manual_timer, ms, watched, Counter};
use delaywheel::purgatory::{DelayedOperation, Purgatory};
use delaywheel::queue::DelayQueue;
use delaywheel::{ManualClock, ScheduleError, Timer, TimerHandle};

#[test]
fn an_unbounded_advance_returns_once_work_scheduled_meanwhile_is_due() {
    watched("unbounded advance", || {
        let timer = Arc::new(Timer::builder().tick(ms(1)).manual().build());
        let ran = Counter::default();
        let far = timer.schedule(Duration::from_secs(3600), ran.task());
        let (t, r, (tx, rx)) = (Arc::clone(&timer), ran.clone(), mpsc::channel());
        let waiter = thread::spawn(move || {
            while r.get() == 0 {
                t.advance_clock(Duration::MAX);
            }
            tx.send(()).unwrap();
        });
        thread::sleep(ms(20)); // let the waiter sleep towards the far bucket
        let start = Instant::now();
        timer.schedule(ms(10), ran.task());
        rx.recv().unwrap();
        waiter.join().unwrap();
        assert!(start.elapsed() >= ms(10) && ran.get() == 1, "never early, and it ran");
        assert!(far.cancel());
    });
}

#[test]
fn two_timers_on_clones_of_one_manual_clock_agree_on_instants() {
    let clock = ManualClock::new();
    let a = Timer::builder().clock(clock.clone()).manual().build();
    let b = Timer::builder().clock(clock.clone()).manual().build();
    assert_eq!(a.now(), b.now());
    clock.advance(ms(7));
    assert_eq!(a.now(), b.now());
    let ran = Counter::default();
    let h = b.schedule_at(a.now() + ms(3), ran.task());
    assert_eq!(h.deadline(), Some(a.now() + ms(3)));
    assert!(!clock.advance_to(ms(1)), "a manual clock never goes back");
    assert_eq!(clock.now(), ms(7));
    clock.advance(ms(3));
    b.advance_clock(Duration::ZERO);
    assert_eq!(ran.get(), 1);
}

#[test]
fn a_manual_clock_run_to_its_end_fires_everything_and_refuses_the_unreachable() {
    let (clock, timer) = manual_timer(ms(1), 16);
    let ran = Counter::default();
    for d in [ms(1), Duration::from_secs(86_400), Duration::from_secs(86_400 * 365 * 100)] {
        timer.schedule(d, ran.task());
    }
    clock.advance(Duration::MAX);
    clock.advance(Duration::MAX);
    timer.advance_clock(Duration::ZERO);
    assert_eq!((ran.get(), timer.len()), (3, 0));
    let _now = timer.schedule(Duration::ZERO, ran.task());
    assert!(matches!(timer.try_schedule(ms(1), ran.task()), Err(ScheduleError::DelayTooLong { .. })));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(ran.get(), 4);
}

#[test]
fn a_task_cannot_cancel_or_reset_itself_while_it_fires() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let slot: Arc<Mutex<Option<TimerHandle>>> = Arc::default();
    let seen = Arc::new(Mutex::new(None));
    let (s, out) = (Arc::clone(&slot), Arc::clone(&seen));
    let h = timer.schedule(ms(2), move || {
        let h = s.lock().unwrap().clone().unwrap();
        *out.lock().unwrap() = Some((h.cancel(), h.reset(ms(5)), h.deadline()));
    });
    *slot.lock().unwrap() = Some(h.clone());
    clock.advance(ms(2));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(*seen.lock().unwrap(), Some((false, false, None)));
    clock.advance(ms(10));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(timer.len(), 0, "it ran once and was not re-armed");
}

#[test]
fn blocked_consumers_wake_when_the_queue_empties_or_shuts_down() {
    watched("blocked consumers", || {
        for shut_down in [false, true] {
            let (_clock, timer) = manual_timer(ms(1), 8);
            let q = Arc::new(DelayQueue::with_timer(timer));
            let k = q.insert(1u32, Duration::from_secs(60));
            let waiting = Arc::new(AtomicUsize::new(0));
            let consumers: Vec<_> = (0..3)
                .map(|_| {
                    let (q, waiting) = (Arc::clone(&q), Arc::clone(&waiting));
                    thread::spawn(move || {
                        waiting.fetch_add(1, Ordering::SeqCst);
                        q.recv_timeout(Duration::MAX).map(|e| e.into_inner())
                    })
                })
                .collect();
            while waiting.load(Ordering::SeqCst) < 3 {
                thread::yield_now();
            }
            thread::sleep(ms(20));
            if shut_down {
                drop(q.timer().shutdown());
            } else {
                assert_eq!(q.remove(&k), Some(1));
            }
            for c in consumers {
                assert_eq!(c.join().unwrap(), None, "shut down: {shut_down}");
            }
            assert!(q.is_empty());
        }
    });
}

#[test]
fn the_real_clock_queue_hands_values_back_never_early_in_deadline_order() {
    watched("real queue", || {
        let q = DelayQueue::new();
        let start = Instant::now();
        for (v, d) in [(3u32, 30), (1, 10), (2, 20), (4, 30)] {
            q.insert(v, ms(d));
        }
        let mut out = Vec::new();
        while let Some(e) = q.recv_timeout(Duration::from_secs(10)) {
            assert!(Instant::now() >= e.deadline() && e.deadline() >= start, "never early");
            out.push(e.into_inner());
        }
        assert_eq!(out, vec![1, 2, 3, 4]);
    });
}

#[derive(Default)]
struct Waiting {
    expired: AtomicBool,
    completions: AtomicUsize,
    at: Mutex<Option<Instant>>,
}

impl DelayedOperation for Waiting {
    fn try_complete(&self) -> bool {
        false
    }
    fn on_complete(&self) {
        self.completions.fetch_add(1, Ordering::SeqCst);
        *self.at.lock().unwrap() = Some(Instant::now());
    }
    fn on_expiration(&self) {
        assert_eq!(self.completions.load(Ordering::SeqCst), 1, "after on_complete");
        self.expired.store(true, Ordering::SeqCst);
    }
}

#[test]
fn the_purgatorys_own_reaper_expires_operations_on_time() {
    watched("reaper", || {
        let p: Purgatory<String, Waiting> = Purgatory::new();
        let start = Instant::now();
        let ops: Vec<Arc<Waiting>> = (0..10).map(|_| Arc::new(Waiting::default())).collect();
        for (i, op) in ops.iter().enumerate() {
            let keys = (0..i % 3).map(|k| format!("key-{k}"));
            assert!(!p.try_complete_else_watch(Arc::clone(op), ms(20), keys));
        }
        while ops.iter().any(|op| !op.expired.load(Ordering::SeqCst)) {
            thread::sleep(ms(1));
        }
        for op in &ops {
            assert_eq!(op.completions.load(Ordering::SeqCst), 1);
            assert!(op.at.lock().unwrap().unwrap() >= start + ms(20), "never early");
        }
        assert_eq!((p.delayed(), p.watched(), p.watched_keys(), p.expired()), (0, 0, 0, 10));
    });
}

#[test]
fn the_real_clock_never_fires_early_by_instant_or_by_delay() {
    watched("real timer", || {
        let timer = Timer::builder().tick(Duration::from_micros(100)).wheel_size(16).build();
        let mut rng = common::SplitMix(3);
        let log = Arc::new(Mutex::new(Vec::new()));
        for i in 0..200 {
            let (before, now, after) = (Instant::now(), timer.now(), Instant::now());
            assert!(before <= now && now <= after, "now() is Instant::now() on the system clock");
            let (d, l) = (Duration::from_nanos(rng.range(0, 30_000_000)), Arc::clone(&log));
            if i % 2 == 0 {
                let deadline = Instant::now() + d;
                timer.schedule_at(deadline, move || l.lock().unwrap().push((deadline, Instant::now())));
            } else {
                let start = Instant::now();
                timer.schedule(d, move || l.lock().unwrap().push((start + d, Instant::now())));
            }
        }
        while log.lock().unwrap().len() < 200 {
            thread::sleep(ms(2));
        }
        for &(due, at) in log.lock().unwrap().iter() {
            assert!(at >= due, "early by {:?}", due - at);
        }
    });
}

/// Waits (up to the watchdog) until `ran` reaches `n`.
fn wait_for(ran: &Counter, n: usize) {
    while ran.get() < n {
        thread::sleep(Duration::from_micros(200));
    }
}

#[test]
fn a_sleeping_driver_wakes_for_work_due_before_its_next_bucket() {
    watched("driver wakes", || {
        for tick in [ms(1), ms(100), Duration::from_secs(10)] {
            let timer = Timer::builder().tick(tick).build();
            let ran = Counter::default();
            let far = timer.schedule(Duration::from_secs(3600), ran.task());
            thread::sleep(ms(5)); // the driver sleeps towards the far bucket
            timer.schedule(Duration::ZERO, ran.task());
            wait_for(&ran, 1);
            timer.schedule_at(Instant::now() - ms(5), ran.task());
            wait_for(&ran, 2);
            assert!(far.reset(Duration::ZERO));
            wait_for(&ran, 3);
            let h = timer.schedule(Duration::from_secs(3600), ran.task());
            thread::sleep(ms(5));
            assert!(h.reset_at(Instant::now()));
            wait_for(&ran, 4);
            assert!(timer.is_empty(), "tick {tick:?}");
        }
        let q = DelayQueue::new();
        q.insert(1, Duration::from_secs(3600));
        thread::sleep(ms(5));
        q.insert_at(2, Instant::now());
        assert_eq!(q.recv_timeout(Duration::MAX).map(|e| e.into_inner()), Some(2));
    });
}
