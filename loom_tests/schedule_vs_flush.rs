//! Adding to a bucket while the advancing thread flushes that same bucket.

use std::time::Duration;

#[cfg(not(delaywheel_core))]
use std::sync::Mutex;

use crate::support::{manual_timer, spawn_advance, ticks, Runs};

/// A task due at once goes to the level-0 bucket of its deadline tick, which here is the bucket being
/// flushed. Whether the add lands before the flush (and is flushed with A), or after it (and
/// re-queues the emptied bucket), B is neither lost nor fired twice.
#[test]
fn schedule_racing_flush_of_same_bucket() {
    loom::model(|| {
        let (clock, timer) = manual_timer(2);
        let (a, b) = (Runs::default(), Runs::default());
        timer.schedule(ticks(1), a.task()); // level 0, slot 1, expiration 1
        clock.advance(ticks(1)); // that bucket is due

        let advancer = spawn_advance(&timer);
        let handle_b = timer.schedule(Duration::ZERO, b.task()); // due: level 0, slot 1 again
        advancer.join().unwrap();

        timer.advance_clock(Duration::ZERO); // fires B if it landed after the flush
        assert_eq!(a.count(), 1, "A fired once");
        assert_eq!(b.count(), 1, "B is neither lost nor fired twice");
        assert!(!handle_b.cancel(), "B already ran");
        assert!(timer.is_empty());
        assert_eq!(timer.stats().queued_buckets, 0, "no bucket left queued");
    });
}

/// The order in which tasks ran, by id. Observation only, like `Runs`.
#[cfg(not(delaywheel_core))]
#[derive(Clone, Default)]
struct Order(std::sync::Arc<Mutex<Vec<usize>>>);

#[cfg(not(delaywheel_core))]
impl Order {
    fn task(&self, id: usize) -> impl FnOnce() + Send + 'static {
        let order = self.clone();
        move || order.0.lock().unwrap().push(id)
    }

    fn ids(&self) -> Vec<usize> {
        self.0.lock().unwrap().clone()
    }
}

/// A level-0 bucket fires its tick a quarter at a time, queued again at the cursor between two
/// (`wheel/place.rs`, "Level 0 by quarters"). A task scheduled for an instant already passed lands
/// in the second quarter of the tick being fired: before a quarter still in the bucket, or after
/// every quarter was taken. Every task runs exactly once, the tick's first quarter before its last,
/// and no bucket stays queued.
// Models the arena's level-0 flush by quarters of a tick.
#[cfg(not(delaywheel_core))]
#[test]
fn schedule_into_a_passed_quarter_racing_a_flush_by_quarters() {
    loom::model(|| {
        let (clock, timer) = manual_timer(2);
        let order = Order::default();
        timer.schedule(ticks(1) / 8, order.task(0)); // tick 1, first quarter
        timer.schedule(ticks(1), order.task(2)); // tick 1, last quarter
        clock.advance(ticks(1));
        let passed = timer.now() - ticks(1) * 6 / 10; // 0.4 ticks in: tick 1, second quarter

        let advancer = spawn_advance(&timer);
        let handle = timer.schedule_at(passed, order.task(1));
        advancer.join().unwrap();

        timer.advance_clock(Duration::ZERO); // fires the late one if it landed after its round
        let fired = order.ids();
        let mut each = fired.clone();
        each.sort_unstable();
        assert_eq!(each, [0, 1, 2], "each task exactly once: fired {fired:?}");
        let at = |id| fired.iter().position(|&f| f == id);
        assert!(at(0) < at(2), "the first quarter before the last: {fired:?}");
        assert!(!handle.cancel(), "it ran");
        assert!(timer.is_empty());
        assert_eq!(timer.stats().queued_buckets, 0, "no bucket left queued");
    });
}

/// Two schedulers in two lanes add to one empty bucket: X's add lowers its expiration, and the
/// main thread's, reading it lowered, does not queue the bucket itself. An advance the main thread
/// starts once its schedule returned must fire its task, wherever X is (`src/wheel/bucket/
/// expiration.rs`, "Queued before lowered"): X queues the bucket before it lowers the expiration,
/// under its lane lock, which the visit waits for. X's task fires once, in that advance or by the
/// next tick's.
// Models the arena's bucket lanes (an add relying on another lane's lowering).
#[cfg(not(delaywheel_core))]
#[test]
fn an_add_relying_on_another_lanes_lowering_is_fired() {
    loom::model(|| {
        let (clock, timer) = manual_timer(4);
        let (x, y) = (Runs::default(), Runs::default());
        let scheduler = {
            let (timer, x) = (timer.clone(), x.clone());
            loom::thread::spawn(move || {
                timer.schedule(ticks(1), x.task());
            })
        };
        timer.schedule(ticks(1), y.task()); // level 0, slot 1: the same bucket, the other lane
        clock.advance(ticks(1));
        timer.advance_clock(Duration::ZERO);
        assert_eq!(y.count(), 1, "a task due at tick 1, scheduled before the advance, fired in it");
        scheduler.join().unwrap();
        clock.advance(ticks(1)); // X's deadline is tick 1, or 2 if it scheduled after the clock moved
        timer.advance_clock(Duration::ZERO);
        assert_eq!((x.count(), y.count()), (1, 1), "each fired once");
        assert!(timer.is_empty());
        assert_eq!(timer.stats().queued_buckets, 0, "no bucket left queued");
    });
}
