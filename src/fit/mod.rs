//! Fitting models to measured kernel times: reading measurement files (`measurements`).
pub mod measurements;
