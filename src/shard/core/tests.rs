//! The core on one thread, on manual ticks: firing ticks, cancel and reset against the advance,
//! the merged order, the count, the drain, the offers to the queue, each outcome's status, and
//! payloads whose `Drop` panics.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::super::life::Status;
use super::super::pool::Pool;
use super::super::wheel::{Refusal, MAX_TICK};
use super::{Core, Due, Handle, Merge, State};
use crate::deadline::Deadline;
use crate::test_rng::XorShift;

/// A deadline on the boundary of `tick`.
fn at(tick: u64) -> Deadline {
    Deadline::at_tick(tick)
}

/// A deadline in the 256th `rank` of `tick`.
fn ranked(tick: u64, rank: u8) -> Deadline {
    Deadline::new(tick, rank).expect("in range")
}

pub(super) fn schedule<P: Send + 'static>(
    core: &Core<P>,
    deadline: u64,
    stamp: u64,
    payload: P,
) -> Handle<P> {
    core.schedule(at(deadline), stamp, payload).unwrap_or_else(|_| panic!("{deadline} refused"))
}

/// Advances to `now` and claims each due entry in order: the payloads fired.
fn advance<P: Send + 'static>(core: &Core<P>, now: u64) -> Vec<P> {
    let mut out = Vec::new();
    core.advance(now, u64::MAX, &mut out, &mut Merge::default());
    out.iter().map(|due| core.claim(due).expect("held until claimed")).collect()
}

/// Advances to `now`: the batch, held, not claimed.
fn collect<P: Send + 'static>(core: &Core<P>, now: u64) -> Vec<Due> {
    let mut out = Vec::new();
    core.advance(now, u64::MAX, &mut out, &mut Merge::default());
    out
}

/// Every entry fires at its tick, not before, through a walk of `next_tick` and jumps alike.
#[test]
fn entries_fire_exactly_at_their_ticks() {
    let core = Core::new(4);
    assert_eq!(core.shards(), 4);
    let mut rng = XorShift::new(11);
    let deadlines: Vec<u64> = (0..300).map(|_| 1 + rng.next() % (1 << (rng.next() % 24))).collect();
    for (id, &deadline) in deadlines.iter().enumerate() {
        schedule(&core, deadline, id as u64, id);
    }
    let mut now = 0;
    let mut fired = 0;
    while let Some(next) = core.next_tick() {
        assert!(next > now, "the next tick {next} after the time {now}");
        let before = now;
        now = if rng.next() % 2 == 0 { next } else { next + rng.next() % 5 };
        for id in advance(&core, now) {
            let deadline = deadlines[id];
            assert!(deadline <= now, "{id} due at {deadline} fired at {now}, early");
            assert!(deadline > before, "{id} due at {deadline} still pending after {before}");
            fired += 1;
        }
        assert_eq!(core.len(), deadlines.len() - fired);
    }
    assert_eq!(fired, deadlines.len());
    assert!(core.is_empty());
}

/// A cancel takes the entry once; the advance never fires a cancelled entry, and a cancel after the
/// fire finds nothing; a deadline reads back until then.
#[test]
fn cancel_and_advance_take_each_entry_once() {
    let core = Core::new(2);
    let a = schedule(&core, 5, 0, 'a');
    let b = schedule(&core, 5, 1, 'b');
    assert_eq!((core.deadline(&a), core.len()), (Some(at(5)), 2));
    assert_eq!(core.cancel(&a), Some('a'));
    assert_eq!((core.cancel(&a), core.deadline(&a), core.len()), (None, None, 1));
    assert_eq!(advance(&core, 5), ['b']);
    assert_eq!((core.cancel(&b), core.deadline(&b), core.len()), (None, None, 0));
    assert!(!core.reset(&b, at(10)), "fired: nothing to move");
}

/// A reset moves an entry earlier or later and keeps its stamp, offering its new bucket when it
/// sets the bucket's round; the deadline word reads back as given.
#[test]
fn reset_earlier_and_later() {
    let core = Core::new(1);
    let a = schedule(&core, 100, 0, 'a');
    let b = schedule(&core, 50, 1, 'b');
    assert_eq!((core.next_tick(), core.queue().len()), (Some(50), 2));
    assert!(core.reset(&a, ranked(20, 3)));
    assert_eq!(core.deadline(&a), Some(ranked(20, 3)));
    assert!(core.reset(&a, ranked(30, 0)));
    assert!(core.reset(&b, ranked(30, 0)));
    assert_eq!(core.queue().len(), 4, "rounds 100, 50, 20, 30: one offer each, the one at 30 once");
    assert_eq!(core.next_tick(), Some(20), "the offer at 20, stale: a lower bound");
    assert_eq!(core.deadline(&b), Some(ranked(30, 0)));
    assert!(advance(&core, 29).is_empty());
    let out = collect(&core, 30);
    assert_eq!(out.iter().map(Due::order).collect::<Vec<_>>(), [(ranked(30, 0), 0), (ranked(30, 0), 1)]);
    assert!(!core.reset(&a, at(40)), "held: being fired");
    assert!(out.iter().all(|due| core.claim(due).is_some()));
    assert!(!core.reset(&a, at(40)), "fired");
}

/// Each outcome reads back through the handle: pending (held too) until a claim, a cancel or a
/// drain, then fired, cancelled or abandoned until the slot is reused; a stale handle reads
/// nothing once another entry (another stamp) has the slot, nor once the core is dropped.
#[test]
fn the_status_of_each_outcome_reads_back_until_the_slot_is_reused() {
    let core = Core::new(1);
    let (fired, cancelled, abandoned) =
        (schedule(&core, 5, 0, 'f'), schedule(&core, 5, 1, 'c'), schedule(&core, 9, 2, 'a'));
    assert_eq!(core.status(&fired), Some(Status::Pending));
    let batch = collect(&core, 5);
    assert_eq!(
        (core.status(&fired), core.status(&cancelled)),
        (Some(Status::Pending), Some(Status::Pending)),
        "held"
    );
    assert_eq!(core.cancel(&cancelled), Some('c'));
    assert_eq!(batch.iter().map(|due| core.claim(due)).collect::<Vec<_>>(), [Some('f'), None]);
    let mut drained = Vec::new();
    core.drain_all(&mut drained, &mut Merge::default());
    assert_eq!(
        [&fired, &cancelled, &abandoned].map(|handle| core.status(handle)),
        [Some(Status::Fired), Some(Status::Cancelled), Some(Status::Abandoned)]
    );
    let reused = schedule(&core, 20, 3, 'r');
    assert_eq!(reused.entry().0, fired.entry().0, "the drain's free list starts at slot 0");
    assert_eq!(
        (core.status(&fired), core.status(&reused)),
        (None, Some(Status::Pending)),
        "a stale key reads nothing"
    );
    assert_eq!(core.status(&abandoned), Some(Status::Abandoned), "its slot is not reused yet");
    drop(core);
    assert_eq!(Core::<char>::new(1).status(&reused), None, "the core was dropped");
}

/// A slot is reused oldest first: a cancelled entry's status reads back through N further
/// schedules into its shard when N slots were vacant before its own, and the next one takes it.
#[test]
fn a_status_survives_a_schedule_into_every_slot_vacant_before_it() {
    const OTHERS: u64 = 100;
    let core = Core::new(1);
    let others: Vec<_> = (0..OTHERS).map(|stamp| schedule(&core, 50, stamp, stamp)).collect();
    let target = schedule(&core, 50, OTHERS, OTHERS);
    for handle in others.iter().rev() {
        assert!(core.cancel(handle).is_some());
    }
    assert_eq!(core.cancel(&target), Some(OTHERS));
    for stamp in OTHERS + 1..=2 * OTHERS {
        let handle = schedule(&core, 60, stamp, stamp);
        assert_ne!(handle.entry().0, target.entry().0);
        assert_eq!(core.status(&target), Some(Status::Cancelled), "after {} schedules", stamp - OTHERS);
    }
    let reused = schedule(&core, 60, 2 * OTHERS + 1, 0);
    assert_eq!(reused.entry().0, target.entry().0, "the next schedule takes its slot");
    assert_eq!(core.status(&target), None);
}

/// A stamp of 2⁵⁶ or more is refused, payload back, uncounted: the life word keeps 56 bits, so its
/// key would not match. The largest stamp below is taken, and its handle answers.
#[test]
fn a_stamp_beyond_56_bits_is_refused() {
    let core = Core::new(1);
    for stamp in [1 << 56, u64::MAX] {
        let refused = core.schedule(at(10), stamp, 'x').map(|_| ()).unwrap_err();
        assert_eq!((refused.reason, refused.payload, core.len()), (Refusal::Stamp, 'x', 0));
    }
    let last = schedule(&core, 10, (1 << 56) - 1, 'y');
    assert_eq!((core.status(&last), core.cancel(&last)), (Some(Status::Pending), Some('y')));
}

/// A handle of another core names nothing to this one: its reset is refused before anything
/// moves, and the entry fires on its own core at its own deadline.
#[test]
fn a_reset_through_another_cores_handle_moves_nothing() {
    let (mine, other) = (Core::new(2), Core::new(2));
    let a = schedule(&other, 40, 0, 'a');
    assert!(!mine.reset(&a, at(10)));
    assert_eq!(other.deadline(&a), Some(at(40)));
    let wider = Core::new(8);
    let far = wider.schedule_in(7, at(40), 1, 'f').map_err(drop).unwrap();
    assert!(!mine.reset(&far, at(10)), "an index beyond this core's shards");
    assert_eq!(wider.cancel(&far), Some('f'));
    assert!(advance(&other, 39).is_empty());
    assert_eq!(advance(&other, 40), ['a']);
    assert!(mine.is_empty() && other.is_empty());
}

/// Equal deadlines from different shards fire in the callers' sequence order, 256ths first; a
/// batch over several ticks and one over many entries of a tick (the counting sort) alike.
#[test]
fn equal_deadlines_merge_by_sequence_across_shards() {
    let core = Core::new(4);
    let mut seq = 0;
    let mut expected = Vec::new();
    for round in 0..100u64 {
        for shard in 0..4 {
            let deadline = ranked(10 + round % 3, (round % 5) as u8);
            core.schedule_in(shard, deadline, seq, seq).expect("in range");
            expected.push((deadline, seq));
            seq += 1;
        }
    }
    expected.sort();
    let mut out = Vec::new();
    core.advance(12, u64::MAX, &mut out, &mut Merge::default());
    assert_eq!(out.iter().map(Due::order).collect::<Vec<_>>(), expected);
    assert!(out.iter().all(|due| core.claim(due) == Some(due.entry.stamp)));

    for (shard, seq) in (0..4).cycle().zip(1_000..1_200) {
        core.schedule_in(shard, ranked(20, (seq % 7) as u8), seq, seq).expect("in range");
    }
    out.clear();
    core.advance(20, u64::MAX, &mut out, &mut Merge::default());
    let mut expected: Vec<_> = (1_000..1_200).map(|seq| (ranked(20, (seq % 7) as u8), seq)).collect();
    expected.sort();
    assert_eq!(out.iter().map(Due::order).collect::<Vec<_>>(), expected);
    assert!(out.iter().all(|due| core.claim(due).is_some()) && core.is_empty());
}

/// A due entry is held by the batch until claimed (module docs, "Claimed when it runs"): counted
/// and pending meanwhile; a cancel of it wins and the claim finds nothing; a reset of it is
/// refused; a drain takes it and its claim finds nothing; each is counted out once.
#[test]
fn a_held_entry_is_pending_until_claimed() {
    let core = Core::new(2);
    let a = core.schedule_in(0, at(5), 0, 'a').unwrap();
    let b = core.schedule_in(1, at(5), 1, 'b').unwrap();
    let c = core.schedule_in(0, at(5), 2, 'c').unwrap();
    let batch = collect(&core, 5);
    assert_eq!(
        batch.iter().map(|due| (due.shard, due.entry.stamp)).collect::<Vec<_>>(),
        [(0, 0), (1, 1), (0, 2)]
    );
    assert_eq!(core.len(), 3, "held entries are counted");
    assert_eq!(core.cancel(&b), Some('b'), "a cancel of a held entry wins");
    assert_eq!((core.claim(&batch[1]), core.len()), (None, 2));
    assert!(!core.reset(&c, at(9)), "held: being fired");
    assert_eq!(core.deadline(&c), Some(at(5)), "pending until claimed");
    assert_eq!((core.claim(&batch[0]), core.len()), (Some('a'), 1));
    assert_eq!((core.claim(&batch[0]), core.cancel(&a), core.deadline(&a)), (None, None, None));
    let mut drained = Vec::new();
    core.drain_all(&mut drained, &mut Merge::default());
    assert_eq!(drained.iter().map(|fired| fired.payload).collect::<Vec<_>>(), ['c']);
    assert_eq!((core.claim(&batch[2]), core.len()), (None, 0), "the drain took it");
    assert!(advance(&core, 100).is_empty());
}

/// `len` counts every schedule and every entry cancelled, fired or drained out.
#[test]
fn len_is_exact() {
    let core = Core::new(4);
    let handles: Vec<_> =
        (0..4).map(|shard| core.schedule_in(shard, at(10), shard as u64, ()).unwrap()).collect();
    assert_eq!(core.len(), 4);
    core.cancel(&handles[1]);
    core.cancel(&handles[1]);
    assert_eq!(core.len(), 3);
    schedule(&core, MAX_TICK, 4, ());
    schedule(&core, 20, 5, ());
    core.cancel(&handles[1]);
    assert_eq!(core.len(), 5);
    assert_eq!(advance(&core, 10).len(), 3);
    assert_eq!(core.len(), 2);
    core.drain_all(&mut Vec::new(), &mut Merge::default());
    assert!(core.is_empty());
}

/// A shard whose slab holds as many entries as slot indices allow refuses a schedule with the
/// payload back, uncounted.
#[test]
fn a_full_shard_refuses_uncounted() {
    let core = Core::new(1);
    for stamp in 0..super::super::slab::MAX_SLOTS as u64 {
        schedule(&core, 10, stamp, ());
    }
    let len = core.len();
    let refused = core.schedule(at(10), u64::MAX >> 8, ()).map(|_| ()).unwrap_err();
    assert_eq!((refused.reason, core.len()), (Refusal::Full, len));
}

/// The drain hands every pending entry back in order, leaves every handle stale, and the core
/// takes schedules again.
#[test]
fn drain_hands_back_everything() {
    let core = Core::new(2);
    let late = schedule(&core, 1_000_000, 3, 3);
    let first = schedule(&core, 70, 1, 1);
    schedule(&core, 70, 0, 0);
    schedule(&core, 500, 2, 2);
    let mut out = Vec::new();
    core.drain_all(&mut out, &mut Merge::default());
    assert_eq!(out.iter().map(|fired| fired.payload).collect::<Vec<_>>(), [0, 1, 2, 3]);
    assert_eq!((core.cancel(&late), core.deadline(&first), core.len()), (None, None, 0));
    assert!(advance(&core, 2_000_000).is_empty(), "the offers left are stale");
    schedule(&core, 5, 4, 4);
    assert_eq!(advance(&core, 5), [4]);
}

/// Kafka's drive: a bucket is offered when its round is set, once however many entries share it
/// (also through schedule and cancel in a loop); a cascade's offer due now is flushed in the same
/// advance; a passed deadline fires at the next advance, the clock unmoved; a wheel of 2²⁴
/// buckets a level takes a far deadline.
#[test]
fn buckets_are_offered_once_per_round() {
    let core = Core::<u32>::with_wheel_size(2, 4);
    for id in 0..100 {
        let handle = schedule(&core, 6, u64::from(id), id);
        assert_eq!(core.cancel(&handle), Some(id));
    }
    assert_eq!((core.queue().len(), core.next_tick()), (1, Some(4)), "level 1's round at 4");
    schedule(&core, 6, 100, 100);
    schedule(&core, 7, 101, 101);
    assert_eq!(core.queue().len(), 1);
    assert_eq!(advance(&core, 6), [100], "cascaded at 4 to level 0, flushed at 6 in the same advance");
    assert_eq!(core.next_tick(), Some(7));
    schedule(&core, 2, 102, 102);
    assert_eq!(advance(&core, 6), [102], "passed: the next advance, the clock unmoved");
    let core = Core::<u32>::with_wheel_size(1, 2_usize.pow(24) as u64);
    schedule(&core, 1 << 40, 0, 7);
    assert_eq!(advance(&core, 1 << 40), [7]);
}

/// A payload that counts its drops, and panics in them if armed.
struct Bomb {
    drops: Arc<AtomicUsize>,
    armed: bool,
}

impl Drop for Bomb {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
        if self.armed {
            panic!("dropping an armed Bomb panics (expected by this test)");
        }
    }
}

/// Whether `f` panicked.
fn panics(f: impl FnOnce()) -> bool {
    panic::catch_unwind(AssertUnwindSafe(f)).is_err()
}

/// A panicking `Drop` of a payload runs after the unlock, wherever the payload ends (cancelled,
/// fired, refused, dropped with the core): the shard works on, and a core dropped with such a
/// payload pending gives every header back, unlocked. (Two pending would be two panics in one
/// drop, an abort, as for any `Vec`.)
#[test]
fn a_payload_whose_drop_panics_leaves_no_lock_held() {
    let drops = Arc::new(AtomicUsize::new(0));
    let bomb = |armed| Bomb { drops: Arc::clone(&drops), armed };
    let pool = Pool::<State<Bomb, ()>>::global();
    let core = Core::new(2);
    let handle = schedule(&core, 10, 0, bomb(true));
    let cancelled = core.cancel(&handle);
    assert!(panics(move || drop(cancelled)));
    schedule(&core, 10, 1, bomb(true));
    let fired = advance(&core, 10);
    assert!(panics(move || drop(fired)));
    assert!(core.is_empty());
    let cancelled = core.cancel(&schedule(&core, 15, 2, bomb(true)));
    assert!(panics(move || drop(cancelled)));
    core.schedule_in(0, at(20), 3, bomb(true)).map_err(drop).unwrap();
    core.schedule_in(1, at(30), 4, bomb(false)).map_err(drop).unwrap();
    let free = pool.free();
    assert!(panics(move || drop(core)), "the pending payload's panic unwinds out of the drop");
    assert_eq!(pool.free(), free + 2, "both headers given back");
    assert_eq!(drops.load(Ordering::Relaxed), 5);
    let again = Core::new(2);
    for shard in 0..2 {
        again.schedule_in(shard, at(5), shard as u64, bomb(false)).map_err(drop).unwrap();
    }
    assert_eq!(again.len(), 2);
}

/// Not a test: what a schedule + cancel pair costs the core, for callgrind (docs/lean_core.md).
/// SPEC W7's shape on one thread: `CORE_PAIRS` pairs (default 1,000,000), each timeout cancelled
/// once 512 newer ones are pending, deadlines 30,000 ticks out, an advance every 1,000 pairs, a
/// payload of 24 bytes with a niche (`Option<InlineTask>`'s shape: a 48-byte slot). Instructions per pair: the difference of two runs over the difference of
/// their pair counts, e.g.
/// `CORE_PAIRS=200000 valgrind --tool=callgrind <lib test binary> --ignored --exact
/// shard::core::tests::callgrind_window_pairs` and again with 400000.
#[test]
#[ignore]
fn callgrind_window_pairs() {
    let pairs: u64 = std::env::var("CORE_PAIRS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let core: Core<(&'static (), [usize; 2])> = Core::new(8);
    let mut window = std::collections::VecDeque::with_capacity(513);
    let mut now = 0u64;
    for i in 0..pairs {
        if i % 1000 == 0 {
            now += 1;
            let mut out = Vec::new();
            core.advance(now, u64::MAX, &mut out, &mut Merge::default());
            assert!(out.is_empty());
        }
        let deadline = Deadline::new(now + 30_000, (i & 255) as u8).unwrap();
        let h = core.schedule(deadline, i, (&(), [i as usize; 2])).ok().unwrap();
        window.push_back(h);
        if window.len() > 512 {
            let h = window.pop_front().unwrap();
            assert!(core.cancel(&h).is_some());
        }
    }
    std::hint::black_box(core.len());
}

/// Advances to `now` in a round of limit `limit`, running `between` after each flush, and claims
/// each due entry in order: the payloads fired, and how many flushes the advance made.
pub(super) fn advance_by<P: Send + 'static>(
    core: &Core<P>,
    now: u64,
    limit: u64,
    mut between: impl FnMut(),
) -> (Vec<P>, usize) {
    let (mut out, mut flushes) = (Vec::new(), 0);
    core.advance_with(now, limit, &mut out, &mut Merge::default(), || {
        flushes += 1;
        between();
    });
    (out.iter().map(|due| core.claim(due).expect("held until claimed")).collect(), flushes)
}

/// One advance does bounded work: passed deadlines scheduled between its polls, numbered above its
/// limit, cannot keep it going (the overdue list, drained, is offered for the next round, and stays
/// offered); it takes what its limit covers, and the next advance takes the rest at the same tick.
#[test]
fn passed_deadlines_scheduled_during_an_advance_wait_for_the_next() {
    let core = Core::new(1);
    schedule(&core, 0, 1, 1u64);
    let seq = std::cell::Cell::new(1);
    let (fired, flushes) = advance_by(&core, 10, 1, || {
        if seq.get() < 1_000 {
            seq.set(seq.get() + 1);
            schedule(&core, 0, seq.get(), seq.get());
        }
    });
    assert_eq!(fired, [1], "only what the limit covers");
    assert!(flushes <= 2, "{flushes} flushes: the schedules kept the advance going");
    assert_eq!(core.len() as u64, seq.get() - 1);
    let (fired, _) = advance_by(&core, 10, seq.get(), || {});
    assert_eq!(fired, (2..=seq.get()).collect::<Vec<_>>(), "the next advance takes the rest");
    assert!(core.is_empty());
    assert_eq!(core.next_tick(), None, "nothing queued once the overdue list is drained empty");
}

/// The same for entries scheduled into a bucket due at the advance's tick: the flush moves them to
/// the overdue list, offered for the next advance, and the bucket forgets its round.
#[test]
fn entries_scheduled_into_a_due_bucket_during_an_advance_wait_for_the_next() {
    let core = Core::new(1);
    schedule(&core, 1, 1, 1u64);
    let seq = std::cell::Cell::new(1);
    let (fired, flushes) = advance_by(&core, 1_000, 1, || {
        if seq.get() < 1_000 {
            seq.set(seq.get() + 1);
            schedule(&core, 1_000, seq.get(), seq.get());
        }
    });
    assert_eq!(fired, [1]);
    assert!(flushes <= 4, "{flushes} flushes: the schedules kept the advance going");
    assert_eq!(core.next_tick(), Some(1_000), "the kept bucket is queued");
    let (fired, _) = advance_by(&core, 1_000, seq.get(), || {});
    assert_eq!(fired, (2..=seq.get()).collect::<Vec<_>>());
    assert!(core.is_empty());
}
