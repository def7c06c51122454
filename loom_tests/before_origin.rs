//! `TimerHandle::deadline` racing a reset, or the end of the task and a pruning, on the records of
//! deadlines before the clock's origin (`src/timer/before_origin.rs`).

use crate::support::{manual_timer, ticks};

/// The task was reset before the origin, then later: a reset to the origin races `deadline`, which
/// reads the later instant or the origin, never the instant of the first reset (the origin's word
/// beside the record the first reset left).
#[test]
fn a_reset_to_the_origin_racing_deadline() {
    loom::model(|| {
        let (_clock, timer) = manual_timer(2);
        let origin = timer.now();
        let (before, later) = (origin - ticks(5), origin + ticks(10));
        let handle = loom::sync::Arc::new(timer.schedule(ticks(50), || {}));
        assert!(handle.reset_at(before) && handle.deadline() == Some(before));
        assert!(handle.reset_at(later));

        let resetter = {
            let handle = loom::sync::Arc::clone(&handle);
            loom::thread::spawn(move || assert!(handle.reset_at(origin)))
        };
        let read = handle.deadline();
        resetter.join().unwrap();

        assert!(read == Some(later) || read == Some(origin), "read {read:?}, never due then");
        assert_eq!(handle.deadline(), Some(origin));
        assert!(handle.cancel());
    });
}

/// The task was reset before the origin: `deadline` reads the origin's word while a reset to a
/// later instant (no lock: one comparison of the word) races its second read under the records'
/// lock. The read is the instant before the origin or the later one, never the origin (the word
/// the first read found, whose instant the task never had).
#[test]
fn a_reset_to_a_later_word_racing_deadline() {
    loom::model(|| {
        let (_clock, timer) = manual_timer(2);
        let origin = timer.now();
        let (before, later) = (origin - ticks(5), origin + ticks(10));
        let handle = loom::sync::Arc::new(timer.schedule(ticks(50), || {}));
        assert!(handle.reset_at(before));

        let reader = {
            let handle = loom::sync::Arc::clone(&handle);
            loom::thread::spawn(move || handle.deadline())
        };
        assert!(handle.reset_at(later));
        let read = reader.join().unwrap();

        assert!(read == Some(before) || read == Some(later), "read {read:?}, never due then");
        assert_eq!(handle.deadline(), Some(later));
        assert!(handle.cancel());
    });
}

/// The task was reset before the origin: `deadline` reads the origin's word while the task is
/// cancelled and the timer shrunk, which prunes the record of the ended task. The read is the
/// recorded instant or nothing (the task ended), never the origin: `deadline` reads the word again
/// under the records' lock, and finds the task ended when its record is gone.
#[test]
fn a_cancel_and_a_pruning_racing_deadline() {
    loom::model(|| {
        let (_clock, timer) = manual_timer(2);
        let before = timer.now() - ticks(5);
        let handle = timer.schedule(ticks(50), || {});
        assert!(handle.reset_at(before));
        let reader = {
            let handle = handle.clone();
            loom::thread::spawn(move || handle.deadline())
        };
        assert!(handle.cancel());
        timer.shrink();
        let read = reader.join().unwrap();

        assert!(read == Some(before) || read.is_none(), "read {read:?}, never due then");
        assert_eq!(handle.deadline(), None);
    });
}
