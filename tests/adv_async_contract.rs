//! The async contract where its promises combine: lazy timeouts (solo and in tick groups) and
//! `try_timeout`s completing, elapsing and dropped, across threads, with
//! `scheduled == fired + cancelled + pending`, `len()` and `next_wakeup()` exact whenever nothing
//! moves; deadlines before the clock's origin, passed mid-tick, zero, and beyond the range (never a
//! panic; `try_` forms refuse); a full bounded timer; an interval reset while a tick is due; futures
//! outliving their timer; timeouts on a `Timer::drive` future on a manual clock; sleeps, timeouts
//! and intervals racing on tokio workers, on the driver thread and on executor threads, never early.
#![cfg(feature = "async")]

mod common;

use std::future::{pending, Future, Pending};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use common::waker::{poll, CountingWaker};
use common::{manual_timer, ms, SplitMix};
use delaywheel::{
    ManualClock, MissedTickBehavior, ScheduleError, TaskExecution, Timeout, Timer, TimerBuilder,
};

fn advance(clock: &ManualClock, timer: &Timer, by: Duration) {
    clock.advance(by);
    timer.advance_clock(Duration::ZERO);
}

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

/// The counts of a quiescent timer: `stats()` agrees with `len()`, every task scheduled is fired,
/// cancelled or pending, and `next_wakeup()` is `None` when nothing is pending. Returns `len()`.
fn assert_counts(timer: &Timer, what: &str) -> usize {
    let s = timer.stats();
    assert_eq!(s.pending, timer.len(), "{what}");
    assert_eq!(s.scheduled, s.fired + s.cancelled + s.pending as u64, "{what}: {s:?}");
    assert_eq!(s.lateness.count, s.fired, "{what}: lateness {s:?}");
    if s.pending == 0 {
        assert_eq!(timer.next_wakeup(), None, "{what}");
    }
    s.pending
}

/// A future that completes once its flag is set.
struct Flag(Arc<AtomicBool>);

impl Future for Flag {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        match self.0.load(Ordering::SeqCst) {
            true => Poll::Ready(()),
            false => Poll::Pending,
        }
    }
}

type Limited<F> = Pin<Box<Timeout<F>>>;

/// `timeout` boxed and polled once with `waker`: pending, so armed.
fn armed<F: Future>(timeout: Timeout<F>, waker: &Waker) -> Limited<F> {
    let mut timeout = Box::pin(timeout);
    assert!(poll(timeout.as_mut(), waker).is_pending());
    timeout
}

/// A lazy `timeout_at` an hour before the clock's origin is pending at its first poll, counts
/// once, reads its deadline back as given and elapses at the next advance; one beyond the range,
/// or `timeout(Duration::MAX)`, counts nothing and never elapses; `try_timeout` refuses it.
#[test]
fn lazy_timeouts_before_the_origin_elapse_by_the_next_advance_and_beyond_the_range_never() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (count, waker) = CountingWaker::new();
    let Some(before) = timer.now().checked_sub(Duration::from_secs(3600)) else { return };
    let mut t = Box::pin(timer.timeout_at(before, pending::<()>()));
    assert_eq!(t.deadline(), before);
    assert!(poll(t.as_mut(), &waker).is_pending());
    assert_eq!(t.deadline(), before);
    assert_eq!(timer.len(), 1);
    timer.advance_clock(Duration::ZERO);
    assert_eq!(count.count(), 1);
    assert!(matches!(poll(t.as_mut(), &waker), Poll::Ready(Err(_))));
    assert_counts(&timer, "before origin");
    let far = timer.now() + timer.max_delay() + Duration::from_secs(10);
    let mut f = armed(timer.timeout_at(far, pending::<()>()), &waker);
    assert_eq!(f.deadline(), far);
    assert_eq!(timer.len(), 0);
    let mut m = armed(timer.timeout(Duration::MAX, pending::<()>()), &waker);
    let _ = m.deadline();
    assert_eq!(timer.len(), 0);
    advance(&clock, &timer, Duration::from_secs(3600));
    assert!(poll(f.as_mut(), &waker).is_pending());
    assert!(poll(m.as_mut(), &waker).is_pending());
    let refused = timer.try_timeout(Duration::MAX, pending::<()>());
    assert!(matches!(refused, Err(ScheduleError::DelayTooLong { .. })));
    assert_counts(&timer, "far");
}

/// Lazy timeouts (solo and grouped), `timeout_at`s and `try_timeout`s on one thread, armed in
/// random ticks, some completing, some dropped, the clock moved by random steps: each elapses never
/// early and at most a tick late, and the counts are exact after every step.
#[test]
fn counts_stay_exact_through_timeouts_completing_elapsing_and_dropped() {
    let (clock, timer) = manual_timer(ms(1), 4);
    let mut live: Vec<(Limited<Flag>, Arc<AtomicBool>, Instant)> = Vec::new();
    let (_, waker) = CountingWaker::new();
    let mut rng = SplitMix(12345);
    let mut next = || rng.next();
    for round in 0..400 {
        for _ in 0..(next() % 5) {
            let flag = Arc::new(AtomicBool::new(false));
            let d = us(next() % 6000);
            let mut t = if next() % 3 == 0 {
                Box::pin(timer.try_timeout(d, Flag(flag.clone())).unwrap())
            } else if next() % 2 == 0 {
                Box::pin(timer.timeout_at(timer.now() + d, Flag(flag.clone())))
            } else {
                Box::pin(timer.timeout(d, Flag(flag.clone())))
            };
            assert!(poll(t.as_mut(), &waker).is_pending());
            let due = t.deadline();
            live.push((t, flag, due));
        }
        match next() % 4 {
            0 if !live.is_empty() => {
                let i = (next() as usize) % live.len();
                drop(live.swap_remove(i));
            }
            1 if !live.is_empty() => {
                let i = (next() as usize) % live.len();
                live[i].1.store(true, Ordering::SeqCst);
            }
            _ => {}
        }
        assert_counts(&timer, &format!("round {round} before advance"));
        advance(&clock, &timer, us(next() % 1500));
        let now = timer.now();
        live.retain_mut(|(t, _, due)| match poll(t.as_mut(), &waker) {
            Poll::Pending => {
                assert!(now < *due + ms(1), "late: due {due:?} now {now:?}");
                true
            }
            Poll::Ready(Ok(())) => false,
            Poll::Ready(Err(_)) => {
                assert!(now >= *due, "early");
                false
            }
        });
        assert_counts(&timer, &format!("round {round}"));
    }
    drop(live);
    assert_eq!(assert_counts(&timer, "end"), 0);
}

/// `Interval::reset` while a tick is due (fired, not yet taken): that tick is dropped and the next
/// one is due a period after the reset, whatever the missed tick behaviour (as tokio's).
#[test]
fn an_interval_reset_while_a_tick_is_due_drops_that_tick_whatever_the_behaviour() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let start = timer.now();
    let (count, waker) = CountingWaker::new();
    let mut cx = Context::from_waker(&waker);
    let mut iv = timer.interval(ms(10));
    assert_eq!(iv.poll_tick(&mut cx), Poll::Ready(start));
    assert!(iv.poll_tick(&mut cx).is_pending());
    advance(&clock, &timer, ms(13));
    assert_eq!(count.count(), 1);
    iv.reset();
    assert!(iv.poll_tick(&mut cx).is_pending(), "reset drops the due tick");
    advance(&clock, &timer, ms(9));
    assert!(iv.poll_tick(&mut cx).is_pending());
    advance(&clock, &timer, ms(1));
    assert_eq!(iv.poll_tick(&mut cx), Poll::Ready(start + ms(23)));
    for b in [MissedTickBehavior::Burst, MissedTickBehavior::Delay, MissedTickBehavior::Skip] {
        iv.set_missed_tick_behavior(b);
        advance(&clock, &timer, ms(35));
        let now = timer.now();
        iv.reset();
        assert!(iv.poll_tick(&mut cx).is_pending());
        advance(&clock, &timer, ms(10));
        assert_eq!(iv.poll_tick(&mut cx), Poll::Ready(now + ms(10)), "{b:?}");
    }
    drop(iv);
    assert_counts(&timer, "interval");
}

/// Threads arm timeouts (tick groups among them), send most to this thread and exit: the counts
/// stay exact as some complete, some elapse and the rest are dropped on yet another thread.
#[test]
fn members_armed_on_exiting_threads_complete_elapse_or_drop_elsewhere_with_exact_counts() {
    let (clock, timer) = manual_timer(ms(1), 4);
    let timer = Arc::new(timer);
    let (_, waker) = CountingWaker::new();
    for round in 0..50u64 {
        let (tx, rx) = mpsc::channel::<(Limited<Flag>, Arc<AtomicBool>)>();
        let mut threads = Vec::new();
        for th in 0..3u64 {
            let (tx, timer, waker) = (tx.clone(), Arc::clone(&timer), waker.clone());
            threads.push(std::thread::spawn(move || {
                for i in 0..20u64 {
                    let flag = Arc::new(AtomicBool::new(false));
                    let d = us((round * 7 + th * 13 + i * 301) % 3000);
                    let t = armed(timer.timeout(d, Flag(flag.clone())), &waker);
                    if i % 5 != 4 {
                        tx.send((t, flag)).unwrap(); // else dropped here, armed
                    }
                }
            }));
        }
        drop(tx);
        for t in threads {
            t.join().unwrap();
        }
        let mut got: Vec<_> = rx.into_iter().collect();
        assert_counts(&timer, "after threads exit");
        assert_eq!(timer.len(), got.len());
        got.iter().step_by(4).for_each(|(_, f)| f.store(true, Ordering::SeqCst));
        got.retain_mut(|(t, _)| poll(t.as_mut(), &waker).is_pending());
        assert_counts(&timer, "completed");
        advance(&clock, &timer, ms(2));
        let now = timer.now();
        got.retain_mut(|(t, _)| {
            let due = t.deadline();
            match poll(t.as_mut(), &waker) {
                Poll::Pending => true,
                Poll::Ready(r) => {
                    assert!(r.is_err() && now >= due);
                    false
                }
            }
        });
        assert_counts(&timer, "half");
        std::thread::spawn(move || drop(got)).join().unwrap();
        assert_counts(&timer, "dropped elsewhere");
        advance(&clock, &timer, ms(5));
        assert_eq!(assert_counts(&timer, "end"), 0);
    }
}

/// Deadlines passed within the tick under way (and a tick before) elapse by the next advance, the
/// clock unmoved, also as members of a group; passed deadlines armed after their thread's group
/// of the tick they are filed at fired elapse at their first poll.
#[test]
fn passed_deadlines_mid_tick_elapse_by_the_next_advance_also_as_group_members() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (base, (count, waker)) = (timer.now(), CountingWaker::new());
    advance(&clock, &timer, us(2500));
    // Passed at 2.5 ms: two within the tick under way (a group), one a tick before.
    let mut passed: Vec<_> =
        [2200, 2300, 1200].map(|at| armed(timer.timeout_at(base + us(at), pending::<()>()), &waker)).into();
    assert_eq!(timer.len(), 3);
    timer.advance_clock(Duration::ZERO);
    assert_eq!(count.count(), 3);
    assert!(passed.iter_mut().all(|t| poll(t.as_mut(), &waker).is_ready()));
    // The group of the tick ending at 3 ms fires.
    let mut due: Vec<_> =
        [2800, 2900].map(|at| armed(timer.timeout_at(base + us(at), pending::<()>()), &waker)).into();
    advance(&clock, &timer, us(500));
    assert!(due.iter_mut().all(|t| poll(t.as_mut(), &waker).is_ready()));
    clock.advance(us(400)); // 3.4 ms: passed in the tick under way, filed at the fired tick
    let mut late: Vec<_> =
        [3300, 3350].map(|at| armed(timer.timeout_at(base + us(at), pending::<()>()), &waker)).into();
    timer.advance_clock(Duration::ZERO);
    assert!(late.iter_mut().all(|t| poll(t.as_mut(), &waker).is_ready()));
    let mut again = Box::pin(timer.timeout_at(base + us(3380), pending::<()>()));
    assert!(poll(again.as_mut(), &waker).is_ready(), "its thread's group of its tick fired");
    assert_counts(&timer, "passed");
}

/// An interval whose start is beyond the range ticks once a reset brings it in; after the timer
/// is dropped, resets and polls of sleeps, intervals and timeouts never panic, never complete the
/// limit, and the inner futures still complete the timeouts.
#[test]
fn futures_outliving_their_timer_never_panic_and_their_inner_futures_still_win() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (_, waker) = CountingWaker::new();
    let far = timer.now() + timer.max_delay() + Duration::from_secs(5);
    let mut iv = timer.interval_at(far, ms(5));
    let mut cx = Context::from_waker(&waker);
    assert!(iv.poll_tick(&mut cx).is_pending());
    assert_eq!(timer.len(), 0);
    iv.reset();
    assert_eq!(timer.len(), 1);
    advance(&clock, &timer, ms(5));
    assert!(iv.poll_tick(&mut cx).is_ready());
    let mut s = timer.sleep(ms(5));
    let flag = Arc::new(AtomicBool::new(false));
    let mut t = Box::pin(timer.timeout(ms(5), Flag(flag.clone())));
    let mut u = armed(timer.timeout(ms(5), Flag(flag.clone())), &waker);
    drop(timer);
    assert!(poll(t.as_mut(), &waker).is_pending());
    assert!(poll(u.as_mut(), &waker).is_pending());
    let _ = t.deadline();
    s.reset(Instant::now());
    assert_eq!(s.error(), Some(ScheduleError::ShutDown));
    assert!(poll(Pin::new(&mut s), &waker).is_pending());
    iv.reset();
    iv.reset_immediately();
    assert!(iv.poll_tick(&mut cx).is_pending());
    flag.store(true, Ordering::SeqCst);
    assert!(matches!(poll(t.as_mut(), &waker), Poll::Ready(Ok(()))));
    assert!(matches!(poll(u.as_mut(), &waker), Poll::Ready(Ok(()))));
}

/// Timeouts awaited on tokio workers, with a `Timer::drive` future advancing a manual timer as
/// the manual clock moves: each elapses, never before its deadline on that clock.
#[test]
fn timeouts_on_a_drive_future_elapse_as_a_manual_clock_moves() {
    let clock = ManualClock::new();
    let timer = Arc::new(Timer::builder().tick(ms(1)).clock(clock.clone()).manual().build());
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let drive = rt.spawn(timer.drive(|at: Instant| tokio::time::sleep_until(at.into())));
    let base = timer.now();
    let joins: Vec<_> = (0..200u64)
        .map(|i| {
            let timer = Arc::clone(&timer);
            let due = base + us(i * 37 % 5000);
            rt.spawn(async move {
                assert!(timer.timeout_at(due, pending::<()>()).await.is_err());
                assert!(timer.now() >= due, "elapsed before its deadline");
            })
        })
        .collect();
    for step in 0.. {
        if joins.iter().all(|j| j.is_finished()) {
            break;
        }
        assert!(step < 10_000, "a timeout never elapsed");
        clock.advance(ms(1));
        std::thread::sleep(ms(2));
    }
    for j in joins {
        rt.block_on(j).unwrap();
    }
    assert_counts(&timer, "drive");
    drop(Arc::try_unwrap(timer).expect("the tasks are done"));
    rt.block_on(drive).unwrap();
}

/// Sleeps (some reset), lazy timeouts (some raced in a `select!`) and intervals on tokio's
/// workers against a timer with its own driver: never early, and the counts exact at the end.
fn stress(builder: TimerBuilder, seed: u64) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(4).enable_all().build().unwrap();
    let timer = Arc::new(builder.build());
    rt.block_on(async {
        let mut joins = Vec::new();
        for task in 0..64u64 {
            let timer = Arc::clone(&timer);
            joins.push(tokio::spawn(async move {
                let mut rng = SplitMix(seed << 32 | task);
                let mut next = move || rng.next();
                for _ in 0..150 {
                    let d = us(next() % 3000);
                    let inner = us(next() % 3000);
                    let start = Instant::now();
                    match next() % 4 {
                        0 => {
                            if timer.timeout(d, tokio::time::sleep(inner)).await.is_err() {
                                assert!(start.elapsed() >= d, "timeout early");
                            }
                        }
                        1 => {
                            let t = timer.timeout_at(start + d, tokio::time::sleep(inner));
                            tokio::select! {
                                r = t => if r.is_err() { assert!(Instant::now() >= start + d) },
                                _ = tokio::time::sleep(inner / 2) => {}
                            }
                        }
                        2 => {
                            let mut s = timer.sleep(d);
                            tokio::select! {
                                _ = &mut s => assert!(start.elapsed() >= d, "sleep early"),
                                _ = tokio::time::sleep(inner) => {
                                    let at = Instant::now() + d;
                                    s.reset(at);
                                    (&mut s).await;
                                    assert!(Instant::now() >= at, "reset early");
                                }
                            }
                        }
                        _ => {
                            let mut iv = timer.interval(d.max(ms(1)));
                            iv.set_missed_tick_behavior(MissedTickBehavior::Skip);
                            for _ in 0..3 {
                                let due = iv.tick().await;
                                assert!(Instant::now() >= due, "tick early");
                            }
                        }
                    }
                }
            }));
        }
        for j in joins {
            j.await.unwrap();
        }
    });
    drop(rt);
    // The driver may still be closing the batch that woke the last future (its counts are written
    // after the claims): exact once no call is in flight, here once the shutdown joined the driver.
    assert!(timer.shutdown().is_empty());
    assert_eq!((assert_counts(&timer, "stress"), timer.stats().abandoned), (0, 0));
}

#[test]
fn futures_on_tokio_workers_are_never_early_and_counts_end_exact_on_the_driver() {
    stress(Timer::builder().tick(ms(1)).wheel_size(8), 1);
}

#[test]
fn futures_on_tokio_workers_are_never_early_and_counts_end_exact_on_executor_threads() {
    stress(Timer::builder().tick(ms(1)).wheel_size(4).execution(TaskExecution::Threads(2)), 2);
}

/// Instants far beyond the range never panic: sleeps and intervals are dead, timeouts never
/// elapse, nothing counts. Zero limits mid-tick elapse by the next advance, the clock unmoved;
/// a nanosecond limit waits for its tick.
#[test]
fn instants_beyond_the_range_never_panic_and_zero_limits_elapse_by_the_next_advance() {
    let (clock, timer) = manual_timer(ms(1), 8);
    let (count, waker) = CountingWaker::new();
    let mut cx = Context::from_waker(&waker);
    for secs in [u64::MAX / 4, u64::MAX / 2, 1 << 40, timer.max_delay().as_secs() + 2] {
        let Some(huge) = timer.now().checked_add(Duration::from_secs(secs)) else { continue };
        let mut s = timer.sleep_until(huge);
        assert!(s.error().is_some() && timer.try_sleep_until(huge).is_err(), "{secs}");
        assert_eq!(s.deadline(), huge);
        let t = armed(timer.timeout_at(huge, pending::<()>()), &waker);
        assert_eq!(t.deadline(), huge);
        let mut iv = timer.interval_at(huge, Duration::MAX);
        assert!(iv.poll_tick(&mut cx).is_pending());
        iv.reset_at(huge);
        iv.reset_after(Duration::MAX);
        assert!(iv.poll_tick(&mut cx).is_pending());
        s.reset(huge);
        assert!(poll(Pin::new(&mut s), &waker).is_pending());
        assert_eq!(timer.len(), 0);
    }
    advance(&clock, &timer, us(2500));
    let zero = || pending::<()>();
    let mut due = [
        armed(timer.timeout(Duration::ZERO, zero()), &waker),
        armed(timer.timeout(Duration::ZERO, zero()), &waker),
        armed(timer.try_timeout(Duration::ZERO, zero()).unwrap(), &waker),
    ];
    let mut nano = armed(timer.timeout(Duration::from_nanos(1), zero()), &waker);
    let mut s = timer.sleep(Duration::ZERO);
    assert!(poll(Pin::new(&mut s), &waker).is_pending());
    assert_eq!(timer.len(), 5);
    let before = count.count();
    timer.advance_clock(Duration::ZERO);
    assert_eq!(count.count(), before + 4);
    assert!(due.iter_mut().all(|t| poll(t.as_mut(), &waker).is_ready()));
    assert!(poll(Pin::new(&mut s), &waker).is_ready());
    assert!(poll(nano.as_mut(), &waker).is_pending());
    advance(&clock, &timer, us(500));
    assert!(poll(nano.as_mut(), &waker).is_ready());
    assert_counts(&timer, "zero");
}

/// Timeouts armed up to 0.7 s out on a two-slot wheel (many levels), the clock moving mid-tick
/// while arming: each elapses never early and never a tick late as the clock steps by a tick.
#[test]
fn members_on_coarse_levels_are_never_early_nor_a_tick_late() {
    let (clock, timer) = manual_timer(ms(1), 2);
    let base = timer.now();
    let (_, waker) = CountingWaker::new();
    let mut all = Vec::new();
    for i in 0..600u64 {
        let d = us(i * 1733 % 700_000 + 1);
        let t = armed(timer.timeout(d, pending::<()>()), &waker);
        if i % 7 == 3 {
            clock.advance(us(300));
        }
        let due = t.deadline() - base;
        all.push((t, due));
    }
    let check = |all: &mut Vec<(Limited<Pending<()>>, Duration)>| {
        timer.advance_clock(Duration::ZERO);
        let now = clock.now();
        all.retain_mut(|(t, due)| {
            let ready = poll(t.as_mut(), &waker).is_ready();
            let boundary = Duration::from_nanos((due.as_nanos().div_ceil(1_000_000) * 1_000_000) as u64);
            if ready {
                assert!(*due <= now, "early: due {due:?} now {now:?}");
            } else {
                assert!(boundary > now, "late: due {due:?} now {now:?}");
            }
            !ready
        });
        assert_counts(&timer, "coarse");
    };
    check(&mut all);
    while !all.is_empty() {
        let to = Duration::from_millis(clock.now().as_millis() as u64 + 1);
        clock.advance(to - clock.now());
        check(&mut all);
    }
}
