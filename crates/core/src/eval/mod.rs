//! Judging models against measurements: accuracy metrics (`metrics`), the evaluation of models
//! on measured rows (`evaluate`). Measurement suites (the accuracy harness that compiles,
//! emulates and predicts listed launches) are the top-level `suite` module, above `api`. Tables,
//! charts and HTML pages are drawn by the command line (`kerneltime-cli`), not here.
pub mod evaluate;
pub mod metrics;
