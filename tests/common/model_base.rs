// What the reference models share, included (`include!`) at the top of each: the timer's model
// `model.rs` and the delay queue's `queue_model.rs` (both also built into the fuzz targets, which
// include them by path).

// The timer's rounding of deadlines and its refusals, as the models expect them.
#[path = "model_deadlines.rs"]
mod deadlines;

// The panics the models provoke, and how they catch them.
#[path = "model_panics.rs"]
mod panics;

// Closures and values of many sizes that count their drops and check their bytes.
#[path = "sized_task.rs"]
pub mod sized;

/// Fails the step (returns the message as its `Err`) unless `$cond` holds.
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}
