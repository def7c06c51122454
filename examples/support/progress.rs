//! A one-line progress display on stderr for the long-running examples.

use std::io::Write;
use std::time::Instant;

/// Redrawn in place (`\r`) on each [`Progress::show`]; hidden when asked or when stderr is not a
/// terminal, so piped output stays clean.
pub struct Progress {
    total: u64,
    start: Instant,
    visible: bool,
}

impl Progress {
    /// A display for `total` items, drawn unless `hidden`.
    pub fn new(total: u64, hidden: bool) -> Self {
        use std::io::IsTerminal;
        Progress { total, start: Instant::now(), visible: !hidden && std::io::stderr().is_terminal() }
    }

    /// Redraws the line: elapsed time, a bar, `done` of the total, and `message`.
    pub fn show(&self, done: u64, message: &str) {
        if !self.visible {
            return;
        }
        const WIDTH: u64 = 40;
        let filled = (done.min(self.total) * WIDTH).checked_div(self.total).unwrap_or(WIDTH) as usize;
        let secs = self.start.elapsed().as_secs();
        let bar = format!("{}{}", "#".repeat(filled), "-".repeat(WIDTH as usize - filled));
        let line =
            format!("[{:02}:{:02}] {bar} {done}/{} requests {message}", secs / 60, secs % 60, self.total);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
    }

    /// Clears the line.
    pub fn finish(&self) {
        if self.visible {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
        }
    }
}
