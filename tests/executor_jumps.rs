//! A timer whose tasks run on executor threads (`TaskExecution::Threads`), on a manual clock,
//! advanced over many ticks in one `advance_clock`: every task due by then runs exactly once, on
//! an executor thread, never before its deadline; those due later wait for a later advance; a
//! task cancelled before the advance never runs. (With executors an advance takes its ticks in one
//! round: the batch is handed over, not waited for.)

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use delaywheel::{ManualClock, TaskExecution, Timer};

const TASKS: usize = 64;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Waits until `done` holds, for at most 10 s.
fn wait_for(done: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < until, "the executors did not run the batch within 10 s");
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn one_advance_over_many_ticks_runs_each_due_task_once_on_the_executors() {
    let clock = ManualClock::new();
    let timer = Timer::builder()
        .tick(ms(1))
        .wheel_size(8)
        .clock(clock.clone())
        .manual()
        .execution(TaskExecution::Threads(2))
        .build();
    let runs: Arc<Vec<AtomicUsize>> = Arc::new((0..TASKS).map(|_| AtomicUsize::new(0)).collect());
    // The clock's reading (ms) when each task ran, and how many ran on the test's thread.
    let ran_at: Arc<Vec<AtomicU64>> = Arc::new((0..TASKS).map(|_| AtomicU64::new(u64::MAX)).collect());
    let on_caller = Arc::new(AtomicUsize::new(0));
    let caller = thread::current().id();
    let handles: Vec<_> = (0..TASKS)
        .map(|i| {
            let (runs, ran_at, on_caller, clock) =
                (Arc::clone(&runs), Arc::clone(&ran_at), Arc::clone(&on_caller), clock.clone());
            // Task i is due at (i + 1) * 2 ms: 2 .. 128 ms, over three levels of an 8-bucket wheel.
            timer.schedule(ms((i as u64 + 1) * 2), move || {
                runs[i].fetch_add(1, Ordering::SeqCst);
                ran_at[i].store(clock.now().as_millis() as u64, Ordering::SeqCst);
                if thread::current().id() == caller {
                    on_caller.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    assert!(handles[10].cancel(), "task 10 (due at 22 ms) cancelled before any advance");
    let ran = |upto: usize| (0..upto).filter(|&i| i != 10).all(|i| runs[i].load(Ordering::SeqCst) == 1);

    // One advance from 0 to 50 ms: tasks 0..=24 (due 2..=50 ms) are due, but for the cancelled one.
    clock.advance(ms(50));
    assert!(timer.advance_clock(Duration::ZERO));
    wait_for(|| ran(25));
    thread::sleep(ms(20));
    for i in 0..TASKS {
        let expect = usize::from(i < 25 && i != 10);
        assert_eq!(
            runs[i].load(Ordering::SeqCst),
            expect,
            "task {i} (due {} ms) after the jump to 50",
            (i + 1) * 2
        );
    }
    assert_eq!(timer.len(), TASKS - 25, "the tasks due after 50 ms still pending");
    assert!(handles[30].is_pending() && !handles[24].is_pending());

    // A second jump, to 200 ms: the rest run, once each.
    clock.advance(ms(150));
    assert!(timer.advance_clock(Duration::ZERO));
    wait_for(|| ran(TASKS));
    thread::sleep(ms(20));
    for i in 0..TASKS {
        assert_eq!(runs[i].load(Ordering::SeqCst), usize::from(i != 10), "task {i} after the jump to 200");
        let due = (i as u64 + 1) * 2;
        let at = ran_at[i].load(Ordering::SeqCst);
        assert!(i == 10 || at >= due, "task {i} due at {due} ms ran at {at} ms: early");
    }
    assert!(!handles[10].is_fired() && handles[10].is_cancelled());
    assert_eq!(on_caller.load(Ordering::SeqCst), 0, "every task ran on an executor thread");
    assert_eq!(timer.len(), 0);
    assert!(!timer.advance_clock(Duration::ZERO), "nothing left to fire");
    let stats = timer.stats();
    assert_eq!((stats.fired, stats.cancelled), (TASKS as u64 - 1, 1));
}
