//! What the broker workload's threads work on: the message plan drawn before the clock starts, the
//! connections, the two kinds of task (a request's timeout, a connection's idle timeout) and the
//! ledger that checks that every unanswered request's timeout runs exactly once.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use crate::measure::SplitMix64;

/// One message a request thread handles: the connection it arrives on and, for the 1 in 100
/// requests never answered, the short timeout in ms (0: answered).
#[derive(Clone, Copy)]
pub struct Msg {
    pub conn: u32,
    pub short_ms: u32,
    /// The request's size, which its timeout task reads.
    pub bytes: u64,
}

/// `threads × per_thread` messages from splitmix64 seeded with 42 (thread `t` takes the `t`-th
/// share): a connection among `conns` for each, 1 in 100 unanswered with a timeout in [5, 50) ms.
pub fn plan(total: usize, conns: usize) -> Vec<Msg> {
    let mut rng = SplitMix64::new(42);
    (0..total)
        .map(|_| {
            let conn = (rng.next_u64() % conns as u64) as u32;
            let short_ms = if rng.next_u64() % 100 == 0 { rng.delay(5, 50) as u32 } else { 0 };
            Msg { conn, short_ms, bytes: rng.delay(64, 4096) }
        })
        .collect()
}

/// A client connection: what both of its timeouts hold an `Arc` to.
pub struct Conn {
    id: u64,
    /// Requests of this connection that timed out (their tasks count here).
    timeouts: AtomicU64,
    /// Set by the idle timeout's task (never in a run: 60 s is longer than any run).
    closed: AtomicBool,
}

impl Conn {
    pub fn new(id: u64) -> Arc<Conn> {
        Arc::new(Conn { id, timeouts: AtomicU64::new(0), closed: AtomicBool::new(false) })
    }
}

/// Idle timeouts that ran (must stay 0).
pub static IDLE_FIRED: AtomicU64 = AtomicU64::new(0);
/// Request timeouts that ran.
pub static REQUESTS_FIRED: AtomicU64 = AtomicU64::new(0);
/// Request timeouts that ran a second time (must stay 0).
pub static DUPLICATES: AtomicU64 = AtomicU64::new(0);

/// One bit per request id: set by its timeout's task.
static LEDGER: OnceLock<Box<[AtomicU64]>> = OnceLock::new();

/// Clears the counters and the ledger for `requests` request ids.
pub fn arm(requests: usize) {
    let words = LEDGER.get_or_init(|| (0..requests.div_ceil(64)).map(|_| AtomicU64::new(0)).collect());
    assert!(words.len() * 64 >= requests, "the request count cannot grow within one run");
    words.iter().for_each(|w| w.store(0, Ordering::Relaxed));
    for counter in [&IDLE_FIRED, &REQUESTS_FIRED, &DUPLICATES] {
        counter.store(0, Ordering::SeqCst);
    }
}

/// Whether every request whose ledger bit is set is unanswered in `plan` and every unanswered one
/// has its bit (valid once the run has drained).
pub fn ledger_matches(plan: &[Msg]) -> bool {
    let words = LEDGER.get().expect("armed");
    plan.iter().enumerate().all(|(id, msg)| {
        let fired = words[id / 64].load(Ordering::Relaxed) & (1 << (id % 64)) != 0;
        fired == (msg.short_ms != 0)
    })
}

/// The idle timeout of `conn` (8 bytes: the `Arc`): it would close the connection.
pub fn idle_task(conn: Arc<Conn>) -> impl FnOnce() + Send + 'static {
    move || {
        conn.closed.store(true, Ordering::Relaxed);
        IDLE_FIRED.fetch_add(1, Ordering::Relaxed);
    }
}

/// A request's timeout, 40 bytes of state as a server keeps them (the connection, the request id,
/// when it was received, its size); when it runs it counts itself on the connection, reads its age
/// and size and marks its id in the ledger.
pub fn request_task(
    conn: Arc<Conn>,
    id: u64,
    received: Instant,
    bytes: u64,
) -> impl FnOnce() + Send + 'static {
    move || {
        conn.timeouts.fetch_add(1, Ordering::Relaxed);
        std::hint::black_box((received.elapsed(), bytes, conn.id));
        let bit = 1u64 << (id % 64);
        let words = LEDGER.get().expect("armed");
        if words[id as usize / 64].fetch_or(bit, Ordering::Relaxed) & bit != 0 {
            DUPLICATES.fetch_add(1, Ordering::Relaxed);
        }
        REQUESTS_FIRED.fetch_add(1, Ordering::Release);
    }
}
