//! Runs T tasks on tokio's own runtime and collects what each returns: how the benches that
//! measure tokio's own timer from several threads start their tasks (`spec/threads.rs`, SPEC W7;
//! `broker/tokio_timer.rs`).

use std::future::Future;
use std::sync::Arc;

use delaywheel_bench::process_cpu_ms;
use tokio::runtime::Runtime;
use tokio::sync::Barrier;

/// Spawns `task(t, barrier)` for each `t` in `0..threads` on a fresh multi-thread runtime with
/// `threads` workers and its timer enabled, each `unconstrained` (tokio's cooperative budget would
/// otherwise turn polls after the 128th into `Pending` without registering a sleep), all sharing
/// one async `barrier` of `threads` (a blocking wait could hold a worker another task needs).
/// Returns the runtime (still running: what the tasks spawned may not have run yet), each task's
/// output in task order, and the process CPU (ms) from the spawn to the last join.
pub fn run<T, F>(threads: usize, task: impl Fn(usize, Arc<Barrier>) -> F) -> (Runtime, Vec<T>, f64)
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_time()
        .build()
        .expect("runtime");
    let barrier = Arc::new(Barrier::new(threads));
    let cpu_before = process_cpu_ms();
    let tasks: Vec<_> = (0..threads)
        .map(|t| runtime.spawn(tokio::task::unconstrained(task(t, Arc::clone(&barrier)))))
        .collect();
    let outputs = runtime.block_on(async {
        let mut outputs = Vec::with_capacity(tasks.len());
        for task in tasks {
            outputs.push(task.await.expect("a task of the run"));
        }
        outputs
    });
    let cpu_ms = process_cpu_ms() - cpu_before;
    (runtime, outputs, cpu_ms)
}
