//! The terminal side of `kerneltime::progress`: a progress bar with an ETA on stderr when stderr
//! is a terminal, hidden otherwise; notes are printed as `note: ...` lines either way.

use std::io::IsTerminal;
use std::sync::Mutex;

use kerneltime::progress::Progress;

/// An indicatif bar behind the library's `Progress` callback.
pub struct Bar {
    bar: Mutex<indicatif::ProgressBar>,
    visible: bool,
}

impl Bar {
    /// A bar shown only when stderr is a terminal.
    pub fn stderr() -> Self {
        Self {
            bar: Mutex::new(indicatif::ProgressBar::hidden()),
            visible: std::io::stderr().is_terminal(),
        }
    }
}

impl Progress for Bar {
    fn start(&self, what: &str, total: u64) {
        let b = if self.visible {
            let b = indicatif::ProgressBar::new(total);
            let template = format!("{{bar:40}} {{pos}}/{{len}} {what}, {{per_sec}}, eta {{eta}}");
            if let Ok(style) = indicatif::ProgressStyle::with_template(&template) {
                b.set_style(style);
            }
            b
        } else {
            indicatif::ProgressBar::hidden()
        };
        if let Ok(mut slot) = self.bar.lock() {
            *slot = b;
        }
    }
    fn update(&self, done: u64) {
        if let Ok(b) = self.bar.lock() {
            b.set_position(done);
        }
    }
    fn advance(&self, n: u64) {
        if let Ok(b) = self.bar.lock() {
            b.inc(n);
        }
    }
    fn note(&self, message: &str) {
        if let Ok(b) = self.bar.lock() {
            b.suspend(|| eprintln!("note: {message}"));
        }
    }
    fn finish(&self) {
        if let Ok(b) = self.bar.lock() {
            b.finish_and_clear();
        }
    }
}
