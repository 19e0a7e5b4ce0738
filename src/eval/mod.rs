//! Judging models against measurements: accuracy metrics (`metrics`).
pub mod metrics;
