//! The `async` feature's `Sleep::reset`, and the drop of a sleep, racing the firing of its task; the
//! timeouts' tick groups (`src/sleep/group/`) racing their fire, a leave, the thread's cache and a
//! shutdown; a lazy timeout's own sleep armed while its tick fires.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use delaywheel::{Timeout, Timer};

use crate::support::{manual_timer, spawn_advance, step, ticks};

/// A sleep due at tick 1 is reset to tick 3 while an advance at tick 1 fires its task. Whether the
/// reset moves the pending task in place or finds it fired (or firing) and schedules a new one, the
/// sleep is not complete after both (its new deadline has not come), completes at tick 3, and
/// leaves nothing pending.
#[test]
fn reset_racing_fire() {
    loom::model(|| {
        let (clock, timer) = manual_timer(2);
        let mut sleep = timer.sleep(ticks(1));
        clock.advance(ticks(1));
        let advance = spawn_advance(&timer);
        sleep.reset(timer.now() + ticks(2));
        advance.join().unwrap();
        assert!(!sleep.is_elapsed(), "a reset sleep completed before its new deadline");
        clock.advance(ticks(1));
        timer.advance_clock(Duration::ZERO);
        assert!(!sleep.is_elapsed(), "completed a tick before its new deadline");
        clock.advance(ticks(1));
        timer.advance_clock(Duration::ZERO);
        assert!(sleep.is_elapsed(), "the reset sleep never completed");
        drop(sleep);
        assert!(timer.is_empty());
    });
}

/// A sleep due at tick 1, polled once, is dropped while an advance at tick 1 fires its task, and
/// the next sleep made on the same thread, due at tick 3, takes the thread's spare slot if the
/// drop kept one (`src/sleep/slot.rs`). The dropped sleep's waker is woken at most once if its
/// task fired first (once if the firing took the waker before the drop cleared it), never if the
/// drop's cancel won. Either way the old task cannot complete the new sleep: it is
/// not complete after both, completes at tick 3, and nothing is left pending.
#[test]
fn spare_slot_after_fire() {
    loom::model(|| {
        let (clock, timer) = manual_timer(2);
        let mut sleep = timer.sleep(ticks(1));
        let wakes = Arc::new(Wakes::default());
        let waker = Waker::from(Arc::clone(&wakes));
        assert!(Pin::new(&mut sleep).poll(&mut Context::from_waker(&waker)).is_pending());
        clock.advance(ticks(1));
        let advance = spawn_advance(&timer);
        drop(sleep);
        let next = timer.sleep(ticks(2));
        advance.join().unwrap();
        let fired = timer.stats().fired;
        let woken = wakes.0.load(Ordering::SeqCst) as u64;
        assert!(woken <= fired, "the dropped sleep was woken {woken} times, its task fired {fired}");
        assert!(!next.is_elapsed(), "a new sleep completed by the task of a dropped one");
        step(&clock, &timer, 1);
        assert!(!next.is_elapsed(), "completed a tick before its deadline");
        step(&clock, &timer, 1);
        assert!(next.is_elapsed(), "the new sleep never completed");
        drop(next);
        assert!(timer.is_empty());
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

/// A timeout around a future that never completes, armed by a first poll with a counting waker.
fn armed(timer: &Timer, limit: Duration) -> (Pin<Box<Timeout<std::future::Pending<()>>>>, Arc<Wakes>) {
    let mut t = Box::pin(timer.timeout(limit, std::future::pending::<()>()));
    let wakes = Arc::new(Wakes::default());
    assert!(poll(&mut t, &wakes).is_pending());
    (t, wakes)
}

fn poll(t: &mut Pin<Box<Timeout<std::future::Pending<()>>>>, wakes: &Arc<Wakes>) -> std::task::Poll<()> {
    let waker = Waker::from(Arc::clone(wakes));
    t.as_mut().poll(&mut Context::from_waker(&waker)).map(|r| assert!(r.is_err()))
}

/// Makes the next timeouts due `limit` from now on this thread members of a tick group: the
/// first timeout of a tick on a thread arms a sleep of its own (here, dropped at once), the next
/// ones make and join the tick's group (`src/sleep/group/member.rs`, "The cache").
fn prime(timer: &Timer, limit: Duration) {
    drop(armed(timer, limit));
}

fn woken(wakes: &Wakes) -> usize {
    wakes.0.load(Ordering::SeqCst)
}

/// A timeout due at tick 2 makes its thread's group; the clock is at tick 1. Another thread moves
/// the clock to tick 2 and advances (the group fires) while this thread arms a second timeout
/// until tick 2, which joins the group, finds it fired (elapsed at once: the clock reached the
/// tick), or, reading the clock after the move, makes a group of its own. Either way both
/// complete by the next advance, each woken at most once, and nothing stays counted.
#[test]
fn group_join_racing_fire() {
    loom::model(|| {
        let (clock, timer) = manual_timer(4);
        let start = timer.now();
        prime(&timer, ticks(2));
        let (mut a, wa) = armed(&timer, ticks(2));
        clock.advance(ticks(1));
        let (c, t) = (clock.clone(), loom::sync::Arc::clone(&timer));
        let fire = loom::thread::spawn(move || step(&c, &t, 1));
        let mut b = Box::pin(timer.timeout_at(start + ticks(2), std::future::pending::<()>()));
        let wb = Arc::new(Wakes::default());
        let first = poll(&mut b, &wb);
        fire.join().unwrap();
        timer.advance_clock(Duration::ZERO);
        assert!(poll(&mut a, &wa).is_ready(), "the group's first member never elapsed");
        assert!(first.is_ready() || woken(&wb) == 1, "a member of a fired group was never woken");
        assert!(poll(&mut b, &wb).is_ready(), "a member joined to a fired group never elapsed");
        assert_eq!((woken(&wa), woken(&wb).min(1)), (1, woken(&wb)));
        drop((a, b));
        assert!(timer.is_empty());
    });
}

/// A timeout due at tick 1 is dropped while an advance at tick 1 fires its group: exactly one of
/// the two counts it out (the fire as fired, the drop as cancelled), its waker is woken at most
/// once (only by a fire that came first), and nothing stays counted.
#[test]
fn group_leave_racing_fire() {
    loom::model(|| {
        let (clock, timer) = manual_timer(4);
        prime(&timer, ticks(1));
        let primer = timer.stats().cancelled;
        let (a, wa) = armed(&timer, ticks(1));
        clock.advance(ticks(1));
        let advance = spawn_advance(&timer);
        drop(a);
        advance.join().unwrap();
        let mut stats = timer.stats();
        stats.cancelled -= primer;
        assert_eq!(
            stats.fired + stats.cancelled,
            1,
            "counted out {} + {} times",
            stats.fired,
            stats.cancelled
        );
        assert!(woken(&wa) as u64 <= stats.fired, "a member that left was woken");
        assert!(timer.is_empty(), "len() is {}", timer.len());
    });
}

/// A timeout armed on this thread (its group the thread's current one) is dropped on another
/// thread while this thread arms a second timeout of the same tick: the leave finds the group
/// still cached (or the second member in it) and does not cancel its entry, so the second
/// completes at the tick; nothing stays counted.
#[test]
fn group_last_leave_racing_join() {
    loom::model(|| {
        let (clock, timer) = manual_timer(4);
        prime(&timer, ticks(2));
        let (a, _) = armed(&timer, ticks(2));
        let leave = loom::thread::spawn(move || drop(a));
        let (mut b, wb) = armed(&timer, ticks(2));
        leave.join().unwrap();
        step(&clock, &timer, 2);
        assert_eq!(woken(&wb), 1, "the member was woken {} times", woken(&wb));
        assert!(poll(&mut b, &wb).is_ready(), "a member of a cancelled group never elapsed");
        drop(b);
        assert!(timer.is_empty());
    });
}

/// The last member of the thread's current group is dropped on another thread while this thread
/// arms a timeout of a later tick (a sleep of its own: the first of its tick), which takes the
/// group's place in the cache: one of the two cancels the group's entry (the buckets then hold
/// only the sleep's), and the second timeout stays counted until the shutdown, which wakes it
/// once.
#[test]
fn group_cache_release_racing_last_leave() {
    loom::model(|| {
        let (_clock, timer) = manual_timer(4);
        prime(&timer, ticks(1));
        let (a, _) = armed(&timer, ticks(1));
        let leave = loom::thread::spawn(move || drop(a));
        let (b, wb) = armed(&timer, ticks(2));
        leave.join().unwrap();
        assert_eq!(timer.len(), 1);
        let filed: usize = timer.stats().pending_per_level.iter().sum();
        assert_eq!(filed, 1, "the first group's entry was never cancelled");
        assert_eq!(timer.shutdown().len(), 1, "the sleep's task is handed back, no group's");
        assert_eq!(woken(&wb), 1);
        drop(b);
        assert!(timer.is_empty());
    });
}

/// The timer shuts down on another thread while this thread arms a second timeout of its current
/// group's tick: the first member is woken once and never elapses; the second either joined
/// before the shutdown (woken once) or finds the group dead and is refused (never woken); neither
/// elapses, and nothing stays counted.
#[test]
fn group_shutdown_racing_join() {
    loom::model(|| {
        let (clock, timer) = manual_timer(4);
        prime(&timer, ticks(2));
        let (mut a, wa) = armed(&timer, ticks(2));
        let t = loom::sync::Arc::clone(&timer);
        let shutdown = loom::thread::spawn(move || drop(t.shutdown()));
        let (mut b, wb) = armed(&timer, ticks(2));
        shutdown.join().unwrap();
        assert_eq!(woken(&wa), 1, "a member of an abandoned group woken {} times", woken(&wa));
        assert!(woken(&wb) <= 1);
        assert!(timer.is_empty(), "len() is {} after the shutdown", timer.len());
        clock.advance(ticks(3));
        assert!(poll(&mut a, &wa).is_pending() && poll(&mut b, &wb).is_pending(), "a dead member elapsed");
    });
}

/// The first timeout of a tick on a thread arms a sleep of its own (`Limit::Solo`,
/// `src/sleep/group/member.rs`) on the clock reading its arming made, and stores the arming poll's
/// waker in the slot once the task is scheduled (`src/sleep/slot.rs`, `arm_solo`). Another thread
/// moves the clock to the timeout's tick and advances meanwhile: the task fires before the waker
/// is stored (the store then wakes it at once), after it (the fire wakes it), or, the arming
/// having read the clock after the move, at the next advance. Whichever, the arming poll is
/// pending, the waker is woken exactly once, the timeout elapses, and nothing stays counted.
#[test]
fn solo_arm_racing_fire() {
    loom::model(|| {
        let (clock, timer) = manual_timer(4);
        let (c, t) = (clock.clone(), loom::sync::Arc::clone(&timer));
        let fire = loom::thread::spawn(move || step(&c, &t, 1));
        let mut a = Box::pin(timer.timeout(ticks(1), std::future::pending::<()>()));
        let wa = Arc::new(Wakes::default());
        assert!(poll(&mut a, &wa).is_pending(), "the arming poll of a timeout elapsed");
        fire.join().unwrap();
        timer.advance_clock(Duration::ZERO);
        step(&clock, &timer, 1);
        assert_eq!(woken(&wa), 1, "the timeout's waker was woken {} times", woken(&wa));
        assert!(poll(&mut a, &wa).is_ready(), "the timeout never elapsed");
        drop(a);
        assert!(timer.is_empty(), "len() is {} after the timeout elapsed", timer.len());
    });
}
