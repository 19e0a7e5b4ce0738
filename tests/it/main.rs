//! The one integration-test binary: every test file under `tests/it/` is a module of it, so the
//! suite links once. Tests that run the `kerneltime` binary use `common`; the rest call the
//! library (`kerneltime`) directly.

mod accuracy_amaris;
mod analytical;
mod architecture;
mod catalogue;
mod cli_analyze;
mod cli_endless_inputs;
mod cli_evaluate;
mod cli_lslag;
mod cli_measurements;
mod cli_occupancy;
mod cli_predict_source;
mod cli_trace;
mod cli_trace_calibration;
mod common;
mod device_import;
mod emulate;
mod explore;
mod explore_calibration;
mod fit_properties;
mod fit_reference;
mod lslag_fit;
mod measurement_readers;
mod measurements_amaris;
mod memory_effects;
mod occupancy_oracle;
mod ptx_drift;
mod ptx_fixtures;
mod ptx_resources;
mod ptx_robust;
mod ptx_shapes;
mod puchala_cli;
mod puchala_common;
mod puchala_reproduce;
mod readme;
mod suite;
mod tune;
