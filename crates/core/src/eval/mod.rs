//! Judging models against measurements: accuracy metrics (`metrics`), the evaluation of models
//! on measured rows (`evaluate`), and measurement suites (`suite`: the accuracy harness that
//! compiles, emulates and predicts listed launches, per dataset x device x model). Tables,
//! charts and HTML pages are drawn by the command line (`kerneltime-cli`), not here.
pub mod evaluate;
pub mod metrics;
pub mod suite;
