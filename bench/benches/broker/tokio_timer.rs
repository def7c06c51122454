//! The broker workload on tokio's own timer, as a tokio server writes it: T request tasks
//! (`unconstrained`, so that tokio's cooperative budget does not turn polls into `Pending` without
//! registering) on a multi-thread runtime with T workers, released by an async barrier. Each task
//! keeps a pinned `Sleep` per connection, re-armed by `Sleep::reset` on each of its messages, and
//! per request a boxed future that sleeps for the timeout and then runs the request's task, polled
//! once so that its sleep registers with the runtime's timer (an unpolled `Sleep` never touches
//! it). The response drops the future (which cancels its sleep); an unanswered request's future is
//! spawned, and its task runs when the sleep fires. A future already due at its first poll (the
//! worker was preempted for longer than the 5–50 ms delay between the sleep's clock read and its
//! poll, which a loaded host does) runs its task inline; stderr counts them.

use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use crate::measure::now_ns;
use crate::state::{self, Conn};
use crate::tokio_tasks;
use crate::{Span, Workload};

/// Polls `fut` once: whether it is still pending (a sleep registered).
async fn poll_once<F: Future + ?Sized>(mut fut: Pin<&mut F>) -> bool {
    poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx).is_pending())).await
}

/// The run's spans and the process CPU (ms) from spawn to join.
pub fn run(work: &Workload<'_>, idle: Duration, request: Duration) -> (Vec<Span>, f64) {
    let threads = work.threads;
    let ready = Arc::new(AtomicU64::new(0));
    let (runtime, spans, cpu_ms) = tokio_tasks::run(threads, |t, barrier| {
        let (plan, ready) = (Arc::clone(&work.plan), Arc::clone(&ready));
        let (share, conns, window_len) = (work.share(t), work.cfg.conns, work.cfg.window);
        async move {
            let conns: Vec<Arc<Conn>> = (0..conns).map(|c| Conn::new((t * conns + c) as u64)).collect();
            let mut idles = Vec::with_capacity(conns.len());
            for conn in &conns {
                let mut sleep = Box::pin(tokio::time::sleep(idle));
                poll_once(sleep.as_mut()).await;
                idles.push((sleep, state::idle_task(Arc::clone(conn))));
            }
            let mut window = VecDeque::with_capacity(window_len);
            barrier.wait().await;
            let start = now_ns();
            for (id, msg) in share.clone().zip(&plan[share]) {
                let (c, conn) = (msg.conn as usize, &conns[msg.conn as usize]);
                idles[c].0.as_mut().reset(tokio::time::Instant::now() + idle);
                let answered = msg.short_ms == 0;
                let delay = if answered { request } else { Duration::from_millis(u64::from(msg.short_ms)) };
                let task = state::request_task(Arc::clone(conn), id as u64, Instant::now(), msg.bytes);
                let mut timeout = Box::pin(async move {
                    tokio::time::sleep(delay).await;
                    task();
                });
                if !poll_once(timeout.as_mut()).await {
                    // Due before its first poll (this task was preempted for longer than the
                    // delay after the sleep read the clock): it ran its task inline, which the
                    // ledger checks was an unanswered request's.
                    ready.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                if !answered {
                    tokio::spawn(timeout);
                    continue;
                }
                if window.len() == window_len {
                    drop(window.pop_front());
                }
                window.push_back(timeout);
            }
            let end = now_ns();
            window.clear();
            // The idle sleeps and their tasks go with this task (never fired: 60 s).
            Span { start, end, lost: 0 }
        }
    });
    let ready = ready.load(Ordering::Relaxed);
    if ready > 0 {
        eprintln!("# tokio-timer threads={threads}: {ready} request timeouts were due at their first poll");
    }
    // The runtime must outlive the drain (the spawned timeouts fire on it): leaked to the caller's
    // drain by keeping it here until the unanswered ones ran.
    let unanswered = work.plan.iter().filter(|m| m.short_ms != 0).count() as u64;
    let limit = Instant::now() + Duration::from_secs(10);
    while state::REQUESTS_FIRED.load(Ordering::Acquire) < unanswered && Instant::now() < limit {
        std::thread::sleep(Duration::from_millis(1));
    }
    runtime.shutdown_timeout(Duration::from_secs(10));
    (spans, cpu_ms)
}
