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
fn debug_output_names_the_type() {
    let clock = ManualClock::new();
    let timer = Timer::builder().clock(clock.clone()).manual().build();
    let handle = timer.schedule(Duration::from_millis(5), || {});
    let repeating = timer.schedule_repeating(
        Duration::from_millis(5),
        Repeat::FixedRate(Duration::from_millis(5)),
        || {},
    );
    let position = handle.position().unwrap();
    let outputs = [
        format!("{timer:?}"),
        format!("{:?}", Timer::builder()),
        format!("{handle:?}"),
        format!("{clock:?}"),
        format!("{:?}", timer.stats()),
        format!("{position:?}"),
        format!("{repeating:?}"),
    ];
    for (output, name) in outputs.iter().zip([
        "Timer",
        "TimerBuilder",
        "TimerHandle",
        "ManualClock",
        "TimerStats",
        "WheelPosition",
        "RepeatingHandle",
    ]) {
        assert!(output.starts_with(name), "{output}");
    }
    let unfired = timer.shutdown();
    assert!(format!("{:?}", unfired[0]).starts_with("UnfiredTask"));
    #[cfg(feature = "async")]
    {
        let timer = Timer::builder().clock(clock).manual().build();
        assert!(format!("{:?}", timer.sleep(Duration::from_millis(1))).starts_with("Sleep"));
        let timeout = timer.timeout(Duration::from_millis(1), std::future::ready(1));
        assert!(format!("{timeout:?}").starts_with("Timeout"));
    }
}
