//! Diagnostics of the PTX frontend: what went wrong (or looked odd) and where, by line and column.
//!
//! Parsing never stops at the first problem; every pass appends here instead. This module does
//! not decide what is fatal: callers look at [`Severity`]. The number of diagnostics kept is
//! capped so that garbage input cannot grow the list without bound.

use serde::Serialize;

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Informational (e.g. an unknown but harmless directive).
    Note,
    /// The input was understood, but something was skipped or guessed.
    Warning,
    /// Part of the input could not be understood and was skipped.
    Error,
}

/// One diagnostic with a 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub severity: Severity,
    pub line: u32,
    pub col: u32,
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sev = match self.severity {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        write!(f, "{}:{}: {sev}: {}", self.line, self.col, self.message)
    }
}

/// At most this many diagnostics are kept; one more says how many were dropped.
pub const MAX_DIAGNOSTICS: usize = 1000;

/// A capped list of diagnostics.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Diagnostics {
    pub items: Vec<Diagnostic>,
    /// How many diagnostics were dropped after the cap was reached.
    pub dropped: u64,
}

impl Diagnostics {
    /// Adds a diagnostic unless the cap is reached (then it is only counted).
    pub fn push(&mut self, severity: Severity, line: u32, col: u32, message: impl Into<String>) {
        if self.items.len() < MAX_DIAGNOSTICS {
            self.items.push(Diagnostic {
                severity,
                line,
                col,
                message: message.into(),
            });
        } else {
            self.dropped += 1;
        }
    }

    /// Whether any error-level diagnostic was recorded (dropped ones were counted as errors
    /// only if they could have been; we treat any drop as a sign of garbage input).
    pub fn has_errors(&self) -> bool {
        self.dropped > 0 || self.items.iter().any(|d| d.severity == Severity::Error)
    }

    /// Number of error-level diagnostics kept.
    pub fn error_count(&self) -> usize {
        self.items
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count()
    }
}
