//! A deadline already passed when it is set, within the tick under way (a zero delay, a past
//! instant, a reset to one), fires at the next advance, mid-tick; the entries of the tick under
//! way whose deadlines are at or before it fire beside it, in deadline order, equal deadlines in
//! scheduling order; the rest of that tick still fires at its boundary. Exact firing times on a
//! manual clock, tick 1 ms (docs/design.md, "Time semantics").

mod common;

use std::time::Duration;

use common::{manual_timer, ms, FireLog};
use delaywheel::queue::DelayQueue;

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

/// The probe: A due at 4.5 ms does not fire at the advance at 4.5 ms (its tick ends at 5 ms); B,
/// given a zero delay then, fires at the next advance, still at 4.5 ms, and A, due at the same
/// instant and scheduled first, fires before it, in the same batch.
#[test]
fn an_equal_deadline_scheduled_earlier_fires_first() {
    let (clock, timer) = manual_timer(ms(1), 64);
    let log = FireLog::default();
    let _a = timer.schedule(us(4_500), log.task(0, &clock));
    clock.advance(us(4_500));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.count(), 0, "A's tick ends at 5 ms");
    let _b = timer.schedule(Duration::ZERO, log.task(1, &clock));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.runs(), [(0, us(4_500)), (1, us(4_500))]);
    assert!(timer.is_empty());
}

/// A due at 4.2 ms fires before B, passed at 4.5 ms, beside it; C, due at 4.7 ms, later than every
/// passed deadline, waits for the tick's end.
#[test]
fn earlier_deadlines_of_the_tick_fire_first_and_later_ones_at_its_end() {
    let (clock, timer) = manual_timer(ms(1), 64);
    let log = FireLog::default();
    let _c = timer.schedule(us(4_700), log.task(2, &clock));
    let _a = timer.schedule(us(4_200), log.task(0, &clock));
    clock.advance(us(4_500));
    let _b = timer.schedule(Duration::ZERO, log.task(1, &clock));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.runs(), [(0, us(4_500)), (1, us(4_500))]);
    assert_eq!(timer.len(), 1);
    clock.advance(us(300));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.count(), 2, "C is not due before 5 ms");
    clock.advance(us(200));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.runs()[2], (2, ms(5)));
}

/// With no passed deadline nothing of the tick under way fires mid-tick; nor beside a zero delay
/// on the tick's boundary itself, whose deadline is of the tick before (not passed within it).
#[test]
fn without_a_deadline_passed_mid_tick_the_tick_fires_at_its_end() {
    let (clock, timer) = manual_timer(ms(1), 64);
    let log = FireLog::default();
    let _a = timer.schedule(us(4_000) + Duration::from_nanos(1), log.task(0, &clock));
    clock.advance(ms(4));
    let _b = timer.schedule(Duration::ZERO, log.task(1, &clock));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.runs(), [(1, ms(4))]);
    clock.advance(us(900));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.count(), 1);
    clock.advance(us(100));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.runs(), [(1, ms(4)), (0, ms(5))]);
}

/// `schedule_at` an instant already passed: D at 4.3 ms and B at 4.5 ms, set at 4.6 ms, fire with
/// A (due 4.5 ms, scheduled first) in deadline order, A before B; E at 4.8 ms waits for 5 ms.
#[test]
fn past_instants_fire_in_deadline_order_with_the_tick_under_way() {
    let (clock, timer) = manual_timer(ms(1), 64);
    let log = FireLog::default();
    let start = timer.now();
    let _a = timer.schedule(us(4_500), log.task(1, &clock));
    let _e = timer.schedule(us(4_800), log.task(3, &clock));
    clock.advance(us(4_600));
    let _b = timer.schedule_at(start + us(4_500), log.task(2, &clock));
    let _d = timer.schedule_at(start + us(4_300), log.task(0, &clock));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.ids(), [0, 1, 2]);
    assert!(log.runs().iter().all(|&(_, at)| at == us(4_600)));
    clock.advance(us(400));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.runs()[3], (3, ms(5)));
}

/// A reset to a passed deadline: X, scheduled before A and reset at 4.5 ms to 4.5 ms, keeps its
/// stamp and fires first; Y, scheduled after A, fires after it.
#[test]
fn a_reset_to_a_passed_deadline_keeps_its_place() {
    let (clock, timer) = manual_timer(ms(1), 64);
    let log = FireLog::default();
    let start = timer.now();
    let x = timer.schedule(ms(10), log.task(0, &clock));
    let _a = timer.schedule(us(4_500), log.task(1, &clock));
    let y = timer.schedule(ms(10), log.task(2, &clock));
    clock.advance(us(4_500));
    timer.advance_clock(Duration::ZERO);
    assert!(y.reset(Duration::ZERO));
    assert!(x.reset_at(start + us(4_500)));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.runs(), [(0, us(4_500)), (1, us(4_500)), (2, us(4_500))]);
}

/// The same for the delay queue's values: `a`, inserted first, comes out before `b`.
#[test]
fn delay_queue_values_come_out_in_insertion_order() {
    let (clock, timer) = manual_timer(ms(1), 64);
    let queue = DelayQueue::with_timer(timer);
    queue.insert("a", us(4_500));
    queue.insert("late", us(4_600));
    clock.advance(us(4_500));
    queue.advance_clock(Duration::ZERO);
    assert!(queue.try_recv().is_none());
    queue.insert("b", Duration::ZERO);
    queue.advance_clock(Duration::ZERO);
    let out: Vec<&str> = std::iter::from_fn(|| queue.try_recv()).map(|v| v.into_inner()).collect();
    assert_eq!(out, ["a", "b"]);
    clock.advance(us(500));
    queue.advance_clock(Duration::ZERO);
    assert_eq!(queue.try_recv().map(|v| v.into_inner()), Some("late"));
}

/// Entries filed long ago in a coarser level (wheel 64: level 1 holds slots of 64 ticks): A at
/// 300.5 ms, cascaded into level 0 at 256 ms, and A2 at 319.5 ms, still in the level-1 bucket of
/// the round starting at 320 ms when B passes at 319.5 ms; each fires beside the zero delay after
/// it, first.
#[test]
fn entries_of_a_coarser_level_fire_beside_a_passed_deadline() {
    let (clock, timer) = manual_timer(ms(1), 64);
    let log = FireLog::default();
    let _a = timer.schedule(us(300_500), log.task(0, &clock));
    let _a2 = timer.schedule(us(319_500), log.task(2, &clock));
    clock.advance(us(300_500));
    timer.advance_clock(Duration::ZERO);
    let _b = timer.schedule(Duration::ZERO, log.task(1, &clock));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.runs(), [(0, us(300_500)), (1, us(300_500))]);
    clock.advance(us(19_000));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(timer.stats().pending_per_level.get(1), Some(&1), "A2 waits in level 1");
    let _b2 = timer.schedule(Duration::ZERO, log.task(3, &clock));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.ids(), [0, 1, 2, 3]);
    assert_eq!(log.runs()[3], (3, us(319_500)));
    assert!(timer.is_empty());
}

/// The clock moved past the tick's end before the advance: the passed deadline's batch still
/// takes the equal one scheduled first, then the next tick's rest fires after it.
#[test]
fn an_advance_past_the_tick_keeps_the_order() {
    let (clock, timer) = manual_timer(ms(1), 64);
    let log = FireLog::default();
    let _a = timer.schedule(us(4_500), log.task(0, &clock));
    let _c = timer.schedule(us(4_900), log.task(2, &clock));
    clock.advance(us(4_500));
    timer.advance_clock(Duration::ZERO);
    let _b = timer.schedule(Duration::ZERO, log.task(1, &clock));
    clock.advance(us(1_500));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.ids(), [0, 1, 2]);
}

/// A reset to an earlier deadline in the same quarter of the same tick (4.95 → 4.8 ms) moves the
/// entry rather than rewriting it in place, so the list it lands in knows its earliest deadline:
/// a passed deadline at 4.85 ms takes it, and a stream of passed deadlines earlier than every
/// entry of the tick under way takes nothing (each advance fires its zero delay alone).
#[test]
fn a_reset_earlier_within_its_quarter_is_taken_beside_a_later_passed_deadline() {
    let (clock, timer) = manual_timer(ms(1), 64);
    let log = FireLog::default();
    let a = timer.schedule(us(4_950), log.task(0, &clock));
    let _b = timer.schedule(us(4_990), log.task(1, &clock));
    assert!(a.reset(us(4_800)));
    clock.advance(us(4_100));
    for probe in 0..5 {
        let _p = timer.schedule(Duration::ZERO, log.task(10 + probe, &clock));
        timer.advance_clock(Duration::ZERO);
        clock.advance(us(100));
    }
    assert_eq!(log.count(), 5, "the probes at 4.1 to 4.5 ms fire alone: A and B are due later");
    clock.advance(us(250)); // 4.85 ms
    let _c = timer.schedule(Duration::ZERO, log.task(2, &clock));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.runs()[5..], [(0, us(4_850)), (2, us(4_850))]);
    clock.advance(us(150));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.runs()[7..], [(1, ms(5))]);
    assert!(timer.is_empty());
}

/// The same in a coarser level (wheel 64: A at 319.9 ms waits in the level-1 bucket of the round
/// starting at 320 ms): a reset to 319.3 ms, in the same tick, moves it, so a passed deadline at
/// 319.5 ms takes it; B at 319.8 ms, due after that, waits for the tick's end.
#[test]
fn a_reset_earlier_within_its_tick_in_a_coarser_level_is_taken_beside_a_later_passed_deadline() {
    let (clock, timer) = manual_timer(ms(1), 64);
    let log = FireLog::default();
    let a = timer.schedule(us(319_900), log.task(0, &clock));
    let _b = timer.schedule(us(319_800), log.task(2, &clock));
    clock.advance(us(319_000));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(timer.stats().pending_per_level.get(1), Some(&2), "A and B wait in level 1");
    assert!(a.reset_at(timer.now() + us(300)));
    clock.advance(us(500));
    let _c = timer.schedule(Duration::ZERO, log.task(1, &clock));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.runs(), [(0, us(319_500)), (1, us(319_500))]);
    clock.advance(us(500));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.runs()[2..], [(2, ms(320))]);
    assert!(timer.is_empty());
}

/// A stream of passed deadlines through a quarter of the tick under way, as a driver woken by
/// zero delays sees it: 40 tasks due every 6 µs from 4.006 ms (one re-armed later, one
/// cancelled), and twenty rounds of a zero delay and an advance, 12 µs apart. Each round takes the
/// tick's entries due by the deadline passed (`shard/core.rs`, "Passed deadlines mid-tick"), and
/// fires exactly the tasks its deadline passed, in deadline order, each once, none early.
#[test]
fn a_stream_of_passed_deadlines_fires_the_tasks_between_them_in_order() {
    let (clock, timer) = manual_timer(ms(1), 512);
    let log = FireLog::default();
    let due = |i: usize| us(4_006 + 6 * i as u64);
    let handles: Vec<_> = (0..40).map(|i| timer.schedule(due(i), log.task(i, &clock))).collect();
    // Task 5 moves later within the quarter (to 4.2 ms), task 7 is cancelled.
    assert!(handles[5].reset(us(4_200)));
    assert!(handles[7].cancel());
    let deadline = |id: usize| match id {
        5 => us(4_200),
        id if id >= 1000 => us(4_000 + 12 * (id - 1000) as u64),
        id => due(id),
    };
    clock.advance(ms(4));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.count(), 0);
    for round in 1..=20 {
        clock.advance(us(12));
        timer.schedule(Duration::ZERO, log.task(1000 + round, &clock));
        timer.advance_clock(Duration::ZERO);
    }
    let runs = log.runs();
    let mut ids: Vec<usize> = runs.iter().map(|&(id, _)| id).filter(|&id| id < 1000).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..40).filter(|&i| i != 7).collect::<Vec<_>>(), "each once, the cancelled never");
    for &(id, at) in &runs {
        // Fired at the first round at or after its deadline: never early, never a round late.
        assert!(
            at >= deadline(id) && at < deadline(id) + us(12),
            "{id} due {:?} fired at {at:?}",
            deadline(id)
        );
    }
    let deadlines: Vec<Duration> = runs.iter().map(|&(id, _)| deadline(id)).collect();
    assert!(deadlines.windows(2).all(|w| w[0] <= w[1]), "in deadline order: {runs:?}");
}

/// The takes after a tick's first walk its list sorted by deadline up to their passed deadline,
/// and the entries linked since (`src/shard/wheel/sorted_run.rs`): after the take at 4.2 ms, B
/// scheduled at 4.25 ms, the tick's latest entry (4.9 ms) cancelled, X reset from 6.5 ms into
/// the tick (4.35 ms) and Y from 4.6 ms to 4.28 ms each fire beside the zero delay at 4.4 ms, in
/// deadline order; the zero delay at 4.45 ms, before every entry left, fires alone; the rest fires
/// at 5 ms, the cancelled never.
#[test]
fn takes_after_the_first_of_a_tick_keep_links_cancels_and_resets_in_order() {
    let (clock, timer) = manual_timer(ms(1), 64);
    let log = FireLog::default();
    let start = timer.now();
    let _a = timer.schedule(us(4_100), log.task(0, &clock));
    let _c = timer.schedule(us(4_300), log.task(3, &clock));
    let _d = timer.schedule(us(4_500), log.task(7, &clock));
    let _e = timer.schedule(us(4_700), log.task(8, &clock));
    let last = timer.schedule(us(4_900), log.task(9, &clock));
    let y = timer.schedule(us(4_600), log.task(2, &clock));
    let x = timer.schedule(us(6_500), log.task(4, &clock));
    clock.advance(us(4_200));
    timer.advance_clock(Duration::ZERO);
    let _p1 = timer.schedule(Duration::ZERO, log.task(1, &clock));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.runs(), [(0, us(4_200)), (1, us(4_200))]);
    let _b = timer.schedule(us(50), log.task(10, &clock));
    assert!(last.cancel());
    assert!(x.reset_at(start + us(4_350)));
    assert!(y.reset_at(start + us(4_280)));
    clock.advance(us(200));
    let _p2 = timer.schedule(Duration::ZERO, log.task(5, &clock));
    timer.advance_clock(Duration::ZERO);
    let at = us(4_400);
    assert_eq!(log.runs()[2..], [(10, at), (2, at), (3, at), (4, at), (5, at)]);
    clock.advance(us(50));
    let _p3 = timer.schedule(Duration::ZERO, log.task(6, &clock));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.runs()[7..], [(6, us(4_450))]);
    clock.advance(us(550));
    timer.advance_clock(Duration::ZERO);
    assert_eq!(log.runs()[8..], [(7, ms(5)), (8, ms(5))]);
    assert!(timer.is_empty());
}
