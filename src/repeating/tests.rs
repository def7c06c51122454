//! Unit tests of `repeating.rs` that look at a handle's state.

use super::*;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// The first run is due at the grid's first instant, the one later runs count from, also
/// while another thread moves the clock between readings: one reading gives both.
#[test]
fn the_first_run_is_due_at_the_grids_first_instant_while_the_clock_moves() {
    let (clock, tick) = (crate::ManualClock::new(), Duration::from_millis(5));
    let timer = Timer::builder().tick(tick).clock(clock.clone()).manual().build();
    let stop = AtomicBool::new(false);
    let (started, limit) = (Instant::now(), Duration::from_secs(5));
    // (Also stopped by the time limit, should an assertion fail.)
    let moving = || !stop.load(Relaxed) && started.elapsed() < limit;
    std::thread::scope(|s| {
        s.spawn(|| (0..).take_while(|_| moving()).for_each(|_| clock.advance(tick / 5000)));
        let mut moved = 0; // until the clock moved during 3000 calls, or the limit
        let every = [Repeat::Every(tick, MissedTickBehavior::Delay), Repeat::FixedDelay(tick)];
        for repeat in [Repeat::FixedRate(tick)].into_iter().chain(every).cycle() {
            let before = clock.now();
            let handle = timer.schedule_repeating(tick + tick / 2, repeat, || {});
            moved += usize::from(clock.now() != before);
            let state = handle.ctx.state.lock();
            assert_eq!(state.current.as_ref().and_then(TimerHandle::deadline), Some(state.due), "{repeat:?}");
            drop(state);
            assert!(handle.cancel());
            if moved == 3_000 || started.elapsed() > limit {
                break;
            }
        }
        stop.store(true, Relaxed);
        // Not vacuous: some calls read the clock at two instants.
        assert!(moved > 0, "the clock never moved during a call");
    });
}
