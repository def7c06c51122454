//! `TimerBuilder::capacity` in resident memory: the room is written when the timer is built, and
//! scheduling into it adds only what is not a slot. The only test of its binary, so that no other
//! test's memory moves the process's RSS meanwhile.

mod common;

use std::time::Duration;

#[cfg(target_os = "linux")]
use common::rss;
use delaywheel::Timer;

#[test]
#[cfg(target_os = "linux")]
fn capacity_is_resident_when_the_timer_is_built_and_scheduling_into_it_adds_little() {
    const N: usize = 400_000;
    let before = rss();
    let timer = Timer::builder().manual().capacity(N).build();
    let built = rss();
    // 48-byte slots: 19.2 MB written at build.
    assert!(built - before >= N * 40, "built: {} bytes more", built - before);
    let mut handles = Vec::with_capacity(N);
    let reserved = rss();
    handles.extend((0..N).map(|_| timer.schedule(Duration::from_secs(30), || {})));
    let scheduled = rss();
    // The handles (written into the vector), the bucket lists' 4 bytes a task and the other test
    // come to about 30 bytes a task; a cold timer would add its 48-byte slots on top.
    let grown = scheduled.saturating_sub(reserved);
    let handle = std::mem::size_of::<delaywheel::TimerHandle>();
    assert!(grown < N * (handle + 20), "scheduling {N} grew {grown} bytes ({handle}-byte handles)");
    drop(handles);
}
