//! A tokio server loop on a delaywheel timer: a request limit (`timeout`), a heartbeat
//! (`interval`) and an idle timeout re-armed on every message (`Sleep::reset`).
//!
//! ```text
//! cargo run --release --features async --example tokio_server
//! cargo run --release --features async --example tokio_server -- --in-runtime
//! ```
//!
//! The server (a 2-worker tokio runtime) accepts 32 connections; a connection is a channel of
//! requests, served by one task that waits for whichever comes first in a `select!`:
//!
//! * the next request: it **re-arms the idle timeout** in place (`idle.reset(timer.now() + IDLE)`:
//!   the same timer task moved, no new allocation, no stale expiry to guard against) and serves the
//!   request under a **time limit** (`timer.timeout(REQUEST_LIMIT, serve(req))`). Most requests are
//!   ready at once, and a lazy `Timeout` around them never touches the wheel; the ones stuck on a
//!   backend that never answers time out;
//! * the **idle timeout**: the connection is closed. A third of the clients go quiet at some point,
//!   and exactly those are closed for idleness;
//! * the client hanging up.
//!
//! Beside them, the accept loop ticks a **heartbeat** `interval` (every 20 ms, `MissedTickBehavior::Skip`)
//! that reports the number of open connections. The shutdown is in order: the accept loop stops
//! once every connection task has ended, then the timer is dropped, so nothing ever awaits a timer
//! that has gone (and if something did, it would stay pending, never panic). The run takes about a
//! third of a second and asserts its outcome.
//!
//! With `--in-runtime` the timer has no driver thread: `Timer::drive` runs its driver as a task on
//! the runtime's workers, sleeping with tokio's `sleep_until`, and the timer's wake-ups come from
//! inside the runtime. The run then shuts the timer down before the runtime, which completes the
//! drive task.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use delaywheel::{MissedTickBehavior, Timer};
use tokio::sync::mpsc;

const CONNECTIONS: usize = 32;
const IDLE: Duration = Duration::from_millis(100);
const REQUEST_LIMIT: Duration = Duration::from_millis(15);
const HEARTBEAT: Duration = Duration::from_millis(20);

/// A request: answered from memory (ready at once), or waiting on a backend that never answers.
struct Request {
    stuck: bool,
}

#[derive(Default)]
struct Outcome {
    served: AtomicUsize,
    timed_out: AtomicUsize,
    closed_idle: AtomicUsize,
    hung_up: AtomicUsize,
}

async fn serve(request: Request) {
    if request.stuck {
        std::future::pending::<()>().await;
    }
}

/// One connection's task: requests, each under a time limit, and an idle timeout re-armed per
/// message.
async fn connection(timer: Arc<Timer>, mut requests: mpsc::Receiver<Request>, outcome: Arc<Outcome>) {
    let mut idle = timer.sleep(IDLE);
    loop {
        tokio::select! {
            request = requests.recv() => {
                let Some(request) = request else {
                    outcome.hung_up.fetch_add(1, Ordering::Relaxed);
                    return;
                };
                idle.reset(timer.now() + IDLE);
                match timer.timeout(REQUEST_LIMIT, serve(request)).await {
                    Ok(()) => outcome.served.fetch_add(1, Ordering::Relaxed),
                    Err(_elapsed) => outcome.timed_out.fetch_add(1, Ordering::Relaxed),
                };
            }
            () = &mut idle => {
                outcome.closed_idle.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
    }
}

/// Client `id`: 10 requests 10 ms apart (every fifth stuck: it times out), then
/// either hangs up, or (one client in three) goes quiet while keeping the connection open.
async fn client(timer: Arc<Timer>, id: usize, requests: mpsc::Sender<Request>) {
    for k in 0..10 {
        if requests.send(Request { stuck: (id + k) % 5 == 0 }).await.is_err() {
            return;
        }
        timer.sleep(Duration::from_millis(10)).await;
    }
    if id % 3 == 0 {
        // Quiet, connection kept open: the server's idle timeout closes it.
        requests.closed().await;
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let in_runtime = std::env::args().any(|arg| arg == "--in-runtime");
    let builder = Timer::builder().tick(Duration::from_millis(1));
    // In the runtime: no driver thread; the drive task below advances the timer.
    let timer = Arc::new(if in_runtime { builder.manual().build() } else { builder.build() });
    let outcome = Arc::new(Outcome::default());
    let start = Instant::now();

    runtime.block_on(async {
        let driver =
            in_runtime.then(|| tokio::spawn(timer.drive(|at: Instant| tokio::time::sleep_until(at.into()))));
        let mut connections = tokio::task::JoinSet::new();
        let mut clients = tokio::task::JoinSet::new();
        for id in 0..CONNECTIONS {
            let (tx, rx) = mpsc::channel(4);
            connections.spawn(connection(Arc::clone(&timer), rx, Arc::clone(&outcome)));
            clients.spawn(client(Arc::clone(&timer), id, tx));
        }
        let mut heartbeat = timer.interval(HEARTBEAT);
        heartbeat.set_missed_tick_behavior(MissedTickBehavior::Skip);
        let mut beats = 0;
        while !connections.is_empty() {
            tokio::select! {
                _ = heartbeat.tick() => {
                    beats += 1;
                    println!("heartbeat {beats:2}: {} connections open", connections.len());
                }
                Some(ended) = connections.join_next() => ended.expect("a connection task panicked"),
            }
        }
        while let Some(ended) = clients.join_next().await {
            ended.expect("a client panicked");
        }
        assert!(beats >= 5, "{beats} heartbeats");
        drop(heartbeat);
        if let Some(driver) = driver {
            // The shutdown completes the drive task (nothing is pending: nothing is handed back).
            assert!(timer.shutdown().is_empty());
            driver.await.expect("the drive task panicked");
        }
    });
    let elapsed = start.elapsed();

    let quiet = (0..CONNECTIONS).filter(|id| id % 3 == 0).count();
    let stuck = (0..CONNECTIONS).map(|id| (0..10).filter(|k| (id + k) % 5 == 0).count()).sum::<usize>();
    let (served, timed_out) =
        (outcome.served.load(Ordering::Relaxed), outcome.timed_out.load(Ordering::Relaxed));
    let (idle, hung_up) =
        (outcome.closed_idle.load(Ordering::Relaxed), outcome.hung_up.load(Ordering::Relaxed));
    println!("{CONNECTIONS} connections in {elapsed:?}: {served} requests served, {timed_out} timed out");
    println!("{idle} closed for idleness, {hung_up} hung up");
    assert_eq!(
        (served, timed_out),
        (CONNECTIONS * 10 - stuck, stuck),
        "every stuck request timed out, no other"
    );
    assert_eq!((idle, hung_up), (quiet, CONNECTIONS - quiet), "exactly the quiet clients idled out");
    let stats = timer.stats();
    println!(
        "timer: {} tasks scheduled, {} fired, {} cancelled",
        stats.scheduled, stats.fired, stats.cancelled
    );
    assert!(timer.is_empty(), "every timer task fired or was cancelled");
    // In order: the connections are done, now the timer goes (its driver thread, if it has one,
    // stops at once).
    drop(runtime);
    drop(timer);
}
