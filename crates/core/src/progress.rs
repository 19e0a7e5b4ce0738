//! How long library calls (sweeps, calibrations, evaluations, tuning) report what they are doing.
//!
//! The library never prints and never draws a progress bar: it calls a [`Progress`] the caller
//! passes in. The command line implements it with a terminal progress bar; a library user may
//! ignore it ([`Quiet`]) or forward it to their own logging. A call reports `start` once per
//! stage, then `update` with the units done so far, any `note` a user should read, and `finish`.

/// Receives progress reports from long-running library calls. Every method has a default that
/// does nothing, so an implementation overrides only what it shows.
pub trait Progress: Sync {
    /// A stage of `total` units starts (`what` names the units, e.g. "points", "fits").
    fn start(&self, what: &str, total: u64) {
        let _ = (what, total);
    }
    /// `done` units of the current stage are finished (a running total, not an increment).
    fn update(&self, done: u64) {
        let _ = done;
    }
    /// `n` more units are finished (for work done in parallel, where a running total is awkward).
    fn advance(&self, n: u64) {
        let _ = n;
    }
    /// A remark the user should see, such as "no checkpoint to resume; starting again".
    fn note(&self, message: &str) {
        let _ = message;
    }
    /// The current stage is over.
    fn finish(&self) {}
}

/// Reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Quiet;

impl Progress for Quiet {}

/// Collects notes (and the last position) in memory: for tests and for callers that show them
/// later.
#[derive(Debug, Default)]
pub struct Recorder {
    pub notes: std::sync::Mutex<Vec<String>>,
    pub done: std::sync::atomic::AtomicU64,
}

impl Progress for Recorder {
    fn update(&self, done: u64) {
        self.done.store(done, std::sync::atomic::Ordering::Relaxed);
    }
    fn advance(&self, n: u64) {
        self.done.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }
    fn note(&self, message: &str) {
        if let Ok(mut n) = self.notes.lock() {
            n.push(message.to_string());
        }
    }
}
