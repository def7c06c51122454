//! TEMPORARY stand-in for the instant API that lands on main separately; removed at the merge.
#![allow(dead_code, missing_docs)]

use std::time::{Duration, Instant};

use crate::clock::ClockSource;
use crate::timer::Shared;
use crate::{ScheduleError, Timer, TimerHandle};

fn base() -> Instant {
    static BASE: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

impl ClockSource {
    pub(crate) fn now_instant(&self) -> Instant {
        if self.is_manual() {
            base() + crate::clock::nanos_to_duration(u128::from(self.now_nanos()))
        } else {
            Instant::now()
        }
    }
}

impl Shared {
    pub(crate) fn schedule_at<F>(&self, at: Instant, task: F) -> Result<TimerHandle, ScheduleError>
    where
        F: FnOnce() + Send + 'static,
    {
        let now = self.time().clock.now_instant();
        self.schedule(at.saturating_duration_since(now), task)
    }
}

impl Timer {
    pub fn now(&self) -> Instant {
        self.shared().time().clock.now_instant()
    }
}

impl TimerHandle {
    pub fn reset_at(&self, _at: Instant) -> bool {
        false
    }
}

pub(crate) fn _unused(_: Duration) {}
