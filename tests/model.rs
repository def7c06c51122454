//! Property tests: random operation sequences checked step by step against a reference model.
//!
//! The operation language: schedule (any delay: zero, sub-tick, many levels away, far future),
//! cancel (of any handle, including fired, cancelled and refused ones), advance of the manual clock
//! (zero, sub-tick, multi-level jumps) followed by `advance_clock`, and shutdown. The model is a plain
//! list of deadlines: after every step, exactly the tasks whose deadline tick has begun have fired,
//! each once, none early; `cancel()` returns what the model says; `len()` is exact.
//!
//! `cargo test` runs at least 100 000 operations in total (256 cases of up to ~500 operations);
//! set `DELAYWHEEL_PROPTEST_CASES` for more.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::ceil_to_tick;
use delaywheel::{ManualClock, ScheduleError, Timer, TimerHandle};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    /// Schedule with a delay of `nanos` (`None`: `Duration::MAX`).
    Schedule(Option<u64>),
    /// Cancel the handle with this index (modulo the number of handles).
    Cancel(usize),
    /// Advance the clock by this many nanoseconds, then `advance_clock`.
    Advance(u64),
    Shutdown,
}

fn delay_strategy() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![
        3 => (0u64..3).prop_map(Some),                                  // zero and sub-µs
        4 => (0u64..50_000_000).prop_map(Some),                          // within tens of ms
        3 => (0u64..5_000_000_000_000).prop_map(Some),                   // up to ~80 min
        1 => (0u64..u64::MAX / 4).prop_map(Some),                        // centuries
        1 => Just(None),                                                 // Duration::MAX
    ]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => delay_strategy().prop_map(Op::Schedule),
        3 => any::<usize>().prop_map(Op::Cancel),
        4 => prop_oneof![
            Just(0u64),
            0u64..2_000,
            0u64..20_000_000,
            0u64..2_000_000_000,
            0u64..10_000_000_000_000,
        ]
        .prop_map(Op::Advance),
        1 => Just(Op::Shutdown),
    ]
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    Pending,
    Fired,
    Cancelled,
    /// Refused by `try_schedule`, or left unfired by shutdown.
    Gone,
}

struct Task {
    deadline: Duration,
    expect: Expect,
    handle: Option<TimerHandle>,
}

fn run(tick_us: u64, wheel_size: usize, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let tick = Duration::from_micros(tick_us);
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(tick).wheel_size(wheel_size).clock(clock.clone()).manual().build();
    let fired: Arc<Mutex<Vec<(usize, Duration)>>> = Arc::default();
    let mut tasks: Vec<Task> = Vec::new();
    let mut shut_down = false;

    for (step, op) in ops.into_iter().enumerate() {
        match op {
            Op::Schedule(nanos) => {
                let delay = nanos.map_or(Duration::MAX, Duration::from_nanos);
                let id = tasks.len();
                let (log, c) = (Arc::clone(&fired), clock.clone());
                let result = timer.try_schedule(delay, move || log.lock().unwrap().push((id, c.now())));
                let deadline = clock.now().checked_add(delay);
                match result {
                    Ok(handle) => {
                        prop_assert!(!shut_down, "step {step}: accepted after shutdown");
                        let deadline = deadline.expect("an accepted deadline is representable");
                        tasks.push(Task { deadline, expect: Expect::Pending, handle: Some(handle) });
                    }
                    Err(ScheduleError::ShutDown) => {
                        prop_assert!(shut_down, "step {step}: refused as shut down while running");
                        tasks.push(Task { deadline: Duration::ZERO, expect: Expect::Gone, handle: None });
                    }
                    Err(ScheduleError::DelayTooLong { max, .. }) => {
                        prop_assert!(delay > max, "step {step}: {delay:?} refused, max {max:?}");
                        prop_assert!(delay > Duration::from_secs(100 * 365 * 86_400));
                        tasks.push(Task { deadline: Duration::ZERO, expect: Expect::Gone, handle: None });
                    }
                    Err(e) => prop_assert!(false, "step {step}: unexpected error {e}"),
                }
            }
            Op::Cancel(i) => {
                if tasks.is_empty() {
                    continue;
                }
                let n = tasks.len();
                let task = &mut tasks[i % n];
                let cancelled = task.handle.as_ref().is_some_and(TimerHandle::cancel);
                prop_assert_eq!(cancelled, task.expect == Expect::Pending, "step {}: cancel result", step);
                if cancelled {
                    task.expect = Expect::Cancelled;
                }
            }
            Op::Advance(nanos) => {
                clock.advance(Duration::from_nanos(nanos));
                timer.advance_clock(Duration::ZERO);
                let now = clock.now();
                if !shut_down {
                    for task in tasks.iter_mut().filter(|t| t.expect == Expect::Pending) {
                        if ceil_to_tick(task.deadline, tick) <= now {
                            task.expect = Expect::Fired;
                        }
                    }
                }
            }
            Op::Shutdown => {
                let unfired = timer.shutdown();
                let expected =
                    if shut_down { 0 } else { tasks.iter().filter(|t| t.expect == Expect::Pending).count() };
                prop_assert_eq!(unfired.len(), expected, "step {}: unfired count", step);
                for task in tasks.iter_mut().filter(|t| t.expect == Expect::Pending) {
                    task.expect = Expect::Gone;
                }
                shut_down = true;
            }
        }

        // The state after every step.
        let log = fired.lock().unwrap().clone();
        let mut times_fired = vec![0usize; tasks.len()];
        for &(id, at) in &log {
            times_fired[id] += 1;
            prop_assert!(at >= tasks[id].deadline, "step {step}: task {id} fired early");
        }
        for (id, task) in tasks.iter().enumerate() {
            let want = usize::from(task.expect == Expect::Fired);
            prop_assert_eq!(
                times_fired[id],
                want,
                "step {}: task {} ({:?}) fired count",
                step,
                id,
                task.expect
            );
        }
        let pending = tasks.iter().filter(|t| t.expect == Expect::Pending).count();
        prop_assert_eq!(timer.len(), pending, "step {}: len()", step);
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("DELAYWHEEL_PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn timer_matches_the_reference_model(
        tick_us in prop_oneof![Just(1u64), 1u64..100, 100u64..20_000],
        wheel_size in prop_oneof![Just(2usize), 2usize..8, 8usize..128],
        ops in proptest::collection::vec(op_strategy(), 300..500),
    ) {
        run(tick_us, wheel_size, ops)?;
    }
}
