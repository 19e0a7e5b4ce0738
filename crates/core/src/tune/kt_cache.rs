//! Kernel Tuner cache files for tuning: writing predictions as a cache (so that any Kernel
//! Tuner search strategy can run on predicted times in its simulation mode) and reading a
//! measured cache with its failed configurations (for `evaluate`).
//!
//! The written file has the layout of the brute-force caches Kernel Tuner writes: `device_name`,
//! `kernel_name`, `problem_size`, `tune_params_keys`, `tune_params` (every value of every
//! parameter), `objective` and `cache`, whose keys are the parameter values joined by commas
//! (Python's `str` of each value) and whose entries hold every parameter, `time` in
//! milliseconds (the predicted time; `RuntimeFailedConfig` for configurations that cannot
//! launch, `CompilationFailedConfig` for compiler refusals), `times` and the bookkeeping fields
//! (zero). Configurations the model could not predict are left out.
//!
//! A T4 results file (the open autotuning results schema Kernel Tuner also writes: `results`, each
//! with a `configuration`, an `invalidity` and `measurements` named `time` with a `unit`) is read
//! as a measured cache too; an `invalidity` of `compile`, `runtime`, `timeout`, `correctness` or
//! `constraints` is a failure.
//!
//! What it does NOT do: merge with an existing cache, or write T4 files.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{json, Map, Value as Json};

use super::expr::Value;
use super::spec::TuneSpec;
use super::{Status, TuneReport};
use crate::error::{Error, Result};

/// A value as a cache key part: Python's `str` of ints, floats and strings; a float with an
/// integral value is written as the integer it equals so that `1` and `1.0` match.
pub fn key_part(v: &Value) -> String {
    match v {
        Value::Float(f) if *f == f.trunc() && f.abs() < 9e15 => format!("{}", *f as i64),
        other => other.to_string(),
    }
}

fn json_key_part(v: &Json) -> String {
    match v {
        Json::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => key_part(&Value::Float(n.as_f64().unwrap_or(f64::NAN))),
        },
        Json::String(s) => s.clone(),
        Json::Bool(true) => "True".into(),
        Json::Bool(false) => "False".into(),
        other => other.to_string(),
    }
}

/// The Kernel Tuner cache of one device's predictions, as JSON text.
pub fn cache_text(
    spec: &TuneSpec,
    report: &TuneReport,
    device: usize,
    problem_size: &[i64],
) -> String {
    let keys: Vec<Json> = report.param_names.iter().map(|n| json!(n)).collect();
    let mut tune_params = Map::new();
    for p in &spec.params {
        tune_params.insert(
            p.name.clone(),
            Json::Array(p.values.iter().map(Value::to_json).collect()),
        );
    }
    let problem = match problem_size {
        [one] => json!(one),
        many => json!(many),
    };
    // Written by hand so that every entry is one line, as Kernel Tuner writes them.
    let head = json!({
        "device_name": report.devices[device],
        "kernel_name": report.kernel,
        "problem_size": problem,
        "tune_params_keys": keys,
        "tune_params": Json::Object(tune_params),
        "objective": "time",
    });
    let mut text = serde_json::to_string_pretty(&head).unwrap_or_else(|_| "{}".into());
    text.truncate(text.trim_end().trim_end_matches('}').trim_end().len());
    text.push_str(",\n  \"cache\": {\n");
    let mut first = true;
    for r in report.device_rows(device) {
        let time = match r.status {
            Status::Ok => json!(r.predicted_us.unwrap_or(f64::NAN) / 1e3),
            Status::CannotLaunch => json!("RuntimeFailedConfig"),
            Status::CompileError => json!("CompilationFailedConfig"),
            Status::ModelError => continue,
        };
        let config = &report.configurations[r.config];
        let mut entry = Map::new();
        for (n, v) in report.param_names.iter().zip(&config.values) {
            entry.insert(n.clone(), v.to_json());
        }
        entry.insert("time".into(), time.clone());
        if r.status == Status::Ok {
            entry.insert("times".into(), json!([time]));
        }
        for f in [
            "compile_time",
            "verification_time",
            "benchmark_time",
            "strategy_time",
            "framework_time",
        ] {
            entry.insert(f.into(), json!(0));
        }
        let key: Vec<String> = config.values.iter().map(key_part).collect();
        if !first {
            text.push_str(",\n");
        }
        first = false;
        text.push_str(&format!(
            "    {}: {}",
            json!(key.join(",")),
            Json::Object(entry)
        ));
    }
    text.push_str("\n  }\n}\n");
    text
}

/// A configuration's measured outcome.
#[derive(Debug, Clone, PartialEq)]
pub enum Measured {
    /// Mean time, milliseconds.
    TimeMs(f64),
    /// The failure marker Kernel Tuner wrote (`CompilationFailedConfig`, ...).
    Failed(String),
}

/// A measured Kernel Tuner cache, keyed by parameter values.
#[derive(Debug, Clone)]
pub struct MeasuredCache {
    pub origin: String,
    pub device_name: Option<String>,
    pub kernel_name: Option<String>,
    /// `tune_params_keys`.
    pub keys: Vec<String>,
    entries: HashMap<String, Measured>,
    /// The entries' keys (values joined by commas) with their values (in `keys` order), in
    /// the order the file's `cache` object is read (its keys sorted, as the measurement
    /// readers see them) or the T4 file lists them.
    order: Vec<(String, Vec<String>)>,
}

impl MeasuredCache {
    /// Reads a cache file (`.json` or gzip-compressed).
    pub fn load(path: &Path) -> Result<MeasuredCache> {
        let bytes = crate::error::read_capped(
            path,
            crate::error::MAX_TEXT_FILE_BYTES,
            "a Kernel Tuner cache",
        )?;
        let text = crate::fit::measurements::decode(bytes).map_err(|m| Error::file(path, m))?;
        MeasuredCache::parse(&text, &path.display().to_string())
    }

    /// Parses a cache's text (or a T4 results file, recognised by its `results` list).
    pub fn parse(text: &str, origin: &str) -> Result<MeasuredCache> {
        let (root, _) = crate::fit::measurements::kernel_tuner::parse_json(text, origin)?;
        if let Some(results) = root.get("results").and_then(Json::as_array) {
            return parse_t4(results, origin);
        }
        let bad = |m: &str| Error::file(origin, m.to_string());
        let keys: Vec<String> = root
            .get("tune_params_keys")
            .and_then(Json::as_array)
            .ok_or_else(|| bad("the Kernel Tuner cache has no `tune_params_keys` list"))?
            .iter()
            .map(|k| k.as_str().map(str::to_string))
            .collect::<Option<_>>()
            .ok_or_else(|| bad("`tune_params_keys` must be a list of names"))?;
        let cache = root
            .get("cache")
            .and_then(Json::as_object)
            .ok_or_else(|| bad("the Kernel Tuner cache has no `cache` object"))?;
        let mut entries = HashMap::with_capacity(cache.len());
        let mut order = Vec::with_capacity(cache.len());
        for (key, e) in cache {
            let parts: Vec<String> = match e.as_object() {
                Some(o) if keys.iter().all(|k| o.contains_key(k)) => {
                    keys.iter().map(|k| json_key_part(&o[k])).collect()
                }
                _ => key.split(',').map(str::to_string).collect(),
            };
            let measured = match e.get("time") {
                Some(Json::Number(n)) => match n.as_f64() {
                    Some(t) if t.is_finite() && t > 0.0 && t < 1e20 => Measured::TimeMs(t),
                    _ => Measured::Failed(format!("time {n}")),
                },
                Some(Json::String(s)) => Measured::Failed(s.clone()),
                _ => {
                    return Err(Error::file(
                        origin,
                        format!("cache entry \"{key}\" has no `time`"),
                    ))
                }
            };
            let joined = parts.join(",");
            if entries.insert(joined.clone(), measured).is_none() {
                order.push((joined, parts));
            }
        }
        Ok(MeasuredCache {
            origin: origin.to_string(),
            device_name: root
                .get("device_name")
                .and_then(Json::as_str)
                .map(str::to_string),
            kernel_name: root
                .get("kernel_name")
                .and_then(Json::as_str)
                .map(str::to_string),
            keys,
            entries,
            order,
        })
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// For each of the spec's parameter names, its position in this cache's keys; an error
    /// when the two do not name the same parameters.
    pub fn key_order(&self, param_names: &[String]) -> Result<Vec<usize>> {
        let missing: Vec<&str> = self
            .keys
            .iter()
            .filter(|k| !param_names.contains(k))
            .map(String::as_str)
            .collect();
        let extra: Vec<&str> = param_names
            .iter()
            .filter(|p| !self.keys.contains(p))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() || !extra.is_empty() {
            return Err(Error::file(
                self.origin.as_str(),
                format!(
                    "its parameters do not match the spec's (only in the cache: {}; only in the spec: {})",
                    if missing.is_empty() { "none".into() } else { missing.join(", ") },
                    if extra.is_empty() { "none".into() } else { extra.join(", ") }
                ),
            ));
        }
        Ok(self
            .keys
            .iter()
            .map(|k| param_names.iter().position(|p| p == k).unwrap_or(0))
            .collect())
    }

    /// Every entry in file order: its key parts (in `keys` order) and outcome.
    pub fn entries(&self) -> impl Iterator<Item = (&[String], &Measured)> {
        self.order
            .iter()
            .filter_map(|(k, parts)| Some((parts.as_slice(), self.entries.get(k)?)))
    }

    /// The measured outcome of a configuration (values in spec order), given
    /// [`MeasuredCache::key_order`].
    pub fn get(&self, order: &[usize], values: &[Value]) -> Option<&Measured> {
        let key: Vec<String> = order.iter().map(|&i| key_part(&values[i])).collect();
        self.entries.get(&key.join(","))
    }
}

/// Milliseconds per unit of a T4 measurement.
fn ms_per(unit: &str) -> Option<f64> {
    match unit {
        "s" => Some(1e3),
        "ms" => Some(1.0),
        "us" | "µs" => Some(1e-3),
        "ns" => Some(1e-6),
        _ => None,
    }
}

/// A T4 results list as a measured cache.
fn parse_t4(results: &[Json], origin: &str) -> Result<MeasuredCache> {
    let at = |k: usize, m: String| Error::file(origin, format!("results[{k}]: {m}"));
    let mut keys: Vec<String> = Vec::new();
    let mut entries = HashMap::with_capacity(results.len());
    let mut order = Vec::with_capacity(results.len());
    for (k, r) in results.iter().enumerate() {
        let config = r
            .get("configuration")
            .and_then(Json::as_object)
            .ok_or_else(|| at(k, "has no `configuration` object".into()))?;
        if keys.is_empty() {
            keys = config.keys().cloned().collect();
        }
        let parts: Vec<String> = keys
            .iter()
            .map(|n| {
                config
                    .get(n)
                    .map(json_key_part)
                    .ok_or_else(|| at(k, format!("its configuration has no `{n}`")))
            })
            .collect::<Result<_>>()?;
        let invalidity = r
            .get("invalidity")
            .and_then(Json::as_str)
            .unwrap_or("correct");
        let measured = match invalidity {
            "compile" | "runtime" | "timeout" | "correctness" | "constraints" => {
                Measured::Failed(invalidity.to_string())
            }
            _ => {
                let m = r
                    .get("measurements")
                    .and_then(Json::as_array)
                    .and_then(|ms| {
                        ms.iter()
                            .find(|m| m.get("name").and_then(Json::as_str) == Some("time"))
                    })
                    .ok_or_else(|| at(k, "has no measurement named `time`".into()))?;
                let value = m.get("value").and_then(Json::as_f64);
                let unit = m.get("unit").and_then(Json::as_str).unwrap_or("ms");
                match (value, ms_per(unit)) {
                    (Some(v), Some(f)) if v.is_finite() && v > 0.0 => Measured::TimeMs(v * f),
                    (_, None) => {
                        return Err(at(k, format!("time unit `{unit}` is not s, ms, us or ns")))
                    }
                    _ => return Err(at(k, "its `time` value is not a number above zero".into())),
                }
            }
        };
        let joined = parts.join(",");
        if entries.insert(joined.clone(), measured).is_none() {
            order.push((joined, parts));
        }
    }
    Ok(MeasuredCache {
        origin: origin.to_string(),
        device_name: None,
        kernel_name: None,
        keys,
        entries,
        order,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEASURED: &str = r#"{
"device_name": "Test GPU",
"kernel_name": "k",
"tune_params_keys": ["b", "a"],
"cache": {
"32,1": {"b": 32, "a": 1, "time": 1.5},
"32,2": {"b": 32, "a": 2, "time": "RuntimeFailedConfig"},
"64,1.5": {"b": 64, "a": 1.5, "time": 0.75}
}
}"#;

    #[test]
    fn measured_entries_are_found_by_parameter_name() {
        let m = MeasuredCache::parse(MEASURED, "m.json").unwrap();
        assert_eq!(m.len(), 3);
        let order = m.key_order(&["a".to_string(), "b".to_string()]).unwrap();
        assert_eq!(order, vec![1, 0]);
        assert_eq!(
            m.get(&order, &[Value::Int(1), Value::Int(32)]),
            Some(&Measured::TimeMs(1.5))
        );
        // 1.0 and 1 are the same configuration.
        assert_eq!(
            m.get(&order, &[Value::Float(1.0), Value::Int(32)]),
            Some(&Measured::TimeMs(1.5))
        );
        assert_eq!(
            m.get(&order, &[Value::Int(2), Value::Int(32)]),
            Some(&Measured::Failed("RuntimeFailedConfig".into()))
        );
        assert_eq!(
            m.get(&order, &[Value::Float(1.5), Value::Int(64)]),
            Some(&Measured::TimeMs(0.75))
        );
        assert_eq!(m.get(&order, &[Value::Int(3), Value::Int(64)]), None);
        let e = m
            .key_order(&["a".to_string(), "c".to_string()])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("only in the cache: b") && e.contains("only in the spec: c"),
            "{e}"
        );
    }

    #[test]
    fn t4_results_are_read_as_a_measured_cache() {
        // Written for this test in the layout of the open autotuning results schema.
        let t4 = r#"{"schema_version": "1.0.0", "results": [
          {"configuration": {"b": 32, "a": 1}, "invalidity": "correct", "correctness": 1,
           "times": {}, "measurements": [{"name": "time", "value": 1500, "unit": "us"}]},
          {"configuration": {"b": 32, "a": 2}, "invalidity": "runtime", "correctness": 0,
           "times": {}, "measurements": []}
        ]}"#;
        let m = MeasuredCache::parse(t4, "t4.json").unwrap();
        let order = m.key_order(&["a".to_string(), "b".to_string()]).unwrap();
        assert_eq!(
            m.get(&order, &[Value::Int(1), Value::Int(32)]),
            Some(&Measured::TimeMs(1.5))
        );
        assert_eq!(
            m.get(&order, &[Value::Int(2), Value::Int(32)]),
            Some(&Measured::Failed("runtime".into()))
        );
        let bad = t4.replace("\"unit\": \"us\"", "\"unit\": \"fortnights\"");
        let e = MeasuredCache::parse(&bad, "t4.json")
            .unwrap_err()
            .to_string();
        assert!(e.contains("results[0]") && e.contains("fortnights"), "{e}");
    }
}
