//! Judging models against measurements: accuracy metrics (`metrics`), evaluation of models on
//! measured rows (`evaluate`) and its outputs: tables, JSON, CSV, SVG charts, HTML (`report`).
pub mod evaluate;
pub mod metrics;
pub mod report;
