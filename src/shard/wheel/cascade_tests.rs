//! SPEC W4's shape on one wheel: many entries due within a rotation of level 0's window and the
//! next, scheduled at time 0 from one thread, the drive advancing tick by tick. Every entry fires
//! once, at its tick, in order; and [`w4_load`] reports the most entries one flush or visit (one
//! hold of the shard's lock), one advance and one insert walk, which the split of the big level-1
//! bucket and its paced visits decide (`split.rs`, `visit.rs`; docs/lean_core.md, "A big
//! bucket's cascade").

use super::support::{flat, word, Drive, Load};

/// Entry `i` of `entries` spread over ticks `1..=ticks`: its tick and its 256th (a mix, so that
/// a tick's entries are not in stamp order by their words).
fn deadline_of(i: u64, entries: u64, ticks: u64) -> (u64, u8) {
    (1 + i * ticks / entries, (i * 37 % 256) as u8)
}

/// Schedules `entries` entries over `ticks` ticks on a wheel of `wheel_size` (entry `i` stamped
/// `i`), advances tick by tick to the last, and checks that each advance fires exactly the
/// entries of its tick, in (word, stamp) order, each once: the load the drive saw.
fn w4_shape(entries: u64, ticks: u64, wheel_size: u64, audit_every: u64) -> Load {
    let mut drive: Drive<u32> = Drive::new(wheel_size);
    drive.audit_every = audit_every;
    for i in 0..entries {
        let (tick, rank) = deadline_of(i, entries, ticks);
        drive.insert(tick, rank, i as u32);
    }
    let mut expected: Vec<(u64, u8, u64)> = (0..entries)
        .map(|i| {
            let (tick, rank) = deadline_of(i, entries, ticks);
            flat((word(tick, rank), i))
        })
        .collect();
    expected.sort_unstable();
    let mut next = 0;
    for now in 1..=ticks {
        let fired = drive.advance(now);
        let end = next + expected[next..].iter().take_while(|&&(tick, _, _)| tick == now).count();
        let got: Vec<(u64, u8, u64)> = fired.iter().map(|f| flat(f.order())).collect();
        assert_eq!(got, expected[next..end], "tick {now}");
        assert!(fired.iter().all(|f| u64::from(f.payload) == f.stamp), "tick {now}: payloads");
        next = end;
    }
    assert_eq!(next, expected.len());
    assert!(drive.wheel.is_empty() && drive.next_tick().is_none());
    drive.load
}

/// 20,000 entries over 1,000 ticks on a wheel of 512 (20 a tick), audited every 50 advances:
/// those of ticks 512..=1000 (entries 10,220 to 19,999) go to the level-1 bucket of ticks
/// 512..1023, which the insert of its 1,024th entry splits into its four stages (1,024 walked
/// under that insert's hold); each stage (about 2,500 entries) is then visited from its `opens`
/// (128, 256, 384, 512) in chunks of 256, the least a visit takes, so no flush or visit walks more
/// than 256 and no advance more than 276 (a visit and its tick's level-0 bucket), where the
/// round's flush of an unsplit bucket walks all 9,780 (docs/lean_core.md, "A big
/// bucket's cascade").
#[test]
fn w4_shape_fires_every_entry_once_at_its_tick_in_order() {
    let load = w4_shape(20_000, 1_000, 512, 50);
    assert_eq!(load, Load { per_flush: 256, per_advance: 276, per_insert: 1_024 });
}

/// Not a test: SPEC W4's shape as large as the unit tests' slab holds (`slab::MAX_SLOTS`, 2¹⁶
/// slots), for the load figures (docs/lean_core.md): 64,000 entries over 1,000 ticks on a wheel
/// of 512, printed, e.g. `cargo test --release --lib -- --ignored --exact --nocapture
/// shard::wheel::cascade_tests::w4_load`. Of 1,000,000, the level-1 bucket holds those of ticks
/// 512..=1000, 489,000, and its visits' chunks are larger than the least (docs/lean_core.md).
#[test]
#[ignore]
fn w4_load() {
    let load = w4_shape(64_000, 1_000, 512, u64::MAX);
    println!("W4 shape, 64,000 entries over 1,000 ticks, wheel 512: {load:?}");
}
