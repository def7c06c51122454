//! Produce requests waiting in a purgatory for their replicas' acknowledgements, as a Kafka broker's
//! produce purgatory holds `acks=all` requests.
//!
//! Requests arrive at a target rate from `--threads` request threads (the broker's request handlers,
//! each registering its share of the rate), each for one of `--partitions` partitions. A request is answered
//! once every follower replica has acknowledged it; each follower answers after a log-normal delay
//! (median 20 ms, 75th percentile 60 ms by default). The request waits in the purgatory, watched
//! under its partition, with a timeout (200 ms by default): a replica thread delivers each
//! acknowledgement when due and calls `check_and_complete(partition)`, which completes every request
//! of that partition that now has all its acks; the purgatory's reaper thread expires the requests
//! whose slowest replica is too slow.
//!
//! ```text
//! cargo run --release --example produce_purgatory
//! cargo run --release --example produce_purgatory -- --rate 300000 --replicas 2 --partitions 5000
//! cargo run --release --example produce_purgatory -- --threads 4    # 4 request threads, same total rate
//! ```
//!
//! The summary checks the purgatory's promises on every request (answered exactly once; expired ones
//! answered before their expiration callback; nothing left watched) and reports response times,
//! how late the timeouts fired, the achieved rate, CPU time per request and memory.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use delaywheel::purgatory::{DelayedOperation, Purgatory};
use delaywheel::Timer;
use hdrhistogram::Histogram;

mod support;
use support::flags::Flags;
use support::progress::Progress;
use support::{build_timer, mib, proc_status_bytes, process_cpu, Calendar, Latencies, Pacer, SplitMix};

#[derive(Debug)]
struct Args {
    rate: f64,
    duration: f64,
    timeout_ms: u64,
    replicas: u32,
    partitions: u64,
    median_ms: f64,
    p75_ms: f64,
    tick_us: u64,
    threads: u64,
    no_progress: bool,
}

impl Args {
    fn parse() -> Args {
        let mut f = Flags::from_env(
            "Produce requests waiting in a delaywheel purgatory for replica acknowledgements",
        );
        let args = Args {
            rate: f.value("rate", 100_000.0, "Target request arrival rate, per second."),
            duration: f.value("duration", 5.0, "How long requests keep arriving, in seconds."),
            timeout_ms: f.value("timeout-ms", 200, "The request timeout, in milliseconds."),
            replicas: f.value("replicas", 2, "Follower replicas that must acknowledge each request."),
            partitions: f.value("partitions", 1_000, "Partitions (the purgatory's keys)."),
            median_ms: f.value(
                "median-ms",
                20.0,
                "Median delay of a replica's acknowledgement, in milliseconds.",
            ),
            p75_ms: f.value(
                "p75-ms",
                60.0,
                "75th percentile of a replica's acknowledgement delay, in milliseconds.",
            ),
            tick_us: f.value("tick-us", 1_000, "Timer tick, in microseconds."),
            threads: f.value("threads", 1, "Request threads registering operations, each at rate / threads."),
            no_progress: f.switch("no-progress", "Do not draw the progress bar."),
        };
        f.require(args.rate > 0.0 && args.duration > 0.0, "--rate and --duration must be positive");
        f.require(args.partitions > 0 && args.replicas > 0, "--partitions and --replicas must be at least 1");
        f.require(args.threads > 0, "--threads must be at least 1");
        f.require(0.0 < args.median_ms && args.median_ms < args.p75_ms, "need 0 < --median-ms < --p75-ms");
        f.finish();
        args
    }
}

/// What the broker observed, shared by every request of the run.
struct Broker {
    start: Instant,
    /// Responses sent (`on_complete` calls).
    responses: AtomicU64,
    acked: AtomicU64,
    timed_out: AtomicU64,
    /// `on_expiration` calls.
    expirations: AtomicU64,
    /// Expirations of requests whose last acknowledgement came between the expiry's decision and
    /// the response, which then found every replica in and answered success.
    acked_at_expiry: AtomicU64,
    /// Broken promises: a second response, or an expiration before the response.
    violations: AtomicU64,
    /// Arrival to response of acked requests, µs.
    response_time: Mutex<Histogram<u64>>,
    /// Expiration time minus (arrival + timeout), µs.
    expiry_lateness: Mutex<Histogram<u64>>,
}

impl Broker {
    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
}

/// An `acks=all` produce request for one partition.
struct Produce {
    partition: u64,
    required: u32,
    acks: AtomicU32,
    responded: AtomicBool,
    /// The response was a success (every replica had acknowledged when it was sent).
    answered_acked: AtomicBool,
    arrived_ns: u64,
    deadline_ns: u64,
    broker: &'static Broker,
}

impl DelayedOperation for Produce {
    fn try_complete(&self) -> bool {
        self.acks.load(Ordering::Acquire) >= self.required
    }

    /// Sends the response: success if every replica acknowledged, REQUEST_TIMED_OUT otherwise.
    fn on_complete(&self) {
        let broker = self.broker;
        if self.responded.swap(true, Ordering::AcqRel) {
            broker.violations.fetch_add(1, Ordering::Relaxed);
        }
        broker.responses.fetch_add(1, Ordering::Relaxed);
        if self.try_complete() {
            self.answered_acked.store(true, Ordering::Release);
            broker.acked.fetch_add(1, Ordering::Relaxed);
            let us = (broker.now_ns() - self.arrived_ns) / 1_000;
            let _ = broker.response_time.lock().unwrap().record(us.max(1));
        } else {
            broker.timed_out.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn on_expiration(&self) {
        let broker = self.broker;
        if !self.responded.load(Ordering::Acquire) {
            broker.violations.fetch_add(1, Ordering::Relaxed);
        }
        broker.expirations.fetch_add(1, Ordering::Relaxed);
        if self.answered_acked.load(Ordering::Acquire) {
            broker.acked_at_expiry.fetch_add(1, Ordering::Relaxed);
        }
        let us = broker.now_ns().saturating_sub(self.deadline_ns) / 1_000;
        let _ = broker.expiry_lateness.lock().unwrap().record(us.max(1));
    }
}

/// One follower's acknowledgement of one request.
type Ack = Arc<Produce>;

fn main() {
    let args = Args::parse();
    let timeout = Duration::from_millis(args.timeout_ms);
    let timer = build_timer(Timer::builder().tick(Duration::from_micros(args.tick_us)).thread_name("reaper"));
    let purgatory: Arc<Purgatory<u64, Produce>> = Arc::new(Purgatory::with_timer(timer));
    let broker: &'static Broker = Box::leak(Box::new(Broker {
        start: Instant::now(),
        responses: AtomicU64::new(0),
        acked: AtomicU64::new(0),
        timed_out: AtomicU64::new(0),
        expirations: AtomicU64::new(0),
        acked_at_expiry: AtomicU64::new(0),
        violations: AtomicU64::new(0),
        response_time: Mutex::new(Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap()),
        expiry_lateness: Mutex::new(Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap()),
    }));
    let total = (args.rate * args.duration) as u64;
    let arrived = Arc::new(AtomicU64::new(0));
    let (acks_tx, acks_rx) = crossbeam_channel::unbounded::<Vec<(u64, Ack)>>();
    let cpu_start = process_cpu();

    // The followers: deliver each acknowledgement when due, then check its partition.
    let replicas = {
        let purgatory = Arc::clone(&purgatory);
        thread::Builder::new()
            .name("replicas".into())
            .spawn(move || {
                let mut calendar = Calendar::new(timeout * 4);
                let mut open = true;
                while open || !calendar.is_empty() {
                    loop {
                        match acks_rx.try_recv() {
                            Ok(batch) => batch.into_iter().for_each(|(due, ack)| calendar.insert(due, ack)),
                            Err(crossbeam_channel::TryRecvError::Empty) => break,
                            Err(crossbeam_channel::TryRecvError::Disconnected) => {
                                open = false;
                                break;
                            }
                        }
                    }
                    let delivered = calendar.deliver_due(broker.now_ns() / 1_000_000, |request: Ack| {
                        request.acks.fetch_add(1, Ordering::AcqRel);
                        purgatory.check_and_complete(&request.partition);
                    });
                    if delivered == 0 {
                        thread::sleep(Duration::from_micros(200));
                    }
                }
            })
            .unwrap()
    };

    // The request threads: each registers its share of the requests at its share of the rate.
    let clients: Vec<_> = (0..args.threads)
        .map(|index| {
            let (purgatory, arrived, acks_tx) =
                (Arc::clone(&purgatory), Arc::clone(&arrived), acks_tx.clone());
            let share = total / args.threads + u64::from(index < total % args.threads);
            let rate = args.rate * share as f64 / total.max(1) as f64;
            let (replicas, partitions) = (args.replicas, args.partitions);
            let mut latencies = Latencies::new(args.median_ms, args.p75_ms, 42 + index);
            thread::Builder::new()
                .name(format!("requests-{index}"))
                .spawn(move || {
                    let mut rng = SplitMix(7 + index);
                    let timeout_ns = timeout.as_nanos() as u64;
                    let mut pacer = Pacer::new(broker.start, rate, share);
                    while let Some(due) = pacer.next_due(Duration::from_micros(100)) {
                        let mut acks =
                            Vec::with_capacity(((due.end - due.start) * u64::from(replicas)) as usize);
                        let arriving = due.end - due.start;
                        for _ in due {
                            let now = broker.now_ns();
                            let request = Arc::new(Produce {
                                partition: rng.next() % partitions,
                                required: replicas,
                                acks: AtomicU32::new(0),
                                responded: AtomicBool::new(false),
                                answered_acked: AtomicBool::new(false),
                                arrived_ns: now,
                                deadline_ns: now + timeout_ns,
                                broker,
                            });
                            for _ in 0..replicas {
                                // An acknowledgement after the timeout would find the request answered.
                                let delay = latencies.next_nanos();
                                if delay < timeout_ns {
                                    acks.push(((now + delay) / 1_000_000, Arc::clone(&request)));
                                }
                            }
                            let partition = request.partition;
                            purgatory.try_complete_else_watch(request, timeout, [partition]);
                        }
                        let _ = acks_tx.send(acks);
                        arrived.fetch_add(arriving, Ordering::Relaxed);
                    }
                })
                .unwrap()
        })
        .collect();
    drop(acks_tx);

    let bar = Progress::new(total, args.no_progress);
    let mut peak_delayed = 0;
    while clients.iter().any(|c| !c.is_finished()) {
        let delayed = purgatory.delayed();
        peak_delayed = peak_delayed.max(delayed);
        let watched = purgatory.watched_keys();
        bar.show(
            arrived.load(Ordering::Relaxed),
            &format!("waiting {delayed}, watched partitions {watched}"),
        );
        thread::sleep(Duration::from_millis(50));
    }
    let arrival_secs = broker.start.elapsed().as_secs_f64();
    clients.into_iter().for_each(|c| c.join().unwrap());
    bar.show(total, "draining");
    replicas.join().unwrap();
    let give_up = Instant::now() + timeout * 4 + Duration::from_secs(5);
    // All three counts, not `delayed()` alone: an expired operation leaves `delayed()` when the timer
    // claims its timeout, a moment before its task takes its watches off their lists.
    let drained = || (purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()) == (0, 0, 0);
    while !drained() && Instant::now() < give_up {
        thread::sleep(Duration::from_millis(5));
    }
    bar.finish();
    let cpu = process_cpu() - cpu_start;
    let wall = broker.start.elapsed();

    let count = |c: &AtomicU64| c.load(Ordering::Relaxed);
    // All of them, unless a rate out of reach stopped the arrivals at their time.
    let requests = count(&arrived);
    let (responses, acked, timed_out) =
        (count(&broker.responses), count(&broker.acked), count(&broker.timed_out));
    let (expirations, violations) = (count(&broker.expirations), count(&broker.violations));
    let acked_at_expiry = count(&broker.acked_at_expiry);
    let response = broker.response_time.lock().unwrap();
    let lateness = broker.expiry_lateness.lock().unwrap();
    let ms = |us: u64| format!("{:.3}", us as f64 / 1_000.0);
    println!(
        "produce_purgatory: delaywheel {}, tick {:?}, {} partitions, {} follower acks per request, {} request thread{}",
        env!("CARGO_PKG_VERSION"),
        Duration::from_micros(args.tick_us),
        args.partitions,
        args.replicas,
        args.threads,
        if args.threads == 1 { "" } else { "s" }
    );
    println!(
        "workload: timeout {} ms, replica ack delay log-normal median {} ms / p75 {} ms",
        args.timeout_ms, args.median_ms, args.p75_ms
    );
    println!("+--------------------------------------+------------------+");
    let row = |k: &str, v: String| println!("| {k:<36} | {v:>16} |");
    row("target rate (req/s)", format!("{:.0}", args.rate));
    row("achieved rate (req/s)", format!("{:.0}", requests as f64 / arrival_secs));
    row("requests", requests.to_string());
    row("answered: all replicas acked", acked.to_string());
    row("answered: timed out", timed_out.to_string());
    row("responses sent (exactly once each)", responses.to_string());
    row("expirations (after their response)", expirations.to_string());
    row("  of which last ack raced the expiry", acked_at_expiry.to_string());
    row("broken promises", violations.to_string());
    row("peak waiting in purgatory", peak_delayed.to_string());
    row("left: delayed / watched / keys", {
        format!("{} / {} / {}", purgatory.delayed(), purgatory.watched(), purgatory.watched_keys())
    });
    row("response time p50 (ms)", ms(response.value_at_quantile(0.5)));
    row("response time p99 (ms)", ms(response.value_at_quantile(0.99)));
    row("timeout late p50 (ms)", ms(lateness.value_at_quantile(0.5)));
    row("timeout late p99 (ms)", ms(lateness.value_at_quantile(0.99)));
    row("timeout late max (ms)", ms(lateness.max()));
    row("wall time (s)", format!("{:.2}", wall.as_secs_f64()));
    row("process CPU (ms)", format!("{:.0}", cpu.as_secs_f64() * 1_000.0));
    row("CPU per request (µs)", format!("{:.2}", cpu.as_secs_f64() * 1e6 / requests.max(1) as f64));
    row("peak RSS (MiB)", format!("{:.1}", mib(proc_status_bytes("VmHWM:"))));
    println!("+--------------------------------------+------------------+");
    assert_eq!(responses, requests, "every request answered exactly once");
    assert_eq!(expirations, timed_out + acked_at_expiry, "every timed-out answer came from an expiration");
    assert_eq!(violations, 0, "no broken promise");
    assert_eq!((purgatory.delayed(), purgatory.watched(), purgatory.watched_keys()), (0, 0, 0));
}
