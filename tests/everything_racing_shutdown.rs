//! A shutdown from inside a task while other threads schedule, cancel, reset and shrink, on the
//! driver or on executor threads: every task scheduled runs once, or one `cancel()` returned
//! `true` for it, or a shutdown handed it back (then run here), exactly one of the three.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

use common::{ms, SplitMix};
use delaywheel::{TaskExecution, Timer, UnfiredTask};

const WORKERS: usize = 3;
const PER_WORKER: usize = 4_000;

fn round(execution: TaskExecution, seed: u64) {
    let timer = Arc::new(Timer::builder().tick(ms(1)).wheel_size(8).execution(execution).build());
    // Slot `w * PER_WORKER + i`: the runs of worker w's task i, and its cancels that returned true.
    let runs: Arc<Vec<AtomicUsize>> =
        Arc::new((0..WORKERS * PER_WORKER).map(|_| AtomicUsize::new(0)).collect());
    let cancels: Vec<AtomicUsize> = (0..WORKERS * PER_WORKER).map(|_| AtomicUsize::new(0)).collect();
    let scheduled: Vec<AtomicBool> = (0..WORKERS * PER_WORKER).map(|_| AtomicBool::new(false)).collect();
    let returned: Arc<Mutex<Vec<UnfiredTask>>> = Arc::default();
    let (killed_tx, killed_rx) = mpsc::channel();
    // The task that shuts the timer down, scheduled by worker 0 mid-way.
    let mut killer = Some({
        let (weak, returned) = (Arc::downgrade(&timer), Arc::clone(&returned));
        move || {
            let unfired = weak.upgrade().map(|t| t.shutdown()).unwrap_or_default();
            returned.lock().unwrap().extend(unfired);
            killed_tx.send(()).unwrap();
        }
    });
    let kill_at = PER_WORKER / 4 + (seed as usize % 4) * PER_WORKER / 8;
    thread::scope(|s| {
        for w in 0..WORKERS {
            let (timer, runs, cancels, scheduled) = (&timer, &runs, &cancels, &scheduled);
            let mut killer = if w == 0 { killer.take() } else { None };
            s.spawn(move || {
                let mut rng = SplitMix(seed * 31 + w as u64);
                let mut handles = Vec::new();
                for i in 0..PER_WORKER {
                    let id = w * PER_WORKER + i;
                    let runs = Arc::clone(runs);
                    let delay = Duration::from_micros(rng.range(0, 4_000));
                    match timer.try_schedule(delay, move || {
                        runs[id].fetch_add(1, Ordering::SeqCst);
                    }) {
                        Ok(handle) => {
                            scheduled[id].store(true, Ordering::SeqCst);
                            handles.push((id, handle));
                        }
                        Err(_) => break,
                    }
                    if !handles.is_empty() {
                        let k = rng.range(0, handles.len() as u64) as usize;
                        let (other, handle) = &handles[k];
                        match rng.range(0, 4) {
                            0 if handle.cancel() => {
                                cancels[*other].fetch_add(1, Ordering::SeqCst);
                            }
                            1 | 2 => {
                                handle.reset(Duration::from_micros(rng.range(0, 4_000)));
                            }
                            _ => {}
                        }
                    }
                    if w == 0 && i % 500 == 0 {
                        timer.shrink();
                    }
                    if i == kill_at {
                        if let Some(killer) = killer.take() {
                            let _ = timer.schedule(Duration::from_micros(rng.range(0, 2_000)), killer);
                        }
                    }
                }
            });
        }
    });
    killed_rx.recv_timeout(Duration::from_secs(20)).expect("the killing task never ran");
    // From the test thread: waits for the executor threads to run what they were handed.
    returned.lock().unwrap().extend(timer.shutdown());
    let returned = std::mem::take(&mut *returned.lock().unwrap());
    let n_returned = returned.len();
    returned.into_iter().for_each(UnfiredTask::run);
    assert_eq!(timer.len(), 0, "len at quiescence");
    let mut n_scheduled = 0;
    for id in 0..WORKERS * PER_WORKER {
        if !scheduled[id].load(Ordering::SeqCst) {
            continue;
        }
        n_scheduled += 1;
        let (r, c) = (runs[id].load(Ordering::SeqCst), cancels[id].load(Ordering::SeqCst));
        assert_eq!(r + c, 1, "{execution:?} seed {seed}: task {id} ran {r} times (the returned ones included), cancelled {c} times");
    }
    let stats = timer.stats();
    assert!(n_scheduled > kill_at && n_returned <= n_scheduled, "{n_scheduled} {n_returned} {stats:?}");
}

#[test]
fn a_shutdown_from_a_task_racing_schedules_cancels_resets_and_shrinks_accounts_for_every_task() {
    for seed in 0..40 {
        round(TaskExecution::OnDriver, seed);
        round(TaskExecution::Threads(2), seed);
    }
}
