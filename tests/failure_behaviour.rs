//! Faults in user code and at the edges of the clock: what the timer does with a task that panics
//! (also while its panic payload or its closure is dropped), with zero delays, ties, a clock near
//! its end, and a purgatory operation whose `try_complete` panics. Manual clocks, except where the
//! behaviour is about a driver thread. Shutdowns and drops in their way: `shutdown_behaviour.rs`.

mod common;

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use common::{manual_timer, ms, Counter, FireLog};
use delaywheel::purgatory::{DelayedOperation, Purgatory};
use delaywheel::queue::DelayQueue;
use delaywheel::{ManualClock, ScheduleError, TaskExecution, Timer};

/// Panics when dropped: as a panic payload, or captured by a closure.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("dropping a Bomb panics (expected by this test)");
    }
}

/// A closure that runs fine but whose captures panic when it is dropped unrun.
fn closure_with_bomb() -> impl FnOnce() + Send + 'static {
    let bomb = Bomb;
    move || std::mem::forget(bomb)
}

#[test]
fn a_panic_payload_whose_drop_panics_is_caught_and_counted_on_the_advancing_thread() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let counter = Counter::default();
    timer.schedule(ms(1), || panic::panic_any(Bomb));
    timer.schedule(ms(2), counter.task());
    clock.advance(ms(1));
    assert!(timer.advance_clock(Duration::ZERO), "the panic stays inside the advance");
    assert_eq!(timer.stats().panicked, 1);
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(counter.get(), 1, "later tasks still run");
    drop(timer);
}

#[test]
fn a_panic_payload_whose_drop_panics_does_not_end_an_executor_thread() {
    let clock = ManualClock::new();
    let timer = Timer::builder()
        .tick(ms(1))
        .clock(clock.clone())
        .execution(TaskExecution::Threads(1))
        .manual()
        .build();
    let (tx, rx) = mpsc::channel();
    timer.schedule(ms(1), || panic::panic_any(Bomb));
    timer.schedule(ms(2), move || tx.send(()).unwrap());
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    rx.recv_timeout(Duration::from_secs(10)).expect("the one executor thread survived the payload");
    assert_eq!(timer.stats().panicked, 1);
    assert!(timer.shutdown().is_empty());
}

#[test]
fn cancelling_a_task_whose_closure_panics_on_drop_cancels_it_and_the_panic_leaves_cancel() {
    let (clock, timer) = manual_timer(ms(1), 4);
    for round in 0..2_000u64 {
        // Near ones cancelled in their first bucket, far ones after a cascade moved them.
        let delay = if round % 2 == 0 { ms(2) } else { ms(30) };
        let handle = timer.schedule(delay, closure_with_bomb());
        if round % 2 == 1 {
            clock.advance(ms(16));
            timer.advance_clock(Duration::ZERO);
        }
        let result = panic::catch_unwind(AssertUnwindSafe(|| handle.cancel()));
        assert!(result.is_err(), "the closure's own panic reaches the caller");
        assert!(handle.is_cancelled(), "round {round}");
        assert!(!handle.cancel());
    }
    let stats = timer.stats();
    assert_eq!((stats.cancelled, stats.pending, timer.len()), (2_000, 0, 0));
    clock.advance(ms(100));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(timer.stats().fired, 0);
    drop(timer); // every closure dropped, none run
}

#[test]
fn closures_that_panic_on_drop_are_dropped_by_the_timers_drop_without_panicking_it() {
    let (clock, timer) = manual_timer(ms(1), 4);
    let counter = Counter::default();
    for i in 0..20 {
        timer.schedule(ms(5 + i), closure_with_bomb());
    }
    timer.schedule(ms(1), counter.task());
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(counter.get(), 1);
    drop(timer); // drops the twenty unfired closures: each drop panics and is caught
}

#[test]
fn values_that_panic_on_drop_are_dropped_by_the_queues_drop_without_panicking_it() {
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
            panic!("dropping this value panics (expected by this test)");
        }
    }
    let (clock, timer) = manual_timer(ms(1), 4);
    let queue = delaywheel::queue::DelayQueue::with_timer(timer);
    let drops = Arc::new(AtomicUsize::new(0));
    for delay in [1, 1, 1, 2, 9, 9] {
        queue.insert(Counted(Arc::clone(&drops)), ms(delay));
    }
    clock.advance(ms(1));
    queue.advance_clock(Duration::ZERO);
    // Taking one moves the batch to the taking side (the value taken is ours: its drop panics here).
    assert!(panic::catch_unwind(AssertUnwindSafe(|| drop(queue.try_recv()))).is_err());
    clock.advance(ms(1));
    queue.advance_clock(Duration::ZERO);
    drop(queue); // two values on the taking side, one arrived, two pending: each drop panics, caught
    assert_eq!(drops.load(Ordering::SeqCst), 6, "expired (taken, taking side, arrived) and pending");
}

#[test]
fn a_refused_value_or_closure_whose_drop_panics_leaves_insert_and_schedule_with_nothing_kept() {
    let clock = ManualClock::new();
    let timer = Timer::builder().clock(clock.clone()).manual().max_pending(1).build();
    let queue = DelayQueue::with_timer(timer);
    let kept = queue.insert(7u8, ms(1));
    // Refused for capacity and for range: `insert` and `insert_at` drop the value, and its panic
    // leaves them, as a refused closure's leaves `Timer::schedule`.
    let full = Timer::builder().clock(clock.clone()).manual().max_pending(0).build();
    let (full, open) = (DelayQueue::with_timer(full), DelayQueue::with_timer(manual_timer(ms(1), 4).1));
    let refused = [
        panic::catch_unwind(AssertUnwindSafe(|| full.insert(Bomb, ms(1)))),
        panic::catch_unwind(AssertUnwindSafe(|| full.insert_at(Bomb, full.timer().now()))),
        panic::catch_unwind(AssertUnwindSafe(|| open.insert(Bomb, Duration::MAX))),
    ];
    assert!(refused.iter().all(Result::is_err));
    assert!(full.is_empty() && full.timer().is_empty() && open.is_empty() && open.timer().is_empty());
    let timer = queue.timer();
    assert!(panic::catch_unwind(AssertUnwindSafe(|| timer.schedule(ms(1), closure_with_bomb()))).is_err());
    assert_eq!((queue.len(), timer.len()), (1, 1), "only the value inserted first is kept");
    clock.advance(ms(1));
    queue.advance_clock(Duration::ZERO);
    let first = queue.try_recv().expect("the kept value expires as ever");
    assert_eq!((first.key(), first.into_inner()), (kept, 7));
    assert!(queue.is_empty());
}

#[test]
fn a_zero_delay_scheduled_mid_tick_runs_at_the_next_advance() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let log = FireLog::default();
    clock.advance(Duration::from_micros(7_500));
    timer.advance_clock(Duration::ZERO);
    timer.schedule(Duration::ZERO, log.task(0, &clock));
    clock.advance(Duration::from_micros(1));
    assert!(timer.advance_clock(Duration::ZERO));
    assert_eq!(log.runs(), vec![(0, Duration::from_micros(7_501))]);
    // Even with the clock not moved at all.
    timer.schedule(Duration::ZERO, log.task(1, &clock));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.ids(), vec![0, 1]);
}

#[test]
fn tasks_due_at_the_same_instant_fire_in_scheduling_order() {
    for count in [6usize, 40, 200] {
        let (clock, timer) = manual_timer(ms(1), 20);
        let log = FireLog::default();
        for i in 0..count {
            let delay = if i % 2 == 0 { Duration::from_micros(4_500) } else { ms(5) };
            timer.schedule(delay, log.task(i, &clock));
        }
        clock.advance(ms(5));
        timer.advance_clock(Duration::ZERO);
        let (early, late): (Vec<usize>, Vec<usize>) = log.ids().into_iter().partition(|i| i % 2 == 0);
        let expected = |parity| (0..count).filter(move |i| i % 2 == parity).collect::<Vec<_>>();
        assert_eq!(early, expected(0), "{count} tasks, the 4.5 ms group");
        assert_eq!(late, expected(1), "{count} tasks, the 5 ms group");
        assert_eq!(&log.ids()[..count / 2], &expected(0)[..], "earlier deadlines first");
    }
}

#[test]
fn deadlines_past_the_clocks_last_reachable_tick_are_refused() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let now = u64::MAX - 3_000_000;
    clock.advance(Duration::from_nanos(now));
    timer.advance_clock(Duration::ZERO);
    // The clock's last tick begins within 3 ms: less than `max_delay`'s second of slack is left.
    assert_eq!(timer.max_delay(), Duration::ZERO);
    let reach = Duration::from_nanos(u64::MAX / 1_000_000 * 1_000_000 - now);
    assert!(reach < ms(3), "{reach:?}");
    let log = FireLog::default();
    let last = timer.try_schedule(reach, log.task(0, &clock)).expect("the last tick is accepted");
    let refused = timer.try_schedule(reach + Duration::from_nanos(1), log.task(1, &clock));
    assert!(matches!(refused, Err(ScheduleError::DelayTooLong { .. })), "{refused:?}");
    clock.advance(Duration::MAX); // saturates at the clock's end
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.ids(), vec![0]);
    assert!(last.is_fired());
    // In the last partial tick: only "now" itself is left.
    assert_eq!(timer.max_delay(), Duration::ZERO);
    let refused = timer.try_schedule(Duration::from_micros(1), || {});
    assert!(matches!(refused, Err(ScheduleError::DelayTooLong { .. })), "{refused:?}");
    timer.schedule(Duration::ZERO, log.task(2, &clock));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.ids(), vec![0, 2]);
    assert!(timer.shutdown().is_empty());
}

#[test]
fn max_delay_is_accepted_and_the_range_ends_a_second_past_it_for_every_tick_and_clock_reading() {
    // Ticks of 3 µs to the whole clock, fine and far deadline words (over 2^41 ns), read at the
    // origin, mid-tick, and near the clock's end: `max_delay` is the range (to the last tick the
    // clock reaches) less a second, and accepted (also as an instant); the range itself is
    // accepted, a nanosecond more refused with that `max`, and the task at `max_delay` fires once
    // the clock gets there.
    let ticks = [3_000, 7_000_000, (1 << 41) + 1, 3_600_000_000_000, u64::MAX / 3, u64::MAX];
    for (tick, at) in
        ticks.into_iter().flat_map(|t| [0, 12_345, 1 << 50, u64::MAX - 5_000_000].map(|a| (t, a)))
    {
        let clock = ManualClock::new();
        clock.advance(Duration::from_nanos(at));
        let timer = Timer::builder()
            .tick(Duration::from_nanos(tick))
            .wheel_size(3)
            .clock(clock.clone())
            .manual()
            .build();
        let reach = Duration::from_nanos((u64::MAX / tick * tick).saturating_sub(at));
        let max = timer.max_delay();
        assert_eq!(max, reach.saturating_sub(Duration::from_secs(1)), "tick {tick} at {at}");
        let log = FireLog::default();
        let last = timer.try_schedule(max, log.task(0, &clock)).expect("max_delay is accepted");
        assert!(timer.try_schedule_at(timer.now() + max, || {}).is_ok(), "tick {tick} at {at}");
        assert!(timer.try_schedule(reach, || {}).is_ok(), "tick {tick} at {at}");
        let over = timer.try_schedule(reach + Duration::from_nanos(1), || {}).unwrap_err();
        assert_eq!(
            over,
            ScheduleError::DelayTooLong { delay: reach + Duration::from_nanos(1), max },
            "tick {tick} at {at}"
        );
        clock.advance(Duration::MAX);
        timer.advance_clock(Duration::ZERO);
        assert!(last.is_fired() && timer.is_empty(), "tick {tick} at {at}: fired at the clock's end");
        assert_eq!(log.ids(), vec![0]);
    }
}

#[test]
fn max_delay_is_accepted_by_a_prompt_schedule_on_the_system_clock() {
    // The system clock moves between `max_delay`'s reading and the schedule's: the schedule still
    // accepts it, as a delay and as an instant, whatever the tick; past the range is refused.
    for tick in [Duration::from_micros(1), ms(1), Duration::from_millis(1_500)] {
        let timer = Timer::builder().tick(tick).wheel_size(4).manual().build();
        for i in 0..1_000 {
            let h = timer.try_schedule(timer.max_delay(), || {});
            assert!(h.is_ok_and(|h| h.cancel()), "tick {tick:?}, try {i}");
            let h = timer.try_schedule_at(timer.now() + timer.max_delay(), || {});
            assert!(h.is_ok_and(|h| h.cancel()), "tick {tick:?}, try {i} (instant)");
        }
        let far = timer.try_schedule(timer.max_delay() + Duration::from_secs(2), || {});
        assert!(matches!(far, Err(ScheduleError::DelayTooLong { .. })), "{far:?}");
        assert!(matches!(timer.try_schedule(Duration::MAX, || {}), Err(ScheduleError::DelayTooLong { .. })));
    }
}

/// A purgatory operation: waiting, ready, or poisoned (its `try_complete` panics).
struct Op {
    mode: AtomicUsize,
    completed: AtomicUsize,
    expired: AtomicBool,
}

const WAITING: usize = 0;
const READY: usize = 1;
const POISONED: usize = 2;

impl Op {
    fn new() -> Arc<Op> {
        Arc::new(Op {
            mode: AtomicUsize::new(WAITING),
            completed: AtomicUsize::new(0),
            expired: AtomicBool::new(false),
        })
    }
}

impl DelayedOperation for Op {
    fn try_complete(&self) -> bool {
        match self.mode.load(Ordering::SeqCst) {
            POISONED => panic!("a poisoned operation (expected by this test)"),
            mode => mode == READY,
        }
    }
    fn on_complete(&self) {
        self.completed.fetch_add(1, Ordering::SeqCst);
    }
    fn on_expiration(&self) {
        self.expired.store(true, Ordering::SeqCst);
    }
}

#[test]
fn a_panicking_try_complete_is_counted_and_does_not_block_its_key() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let purgatory: Purgatory<u64, Op> = Purgatory::with_timer(timer);
    let (poisoned, ready) = (Op::new(), Op::new());
    assert!(!purgatory.try_complete_else_watch(Arc::clone(&poisoned), ms(10), [7]));
    assert!(!purgatory.try_complete_else_watch(Arc::clone(&ready), ms(10), [7]));
    poisoned.mode.store(POISONED, Ordering::SeqCst);
    ready.mode.store(READY, Ordering::SeqCst);
    assert_eq!(purgatory.check_and_complete(&7), 1, "the check went past the panicking operation");
    assert_eq!(ready.completed.load(Ordering::SeqCst), 1);
    assert_eq!(purgatory.panicked(), 1);
    assert_eq!((purgatory.delayed(), purgatory.watched()), (1, 1), "the poisoned one stays watched");
    assert_eq!(purgatory.check_and_complete(&7), 0);
    assert_eq!(purgatory.panicked(), 2);
    // It still expires on time.
    clock.advance(ms(10));
    purgatory.advance_clock(Duration::ZERO);
    assert!(poisoned.expired.load(Ordering::SeqCst));
    assert_eq!(poisoned.completed.load(Ordering::SeqCst), 1);
    assert_eq!((purgatory.delayed(), purgatory.watched()), (0, 0));
}

/// One link of an endless chain of zero delays: counts itself and schedules the next.
fn link(timer: std::sync::Weak<Timer>, runs: Arc<AtomicUsize>) {
    runs.fetch_add(1, Ordering::SeqCst);
    if let Some(t) = timer.upgrade() {
        let next = (Arc::downgrade(&t), Arc::clone(&runs));
        t.schedule(Duration::ZERO, move || link(next.0, next.1));
    }
}

#[test]
fn a_chain_of_zero_delays_runs_one_link_per_advance() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let timer = Arc::new(timer);
    let runs = Arc::new(AtomicUsize::new(0));
    let first = (Arc::downgrade(&timer), Arc::clone(&runs));
    timer.schedule(Duration::ZERO, move || link(first.0, first.1));
    for advance in 1..=5 {
        assert!(timer.advance_clock(Duration::ZERO), "advance {advance} flushed the next link");
        assert_eq!(runs.load(Ordering::SeqCst), advance, "bounded: one link per advance");
        assert_eq!(timer.len(), 1, "the next link waits for the next advance");
    }
    clock.advance(Duration::from_micros(300)); // mid-tick, too
    timer.advance_clock(Duration::ZERO);
    assert_eq!(runs.load(Ordering::SeqCst), 6);
    assert_eq!(timer.shutdown().len(), 1);
}

#[test]
fn advance_clock_returns_once_the_driver_flushed_the_bucket_it_waited_for() {
    let timer = Arc::new(Timer::new());
    let (tx, rx) = mpsc::channel();
    for timeout in [Duration::from_secs(30), Duration::MAX] {
        let (fired_tx, fired_rx) = mpsc::channel();
        timer.schedule(ms(200), move || fired_tx.send(()).unwrap());
        let (timer, tx) = (Arc::clone(&timer), tx.clone());
        std::thread::spawn(move || {
            timer.advance_clock(timeout);
            tx.send(()).unwrap();
        });
        fired_rx.recv_timeout(Duration::from_secs(20)).expect("the task fired");
        // Whichever thread flushed it, the wait ends: well before the timeout, which it would
        // otherwise sit out (30 s, or for ever).
        rx.recv_timeout(Duration::from_secs(20)).expect("advance_clock returned after the flush");
    }
}
