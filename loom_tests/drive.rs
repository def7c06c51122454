//! The `async` feature's `Timer::drive`: the drive future's watch of the delay queue (register its
//! waker, read the head) racing a schedule that makes an earlier bucket the head, or a shutdown
//! (`src/delay_queue/watchers.rs`, "The hand-shake"), and, on the system clock, the drive
//! future's sleep waker advancing the timer (running no closure) racing an advance, a cancel or a
//! reset. On a manual clock the future never sleeps with a runtime: it waits for its waker alone,
//! so a lost wake is a task that never runs.

use std::future::{Future, Pending};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use crate::support::{manual_timer, ticks, Runs};

// The models fire the sleep but never re-arm it.
#[allow(dead_code)]
#[path = "../tests/common/hand_sleep.rs"]
mod hand_sleep;
use hand_sleep::HandSleep;

/// The runtime's sleep of a drive future on a manual clock: never called.
fn no_sleep(_: Instant) -> Pending<()> {
    unreachable!("a drive future on a manual clock sleeps with no runtime")
}

/// The drive future sleeps on a task three ticks out while another thread schedules one due now,
/// which makes an earlier bucket the head. Either its poll finds the new head (and its advance
/// runs the task), or the schedule finds its waker registered and wakes it; polled again once
/// woken, as a runtime would, it runs the task. Never neither: the task would wait for the far one.
#[test]
fn earlier_schedule_racing_the_watch() {
    loom::model(|| {
        let (_clock, timer) = manual_timer(2);
        timer.schedule(ticks(3), || {});
        let runs = Runs::default();
        let scheduler = {
            let (timer, task) = (loom::sync::Arc::clone(&timer), runs.task());
            loom::thread::spawn(move || drop(timer.schedule(Duration::ZERO, task)))
        };
        let mut drive = timer.drive(no_sleep);
        let wakes = Arc::new(Wakes::default());
        let waker = Waker::from(Arc::clone(&wakes));
        let mut cx = Context::from_waker(&waker);
        assert!(Pin::new(&mut drive).poll(&mut cx).is_pending());
        scheduler.join().unwrap();
        let woken = wakes.0.load(Ordering::SeqCst);
        assert!(runs.count() == 1 || woken > 0, "the task due now neither ran nor woke the drive future");
        if woken > 0 {
            assert!(Pin::new(&mut drive).poll(&mut cx).is_pending());
        }
        assert_eq!(runs.count(), 1, "the task due now did not run");
        drop(timer.shutdown());
        assert_eq!(Pin::new(&mut drive).poll(&mut cx), Poll::Ready(()));
    });
}

/// The drive future sleeps on a pending task while another thread shuts the timer down: its poll
/// finds the queue closed and completes, or the close wakes it and its next poll completes.
#[test]
fn shutdown_racing_the_watch() {
    loom::model(|| {
        let (_clock, timer) = manual_timer(2);
        timer.schedule(ticks(3), || {});
        let shutdown = {
            let timer = loom::sync::Arc::clone(&timer);
            loom::thread::spawn(move || timer.shutdown().len())
        };
        let mut drive = timer.drive(no_sleep);
        let wakes = Arc::new(Wakes::default());
        let waker = Waker::from(Arc::clone(&wakes));
        let mut cx = Context::from_waker(&waker);
        let first = Pin::new(&mut drive).poll(&mut cx);
        assert_eq!(shutdown.join().unwrap(), 1, "the pending task is handed back");
        let woken = wakes.0.load(Ordering::SeqCst);
        assert!(
            first.is_ready() || woken > 0,
            "the shutdown neither ended the poll nor woke the drive future"
        );
        assert_eq!(Pin::new(&mut drive).poll(&mut cx), Poll::Ready(()));
    });
}

/// Counts its wakes (a std waker: wakes are not loom operations).
#[derive(Default)]
struct Wakes(AtomicUsize);

impl Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A drive future whose runtime's sleep is fired by hand.
type HandDrive = delaywheel::Drive<Box<dyn FnMut(Instant) -> HandSleep + Send>, HandSleep>;

/// A timer without a driver thread on the system clock (tick `tick`, a wheel of 2) holding one
/// task an hour out, and its drive future on a sleep fired by hand, polled once with a waker that
/// counts on the returned `Wakes`: it sleeps on that task.
///
/// Under loom a system clock reads no real time: it moves only by
/// `loom_internals::advance_system_clock`, so that every execution reads the same times and takes
/// the same operations (loom replays the operations it recorded; a reading that differs from one
/// execution to the next can change what is filed where, and loom then stops with "Reached
/// unexpected exploration state"). It is moved 10 µs on here, as a real clock would be by the
/// first schedule: a zero delay is then a deadline passed within tick 0, as on the real clock, and
/// not the origin's boundary.
fn hand_driven(tick: Duration) -> (loom::sync::Arc<delaywheel::Timer>, HandSleep, HandDrive, Arc<Wakes>) {
    let timer = loom::sync::Arc::new(delaywheel::Timer::builder().tick(tick).wheel_size(2).manual().build());
    delaywheel::loom_internals::advance_system_clock(&timer, Duration::from_micros(10));
    timer.schedule(Duration::from_secs(3_600), || {});
    let sleep = HandSleep::default();
    let made = sleep.clone();
    let sleep_until: Box<dyn FnMut(Instant) -> HandSleep + Send> = Box::new(move |_| made.clone());
    let mut drive = timer.drive(sleep_until);
    let wakes = Arc::new(Wakes::default());
    let waker = Waker::from(Arc::clone(&wakes));
    assert!(
        Pin::new(&mut drive).poll(&mut Context::from_waker(&waker)).is_pending(),
        "sleeping on the far task"
    );
    (timer, sleep, drive, wakes)
}

/// On the system clock (the drive future then sleeps with the runtime: here a sleep fired by hand;
/// the clock stands still, see [`hand_driven`]): a task due now is scheduled, then the runtime
/// fires the drive future's sleep, whose waker advances the timer unless another advance holds the
/// lock, while the main thread advances. The main thread's advance began before the schedule (the
/// task is left to the next advance), or after it (it runs the task); the waker's advance runs no
/// closure, and wakes the drive future, whose poll runs the task. Never neither.
#[test]
fn sleep_wake_racing_an_advance() {
    // The hour takes a dozen levels, which the final drain visits: the bound on operations is
    // raised here, whatever the script's `LOOM_MAX_BRANCHES`.
    let mut model = loom::model::Builder::new();
    model.max_branches = model.max_branches.max(20_000);
    model.check(|| {
        let (timer, sleep, mut drive, wakes) = hand_driven(ticks(1));
        let waker = Waker::from(Arc::clone(&wakes));
        let mut cx = Context::from_waker(&waker);
        let runs = Runs::default();
        let runtime = {
            let (timer, task) = (loom::sync::Arc::clone(&timer), runs.task());
            loom::thread::spawn(move || {
                drop(timer.schedule(Duration::ZERO, task));
                sleep.fire();
            })
        };
        timer.advance_clock(Duration::ZERO);
        runtime.join().unwrap();
        let woken = wakes.0.load(Ordering::SeqCst);
        assert!(runs.count() == 1 || woken > 0, "the task due now neither ran nor woke the drive future");
        if runs.count() == 0 {
            assert!(Pin::new(&mut drive).poll(&mut cx).is_pending());
        }
        assert_eq!(runs.count(), 1, "the task due now ran once");
        drop(timer.shutdown());
        assert_eq!(Pin::new(&mut drive).poll(&mut cx), Poll::Ready(()));
    });
}

loom::thread_local! {
    /// Set on the runtime's thread while it fires the drive future's sleep (its waker runs there).
    static IN_SLEEP_WAKER: std::cell::Cell<bool> = std::cell::Cell::new(false);
}

/// On the system clock, as above, with a tick of a second: a closure due now, cancelled by the main
/// thread while the runtime's thread fires the drive future's sleep, whose waker advances the timer
/// but runs only tasks that hand a waker over: the closure is set aside (put back, pending, for the
/// next round: `Core::set_aside_if`, `src/timer/advance.rs`, "The drive waker's advance")
/// for the drive future's poll. Exactly one of "the cancel returned true" and "the closure ran
/// once" happens, and the closure never runs inside the sleep's waker.
#[test]
fn sleep_waker_leaves_a_closure_racing_its_cancel() {
    let mut model = loom::model::Builder::new();
    model.max_branches = model.max_branches.max(20_000);
    model.check(|| {
        let (timer, sleep, mut drive, wakes) = hand_driven(Duration::from_secs(1));
        let waker = Waker::from(wakes);
        let mut cx = Context::from_waker(&waker);
        let (runs, in_waker) = (Runs::default(), Runs::default());
        let (run, ran_in_waker) = (runs.task(), in_waker.clone());
        let handle = timer.schedule(Duration::ZERO, move || {
            if IN_SLEEP_WAKER.with(|flag| flag.get()) {
                ran_in_waker.task()();
            }
            run();
        });
        let runtime = loom::thread::spawn(move || {
            IN_SLEEP_WAKER.with(|flag| flag.set(true));
            sleep.fire();
            IN_SLEEP_WAKER.with(|flag| flag.set(false));
        });
        let cancelled = handle.cancel();
        runtime.join().unwrap();
        assert_eq!(in_waker.count(), 0, "the closure ran inside the runtime sleep's waker");
        assert!(Pin::new(&mut drive).poll(&mut cx).is_pending());
        assert_eq!(
            runs.count() + usize::from(cancelled),
            1,
            "ran {} times, cancelled: {cancelled}",
            runs.count()
        );
        assert_eq!(timer.len(), 1, "the far task alone is pending");
        drop(timer.shutdown());
        assert_eq!(Pin::new(&mut drive).poll(&mut cx), Poll::Ready(()));
    });
}

/// As above, with a reset racing the waker's advance instead of a cancel: the reset moves the
/// closure an hour out (`true`) or finds it held by the advance's batch (`false`, between the
/// flush and the set-aside). Either way the waker's advance does not run it, and once that
/// advance is over the closure, set aside, is pending and not held: a second reset moves it, and
/// the drive future's poll then leaves it pending.
#[test]
fn sleep_waker_leaves_a_closure_racing_its_reset() {
    let mut model = loom::model::Builder::new();
    model.max_branches = model.max_branches.max(20_000);
    model.check(|| {
        let (timer, sleep, mut drive, wakes) = hand_driven(Duration::from_secs(1));
        let waker = Waker::from(wakes);
        let mut cx = Context::from_waker(&waker);
        let runs = Runs::default();
        let handle = timer.schedule(Duration::ZERO, runs.task());
        let runtime = loom::thread::spawn(move || sleep.fire());
        let _ = handle.reset(Duration::from_secs(3_600));
        runtime.join().unwrap();
        assert_eq!(runs.count(), 0, "the closure ran inside the runtime sleep's waker");
        assert!(handle.reset(Duration::from_secs(7_200)), "a pending closure not due is moved");
        assert!(Pin::new(&mut drive).poll(&mut cx).is_pending());
        assert_eq!(runs.count(), 0, "due in two hours");
        assert_eq!(timer.len(), 2);
        drop(timer.shutdown());
        assert_eq!(Pin::new(&mut drive).poll(&mut cx), Poll::Ready(()));
    });
}

/// The start of the models below, on the system clock with a tick of a second, as above: closure C
/// due 200 µs out (counted by the returned `Runs`) and, once the clock has moved past that (by
/// hand, see [`hand_driven`]), a sleep with a zero delay: its deadline passed mid-tick, later than
/// C's, so the batch that fires it takes C beside it (`Core::take_due_by`,
/// `src/timer/advance.rs`). The sleep is returned to keep it pending. (On a clock that
/// reads real time, a preemption of more than 200 µs before the schedule reads it files C as
/// passed, in tick 0 beside the sleep instead of in tick 1: other operations, which loom cannot
/// replay.)
fn passed_beside_a_closure(timer: &delaywheel::Timer) -> (Runs, delaywheel::TimerHandle, delaywheel::Sleep) {
    let runs = Runs::default();
    let handle = timer.schedule_at(timer.now() + Duration::from_micros(200), runs.task());
    delaywheel::loom_internals::advance_system_clock(timer, Duration::from_micros(300));
    (runs, handle, timer.sleep(Duration::ZERO))
}

/// With [`passed_beside_a_closure`]: the runtime's thread fires the drive future's sleep twice (two
/// advances of its waker: the first takes C beside the passed deadline and sets it aside, carrying
/// its deadline and offering an item due at once; the second pops that item and offers it again),
/// then polls the drive future, while the main thread runs `op` on C's handle (`true`: it
/// cancelled or moved C). The poll runs C at once (`src/timer/advance.rs`, "The drive
/// waker's advance": the advance that fires everything takes the closures due by the carried
/// deadline), unless `op` won: so an `op` begun after the poll loses, and C runs once or `op`
/// won.
fn closure_beside_a_passed_deadline_racing(op: fn(&delaywheel::TimerHandle) -> bool) {
    let mut model = loom::model::Builder::new();
    model.max_branches = model.max_branches.max(20_000);
    model.check(move || {
        let (timer, sleep, mut drive, wakes) = hand_driven(Duration::from_secs(1));
        let (runs, handle, _passed) = passed_beside_a_closure(&timer);
        let polled = loom::sync::Arc::new(loom::sync::atomic::AtomicBool::new(false));
        let runtime = {
            let polled = loom::sync::Arc::clone(&polled);
            let waker = Waker::from(Arc::clone(&wakes));
            loom::thread::spawn(move || {
                sleep.fire();
                sleep.fire();
                sleep.rearm();
                assert!(Pin::new(&mut drive).poll(&mut Context::from_waker(&waker)).is_pending());
                polled.store(true, loom::sync::atomic::Ordering::SeqCst);
                drive
            })
        };
        let after_poll = polled.load(loom::sync::atomic::Ordering::SeqCst);
        let won = op(&handle);
        assert!(!(after_poll && won), "the poll left C, taken beside a passed deadline, to its tick's end");
        let mut drive = runtime.join().unwrap();
        assert_eq!(runs.count() + usize::from(won), 1, "ran {} times, op won: {won}", runs.count());
        drop(timer.shutdown());
        let waker = Waker::from(wakes);
        assert_eq!(Pin::new(&mut drive).poll(&mut Context::from_waker(&waker)), Poll::Ready(()));
    });
}

/// [`closure_beside_a_passed_deadline_racing`] a cancel of C.
#[test]
fn closures_taken_beside_a_passed_deadline_racing_a_cancel() {
    closure_beside_a_passed_deadline_racing(|handle| handle.cancel());
}

/// [`closure_beside_a_passed_deadline_racing`] a reset of C an hour out.
#[test]
fn closures_taken_beside_a_passed_deadline_racing_a_reset() {
    closure_beside_a_passed_deadline_racing(|handle| handle.reset(Duration::from_secs(3_600)));
}
