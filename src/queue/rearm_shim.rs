//! TEMPORARY stand-ins for the timer's absolute-deadline API until it lands; removed on merge.
#![allow(missing_docs, dead_code)]
use std::time::Instant;

use crate::ScheduleError;
use crate::Timer;
use crate::TimerHandle;

static BASE: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

pub(crate) trait TimerAt {
    fn now(&self) -> Instant;
    fn try_schedule_at<F: FnOnce() + Send + 'static>(
        &self,
        at: Instant,
        task: F,
    ) -> Result<TimerHandle, ScheduleError>;
}

impl TimerAt for Timer {
    fn now(&self) -> Instant {
        *BASE.get_or_init(Instant::now) + self.current_time()
    }
    fn try_schedule_at<F: FnOnce() + Send + 'static>(
        &self,
        at: Instant,
        task: F,
    ) -> Result<TimerHandle, ScheduleError> {
        self.try_schedule(at.saturating_duration_since(TimerAt::now(self)), task)
    }
}

pub(crate) trait HandleAt {
    fn reset_at(&self, at: Instant) -> bool;
}
impl HandleAt for TimerHandle {
    fn reset_at(&self, _at: Instant) -> bool {
        false
    }
}
