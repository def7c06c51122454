//! The public types' auto traits and `Debug`, asserted at compile time (and printed once).

use std::fmt::Debug;
use std::time::Duration;

use delaywheel::{
    BuildError, LatenessSummary, ManualClock, Repeat, RepeatingHandle, ScheduleError, TaskExecution, Timer,
    TimerBuilder, TimerHandle, TimerStats, UnfiredTask, WheelPosition,
};

fn send_sync<T: Send + Sync + Debug>() {}
fn send<T: Send + Debug>() {}
fn unpin_static<T: Unpin + 'static>() {}

#[test]
fn public_types_are_send_sync_and_debug() {
    send_sync::<Timer>();
    send_sync::<TimerBuilder>();
    send_sync::<TimerHandle>();
    send_sync::<ManualClock>();
    send_sync::<TimerStats>();
    send_sync::<LatenessSummary>();
    send_sync::<WheelPosition>();
    send_sync::<Repeat>();
    send_sync::<RepeatingHandle>();
    send_sync::<TaskExecution>();
    send_sync::<BuildError>();
    send_sync::<ScheduleError>();
    // An unfired task owns a `FnOnce + Send` closure: it can move between threads, not be shared.
    send::<UnfiredTask>();
    send_sync::<&'static Timer>();
    unpin_static::<TimerHandle>();
}

#[cfg(feature = "async")]
#[test]
fn futures_are_send_sync_unpin_and_static() {
    use delaywheel::{Elapsed, Sleep, Timeout};
    send_sync::<Sleep>();
    unpin_static::<Sleep>();
    send_sync::<Timeout<Sleep>>();
    send_sync::<Timeout<std::future::Ready<u8>>>();
    send_sync::<Elapsed>();
    fn is_error<E: std::error::Error + Send + Sync + 'static>() {}
    is_error::<Elapsed>();
}

#[test]
fn errors_are_std_errors() {
    fn is_error<E: std::error::Error + Send + Sync + 'static>() {}
    is_error::<BuildError>();
    is_error::<ScheduleError>();
}

#[test]
fn debug_output_shows_the_state_that_matters() {
    let clock = ManualClock::new();
    let timer = Timer::builder().clock(clock.clone()).manual().build();
    let handle = timer.schedule(Duration::from_millis(5), || {});
    let repeating = timer.schedule_repeating(
        Duration::from_millis(5),
        Repeat::FixedRate(Duration::from_millis(5)),
        || {},
    );
    let position = handle.position().unwrap();
    assert_eq!(
        format!("{timer:?}"),
        "Timer { tick: 1ms, wheel_size: 512, manual_clock: true, pending: 2, .. }"
    );
    assert_eq!(
        format!("{:?}", Timer::builder()),
        "TimerBuilder { tick: 1ms, wheel_size: 512, clock: None, manual: false, \
         thread_name: \"delaywheel-driver\", execution: OnDriver, max_pending: 18446744073709551615, \
         precise_wakeups: true, capacity: 0 }"
    );
    // The slot index depends on the shard's free list: only its presence is the contract.
    let shown = format!("{handle:?}");
    assert!(
        shown.starts_with("TimerHandle { slot: ") && shown.ends_with(", status: Some(Pending) }"),
        "{shown}"
    );
    assert_eq!(format!("{clock:?}"), "ManualClock { now: 0ns }");
    assert_eq!(
        format!("{:?}", timer.stats()),
        "TimerStats { pending: 2, scheduled: 2, fired: 0, cancelled: 0, abandoned: 0, panicked: 0, rearmed: 0, \
         queued_buckets: 1, \
         levels_in_use: 1, resident_buckets: 512, pending_per_level: [2], fullest_bucket: Some(BucketLoad { level: 0, slot: 5, entries: 2 }), \
         lateness: LatenessSummary { count: 0, mean: 0ns, p50: 0ns, p99: 0ns, p999: 0ns, max: 0ns } }"
    );
    assert_eq!(
        format!("{position:?}"),
        "WheelPosition { level: 0, slot: 5, expiration_tick: 5, deadline_tick: 5 }"
    );
    assert_eq!(
        format!("{repeating:?}"),
        "RepeatingHandle { repeat: FixedRate(5ms), runs: 0, cancelled: false, ended: false }"
    );
    let unfired = timer.shutdown();
    assert_eq!(
        format!("{unfired:?}"),
        "[UnfiredTask { deadline: 5ms, .. }, UnfiredTask { deadline: 5ms, .. }]"
    );
    assert_eq!(format!("{handle:?}").rsplit_once(", ").map(|(_, s)| s), Some("status: Some(Abandoned) }"));
    #[cfg(feature = "async")]
    {
        let timer = Timer::builder().clock(clock).manual().build();
        let sleep = timer.sleep(Duration::from_millis(1));
        let text = format!("{sleep:?}");
        assert!(text.starts_with("Sleep { state: \"waiting\", deadline: "), "{text}");
        assert!(
            text.contains(&format!("deadline: {:?}, handle: TimerHandle {{ slot: ", sleep.deadline())),
            "{text}"
        );
        assert!(text.ends_with(", status: Some(Pending) } }"), "{text}");
        let timeout = format!("{:?}", timer.timeout(Duration::from_millis(1), std::future::ready(1)));
        // The inner future shows as its type's name (`std::any::type_name`, whose text may vary).
        assert!(timeout.starts_with("Timeout { future: ") && timeout.contains("Ready<i32>"), "{timeout}");
        assert!(timeout.ends_with(", limit: Lazy(TimerRef, After(1ms)) }"), "{timeout}");
        let armed = timer.try_timeout(Duration::from_millis(1), std::future::ready(1)).unwrap();
        let timeout = format!("{armed:?}");
        assert!(timeout.contains("Ready<i32>, limit: Armed(Sleep { state: \"waiting\""), "{timeout}");
    }
}
