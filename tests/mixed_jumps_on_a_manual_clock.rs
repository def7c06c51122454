//! A simulation on a manual clock holding every kind of timed thing at once on one timer: callbacks
//! that, as they run, cancel other callbacks or re-arm them (later, or to an instant already
//! passed), sleeps polled by hand and re-armed from outside, intervals of each
//! `MissedTickBehavior`, and the values of a delay queue on the same timer, re-armed too. The
//! simulation jumps the clock from one `next_wakeup()` to the next.
//!
//! At every jump: `next_wakeup()` is never after the earliest tick anything is due at; the first
//! advance fires, wakes and hands out exactly what is due by then (the tick boundary at or after its
//! deadline), nothing due later; a sleep is ready only once woken; what a callback re-armed to a
//! passed instant during that advance comes by the next one. Ticks and wheel sizes vary (two-slot
//! wheels with 7 µs ticks, the seeds' 10 ms × 60).
#![cfg(feature = "async")]

mod common;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use common::waker::CountingWaker;
use common::SplitMix;
use delaywheel::queue::{DelayQueue, Key};
use delaywheel::{ManualClock, MissedTickBehavior, Timer, TimerHandle};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Callback {
    Pending(Instant),
    Fired,
    Cancelled,
}

/// The callbacks' handles and states, shared with the callbacks themselves.
#[derive(Default)]
struct Callbacks {
    handles: Vec<TimerHandle>,
    states: Vec<Callback>,
}

fn nanos(d: Duration) -> u64 {
    d.as_nanos() as u64
}

/// Callback `id`: checks it was pending, then cancels or re-arms another one.
fn callback(
    shared: &Arc<Mutex<Callbacks>>,
    id: usize,
    seed: u64,
    base: Instant,
    clock: &ManualClock,
    span: u64,
) -> impl FnOnce() + Send + 'static {
    let (shared, clock) = (Arc::clone(shared), clock.clone());
    move || {
        let mut rng = SplitMix(seed);
        let mut calls = shared.lock().unwrap();
        let now = base + clock.now();
        match calls.states[id] {
            Callback::Pending(due) => assert!(now >= due, "callback {id} ran early"),
            other => panic!("callback {id} ran when {other:?}"),
        }
        calls.states[id] = Callback::Fired;
        let other = rng.range(0, calls.handles.len() as u64) as usize;
        let handle = calls.handles[other].clone();
        if rng.next() % 3 == 0 {
            if handle.cancel() {
                assert!(matches!(calls.states[other], Callback::Pending(_)));
                calls.states[other] = Callback::Cancelled;
            }
        } else {
            let elapsed = nanos(clock.now());
            let at = if rng.next() % 2 == 0 {
                now - Duration::from_nanos(rng.range(0, elapsed / 2 + 1))
            } else {
                now + Duration::from_nanos(rng.range(0, span / 4))
            };
            if handle.reset_at(at) {
                assert!(
                    matches!(calls.states[other], Callback::Pending(_)),
                    "callback {other} re-armed when {:?}",
                    calls.states[other]
                );
                calls.states[other] = Callback::Pending(at);
            }
        }
    }
}

fn run(seed: u64, tick: Duration, wheel: usize) {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(tick).wheel_size(wheel).clock(clock.clone()).manual().build();
    let queue: DelayQueue<usize> = DelayQueue::with_timer(timer);
    let timer = queue.timer();
    let base = timer.now();
    let at_tick = |at: Instant| base + common::ceil_to_tick(at - base, tick);
    let mut rng = SplitMix(seed);
    let span = nanos(tick) * (wheel * wheel * 2) as u64;
    let some_time = |rng: &mut SplitMix, upto: u64| Duration::from_nanos(rng.range(0, upto));
    let end = base + Duration::from_nanos(span * 2);

    let shared = Arc::new(Mutex::new(Callbacks::default()));
    for id in 0..60 {
        let at = base + some_time(&mut rng, span);
        let task = callback(&shared, id, rng.next(), base, &clock, span);
        let handle = timer.schedule_at(at, task);
        let mut calls = shared.lock().unwrap();
        calls.handles.push(handle);
        calls.states.push(Callback::Pending(at));
    }
    let mut sleeps: Vec<_> = (0..20)
        .map(|_| {
            let mut sleep = timer.sleep_until(base + some_time(&mut rng, span));
            let (woken, waker) = CountingWaker::new();
            assert!(Pin::new(&mut sleep).poll(&mut Context::from_waker(&waker)).is_pending());
            (sleep, woken, waker, false)
        })
        .collect();
    let behaviours = [MissedTickBehavior::Burst, MissedTickBehavior::Delay, MissedTickBehavior::Skip];
    let mut intervals: Vec<_> = behaviours
        .iter()
        .map(|&behaviour| {
            let period = Duration::from_nanos(rng.range(nanos(tick) / 3 + 1, span / 4));
            let mut interval = timer.interval_at(base + some_time(&mut rng, span / 4), period);
            interval.set_missed_tick_behavior(behaviour);
            (interval, CountingWaker::new().1)
        })
        .collect();
    let mut values: HashMap<usize, (Key, Instant)> = HashMap::new();
    for value in 0..30 {
        let at = base + some_time(&mut rng, span);
        values.insert(value, (queue.insert_at(value, at), at));
    }

    while timer.now() < end {
        // The user moves things from outside between jumps.
        if rng.next() % 3 == 0 {
            let k = rng.range(0, sleeps.len() as u64) as usize;
            let at = timer.now() + some_time(&mut rng, span / 3);
            let (sleep, _, waker, done) = &mut sleeps[k];
            sleep.reset(at);
            *done = false;
            assert!(Pin::new(sleep).poll(&mut Context::from_waker(waker)).is_pending() || at <= timer.now());
        }
        if rng.next() % 4 == 0 {
            let value = rng.range(0, 30) as usize;
            if let Some(&(key, _)) = values.get(&value) {
                let at = timer.now() + some_time(&mut rng, span / 3);
                if queue.reset_at(&key, at) {
                    values.insert(value, (key, at));
                }
            }
        }
        let before = shared.lock().unwrap().states.clone();
        let earliest = before
            .iter()
            .filter_map(|state| if let Callback::Pending(at) = state { Some(*at) } else { None })
            .chain(sleeps.iter().filter(|s| !s.3).map(|s| s.0.deadline()))
            .chain(values.values().map(|&(_, at)| at))
            .map(at_tick)
            .min();
        let next = timer.next_wakeup();
        if let Some(earliest) = earliest {
            let next = next
                .unwrap_or_else(|| panic!("seed {seed}: no next_wakeup, work due at {:?}", earliest - base));
            assert!(
                next <= earliest.max(timer.now()),
                "seed {seed}: next_wakeup {:?} after the work at {:?}",
                next - base,
                earliest - base
            );
        }
        let to = next.map_or(timer.now() + tick * 3, |next| next.max(timer.now()));
        clock.advance_to(to - base);
        let now = timer.now();
        timer.advance_clock(Duration::ZERO);

        for (k, (sleep, woken, waker, done)) in sleeps.iter_mut().enumerate().filter(|s| !s.1 .3) {
            let ready = Pin::new(&mut *sleep).poll(&mut Context::from_waker(waker)).is_ready();
            assert_eq!(
                ready,
                at_tick(sleep.deadline()) <= now,
                "seed {seed}: sleep {k} due {:?}, now {:?}",
                sleep.deadline() - base,
                now - base
            );
            if ready {
                assert!(woken.count() > 0, "seed {seed}: sleep {k} ready but never woken");
                *done = true;
            }
        }
        for (k, (interval, waker)) in intervals.iter_mut().enumerate() {
            while let Poll::Ready(due) = interval.poll_tick(&mut Context::from_waker(waker)) {
                assert!(due <= now, "seed {seed}: interval {k} ticked {:?} early", due - now);
            }
        }
        while let Some(expired) = queue.try_recv() {
            let (_, at) = values.remove(expired.get_ref()).expect("a value came out twice");
            assert!(
                expired.deadline() == at && at <= now,
                "seed {seed}: value due {:?} came at {:?}",
                at - base,
                now - base
            );
        }
        for (value, &(_, at)) in &values {
            assert!(
                at_tick(at) > now,
                "seed {seed}: value {value} due {:?} not out at {:?}",
                at - base,
                now - base
            );
        }
        let after_first = shared.lock().unwrap().states.clone();
        for (id, state) in after_first.iter().enumerate() {
            if let Callback::Pending(at) = state {
                assert!(
                    before[id] != *state || at_tick(*at) > now,
                    "seed {seed}: callback {id} due {:?} not run by the first advance at {:?}",
                    *at - base,
                    now - base
                );
            }
        }
        timer.advance_clock(Duration::ZERO);
        for (id, state) in shared.lock().unwrap().states.iter().enumerate() {
            if let Callback::Pending(at) = state {
                assert!(
                    at_tick(*at) > now,
                    "seed {seed}: callback {id} re-armed to {:?} not run by the second advance at {:?}",
                    *at - base,
                    now - base
                );
            }
        }
    }
    drop((intervals, sleeps));
    let pending = shared.lock().unwrap().states.iter().filter(|s| matches!(s, Callback::Pending(_))).count();
    assert_eq!(timer.len(), pending + values.len(), "seed {seed}: the timer's count");
}

#[test]
fn every_kind_comes_at_its_tick_across_next_wakeup_jumps() {
    let shapes = [
        (Duration::from_millis(1), 8),
        (Duration::from_micros(10), 2),
        (Duration::from_millis(10), 60),
        (Duration::from_micros(7), 3),
    ];
    for seed in 0..150 {
        for (tick, wheel) in shapes {
            run(seed, tick, wheel);
        }
    }
}
