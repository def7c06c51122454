//! The panics the reference model (`model.rs`) provokes: tasks that panic when they run or when
//! dropped unrun, with a payload whose own drop panics; how it catches them, and the hook that
//! keeps them quiet.

use delaywheel::UnfiredTask;

/// A panic payload whose `Drop` panics too; also captured by a closure that panics when it is
/// dropped unrun.
pub(super) struct Bomb;

/// Installs (once per process) a panic hook that passes over the panics the model provokes (a
/// [`Bomb`] as payload, or a bomb's drop) and hands every other to the hook in place before: so
/// they print nothing in the property test, and do not abort the fuzzer, whose hook aborts on any
/// panic, caught or not.
pub fn pass_over_expected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !expected(info.payload()) {
                before(info);
            }
        }));
    });
}

/// In the message of every panic the model provokes.
const EXPECTED: &str = "(expected by the model)";

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("a bomb dropped {EXPECTED}");
    }
}

/// Whether a panic's payload is one the model provokes: a [`Bomb`], or a message naming itself
/// expected (a bomb's drop, a carried value's drop).
fn expected(payload: &(dyn std::any::Any + Send)) -> bool {
    let message =
        payload.downcast_ref::<&str>().copied().or(payload.downcast_ref::<String>().map(|s| s.as_str()));
    payload.is::<Bomb>() || message.is_some_and(|m| m.contains(EXPECTED))
}

/// Runs `f`, catching a panic the model provoked (`None`): the model's way with closures that
/// panic when dropped. Any other panic goes on unwinding, so that a panic of the library is a
/// failure and never read as a refusal or a won cancel.
pub(super) fn caught<T>(f: impl FnOnce() -> T) -> Option<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(value) => Some(value),
        Err(payload) if expected(&*payload) => None,
        Err(payload) => std::panic::resume_unwind(payload),
    }
}

/// Runs a task a shutdown returned (`UnfiredTask::run`) as the timer runs one: a panic the model
/// provoked is caught and its payload (a [`Bomb`], whose drop panics too) forgotten.
pub(super) fn run_unfired(task: UnfiredTask) {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task.run())) {
        Ok(()) => {}
        Err(payload) if payload.is::<Bomb>() => std::mem::forget(payload),
        Err(payload) => std::panic::resume_unwind(payload),
    }
}

/// Drops the tasks a shutdown returned one by one, each drop's panic caught (a panic while a
/// vector drops the rest would abort).
pub(super) fn drop_each(unfired: Vec<UnfiredTask>) {
    for task in unfired {
        caught(|| drop(task));
    }
}
