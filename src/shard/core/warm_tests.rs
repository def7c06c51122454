//! Warming reads the next tick's buckets and changes nothing (`warm.rs`).

use super::super::tests::schedule;
use super::super::{Core, Merge};
use super::MOST;

/// Advances to `now` and claims each due entry in order: the payloads fired.
fn advance(core: &Core<u32>, now: u64) -> Vec<u32> {
    let mut out = Vec::new();
    core.advance(now, u64::MAX, &mut out, &mut Merge::default());
    out.iter().map(|due| core.claim(due).expect("held until claimed")).collect()
}

#[test]
fn warming_reads_the_next_ticks_buckets_once_and_changes_nothing() {
    let core = Core::<u32>::new(1);
    let handles: Vec<_> =
        (0..5).map(|i| schedule(&core, 5 + u64::from(i >= 3), u64::from(i) + 1, i)).collect();
    assert_eq!(advance(&core, 3), Vec::<u32>::new());
    // Tick 5 is two ticks away at 3: not warmed.
    assert_eq!(core.warm_next(3, None), None);
    assert_eq!(core.warm_next(4, None), Some((5, 3)));
    assert_eq!(core.warm_next(4, Some(5)), None, "warmed once");
    assert_eq!(core.len(), 5);
    assert_eq!(advance(&core, 5), vec![0, 1, 2]);
    assert!(handles[3].cancel().is_some());
    assert_eq!(core.warm_next(5, Some(5)), Some((6, 1)));
    assert_eq!(advance(&core, 6), vec![4]);
    assert_eq!(core.warm_next(6, None), None, "nothing queued");
}

#[test]
fn warming_reads_at_most_its_bound_and_the_flush_takes_every_entry() {
    let core = Core::<u32>::new(1);
    let n = MOST as u32 + 500;
    for i in 0..n {
        schedule(&core, 2, u64::from(i) + 1, i);
    }
    assert_eq!(core.warm_next(1, None), Some((2, MOST)));
    assert_eq!(advance(&core, 2), (0..n).collect::<Vec<_>>());
}

/// Payloads of `u64`, each warmed counted into `WARMED` (by its value).
#[derive(Default)]
struct Counting;

static WARMED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl super::super::Extra<u64> for Counting {
    fn warm(payload: &u64) {
        WARMED.fetch_add(*payload, std::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn warming_touches_the_payload_of_each_entry_it_reads() {
    let core = Core::<u64, Counting>::with_extra(1, 64);
    for (stamp, payload) in [(1, 1u64), (2, 10), (3, 100)] {
        core.schedule(crate::deadline::Deadline::at_tick(2 + u64::from(payload == 100)), stamp, payload)
            .unwrap_or_else(|_| panic!("refused"));
    }
    assert_eq!(core.warm_next(1, None), Some((2, 2)));
    assert_eq!(WARMED.load(std::sync::atomic::Ordering::Relaxed), 11, "tick 2's two payloads, not tick 3's");
}

/// A probe for callgrind, not a check of speed (docs/benchmarks.md, "The batch's sort"): 60,000
/// entries at random exact deadlines over 100 ticks of 1 ms, each tick warmed, advanced and
/// claimed in turn; every entry fires once.
#[test]
#[ignore]
fn probe_a_hundred_ticks_of_six_hundred_entries() {
    let ticks = 100u64;
    let core = Core::<u32>::new(1);
    let mut rng = crate::test_rng::XorShift::new(7);
    let fractions = crate::deadline::Fractions::new(1_000_000).expect("1 ms ticks");
    let n = 60_000u32;
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let word = fractions.deadline(1 + rng.next() % ticks, rng.next() % 1_000_000).expect("exact");
            core.schedule(word, u64::from(i) + 1, i).unwrap_or_else(|_| panic!("{i} refused"))
        })
        .collect();
    drop(handles);
    let (mut out, mut merge, mut fired) = (Vec::new(), Merge::default(), 0);
    for tick in 1..=ticks {
        core.warm_next(tick - 1, None);
        core.advance(tick, u64::MAX, &mut out, &mut merge);
        fired += out.drain(..).filter(|due| core.claim(due).is_some()).count();
    }
    assert_eq!(fired, n as usize);
}

/// A probe of what warming saves, not a check of speed (docs/benchmarks.md, "Warming the next
/// tick"): a million entries at random exact deadlines over 1,000 ticks of 1 ms, scheduled from
/// 16 threads into 16 shards; then each tick advanced and claimed in turn, its advance timed,
/// first cold, then on a second `Core` built alike, each tick warmed before. Prints the
/// advance's median and 90th percentile per tick.
#[test]
#[ignore]
fn probe_the_advance_of_a_million_entries_cold_and_warmed() {
    use std::time::Instant;
    const THREADS: usize = 16;
    const PER_THREAD: u32 = 62_500;
    let ticks = 1_000u64;
    for warm in [false, true] {
        let core = std::sync::Arc::new(Core::<u32>::new(THREADS));
        let fractions = crate::deadline::Fractions::new(1_000_000).expect("1 ms ticks");
        let threads: Vec<_> = (0..THREADS as u32)
            .map(|t| {
                let core = std::sync::Arc::clone(&core);
                std::thread::spawn(move || {
                    let mut rng = crate::test_rng::XorShift::new(u64::from(t) + 7);
                    for i in 0..PER_THREAD {
                        let tick = 1 + rng.next() % ticks;
                        let word = fractions.deadline(tick, rng.next() % 1_000_000).expect("exact");
                        let stamp = u64::from(t * PER_THREAD + i) + 1;
                        core.schedule(word, stamp, i).unwrap_or_else(|_| panic!("refused"));
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|thread| thread.join().expect("scheduled"));
        let (mut out, mut merge, mut fired, mut times) = (Vec::new(), Merge::default(), 0, Vec::new());
        for tick in 1..=ticks {
            if warm {
                core.warm_next(tick - 1, None);
            }
            let started = Instant::now();
            core.advance(tick, u64::MAX, &mut out, &mut merge);
            times.push(started.elapsed().as_micros());
            fired += out.drain(..).filter(|due| core.claim(due).is_some()).count();
        }
        assert_eq!(fired, THREADS * PER_THREAD as usize);
        times.sort_unstable();
        eprintln!("warmed {warm}: advance of a tick, median {} us, p90 {} us", times[500], times[900]);
    }
}
