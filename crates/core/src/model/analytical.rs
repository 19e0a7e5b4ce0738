//! What the three analytical models (mwp-cwp, hong-kim, wu) share in the registry: their
//! calibration parameters, and turning their cycles into time with the device's clock, or without
//! a device with the inputs file's own clock (said in the notes).
//!
//! The models' equations are in `mwp_cwp`, `hong_kim` and `wu`; their inputs in
//! `workload::analytical`.

use crate::device::Device;
use crate::error::{Error, Result};
use crate::model::registry::ParamSpec;

/// The free parameters of the analytical models: a DRAM latency scale, the departure delay, an
/// arithmetic latency scale and a launch overhead added to the time.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "dram_latency_scale",
        lower: 0.1,
        upper: 10.0,
        start: 1.0,
    },
    ParamSpec {
        name: "departure_delay_cycles",
        lower: 0.5,
        upper: 200.0,
        start: 4.0,
    },
    ParamSpec {
        name: "arithmetic_latency_scale",
        lower: 0.1,
        upper: 10.0,
        start: 1.0,
    },
    ParamSpec {
        name: "launch_overhead_us",
        lower: 0.0,
        upper: 100.0,
        start: 3.0,
    },
];

/// The calibrated launch overhead (`params[3]`), 0 uncalibrated.
pub fn launch_us(params: Option<&[f64]>) -> f64 {
    params.map_or(0.0, |q| q.get(3).copied().unwrap_or(0.0))
}

/// Cycles to microseconds: the device's clock when there is a device, else the inputs file's.
pub fn cycles_to_us(cycles: f64, device: Option<&Device>, file_clock_mhz: f64) -> f64 {
    match device {
        Some(d) => d.cycles_to_us(cycles),
        None => cycles / file_clock_mhz,
    }
}

/// The note on which clock turns cycles into time, when it is worth saying: no device (the
/// file's clock), or a device whose clock differs from the file's.
pub fn clock_note(device: Option<&Device>, file_clock_mhz: f64, field: &str) -> Option<String> {
    match device {
        Some(d) if (d.core_clock_mhz - file_clock_mhz).abs() > 1e-9 * d.core_clock_mhz => Some(format!(
            "the inputs file's {field} ({file_clock_mhz} MHz) differs from {}'s core clock ({} MHz); time uses the device clock",
            d.name, d.core_clock_mhz
        )),
        Some(_) => None,
        None => Some(format!(
            "no device given: cycles become time with the inputs file's {field} ({file_clock_mhz} MHz)"
        )),
    }
}

/// The device's name for a prediction without a device.
pub const NO_DEVICE: &str = "none (clock from the inputs file)";

/// The device name a prediction carries.
pub fn device_name(device: Option<&Device>) -> &str {
    device.map_or(NO_DEVICE, |d| d.name.as_str())
}

/// The device, or an error saying the model needs one for this kind of input.
pub fn need_device<'a>(device: Option<&'a Device>, what: &str) -> Result<&'a Device> {
    device.ok_or_else(|| Error::missing("device", format!("{what} needs a device to run on")))
}
