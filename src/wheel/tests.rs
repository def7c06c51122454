//! The levels' unit tests.

use super::*;

#[test]
fn overflow_levels_are_created_lazily_once_and_reused() {
    let wheel = TimingWheel::new(3);
    assert_eq!(wheel.levels_in_use(), 0);
    let a = Arc::clone(wheel.bucket(0, 1).unwrap());
    assert_eq!(wheel.levels_in_use(), 1);
    let b = Arc::clone(wheel.bucket(2, 2).unwrap());
    assert_eq!(wheel.levels_in_use(), 2, "level 1 is not needed, so not created");
    assert!(Arc::ptr_eq(&a, wheel.bucket(0, 1).unwrap()));
    assert!(Arc::ptr_eq(&b, wheel.bucket(2, 2).unwrap()));
    assert_eq!(wheel.levels_in_use(), 2);
    assert_eq!(wheel.buckets().count(), 6);
    // Shutdown closes the levels never created: they can no longer be created.
    assert_eq!(wheel.close_levels().count(), 6);
    assert!(wheel.bucket(1, 0).is_none());
    assert!(wheel.bucket(2, 2).is_some());
    assert_eq!(wheel.levels_in_use(), 2);
}
