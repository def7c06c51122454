//! A guided tour of a hierarchical timing wheel: where each task sits, level and slot, as the
//! clock advances and the tasks cascade down to firing.
//!
//! ```text
//! cargo run --release --example cascade_tour
//! ```
//!
//! The configuration is the classic three-level wheel of the timing-wheel articles: a **10 ms**
//! tick and **60** slots per level, so level 0 spans 600 ms (slots of 10 ms), level 1 spans 36 s
//! (slots of 600 ms), level 2 spans 36 min (slots of 36 s), and a fourth level (slots of 36 min) is
//! created lazily for the farthest task. Five tasks are scheduled at time 0: in 500 ms, 5 s, 20 s,
//! 40 s and 40 min.
//!
//! The timer runs on a [`ManualClock`] with no driver thread, so the tour is deterministic: it
//! jumps the clock straight to the next moment a bucket is due (the delay queue never ticks
//! through empty slots either), calls `advance_clock`, and prints every task's
//! [`WheelPosition`](delaywheel::WheelPosition) (a diagnostic view, read with
//! `TimerHandle::position`). Watch a task's bucket expire, its entry get re-added relative to the
//! new time, land in a finer level, and finally fire exactly at its deadline. (A deadline that
//! falls exactly on the start of a coarse slot, like the 40 min one, fires straight from that
//! level: once its bucket expires, it is due.)

use std::sync::{Arc, Mutex};
use std::time::Duration;

use delaywheel::{ManualClock, Timer, TimerHandle};

const TICK: Duration = Duration::from_millis(10);
const SLOTS: usize = 60;

fn main() {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(TICK).wheel_size(SLOTS).clock(clock.clone()).manual().build();

    println!("A hierarchical timing wheel: tick {TICK:?}, {SLOTS} slots per level.");
    let mut slot_len = TICK;
    for level in 0..4 {
        println!(
            "  level {level}: slots of {:>10}, spans {:>10}",
            human(slot_len),
            human(slot_len * SLOTS as u32)
        );
        slot_len *= SLOTS as u32;
    }
    println!("A task goes to the finest level whose window (aligned to that level) holds its deadline;");
    println!("its bucket expires at the start of the task's slot. When the bucket expires, the task is");
    println!("re-added relative to the new time: it cascades down, or fires if its deadline has come.\n");

    let fired: Arc<Mutex<Vec<(&str, Duration)>>> = Arc::default();
    let tasks: Vec<(&'static str, TimerHandle)> = [
        ("500 ms", Duration::from_millis(500)),
        ("5 s", Duration::from_secs(5)),
        ("20 s", Duration::from_secs(20)),
        ("40 s", Duration::from_secs(40)),
        ("40 min", Duration::from_secs(40 * 60)),
    ]
    .into_iter()
    .map(|(name, delay)| {
        let (fired, clock) = (Arc::clone(&fired), clock.clone());
        (name, timer.schedule(delay, move || fired.lock().unwrap().push((name, clock.now()))))
    })
    .collect();

    println!("t = {}: scheduled five tasks", human(clock.now()));
    print_positions(&tasks);

    // Jump from one bucket expiration to the next, as the driver's delay queue does.
    while let Some(next_tick) =
        tasks.iter().filter_map(|(_, h)| h.position()).map(|p| p.expiration_tick).min()
    {
        clock.advance_to(TICK * next_tick as u32);
        let due: Vec<String> = tasks
            .iter()
            .filter_map(|(name, h)| {
                h.position().filter(|p| p.expiration_tick == next_tick).map(|p| (name, p))
            })
            .map(|(name, p)| format!("level {} slot {} ({name})", p.level, p.slot))
            .collect();
        timer.advance_clock(Duration::ZERO);
        println!("\nt = {}: the bucket{} {} expired", human(clock.now()), plural(due.len()), due.join(", "));
        for (name, at) in fired.lock().unwrap().drain(..) {
            println!("  ** task {name} FIRED at {} **", human(at));
        }
        print_positions(&tasks);
    }

    let stats = timer.stats();
    println!(
        "\nAll {} tasks fired, each exactly at its deadline (lateness max {:?}); {} wheel levels were created.",
        stats.fired, stats.lateness.max, stats.levels_in_use
    );
    assert_eq!(stats.fired, 5);
    assert_eq!(stats.lateness.max, Duration::ZERO);
}

fn print_positions(tasks: &[(&str, TimerHandle)]) {
    let pending: Vec<_> = tasks.iter().filter_map(|(name, h)| h.position().map(|p| (name, p))).collect();
    if pending.is_empty() {
        return;
    }
    println!("  {:<8} {:>13} {:>6} {:>5} {:>16}", "task", "deadline", "level", "slot", "bucket expires");
    for (name, p) in pending {
        println!(
            "  {:<8} {:>13} {:>6} {:>5} {:>16}",
            name,
            human(TICK * p.deadline_tick as u32),
            p.level,
            p.slot,
            human(TICK * p.expiration_tick as u32)
        );
    }
}

/// `1 h 2 min 23.450 s`-style times.
fn human(d: Duration) -> String {
    let ms = d.as_millis();
    let (h, min, rest) = (ms / 3_600_000, ms / 60_000 % 60, ms % 60_000);
    let mut out = String::new();
    if h > 0 {
        out += &format!("{h} h ");
    }
    if h > 0 || min > 0 {
        out += &format!("{min} min ");
    }
    out + &format!("{}.{:03} s", rest / 1_000, rest % 1_000)
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
