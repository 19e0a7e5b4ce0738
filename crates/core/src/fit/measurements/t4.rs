//! The T4 autotuning results format of the autotuning community ("FAIR Sharing of Data in
//! Autotuning Research", ICPE 2024 companion; schema `T4/1.0.0/results-schema.json`, written by
//! Kernel Tuner's `store_output_file` and other tuners).
//!
//! Layout: `{"schema_version": "1.0.0", "results": [...]}`; each result has `configuration` (the
//! tunable parameters by name), `invalidity` (`correct`, or why the configuration failed:
//! `compile`, `runtime`, `timeout`, `correctness`, `constraints`), `times` (`runtimes`: the
//! individual runs, `compilation`, `framework`, ...) and `measurements`, a list of
//! `{name, value, unit}`.
//!
//! Each `correct` result becomes one measurement: its time is the measurement named `time`
//! converted from its unit (`ns`, `us`, `ms`, `s`; Kernel Tuner writes `ms`), or, without one,
//! the mean of `times.runtimes` read as milliseconds (noted). `samples` is the number of runtimes.
//! The parameters are the configuration; `block_size_x/y/z` give the block as for Kernel Tuner.
//! Measurements named like profiler metrics fill the counters ([`super::metrics`]). Failed
//! results are skipped and counted by reason in the notes. The format names neither the kernel
//! nor the GPU: the kernel is the file's name (without `.json`/`.gz`), and a top-level
//! `kernel_name` or `device_name` is used when a tool adds one. The source line of a measurement
//! is the line of its `configuration` key (all `1` in a one-line file; errors also give the
//! result's index).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::{
    check_time, kernel_tuner, line_error, line_of_key, metrics, parse_json, time_unit_us, Counters,
    Measurement, Parsed,
};
use crate::error::{Error, Result};

pub(crate) fn parse(text: &str, origin: &str) -> Result<Parsed> {
    let root = parse_json(text, origin)?;
    let results = root
        .get("results")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::file(origin, "a T4 results file needs a `results` list"))?;
    let mut notes = Vec::new();
    let kernel = match root.get("kernel_name").and_then(Value::as_str) {
        Some(k) => k.to_string(),
        None => {
            let k = stem(origin);
            notes.push(format!(
                "T4 results do not name the kernel: rows are named after the file, `{k}`"
            ));
            k
        }
    };
    let device = root
        .get("device_name")
        .and_then(Value::as_str)
        .map(str::to_string);
    if device.is_none() {
        notes.push("T4 results do not name the GPU".to_string());
    }

    let mut out = Vec::new();
    let mut failed: BTreeMap<String, usize> = BTreeMap::new();
    let mut from_runtimes = 0usize;
    for (i, r) in results.iter().enumerate() {
        let line = line_of_key(text, "configuration", i);
        let at = |msg: String| line_error(origin, line, format!("results[{i}]: {msg}"));
        let invalidity = r
            .get("invalidity")
            .and_then(Value::as_str)
            .unwrap_or("correct");
        if invalidity != "correct" {
            *failed.entry(invalidity.to_string()).or_insert(0) += 1;
            continue;
        }
        let config = r
            .get("configuration")
            .and_then(Value::as_object)
            .ok_or_else(|| at("has no `configuration` object".into()))?;
        let measurements = r
            .get("measurements")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let runtimes: Vec<f64> = r
            .get("times")
            .and_then(|t| t.get("runtimes"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        let time_us = match measurements
            .iter()
            .find(|m| m.get("name").and_then(Value::as_str) == Some("time"))
        {
            Some(m) => {
                let unit = m.get("unit").and_then(Value::as_str).unwrap_or("ms");
                let unit = if unit.is_empty() { "ms" } else { unit };
                let f = time_unit_us(unit)
                    .ok_or_else(|| at(format!("unknown time unit \"{unit}\"")))?;
                let v = m
                    .get("value")
                    .and_then(Value::as_f64)
                    .ok_or_else(|| at("the `time` measurement has no numeric value".into()))?;
                v * f
            }
            None if !runtimes.is_empty() => {
                from_runtimes += 1;
                runtimes.iter().sum::<f64>() / runtimes.len() as f64 * 1e3
            }
            None => {
                return Err(at(
                    "has no `time` measurement and no `times.runtimes`".into()
                ))
            }
        };
        let time_us = check_time(time_us, "time", origin, line)
            .map_err(|_| at(format!("`time` must be above zero, got {time_us} us")))?;
        let mut m = Measurement::new(&kernel, time_us, origin, line);
        m.device = device.clone();
        m.params = config.clone();
        m.block = kernel_tuner::block(&m.params);
        if !runtimes.is_empty() {
            m.samples = Some(runtimes.len() as u64);
        }
        let mut c = Counters::default();
        for meas in measurements {
            let (Some(name), Some(value)) = (
                meas.get("name").and_then(Value::as_str),
                meas.get("value").and_then(Value::as_f64),
            ) else {
                continue;
            };
            let unit = meas.get("unit").and_then(Value::as_str).unwrap_or("");
            metrics::apply(&mut c, name, value, unit).map_err(at)?;
        }
        if !c.is_empty() {
            m.counters = Some(c);
        }
        out.push(m);
    }
    for (reason, n) in failed {
        notes.push(format!("{n} configuration(s) invalid ({reason}) skipped"));
    }
    if from_runtimes > 0 {
        notes.push(format!(
            "{from_runtimes} result(s) have no `time` measurement: the mean of times.runtimes, read as ms"
        ));
    }
    let mut parsed = Parsed::new(out);
    parsed.notes = notes;
    Ok(parsed)
}

/// The file's name without its folders and `.gz`/`.json` endings.
fn stem(origin: &str) -> String {
    let name = Path::new(origin)
        .file_name()
        .map_or_else(|| origin.to_string(), |f| f.to_string_lossy().into_owned());
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    name.strip_suffix(".json").unwrap_or(name).to_string()
}

#[cfg(test)]
mod tests {
    use crate::fit::measurements::{parse_text, Dim3, Format};

    /// Written for this test in the layout of the T4 results schema (values invented).
    const T4: &str = include_str!("../../../../../tests/fixtures/measurements/t4-results.json");

    #[test]
    fn correct_results_become_measurements_named_after_the_file() {
        let set = parse_text(T4, "runs/convolution_T4.json", None).unwrap();
        assert_eq!(set.format, Format::T4);
        let m = &set.measurements;
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].kernel, "convolution_T4");
        assert_eq!(m[0].device, None);
        // 1.25 ms = 1250 us.
        assert_eq!(m[0].time_us, 1250.0);
        assert_eq!(m[0].samples, Some(3));
        assert_eq!(m[0].block, Some(Dim3::new(32, 8, 1)));
        assert_eq!(m[0].params["tile_size_x"], serde_json::json!(2));
        assert_eq!(m[0].source.line, 4);
        assert_eq!(
            m[0].counters.as_ref().unwrap().dram_read_transactions,
            Some(50000.0)
        );
        // No `time` measurement: mean of 0.5 and 0.7 ms = 600 us.
        assert!((m[1].time_us - 600.0).abs() < 1e-9);
        assert!(set
            .notes
            .iter()
            .any(|n| n == "1 configuration(s) invalid (compile) skipped"));
        assert!(set.notes.iter().any(|n| n.contains("times.runtimes")));
    }

    #[test]
    fn a_one_line_file_reads_and_errors_name_the_result() {
        let v: serde_json::Value = serde_json::from_str(T4).unwrap();
        let compact = serde_json::to_string(&v).unwrap();
        let set = parse_text(&compact, "t4.json", None).unwrap();
        assert_eq!(set.measurements.len(), 2);
        assert!(set.measurements.iter().all(|m| m.source.line == 1));
        let bad = T4.replacen("\"value\": 1.25", "\"value\": \"slow\"", 1);
        let e = parse_text(&bad, "t4.json", None).unwrap_err().to_string();
        assert!(
            e.contains("t4.json") && e.contains("line 4") && e.contains("results[0]"),
            "{e}"
        );
        let bad = T4.replacen("\"unit\": \"ms\"", "\"unit\": \"jiffies\"", 1);
        let e = parse_text(&bad, "t4.json", None).unwrap_err().to_string();
        assert!(e.contains("jiffies"), "{e}");
    }
}
