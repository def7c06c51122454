//! Deadlines passed mid-tick and set-aside entries on the core, on manual ticks of 1 ms: the
//! firing orders of `tests/passed_mid_tick.rs`, with the entries spread over two shards, and a
//! held entry put back for the next advance.

use super::super::{Core, Due, Handle, Merge};
use crate::deadline::{Deadline, Fractions};
use crate::shard::life::Status;

/// The words of a 1 ms tick.
fn fractions() -> Fractions {
    Fractions::new(1_000_000).expect("a 1 ms tick")
}

/// The exact word of a deadline `us` microseconds after the start.
fn at_us(us: u64) -> Deadline {
    let nanos = us * 1_000;
    let tick = nanos.div_ceil(1_000_000);
    fractions().deadline(tick, nanos - 1 - (tick - 1) * 1_000_000).expect("exact")
}

/// The word of a deadline `us` microseconds after the start, set once passed at tick `now`
/// (within `(now, now + 1]`): filed at `now`.
fn passed_us(now: u64, us: u64) -> Deadline {
    let nanos = us * 1_000;
    assert!(nanos > now * 1_000_000 && nanos <= (now + 1) * 1_000_000, "within the tick under way");
    fractions().passed(now, nanos - 1 - now * 1_000_000).expect("exact")
}

/// A core of two shards, wheels of 64 buckets a level, and the stamps handed out.
struct Fixture {
    core: Core<u64>,
    stamp: u64,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture { core: Core::with_wheel_size(2, 64), stamp: 0 }
    }

    /// Schedules payload `id` at `deadline`, into shard `stamp % 2`.
    fn schedule(&mut self, deadline: Deadline, id: u64) -> Handle<u64> {
        let stamp = self.stamp;
        self.stamp += 1;
        let shard = (stamp % 2) as usize;
        self.core.schedule_in(shard, deadline, stamp, id).map_err(drop).expect("scheduled")
    }

    /// The batch of an advance to `now` (its limit the last stamp handed out), with the entries that its
    /// deadlines passed mid-tick take, in firing order; held, not claimed.
    fn collect(&self, now: u64) -> Vec<Due> {
        let (mut out, mut merge) = (Vec::new(), Merge::default());
        let stamps = self.stamp.saturating_sub(1);
        self.core.advance(now, stamps, &mut out, &mut merge);
        let batch = out.len();
        // The latest passed deadline of each tick (the batch is sorted by word, a tick's passed
        // deadlines last).
        let limits: Vec<Deadline> = (0..batch)
            .filter(|&i| i + 1 == batch || out[i + 1].order().0.tick() != out[i].order().0.tick())
            .filter_map(|i| out[i].order().0.in_own_tick())
            .collect();
        for &limit in &limits {
            self.core.take_due_by(limit, stamps, &mut out, &mut merge);
        }
        if !limits.is_empty() {
            merge.sort_by_instants(&mut out);
        }
        out
    }

    /// [`collect`](Fixture::collect), each entry claimed: the payloads, in firing order.
    fn fire(&self, now: u64) -> Vec<u64> {
        let out = self.collect(now);
        out.iter().map(|due| self.core.claim(due).expect("held until claimed")).collect()
    }
}

#[test]
fn an_equal_deadline_scheduled_earlier_fires_first() {
    let mut f = Fixture::new();
    f.schedule(at_us(4_500), 0);
    assert_eq!(f.fire(4), [0u64; 0], "A's tick ends at 5 ms");
    f.schedule(passed_us(4, 4_500), 1);
    assert_eq!(f.fire(4), [0, 1]);
    assert!(f.core.is_empty());
}

#[test]
fn earlier_deadlines_of_the_tick_fire_first_and_later_ones_at_its_end() {
    let mut f = Fixture::new();
    f.schedule(at_us(4_700), 2);
    f.schedule(at_us(4_200), 0);
    f.schedule(passed_us(4, 4_500), 1);
    assert_eq!(f.fire(4), [0, 1]);
    assert_eq!(f.core.len(), 1);
    assert_eq!(f.fire(4), [0u64; 0], "C is not due before 5 ms");
    assert_eq!(f.fire(5), [2]);
}

#[test]
fn without_a_deadline_passed_mid_tick_the_tick_fires_at_its_end() {
    let mut f = Fixture::new();
    f.schedule(fractions().deadline(5, 0).expect("exact"), 0);
    // A zero delay at 4 ms: the boundary of tick 4, not passed within tick 5.
    f.schedule(at_us(4_000), 1);
    assert_eq!(f.fire(4), [1]);
    assert_eq!(f.fire(4), [0u64; 0]);
    assert_eq!(f.fire(5), [0]);
}

#[test]
fn past_instants_fire_in_deadline_order_with_the_tick_under_way() {
    let mut f = Fixture::new();
    f.schedule(at_us(4_500), 1);
    f.schedule(at_us(4_800), 3);
    f.schedule(passed_us(4, 4_500), 2);
    f.schedule(passed_us(4, 4_300), 0);
    assert_eq!(f.fire(4), [0, 1, 2]);
    assert_eq!(f.fire(5), [3]);
}

#[test]
fn a_reset_to_a_passed_deadline_keeps_its_place() {
    let mut f = Fixture::new();
    let x = f.schedule(at_us(10_000), 0);
    f.schedule(at_us(4_500), 1);
    let y = f.schedule(at_us(10_000), 2);
    assert_eq!(f.fire(4), [0u64; 0]);
    assert!(f.core.reset(&y, passed_us(4, 4_500)));
    assert!(f.core.reset(&x, passed_us(4, 4_500)));
    assert_eq!(f.fire(4), [0, 1, 2]);
}

#[test]
fn entries_of_a_coarser_level_fire_beside_a_passed_deadline() {
    let mut f = Fixture::new();
    f.schedule(at_us(300_500), 0);
    f.schedule(at_us(319_500), 2);
    assert_eq!(f.fire(300), [0u64; 0]);
    f.schedule(passed_us(300, 300_500), 1);
    assert_eq!(f.fire(300), [0, 1]);
    assert_eq!(f.fire(319), [0u64; 0]);
    let levels: usize =
        f.core.shards.iter().map(|shard| shard.lock().state().wheel.levels()).max().unwrap_or(0);
    assert_eq!(levels, 2, "A2 waits in level 1, in the round starting at 320");
    f.schedule(passed_us(319, 319_500), 3);
    assert_eq!(f.fire(319), [2, 3]);
    assert!(f.core.is_empty());
}

#[test]
fn an_advance_past_the_tick_keeps_the_order() {
    let mut f = Fixture::new();
    f.schedule(at_us(4_500), 0);
    f.schedule(at_us(4_900), 2);
    assert_eq!(f.fire(4), [0u64; 0]);
    f.schedule(passed_us(4, 4_500), 1);
    assert_eq!(f.fire(6), [0, 1, 2]);
}

#[test]
fn a_reset_earlier_is_taken_beside_a_later_passed_deadline_and_earlier_ones_take_nothing() {
    let mut f = Fixture::new();
    let a = f.schedule(at_us(4_950), 0);
    f.schedule(at_us(4_990), 1);
    assert!(f.core.reset(&a, at_us(4_800)));
    for probe in 0..5 {
        f.schedule(passed_us(4, 4_100 + probe * 100), 10 + probe);
        assert_eq!(f.fire(4), [10 + probe], "A and B are due later");
    }
    f.schedule(passed_us(4, 4_850), 2);
    assert_eq!(f.fire(4), [0, 2]);
    assert_eq!(f.fire(5), [1]);
    assert!(f.core.is_empty());
}

#[test]
fn take_due_by_leaves_stamps_above_the_limit_and_a_cancel_wins_over_its_claim() {
    let mut f = Fixture::new();
    let a = f.schedule(at_us(4_200), 0);
    f.schedule(at_us(4_300), 1);
    let (mut out, limit) = (Vec::new(), at_us(4_500));
    f.core.take_due_by(limit, 0, &mut out, &mut Merge::default());
    assert_eq!(out.iter().map(|due| due.order().1).collect::<Vec<_>>(), [0], "stamp 1 is above the limit");
    assert_eq!(f.core.len(), 2, "held, counted until claimed");
    assert!(!f.core.reset(&a, at_us(4_900)), "being fired");
    assert_eq!(f.core.cancel(&a), Some(0));
    assert_eq!(f.core.claim(&out[0]), None);
    assert_eq!(f.fire(5), [1]);
}

#[test]
fn a_set_aside_entry_is_taken_by_the_next_advance() {
    let mut f = Fixture::new();
    f.schedule(at_us(3_000), 0);
    f.schedule(at_us(4_500), 1);
    let out = f.collect(4);
    assert_eq!(out.len(), 1);
    assert!(f.core.set_aside(&out[0]), "put back, passed: on the overdue list");
    assert_eq!(f.core.len(), 2);
    assert_eq!(f.fire(4), [0], "the next advance takes it at the same tick");
    // One of the tick after the wheel's time goes back to its bucket, due at its tick.
    f.schedule(passed_us(4, 4_600), 2);
    let out = f.collect(4);
    assert_eq!(out.iter().map(|due| due.order().1).collect::<Vec<_>>(), [1, 2]);
    assert!(f.core.set_aside(&out[0]));
    assert_eq!(f.core.claim(&out[1]), Some(2));
    assert_eq!(f.fire(4), [0u64; 0], "due at 5 ms, in its bucket");
    assert_eq!(f.fire(5), [1]);
}

#[test]
fn after_a_set_aside_a_cancel_takes_the_entry_and_a_reset_moves_it() {
    let mut f = Fixture::new();
    let a = f.schedule(at_us(1_000), 0);
    let b = f.schedule(at_us(1_000), 1);
    let out = f.collect(1);
    assert_eq!(out.len(), 2);
    assert!(f.core.set_aside(&out[0]) && f.core.set_aside(&out[1]));
    assert_eq!(f.core.cancel(&a), Some(0));
    assert_eq!(f.core.status(&a), Some(Status::Cancelled));
    assert!(f.core.reset(&b, at_us(7_000)));
    assert_eq!(f.fire(6), [0u64; 0]);
    assert_eq!(f.fire(7), [1]);
    assert_eq!(f.core.status(&b), Some(Status::Fired));
    // A set-aside of what a cancel or a drain took since finds nothing.
    let c = f.schedule(at_us(8_000), 2);
    let out = f.collect(8);
    assert_eq!(f.core.cancel(&c), Some(2));
    assert!(!f.core.set_aside(&out[0]));
    assert!(f.core.is_empty());
}

#[test]
fn next_work_is_never_after_a_passed_deadline_on_an_overdue_list() {
    let mut f = Fixture::new();
    assert_eq!(f.core.next_work(), None);
    f.schedule(at_us(8_000), 0);
    f.schedule(at_us(8_000), 1);
    f.schedule(at_us(9_000), 2);
    assert_eq!(f.fire(8), [0, 1]);
    assert_eq!(f.core.next_work(), Some(9));
    // Both shards' wheels are at 8: deadlines of 3 and 5 ms go to their overdue lists, offered at 8.
    f.schedule(at_us(5_000), 3);
    f.schedule(at_us(3_000), 4);
    assert_eq!(f.core.next_tick(), Some(8), "the overdue lists' offers at the wheels' time");
    assert_eq!(f.core.next_work(), Some(3));
    assert_eq!(f.fire(8), [4, 3]);
    assert_eq!(f.core.next_work(), Some(9));
}

#[test]
fn an_offer_of_nothing_is_due_at_once_and_flushes_nothing() {
    let mut f = Fixture::new();
    f.schedule(at_us(5_000), 0);
    assert_eq!(f.fire(3), [0u64; 0]);
    for tick in [3, 4] {
        f.core.offer_nothing_at(tick);
        assert_eq!(f.core.next_tick(), Some(tick), "due at once");
        assert_eq!(f.fire(tick), [0u64; 0], "stale when popped");
    }
    assert_eq!(f.core.next_tick(), Some(5));
    assert_eq!(f.fire(5), [0]);
}
