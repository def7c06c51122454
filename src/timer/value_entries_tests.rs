//! The value entries on the core (`value_entries.rs`): each value out exactly once, a reset's and a
//! deadline's exact instants, a refused insert's value handed back, a clear's count, and a
//! batch's values handed to the sink with its panics counted.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{handle, FiredValue, ValueTicket};
use crate::timer::values::{FiredValues, ValueSink};
use crate::timer::{Timer, When};
use crate::{ManualClock, ScheduleError};

fn manual(max_pending: usize) -> (Timer, ManualClock) {
    let clock = ManualClock::new();
    let timer = Timer::builder().clock(clock.clone()).manual().max_pending(max_pending).build();
    (timer, clock)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn a_value_is_removed_once_with_its_exact_deadline() {
    let (timer, clock) = manual(usize::MAX);
    let base = timer.shared().time().clock.base();
    clock.advance(Duration::from_nanos(1_500));
    let ticket = timer.insert_value(When::After(ms(5)), String::from("a")).unwrap();
    assert_eq!(timer.len(), 1);
    let exact = 5_000_000 + 1_500;
    assert_eq!(timer.value_deadline(ticket), Some(base + Duration::from_nanos(exact)));
    assert_eq!(timer.remove_value::<String>(ticket), Some((String::from("a"), exact as i64)));
    assert_eq!(timer.remove_value::<String>(ticket), None);
    assert_eq!(timer.value_deadline(ticket), None);
    assert!(!timer.reset_value(ticket, When::After(ms(1))));
    assert_eq!(timer.len(), 0);
}

#[test]
fn a_reset_moves_the_exact_deadline_with_the_entry() {
    let (timer, clock) = manual(usize::MAX);
    let base = timer.shared().time().clock.base();
    let ticket = timer.insert_value(When::After(ms(5)), 7u32).unwrap();
    assert!(timer.reset_value(ticket, When::After(ms(20))));
    assert_eq!(timer.value_deadline(ticket), Some(base + ms(20)));
    clock.advance(ms(3));
    assert!(timer.reset_value(ticket, When::At(base + ms(4))));
    assert_eq!(timer.value_deadline(ticket), Some(base + ms(4)));
    assert_eq!(timer.remove_value::<u32>(ticket), Some((7, 4_000_000)));
}

#[test]
fn a_refused_insert_hands_the_value_back() {
    let (timer, _clock) = manual(1);
    let first = timer.insert_value(When::After(ms(1)), vec![1u8]).unwrap();
    let refused = timer.insert_value(When::After(ms(1)), vec![2u8]).err();
    assert_eq!(refused, Some((vec![2u8], ScheduleError::TooManyPending { max: 1 })));
    let (value, error) = timer.insert_value(When::After(Duration::MAX), vec![3u8]).err().unwrap();
    assert_eq!(value, vec![3u8]);
    assert!(matches!(error, ScheduleError::DelayTooLong { .. }));
    assert_eq!(timer.len(), 1);
    assert_eq!(timer.remove_value::<Vec<u8>>(first).map(|(value, _)| value), Some(vec![1u8]));
    assert_eq!(timer.len(), 0);
}

#[test]
fn a_clear_takes_every_value_and_no_task() {
    let (timer, _clock) = manual(usize::MAX);
    let tickets: Vec<_> = (0..3u64).map(|i| timer.insert_value(When::After(ms(i)), i).unwrap()).collect();
    let task = timer.schedule(ms(2), || {});
    assert_eq!(timer.clear_values(|n| n), 3);
    assert_eq!(timer.len(), 1, "the plain task stays");
    assert!(tickets.iter().all(|&ticket| timer.remove_value::<u64>(ticket).is_none()));
    assert!(task.cancel());
}

/// A sink that keeps what it is handed and reports `panics` wakes that panicked.
struct Recording(Arc<Mutex<Vec<(u32, ValueTicket, Instant)>>>, u64);

impl ValueSink for Recording {
    fn deliver(&self, fired: &mut FiredValues<'_>) -> u64 {
        self.0.lock().unwrap().extend(fired.drain::<u32>());
        self.1
    }

    fn closed(&self, _abandoned: &mut dyn FnMut() -> u64) -> u64 {
        0
    }
}

/// `values` inserted `delay` ms ahead, taken out of their entries as an advance's claims take them.
fn fired(timer: &Timer, values: &[u32], delay: u64) -> Vec<FiredValue> {
    let shared = timer.shared();
    let out = values.iter().map(|&value| {
        let ticket = timer.insert_value(When::After(ms(delay)), value).unwrap();
        let (deadline, _) = handle::deadline_of(&ticket.0).unwrap();
        FiredValue { task: handle::cancel_take(&ticket.0).unwrap(), ticket, deadline }
    });
    let out = out.collect();
    assert_eq!(shared.len(), 0);
    out
}

#[test]
fn a_batch_reaches_the_sink_in_order_with_its_panics_counted() {
    let (timer, _clock) = manual(usize::MAX);
    let shared = timer.shared();
    let base = shared.time().clock.base();
    let seen = Arc::new(Mutex::new(Vec::new()));
    timer.set_value_sink(Box::new(Recording(Arc::clone(&seen), 2)));
    let mut batch = fired(&timer, &[3, 1, 2], 5);
    let tickets: Vec<_> = batch.iter().map(|fired| fired.ticket).collect();
    shared.deliver_values(&mut batch);
    assert!(batch.is_empty());
    let seen = seen.lock().unwrap();
    let expected: Vec<_> = [3, 1, 2].into_iter().zip(tickets).map(|(v, t)| (v, t, base + ms(5))).collect();
    assert_eq!(*seen, expected);
    assert_eq!(shared.tallies.panicked.load(std::sync::atomic::Ordering::Relaxed), 2);
}

/// A value whose drop panics.
#[derive(Debug)]
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("a value's drop");
    }
}

#[test]
fn without_a_sink_the_values_are_dropped_and_their_panics_counted() {
    let (timer, _clock) = manual(usize::MAX);
    let shared = timer.shared();
    let ticket = timer.insert_value(When::After(ms(1)), Bomb).unwrap();
    let (deadline, _) = handle::deadline_of(&ticket.0).unwrap();
    let task = handle::cancel_take(&ticket.0).unwrap();
    shared.deliver_values(&mut vec![FiredValue { task, ticket, deadline }]);
    assert_eq!(shared.tallies.panicked.load(std::sync::atomic::Ordering::Relaxed), 1);
}
