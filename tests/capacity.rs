//! `TimerBuilder::capacity`: a timer built with room for `n` tasks behaves as any other (exact
//! firing ticks, cancels), with its room allocated up front. Manual clocks throughout.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use delaywheel::{BuildError, ManualClock, Timer, MAX_CAPACITY};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn a_timer_built_with_capacity_fires_and_cancels_as_any_other() {
    let clock = ManualClock::new();
    let timer =
        Timer::builder().tick(ms(1)).wheel_size(8).clock(clock.clone()).manual().capacity(10_000).build();
    let fired = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..20_000u64)
        .map(|i| {
            let fired = Arc::clone(&fired);
            timer.schedule(ms(1 + i % 10), move || {
                fired.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();
    assert_eq!(timer.len(), 20_000, "more than the capacity is fine: it only grows");
    assert_eq!(handles.iter().step_by(2).filter(|h| h.cancel()).count(), 10_000);
    clock.advance(ms(9));
    timer.advance_clock(Duration::ZERO);
    // Odd-numbered tasks are left, with delays 2, 4, 6, 8 and 10 ms: four fifths are due by 9 ms.
    assert_eq!(fired.load(Ordering::SeqCst), 8_000, "ticks 1 to 9, odd-numbered tasks only");
    clock.advance(ms(1));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(fired.load(Ordering::SeqCst), 10_000);
    assert!(timer.is_empty());
}

#[test]
fn a_capacity_beyond_what_a_timer_holds_is_refused_before_anything_is_allocated() {
    for tasks in [MAX_CAPACITY + 1, usize::MAX] {
        let err = Timer::builder().manual().capacity(tasks).try_build().unwrap_err();
        assert!(matches!(err, BuildError::CapacityTooLarge(t) if t == tasks), "{err}");
        assert!(err.to_string().contains(&MAX_CAPACITY.to_string()), "{err}");
    }
}
