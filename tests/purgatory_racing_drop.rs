//! A purgatory on a driven timer (the reaper on the driver or on executor threads) under
//! registrations, checks whose `try_complete` or `on_complete` may panic, `on_complete`s that
//! register follow-up operations, cancels by key, expiries, and in some rounds the drop of the
//! purgatory's last reference wherever it happens to be (a registrar, a checker, a callback on the
//! reaper). Every operation completes at most once, expires only after completing, is cancelled
//! only if it never completed, nothing is left watched once everything ended, and no operation is
//! kept alive by the purgatory after it finished or was dropped.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread;
use std::time::{Duration, Instant};

use common::{watched, SplitMix};
use delaywheel::purgatory::{DelayedOperation, Purgatory};
use delaywheel::{TaskExecution, Timer};

const KEYS: u64 = 12;
const DELIBERATE: &str = "deliberate panic of a purgatory callback";

type Purg = Purgatory<u64, Op>;

/// What the operations share: the purgatory (weakly) and every operation made.
struct World {
    purgatory: Mutex<Weak<Purg>>,
    ops: Mutex<Vec<Arc<Op>>>,
}

struct Op {
    world: Arc<World>,
    keys: Vec<u64>,
    ready: AtomicBool,
    /// `try_complete` panics once `registered` is set (only checks then call it).
    panics_in_try: bool,
    panics_in_complete: bool,
    /// `on_complete` registers another operation.
    follows: bool,
    registered: AtomicBool,
    completes: AtomicUsize,
    /// Set once `on_complete` has registered its follow-up (before its panic, if it panics).
    completed_fully: AtomicBool,
    expirations: AtomicUsize,
    cancels: AtomicUsize,
    late_tries: AtomicUsize,
}

impl Op {
    /// Cancelled, or completed with its `on_complete` through: nothing more comes of it.
    fn finished(&self) -> bool {
        self.cancels.load(Ordering::SeqCst) > 0 || self.completed_fully.load(Ordering::SeqCst)
    }
}

impl DelayedOperation for Op {
    fn try_complete(&self) -> bool {
        if self.completes.load(Ordering::SeqCst) > 0 {
            self.late_tries.fetch_add(1, Ordering::SeqCst);
        }
        if self.panics_in_try && self.registered.load(Ordering::SeqCst) {
            panic!("{DELIBERATE}");
        }
        self.ready.load(Ordering::SeqCst)
    }

    fn on_complete(&self) {
        self.completes.fetch_add(1, Ordering::SeqCst);
        if self.follows {
            let purgatory = self.world.purgatory.lock().unwrap().upgrade();
            if let Some(purgatory) = purgatory {
                let seed = self.keys[0] * 7 + self.completes.load(Ordering::SeqCst) as u64;
                register(&self.world, &purgatory, &mut SplitMix(seed), false);
            }
        }
        self.completed_fully.store(true, Ordering::SeqCst);
        if self.panics_in_complete {
            panic!("{DELIBERATE}");
        }
    }

    fn on_expiration(&self) {
        self.expirations.fetch_add(1, Ordering::SeqCst);
    }
}

fn register(world: &Arc<World>, purgatory: &Purg, rng: &mut SplitMix, may_follow: bool) {
    let keys: Vec<u64> = (0..rng.range(0, 4)).map(|_| rng.range(0, KEYS)).collect();
    let op = Arc::new(Op {
        world: Arc::clone(world),
        keys: if keys.is_empty() { vec![rng.range(0, KEYS)] } else { keys.clone() },
        ready: AtomicBool::new(rng.range(0, 10) == 0),
        panics_in_try: rng.range(0, 10) == 0,
        panics_in_complete: rng.range(0, 20) == 0,
        follows: may_follow && rng.range(0, 8) == 0,
        registered: AtomicBool::new(false),
        completes: AtomicUsize::new(0),
        completed_fully: AtomicBool::new(false),
        expirations: AtomicUsize::new(0),
        cancels: AtomicUsize::new(0),
        late_tries: AtomicUsize::new(0),
    });
    world.ops.lock().unwrap().push(Arc::clone(&op));
    // A few never expire: only a check or a cancel ends them. (One watched under no key ends
    // only by a try in its registration or by its timeout, one whose tries panic only by it.)
    let timeout = match rng.range(0, 20) {
        0 if !keys.is_empty() && !op.panics_in_try => Duration::MAX,
        _ => Duration::from_micros(rng.range(0, 5_000)),
    };
    let registered = Arc::clone(&op);
    // An `on_complete` run in this call may panic: it reaches this caller.
    let _ = catch_unwind(AssertUnwindSafe(|| purgatory.try_complete_else_watch(op, timeout, keys)));
    registered.registered.store(true, Ordering::SeqCst);
}

fn actor(me: usize, world: &Arc<World>, seed: u64, stop: &AtomicBool) {
    let mut rng = SplitMix(seed);
    while !stop.load(Ordering::Relaxed) {
        // A strong reference only for one step: the purgatory's drop happens wherever the last
        // one ends.
        let Some(purgatory) = world.purgatory.lock().unwrap().upgrade() else { return };
        match (me, rng.range(0, 10)) {
            (0 | 1, _) => register(world, &purgatory, &mut rng, true),
            (_, 0) => {
                for op in purgatory.cancel_for_key(&rng.range(0, KEYS)) {
                    op.cancels.fetch_add(1, Ordering::SeqCst);
                }
            }
            (_, _) => {
                let op = {
                    let ops = world.ops.lock().unwrap();
                    ops.get(rng.range(0, ops.len().max(1) as u64) as usize).cloned()
                };
                if let Some(op) = op {
                    op.ready.store(true, Ordering::SeqCst);
                    let key = op.keys[rng.range(0, op.keys.len() as u64) as usize];
                    let _ = catch_unwind(AssertUnwindSafe(|| purgatory.check_and_complete(&key)));
                }
            }
        }
    }
}

fn round(seed: u64) {
    let mut rng = SplitMix(seed);
    let execution = if rng.next() % 2 == 0 { TaskExecution::OnDriver } else { TaskExecution::Threads(2) };
    let timer = Timer::builder().tick(Duration::from_millis(1)).wheel_size(4).execution(execution).build();
    let purgatory = Arc::new(Purgatory::with_timer(timer));
    let world =
        Arc::new(World { purgatory: Mutex::new(Arc::downgrade(&purgatory)), ops: Mutex::new(Vec::new()) });
    let drop_it = rng.next() % 2 == 0;
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        let actors: Vec<_> = (0..4)
            .map(|me| {
                let (world, stop, seed) = (&world, &stop, rng.next());
                s.spawn(move || actor(me, world, seed, stop))
            })
            .collect();
        thread::sleep(Duration::from_millis(rng.range(5, 30)));
        if drop_it {
            // The last strong reference may be an actor's or a callback's.
            *world.purgatory.lock().unwrap() = Weak::new();
            drop(purgatory);
        } else {
            // The actors stop first: one still in a step may register after the drain.
            stop.store(true, Ordering::Relaxed);
            actors.into_iter().for_each(|actor| actor.join().unwrap());
            let keys_checked = |purgatory: &Purg| {
                for op in world.ops.lock().unwrap().iter() {
                    op.ready.store(true, Ordering::SeqCst);
                }
                for key in 0..KEYS {
                    let _ = catch_unwind(AssertUnwindSafe(|| purgatory.check_and_complete(&key)));
                }
            };
            // Follow-ups registered by the last completions need a check too; then the timeouts.
            // The counts drop before the callbacks run (a follow-up is registered by one), so the
            // drain also waits for every operation made so far to have finished, callbacks and
            // all, with no new one made meanwhile.
            let until = Instant::now() + Duration::from_secs(5);
            loop {
                keys_checked(&purgatory);
                let made = world.ops.lock().unwrap().len();
                let ended = world.ops.lock().unwrap().iter().all(|op| op.finished());
                let counts = (purgatory.delayed(), purgatory.watched(), purgatory.watched_keys());
                if ended && counts == (0, 0, 0) && world.ops.lock().unwrap().len() == made {
                    break;
                }
                assert!(Instant::now() < until, "still {counts:?} (delayed, watched, keys) (seed {seed})");
                thread::sleep(Duration::from_millis(1));
            }
            *world.purgatory.lock().unwrap() = Weak::new();
            drop(purgatory);
        }
    });
    // Every operation's timeout closure has been dropped once the timer's drop returned, except
    // one an executor or the reaper had started: wait for those.
    let ops = std::mem::take(&mut *world.ops.lock().unwrap());
    let until = Instant::now() + Duration::from_secs(5);
    while ops.iter().any(|op| Arc::strong_count(op) > 1) && Instant::now() < until {
        thread::sleep(Duration::from_millis(1));
    }
    for (i, op) in ops.iter().enumerate() {
        let load = |n: &AtomicUsize| n.load(Ordering::SeqCst);
        let (completes, expirations, cancels) =
            (load(&op.completes), load(&op.expirations), load(&op.cancels));
        let what = format!(
            "op {i}: {completes} completions, {expirations} expirations, {cancels} cancels (seed {seed})"
        );
        assert!(completes + cancels <= 1, "{what}");
        assert!(expirations <= completes, "{what}");
        assert!(op.panics_in_complete || expirations == 0 || completes == 1, "{what}");
        if !drop_it {
            assert_eq!(completes + cancels, 1, "{what}: not finished");
        }
        assert_eq!(load(&op.late_tries), 0, "{what}: tried after completing");
        assert_eq!(Arc::strong_count(op), 1, "{what}: still referenced after the purgatory's drop");
    }
}

#[test]
fn registrations_checks_cancels_and_expiries_racing_the_purgatorys_drop_finish_each_operation_once() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let deliberate = info.payload().downcast_ref::<String>().is_some_and(|m| m == DELIBERATE);
        if !deliberate {
            default(info);
        }
    }));
    watched("purgatory racing its drop", || {
        for seed in 0..10 {
            round(0x9A9A + seed);
        }
    });
}
