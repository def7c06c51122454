//! `TimerBuilder::capacity` and `Timer::shrink`: the room a timer is built with stays through a
//! shrink (the warm-up is not undone by the first lull after a burst); what a burst added beyond
//! it goes back. The only test of its binary, so that no other test's memory moves the process's
//! RSS meanwhile.

mod common;

use std::time::Duration;

#[cfg(target_os = "linux")]
use common::rss;
use delaywheel::Timer;

#[test]
#[cfg(target_os = "linux")]
fn a_shrink_keeps_the_capacity_and_gives_back_what_a_burst_added_beyond_it() {
    const N: usize = 400_000;
    let timer = Timer::builder().manual().capacity(N).build();
    // A burst twice the capacity, cancelled: every slot free.
    let handles: Vec<_> = (0..2 * N).map(|_| timer.schedule(Duration::from_secs(30), || {})).collect();
    assert_eq!(handles.iter().filter(|h| h.cancel()).count(), 2 * N);
    drop(handles);
    let before = rss();
    timer.shrink();
    let after = rss();
    let given_back = before.saturating_sub(after);
    // The burst's second half: 48-byte slots, 19.2 MB (with the free lists' and the handles'
    // memory on top); the capacity's half stays.
    assert!(given_back >= N * 40, "the slots beyond the capacity stay: {given_back} bytes back");
    assert!(given_back < N * 80, "the capacity was given back too: {given_back} bytes back");
    // The room is still there: filling the capacity again adds (almost) no slot memory.
    let refilled: Vec<_> = (0..N).map(|_| timer.schedule(Duration::from_secs(30), || {})).collect();
    let grown = rss().saturating_sub(after);
    let handle = std::mem::size_of::<delaywheel::TimerHandle>();
    assert!(grown < N * (handle + 20), "scheduling into the kept capacity grew {grown} bytes");
    drop(refilled);
}
