//! Room written ahead across shards (`room.rs`): runs taken by whichever shard grows, the units
//! adding up to the capacity, given back by a shrink, a reserve exhausted, keys across moves of a
//! slab's mapping, and what is resident (`capacity_is_resident_and_scheduling_into_it_adds_little`).

use super::super::{Core, Handle};
use crate::deadline::Deadline;
use crate::shard::reserve::{unit_slots, RUN_UNITS};
use crate::shard::wheel::Wheel;

/// Slots a unit holds for the tests' `u64` payloads.
fn unit() -> usize {
    unit_slots(Wheel::<u64>::slot_bytes())
}

/// Schedules `count` entries into shard `index`, due at tick 1,000, stamps from `first`.
fn fill(core: &Core<u64>, index: usize, first: u64, count: usize) -> Vec<Handle<u64>> {
    (first..first + count as u64)
        .map(|stamp| {
            core.schedule_in(index, Deadline::at_tick(1_000), stamp, stamp)
                .unwrap_or_else(|_| panic!("{stamp} refused"))
        })
        .collect()
}

/// The reserve's units and the shards' add up to the capacity.
fn assert_adds_up(core: &Core<u64>) -> (usize, Vec<usize>) {
    let (held, capacity) = core.reserve_units().expect("a reserve");
    let taken = core.taken_units();
    assert_eq!(held + taken.iter().sum::<usize>(), capacity, "held {held}, taken {taken:?}");
    (held, taken)
}

#[test]
fn shards_growing_on_several_threads_take_runs_that_add_up_to_the_capacity() {
    // Room for two runs a shard and 10 units more; each shard needs a unit more than a run.
    let all = 8 * RUN_UNITS + 10;
    let core = Core::<u64>::with_capacity(4, 512, all * unit());
    assert_eq!(core.reserve_units(), Some((all, all)));
    std::thread::scope(|scope| {
        for index in 0..4 {
            let core = &core;
            scope.spawn(move || fill(core, index, index as u64 * 1_000_000, RUN_UNITS * unit() + 1));
        }
    });
    assert_eq!(core.len(), 4 * (RUN_UNITS * unit() + 1));
    // A run of 64, then one of 64 more (one a doubling).
    assert_eq!(assert_adds_up(&core), (10, vec![2 * RUN_UNITS; 4]));
}

#[test]
fn a_shrink_after_a_spike_gives_the_runs_back() {
    let all = RUN_UNITS + 20;
    let core = Core::<u64>::with_capacity(2, 512, all * unit());
    let spike = fill(&core, 1, 0, RUN_UNITS * unit());
    let kept = fill(&core, 0, 100_000, 100);
    // The spike's shard took a run; the other what the reserve had left.
    assert_eq!(assert_adds_up(&core), (0, vec![20, RUN_UNITS]));
    // Nothing cut while the spike is pending but the other shard's spare units.
    core.shrink();
    assert_eq!(assert_adds_up(&core), (19, vec![1, RUN_UNITS]));
    for (stamp, handle) in spike.iter().enumerate() {
        assert_eq!(handle.cancel(), Some(stamp as u64));
    }
    assert!(core.shrink() > 0);
    // Shard 0 keeps the unit its 100 entries occupy; the rest went back.
    assert_eq!(assert_adds_up(&core), (all - 1, vec![1, 0]));
    // The units given back are taken again.
    let again = fill(&core, 1, 200_000, RUN_UNITS * unit());
    assert_eq!(assert_adds_up(&core), (all - 1 - RUN_UNITS, vec![1, RUN_UNITS]));
    assert_eq!(core.len(), RUN_UNITS * unit() + 100);
    for handle in kept.iter().chain(&again) {
        assert!(handle.cancel().is_some());
    }
    core.shrink();
    assert_eq!(assert_adds_up(&core), (all, vec![0, 0]));
}

#[test]
fn a_slab_grows_as_before_once_the_reserve_is_empty() {
    let core = Core::<u64>::with_capacity(2, 512, 1);
    assert_eq!(core.reserve_units(), Some((1, 1)));
    let handles = fill(&core, 0, 0, 5_000);
    assert_eq!(core.reserve_units(), Some((0, 1)));
    assert_eq!(core.taken_units(), [1, 0]);
    // The other shard finds the reserve empty and grows fresh.
    let more = fill(&core, 1, 10_000, 5_000);
    assert_eq!(core.taken_units(), [1, 0]);
    assert_eq!(core.len(), 10_000);
    for (stamp, handle) in handles.iter().chain(&more).enumerate() {
        let stamp = if stamp < 5_000 { stamp } else { stamp + 5_000 };
        assert_eq!(handle.cancel(), Some(stamp as u64));
    }
    core.shrink();
    assert_eq!(core.reserve_units(), Some((1, 1)));
    assert_eq!(core.taken_units(), [0, 0]);
}

#[test]
fn keys_stay_valid_across_moves_of_the_mapping() {
    // Two runs (the second, of the half run the reserve has left, moved after the first, which the
    // slab adopted), then fresh growth with the mapping in two pieces: moved into a fresh mapping
    // piece by piece. (40-byte slots: a unit is 512, a run 32,768 of the unit tests' 65,536.)
    let all = RUN_UNITS + RUN_UNITS / 2;
    let core = Core::<u64>::with_capacity(1, 512, all * unit());
    assert!(all * unit() < 60_000, "the runs leave fresh growth to do");
    let handles = fill(&core, 0, 0, 60_000);
    assert_eq!(core.taken_units(), [all]);
    assert_eq!(core.reserve_units(), Some((0, all)));
    for (stamp, handle) in handles.iter().enumerate() {
        assert_eq!(core.deadline(handle), Some(Deadline::at_tick(1_000)), "entry {stamp}");
    }
    for (stamp, handle) in handles.iter().enumerate().skip(1) {
        assert_eq!(handle.cancel(), Some(stamp as u64));
    }
    // A shrink cuts to the first unit, across the pieces, giving back as many units as the slab
    // took (the fresh pages past the runs count as units like theirs, populated).
    core.shrink();
    assert_eq!(core.taken_units(), [0]);
    assert_eq!(core.reserve_units(), Some((all, all)));
    assert_eq!(core.deadline(&handles[0]), Some(Deadline::at_tick(1_000)));
    let again = fill(&core, 0, 100_000, 40_000);
    assert_eq!(core.deadline(&handles[0]), Some(Deadline::at_tick(1_000)));
    assert_eq!(again[39_999].cancel(), Some(139_999));
    assert_eq!(handles[0].cancel(), Some(0));
    assert_adds_up(&core);
}

/// `capacity_is_resident_and_scheduling_into_it_adds_little` in a process of its own, so that no
/// other test's memory moves the process's RSS meanwhile.
#[test]
#[cfg(target_os = "linux")]
fn capacity_is_resident_and_scheduling_into_it_adds_little_alone() {
    // Under AddressSanitizer (`scripts/asan.sh` sets its options) the shadow memory moves the RSS.
    if std::env::var_os("ASAN_OPTIONS").is_some() {
        return;
    }
    let output = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--ignored", "--exact", "--test-threads=1", "--nocapture"])
        .arg("shard::core::room::tests::capacity_is_resident_and_scheduling_into_it_adds_little")
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    assert!(output.status.success(), "{}: {}", output.status, String::from_utf8_lossy(&output.stderr));
    // A name the filter does not match runs nothing, and passes.
    assert!(stdout.contains("1 passed"), "the test did not run");
}

/// Whether transparent huge pages back every anonymous mapping (`[always]` in
/// `/sys/kernel/mm/transparent_hugepage/enabled`): a first touch may then make 2 MiB resident.
#[cfg(target_os = "linux")]
fn huge_pages_always() -> bool {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|mode| mode.contains("[always]"))
}

/// The process's resident bytes (`/proc/self/statm`).
#[cfg(target_os = "linux")]
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("statm");
    let pages = statm.split_whitespace().nth(1).and_then(|pages| pages.parse::<usize>().ok());
    pages.expect("rss") * crate::entry::os::system_page()
}

/// `tests/capacity_memory.rs` on the core: 400,000 slots resident after the build (at least 40
/// bytes a slot), and 400,000 scheduled from 4 threads, each into two shards of its own (a unit
/// test's slab holds 2¹⁶ slots), growing the process by far less than their slots' 48 bytes a
/// fault would. Run alone (`..._alone`).
#[test]
#[ignore = "run in a process of its own by capacity_is_resident_and_scheduling_into_it_adds_little_alone"]
#[cfg(target_os = "linux")]
fn capacity_is_resident_and_scheduling_into_it_adds_little() {
    const N: usize = 400_000;
    // A payload of `InlineTask`'s size and niche: 48-byte slots, the timer's.
    type Payload = (&'static (), [u64; 2]);
    assert_eq!(Wheel::<Payload>::slot_bytes(), 48);
    // Where the system's page is not 4 KiB the core builds no reserve (`reserve.rs`, `mapped`).
    if !crate::shard::reserve::mapped() {
        println!("no reserve: the system's page is {} bytes", crate::entry::os::system_page());
        return;
    }
    let before = rss();
    let core = Core::<Payload>::with_capacity(8, 512, N);
    let built = rss();
    assert!(built - before >= N * 40, "built: {} bytes more", built - before);
    std::thread::scope(|scope| {
        for thread in 0..4 {
            let core = &core;
            scope.spawn(move || {
                for index in [2 * thread, 2 * thread + 1] {
                    let first = index as u64 * 1_000_000;
                    for stamp in first..first + N as u64 / 8 {
                        let payload = (&(), [stamp, 0]);
                        core.schedule_in(index, Deadline::at_tick(1_000), stamp, payload)
                            .map_err(drop)
                            .unwrap();
                    }
                }
            });
        }
    });
    let grown = rss().saturating_sub(built);
    let (held, capacity) = core.reserve_units().expect("a reserve");
    let taken = core.taken_units();
    assert_eq!(held + taken.iter().sum::<usize>(), capacity);
    println!(
        "built {} bytes, scheduling {N} grew {grown} bytes; reserve {held}, taken {taken:?}",
        built - before
    );
    assert_eq!(core.len(), N);
    // Where huge pages back every mapping, a shard's few fresh pages (its first slots, the
    // wheel's buckets) may each make 2 MiB resident: the bound holds for 4 KiB faults only.
    if !huge_pages_always() {
        assert!(grown < N * 16, "scheduling {N} grew {grown} bytes");
    }
}

/// The first-touch figure (docs/lean_core.md, "Room written ahead across shards"): 2¹⁶ entries
/// scheduled into one shard of a core built with room for them, then of one built without, each
/// on a fresh thread: the thread's minor page faults and the time (printed, not asserted):
/// `cargo test --release --lib -- --ignored --exact --nocapture shard::core::room::tests::first_touch`.
#[test]
#[ignore = "prints a figure"]
#[cfg(target_os = "linux")]
fn first_touch() {
    type Payload = (&'static (), [u64; 2]);
    const N: usize = 1 << 16;
    for capacity in [N, 0, N, 0] {
        let core = Core::<Payload>::with_capacity(1, 512, capacity);
        let (faults, took) = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let (faults, start) = (minor_faults(), std::time::Instant::now());
                    for stamp in 0..N as u64 {
                        let payload = (&(), [stamp, 0]);
                        core.schedule_in(0, Deadline::at_tick(1_000), stamp, payload).map_err(drop).unwrap();
                    }
                    (minor_faults() - faults, start.elapsed())
                })
                .join()
                .unwrap()
        });
        println!("capacity {capacity:>6}: {N} scheduled, {faults} minor faults, {took:?}");
    }
}

/// The calling thread's minor page faults (`/proc/thread-self/stat`, its tenth field).
#[cfg(target_os = "linux")]
fn minor_faults() -> i64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("the thread's stat");
    let after_name = &stat[stat.rfind(')').expect("(comm)") + 1..];
    after_name.split_whitespace().nth(7).and_then(|field| field.parse().ok()).expect("minflt")
}

/// A capacity over `MAX_CAPACITY` (which the builder refuses) is refused before anything is
/// mapped, not an allocation failure of the reserve's mapping.
#[test]
#[should_panic(expected = "over MAX_CAPACITY")]
fn a_capacity_over_max_capacity_is_refused() {
    drop(Core::<u64>::with_capacity(2, 512, crate::shard::core::MAX_CAPACITY + 1));
}

#[test]
#[should_panic(expected = "over MAX_CAPACITY")]
fn the_largest_capacity_is_refused_without_overflow() {
    drop(Core::<u64>::with_capacity(2, 512, usize::MAX));
}
