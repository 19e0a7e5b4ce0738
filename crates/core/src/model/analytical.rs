//! What the three analytical models (mwp-cwp, hong-kim, wu) share in the registry: their
//! calibration parameters, and turning their cycles into time with the device's clock, or without
//! a device with the inputs file's own clock (said in the notes).
//!
//! The models' equations are in `mwp_cwp`, `hong_kim` and `wu`; their inputs in
//! `workload::analytical`.

use crate::device::Device;
use crate::error::{Error, Result};
use crate::model::registry::ParamSpec;

/// The free parameters of the analytical models, each a ratio to the device's own value so that
/// a calibration transfers to another GPU through that GPU's values: a scale on the DRAM latency,
/// a scale on the departure delay (both from the inputs: the device's latency table on the
/// counters and PTX paths), a scale on the arithmetic latency (wu: on the compute cycles), and a
/// scale on the device's launch overhead ([`launch_overhead`]) added to the time.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "dram_latency_scale",
        lower: 0.1,
        upper: 10.0,
        start: 1.0,
        absent: None,
    },
    ParamSpec {
        name: "departure_delay_scale",
        lower: 0.1,
        upper: 50.0,
        start: 1.0,
        absent: None,
    },
    ParamSpec {
        name: "arithmetic_latency_scale",
        lower: 0.1,
        upper: 10.0,
        start: 1.0,
        absent: None,
    },
    ParamSpec {
        name: "launch_overhead_scale",
        lower: 0.0,
        upper: 30.0,
        start: 1.0,
        absent: None,
    },
];

/// The launch overhead without a device, or for a device whose compute capability the latency
/// table lacks, µs (every compute capability of `data/compute_capabilities.toml` has a row, so
/// only a device built in code can lack one). About 5 µs is what CUDA events see around one lone
/// launch, host submission included (the Accel-Sim `kernel_lat` TITAN V run, 7258 cycles = 5.0
/// µs, that `data/latencies.toml` cites): an upper estimate of the per-launch time of the
/// table's back-to-back measurements (1.6-3.0 µs). Every use says so in the notes.
pub const NO_TABLE_LAUNCH_OVERHEAD_US: f64 = 5.0;

/// What one launch adds to a kernel's time on `device`, µs: the device file's measured
/// `launch_overhead_us` (`[measured]`), else its `[latencies]` override, else the
/// per-architecture `launch_overhead_us` of `data/latencies.toml`
/// (`docs/sources/arch-constants.md`), else [`NO_TABLE_LAUNCH_OVERHEAD_US`]. Fast: fits call it
/// for every row.
pub fn launch_overhead_us(device: Option<&Device>) -> f64 {
    let Some(d) = device else {
        return NO_TABLE_LAUNCH_OVERHEAD_US;
    };
    if let Some(v) = d.measured.as_ref().and_then(|m| m.launch_overhead_us) {
        return v;
    }
    crate::device::latencies::launch_overhead_us(d).unwrap_or(NO_TABLE_LAUNCH_OVERHEAD_US)
}

/// [`launch_overhead_us`] with where the value comes from, for notes.
pub fn launch_overhead(device: Option<&Device>) -> (f64, String) {
    let us = launch_overhead_us(device);
    let Some(d) = device else {
        return (us, "no device: NO_TABLE_LAUNCH_OVERHEAD_US".into());
    };
    if let Some(m) = d.measured_value("launch_overhead_us") {
        return (us, format!("{}'s measured value ({})", d.name, m.source));
    }
    match crate::device::latencies::for_device(d) {
        Ok(r) => {
            let src = r
                .sources
                .get("launch_overhead_us")
                .cloned()
                .unwrap_or_default();
            (
                us,
                format!("the latency table (data/latencies.toml, {}): {src}", r.architecture),
            )
        }
        Err(_) => (
            us,
            format!(
                "NO_TABLE_LAUNCH_OVERHEAD_US: the latency table has no row for compute capability {}",
                d.compute_capability
            ),
        ),
    }
}

/// The calibrated launch overhead, µs: `params[3]` times the device's [`launch_overhead_us`];
/// 0 uncalibrated.
pub fn launch_us(params: Option<&[f64]>, device: Option<&Device>) -> f64 {
    match params.and_then(|q| q.get(3)) {
        Some(scale) => scale * launch_overhead_us(device),
        None => 0.0,
    }
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
