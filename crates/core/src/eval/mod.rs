//! Judging models against measurements: accuracy metrics (`metrics`) and the evaluation of models
//! on measured rows (`evaluate`). Its tables, charts and HTML pages are drawn by the command
//! line (`kerneltime-cli`'s `report`), not here.
pub mod evaluate;
pub mod metrics;
