//! Pooled shard headers: handles used after their owner gave the shard back, and after a new
//! owner took the same header (the same slots and generations in a new state), find nothing;
//! every payload ends once (cancelled, dropped with its state, or handed back); a payload whose
//! `Drop` panics during a give-back leaves the header neither locked nor lost.
//!
//! Each test's payload type is its own (`Probe<TEST>`), so each test has a pool of its own
//! (`Pool::global` is one per state type) and finds in it exactly the headers it gave back.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;

use super::pool::{Handle, Pool, Shard};
use super::stand_in::Slots;

/// Per payload: how often it was dropped (it must end once).
struct Ends(Vec<AtomicU8>);

impl Ends {
    fn new(n: usize) -> Arc<Ends> {
        Arc::new(Ends((0..n).map(|_| AtomicU8::new(0)).collect()))
    }

    fn of(&self, id: usize) -> u8 {
        self.0[id].load(Ordering::Relaxed)
    }

    fn all_once(&self, ids: std::ops::Range<usize>) {
        for id in ids {
            assert_eq!(self.of(id), 1, "payload {id} ended {} times", self.of(id));
        }
    }
}

/// A payload that marks its end when dropped; `bomb` makes that drop panic after the mark.
struct Probe<const TEST: u8> {
    ends: Arc<Ends>,
    id: usize,
    bomb: bool,
}

impl<const TEST: u8> Probe<TEST> {
    fn new(ends: &Arc<Ends>, id: usize) -> Probe<TEST> {
        Probe { ends: Arc::clone(ends), id, bomb: false }
    }
}

impl<const TEST: u8> Drop for Probe<TEST> {
    fn drop(&mut self) {
        self.ends.0[self.id].fetch_add(1, Ordering::Relaxed);
        if self.bomb {
            panic!("dropping payload {} panics (expected by this test)", self.id);
        }
    }
}

type State<const TEST: u8> = Slots<Probe<TEST>>;

/// Inserts `probe` into `shard`, counted in: its handle.
fn insert<const TEST: u8>(shard: &Shard<State<TEST>>, probe: Probe<TEST>) -> Handle<State<TEST>> {
    let mut guard = shard.lock();
    let (slot, generation) = guard.state().insert(probe);
    guard.count_in(1);
    guard.handle(0, slot, generation)
}

#[test]
fn handles_after_give_back_and_reuse_find_nothing() {
    const N: usize = 300;
    let pool = Pool::<State<1>>::global();
    let ends = Ends::new(2 * N);
    let old = pool.take();
    let handles: Vec<_> = (0..N).map(|id| insert(&old, Probe::new(&ends, id))).collect();
    assert_eq!(old.len(), N);
    for handle in handles.iter().step_by(3) {
        let probe = handle.cancel().expect("pending");
        assert!(handle.cancel().is_none(), "cancelled twice");
        drop(probe);
    }
    assert_eq!(old.len(), N - N.div_ceil(3));
    assert_eq!(pool.free(), 0);
    drop(old);
    // Every payload ended once: cancelled, or dropped with the state given back.
    ends.all_once(0..N);
    assert_eq!(pool.free(), 1);
    assert!(
        handles.iter().all(|handle| handle.cancel().is_none()),
        "a handle of a given-back shard cancelled"
    );
    let new = pool.take();
    assert_eq!(pool.free(), 0);
    assert!(new.is_empty(), "a header comes back with its count at 0");
    let fresh: Vec<_> = (N..2 * N).map(|id| insert(&new, Probe::new(&ends, id))).collect();
    assert!(fresh[0].same_header(&handles[0]), "the new owner took the header given back");
    // The same slots and generations in the new state: the epoch alone tells them apart.
    assert!(fresh.iter().zip(&handles).all(|(new, old)| new.entry() == old.entry()));
    assert!(handles.iter().all(|handle| handle.cancel().is_none()), "an old handle cancelled a new payload");
    assert_eq!(new.len(), N);
    assert!((N..2 * N).all(|id| ends.of(id) == 0));
    for handle in &fresh {
        drop(handle.cancel().expect("the new owner's handles find their payloads"));
    }
    assert!(new.is_empty());
    ends.all_once(N..2 * N);
    drop(new);
    assert_eq!(pool.free(), 1);
}

/// `retire` hands the state back with its pending payloads (for a shutdown that returns them);
/// a copied handle names the same entry, and only the first cancel of the two takes it.
#[test]
fn retire_hands_back_the_pending_payloads() {
    let pool = Pool::<State<2>>::global();
    let ends = Ends::new(5);
    let shard = pool.take();
    let handles: Vec<_> = (0..5).map(|id| insert(&shard, Probe::new(&ends, id))).collect();
    let copy = handles[1];
    drop(copy.cancel().expect("pending"));
    assert!(handles[1].cancel().is_none(), "the copy's cancel took it");
    drop(handles[3].cancel().expect("pending"));
    assert_eq!(shard.len(), 3);
    let mut state = shard.retire();
    assert_eq!(pool.free(), 1);
    assert!(handles.iter().all(|handle| handle.cancel().is_none()));
    assert_eq!((ends.of(0), ends.of(2), ends.of(4)), (0, 0, 0), "retire dropped a pending payload");
    let back: Vec<usize> = state.drain().iter().map(|probe| probe.id).collect();
    assert_eq!(back, [0, 2, 4]);
    ends.all_once(0..5);
    let other = Pool::<State<3>>::global();
    assert!(!std::ptr::eq(pool as *const _ as *const (), other as *const _ as *const ()));
    assert!(std::ptr::eq(pool, Pool::<State<2>>::global()));
}

/// A payload whose drop panics while a given-back state is dropped: the panic reaches the
/// dropping caller, every payload still ended once, and the header is back in the pool,
/// unlocked, its epoch moved (old handles find nothing), ready for a new owner.
#[test]
fn a_payload_panicking_in_a_give_back_leaves_the_header_free() {
    let pool = Pool::<State<4>>::global();
    let ends = Ends::new(4);
    let shard = pool.take();
    let handles: Vec<_> =
        (0..3).map(|id| insert(&shard, Probe { ends: Arc::clone(&ends), id, bomb: id == 1 })).collect();
    let dropped = panic::catch_unwind(AssertUnwindSafe(|| drop(shard)));
    assert!(dropped.is_err(), "the payload's panic reaches the caller");
    ends.all_once(0..3);
    assert_eq!(pool.free(), 1, "the header is back in the pool");
    assert!(handles.iter().all(|handle| handle.cancel().is_none()));
    let shard = pool.take();
    let handle = insert(&shard, Probe::new(&ends, 3));
    assert!(handle.same_header(&handles[0]));
    assert_eq!(shard.len(), 1);
    drop(handle.cancel().expect("a new owner uses the header"));
    ends.all_once(3..4);
}

/// 4 threads insert into one owner's shard and send their handles to 2 cancellers, which cancel
/// every other one; the owner gives the shard back while the cancels go on, and a new owner
/// takes the header and sends its own handles to the same cancellers. Every payload ends once;
/// no cancel that starts after the give-back takes a payload of the first owner.
#[test]
fn threads_across_give_back_and_reuse() {
    const PER: usize = 5_000;
    let pool = Pool::<State<5>>::global();
    let ends = Ends::new(5 * PER);
    let cancelled: Vec<AtomicBool> = (0..5 * PER).map(|_| AtomicBool::new(false)).collect();
    let gone = AtomicBool::new(false);
    let first = Arc::new(pool.take());
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Handle<State<5>>)>();
    let rx = std::sync::Mutex::new(rx);
    let inserted = std::sync::Barrier::new(5);
    std::thread::scope(|s| {
        for t in 0..4 {
            let (first, ends, tx, inserted) = (Arc::clone(&first), &ends, tx.clone(), &inserted);
            s.spawn(move || {
                for id in t * PER..(t + 1) * PER {
                    tx.send((id, insert(&first, Probe::new(ends, id)))).unwrap();
                }
                drop(first);
                inserted.wait();
            });
        }
        for _ in 0..2 {
            let (rx, gone, cancelled) = (&rx, &gone, &cancelled);
            s.spawn(move || loop {
                let Ok((id, handle)) = rx.lock().unwrap().recv() else { return };
                if id % 2 == 0 {
                    let after_give_back = gone.load(Ordering::Acquire) && id < 4 * PER;
                    if let Some(probe) = handle.cancel() {
                        assert!(!after_give_back, "payload {id} cancelled after its shard was given back");
                        assert_eq!(probe.id, id);
                        cancelled[id].store(true, Ordering::Relaxed);
                    }
                }
            });
        }
        inserted.wait();
        // The last reference: the inserters dropped theirs before the barrier.
        drop(first);
        gone.store(true, Ordering::Release);
        let second = pool.take();
        for id in 4 * PER..5 * PER {
            tx.send((id, insert(&second, Probe::new(&ends, id)))).unwrap();
        }
        drop(tx);
        // The cancellers take every even payload of the second owner, leaving it the odd half.
        while second.len() > PER / 2 {
            std::thread::yield_now();
        }
        drop(second);
    });
    ends.all_once(0..5 * PER);
    let second_cancelled = (4 * PER..5 * PER).filter(|&id| cancelled[id].load(Ordering::Relaxed)).count();
    assert_eq!(second_cancelled, PER / 2, "every even payload of the second owner was cancelled");
    assert!((0..5 * PER).filter(|id| id % 2 == 1).all(|id| !cancelled[id].load(Ordering::Relaxed)));
}
