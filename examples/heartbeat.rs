//! Heartbeats and session timeouts: connections whose heartbeats re-arm their timeout, and dead
//! connections that time out.
//!
//! ```text
//! cargo run --release --example heartbeat
//! ```
//!
//! A server tracks 2 000 connections, each with a **session timeout** of 300 ms (Kafka's
//! `session.timeout.ms`, scaled down). Every heartbeat re-arms the pending timeout in place
//! ([`TimerHandle::reset`]: same task, same handle, no allocation): the typical re-arm workload,
//! where nearly every timeout is moved before it fires. A reset that returns `false` means the
//! timeout already fired (or is firing): the heartbeat came too late, and the session stays timed
//! out, so no expiry is ever stale.
//! Each client sends a heartbeat every 100 ms, as a [`Repeat::FixedRate`] task on the same timer.
//! One client in four "dies" at a random moment during the run: its heartbeat task cancels itself
//! from inside (`RepeatingHandle::cancel`), and 300 ms after its last heartbeat its session times
//! out.
//!
//! Everything runs on the process-wide timer, [`delaywheel::global()`] (one driver thread), so the
//! example also shows that several users can share one timer. At the end it checks that exactly the
//! dead connections timed out, reports how long after the last heartbeat each was detected (the
//! session timeout plus at most one 1 ms tick plus the driver's wake-up), and prints the timer's
//! statistics, including its firing lateness.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use delaywheel::{Repeat, RepeatingHandle, TimerHandle};

mod support;
use support::SplitMix;

const CONNECTIONS: usize = 2_000;
const SESSION_TIMEOUT: Duration = Duration::from_millis(300);
const HEARTBEAT_INTERVAL: Duration = Duration::from_millis(100);
const RUN_FOR: Duration = Duration::from_secs(3);

/// The server's view of one connection.
struct Connection {
    id: usize,
    /// The session timeout, armed once at connection and re-armed by every heartbeat.
    session: OnceLock<TimerHandle>,
    /// Nanoseconds since `epoch` of the last heartbeat.
    last_heartbeat: AtomicU64,
    timed_out: AtomicBool,
    /// When the session timed out (nanoseconds since `epoch`).
    detected_at: AtomicU64,
    epoch: Instant,
}

impl Connection {
    /// The connection opened: arm its session timeout.
    fn connect(self: &Arc<Self>) {
        self.last_heartbeat.store(self.epoch.elapsed().as_nanos() as u64, Ordering::Release);
        let conn = Arc::clone(self);
        let session = delaywheel::global().schedule(SESSION_TIMEOUT, move || conn.expire());
        self.session.set(session).expect("connected once");
    }

    /// A heartbeat arrived: move the session timeout to `SESSION_TIMEOUT` from now. `false` if it
    /// already fired or is firing: the heartbeat is too late and the session stays timed out.
    fn heartbeat(&self) -> bool {
        let session = self.session.get().expect("connected");
        // Recorded before the reset: a timeout that fires after it is never less than
        // `SESSION_TIMEOUT` after the heartbeat it measures from.
        let previous = self.last_heartbeat.swap(self.epoch.elapsed().as_nanos() as u64, Ordering::AcqRel);
        let moved = session.reset(SESSION_TIMEOUT);
        if !moved {
            self.last_heartbeat.store(previous, Ordering::Release);
        }
        moved
    }

    /// The session timeout fired: no heartbeat for `SESSION_TIMEOUT`.
    fn expire(&self) {
        self.detected_at.store(self.epoch.elapsed().as_nanos() as u64, Ordering::Release);
        self.timed_out.store(true, Ordering::Release);
    }
}

fn main() {
    let timer = delaywheel::global();
    let epoch = Instant::now();
    let mut rng = SplitMix(7);

    let mut clients = Vec::with_capacity(CONNECTIONS);
    for id in 0..CONNECTIONS {
        let conn = Arc::new(Connection {
            id,
            session: OnceLock::new(),
            last_heartbeat: AtomicU64::new(0),
            timed_out: AtomicBool::new(false),
            detected_at: AtomicU64::new(0),
            epoch,
        });
        conn.connect(); // connecting arms the session timeout
                        // One client in four dies somewhere in the first two seconds.
        let dies_at = (rng.below(4) == 0).then(|| Duration::from_millis(rng.below(2_000)));
        // The client's heartbeat loop: a repeating task, which cancels itself when the client dies.
        let me: Arc<OnceLock<RepeatingHandle>> = Arc::default();
        let (conn2, me2) = (Arc::clone(&conn), Arc::clone(&me));
        let phase = Duration::from_micros(rng.below(100_000)); // spread the heartbeats
        let handle = timer.schedule_repeating(phase, Repeat::FixedRate(HEARTBEAT_INTERVAL), move || {
            if dies_at.is_some_and(|at| epoch.elapsed() >= at) {
                me2.get().map(RepeatingHandle::cancel);
                return;
            }
            conn2.heartbeat();
        });
        me.set(handle.clone()).expect("set once");
        clients.push((conn, dies_at, handle));
    }
    println!(
        "{CONNECTIONS} connections, heartbeat every {HEARTBEAT_INTERVAL:?}, session timeout {SESSION_TIMEOUT:?}; \
         running for {RUN_FOR:?}…"
    );
    std::thread::sleep(RUN_FOR);
    // A dead client's session times out by 2.3 s (it dies within 2 s); a loaded machine may run
    // the timer's driver late: wait for the last detections (up to 10 s more) before checking.
    let give_up = Instant::now() + Duration::from_secs(10);
    let undetected = |clients: &[(Arc<Connection>, Option<Duration>, RepeatingHandle)]| {
        clients.iter().any(|(conn, dies_at, _)| dies_at.is_some() && !conn.timed_out.load(Ordering::Acquire))
    };
    while undetected(&clients) && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(10));
    }

    // Stop the survivors' heartbeats and their sessions, then check the outcome.
    let (mut alive, mut dead, mut wrong) = (0, 0, 0);
    let mut detection = Vec::new();
    for (conn, dies_at, handle) in &clients {
        handle.cancel();
        let timed_out = conn.timed_out.load(Ordering::Acquire);
        match (dies_at, timed_out) {
            (None, false) => alive += 1,
            (Some(_), true) => {
                dead += 1;
                let last = conn.last_heartbeat.load(Ordering::Acquire);
                let at = conn.detected_at.load(Ordering::Acquire);
                detection.push(Duration::from_nanos(at - last));
            }
            _ => {
                wrong += 1;
                eprintln!("connection {}: died {dies_at:?}, timed out {timed_out}", conn.id);
            }
        }
        if let Some(session) = conn.session.get() {
            session.cancel();
        }
    }
    detection.sort();
    let pct = |q: f64| detection[((detection.len() - 1) as f64 * q) as usize];
    println!("alive and never timed out: {alive}");
    println!("dead and detected:         {dead}");
    println!("misjudged:                 {wrong}");
    if !detection.is_empty() {
        println!(
            "time from last heartbeat to timeout: min {:?}, p50 {:?}, p99 {:?}, max {:?} (session timeout {:?})",
            detection[0],
            pct(0.5),
            pct(0.99),
            detection[detection.len() - 1],
            SESSION_TIMEOUT
        );
    }
    let stats = timer.stats();
    println!(
        "timer: {} scheduled, {} re-armed, {} cancelled, {} fired, {} pending; firing lateness p50 {:?}, p99 {:?}, max {:?}",
        stats.scheduled,
        stats.rearmed,
        stats.cancelled,
        stats.fired,
        stats.pending,
        stats.lateness.p50,
        stats.lateness.p99,
        stats.lateness.max
    );
    assert_eq!(wrong, 0, "a live connection timed out or a dead one was missed");
    assert!(detection.iter().all(|&d| d >= SESSION_TIMEOUT), "a session timed out early");
}
