//! The bucket's unit tests.

use super::*;
use crate::entry::{new_entry, new_entry_at, Status};
use crate::sync::{thread_index, Arc, Mutex};
use crate::wheel::slots::MIN_COMPACT;

/// The unit tests' buckets: more lanes than two, so that "another lane" is not always the same.
const LANES: usize = 4;

/// The lane of the calling thread in the unit tests' buckets.
fn local_lane() -> usize {
    thread_index() & (LANES - 1)
}

/// What a visit took out, and when the bucket must be visited next (unit tests).
#[derive(Debug, Default)]
struct Visit {
    /// Every entry taken out, due or to cascade (in transit: no location).
    entries: Vec<EntryId>,
    /// The new expiration, at which the caller must queue the bucket (`None`: nothing left).
    requeue: Option<u64>,
}

impl TimerTaskList {
    /// [`visit_into`](TimerTaskList::visit_into) into a new vector, for the unit tests.
    fn visit(&self, arena: &EntryArena, cursor: u64) -> Visit {
        let mut entries = Vec::new();
        let mut due = Vec::new();
        let out = Handoff { cascade: &mut entries, due: &mut due, late: &mut Vec::new(), stamps: u64::MAX };
        let requeue = match self.visit_into(arena, cursor, out) {
            Popped::Visited { requeue } => requeue,
            Popped::Stale => None,
        };
        // Both kinds, due or not (the unit tests look at what left the bucket).
        let due = due.into_iter().map(|((entry, ..), deadline)| (entry, deadline));
        Visit { entries: entries.into_iter().chain(due).map(|(entry, _)| entry).collect(), requeue }
    }
}

fn entries(arena: &EntryArena, n: usize) -> Vec<Ticket> {
    (0..n).map(|_| new_entry(arena, 5, || {}).unwrap()).collect()
}

fn location(arena: &EntryArena, entry: &Ticket) -> Option<(usize, u64)> {
    arena.lock(entry.id).location.map(|location| (location.stage(), location.index()))
}

/// What a cancel does: claims the entry, takes it out of `bucket`, releases its slot.
fn cancel_out(arena: &EntryArena, bucket: &Arc<TimerTaskList>, entry: &Ticket) {
    assert!(arena.lock(entry.id).claim_for_test(Status::Cancelled));
    let lane = arena.lock(entry.id).location.expect("in a bucket").lane();
    assert_eq!(TimerTaskList::remove(bucket, arena, *entry, lane), Removed::Taken);
    arena.free(entry.id);
}

fn same_entry(a: &EntryId, b: &Ticket) -> bool {
    *a == b.id
}

fn at(tick: u64) -> StagePlan {
    StagePlan::level0_first(tick)
}

/// A held entry as a re-add passes it: its slot and the deadline it is placed by (its own).
fn held(arena: &EntryArena, e: &Ticket) -> (crate::entry::EntryId, crate::deadline::Deadline) {
    (e.id, arena.lock(e.id).deadline)
}

fn stage(index: usize, round: u64, opens: u64, due: u64) -> StagePlan {
    StagePlan { index, round, opens, due }
}

fn add_all(
    arena: &EntryArena,
    bucket: &Arc<TimerTaskList>,
    es: &[Ticket],
    plan: StagePlan,
) -> Vec<Option<u64>> {
    es.iter()
        .map(|e| {
            TimerTaskList::readd(bucket, arena, held(arena, e), plan, None, |_| {})
                .expect("a pending entry is inserted")
        })
        .collect()
}

#[test]
fn expiration_is_set_once_per_round_and_only_lowered() {
    let arena = &EntryArena::unaudited();
    let bucket = Arc::new(TimerTaskList::new(0, 0, 9, LANES));
    let es = entries(arena, 4);
    assert_eq!(add_all(arena, &bucket, &es[..2], at(10)), [Some(10), None], "queued once");
    assert_eq!(add_all(arena, &bucket, &es[2..3], at(14)), [None]);
    assert_eq!(bucket.expiration(), 10, "never raised");
    assert_eq!(add_all(arena, &bucket, &es[3..], at(6)), [Some(6)], "lowered, and re-queued");
    let visit = bucket.visit(arena, 10);
    assert_eq!((visit.entries.len(), visit.requeue), (4, None));
    assert_eq!(
        bucket.visit_into(
            arena,
            10,
            Handoff {
                cascade: &mut Vec::new(),
                due: &mut Vec::new(),
                late: &mut Vec::new(),
                stamps: u64::MAX
            }
        ),
        Popped::Stale,
        "the entry left at 10"
    );
    assert_eq!(bucket.expiration(), NO_EXPIRATION);
    assert!(es.iter().all(|e| location(arena, e).is_none()), "visited entries are in transit");
    assert_eq!(add_all(arena, &bucket, &es[..1], at(30)), [Some(30)]);
}

#[test]
fn a_coarse_visit_cascades_the_entries_due_at_the_cursor_and_sets_aside_the_late_ones() {
    let arena = &EntryArena::unaudited();
    // A level-1 bucket whose round starts at 100: one stage, deadlines 100 to 103 in turn.
    let bucket = Arc::new(TimerTaskList::new(1, 0, 9, LANES));
    let es: Vec<Ticket> = (0..12).map(|i| new_entry(arena, 100 + i % 4, || {}).unwrap()).collect();
    add_all(arena, &bucket, &es, stage(0, 100, 100, 100));
    // The advance began after the first eight were stamped.
    let stamps = es[7].generation;
    let (mut cascade, mut due, mut late) = (Vec::new(), Vec::new(), Vec::new());
    let out = Handoff { cascade: &mut cascade, due: &mut due, late: &mut late, stamps };
    assert_eq!(bucket.visit_into(arena, 101, out), Popped::Visited { requeue: None });
    let ticks = |v: &Vec<(EntryId, Deadline)>| v.iter().map(|(_, d)| d.tick()).collect::<Vec<_>>();
    // Only a level-0 visit fires: the entries due at 101 go to the re-add, which files them in
    // the quarters of level 0; those stamped later are set aside for the next advance.
    assert!(due.is_empty());
    assert_eq!(ticks(&cascade), [100, 101, 102, 103, 100, 101, 102, 103, 102, 103], "in list order");
    assert_eq!(ticks(&late), [100, 101], "due at 101, stamped after the advance began");
    assert!(es.iter().all(|e| location(arena, e).is_none()), "every kind is in transit");
    assert!(es.iter().all(|e| !crate::entry::is_due(arena, e.id)), "none is marked due");
}

#[test]
fn a_level0_visit_takes_the_lowest_quarter_and_is_queued_again_for_the_rest() {
    let arena = &EntryArena::unaudited();
    let bucket = Arc::new(TimerTaskList::new(0, 5, 9, LANES));
    // Tick 5: ranks 200 (fourth quarter) and 10 (first), added in that order.
    let at_rank = |rank| Deadline::new(5, rank).unwrap();
    let last = new_entry_at(arena, at_rank(200), || {}).unwrap();
    let first = new_entry_at(arena, at_rank(10), || {}).unwrap();
    for (entry, rank) in [(&last, 200), (&first, 10)] {
        add_all(arena, &bucket, std::slice::from_ref(entry), StagePlan::level0(at_rank(rank)));
    }
    let (mut cascade, mut due) = (Vec::new(), Vec::new());
    let mut visit = |due: &mut Vec<DueEntry>| {
        let out = Handoff { cascade: &mut cascade, due, late: &mut Vec::new(), stamps: u64::MAX };
        bucket.visit_into(arena, 5, out)
    };
    assert_eq!(visit(&mut due), Popped::Visited { requeue: Some(5) }, "again at the cursor");
    assert_eq!(due.iter().map(|((id, ..), _)| *id).collect::<Vec<_>>(), [first.id]);
    assert_eq!(visit(&mut due), Popped::Visited { requeue: None });
    assert_eq!(due.iter().map(|((id, ..), _)| *id).collect::<Vec<_>>(), [first.id, last.id]);
    assert!(cascade.is_empty());
}

#[test]
fn small_stages_wait_for_their_round_big_ones_open_early() {
    let arena = &EntryArena::unaudited();
    // Level-1 bucket of 4 stages, round 100 (slots of 100 ticks): stage j covers 100+25j.., opens
    // at 25(j+1).
    let bucket = Arc::new(TimerTaskList::new(1, 0, 9, LANES));
    let small = entries(arena, 2);
    assert_eq!(add_all(arena, &bucket, &small[..1], stage(3, 100, 100, 175)), [Some(100)]);
    assert_eq!(add_all(arena, &bucket, &small[1..], stage(1, 100, 50, 125)), [None], "small: at its round");
    let big = entries(arena, EARLY_LANE_LEN + 1);
    let queued = add_all(arena, &bucket, &big, stage(0, 100, 25, 100));
    assert_eq!(queued.iter().flatten().collect::<Vec<_>>(), [&25], "the entry that makes it big");
    assert_eq!(location(arena, &big[0]), Some((0, 0)));
    let visit = bucket.visit(arena, 99); // a tick before its range: the whole stage
    assert_eq!(visit.entries.len(), EARLY_LANE_LEN + 1, "only the big stage");
    assert!(visit.entries.iter().zip(&big).all(|(a, b)| same_entry(a, b)), "insertion order");
    assert_eq!(visit.requeue, Some(100), "the small stages wait for the round");
    let visit = bucket.visit(arena, 100);
    assert_eq!((visit.entries.len(), visit.requeue), (2, None));
    // A stage emptied by removal leaves the expiration low; the visit then finds nothing.
    assert_eq!(add_all(arena, &bucket, &small[..1], stage(1, 300, 250, 325)), [Some(300)]);
    assert_eq!(add_all(arena, &bucket, &small[1..], stage(2, 200, 150, 250)), [Some(200)]);
    cancel_out(arena, &bucket, &small[1]);
    let visit = bucket.visit(arena, 200);
    assert_eq!((visit.entries.len(), visit.requeue), (0, Some(300)));
}

#[test]
fn a_big_stage_with_time_to_spare_cascades_in_paced_chunks() {
    let arena = &EntryArena::unaudited();
    let bucket = Arc::new(TimerTaskList::new(1, 0, 9, LANES));
    let es = entries(arena, 3_000);
    add_all(arena, &bucket, &es, stage(0, 1_000, 10, 1_000));
    // 989 ticks to spare: twice the even pace is 7 a tick, so the minimum chunk.
    let visit = bucket.visit(arena, 10);
    assert_eq!((visit.entries.len(), visit.requeue), (CASCADE_CHUNK, Some(11)));
    assert!(visit.entries.iter().zip(&es).all(|(a, b)| same_entry(a, b)), "insertion order");
    // Close to its range the pace rises: 2744 left, 9 ticks to spare: ceil(2 * 2744 / 9).
    let visit = bucket.visit(arena, 990);
    assert_eq!((visit.entries.len(), visit.requeue), (610, Some(991)));
    let visit = bucket.visit(arena, 995); // 2134 left, 4 ticks: 1067
    assert_eq!((visit.entries.len(), visit.requeue), (1_067, Some(996)));
    let visit = bucket.visit(arena, 999);
    assert_eq!((visit.entries.len(), visit.requeue), (1_067, None), "no tick to spare: the rest");
    assert!(es.iter().all(|e| location(arena, e).is_none()));
}

#[test]
fn removal_in_any_order_keeps_every_location_exact() {
    let arena = &EntryArena::unaudited();
    let bucket = Arc::new(TimerTaskList::new(0, 0, 9, LANES));
    let es = entries(arena, 1_000);
    for e in &es {
        assert!(TimerTaskList::readd(&bucket, arena, held(arena, e), at(5), None, |_| {}).is_ok());
    }
    // FIFO-ish, then LIFO-ish, then scattered removals, checking locations after each.
    let mut order: Vec<usize> = (0..300).collect();
    order.extend((700..1_000).rev());
    order.extend((300..700).filter(|i| i % 3 != 0));
    for (step, &i) in order.iter().enumerate() {
        cancel_out(arena, &bucket, &es[i]);
        assert!(location(arena, &es[i]).is_none());
        if step % 97 == 0 {
            let stages = bucket.lane(bucket.local_lane()).stages.lock();
            let slots = &stages[0].slots;
            for e in &es {
                if let Some((_, index)) = location(arena, e) {
                    let held = slots.get(index).expect("hole at a location");
                    assert!(same_entry(&held, e), "location names another entry");
                }
            }
            assert_eq!(slots.live(), es.iter().filter(|e| location(arena, e).is_some()).count());
        }
    }
    let left: Vec<usize> = (300..700).filter(|i| i % 3 == 0).collect();
    {
        let stages = bucket.lane(bucket.local_lane()).stages.lock();
        assert_eq!(stages[0].slots.live(), left.len());
        assert!(stages[0].slots.span() <= 4 * left.len() + MIN_COMPACT, "holes are bounded");
    }
    assert_eq!(bucket.flush(arena).len(), left.len());
}

/// Runs `f` on a thread whose lane is `lane` (threads are numbered as they start: one of any
/// `LANES` in a row has it).
fn on_lane<R: Send>(lane: usize, f: impl FnOnce() -> R + Send) -> R {
    let mut f = Some(f);
    loop {
        let done = std::thread::scope(|scope| {
            scope
                .spawn(|| match local_lane() == lane {
                    true => Some(f.take().expect("run once")()),
                    false => None,
                })
                .join()
                .unwrap()
        });
        if let Some(done) = done {
            return done;
        }
    }
}

#[test]
fn each_thread_adds_to_its_lane_and_a_visit_takes_every_lane() {
    let arena = &EntryArena::unaudited();
    let bucket = Arc::new(TimerTaskList::new(1, 0, 9, LANES));
    // Stage 0 (round 100, open from 25): just small in each lane, though not in sum.
    let here = entries(arena, EARLY_LANE_LEN);
    let there = entries(arena, EARLY_LANE_LEN + 2);
    assert_eq!(add_all(arena, &bucket, &here, stage(0, 100, 25, 100))[0], Some(100));
    let other = (local_lane() + 1) % LANES;
    let queued = on_lane(other, || add_all(arena, &bucket, &there[..EARLY_LANE_LEN], stage(0, 100, 25, 100)));
    assert!(queued.iter().all(Option::is_none), "the round is queued already");
    let lane_of = |e: &Ticket| arena.lock(e.id).location.map(|location| location.lane());
    assert_eq!(lane_of(&here[0]), Some(local_lane()));
    assert_ne!(lane_of(&there[0]), lane_of(&here[0]));
    assert_eq!(bucket.expiration(), 100, "each lane's stage is small: visited at its round");
    // A cancel takes its entry out of the lane it is in, whichever thread cancels.
    cancel_out(arena, &bucket, &there[0]);
    // One more in a lane makes that lane's stage big: it opens at 25, alone.
    let queued = on_lane(other, || add_all(arena, &bucket, &there[EARLY_LANE_LEN..], stage(0, 100, 25, 100)));
    assert_eq!(lane_of(&there[EARLY_LANE_LEN]), lane_of(&there[1]), "both batches in the other lane");
    assert_eq!(queued, [None, Some(25)], "big once it holds more than EARLY_LANE_LEN");
    let visit = bucket.visit(arena, 99);
    assert_eq!(visit.entries.len(), EARLY_LANE_LEN + 1, "only the big lane's stage");
    assert_eq!(visit.requeue, Some(100), "the small lane waits for the round");
    let rest = bucket.visit(arena, 100);
    assert_eq!(rest.requeue, None);
    assert!(here.iter().chain(&there).all(|e| location(arena, e).is_none()), "every lane emptied");
    // A flush empties every lane too.
    add_all(arena, &bucket, &here[..1], stage(1, 600, 300, 620));
    on_lane(other, || add_all(arena, &bucket, &here[1..2], stage(3, 600, 500, 650)));
    on_lane((other + 1) % LANES, || add_all(arena, &bucket, &here[2..3], stage(2, 600, 400, 640)));
    assert_eq!(bucket.flush(arena).len(), 3);
    assert_eq!(bucket.expiration(), NO_EXPIRATION);
}

#[test]
fn a_narrow_bucket_takes_every_thread_in_lane_0() {
    let arena = &EntryArena::unaudited();
    let bucket = Arc::new(TimerTaskList::new(1, 0, 9, LANES).narrow());
    let es = entries(arena, 2);
    on_lane(1, || add_all(arena, &bucket, &es[..1], stage(0, 100, 25, 100)));
    on_lane(2, || add_all(arena, &bucket, &es[1..], stage(0, 100, 25, 100)));
    for e in &es {
        assert_eq!(arena.lock(e.id).location.map(|location| location.lane()), Some(0));
    }
    assert_eq!(bucket.spread(), 0);
    assert_eq!(bucket.flush(arena).len(), 2);
}

#[test]
fn a_narrow_bucket_spreads_once_an_add_finds_lane_0_held_but_not_by_a_visit() {
    let arena = &EntryArena::unaudited();
    let bucket = Arc::new(TimerTaskList::new(0, 0, 9, LANES).narrow());
    let es = entries(arena, 2);
    // A visit holds every lane and the gate: an add waits for it, and spreads no wider.
    let visit = bucket.lock_all();
    std::thread::scope(|scope| {
        let adder = scope.spawn(|| on_lane(1, || add_all(arena, &bucket, &es[..1], stage(0, 100, 25, 100))));
        std::thread::sleep(std::time::Duration::from_millis(20));
        drop(visit);
        adder.join().unwrap();
    });
    assert_eq!(bucket.spread(), 0, "a visit is no contention between adds");
    // An add that finds lane 0 held by another add spreads the bucket over every lane.
    let lane0 = bucket.lane(0).stages.lock();
    on_lane(1, || add_all(arena, &bucket, &es[1..], stage(0, 100, 25, 100)));
    drop(lane0);
    assert_eq!(bucket.spread(), LANES - 1);
    assert_eq!(arena.lock(es[1].id).location.map(|location| location.lane()), Some(1));
    assert_eq!(bucket.flush(arena).len(), 2, "a flush finds every lane");
}

#[test]
fn a_bucket_is_a_few_cache_lines_per_lane() {
    // A header of 32 bytes (48 in its `Arc`), then the lanes, each lock and 4 stages (488 bytes,
    // each stage's last chunk inline: `chunk_deque/`) on 512 bytes of their own.
    assert_eq!(std::mem::size_of::<TimerTaskList>(), 32);
    assert_eq!(std::mem::size_of::<Lane>(), 512);
    assert_eq!(std::mem::size_of_val(&*TimerTaskList::new(0, 0, 9, 16).lanes), 16 * 16);
    assert_eq!(std::mem::size_of::<Mutex<[Stage; 4]>>(), 488);
}

#[test]
fn a_shut_down_flag_refuses_adds_and_a_cancelled_entry_is_not_inserted() {
    let arena = &EntryArena::unaudited();
    let bucket = Arc::new(TimerTaskList::new(0, 0, 9, LANES));
    let flag = AtomicBool::new(true);
    let mut fresh = Fresh::new(Deadline::at_tick(5), || {}, arena, crate::entry::StampBy::Timer).unwrap();
    let id = arena.alloc().unwrap();
    let refused = TimerTaskList::insert_new(&bucket, arena, (id, &mut fresh), at(5), &flag, |_| {});
    assert_eq!(refused, Err(ShutDown));
    assert_eq!(fresh.ticket(id), None, "the task stays with the scheduler, the slot vacant");
    assert!(!arena.lock(id).is_occupied());
    flag.store(false, Ordering::Relaxed);
    let inserted = TimerTaskList::insert_new(&bucket, arena, (id, &mut fresh), at(5), &flag, |_| {});
    assert_eq!(inserted, Ok(Some(5)), "the first add queues the bucket");
    let ticket = fresh.ticket(id).expect("occupied by the insert");
    assert_eq!(ticket.bucket, LaneKey::new(bucket.key(), local_lane()));
    assert_eq!(location(arena, &ticket), Some((0, 0)));
    let es = entries(arena, 1);
    assert!(arena.lock(es[0].id).claim_for_test(Status::Cancelled));
    assert_eq!(
        TimerTaskList::readd(&bucket, arena, held(arena, &es[0]), at(5), None, |_| {}),
        Err(Refused::NotPending),
        "a cancelled entry stays out"
    );
    // A reset wrote another deadline into a held entry: refused, to be placed again.
    let es = entries(arena, 1);
    let placed_by = Deadline::at_tick(4);
    assert_ne!(held(arena, &es[0]).1, placed_by);
    let moved = TimerTaskList::readd(&bucket, arena, (es[0].id, placed_by), at(5), None, |_| {});
    assert_eq!(moved, Err(Refused::Moved(held(arena, &es[0]).1)));
    // With the flag (a reset's re-add), refused once shutting down.
    flag.store(true, Ordering::Relaxed);
    let refused = TimerTaskList::readd(&bucket, arena, held(arena, &es[0]), at(5), Some(&flag), |_| {});
    assert_eq!(refused, Err(Refused::ShutDown));
    assert!(arena.lock(es[0].id).claim_for_test(Status::Cancelled));
    let flushed: Vec<_> = bucket.flush(arena).into_iter().map(|(entry, _)| entry).collect();
    assert_eq!(flushed, [id]);
}
