//! Two schedules into a level of a shard's wheel that does not exist yet.
//!
//! A level is created under the shard's lock (`Levels::bucket` in `src/shard/wheel/buckets.rs`,
//! reached from `Wheel::file` through the insert's critical section), so two schedulers into one
//! shard cannot both create it: the second finds the first's. The model drives the core of one
//! shard directly, since a `Timer`'s schedulers on two threads go to two shards (the shard of each
//! thread's index), each creating its own level.

use delaywheel::loom_internals::shard::core::{at_tick, pending_per_level, Core, Merge};
use loom::sync::Arc;
use loom::thread;

/// Seeded fault `shard_core_level_recreated`: an insert that finds entries in a bucket above level
/// 0 creates its level again (its chunks dropped and written anew), so the first schedule's entry
/// is lost to the second's.
///
/// With 2 slots a level, level 0 covers ticks 0 and 1: ticks 2 and 3 both go to level 1's slot 1
/// (slots of 2 ticks), which the first schedule creates. Both entries are pending at level 1 after
/// the join, and the advances to 2 and to 3 fire each once, at its own tick.
#[test]
fn overflow_level_created_once() {
    loom::model(|| {
        let core: Arc<Core<u64>> = Arc::new(Core::with_wheel_size(1, 2));
        let scheduler = {
            let core = Arc::clone(&core);
            thread::spawn(move || {
                core.schedule(at_tick(2), 0, 2).map_err(drop).unwrap();
            })
        };
        core.schedule(at_tick(3), 1, 3).map_err(drop).unwrap();
        scheduler.join().unwrap();

        let per_level = pending_per_level(&core);
        assert_eq!(per_level.iter().sum::<usize>(), 2);
        assert_eq!(per_level.get(1), Some(&2), "both at level 1: {per_level:?}");
        let mut merge = Merge::default();
        for tick in [2, 3] {
            let mut out = Vec::new();
            core.advance(tick, u64::MAX, &mut out, &mut merge);
            let orders: Vec<_> = out.iter().map(|due| due.order()).collect();
            assert_eq!(orders, [(at_tick(tick), tick - 2)], "tick {tick} fires its own entry once");
            assert_eq!(core.claim(&out[0]), Some(tick));
        }
        assert_eq!(core.len(), 0);
    });
}
