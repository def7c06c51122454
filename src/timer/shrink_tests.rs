//! The shrink on the core (`stop.rs`, "Shrink"), as `shrink.rs` describes it: the driver's
//! automatic shrink once fewer than a quarter of the slots written hold a pending entry, in a lull
//! or after a second of such a low load, and the give-back after a stop. A shard's slab gives back
//! its vacant slots after its last occupied one, so the tasks these tests keep pending are the
//! first scheduled (the lowest slots of the test thread's shard).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::shard::{STEP_BYTES, STEP_SLOTS};
use crate::sync::Arc;
use crate::timer::shrink::{Steps, AUTO_INTERVAL, AUTO_LULL, AUTO_MIN_SLOTS, STEP_ROOM, STEP_WAIT};
use crate::{ManualClock, Timer, TimerHandle};

/// The driver's looks at the shrink, until the one it starts or has under way is done: how many
/// it took (one, when none starts).
fn shrink_if_spent(timer: &Timer) -> usize {
    let mut looks = 1;
    timer.shared().shrink_if_spent();
    while timer.shared().shrinking() {
        timer.shared().shrink_if_spent();
        looks += 1;
        assert!(looks < 10_000, "a shrink that never ends");
    }
    looks
}

/// A manual timer with enough tasks pending, 9 s out, for the driver's shrink to look at.
fn spiked() -> (ManualClock, Timer, Vec<TimerHandle>) {
    let clock = ManualClock::new();
    let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
    let handles = (0..4 * AUTO_MIN_SLOTS).map(|_| timer.schedule(Duration::from_secs(9), || {})).collect();
    (clock, timer, handles)
}

#[test]
fn the_drivers_shrink_waits_for_a_quarter_pending_then_gives_back() {
    let (_clock, timer, handles) = spiked();
    let slots = || timer.shared().core.slots();
    let written = slots();
    assert!(written >= handles.len());
    // More than a quarter pending: nothing happens.
    handles[handles.len() / 2..].iter().for_each(|h| assert!(h.cancel()));
    shrink_if_spent(&timer);
    assert_eq!(slots(), written);
    // Under a quarter: the vacant slots go.
    handles[10..handles.len() / 2].iter().for_each(|h| assert!(h.cancel()));
    shrink_if_spent(&timer);
    assert!(slots() < written / 4, "{} of {written} slots left", slots());
    let last = &handles[handles.len() - 1];
    assert!(!last.is_pending() && !last.cancel());
    assert!(handles[0].is_pending() && handles[9].is_pending(), "the tasks left are untouched");
    assert_eq!(timer.len(), 10);
}

#[test]
fn the_drivers_shrink_waits_for_a_lull_or_a_second_of_low_load() {
    let (clock, timer, handles) = spiked();
    let slots = || timer.shared().core.slots();
    let written = slots();
    handles[10..].iter().for_each(|h| assert!(h.cancel()));
    // Under a quarter pending, but a task is due within the lull: the driver keeps firing.
    let soon = timer.schedule(AUTO_LULL / 2, || {});
    shrink_if_spent(&timer);
    assert_eq!(slots(), written, "no shrink while a task is due within the lull");
    // Once it has fired, nothing is due for seconds: the shrink comes.
    clock.advance(AUTO_LULL);
    timer.advance_clock(Duration::ZERO);
    assert!(!soon.is_pending());
    shrink_if_spent(&timer);
    assert!(slots() < written / 4, "{} of {written} left", slots());

    // A load that stays low with tasks always due soon is shrunk after a second of it.
    let again: Vec<_> =
        (0..2 * AUTO_MIN_SLOTS).map(|_| timer.schedule(Duration::from_secs(20), || {})).collect();
    again.iter().for_each(|h| assert!(h.cancel()));
    let written = slots();
    let _soon = timer.schedule(AUTO_LULL / 2, || {});
    std::thread::sleep(AUTO_INTERVAL); // the shrink just made allows the next after this
    shrink_if_spent(&timer);
    assert_eq!(slots(), written, "low, but not for a second yet");
    std::thread::sleep(AUTO_INTERVAL);
    shrink_if_spent(&timer);
    assert!(slots() < written / 4, "{} of {written} left", slots());
}

/// A load with a task due within a step's time at every look (a task due every tick) leaves the
/// steps no room: once held off for a second, they go on anyway, and the shrink ends.
#[test]
fn a_task_due_at_every_look_holds_the_steps_off_for_a_second_only() {
    let (clock, timer, handles) = spiked();
    let slots = || timer.shared().core.slots();
    let written = slots();
    handles[10..].iter().for_each(|h| assert!(h.cancel()));
    // Due at the next tick, less than a step's room away (the clock a tenth of a tick past its
    // boundary, as after an advance), and never fired: the timer is not advanced.
    let _due = timer.schedule(STEP_ROOM / 2, || {});
    clock.advance(STEP_ROOM / 10);
    timer.shared().shrink_if_spent();
    std::thread::sleep(AUTO_INTERVAL);
    timer.shared().shrink_if_spent();
    assert!(timer.shared().shrinking(), "a second of low load: the shrink starts");
    timer.shared().shrink_if_spent();
    assert_eq!(slots(), written, "its steps held off by the task due");
    std::thread::sleep(AUTO_INTERVAL);
    shrink_if_spent(&timer);
    assert!(slots() < written / 4, "{} of {written} left", slots());
    assert!(handles[..10].iter().all(TimerHandle::is_pending));
}

/// The tasks of a spike: half of them capture 64 bytes (a task-slab block each). More than the
/// stop's shrink asks for ([`AUTO_MIN_SLOTS`]), within what a shard's slab holds in the unit tests
/// (65,536 slots: they all go to the test thread's shard).
const SPIKE: usize = 60_000;

/// A spike of [`SPIKE`] tasks due over the ten seconds after the next minute on `timer`, on a
/// driver thread or a manual clock; all their handles dropped but the one returned.
fn spike_on(timer: &Timer) -> TimerHandle {
    let words = [7u64; 8];
    let handles: Vec<_> = (0..SPIKE as u64)
        .map(|k| {
            let delay = Duration::from_millis(60_000 + k % 10_000);
            match k % 2 {
                0 => timer.schedule(delay, || {}),
                _ => timer.schedule(delay, move || {
                    std::hint::black_box(words);
                }),
            }
        })
        .collect();
    handles[SPIKE / 2].clone()
}

fn timer(driven: bool) -> Timer {
    let builder = Timer::builder().tick(Duration::from_millis(1));
    match driven {
        true => builder.build(),
        false => builder.clock(ManualClock::new()).manual().build(),
    }
}

/// A timer dropped with a spike pending while one of its handles stays: a handle holds nothing of
/// the timer, so the drop frees its state whole (the slots and the blocks with it), or, if its
/// driver thread still holds the state for a moment, the stop's shrink gives the drained slots
/// and blocks back. The handle finds its task ended.
#[test]
fn a_dropped_timers_slots_go_back_while_a_handle_stays() {
    for driven in [false, true] {
        let timer = timer(driven);
        let (core, slab) = (Arc::downgrade(&timer.shared().core), Arc::downgrade(&timer.shared().slab));
        let kept = spike_on(&timer);
        assert!(core.upgrade().unwrap().slots() >= SPIKE && slab.upgrade().unwrap().pages() > 0);
        assert!(kept.is_pending());
        drop(timer);
        assert!(driven || core.upgrade().is_none(), "nothing else holds a manual timer's core");
        if let Some(core) = core.upgrade() {
            assert_eq!(core.slots(), 0, "driven {driven}: the slots of a state kept go back");
        }
        if let Some(slab) = slab.upgrade() {
            assert_eq!(slab.pages(), 0, "driven {driven}: the blocks' pages go too");
        }
        assert!(!kept.is_pending() && !kept.cancel() && !kept.reset(Duration::from_millis(5)));
        assert_eq!(kept.deadline(), None);
    }
}

/// As above with a `Sleep` kept instead of a handle: it holds its timer's state, which the drop's
/// stop then shrinks; the sleep is dead (it never completes, `error` says why, a reset schedules
/// nothing), as `sleep.rs` says.
#[cfg(feature = "async")]
#[test]
fn a_dropped_timers_slots_go_back_while_a_sleep_stays() {
    use std::future::Future;
    use std::task::{Context, Poll};

    let timer = timer(false);
    let (core, slab) = (Arc::clone(&timer.shared().core), Arc::clone(&timer.shared().slab));
    let _ = spike_on(&timer);
    let mut sleep = timer.sleep(Duration::from_secs(1));
    let mut cx = Context::from_waker(futures::task::noop_waker_ref());
    assert_eq!(std::pin::Pin::new(&mut sleep).poll(&mut cx), Poll::Pending);
    assert!(core.slots() > SPIKE && slab.pages() > 0);
    drop(timer);
    assert_eq!(core.slots(), 0, "{} slots of {SPIKE} left", core.slots());
    assert_eq!(slab.pages(), 0);
    assert_eq!(std::pin::Pin::new(&mut sleep).poll(&mut cx), Poll::Pending);
    assert_eq!(sleep.error(), Some(crate::ScheduleError::ShutDown));
    sleep.reset(std::time::Instant::now());
    assert_eq!(std::pin::Pin::new(&mut sleep).poll(&mut cx), Poll::Pending);
    assert_eq!(sleep.error(), Some(crate::ScheduleError::ShutDown));
}

/// An explicit shutdown shrinks too: the timer it leaves keeps no spike.
#[test]
fn a_shutdown_gives_the_drained_slots_back() {
    let timer = timer(true);
    let kept = spike_on(&timer);
    assert_eq!(timer.shutdown().len(), SPIKE);
    let shared = timer.shared();
    assert_eq!(shared.core.slots(), 0, "{} slots of {SPIKE} left", shared.core.slots());
    assert_eq!(shared.slab.pages(), 0);
    assert!(!kept.is_pending() && !kept.cancel());
}

/// The slots the spike of [`spiked`] leaves written after a cancel of all but its first ten.
fn spent() -> (ManualClock, Timer, Vec<TimerHandle>) {
    let (clock, timer, handles) = spiked();
    handles[10..].iter().for_each(|h| assert!(h.cancel()));
    (clock, timer, handles)
}

#[test]
fn a_task_due_during_the_drivers_shrink_fires_on_its_tick_and_the_shrink_goes_on_after() {
    let (clock, timer, handles) = spent();
    let shared = timer.shared();
    let slots = || shared.core.slots();
    let written = slots();
    // Nothing due for seconds: the shrink starts, and its first step in the spike's shard (after
    // a step through each empty shard before it) cuts one step's slots.
    for _ in 0..shared.core.shards() {
        shared.shrink_if_spent();
        assert!(shared.shrinking());
        if slots() < written {
            break;
        }
    }
    assert_eq!(shared.shrink_wait(), Some(STEP_WAIT), "the driver comes back for the next step");
    let after_one = slots();
    assert!(after_one < written && after_one > 10, "{after_one} of {written} slots left after a step");
    // Half a tick in, a task due at the next tick: within a step's room, so no step.
    clock.advance(STEP_ROOM / 2);
    let fired = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&fired);
    let soon = timer.schedule(STEP_ROOM / 2, move || flag.store(true, Ordering::Relaxed));
    let after_one = slots(); // its slot a vacant one below the cut, or a new one at the end
    for _ in 0..3 {
        shared.shrink_if_spent();
        assert_eq!(slots(), after_one, "no step while a task is due within {STEP_ROOM:?}");
    }
    assert!(!fired.load(Ordering::Relaxed));
    clock.advance(STEP_ROOM / 2);
    timer.advance_clock(Duration::ZERO);
    assert!(fired.load(Ordering::Relaxed) && !soon.is_pending(), "fired at its tick");
    // Then the shrink goes on to the end.
    assert!(shrink_if_spent(&timer) > 2);
    assert!(!shared.shrinking());
    assert_eq!(shared.shrink_wait(), Some(AUTO_INTERVAL));
    let (_, twin, _) = spent();
    twin.shrink();
    assert_eq!(slots(), twin.shared().core.slots(), "where a shrink at once ends");
    assert!(handles[..10].iter().all(TimerHandle::is_pending));
    assert_eq!(timer.len(), 10);
}

#[test]
fn a_shrink_in_steps_gives_back_a_step_at_a_time_what_one_at_once_does() {
    let (_clock, timer, _handles) = spent();
    let (_twin_clock, twin, _twin_handles) = spent();
    let at_once = twin.shared().give_back();
    let slot_bytes = crate::shard::wheel::Wheel::<super::Payload>::slot_bytes();
    let (mut steps, mut count, mut of_part) = (Steps::default(), 0, [0usize; 64]);
    let total = loop {
        let (before, part) = (steps.given, steps.part);
        let done = timer.shared().shrink_step(&mut steps);
        count += 1;
        let given = steps.given - before;
        // A step cuts at most STEP_BYTES of the mapping (a shard's first also its spare capacity,
        // never walked) and walks at most STEP_SLOTS slots (`shard/slab.rs`): after its first, a
        // shard's step gives back at most those it walked, to a unit of 256.
        assert!(given <= STEP_BYTES / slot_bytes + 1, "step {count}: {given}");
        if part < timer.shared().core.shards() && of_part[part] > 0 {
            assert!(given <= STEP_SLOTS + 256, "step {count}: {given}");
        }
        of_part[part] += 1;
        if let Some(total) = done {
            break total;
        }
    };
    // The spike's shard (the test thread's) wrote 4 x AUTO_MIN_SLOTS slots (65,536): walked
    // 16,384 a step.
    let most = of_part.iter().max().copied().unwrap_or(0);
    assert!(most >= 4 * AUTO_MIN_SLOTS / STEP_SLOTS - 1, "{most} steps of the spike's shard");
    assert!(at_once > 3 * AUTO_MIN_SLOTS, "{at_once} given back");
    assert_eq!(total, at_once);
    assert_eq!(timer.shared().core.slots(), twin.shared().core.slots());
}

/// Closures of 56 bytes (a 64-byte block each) scheduled between two steps of the task slab's
/// shrink, on this thread and on another (each through its thread's cache of blocks), run once
/// each with what they captured, once the shrink has given back the spike's pages; those
/// cancelled between two steps on another thread (their blocks freed there) never run.
#[test]
fn closures_scheduled_between_two_steps_of_the_slabs_shrink_run_once_with_their_values() {
    use std::sync::atomic::AtomicU64;

    let clock = ManualClock::new();
    let timer = Timer::builder().tick(Duration::from_millis(1)).clock(clock.clone()).manual().build();
    let (sum, runs) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let schedule = |seed: u64| {
        let words = [seed; 6];
        let (sum, runs) = (Arc::clone(&sum), Arc::clone(&runs));
        timer.schedule(Duration::from_secs(60), move || {
            sum.fetch_add(words.iter().sum(), Ordering::Relaxed);
            runs.fetch_add(1, Ordering::Relaxed);
        })
    };
    let spike: Vec<_> = (0..SPIKE as u64).map(|k| schedule(1_000_000 + k)).collect();
    spike.iter().for_each(|h| assert!(h.cancel()));
    drop(spike);
    assert_eq!(runs.load(Ordering::Relaxed), 0);
    let shared = timer.shared();
    let (pages, shards) = (shared.slab.pages(), shared.core.shards());
    let mut steps = Steps::default();
    while steps.part < shards {
        assert!(shared.shrink_step(&mut steps).is_none());
    }
    let (mut expected, mut between, mut seed) = (0, 0, 0);
    let mut pending = Vec::new();
    loop {
        if (shards..shards + crate::entry::task_slab::CLASSES.len()).contains(&steps.part) {
            between += 1;
        }
        seed += 1;
        pending.push(schedule(seed));
        expected += 6 * seed;
        let (theirs, cancelled) = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let cancelled = schedule(seed + 1);
                    (schedule(seed + 2), cancelled.cancel())
                })
                .join()
                .unwrap()
        });
        assert!(cancelled);
        pending.push(theirs);
        expected += 6 * (seed + 2);
        seed += 2;
        if shared.shrink_step(&mut steps).is_some() {
            break;
        }
    }
    assert!(between > 8, "{between} looks between two steps of the slab's shrink");
    assert!(shared.slab.pages() < pages / 2, "{} of {pages} pages left", shared.slab.pages());
    assert_eq!(runs.load(Ordering::Relaxed), 0);
    clock.advance(Duration::from_secs(61));
    timer.advance_clock(Duration::ZERO);
    assert!(pending.iter().all(|handle| !handle.is_pending()));
    assert_eq!(runs.load(Ordering::Relaxed), pending.len() as u64, "each ran once");
    assert_eq!(sum.load(Ordering::Relaxed), expected, "each read back every captured word");
    assert_eq!(shared.slab.blocks_out(), 0);
}
