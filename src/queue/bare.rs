//! The wakers of tasks waiting in a bare [`poll_expired`](super::DelayQueue::poll_expired), which
//! has no drop to take a task's registration out, and the bound on how many the queue keeps.
//!
//! ## Purges
//!
//! Each waiting task is kept once (a task polling again before it is woken is found by
//! `Waker::will_wake`), until the next wake: a batch arriving, the queue becoming empty, or a
//! shutdown. A task that stops polling (a `select!` that another branch won, a task that ended)
//! stays kept until then, and with it its memory. So the kept wakers are bounded: a registration
//! that would make them more than `limit` first takes every kept waker out and wakes it (a
//! **purge**). The wake is spurious, which the `Future` and `Stream` contracts allow: a task still
//! waiting polls again and registers again; a task that is gone has its waker dropped. For the
//! queue's protocol (`ready/`) a purge is one more wake that takes the wakers: it lowers
//! `waiting` under the arrival lock, and the tasks it took are woken after the locks are released.
//! The scan that finds a task polling again goes over the kept wakers only, so it is bounded too.
//!
//! ## The limit
//!
//! The limit follows the number of tasks that really wait, so that they are not woken on every
//! poll: `max(64, 2 × live)`, where `live` estimates how many of the kept tasks poll again after a
//! purge. While `live` is at least the number of tasks waiting, at least `limit − live ≥ limit / 2`
//! new tasks register between two purges (the kept wakers are distinct tasks), so a purge's wakes,
//! and the polls again of the waiting tasks it woke, cost O(1) per registration amortized; and the
//! queue keeps at most about twice the waiting tasks' wakers (at least 64), plus the probes.
//!
//! A task polling again cannot be told from a new one but by holding its waker, which keeps its
//! memory: so a purge draws up to 32 **probes**, evenly spaced, from the wakers it takes, and keeps
//! them (not registered) to recognize their tasks registering again. A **round** ends at the first
//! purge once every probe came back or once `window` new registrations were made since the probes
//! were drawn; `live` is then the share of probes that came back times the number of wakers they
//! were drawn from, and the next probes are drawn.
//!
//! * A round in which no probe came back sets the limit to its least and doubles the window.
//! * One in which some came back sets the window to twice the registrations the last of them took
//!   (at least twice the limit).
//!
//! So when more tasks wait than the limit, and the executor polls each woken task only after all
//! the others (each purge then wakes tasks that come back only after many more purges), the window
//! grows until it sees them come back, and the limit then doubles each round until they all fit:
//! the spurious wake-ups stop instead of going on for ever (`tests/queue_bare_polls.rs`: 5,000
//! such tasks settle within 18 polls each). A window that a long run of tasks that never came back
//! doubled is as long as that run, so the wake-ups of one such round cost at most one poll per task
//! of the run. Tasks that stop polling bring the limit back down within a round.

use std::mem;
use std::task::Waker;

/// The least limit. Under loom 1, so that a model's second waiting task makes a purge.
const LEAST: usize = if cfg!(delaywheel_loom) { 1 } else { 64 };

/// Probes drawn from a purge's wakers.
const PROBES: usize = 32;

/// See the module docs.
pub(super) struct Bare {
    /// The kept wakers, one per task: registered, each counted in the queue's `waiting`.
    wakers: Vec<Waker>,
    /// A registration that would make `wakers` longer purges them first.
    limit: usize,
    /// Wakers a purge woke, kept (not registered) to recognize their tasks registering again.
    probes: Vec<Waker>,
    /// How many probes were drawn this round, and from how many wakers.
    drawn: usize,
    drawn_from: usize,
    /// Probes whose task registered again this round.
    returned: usize,
    /// New registrations since the probes were drawn; their count when the last probe returned.
    registered: u64,
    last_return: u64,
    /// The round ends at the first purge once `registered` reaches it (0: no round yet).
    window: u64,
}

/// What a registration took out, for the caller to wake and drop after releasing the locks (a
/// waker may run code that takes them).
#[derive(Default)]
pub(super) struct Purged {
    /// The kept wakers a purge took: to wake.
    pub(super) wakers: Vec<Waker>,
    /// Probes done with: to drop.
    probes: Vec<Waker>,
}

impl Bare {
    pub(super) fn new() -> Self {
        Bare {
            wakers: Vec::new(),
            limit: LEAST,
            probes: Vec::new(),
            drawn: 0,
            drawn_from: 0,
            returned: 0,
            registered: 0,
            last_return: 0,
            window: 0,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.wakers.is_empty()
    }

    /// Takes every kept waker out (a wake).
    pub(super) fn take(&mut self) -> Vec<Waker> {
        mem::take(&mut self.wakers)
    }

    /// Whether the task of `waker` is kept.
    pub(super) fn holds(&self, waker: &Waker) -> bool {
        self.wakers.iter().any(|kept| kept.will_wake(waker))
    }

    /// Makes room for a task registering (not kept yet): records a probe coming back, and purges
    /// if the kept wakers are at the limit. The caller lowers `waiting` by the wakers taken.
    pub(super) fn make_room(&mut self, waker: &Waker) -> Purged {
        let mut purged = Purged::default();
        self.registered = self.registered.saturating_add(1);
        if let Some(probe) = self.probes.iter().position(|probe| probe.will_wake(waker)) {
            purged.probes.push(self.probes.swap_remove(probe));
            self.returned += 1;
            self.last_return = self.registered;
        }
        if self.wakers.len() < self.limit {
            return purged;
        }
        purged.wakers = mem::take(&mut self.wakers);
        if self.window == 0 || self.registered >= self.window || self.returned == self.drawn {
            self.end_round(&mut purged);
        }
        purged
    }

    /// Sets the limit and the window from the round's probes, and draws the next ones from the
    /// wakers being purged.
    fn end_round(&mut self, purged: &mut Purged) {
        if self.returned == 0 {
            self.limit = LEAST;
            self.window = self.window.saturating_mul(2).max(2 * LEAST as u64);
        } else {
            let live = (self.returned * self.drawn_from).div_ceil(self.drawn);
            self.limit = LEAST.max(live.saturating_mul(2));
            self.window = (2 * self.limit as u64).max(self.last_return.saturating_mul(2));
        }
        purged.probes.append(&mut self.probes);
        let step = purged.wakers.len().div_ceil(PROBES).max(1);
        self.probes.extend(purged.wakers.iter().step_by(step).cloned());
        self.drawn = self.probes.len();
        self.drawn_from = purged.wakers.len();
        self.returned = 0;
        self.registered = 0;
        self.last_return = 0;
    }

    /// Keeps the waker of a task registered.
    pub(super) fn push(&mut self, waker: Waker) {
        self.wakers.push(waker);
    }
}

impl Purged {
    /// Whether a purge took wakers.
    pub(super) fn took(&self) -> bool {
        !self.wakers.is_empty()
    }

    /// Wakes the purged tasks and drops the probes done with; with no queue lock held. Each wake
    /// is caught (`unwind.rs`), so every purged task is woken whatever one waker does.
    pub(super) fn wake(self) {
        for waker in self.wakers {
            crate::unwind::wake_caught(waker);
        }
        drop(self.probes);
    }
}
