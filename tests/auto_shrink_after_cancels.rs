//! The driver's automatic shrink after a burst that was cancelled: a timer whose tasks were all
//! cancelled has nothing due until the cancelled tasks' buckets come round (here a minute away),
//! and its driver gives the burst's memory back within about a second all the same, without a
//! `Timer::shrink()` call. The only test of its binary (it reads the process's RSS).

#![cfg(target_os = "linux")]

mod common;

use std::time::{Duration, Instant};

use common::rss;
use delaywheel::Timer;

#[test]
fn a_cancelled_burst_is_given_back_by_the_driver_within_seconds() {
    const BURST: usize = 200_000;
    let timer = Timer::builder().tick(Duration::from_millis(1)).build();
    let mut handles = Vec::with_capacity(BURST);
    // Written once, so that the handles' buffer is resident in "before".
    handles.resize(BURST, timer.schedule(Duration::from_secs(60), || {}));
    assert!(handles[0].cancel());
    handles.clear();
    let before = rss();
    // 64-byte tasks: a slot and a block of the task slab each, 22 MB in all.
    handles.extend((0..BURST).map(|k| {
        let words = [k as u64; 7];
        timer.schedule(Duration::from_secs(60), move || {
            std::hint::black_box(words);
        })
    }));
    let peak = rss();
    assert!(peak - before >= BURST * 100, "the burst is resident: {before} -> {peak}");
    assert!(handles.iter().all(|h| h.cancel()));
    let bound = before + 2_000_000 + before / 10;
    let give_up = Instant::now() + Duration::from_secs(5);
    let mut now = rss();
    while now > bound && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(20));
        now = rss();
    }
    assert!(
        now <= bound,
        "RSS {before} before the burst, {peak} at its peak, {now} 5 s after it was cancelled"
    );
    assert!(timer.is_empty());
}
