//! The async futures and the delay queue's consumers on real drivers: a timer whose tasks run on
//! executor threads (`TaskExecution::Threads`, where a sleep's wake-up comes from an executor
//! thread, not the driver's batch), a driver asleep toward a far deadline that a reset or an insert
//! moves earlier, and `Interval::tick` raced in a `select!` on both tokio runtime flavours.
//! Assertions are never-early and exactly-once, with a guard (a timeout on another timer) against a
//! wake-up that never comes: nothing depends on how late a loaded host runs the tasks.
#![cfg(feature = "async")]

mod common;

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use common::ms;
use delaywheel::queue::DelayQueue;
use delaywheel::{MissedTickBehavior, TaskExecution, Timer};

/// Polls `future` once, inside the task.
async fn poll_once<F: Future + Unpin>(mut future: F) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut future).poll(cx))).await
}

/// Far enough that reaching it means a wake-up was lost.
const LOST: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sleeps_timeouts_and_intervals_on_executor_threads() {
    let timer = Arc::new(Timer::builder().execution(TaskExecution::Threads(2)).build());
    let tasks: Vec<_> = (0..32u64)
        .map(|i| {
            let timer = Arc::clone(&timer);
            tokio::spawn(async move {
                let mut sleep = timer.sleep(ms(i % 7));
                (&mut sleep).await;
                assert!(Instant::now() >= sleep.deadline() && sleep.is_elapsed(), "early");
                let mut interval = timer.interval(ms(2));
                interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
                let mut last = interval.tick().await;
                for _ in 0..4 {
                    let at = interval.tick().await;
                    assert!(Instant::now() >= at && at >= last + ms(2), "a tick came early");
                    last = at;
                }
                let mut limited = pin!(timer.timeout(ms(3), std::future::pending::<()>()));
                assert!((&mut limited).await.is_err());
                assert!(Instant::now() >= limited.deadline(), "elapsed early");
                sleep.reset(timer.now() + ms(1)); // an elapsed sleep re-armed
                (&mut sleep).await;
                assert!(Instant::now() >= sleep.deadline());
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    assert!(timer.is_empty());

    let timer = Timer::builder().execution(TaskExecution::Threads(2)).build();
    let queue = Arc::new(DelayQueue::with_timer(timer));
    for i in 0..300u32 {
        queue.insert(i, ms(u64::from(i % 5)));
    }
    let all = common::queue::take_all_with_tasks(&queue, 3).await;
    assert_eq!(all, (0..300).collect::<Vec<_>>(), "each value once");
}

/// The driver sleeps toward a deadline 60 s away; a reset in place, a reset of an elapsed sleep
/// (a new task), a queue's reset and an insert each move the earliest deadline to 5 ms from now,
/// or to one already passed, and the driver must wake for it.
#[test]
fn a_driver_asleep_toward_a_far_deadline_wakes_for_an_earlier_one() {
    let timer = Timer::new();
    let guard = Timer::new();
    // Beyond `LOST`: a driver that missed a wake-up sleeps past the guard's timeout.
    let far = Duration::from_secs(60);
    let let_the_driver_sleep = || std::thread::sleep(ms(20));
    futures::executor::block_on(async {
        let _far_task = timer.sleep(far);
        let mut sleep = timer.sleep(far);
        assert!(poll_once(&mut sleep).await.is_pending());
        let_the_driver_sleep();
        sleep.reset(timer.now() + ms(5));
        guard.timeout(LOST, &mut sleep).await.expect("a reset in place woke no driver");
        assert!(Instant::now() >= sleep.deadline());

        sleep.reset(timer.now() + far);
        assert!(poll_once(&mut sleep).await.is_pending());
        let_the_driver_sleep();
        sleep.reset(timer.now() + ms(5));
        guard.timeout(LOST, &mut sleep).await.expect("a reset of an elapsed sleep woke no driver");
        assert!(Instant::now() >= sleep.deadline());

        let queue = DelayQueue::new();
        let key = queue.insert(1, far);
        queue.insert(2, far);
        let_the_driver_sleep();
        assert!(queue.reset(&key, ms(5)));
        let next = guard.timeout(LOST, queue.next_expired()).await.expect("a queue's reset woke no driver");
        assert_eq!(next.map(|e| e.into_inner()), Some(1));
        let_the_driver_sleep();
        queue.insert(3, ms(5));
        let next = guard.timeout(LOST, queue.next_expired()).await.expect("an insert woke no driver");
        assert_eq!(next.map(|e| e.into_inner()), Some(3));
        assert_eq!(queue.len(), 1);

        // Deadlines already passed: due by the next advance, which the driver must not put off.
        let_the_driver_sleep();
        guard.timeout(LOST, timer.sleep(Duration::ZERO)).await.expect("a zero sleep woke no driver");
        let_the_driver_sleep();
        let past = timer.sleep_until(timer.now() - ms(5));
        guard.timeout(LOST, past).await.expect("a passed deadline woke no driver");
        sleep.reset(timer.now() + far);
        let_the_driver_sleep();
        sleep.reset(timer.now() - ms(3));
        guard.timeout(LOST, &mut sleep).await.expect("a reset into the past woke no driver");
        let_the_driver_sleep();
        queue.insert_at(4, queue.timer().now() - ms(1));
        let next = guard.timeout(LOST, queue.next_expired()).await.expect("a passed insert woke no driver");
        assert_eq!(next.map(|e| e.into_inner()), Some(4));
    });
}

/// `tick` raced in a `select!` against a shorter sleep that wins most rounds: every tick comes
/// once, on the grid (`Burst`), however often its future was dropped before it completed.
async fn ticks_survive_a_select() {
    let timer = Timer::new();
    let mut interval = timer.interval(ms(3));
    let mut ticks = Vec::new();
    let mut deadline = pin!(timer.sleep(ms(45)));
    loop {
        tokio::select! {
            biased;
            at = interval.tick() => ticks.push(at),
            () = timer.sleep(Duration::from_micros(700)) => {}
            () = &mut deadline => break,
        }
    }
    for (k, at) in ticks.iter().enumerate() {
        assert_eq!(*at, ticks[0] + ms(3) * k as u32, "a tick lost or doubled: {ticks:?}");
    }
    // The first tick is due at once, and the tick branch is polled first. (How many follow depends
    // on how late this task runs: a late one comes in a burst, and the deadline's turn may come
    // while the last due tick is being fired.)
    let last = *ticks.last().expect("the first tick is due at once");
    assert!(Instant::now() >= last, "early");
}

#[tokio::test(flavor = "current_thread")]
async fn ticks_survive_a_select_current_thread() {
    ticks_survive_a_select().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ticks_survive_a_select_multi_thread() {
    tokio::spawn(ticks_survive_a_select()).await.unwrap();
}
