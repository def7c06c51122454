//! The shard core's lock and pooled headers (`src/shard/`), on their own: no `Timer` uses them
//! yet. The state is the stand-in `Slots` (slots of payloads with generations); payloads count
//! their ends in std atomics, observations kept out of loom's sight.
//!
//! * `lock_excludes_and_publishes`: two lockers (one through `try_lock` first) of a
//!   `ShardLock` over two words in loom's `UnsafeCell`, so an access the lock does not order
//!   fails the model; each finds the words equal and moves both on; none is lost.
//! * `cancel_racing_give_back_and_reuse`: a handle's cancel races its owner's give-back of the
//!   shard and a new owner taking the header (the pool's only one) and inserting into the same
//!   slot and generation: the old payload ends exactly once (cancelled xor dropped with the old
//!   state), and the cancel never takes the new owner's payload.
//! * `len_unlocked_racing_insert_and_cancel`: `len` read without the lock while another thread
//!   inserts and cancels under it: never below the entries pending throughout the read, exact
//!   once the threads are joined.

use std::sync::atomic::{AtomicUsize, Ordering};

use delaywheel::loom_internals::shard::{Handle, Pool, Shard, ShardLock, Slots};
use loom::sync::Arc;

/// Per payload id, how often it was dropped.
#[derive(Default)]
struct Ends([AtomicUsize; 4]);

impl Ends {
    fn of(&self, id: usize) -> usize {
        self.0[id].load(Ordering::Relaxed)
    }
}

/// A payload that counts its drop.
struct Payload {
    ends: std::sync::Arc<Ends>,
    id: usize,
}

impl Drop for Payload {
    fn drop(&mut self) {
        self.ends.0[self.id].fetch_add(1, Ordering::Relaxed);
    }
}

type State = Slots<Payload>;

/// Inserts payload `id` into `shard`, counted in: its handle.
fn insert(shard: &Shard<State>, ends: &std::sync::Arc<Ends>, id: usize) -> Handle<State> {
    let mut guard = shard.lock();
    let (slot, generation) = guard.state().insert(Payload { ends: std::sync::Arc::clone(ends), id });
    guard.count_in(1);
    guard.handle(0, slot, generation)
}

fn bump(lock: &ShardLock<(u64, u64)>, try_first: bool) {
    let mut guard = match try_first.then(|| lock.try_lock()).flatten() {
        Some(guard) => guard,
        None => lock.lock(),
    };
    assert_eq!(guard.0, guard.1, "a critical section seen half done");
    guard.0 += 1;
    guard.1 += 1;
}

#[test]
fn lock_excludes_and_publishes() {
    loom::model(|| {
        let lock = Arc::new(ShardLock::new((0u64, 0u64)));
        let other = {
            let lock = Arc::clone(&lock);
            loom::thread::spawn(move || bump(&lock, false))
        };
        bump(&lock, true);
        other.join().unwrap();
        assert_eq!(*lock.lock(), (2, 2), "a critical section was lost");
    });
}

#[test]
fn cancel_racing_give_back_and_reuse() {
    loom::model(|| {
        let pool = Pool::<State>::global();
        let ends = std::sync::Arc::new(Ends::default());
        let old = pool.take();
        let a = insert(&old, &ends, 0);
        let giver = loom::thread::spawn(move || drop(old));
        let taker = {
            let ends = std::sync::Arc::clone(&ends);
            loom::thread::spawn(move || {
                let new = pool.take();
                let b = insert(&new, &ends, 1);
                (new, b)
            })
        };
        let cancelled = a.cancel().map(|payload| payload.id);
        giver.join().unwrap();
        let (new, b) = taker.join().unwrap();
        assert_ne!(cancelled, Some(1), "the old handle cancelled the new owner's payload");
        assert_eq!(ends.of(0), 1, "A ended once (cancelled: {})", cancelled.is_some());
        assert_eq!(ends.of(1), 0, "B ended while its owner holds it");
        assert!(a.cancel().is_none(), "the old handle took a payload after the give-back");
        assert_eq!(new.len(), 1);
        let reused = a.same_header(&b);
        assert_eq!(b.cancel().map(|payload| payload.id), Some(1), "B's handle finds B (reused: {reused})");
        assert_eq!((ends.of(1), new.len()), (1, 0));
    });
}

#[test]
fn len_unlocked_racing_insert_and_cancel() {
    loom::model(|| {
        let pool = Pool::<State>::global();
        let ends = std::sync::Arc::new(Ends::default());
        let shard = Arc::new(pool.take());
        let a = insert(&shard, &ends, 0);
        let other = {
            let (shard, ends) = (Arc::clone(&shard), std::sync::Arc::clone(&ends));
            loom::thread::spawn(move || {
                let b = insert(&shard, &ends, 1);
                drop(b.cancel().expect("B is pending"));
            })
        };
        let seen = shard.len();
        assert!((1..=2).contains(&seen), "len() read {seen} while A was pending (and B may be)");
        let c = insert(&shard, &ends, 2);
        let seen = shard.len();
        assert!((2..=3).contains(&seen), "len() read {seen} while A and C were pending (and B may be)");
        drop(c.cancel().expect("C is pending"));
        other.join().unwrap();
        assert_eq!(shard.len(), 1, "len() once quiet: A alone is pending");
        drop(a.cancel().expect("A is pending"));
        assert_eq!(shard.len(), 0);
    });
}
