//! `InlineTask`'s unit tests (also run under Miri, AddressSanitizer and valgrind).

use super::*;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The inline decision for a closure value's type (closure types cannot be named).
fn inline_for<F: FnOnce() + Send + 'static>(_: &F) -> bool {
    is_inline::<F>()
}

/// Counts its drops in a shared counter; 8 bytes.
struct DropCounter(Arc<AtomicUsize>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Over-aligned: never inline, whatever its size.
#[repr(align(16))]
struct Aligned16(u8);

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

/// A task that only drops `guard`: boxed (a 16-byte pad makes it too big) or inline.
fn guarded_task(boxed: bool, guard: DropCounter) -> InlineTask {
    if boxed {
        let pad = [0u64; 2];
        InlineTask::new(move || drop((guard, pad)))
    } else {
        InlineTask::new(move || drop(guard))
    }
}

fn load(c: &AtomicUsize) -> usize {
    c.load(Ordering::SeqCst)
}

#[test]
#[cfg(target_pointer_width = "64")]
fn sizes() {
    assert_eq!(INLINE_BYTES, 16);
    assert_eq!(mem::size_of::<InlineTask>(), 24);
    assert_eq!(mem::align_of::<InlineTask>(), 8);
    assert_eq!(mem::size_of::<Option<InlineTask>>(), 24);
}

#[test]
fn send_and_not_sync() {
    fn assert_send<T: Send>() {}
    assert_send::<InlineTask>();

    // Ambiguous (does not compile) if `InlineTask: Sync`: both impls would apply.
    trait AmbiguousIfSync<A> {
        fn check() {}
    }
    impl<T: ?Sized> AmbiguousIfSync<()> for T {}
    impl<T: ?Sized + Sync> AmbiguousIfSync<u8> for T {}
    <InlineTask as AmbiguousIfSync<_>>::check();
}

#[test]
fn inline_or_boxed_by_capture() {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let by_ref: &'static AtomicUsize = &COUNT;
    let one_ref = move || {
        by_ref.fetch_add(1, Ordering::SeqCst);
    };
    assert!(inline_for(&one_ref));
    assert!(InlineTask::new(one_ref).is_inline());

    let arc = counter();
    let one_arc = move || {
        arc.fetch_add(1, Ordering::SeqCst);
    };
    assert!(inline_for(&one_arc));
    assert!(InlineTask::new(one_arc).is_inline());

    let zst = || {};
    assert_eq!(mem::size_of_val(&zst), 0);
    assert!(inline_for(&zst));
    assert!(InlineTask::new(zst).is_inline());

    let one_byte = 7u8;
    let small = move || assert_eq!(one_byte, 7);
    assert!(InlineTask::new(small).is_inline());

    let (a, b, c) = (1u64, 2u64, 3u64);
    let three = move || assert_eq!(a + b + c, 6);
    assert_eq!(mem::size_of_val(&three), 24);
    assert!(!inline_for(&three));
    assert!(!InlineTask::new(three).is_inline());

    let aligned = Aligned16(1);
    // Moves the whole value in (`aligned.0` alone would capture just the `u8` field).
    let over_aligned = move || {
        let whole = aligned;
        assert_eq!(whole.0, 1);
    };
    assert_eq!(mem::align_of_val(&over_aligned), 16);
    assert!(!inline_for(&over_aligned));
    assert!(!InlineTask::new(over_aligned).is_inline());
}

#[test]
fn debug_says_inline_in_a_block_or_boxed() {
    assert_eq!(format!("{:?}", InlineTask::new(|| {})), "InlineTask(inline)");
    let big = [0u64; 4];
    assert_eq!(format!("{:?}", InlineTask::new(move || assert_eq!(big.len(), 4))), "InlineTask(block of 64)");
    let huge = [0u64; 33];
    assert_eq!(format!("{:?}", InlineTask::new(move || assert_eq!(huge.len(), 33))), "InlineTask(boxed)");
}

#[test]
fn run_runs_once_inline() {
    let runs = counter();
    let r = Arc::clone(&runs);
    let task = InlineTask::new(move || {
        r.fetch_add(1, Ordering::SeqCst);
    });
    assert!(task.is_inline());
    assert_eq!(load(&runs), 0, "not run before run()");
    task.run();
    assert_eq!(load(&runs), 1);
    assert_eq!(Arc::strong_count(&runs), 1, "the captured Arc was released after running");
}

#[test]
fn run_runs_once_boxed() {
    let runs = counter();
    let r = Arc::clone(&runs);
    let add = [1usize, 10, 100];
    let task = InlineTask::new(move || {
        r.fetch_add(add.iter().sum(), Ordering::SeqCst);
    });
    assert!(!task.is_inline());
    assert_eq!(load(&runs), 0, "not run before run()");
    task.run();
    assert_eq!(load(&runs), 111, "ran once, with its captures intact");
    assert_eq!(Arc::strong_count(&runs), 1, "the captured Arc was released after running");
}

#[test]
fn run_zst_and_static_ref() {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let by_ref: &'static AtomicUsize = &COUNT;
    InlineTask::new(move || {
        by_ref.fetch_add(1, Ordering::SeqCst);
    })
    .run();
    // A ZST closure reaching the same static through its path, not a capture.
    InlineTask::new(|| {
        COUNT.fetch_add(10, Ordering::SeqCst);
    })
    .run();
    assert_eq!(load(&COUNT), 11);
}

#[test]
fn small_capture_keeps_its_bytes() {
    // 1, 2 and 4 bytes in a 16-byte store: the rest of it is never read as a value.
    let (b, h, w) = (0xa5u8, 0xbeefu16, 0xdead_beefu32);
    let seen = counter();
    let s = Arc::clone(&seen);
    InlineTask::new(move || assert_eq!(b, 0xa5)).run();
    InlineTask::new(move || assert_eq!(h, 0xbeef)).run();
    InlineTask::new(move || assert_eq!(w, 0xdead_beef)).run();
    InlineTask::new(move || {
        s.fetch_add(1, Ordering::SeqCst);
    })
    .run();
    assert_eq!(load(&seen), 1);
}

#[test]
fn over_aligned_capture_is_aligned_when_run() {
    let aligned = Aligned16(42);
    let hits = counter();
    let h = Arc::clone(&hits);
    let task = InlineTask::new(move || {
        assert_eq!(&aligned as *const Aligned16 as usize % 16, 0);
        assert_eq!(aligned.0, 42);
        h.fetch_add(1, Ordering::SeqCst);
    });
    assert!(!task.is_inline());
    task.run();
    assert_eq!(load(&hits), 1);
}

#[test]
fn drop_without_run_releases_the_arc_once_inline() {
    let arc = counter();
    let a = Arc::clone(&arc);
    let task = InlineTask::new(move || {
        a.fetch_add(1, Ordering::SeqCst);
    });
    assert!(task.is_inline());
    assert_eq!(Arc::strong_count(&arc), 2);
    drop(task);
    assert_eq!(Arc::strong_count(&arc), 1, "released exactly once");
    assert_eq!(load(&arc), 0, "never ran");
}

#[test]
fn drop_without_run_releases_the_arc_once_boxed() {
    let arc = counter();
    let a = Arc::clone(&arc);
    let pad = [0u64; 2];
    let task = InlineTask::new(move || {
        a.fetch_add(1 + pad.len(), Ordering::SeqCst);
    });
    assert!(!task.is_inline());
    assert_eq!(Arc::strong_count(&arc), 2);
    drop(task);
    assert_eq!(Arc::strong_count(&arc), 1, "released exactly once");
    assert_eq!(load(&arc), 0, "never ran");
}

#[test]
fn drop_counter_guard_dropped_once_without_run() {
    for boxed in [false, true] {
        let drops = counter();
        let guard = DropCounter(Arc::clone(&drops));
        let task = guarded_task(boxed, guard);
        assert_eq!(task.is_inline(), !boxed);
        assert_eq!(load(&drops), 0);
        drop(task);
        assert_eq!(load(&drops), 1, "boxed: {boxed}");
        assert_eq!(Arc::strong_count(&drops), 1, "boxed: {boxed}");
    }
}

#[test]
fn option_none_and_some() {
    let arc = counter();
    let a = Arc::clone(&arc);
    let mut slot: Option<InlineTask> = Some(InlineTask::new(move || drop(a)));
    assert!(slot.is_some());
    slot.take().unwrap().run();
    assert!(slot.is_none());
    assert_eq!(Arc::strong_count(&arc), 1);
}

/// Runs a task that panics with a drop-counting guard captured; returns (`run` panicked, guard
/// drops, guard's `Arc` released).
fn run_panicking(boxed: bool) -> (bool, usize, bool) {
    let drops = counter();
    let guard = DropCounter(Arc::clone(&drops));
    let task = if boxed {
        let pad = [7u64; 3];
        InlineTask::new(move || {
            let _guard = &guard;
            assert_eq!(pad[2], 7);
            panic!("task panicked on purpose");
        })
    } else {
        InlineTask::new(move || {
            let _guard = &guard;
            panic!("task panicked on purpose");
        })
    };
    assert_eq!(task.is_inline(), !boxed);
    let result = panic::catch_unwind(AssertUnwindSafe(|| task.run()));
    let message_ok = match &result {
        Err(payload) => payload.downcast_ref::<&str>() == Some(&"task panicked on purpose"),
        Ok(()) => false,
    };
    assert!(message_ok, "the closure's own panic reached the caller");
    (result.is_err(), load(&drops), Arc::strong_count(&drops) == 1)
}

#[test]
fn panic_propagates_and_drops_captures_once_inline() {
    let (panicked, drops, released) = run_panicking(false);
    assert!(panicked);
    assert_eq!(drops, 1, "the guard was dropped exactly once by unwinding");
    assert!(released);
}

#[test]
fn panic_propagates_and_drops_captures_once_boxed() {
    let (panicked, drops, released) = run_panicking(true);
    assert!(panicked);
    assert_eq!(drops, 1, "the guard was dropped exactly once by unwinding");
    assert!(released);
}

#[test]
fn into_box_then_call_runs_once() {
    for boxed in [false, true] {
        let runs = counter();
        let drops = counter();
        let r = Arc::clone(&runs);
        let guard = DropCounter(Arc::clone(&drops));
        let task = if boxed {
            let pad = [0u64; 2];
            InlineTask::new(move || {
                let _guard = guard;
                r.fetch_add(1 + pad[0] as usize, Ordering::SeqCst);
            })
        } else {
            // The Arc and the guard in one Arc-sized capture (two words would fit too).
            let both = Arc::new((r, guard));
            InlineTask::new(move || {
                both.0.fetch_add(1, Ordering::SeqCst);
            })
        };
        assert_eq!(task.is_inline(), !boxed);
        let f = task.into_box();
        assert_eq!((load(&runs), load(&drops)), (0, 0), "boxed: {boxed}");
        f();
        assert_eq!((load(&runs), load(&drops)), (1, 1), "boxed: {boxed}");
        assert_eq!(Arc::strong_count(&runs), 1, "boxed: {boxed}");
        assert_eq!(Arc::strong_count(&drops), 1, "boxed: {boxed}");
    }
}

#[test]
fn into_box_then_drop_releases_once() {
    for boxed in [false, true] {
        let drops = counter();
        let guard = DropCounter(Arc::clone(&drops));
        let task = guarded_task(boxed, guard);
        assert_eq!(task.is_inline(), !boxed);
        let f = task.into_box();
        assert_eq!(load(&drops), 0, "boxed: {boxed}");
        drop(f);
        assert_eq!(load(&drops), 1, "boxed: {boxed}");
        assert_eq!(Arc::strong_count(&drops), 1, "boxed: {boxed}");
    }
}

#[test]
fn into_box_zst() {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let f = InlineTask::new(|| {
        COUNT.fetch_add(1, Ordering::SeqCst);
    })
    .into_box();
    f();
    assert_eq!(load(&COUNT), 1);
}

#[test]
fn moved_to_another_thread_and_run_there() {
    for boxed in [false, true] {
        let runs = counter();
        let r = Arc::clone(&runs);
        let task = if boxed {
            let name = String::from("elsewhere");
            InlineTask::new(move || {
                assert_eq!(std::thread::current().name(), Some(name.as_str()));
                r.fetch_add(1, Ordering::SeqCst);
            })
        } else {
            InlineTask::new(move || {
                assert_eq!(std::thread::current().name(), Some("elsewhere"));
                r.fetch_add(1, Ordering::SeqCst);
            })
        };
        assert_eq!(task.is_inline(), !boxed);
        std::thread::Builder::new()
            .name("elsewhere".into())
            .spawn(move || task.run())
            .unwrap()
            .join()
            .expect("the task ran on the other thread");
        assert_eq!(load(&runs), 1, "boxed: {boxed}");
        assert_eq!(Arc::strong_count(&runs), 1, "boxed: {boxed}");
    }
}

#[test]
fn string_and_vec_captures_keep_their_contents() {
    let out = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let o = Arc::clone(&out);
    let text = String::from("a string that lives on the heap");
    let numbers: Vec<u32> = (0..1000).collect();
    assert_eq!(mem::size_of_val(&text), 24);
    let task = InlineTask::new(move || {
        let sum: u32 = numbers.iter().sum();
        o.lock().push(format!("{text} {sum}"));
    });
    assert!(!task.is_inline());
    task.run();
    assert_eq!(*out.lock(), vec![String::from("a string that lives on the heap 499500")]);

    // Dropped unrun: the Vec's and String's buffers are freed (ASan/valgrind check the leak).
    let text = String::from("never printed");
    let numbers = vec![1u8; 4096];
    drop(InlineTask::new(move || panic!("{text} {}", numbers.len())));
}

#[test]
fn boxed_capture_as_one_word_is_inline() {
    // A Box is one pointer: the closure is inline, and it owns the Box's allocation.
    let value = Box::new(123u64);
    let seen = counter();
    let s = Arc::clone(&seen);
    let both = Box::new((value, s));
    let task = InlineTask::new(move || {
        assert_eq!(*both.0, 123);
        both.1.fetch_add(1, Ordering::SeqCst);
    });
    assert!(task.is_inline());
    task.run();
    assert_eq!(load(&seen), 1);
    assert_eq!(Arc::strong_count(&seen), 1);
}

#[test]
fn many_tasks_in_a_vec() {
    // Like a slot arena: many tasks moved around by a growing Vec, run or dropped in any order.
    let runs = counter();
    let mut tasks: Vec<Option<InlineTask>> = Vec::new();
    for i in 0..1000usize {
        let r = Arc::clone(&runs);
        tasks.push(Some(if i % 3 == 0 {
            let pad = [i as u64; 2];
            InlineTask::new(move || {
                r.fetch_add(1 + pad[0] as usize - i, Ordering::SeqCst);
            })
        } else {
            InlineTask::new(move || {
                r.fetch_add(1, Ordering::SeqCst);
            })
        }));
    }
    for (i, slot) in tasks.iter_mut().enumerate() {
        if i % 2 == 0 {
            slot.take().unwrap().run();
        }
    }
    assert_eq!(load(&runs), 500);
    drop(tasks);
    assert_eq!(load(&runs), 500, "dropped tasks never ran");
    assert_eq!(Arc::strong_count(&runs), 1);
}

/// A prefetch leaves every kind of task as it was: each runs once with the bytes it captured.
#[test]
fn a_prefetched_task_runs_once_with_its_captures() {
    let ran = counter();
    let words = [7u64, 11, 13, 17, 19, 23, 29, 31];
    let tasks: Vec<(InlineTask, u64)> = vec![
        (
            InlineTask::new({
                let ran = ran.clone();
                move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                }
            }),
            0,
        ),
        (
            InlineTask::new({
                let ran = ran.clone();
                move || {
                    ran.fetch_add(words.iter().sum::<u64>() as usize, Ordering::SeqCst);
                }
            }),
            150,
        ),
        (
            InlineTask::new({
                let ran = ran.clone();
                let big = [5u64; 600];
                move || {
                    ran.fetch_add(big.iter().sum::<u64>() as usize, Ordering::SeqCst);
                }
            }),
            3_000,
        ),
    ];
    assert!(matches!(tasks[1].0.storage(), Storage::Block(_)), "64 bytes of words and an Arc: a block");
    assert_eq!(tasks[2].0.storage(), Storage::Boxed);
    let mut expected = 0;
    for (task, adds) in tasks {
        task.prefetch();
        task.prefetch();
        task.run();
        expected += if adds == 0 { 1 } else { adds as usize };
        assert_eq!(load(&ran), expected);
    }
}
