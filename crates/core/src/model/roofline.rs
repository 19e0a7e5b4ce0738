//! The roofline baseline (Williams, Waterman and Patterson 2009): a kernel takes as long as the
//! slower of its arithmetic at the device's FP32 peak and its DRAM traffic at the device's
//! memory bandwidth, plus the launch overhead.
//!
//! ```text
//! peak FP32 rate   = sm_count * cores_per_sm * 2 FLOP (one FMA) per cycle, at core_clock_mhz
//! compute_us       = cycles_to_us(flops / (sm_count * cores_per_sm * 2))
//! memory_us        = dram_bytes / (memory_bandwidth_gbs * 1e3)      (1 GB/s = 1e3 B/us)
//! time_us          = max(compute_us, memory_us) + launch_us
//! arithmetic intensity = flops / dram_bytes;  ridge point = peak FLOP/s / peak B/s
//! ```
//!
//! The launch overhead is the caller's, or the per-architecture value of the project's latency
//! table (`data/latencies/arch_defaults.csv`, column `launch_overhead_us`) where that table gives a
//! measured number with a source, or else [`DEFAULT_LAUNCH_OVERHEAD_US`]; the one used is named in
//! the prediction's notes. The model knows nothing about occupancy, caches, latency or
//! instruction mix: it is a lower-bound style baseline for the other models to beat.

use crate::model::analytical;
use crate::model::registry::{Inputs, Model, ModelId, ParamSpec, Source};

use crate::device::{ComputeCapability, Device};
use crate::error::Result;
use crate::model::Prediction;

/// Used when neither the caller nor the latency table gives a sourced launch overhead, µs.
/// It is the ~5 µs the latency table writes (without a source) for pre-Volta and Turing parts,
/// which matches the only pre-Ampere measurement it has (Accel-Sim's 7258-cycle TITAN V run).
pub const DEFAULT_LAUNCH_OVERHEAD_US: f64 = 5.0;

/// Launch overheads with a source, from `data/latencies/arch_defaults.csv` (`launch_overhead_us`)
/// and the measurements it cites in `arch_latencies.csv`.
pub const LAUNCH_OVERHEAD_US: &[(ComputeCapability, f64, &str)] = &[
    (
        ComputeCapability::new(7, 0),
        5.0,
        "arch_defaults.csv (Volta): Accel-Sim microbenchmark, TITAN V, 7258 cycles",
    ),
    (
        ComputeCapability::new(8, 0),
        2.6,
        "arch_defaults.csv (Ampere 8.0): te42kyfo/gpu-benches gpu-small-kernels, A100 80GB back-to-back",
    ),
    (
        ComputeCapability::new(8, 6),
        2.0,
        "arch_defaults.csv (Ampere 8.6): te42kyfo/gpu-benches gpu-small-kernels, A40 back-to-back",
    ),
    (
        ComputeCapability::new(8, 9),
        1.6,
        "arch_defaults.csv (Ada 8.9): te42kyfo/gpu-benches gpu-small-kernels, L40 back-to-back",
    ),
    (
        ComputeCapability::new(9, 0),
        2.4,
        "arch_defaults.csv (Hopper 9.0): te42kyfo/gpu-benches gpu-small-kernels, H200 back-to-back",
    ),
];

pub use crate::workload::analytical::RooflineInputs;

/// The launch overhead for a device and where it comes from.
pub fn default_launch_overhead(device: &Device) -> (f64, String) {
    match LAUNCH_OVERHEAD_US
        .iter()
        .find(|(cc, _, _)| *cc == device.compute_capability)
    {
        Some((_, us, src)) => (*us, (*src).to_string()),
        None => (
            DEFAULT_LAUNCH_OVERHEAD_US,
            format!(
                "DEFAULT_LAUNCH_OVERHEAD_US: the latency table has no sourced launch overhead for compute capability {}",
                device.compute_capability
            ),
        ),
    }
}

/// [`default_launch_overhead`]'s value alone (no allocation: fits call it for every row).
pub fn default_launch_overhead_us(device: &Device) -> f64 {
    LAUNCH_OVERHEAD_US
        .iter()
        .find(|(cc, _, _)| *cc == device.compute_capability)
        .map_or(DEFAULT_LAUNCH_OVERHEAD_US, |(_, us, _)| *us)
}

/// FP32 operations the whole device completes per core cycle (one FMA = 2 per core).
pub fn peak_fp32_flop_per_cycle(device: &Device) -> f64 {
    f64::from(device.sm_count) * f64::from(device.cores_per_sm) * 2.0
}

/// The roofline prediction.
pub fn predict(device: &Device, inputs: &RooflineInputs) -> Result<Prediction> {
    let flops = crate::error::non_negative("flops", inputs.flops)?;
    let bytes = crate::error::non_negative("dram_bytes", inputs.dram_bytes)?;
    let mut notes = Vec::new();
    let (launch_us, launch_source) = match inputs.launch_overhead_us {
        Some(us) => (
            crate::error::non_negative("launch_overhead_us", us)?,
            "given".to_string(),
        ),
        None => default_launch_overhead(device),
    };
    if inputs.launch_overhead_us.is_none() {
        notes.push(format!(
            "launch overhead {launch_us} us from {launch_source}"
        ));
    }
    notes.push(format!(
        "FP32 peak = {} SMs x {} cores x 2 FLOP at {} MHz (the device's core_clock_mhz)",
        device.sm_count, device.cores_per_sm, device.core_clock_mhz
    ));

    let flop_per_cycle = peak_fp32_flop_per_cycle(device);
    let compute_cycles = flops / flop_per_cycle;
    let compute_us = device.cycles_to_us(compute_cycles);
    let bytes_per_us = device.memory_bandwidth_gbs * 1e3;
    let memory_us = bytes / bytes_per_us;
    let bound = if compute_us >= memory_us {
        "compute"
    } else {
        "memory"
    };
    let time_us = compute_us.max(memory_us) + launch_us;
    // Peak FLOP per µs over peak bytes per µs.
    let ridge = flop_per_cycle * device.core_clock_mhz / bytes_per_us;
    let intensity = if bytes > 0.0 {
        serde_json::Value::from(flops / bytes)
    } else {
        serde_json::Value::Null
    };
    let mut p = Prediction::new(ModelId::Roofline, &device.name, time_us)
        .with("compute_us", compute_us)
        .with("memory_us", memory_us)
        .with("launch_us", launch_us)
        .with("bound", bound)
        .with("arithmetic_intensity_flop_per_byte", intensity)
        .with("ridge_point_flop_per_byte", ridge)
        .with("compute_cycles", compute_cycles)
        .with(
            "peak_fp32_gflops",
            flop_per_cycle * device.core_clock_mhz / 1e3,
        )
        .with("memory_bandwidth_gbs", device.memory_bandwidth_gbs)
        .with("flops", flops)
        .with("dram_bytes", bytes);
    p.notes = notes;
    Ok(p)
}

/// The roofline's free parameters, each a ratio to the device's own value so that a calibration
/// transfers to another GPU: compute and memory efficiency (fractions of the device's FP32 and
/// DRAM peaks) and a scale on the device's launch overhead ([`default_launch_overhead`]),
/// `t = max(compute / e_c, memory / e_m) + s_launch * t_launch(device)`.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "compute_efficiency",
        lower: 0.001,
        upper: 1.0,
        start: 0.5,
    },
    ParamSpec {
        name: "memory_efficiency",
        lower: 0.001,
        upper: 1.0,
        start: 0.5,
    },
    ParamSpec {
        name: "launch_overhead_scale",
        lower: 0.0,
        upper: 30.0,
        start: 1.0,
    },
];

/// `max(compute / e_c, memory / e_m) + launch_us`, µs: the roofline's time at given efficiencies
/// and launch overhead (computed directly: this runs millions of times in fits and sweeps).
pub fn bound_us(device: &Device, i: &RooflineInputs, e_c: f64, e_m: f64, launch_us: f64) -> f64 {
    let compute_us = device.cycles_to_us(i.flops / peak_fp32_flop_per_cycle(device));
    let memory_us = i.dram_bytes / (device.memory_bandwidth_gbs * 1e3);
    (compute_us / e_c).max(memory_us / e_m) + launch_us
}

/// The calibrated roofline (parameters in the order of [`PARAMS`]), µs.
pub fn calibrated_us(device: &Device, i: &RooflineInputs, q: &[f64]) -> f64 {
    bound_us(
        device,
        i,
        q[0],
        q[1],
        q[2] * default_launch_overhead_us(device),
    )
}

/// The roofline's full prediction, uncalibrated ([`predict`]) or with calibrated parameters (the
/// time of [`calibrated_us`], the uncalibrated breakdown).
pub fn prediction(
    device: &Device,
    i: &RooflineInputs,
    params: Option<&[f64]>,
) -> Result<Prediction> {
    let base = predict(device, i)?;
    let Some(q) = params else {
        return Ok(base);
    };
    let mut p = Prediction::new(ModelId::Roofline, &device.name, calibrated_us(device, i, q));
    p.breakdown = base.breakdown;
    Ok(p)
}

/// The roofline in the model registry.
pub struct Roofline;

impl Model for Roofline {
    fn id(&self) -> ModelId {
        ModelId::Roofline
    }
    fn summary(&self) -> &'static str {
        "baseline: max(compute, memory) + launch overhead"
    }
    fn takes(&self) -> &'static str {
        "flops and DRAM bytes (an inputs file with `flops` and `dram_bytes`), profiler counters, or a PTX launch (its emulated fp32 work and compulsory DRAM bytes)"
    }
    fn params(&self) -> &'static [ParamSpec] {
        PARAMS
    }
    fn inputs(
        &self,
        source: &Source<'_>,
        _device: Option<&Device>,
    ) -> Result<(Inputs, Vec<String>)> {
        match source {
            Source::File { text, origin } => Ok((
                Inputs::Roofline(RooflineInputs::from_toml(text, origin)?),
                Vec::new(),
            )),
            Source::Counters(c) => Ok((Inputs::Roofline(c.roofline), Vec::new())),
            Source::Ptx(f) => {
                let w = crate::model::bounds::launch_work(&f.emulation, &f.latencies.values);
                let i = RooflineInputs {
                    flops: 2.0 * w.fp32_lane_ops,
                    dram_bytes: w.dram_bytes,
                    launch_overhead_us: None,
                };
                let note = format!(
                    "roofline from the emulation: {:.4e} flops (each fp32 lane operation counted as an FMA, 2 flops, so the compute side is the fp32 units' time; fp64, integer and special-function work is not on it) and {:.4e} DRAM bytes (each distinct sector the sampled blocks read, and each they write, once)",
                    i.flops, i.dram_bytes
                );
                Ok((Inputs::Roofline(i), vec![note]))
            }
            _ => Err(self.cannot_read(source)),
        }
    }
    fn predict(
        &self,
        device: Option<&Device>,
        inputs: &Inputs,
        params: Option<&[f64]>,
    ) -> Result<Prediction> {
        let Inputs::Roofline(i) = inputs else {
            return Err(self.wrong_inputs(inputs));
        };
        let d = analytical::need_device(device, "the roofline")?;
        prediction(d, i, params)
    }
    fn time_us(
        &self,
        device: Option<&Device>,
        inputs: &Inputs,
        params: Option<&[f64]>,
    ) -> Result<f64> {
        let Inputs::Roofline(i) = inputs else {
            return Err(self.wrong_inputs(inputs));
        };
        let d = analytical::need_device(device, "the roofline")?;
        match params {
            Some(q) => Ok(calibrated_us(d, i, q)),
            None => Ok(predict(d, i)?.time_us),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(cc: &str) -> Device {
        let text = format!(
            r#"name = "Test GPU"
architecture = "Test"
compute_capability = "{cc}"
sm_count = 10
cores_per_sm = 64
base_clock_mhz = 1000
boost_clock_mhz = 1000
memory_bandwidth_gbs = 100
l2_cache_bytes = 1048576
l1_shared_per_sm_bytes = 65536
source = "made up for a test"
"#
        );
        Device::from_toml(&text, "test").unwrap()
    }

    #[test]
    fn compute_bound_kernel_by_hand() {
        // Peak: 10 SMs * 64 cores * 2 FLOP = 1280 FLOP/cycle; at 1000 MHz = 1.28e6 FLOP/us.
        // 1.28e9 FLOP -> 1000 us. 100 GB/s = 1e5 B/us; 5e7 B -> 500 us. Launch given 5 us.
        let d = device("8.0");
        let p = predict(
            &d,
            &RooflineInputs {
                flops: 1.28e9,
                dram_bytes: 5e7,
                launch_overhead_us: Some(5.0),
            },
        )
        .unwrap();
        assert!((p.time_us - 1005.0).abs() < 1e-9);
        let b = &p.breakdown;
        assert!((b["compute_us"].as_f64().unwrap() - 1000.0).abs() < 1e-9);
        assert!((b["memory_us"].as_f64().unwrap() - 500.0).abs() < 1e-9);
        assert_eq!(b["bound"], "compute");
        // AI = 1.28e9 / 5e7 = 25.6 FLOP/B; ridge = 1.28e12 FLOP/s / 1e11 B/s = 12.8 FLOP/B.
        assert!((b["arithmetic_intensity_flop_per_byte"].as_f64().unwrap() - 25.6).abs() < 1e-9);
        assert!((b["ridge_point_flop_per_byte"].as_f64().unwrap() - 12.8).abs() < 1e-9);
        assert!((b["peak_fp32_gflops"].as_f64().unwrap() - 1280.0).abs() < 1e-9);
    }

    #[test]
    fn memory_bound_kernel_uses_the_table_launch_overhead() {
        // 1.28e6 FLOP -> 1 us; 1e7 B at 1e5 B/us -> 100 us; CC 8.0 table: 2.6 us.
        let d = device("8.0");
        let p = predict(
            &d,
            &RooflineInputs {
                flops: 1.28e6,
                dram_bytes: 1e7,
                launch_overhead_us: None,
            },
        )
        .unwrap();
        assert!((p.time_us - 102.6).abs() < 1e-9);
        assert_eq!(p.breakdown["bound"], "memory");
        assert!(p
            .notes
            .iter()
            .any(|n| n.contains("2.6 us") && n.contains("A100")));
    }

    #[test]
    fn unsourced_architecture_gets_the_named_default() {
        let d = device("7.5");
        let p = predict(
            &d,
            &RooflineInputs {
                flops: 0.0,
                dram_bytes: 0.0,
                launch_overhead_us: None,
            },
        )
        .unwrap();
        assert_eq!(p.time_us, DEFAULT_LAUNCH_OVERHEAD_US);
        assert!(p
            .notes
            .iter()
            .any(|n| n.contains("DEFAULT_LAUNCH_OVERHEAD_US")));
        assert!(p.breakdown["arithmetic_intensity_flop_per_byte"].is_null());
    }

    #[test]
    fn bad_inputs_are_errors_naming_the_field() {
        let d = device("8.6");
        let bad = |f: f64, b: f64, l: Option<f64>| {
            predict(
                &d,
                &RooflineInputs {
                    flops: f,
                    dram_bytes: b,
                    launch_overhead_us: l,
                },
            )
            .unwrap_err()
            .to_string()
        };
        assert!(bad(-1.0, 1.0, None).contains("flops"));
        assert!(bad(1.0, f64::NAN, None).contains("dram_bytes"));
        assert!(bad(1.0, 1.0, Some(-2.0)).contains("launch_overhead_us"));
    }

    #[test]
    fn inputs_toml_needs_flops_and_bytes_and_ignores_other_fields() {
        let i = RooflineInputs::from_toml("flops = 2e6\ndram_bytes = 4e3\nn_warps = 8\n", "k.toml")
            .unwrap();
        assert_eq!(
            (i.flops, i.dram_bytes, i.launch_overhead_us),
            (2e6, 4e3, None)
        );
        let e = RooflineInputs::from_toml("flops = 1.0\n", "k.toml").unwrap_err();
        assert!(e.to_string().contains("dram_bytes") && e.is_usage());
        assert!(
            RooflineInputs::from_toml("flops = \"many\"\ndram_bytes = 1\n", "k.toml")
                .unwrap_err()
                .to_string()
                .contains("k.toml")
        );
    }

    #[test]
    fn launch_table_matches_the_shared_latency_table() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/data/latencies/arch_defaults.csv"
        );
        let Ok(text) = std::fs::read_to_string(path) else {
            eprintln!("skipped: {path} is absent");
            return;
        };
        let mut rdr = csv::Reader::from_reader(text.as_bytes());
        let headers = rdr.headers().unwrap().clone();
        let cc_col = headers
            .iter()
            .position(|h| h == "compute_capability")
            .unwrap();
        let launch_col = headers
            .iter()
            .position(|h| h == "launch_overhead_us")
            .unwrap();
        let mut sourced = 0;
        for rec in rdr.records() {
            let rec = rec.unwrap();
            let cell = rec[launch_col].trim();
            // Sourced values start with a number; `~5 (no source)` and `~2.5*` do not.
            let lead: String = cell
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let Ok(value) = lead.parse::<f64>() else {
                continue;
            };
            let cc = ComputeCapability::parse(&rec[cc_col]).unwrap();
            let ours = LAUNCH_OVERHEAD_US.iter().find(|(c, _, _)| *c == cc);
            assert_eq!(ours.map(|o| o.1), Some(value), "compute capability {cc}");
            sourced += 1;
        }
        assert_eq!(sourced, LAUNCH_OVERHEAD_US.len());
    }
}
