//! Kernel Tuner cache files (JSON written by `tune_kernel(..., cache=FILE)`).
//!
//! The object holds `device_name`, `kernel_name`, `tune_params_keys`, optionally `problem_size`,
//! and `cache`: one entry per benchmarked configuration, keyed by the parameter values joined
//! with commas, whose `time` is the mean kernel time in milliseconds and `times` the individual
//! runs. Each entry with a numeric time becomes one measurement: its tunable parameters are the
//! measurement's parameters, `problem_size` adds `problem_size_x/y/z`, and `block_size_x/y/z`
//! (Kernel Tuner's default block-dimension names) give the block when present.
//! Entries whose time is a failure marker (`InvalidConfig`, `CompilationFailedConfig`,
//! `RuntimeFailedConfig`, or the 1e20 placeholder of old versions) are skipped and counted
//! in the notes. A cache still being written (no closing braces, trailing comma) is accepted.
//! Kernel Tuner's T4 results files are read by [`super::t4`].

use super::{line_error, Dim3, Measurement, Parsed};
use crate::error::{Error, Result};
use serde_json::Value;

pub(crate) fn parse(text: &str, origin: &str) -> Result<Parsed> {
    let (root, text_used) = match serde_json::from_str::<Value>(text) {
        Ok(v) => (v, text.to_string()),
        Err(first) => {
            // An open cache: entries end with ",\n" and the closing braces are missing.
            let trimmed = text.trim_end().trim_end_matches(',');
            let closed = format!("{trimmed}\n}}\n}}");
            match serde_json::from_str::<Value>(&closed) {
                Ok(v) => (v, closed),
                Err(_) => {
                    return Err(line_error(
                        origin,
                        first.line(),
                        format!("invalid JSON at column {}: {first}", first.column()),
                    ))
                }
            }
        }
    };
    let obj = root
        .as_object()
        .ok_or_else(|| Error::file(origin, "a Kernel Tuner cache must be a JSON object"))?;
    let field = |name: &str| {
        obj.get(name).ok_or_else(|| {
            Error::file(
                origin,
                format!("the Kernel Tuner cache has no `{name}` field"),
            )
        })
    };
    let kernel = field("kernel_name")?
        .as_str()
        .ok_or_else(|| Error::file(origin, "`kernel_name` must be a string"))?
        .to_string();
    let device = obj
        .get("device_name")
        .and_then(Value::as_str)
        .map(str::to_string);
    let keys: Vec<String> = field("tune_params_keys")?
        .as_array()
        .ok_or_else(|| Error::file(origin, "`tune_params_keys` must be a list of names"))?
        .iter()
        .map(|k| {
            k.as_str()
                .map(str::to_string)
                .ok_or_else(|| Error::file(origin, "`tune_params_keys` must be a list of names"))
        })
        .collect::<Result<_>>()?;
    let problem: Vec<Value> = match obj.get("problem_size") {
        Some(Value::Array(a)) => a.clone(),
        Some(v @ Value::Number(_)) => vec![v.clone()],
        _ => Vec::new(),
    };
    let cache = field("cache")?
        .as_object()
        .ok_or_else(|| Error::file(origin, "`cache` must be an object"))?;

    let cache_at = text_used.find("\"cache\"").unwrap_or(0);
    let mut out = Vec::with_capacity(cache.len());
    let mut failed = 0usize;
    for (key, entry) in cache {
        let line = line_of(&text_used, cache_at, key);
        let e = entry.as_object().ok_or_else(|| {
            line_error(
                origin,
                line,
                format!("cache entry \"{key}\" is not an object"),
            )
        })?;
        let time_ms = match e.get("time") {
            Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
            Some(Value::String(_)) => {
                failed += 1;
                continue;
            }
            _ => {
                return Err(line_error(
                    origin,
                    line,
                    format!("cache entry \"{key}\" has no numeric `time`"),
                ))
            }
        };
        if time_ms >= 1e20 {
            failed += 1;
            continue;
        }
        if !(time_ms.is_finite() && time_ms > 0.0) {
            return Err(line_error(
                origin,
                line,
                format!("cache entry \"{key}\": `time` must be above zero, got {time_ms}"),
            ));
        }
        let mut m = Measurement::new(&kernel, time_ms * 1e3, origin, line);
        m.device = device.clone();
        let from_key: Vec<&str> = key.split(',').collect();
        for (k, name) in keys.iter().enumerate() {
            let v = match e.get(name) {
                Some(v) => v.clone(),
                None => match from_key.get(k) {
                    Some(s) if from_key.len() == keys.len() => super::param_value(s),
                    _ => {
                        return Err(line_error(
                            origin,
                            line,
                            format!("cache entry \"{key}\" has no value for `{name}`"),
                        ))
                    }
                },
            };
            m.params.insert(name.clone(), v);
        }
        for (axis, v) in ["x", "y", "z"].iter().zip(&problem) {
            m.params.insert(format!("problem_size_{axis}"), v.clone());
        }
        m.block = block(&m.params);
        m.samples = e
            .get("times")
            .and_then(Value::as_array)
            .map(|a| a.len() as u64);
        out.push(m);
    }
    let mut parsed = Parsed::new(out);
    parsed
        .notes
        .push("Kernel Tuner times are means over the benchmark runs, converted from ms".into());
    if failed > 0 {
        parsed.notes.push(format!(
            "{failed} configuration(s) failed (invalid, not compiled or failed at run time) and were skipped"
        ));
    }
    Ok(parsed)
}

/// The block from `block_size_x/y/z` when `block_size_x` is a positive whole number.
pub(crate) fn block(params: &serde_json::Map<String, Value>) -> Option<Dim3> {
    let get = |n: &str| params.get(n).and_then(Value::as_u64);
    let x = get("block_size_x").filter(|&x| x > 0)?;
    Some(Dim3::new(
        x,
        get("block_size_y").unwrap_or(1).max(1),
        get("block_size_z").unwrap_or(1).max(1),
    ))
}

/// The 1-based line where `"key":` appears after the `cache` field.
fn line_of(text: &str, from: usize, key: &str) -> usize {
    let needle = format!("\"{key}\"");
    let at = text[from..].find(&needle).map_or(from, |i| from + i);
    text[..at].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use crate::fit::measurements::{parse_text, Dim3, Format};

    // Written for this test in the layout of a Kernel Tuner 1.x cache file.
    const CACHE: &str = r#"{
"schema_version": "1.0.0",
"device_name": "NVIDIA RTX A4000",
"kernel_name": "vector_add",
"problem_size": 1000000,
"tune_params_keys": ["block_size_x", "tile"],
"tune_params": {"block_size_x": [128, 256], "tile": [1, 2]},
"objective": "time",
"cache": {
"128,1": {"block_size_x": 128, "tile": 1, "time": 0.05, "times": [0.051, 0.049], "compile_time": 800.0},
"256,1": {"block_size_x": 256, "tile": 1, "time": "InvalidConfig"},
"256,2": {"block_size_x": 256, "tile": 2, "time": 0.0425, "times": [0.0425]}
}
}"#;

    #[test]
    fn each_configuration_is_a_measurement_in_microseconds() {
        let set = parse_text(CACHE, "cache.json", None).unwrap();
        assert_eq!(set.format, Format::KernelTuner);
        let m = &set.measurements;
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].kernel, "vector_add");
        assert_eq!(m[0].device.as_deref(), Some("NVIDIA RTX A4000"));
        // 0.05 ms = 50 us
        assert!((m[0].time_us - 50.0).abs() < 1e-9);
        assert_eq!(m[0].params["block_size_x"], serde_json::json!(128));
        assert_eq!(m[0].params["tile"], serde_json::json!(1));
        assert_eq!(m[0].params["problem_size_x"], serde_json::json!(1000000));
        assert_eq!(m[0].block, Some(Dim3::new(128, 1, 1)));
        assert_eq!(m[0].samples, Some(2));
        assert_eq!(m[0].source.line, 10);
        assert!((m[1].time_us - 42.5).abs() < 1e-9);
        assert_eq!(m[1].source.line, 12);
        assert!(set.notes.iter().any(|n| n.starts_with("1 configuration")));
    }

    #[test]
    fn an_open_cache_is_read() {
        let open = CACHE
            .trim_end()
            .trim_end_matches('}')
            .trim_end()
            .trim_end_matches('}');
        let open = format!("{},\n", open.trim_end());
        let set = parse_text(&open, "open.json", None).unwrap();
        assert_eq!(set.measurements.len(), 2);
    }

    #[test]
    fn malformed_entries_name_file_and_line() {
        let bad = CACHE.replace("\"time\": 0.0425", "\"time\": -1");
        let e = parse_text(&bad, "cache.json", None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cache.json") && e.contains("line 12") && e.contains("time"),
            "{e}"
        );
        let bad = CACHE.replace("\"time\": 0.05,", "");
        let e = parse_text(&bad, "cache.json", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 10") && e.contains("time"), "{e}");
        let bad = CACHE.replace("\"tile\": 2, ", "\"tile\" 2, ");
        let e = parse_text(&bad, "cache.json", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 12") && e.contains("JSON"), "{e}");
        let bad = CACHE.replace("\"kernel_name\": \"vector_add\",", "");
        let e = parse_text(&bad, "cache.json", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("kernel_name"), "{e}");
    }
}
