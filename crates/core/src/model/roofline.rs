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
//! The launch overhead is the caller's, or else the device's `launch_overhead_us` from the
//! project's one latency table as `device::latencies::for_device` resolves it
//! (`data/latencies.toml`'s row for the compute capability, with the device file's `[latencies]`
//! override; the same value the trace model and the lower bound add), or, for a device the table
//! has no row for, `analytical::NO_TABLE_LAUNCH_OVERHEAD_US`; the value and its source are named
//! in the prediction's notes. The model knows nothing about occupancy, caches, latency or
//! instruction mix: it is a lower-bound style baseline for the other models to beat.

use crate::model::analytical;
use crate::model::registry::{Inputs, Model, ModelId, ParamSpec, Source};

use crate::device::Device;
use crate::error::Result;
use crate::model::analytical::NO_TABLE_LAUNCH_OVERHEAD_US;
use crate::model::Prediction;

pub use crate::workload::analytical::RooflineInputs;

/// The launch overhead for a device and where it comes from: [`default_launch_overhead_us`] with
/// the source sentence of the resolved latency table (`device::latencies::for_device`), for the
/// notes.
pub fn default_launch_overhead(device: &Device) -> (f64, String) {
    let Some(us) = crate::device::latencies::launch_overhead_us(device) else {
        return (
            NO_TABLE_LAUNCH_OVERHEAD_US,
            format!(
                "NO_TABLE_LAUNCH_OVERHEAD_US (a fallback, about one lone launch with its host submission): data/latencies.toml has no row for compute capability {}",
                device.compute_capability
            ),
        );
    };
    let source = match crate::device::latencies::for_device(device) {
        Ok(r) => format!(
            "the latency table (data/latencies.toml, {}): {}",
            r.architecture,
            r.sources
                .get("launch_overhead_us")
                .map_or("", String::as_str)
        ),
        Err(e) => format!("the latency table (data/latencies.toml; its sources: {e})"),
    };
    (us, source)
}

/// The device's launch overhead, µs: `launch_overhead_us` of its resolved latency table
/// (`device::latencies::launch_overhead_us`: the device file's `[latencies]` value, else
/// `data/latencies.toml`'s for its compute capability), else `NO_TABLE_LAUNCH_OVERHEAD_US`. No
/// allocation: fits call it for every row.
pub fn default_launch_overhead_us(device: &Device) -> f64 {
    crate::device::latencies::launch_overhead_us(device).unwrap_or(NO_TABLE_LAUNCH_OVERHEAD_US)
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
        absent: None,
    },
    ParamSpec {
        name: "memory_efficiency",
        lower: 0.001,
        upper: 1.0,
        start: 0.5,
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
    use crate::device::ComputeCapability;

    fn device(cc: &str) -> Device {
        Device::from_toml(&device_text(cc), "test").unwrap()
    }

    fn device_text(cc: &str) -> String {
        format!(
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
        )
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
        assert!(
            p.notes
                .iter()
                .any(|n| n.contains("2.6 us") && n.contains("gpu-benches") && n.contains("a100")),
            "{:?}",
            p.notes
        );
    }

    #[test]
    fn a_device_without_a_table_row_gets_the_named_fallback() {
        // Every compute capability a device file may name has a row, so build one in code.
        let mut d = device("3.5");
        d.compute_capability = ComputeCapability::new(1, 3);
        let p = predict(
            &d,
            &RooflineInputs {
                flops: 0.0,
                dram_bytes: 0.0,
                launch_overhead_us: None,
            },
        )
        .unwrap();
        // The fallback is about one lone launch with CUDA events (5.0 us; see its doc).
        assert_eq!(p.time_us, 5.0);
        assert_eq!(default_launch_overhead_us(&d), 5.0);
        assert!(
            p.notes
                .iter()
                .any(|n| n.contains("NO_TABLE_LAUNCH_OVERHEAD_US")
                    && n.contains("no row for compute capability 1.3")),
            "{:?}",
            p.notes
        );
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

    /// `launch_overhead_us` of `cc` read from the text of `data/latencies.toml` (its row's value,
    /// or the row's `per_cc` override for `cc`), without the code that resolves it for models.
    fn table_launch_overhead_us(cc: &str) -> f64 {
        let text = include_str!("../../../../data/latencies.toml");
        let table: toml::Value = toml::from_str(text).unwrap();
        let row = table["arch"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| {
                r["compute_capabilities"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|c| c.as_str() == Some(cc))
            })
            .unwrap_or_else(|| panic!("no row for {cc}"));
        let cell = row
            .get("per_cc")
            .and_then(|p| p.get(cc))
            .and_then(|o| o.get("launch_overhead_us"))
            .unwrap_or(&row["launch_overhead_us"]);
        cell.as_float()
            .or_else(|| cell.as_integer().map(|i| i as f64))
            .unwrap()
    }

    #[test]
    fn the_launch_term_is_the_latency_tables_launch_overhead() {
        // data/latencies.toml today: Kepler 3.0 us (estimated from the Fermi row: ~3 us per
        // asynchronous empty launch, Boyer), Volta 2.6 (estimated from GA100), Turing 2.0
        // (from GA10x), Ampere 8.0 2.6 (gpu-benches a100_80, 2.62 us back to back), Ampere 8.6
        // 2.0 (gpu-benches a40). The roofline's own table had 5.0 for Kepler, Volta and Turing.
        for (cc, stated) in [
            ("3.0", 3.0),
            ("3.5", 3.0),
            ("7.0", 2.6),
            ("7.5", 2.0),
            ("8.0", 2.6),
            ("8.6", 2.0),
        ] {
            let want = table_launch_overhead_us(cc);
            assert_eq!(want, stated, "data/latencies.toml changed for {cc}");
            let d = device(cc);
            let zero = RooflineInputs {
                flops: 0.0,
                dram_bytes: 0.0,
                launch_overhead_us: None,
            };
            let p = predict(&d, &zero).unwrap();
            assert_eq!(p.time_us, want, "compute capability {cc}");
            assert_eq!(p.breakdown["launch_us"].as_f64(), Some(want), "{cc}");
            assert!(
                p.notes.iter().any(|n| n.contains(&format!("{want} us"))
                    && n.contains("data/latencies.toml")),
                "{cc}: {:?}",
                p.notes
            );
            // The fit's fast path and the calibrated time (launch scale 1) use the same value.
            assert_eq!(default_launch_overhead_us(&d), want, "{cc}");
            assert_eq!(calibrated_us(&d, &zero, &[1.0, 1.0, 1.0]), want, "{cc}");
            assert_eq!(
                calibrated_us(&d, &zero, &[1.0, 1.0, 2.0]),
                2.0 * want,
                "{cc}"
            );
        }
    }

    #[test]
    fn a_device_files_latencies_override_is_the_launch_term() {
        let text = device_text("3.5");
        let d = Device::from_toml(
            &format!("{text}\n[latencies]\nsource = \"my back-to-back runs\"\nlaunch_overhead_us = 4.5\n"),
            "test",
        )
        .unwrap();
        assert_eq!(default_launch_overhead_us(&d), 4.5);
        let (us, source) = default_launch_overhead(&d);
        assert_eq!(us, 4.5);
        assert!(source.contains("my back-to-back runs"), "{source}");
        let p = predict(
            &d,
            &RooflineInputs {
                flops: 0.0,
                dram_bytes: 1e5,
                launch_overhead_us: None,
            },
        )
        .unwrap();
        // 1e5 B at 100 GB/s = 1 us, plus the device file's 4.5 us.
        assert!((p.time_us - 5.5).abs() < 1e-12, "{}", p.time_us);
    }

    #[test]
    fn the_fast_launch_overhead_is_the_noted_one_for_every_table_row() {
        for cc in [
            "2.0", "2.1", "3.0", "3.2", "3.5", "3.7", "5.0", "5.2", "5.3", "6.0", "6.1", "6.2",
            "7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "10.3", "11.0", "12.0",
            "12.1",
        ] {
            let d = device(cc);
            let want = table_launch_overhead_us(cc);
            assert_eq!(default_launch_overhead(&d).0, want, "{cc}");
            assert_eq!(default_launch_overhead_us(&d), want, "{cc}");
        }
    }
}
