//! The core under std threads: schedulers that cancel and reset some of their entries while a
//! driver thread advances tick by tick and claims each due entry in the batch's order, yielding
//! between claims so that cancels reach held entries; every entry ends exactly once (cancelled,
//! claimed, or drained at the end), never fires before its deadline nor in a round whose limit is
//! below its sequence number, and each batch is in order.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread;

use super::{Core, Due, Merge};
use crate::deadline::Deadline;
use crate::test_rng::XorShift;

const THREADS: usize = 4;
const PER_THREAD: usize = 3_000;

/// What every thread shares: the core, the driver's tick, the callers' sequence numbers, and how
/// each entry ended.
struct Shared {
    core: Core<usize>,
    now: AtomicU64,
    seq: AtomicU64,
    /// Per entry: 1 cancelled, 2 claimed, 3 drained (any second end is caught at once).
    ends: Vec<AtomicU8>,
    /// Claims that found their entry gone (a cancel won it while it was held).
    lost_claims: AtomicU64,
    done: AtomicBool,
}

impl Shared {
    fn end(&self, id: usize, how: u8) {
        let before = self.ends[id].swap(how, Ordering::Relaxed);
        assert_eq!(before, 0, "entry {id} ended twice (as {before}, then as {how})");
    }
}

fn schedule_and_cancel(shared: &Shared, thread: usize) {
    let mut rng = XorShift::new(100 + thread as u64);
    let mut handles = Vec::new();
    for n in 0..PER_THREAD {
        let id = thread * PER_THREAD + n;
        let now = shared.now.load(Ordering::Relaxed);
        let deadline = now + rng.next() % 200;
        let seq = shared.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let deadline = Deadline::new(deadline, (rng.next() % 256) as u8).expect("in range");
        let handle = shared.core.schedule(deadline, seq, id).expect("room");
        handles.push((handle, id));
        let (handle, id) = handles[rng.next() as usize % handles.len()];
        match rng.next() % 4 {
            0 => {
                if let Some(payload) = shared.core.cancel(&handle) {
                    assert_eq!(payload, id, "a handle cancels its own entry");
                    shared.end(id, 1);
                }
            }
            1 => {
                let now = shared.now.load(Ordering::Relaxed);
                shared.core.reset(&handle, Deadline::at_tick(now + rng.next() % 50));
            }
            _ => {}
        }
        if n % 64 == 0 {
            thread::yield_now();
        }
    }
}

fn drive(shared: &Shared) {
    let (mut out, mut merge) = (Vec::new(), Merge::default());
    loop {
        let done = shared.done.load(Ordering::Acquire);
        let now = shared.now.load(Ordering::Relaxed) + 1;
        shared.now.store(now, Ordering::Relaxed);
        // The round's limit: the last sequence number handed out (entries numbered above it, and
        // those scheduled meanwhile, may wait for the next advance).
        let limit = shared.seq.load(Ordering::Relaxed);
        shared.core.advance(now, limit, &mut out, &mut merge);
        check_batch(&out, now, limit);
        for (n, due) in out.drain(..).enumerate() {
            if let Some(id) = shared.core.claim(&due) {
                shared.end(id, 2);
            } else {
                shared.lost_claims.fetch_add(1, Ordering::Relaxed);
            }
            if n % 8 == 7 {
                thread::yield_now();
            }
        }
        if done {
            return;
        }
        thread::yield_now();
    }
}

/// A batch is in order and holds nothing due after `now` or numbered above `limit`.
fn check_batch(batch: &[Due], now: u64, limit: u64) {
    assert!(batch.iter().all(|due| due.entry.stamp <= limit), "an entry above the round's limit fired");
    assert!(batch.iter().all(|due| due.entry.deadline.tick() <= now), "an entry fired before its deadline");
    assert!(batch.windows(2).all(|pair| pair[0].order() <= pair[1].order()), "a batch out of order");
}

#[test]
fn schedulers_and_a_driver_end_every_entry_once() {
    let shared = Arc::new(Shared {
        core: Core::new(THREADS),
        now: AtomicU64::new(0),
        seq: AtomicU64::new(0),
        ends: (0..THREADS * PER_THREAD).map(|_| AtomicU8::new(0)).collect(),
        done: AtomicBool::new(false),
        lost_claims: AtomicU64::new(0),
    });
    let driver = {
        let shared = Arc::clone(&shared);
        thread::spawn(move || drive(&shared))
    };
    let workers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let shared = Arc::clone(&shared);
            thread::spawn(move || schedule_and_cancel(&shared, thread))
        })
        .collect();
    for worker in workers {
        worker.join().expect("a scheduler panicked");
    }
    shared.done.store(true, Ordering::Release);
    driver.join().expect("the driver panicked");
    let pending = shared.core.len();
    let mut out = Vec::new();
    shared.core.drain_all(&mut out, &mut Merge::default());
    assert_eq!(out.len(), pending, "len() once quiet is exact");
    for fired in out {
        shared.end(fired.payload, 3);
    }
    assert!(shared.ends.iter().all(|end| end.load(Ordering::Relaxed) != 0), "an entry never ended");
    let fired = shared.ends.iter().filter(|end| end.load(Ordering::Relaxed) == 2).count();
    let cancelled = shared.ends.iter().filter(|end| end.load(Ordering::Relaxed) == 1).count();
    let held = shared.lost_claims.load(Ordering::Relaxed);
    assert!(held <= cancelled as u64, "a claim found nothing with no cancel to explain it");
    assert!(
        fired > 0 && cancelled > 0,
        "fired {fired}, cancelled {cancelled} ({held} while held): both raced"
    );
    assert!(shared.core.is_empty());
}

/// Handles used from a thread other than the one that scheduled them, into every shard: each
/// carries its shard's index, a reset moves its entry there and offers the new round (the entry
/// fires at its new deadline), a cancel takes it, and a deadline reads back, whichever shard the
/// calling thread's own is.
#[test]
fn handles_reset_and_cancel_from_another_thread() {
    let core = Arc::new(Core::new(4));
    let handles: Vec<_> = (0..4)
        .map(|shard| {
            core.schedule_in(shard, Deadline::at_tick(40), shard as u64, shard).map_err(drop).unwrap()
        })
        .collect();
    assert!(handles.iter().enumerate().all(|(shard, handle)| handle.index() == shard));
    let other = {
        let (core, handles) = (Arc::clone(&core), handles.clone());
        thread::spawn(move || {
            for (shard, handle) in handles.iter().enumerate() {
                let deadline = Deadline::at_tick(10 + shard as u64);
                assert!(core.reset(handle, deadline), "shard {shard}");
                assert_eq!(core.deadline(handle), Some(deadline));
            }
            core.cancel(&handles[3])
        })
    };
    assert_eq!(other.join().unwrap(), Some(3));
    assert_eq!(core.next_tick(), Some(10), "the reset's new round is offered");
    let (mut out, mut merge) = (Vec::new(), Merge::default());
    for now in 1..=40 {
        let start = out.len();
        core.advance(now, u64::MAX, &mut out, &mut merge);
        assert!(out[start..].iter().all(|due| due.order().0.tick() == now), "fired at {now}");
    }
    let fired: Vec<usize> = out.iter().map(|due| core.claim(due).unwrap()).collect();
    assert_eq!(fired, [0, 1, 2], "each at its new deadline, the cancelled one not");
    assert!(core.is_empty() && handles.iter().all(|handle| core.deadline(handle).is_none()));
}
