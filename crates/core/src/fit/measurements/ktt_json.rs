//! Kernel Tuning Toolkit (KTT 2.x) results saved as JSON (`Tuner::SaveResults(...,
//! OutputFormat::JSON)`).
//!
//! Layout: `Metadata` (`Device`, `TimeUnit` = `Nanoseconds`/`Microseconds`/`Milliseconds`/`Seconds`,
//! `GlobalSizeType` = `CUDA`/`OpenCL`/`Vulkan`, `KttVersion`, ...) and `Results`, one entry per
//! tuned configuration: `KernelName`, `Status` (`Ok` or the failure), `Configuration` (a list of
//! `{Name, Value, ValueType}`), and `ComputationResults`, one per kernel function launched:
//! `KernelFunction`, `Duration`, `GlobalSize`/`LocalSize` (`{X, Y, Z}`), optionally
//! `CompilationData` (`RegistersCount`, `LocalMemorySize`, ...) and `ProfilingData.Counters`
//! (`{Name, Type, Value}`, Nsight Compute or CUPTI names).
//!
//! Each computation result of an `Ok` configuration becomes one measurement: the kernel function,
//! its duration converted from `TimeUnit`, the configuration's parameters (plus `ktt_kernel` when
//! the tuned kernel's name differs from the function's), the block from `LocalSize` and the grid
//! from `GlobalSize` (blocks when `GlobalSizeType` is `CUDA`, else work-items divided by the local
//! size, rounded up). Registers come from `RegistersCount`, static shared memory from
//! `LocalMemorySize` (OpenCL's name for it), and counters through [`super::metrics`]. Failed
//! configurations are skipped and counted in the notes, as are counters with no mapping. The
//! source line of a measurement is the line of its `KernelFunction` key.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::{
    check_time, line_error, line_of_key, metrics, parse_json, Counters, Dim3, Measurement, Parsed,
};
use crate::error::{Error, Result};

pub(crate) fn parse(text: &str, origin: &str) -> Result<Parsed> {
    let root = parse_json(text, origin)?;
    let meta = root
        .get("Metadata")
        .and_then(Value::as_object)
        .ok_or_else(|| Error::file(origin, "KTT output has no `Metadata` object"))?;
    let results = root
        .get("Results")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::file(origin, "KTT output has no `Results` list"))?;
    let unit = meta
        .get("TimeUnit")
        .and_then(Value::as_str)
        .unwrap_or("Microseconds");
    let to_us = match unit {
        "Nanoseconds" => 1e-3,
        "Microseconds" => 1.0,
        "Milliseconds" => 1e3,
        "Seconds" => 1e6,
        other => {
            return Err(Error::file(
                origin,
                format!("unknown `Metadata.TimeUnit` \"{other}\" (Nanoseconds, Microseconds, Milliseconds or Seconds)"),
            ))
        }
    };
    let cuda_sizes = meta.get("GlobalSizeType").and_then(Value::as_str) == Some("CUDA");
    let device = meta
        .get("Device")
        .and_then(Value::as_str)
        .map(str::to_string);

    let mut out = Vec::new();
    let mut failed: BTreeMap<String, usize> = BTreeMap::new();
    let mut unmapped = BTreeSet::new();
    let mut function_index = 0usize;
    for (r, result) in results.iter().enumerate() {
        let computations = result
            .get("ComputationResults")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let first_line = line_of_key(text, "KernelFunction", function_index);
        let base = function_index;
        function_index += computations.len();
        let record_line = if computations.is_empty() {
            line_of_key(text, "KernelName", r)
        } else {
            first_line
        };
        let status = result.get("Status").and_then(Value::as_str).unwrap_or("Ok");
        if status != "Ok" {
            *failed.entry(status.to_string()).or_insert(0) += 1;
            continue;
        }
        let kernel_name = result
            .get("KernelName")
            .and_then(Value::as_str)
            .ok_or_else(|| line_error(origin, record_line, "result has no `KernelName`"))?;
        let params = configuration(result.get("Configuration"), origin, record_line)?;
        for (k, comp) in computations.iter().enumerate() {
            let line = line_of_key(text, "KernelFunction", base + k);
            let function = comp
                .get("KernelFunction")
                .and_then(Value::as_str)
                .unwrap_or(kernel_name);
            let duration = comp
                .get("Duration")
                .and_then(Value::as_f64)
                .ok_or_else(|| {
                    line_error(origin, line, "computation result has no numeric `Duration`")
                })?;
            let t = check_time(duration * to_us, "Duration", origin, line)?;
            let mut m = Measurement::new(function, t, origin, line);
            m.device = device.clone();
            m.params = params.clone();
            if function != kernel_name {
                m.params.insert("ktt_kernel".into(), kernel_name.into());
            }
            let local = dims(comp.get("LocalSize"), "LocalSize", origin, line)?;
            let global = dims(comp.get("GlobalSize"), "GlobalSize", origin, line)?;
            if let (Some(l), Some(g)) = (local, global) {
                m.block = Some(l);
                m.grid = Some(if cuda_sizes {
                    g
                } else {
                    Dim3::new(g.x.div_ceil(l.x), g.y.div_ceil(l.y), g.z.div_ceil(l.z))
                });
            }
            let mut c = Counters::default();
            if let Some(cd) = comp.get("CompilationData") {
                c.regs_per_thread = cd
                    .get("RegistersCount")
                    .and_then(Value::as_u64)
                    .and_then(|v| u32::try_from(v).ok());
                c.static_smem_bytes = cd.get("LocalMemorySize").and_then(Value::as_u64);
            }
            let counters = comp
                .get("ProfilingData")
                .and_then(|p| p.get("Counters"))
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            for counter in counters {
                let (Some(name), Some(value)) = (
                    counter.get("Name").and_then(Value::as_str),
                    counter.get("Value").and_then(Value::as_f64),
                ) else {
                    return Err(line_error(
                        origin,
                        line,
                        "a profiling counter needs a `Name` and a numeric `Value`",
                    ));
                };
                if !metrics::apply(&mut c, name, value, "")
                    .map_err(|e| line_error(origin, line, e))?
                {
                    unmapped.insert(name.to_string());
                }
            }
            if !c.is_empty() {
                m.counters = Some(c);
            }
            out.push(m);
        }
    }
    let mut parsed = Parsed::new(out);
    parsed.notes.push(format!(
        "KTT durations converted from {unit}; grid from GlobalSize as {}",
        if cuda_sizes {
            "blocks (GlobalSizeType CUDA)"
        } else {
            "work-items / LocalSize"
        }
    ));
    for (status, n) in failed {
        parsed
            .notes
            .push(format!("{n} configuration(s) with status {status} skipped"));
    }
    parsed.notes.extend(metrics::unmapped_note(&unmapped));
    Ok(parsed)
}

/// The configuration's `{Name, Value}` pairs as parameters.
fn configuration(
    v: Option<&Value>,
    origin: &str,
    line: usize,
) -> Result<serde_json::Map<String, Value>> {
    let mut params = serde_json::Map::new();
    let Some(pairs) = v.and_then(Value::as_array) else {
        return Ok(params);
    };
    for p in pairs {
        let (Some(name), Some(value)) = (p.get("Name").and_then(Value::as_str), p.get("Value"))
        else {
            return Err(line_error(
                origin,
                line,
                "a `Configuration` entry needs a `Name` and a `Value`",
            ));
        };
        params.insert(name.to_string(), value.clone());
    }
    Ok(params)
}

/// `{X, Y, Z}` as a Dim3 (absent: `None`; a zero or non-integer size is an error).
fn dims(v: Option<&Value>, what: &str, origin: &str, line: usize) -> Result<Option<Dim3>> {
    let Some(v) = v else { return Ok(None) };
    let get = |axis: &str| {
        v.get(axis)
            .and_then(Value::as_u64)
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                line_error(
                    origin,
                    line,
                    format!("`{what}.{axis}` must be a whole number of at least 1"),
                )
            })
    };
    Ok(Some(Dim3::new(get("X")?, get("Y")?, get("Z")?)))
}

#[cfg(test)]
mod tests {
    use crate::fit::measurements::{parse_text, Dim3, Format};

    /// Written for this test in the layout of KTT 2.x JSON output (values invented).
    const KTT: &str = include_str!("../../../../../tests/fixtures/measurements/ktt-output.json");

    #[test]
    fn each_computation_of_an_ok_configuration_is_a_measurement() {
        let set = parse_text(KTT, "ktt.json", None).unwrap();
        assert_eq!(set.format, Format::KttJson);
        let m = &set.measurements;
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].kernel, "directCoulombSum");
        assert_eq!(m[0].device.as_deref(), Some("NVIDIA GeForce RTX 2080 Ti"));
        // Microseconds as written.
        assert_eq!(m[0].time_us, 3037.5);
        // GlobalSizeType CUDA: GlobalSize is the grid.
        assert_eq!(m[0].grid, Some(Dim3::new(16, 64, 256)));
        assert_eq!(m[0].block, Some(Dim3::new(16, 4, 1)));
        assert_eq!(m[0].params["WORK_GROUP_SIZE_X"], serde_json::json!(16));
        assert_eq!(m[0].params["USE_SOA"], serde_json::json!(1));
        assert_eq!(m[0].source.line, 28);
        let c = m[0].counters.as_ref().unwrap();
        assert_eq!(c.regs_per_thread, Some(66));
        assert_eq!(c.dram_read_transactions, Some(2100194.0));
        assert_eq!(c.dram_write_transactions, Some(2020263.0));
        assert_eq!(c.inst_executed, Some(99090432.0));
        assert_eq!(c.gld_requests, Some(34078720.0));
        // 84.5 % of peak sustained active warps.
        assert!((c.achieved_occupancy.unwrap() - 0.845).abs() < 1e-12);
        assert_eq!(m[1].time_us, 2500.25);
        assert!(m[1].counters.as_ref().unwrap().inst_executed.is_none());
        assert!(set
            .notes
            .iter()
            .any(|n| n == "1 configuration(s) with status CompilationFailed skipped"));
        assert!(set
            .notes
            .iter()
            .any(|n| n.contains("smsp__issue_active.avg.pct_of_peak_sustained_active")));
    }

    #[test]
    fn opencl_sizes_are_work_items_and_bad_records_name_the_line() {
        let ocl = KTT
            .replace(
                "\"GlobalSizeType\": \"CUDA\"",
                "\"GlobalSizeType\": \"OpenCL\"",
            )
            .replace(
                "\"TimeUnit\": \"Microseconds\"",
                "\"TimeUnit\": \"Milliseconds\"",
            );
        let set = parse_text(&ocl, "ktt.json", None).unwrap();
        // 16 x 64 x 256 work-items in 16 x 4 x 1 groups: 1 x 16 x 256 blocks.
        assert_eq!(set.measurements[0].grid, Some(Dim3::new(1, 16, 256)));
        assert_eq!(set.measurements[0].time_us, 3037.5e3);
        let bad = KTT.replacen("\"Duration\": 3037.5", "\"Duration\": \"slow\"", 1);
        let e = parse_text(&bad, "ktt.json", None).unwrap_err().to_string();
        assert!(
            e.contains("ktt.json") && e.contains("line 28") && e.contains("Duration"),
            "{e}"
        );
        let bad = KTT.replacen("\"X\": 16,", "\"X\": 0,", 1);
        let e = parse_text(&bad, "ktt.json", None).unwrap_err().to_string();
        assert!(e.contains("line 28") && e.contains("GlobalSize.X"), "{e}");
        let bad = KTT.replacen("\"Results\": [", "\"Results\": [}", 1);
        let e = parse_text(&bad, "ktt.json", None).unwrap_err().to_string();
        assert!(e.contains("ktt.json") && e.contains("JSON"), "{e}");
    }
}
