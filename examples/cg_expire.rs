use delaywheel::{ManualClock, Timer};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
static FIRED: AtomicU64 = AtomicU64::new(0);
fn main() {
    let n: u64 = std::env::var("N").ok().and_then(|v| v.parse().ok()).unwrap_or(200_000);
    let clock = ManualClock::new();
    let timer = Timer::builder().clock(clock.clone()).manual().build();
    let counter = &FIRED;
    let mut x: u64 = 12345;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let delay = Duration::from_micros(x % 1_000_000);
        drop(timer.schedule(delay, move || {
            counter.fetch_add(1, Ordering::Relaxed);
        }));
    }
    for _ in 0..1001 {
        clock.advance(Duration::from_millis(1));
        timer.advance_clock(Duration::ZERO);
    }
    assert_eq!(FIRED.load(Ordering::Relaxed), n);
}
