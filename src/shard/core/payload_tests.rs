//! The calls that reach an entry's payload besides its take, and uncounted payloads: an entry
//! whose payload the extra says does not count is out of `len` and of every total through each
//! move (insert, claim, cancel, drain, a cancel of many), and in the wheel as any other.

use super::state::Totals;
use super::{Core, Extra, Merge};
use crate::deadline::Deadline;

/// A payload: whether it counts, and a number.
type Marked = (bool, u32);

/// The extra that counts a payload by its mark.
#[derive(Default)]
struct ByMark;

impl Extra<Marked> for ByMark {
    fn counts(payload: &Marked) -> bool {
        payload.0
    }
}

fn at(tick: u64) -> Deadline {
    Deadline::at_tick(tick)
}

/// An uncounted entry fires, is cancelled and drained as any other, never counted.
#[test]
fn an_uncounted_payload_stays_out_of_len_and_the_totals() {
    let core: Core<Marked, ByMark> = Core::with_extra(2, 8);
    let counted = core.schedule(at(3), 1, (true, 1)).map_err(drop).unwrap();
    let uncounted = core.schedule(at(3), 2, (false, 2)).map_err(drop).unwrap();
    core.schedule(at(5), 3, (false, 3)).map_err(drop).unwrap();
    core.schedule(at(5), 4, (true, 4)).map_err(drop).unwrap();
    assert_eq!(core.len(), 2);
    assert_eq!(core.totals(), Totals { scheduled: 2, ..Totals::default() });
    let (mut out, mut merge) = (Vec::new(), Merge::default());
    core.advance(3, u64::MAX, &mut out, &mut merge);
    assert_eq!(out.len(), 2, "both held");
    assert_eq!(core.cancel(&uncounted), Some((false, 2)), "a cancel wins over the claim");
    assert_eq!(core.claim(&out[0]), Some((true, 1)));
    assert!(core.claim(&out[1]).is_none() && core.cancel(&counted).is_none());
    assert_eq!(core.len(), 1);
    assert_eq!(core.totals(), Totals { scheduled: 2, fired: 1, ..Totals::default() });
    let mut drained = Vec::new();
    core.close(&mut drained, &mut merge);
    let payloads: Vec<Marked> = drained.into_iter().map(|fired| fired.payload).collect();
    assert_eq!(payloads, [(false, 3), (true, 4)]);
    assert_eq!((core.len(), core.totals().abandoned), (0, 1));
}

/// `with_entry` reads and rewrites a pending payload (held too) with its deadline;
/// `reset_with_payload` moves the entry and rewrites its payload in one critical section;
/// `handle_of` gives a due entry's handle back; `cancel_each` takes the picked entries of every
/// shard, held ones too, counted out as cancels.
#[test]
fn payloads_are_reached_in_place() {
    let core: Core<Marked, ByMark> = Core::with_extra(2, 8);
    let handles: Vec<_> = (0..4u32)
        .map(|i| {
            core.schedule_in(i as usize % 2, at(2), u64::from(i) + 1, (i != 3, i)).map_err(drop).unwrap()
        })
        .collect();
    assert_eq!(handles[0].with_entry(|deadline, payload, _| (deadline, *payload)), Some((at(2), (true, 0))));
    assert_eq!(handles[0].position(), Some(((0, 2, 2), at(2))), "level 0, slot 2, due at 2");
    assert!(handles[1].reset_with_payload(at(4), |payload, _| payload.1 = 10));
    assert_eq!(handles[1].with_entry(|deadline, payload, _| (deadline, *payload)), Some((at(4), (true, 10))));
    let (mut out, mut merge) = (Vec::new(), Merge::default());
    core.advance(2, u64::MAX, &mut out, &mut merge);
    assert_eq!(out.len(), 3, "0, 2 and 3 held");
    assert!(!handles[0].reset_with_payload(at(6), |_, _| unreachable!("a held entry does not move")));
    assert_eq!(handles[2].with_entry(|_, payload, _| payload.1), Some(2), "a held entry's payload");
    let named = core.handle_of(&out[1]);
    assert!(named.same_header(&handles[2]) && named.entry() == handles[2].entry());
    let mut taken = Vec::new();
    core.cancel_each(|payload| payload.1 % 2 == 0 || !payload.0, &mut taken);
    taken.sort_unstable();
    assert_eq!(taken, [(false, 3), (true, 0), (true, 2), (true, 10)]);
    assert!(out.iter().all(|due| core.claim(due).is_none()), "the held ones were taken");
    assert_eq!(core.len(), 0);
    assert_eq!(core.totals(), Totals { scheduled: 3, cancelled: 3, rearmed: 1, ..Totals::default() });
    assert!(handles.iter().all(|handle| handle.with_entry(|_, _, _| ()).is_none()));
}

/// `claim_if` and `set_aside_if` look at the held payload first: one not picked stays held, for
/// the claim after; one picked is claimed, or put back for the next advance.
#[test]
fn a_held_entry_is_claimed_or_set_aside_by_its_payload() {
    let core: Core<Marked, ByMark> = Core::with_extra(1, 8);
    for i in 0..3u32 {
        core.schedule(at(2), u64::from(i) + 1, (true, i)).map_err(drop).unwrap();
    }
    let (mut out, mut merge) = (Vec::new(), Merge::default());
    core.advance(2, u64::MAX, &mut out, &mut merge);
    assert_eq!(out.len(), 3);
    assert_eq!(core.claim_if(&out[0], |payload| payload.1 == 1), None, "not picked: still held");
    assert_eq!(core.claim_if(&out[1], |payload| payload.1 == 1), Some((true, 1)));
    assert!(!core.set_aside_if(&out[0], |payload| payload.1 == 2), "not picked: still held");
    assert!(core.set_aside_if(&out[2], |payload| payload.1 == 2));
    assert_eq!(core.claim(&out[0]), Some((true, 0)));
    core.advance(2, u64::MAX, &mut out, &mut merge);
    assert_eq!(out.len(), 4, "the next advance holds it again");
    assert_eq!(core.claim(&out[3]), Some((true, 2)));
    assert_eq!(core.totals(), Totals { scheduled: 3, fired: 3, ..Totals::default() });
}
