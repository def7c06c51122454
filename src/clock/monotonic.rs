//! The system clock read directly: `clock_gettime(CLOCK_MONOTONIC)`, the clock `std::time::Instant`
//! reads on Linux and Android, in whole nanoseconds.
//!
//! Every schedule on a system clock reads the clock. `origin.elapsed()` is `Instant::now()` and an
//! `Instant` subtraction, a normalised `Duration` (seconds and nanoseconds, checked) turned back
//! into nanoseconds: about 89 instructions (callgrind, `bench/benches/queue_spec.rs` Q1), against
//! about 20 for the same reading as one number of nanoseconds minus the timer's origin.
//!
//! **The same readings as `Instant`.** A system clock's readings are `Instant`s (`Timer::now()` is
//! `Instant::now()`), so the direct reading must count from exactly the origin `Instant`'s moment:
//! [`origin`] takes the `Instant` between two direct readings and finds the `CLOCK_MONOTONIC` value
//! it holds from its `Debug` form (`Instant { tv_sec: …, tv_nsec: … }` on Linux and Android, the
//! only view std gives of it), accepted only if it falls between those two readings. A reading is
//! then `now - raw_origin`, the very number `origin.elapsed()` gives, in a fifth of the
//! instructions. When the value cannot be told (another `Debug` form, or a value outside the
//! bracket), the clock keeps reading `origin.elapsed()`. std's `Instant` reads `CLOCK_MONOTONIC`
//! on these targets; the bracket would not tell `CLOCK_BOOTTIME` from it on a host never
//! suspended, so a std that changed clocks would show here as readings that fall behind
//! `Instant`'s after a suspend (late firings, never early ones).
//!
//! A module with `unsafe` code (docs/design.md, "Unsafe code"): one call, with a pointer to a local
//! `timespec` it writes.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::time::Instant;

/// A system clock's origin: `Instant::now()`, and the `CLOCK_MONOTONIC` value it holds when that
/// can be told exactly (see the module docs).
pub(crate) fn origin() -> (Instant, Option<u64>) {
    let before = monotonic_nanos();
    let origin = Instant::now();
    let after = monotonic_nanos();
    let raw = nanos_of_debug(&format!("{origin:?}")).filter(|raw| (before..=after).contains(raw));
    (origin, raw)
}

/// The nanoseconds an `Instant`'s `Debug` form names (`Instant { tv_sec: 12, tv_nsec: 34 }`).
fn nanos_of_debug(text: &str) -> Option<u64> {
    let field = |name: &str| -> Option<u64> {
        let rest = text[text.find(name)? + name.len()..].trim_start();
        let end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        rest[..end].parse().ok()
    };
    let (secs, nanos) = (field("tv_sec:")?, field("tv_nsec:")?);
    if nanos >= 1_000_000_000 {
        return None;
    }
    secs.checked_mul(1_000_000_000)?.checked_add(nanos)
}

/// Nanoseconds on `CLOCK_MONOTONIC` (since an unspecified start, typically the boot).
#[inline]
pub(crate) fn monotonic_nanos() -> u64 {
    // Zeroed rather than a struct literal: on some 32-bit targets `timespec` has a private padding
    // field.
    let mut now = std::mem::MaybeUninit::<libc::timespec>::zeroed();
    // SAFETY: `now` is a live, writable `timespec` for the call's duration, the only memory the
    // call writes; `CLOCK_MONOTONIC` is a valid clock id on every Linux and Android kernel, so the
    // call does not fail (if it did, `now` would stay zeroed, which saturates readings at zero).
    let result = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, now.as_mut_ptr()) };
    debug_assert_eq!(result, 0, "clock_gettime(CLOCK_MONOTONIC) failed");
    // SAFETY: all-zero bytes are a valid `timespec` (integers only), and the call wrote a valid
    // one over them.
    let now = unsafe { now.assume_init() };
    // Both fields are non-negative on CLOCK_MONOTONIC.
    (now.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(now.tv_nsec as u64)
}

#[cfg(all(test, not(delaywheel_loom)))]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn readings_from_the_origin_are_the_instants() {
        let (origin, raw_origin) = origin();
        let raw_origin = raw_origin.expect("std's Instant is CLOCK_MONOTONIC, shown as tv_sec and tv_nsec");
        for _ in 0..1_000 {
            let before = Instant::now();
            let reading = origin + Duration::from_nanos(monotonic_nanos() - raw_origin);
            let after = Instant::now();
            assert!(before <= reading && reading <= after, "{before:?} {reading:?} {after:?}");
        }
    }

    #[test]
    fn a_debug_form_it_cannot_read_names_nothing() {
        assert_eq!(nanos_of_debug("Instant { tv_sec: 12, tv_nsec: 34 }"), Some(12_000_000_034));
        assert_eq!(nanos_of_debug("Instant { tv_sec: 12, tv_nsec: 1000000000 }"), None);
        assert_eq!(nanos_of_debug("Instant { t: 12 }"), None);
        assert_eq!(nanos_of_debug("Instant { tv_sec: -1, tv_nsec: 0 }"), None);
        assert_eq!(nanos_of_debug("Instant { tv_sec: 99999999999999999999, tv_nsec: 0 }"), None);
    }
}
