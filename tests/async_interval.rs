//! The `async` feature's `Interval`: exact tick instants on a manual clock for each
//! `MissedTickBehavior`, `reset` and its kin, cancel safety, the `Stream`, drop and shutdown, and tokio (both
//! runtime flavours).
#![cfg(feature = "async")]

mod common;

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use common::{manual_timer, ms};
use delaywheel::{Interval, ManualClock, MissedTickBehavior, Timer};
use futures::task::noop_waker_ref;

fn cx() -> Context<'static> {
    Context::from_waker(noop_waker_ref())
}

fn advance(clock: &ManualClock, timer: &Timer, by: Duration) {
    clock.advance(by);
    timer.advance_clock(Duration::ZERO);
}

/// Every tick ready now, as offsets from `base`.
fn ready_ticks(interval: &mut Interval, base: Instant) -> Vec<Duration> {
    let mut ticks = Vec::new();
    while let Poll::Ready(at) = interval.poll_tick(&mut cx()) {
        ticks.push(at - base);
        assert!(ticks.len() < 100, "an endless burst");
    }
    ticks
}

/// A 10 ms interval on a manual timer of 1 ms ticks, its first tick (due at once) taken, and the
/// instant its ticks count from.
fn started_interval() -> (ManualClock, Timer, Instant, Interval) {
    let (clock, timer) = manual_timer(ms(1), 8);
    let base = timer.now();
    let mut interval = timer.interval(ms(10));
    assert_eq!(ready_ticks(&mut interval, base), [ms(0)]);
    (clock, timer, base, interval)
}

const _: () = {
    const fn assert_traits<T: Unpin + Send + Sync + 'static>() {}
    assert_traits::<Interval>();
};

#[test]
fn ticks_come_at_exactly_their_instants_the_first_at_once() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let base = timer.now();
    let mut interval = timer.interval(ms(10));
    assert_eq!(interval.period(), ms(10));
    assert_eq!(interval.missed_tick_behavior(), MissedTickBehavior::Burst);
    assert_eq!(ready_ticks(&mut interval, base), [ms(0)], "the first tick is due at once");
    for step in 1..=30 {
        advance(&clock, &timer, ms(1));
        let expected: &[Duration] = if step % 10 == 0 { &[ms(step)] } else { &[] };
        assert_eq!(ready_ticks(&mut interval, base), expected, "at {step} ms");
    }
    assert_eq!(timer.len(), 1, "one task: the next tick");
}

#[test]
fn interval_at_starts_at_its_instant() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let base = timer.now();
    let mut interval = timer.interval_at(base + ms(7), ms(5));
    advance(&clock, &timer, ms(6));
    assert!(ready_ticks(&mut interval, base).is_empty());
    advance(&clock, &timer, ms(1));
    assert_eq!(ready_ticks(&mut interval, base), [ms(7)]);
    advance(&clock, &timer, ms(5));
    assert_eq!(ready_ticks(&mut interval, base), [ms(12)]);
    // A start already passed is due at once.
    let mut past = timer.interval_at(base, ms(5));
    assert_eq!(ready_ticks(&mut past, base), [ms(0), ms(5), ms(10)], "Burst: every due tick at once");
}

/// An interval of 10 ms from 0 whose consumer stalls from 0 to 35 ms, then polls every ms to 62 ms.
fn stalled(missed: MissedTickBehavior) -> Vec<Duration> {
    let (clock, timer) = manual_timer(ms(1), 8);
    let base = timer.now();
    let mut interval = timer.interval(ms(10));
    interval.set_missed_tick_behavior(missed);
    let mut ticks = ready_ticks(&mut interval, base);
    advance(&clock, &timer, ms(35));
    ticks.extend(ready_ticks(&mut interval, base));
    for _ in 35..62 {
        advance(&clock, &timer, ms(1));
        ticks.extend(ready_ticks(&mut interval, base));
    }
    ticks
}

#[test]
fn burst_delivers_every_missed_tick_at_once_and_keeps_the_grid() {
    assert_eq!(stalled(MissedTickBehavior::Burst), [0, 10, 20, 30, 40, 50, 60].map(ms));
}

#[test]
fn delay_starts_a_new_grid_a_period_after_the_late_tick() {
    assert_eq!(stalled(MissedTickBehavior::Delay), [0, 10, 45, 55].map(ms));
}

#[test]
fn skip_drops_missed_ticks_and_keeps_the_grid() {
    assert_eq!(stalled(MissedTickBehavior::Skip), [0, 10, 40, 50, 60].map(ms));
}

#[test]
fn a_tick_late_by_the_timers_rounding_is_on_time_for_delay() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let base = timer.now();
    let mut interval = timer.interval_at(base + Duration::from_micros(9_500), ms(10));
    interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
    advance(&clock, &timer, ms(10)); // fires at the 10 ms tick boundary: 0.5 ms late
    assert_eq!(ready_ticks(&mut interval, base), [Duration::from_micros(9_500)]);
    advance(&clock, &timer, ms(9));
    assert!(ready_ticks(&mut interval, base).is_empty());
    advance(&clock, &timer, ms(1));
    assert_eq!(ready_ticks(&mut interval, base), [Duration::from_micros(19_500)], "the grid kept");
}

#[test]
fn a_tick_up_to_5_ms_late_is_on_time_for_every_behaviour_as_in_tokio() {
    for missed in [MissedTickBehavior::Burst, MissedTickBehavior::Delay, MissedTickBehavior::Skip] {
        let (clock, timer) = manual_timer(ms(1), 8);
        let base = timer.now();
        let mut interval = timer.interval_at(base + ms(10), ms(10));
        interval.set_missed_tick_behavior(missed);
        advance(&clock, &timer, ms(15)); // the tick due at 10 ms, taken 5 ms late
        assert_eq!(ready_ticks(&mut interval, base), [ms(10)], "{missed:?}");
        advance(&clock, &timer, ms(5));
        assert_eq!(ready_ticks(&mut interval, base), [ms(20)], "{missed:?}: the grid kept");
        advance(&clock, &timer, ms(16)); // the tick due at 30 ms, taken 6 ms late
        assert_eq!(ready_ticks(&mut interval, base), [ms(30)], "{missed:?}");
        let next = match missed {
            MissedTickBehavior::Delay => ms(46),
            _ => ms(40),
        };
        advance(&clock, &timer, next - ms(36) - ms(1));
        assert!(ready_ticks(&mut interval, base).is_empty(), "{missed:?}");
        advance(&clock, &timer, ms(1));
        assert_eq!(ready_ticks(&mut interval, base), [next], "{missed:?}");
    }
}

#[test]
fn reset_moves_the_next_tick_a_period_from_now() {
    let (clock, timer, base, mut interval) = started_interval();
    advance(&clock, &timer, ms(4));
    interval.reset();
    advance(&clock, &timer, ms(9));
    assert!(ready_ticks(&mut interval, base).is_empty(), "the old tick at 10 ms is gone");
    advance(&clock, &timer, ms(1));
    assert_eq!(ready_ticks(&mut interval, base), [ms(14)]);
    assert_eq!(timer.len(), 1);
}

#[test]
fn reset_immediately_makes_a_tick_due_at_once_then_a_period_apart() {
    let (clock, timer, base, mut interval) = started_interval();
    advance(&clock, &timer, ms(4));
    assert!(ready_ticks(&mut interval, base).is_empty());
    interval.reset_immediately();
    assert_eq!(ready_ticks(&mut interval, base), [ms(4)], "due at the reset's instant");
    advance(&clock, &timer, ms(9));
    assert!(ready_ticks(&mut interval, base).is_empty(), "the old tick at 10 ms is gone");
    advance(&clock, &timer, ms(1));
    assert_eq!(ready_ticks(&mut interval, base), [ms(14)]);
    assert_eq!(timer.len(), 1);
}

#[test]
fn reset_after_and_reset_at_move_the_next_tick_and_the_grid() {
    let (clock, timer, base, mut interval) = started_interval();
    advance(&clock, &timer, ms(4));
    interval.reset_after(ms(3));
    advance(&clock, &timer, ms(2));
    assert!(ready_ticks(&mut interval, base).is_empty(), "6 ms: not yet");
    advance(&clock, &timer, ms(1));
    assert_eq!(ready_ticks(&mut interval, base), [ms(7)]);
    // Further than a period away: the ticks in between are not delivered.
    interval.reset_at(base + ms(40));
    for _ in 7..40 {
        advance(&clock, &timer, ms(1));
        let expected: &[Duration] = if timer.now() - base == ms(40) { &[ms(40)] } else { &[] };
        assert_eq!(ready_ticks(&mut interval, base), expected, "at {:?}", timer.now() - base);
    }
    advance(&clock, &timer, ms(10));
    assert_eq!(ready_ticks(&mut interval, base), [ms(50)], "a period after the reset's tick");
}

/// A `reset_at` an instant already passed is a late tick: returned at once, then what follows is
/// the interval's `MissedTickBehavior` (as tokio's `reset_at`).
fn reset_into_the_past(missed: MissedTickBehavior) -> (Vec<Duration>, Vec<Duration>) {
    let (clock, timer, base, mut interval) = started_interval();
    interval.set_missed_tick_behavior(missed);
    for at in [10, 20, 30] {
        advance(&clock, &timer, ms(10));
        assert_eq!(ready_ticks(&mut interval, base), [ms(at)]);
    }
    advance(&clock, &timer, ms(2));
    interval.reset_at(base + ms(5));
    let at_once = ready_ticks(&mut interval, base);
    advance(&clock, &timer, ms(10));
    (at_once, ready_ticks(&mut interval, base))
}

#[test]
fn reset_at_a_passed_instant_catches_up_by_the_missed_tick_behavior() {
    use MissedTickBehavior::*;
    assert_eq!(reset_into_the_past(Burst), (vec![ms(5), ms(15), ms(25)], vec![ms(35)]));
    assert_eq!(reset_into_the_past(Skip), (vec![ms(5)], vec![ms(35)]));
    assert_eq!(reset_into_the_past(Delay), (vec![ms(5)], vec![ms(42)]));
}

#[test]
fn a_reset_to_a_tick_due_at_once_wakes_the_waiting_task() {
    let (_clock, timer) = manual_timer(ms(1), 8);
    let (counter, waker) = common::waker::CountingWaker::new();
    let mut cx = Context::from_waker(&waker);
    let mut interval = timer.interval(ms(10));
    assert!(interval.poll_tick(&mut cx).is_ready());
    assert!(interval.poll_tick(&mut cx).is_pending());
    assert_eq!(counter.count(), 0);
    interval.reset_immediately();
    assert_eq!(counter.count(), 1, "the registered task learns that a tick is due");
    assert_eq!(interval.poll_tick(&mut cx), Poll::Ready(timer.now()));
    assert_eq!(timer.len(), 1, "one task: the next tick");
}

#[test]
fn tick_is_cancel_safe() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let base = timer.now();
    let mut interval = timer.interval_at(base + ms(5), ms(5));
    for _ in 0..3 {
        let mut tick = pin!(interval.tick());
        assert!(tick.as_mut().poll(&mut cx()).is_pending());
        // dropped here: a select! branch that lost
    }
    advance(&clock, &timer, ms(5));
    {
        let mut tick = pin!(interval.tick());
        assert!(tick.as_mut().poll(&mut cx()).is_ready());
    }
    {
        let mut tick = pin!(interval.tick());
        assert!(tick.as_mut().poll(&mut cx()).is_pending());
    }
    advance(&clock, &timer, ms(5));
    assert_eq!(ready_ticks(&mut interval, base), [ms(10)], "no tick lost, none doubled");
}

#[test]
fn an_interval_is_a_stream_of_tick_instants() {
    use futures::StreamExt;
    let timer = Timer::new();
    let start = timer.now();
    let ticks: Vec<Instant> = futures::executor::block_on(timer.interval(ms(5)).take(4).collect());
    assert!(ticks[0] >= start, "the first tick is due when the interval is made");
    assert!(Instant::now() >= ticks[3], "never early");
    for pair in ticks.windows(2) {
        assert_eq!(pair[1] - pair[0], ms(5));
    }
    assert!(timer.is_empty(), "dropping the stream cancelled its task");
}

#[test]
fn a_zero_period_is_raised_to_one_tick() {
    let (clock, timer) = manual_timer(ms(2), 8);
    let base = timer.now();
    let mut interval = timer.interval(Duration::ZERO);
    assert_eq!(interval.period(), ms(2));
    assert_eq!(ready_ticks(&mut interval, base), [ms(0)]);
    advance(&clock, &timer, ms(2));
    assert_eq!(ready_ticks(&mut interval, base), [ms(2)]);
}

#[test]
fn dropping_an_interval_cancels_its_task() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let mut interval = timer.interval(ms(10));
    assert!(interval.poll_tick(&mut cx()).is_ready());
    assert_eq!(timer.len(), 1);
    drop(interval);
    assert_eq!(timer.len(), 0);
    advance(&clock, &timer, ms(20));
    assert_eq!(timer.stats().fired, 0);
}

#[test]
fn after_shutdown_an_interval_yields_no_more_ticks() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let mut interval = timer.interval(ms(10));
    assert!(interval.poll_tick(&mut cx()).is_ready());
    drop(timer.shutdown());
    advance(&clock, &timer, ms(30));
    for _ in 0..3 {
        assert!(interval.poll_tick(&mut cx()).is_pending(), "never a panic");
    }
    interval.reset();
    assert!(interval.poll_tick(&mut cx()).is_pending());
    let mut fresh = timer.interval(ms(10));
    assert!(fresh.poll_tick(&mut cx()).is_pending(), "a shut-down timer has no ticks at all");
    drop(timer);
    assert!(interval.poll_tick(&mut cx()).is_pending());
    interval.reset();
    assert!(interval.poll_tick(&mut cx()).is_pending());
}

#[test]
fn an_interval_whose_next_tick_the_timer_refuses_yields_no_more_ticks() {
    let clock = ManualClock::new();
    let timer = Timer::builder().clock(clock.clone()).manual().max_pending(1).build();
    let mut interval = timer.interval(ms(10));
    assert!(interval.poll_tick(&mut cx()).is_ready());
    advance(&clock, &timer, ms(10));
    let blocker = timer.schedule(ms(1000), || {}); // the one pending task the timer takes
    assert!(interval.poll_tick(&mut cx()).is_ready(), "the tick due at 10 ms");
    assert!(blocker.cancel()); // room again, but the next tick's sleep was refused
    for _ in 0..3 {
        advance(&clock, &timer, ms(10));
        assert!(interval.poll_tick(&mut cx()).is_pending(), "dead, as after a shutdown; never a panic");
    }
    assert!(timer.is_empty());
}

#[test]
fn a_reset_revives_an_interval_whose_tick_was_refused_and_wakes_the_last_poller() {
    let clock = ManualClock::new();
    let timer = Timer::builder().clock(clock.clone()).manual().max_pending(1).build();
    let (counter, waker) = common::waker::CountingWaker::new();
    let mut cx = Context::from_waker(&waker);
    let mut interval = timer.interval(ms(10));
    assert!(interval.poll_tick(&mut cx).is_ready());
    assert!(interval.poll_tick(&mut cx).is_pending());
    advance(&clock, &timer, ms(10));
    assert_eq!(counter.count(), 1);
    let blocker = timer.schedule(ms(1000), || {}); // the one pending task the timer takes
    assert!(interval.poll_tick(&mut cx).is_ready(), "the tick due at 10 ms; the next one is refused");
    assert!(blocker.cancel());
    assert!(interval.poll_tick(&mut cx).is_pending(), "dead: the next tick never comes by itself");
    interval.reset(); // due at 20 ms, and the sleep keeps the waker of that pending poll
    advance(&clock, &timer, ms(10));
    assert_eq!(counter.count(), 2, "the revived interval woke nobody");
    assert_eq!(interval.poll_tick(&mut cx), Poll::Ready(timer.now()));
}

#[tokio::test(flavor = "current_thread")]
async fn tokio_current_thread_ticks_never_early() {
    let timer = Timer::new();
    let mut interval = timer.interval(ms(5));
    let first = interval.tick().await;
    for k in 1..=4u32 {
        let at = interval.tick().await;
        assert_eq!(at - first, ms(5) * k);
        assert!(Instant::now() >= at, "tick {k} early");
    }
    // However late this task ran (a late tick comes at once: Burst), the last one waited for 20 ms.
    assert!(Instant::now() - first >= ms(20));
    // A select! loop, the interval first: every tick due before the deadline is delivered (a late
    // one in a burst), however late this task runs: those due at 0, 3, … 18 ms, at least.
    let mut interval = timer.interval(ms(3));
    let mut ticks = 0;
    let deadline = timer.sleep(ms(20));
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            biased;
            _ = interval.tick() => ticks += 1,
            _ = &mut deadline => break,
        }
    }
    assert!(ticks >= 7, "{ticks} ticks in 20 ms of a 3 ms interval");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_multi_thread_intervals_on_spawned_tasks() {
    let timer = std::sync::Arc::new(Timer::new());
    let tasks: Vec<_> = (0..16u32)
        .map(|i| {
            let timer = std::sync::Arc::clone(&timer);
            tokio::spawn(async move {
                let mut interval = timer.interval(ms(1 + u64::from(i % 4)));
                interval.set_missed_tick_behavior(MissedTickBehavior::Skip);
                let first = interval.tick().await;
                let mut last = first;
                for _ in 0..5 {
                    last = interval.tick().await;
                    if Instant::now() < last {
                        return false;
                    }
                }
                last > first
            })
        })
        .collect();
    for task in tasks {
        assert!(task.await.unwrap(), "a tick came early");
    }
    assert!(timer.is_empty());
}

/// A tick taken (`poll_tick` ready) arms the next one without the waker of the task's last poll,
/// as tokio's `Interval` does: a task that does not poll again is not woken by the next tick.
#[test]
fn a_tick_taken_does_not_wake_the_task_for_the_next_one_until_it_polls() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (counter, waker) = common::waker::CountingWaker::new();
    let mut cx = Context::from_waker(&waker);
    let mut interval = timer.interval(ms(10));
    assert!(interval.poll_tick(&mut cx).is_ready(), "the first tick is due at once");
    assert!(interval.poll_tick(&mut cx).is_pending());
    advance(&clock, &timer, ms(10));
    assert_eq!(counter.count(), 1, "woken for the second tick");
    assert!(interval.poll_tick(&mut cx).is_ready());
    advance(&clock, &timer, ms(10));
    assert_eq!(counter.count(), 1, "woken for a tick it did not wait for");
    assert!(interval.poll_tick(&mut cx).is_ready(), "the third tick is due");
    assert!(interval.poll_tick(&mut cx).is_pending());
    advance(&clock, &timer, ms(10));
    assert_eq!(counter.count(), 2, "woken for the fourth tick it waits for");
}
