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
//! What it does NOT do: merge with an existing cache, or read Kernel Tuner's T4 results files.

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
}

impl MeasuredCache {
    /// Reads a cache file (`.json` or gzip-compressed).
    pub fn load(path: &Path) -> Result<MeasuredCache> {
        let bytes = crate::error::read_capped(
            path,
            crate::error::MAX_TEXT_FILE_BYTES,
            "a Kernel Tuner cache",
        )?;
        let text = crate::fit::measurements::decode(&bytes).map_err(|m| Error::file(path, m))?;
        MeasuredCache::parse(&text, &path.display().to_string())
    }

    /// Parses a cache's text.
    pub fn parse(text: &str, origin: &str) -> Result<MeasuredCache> {
        let (root, _) = crate::fit::measurements::kernel_tuner::parse_json(text, origin)?;
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
            entries.insert(parts.join(","), measured);
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

    /// The measured outcome of a configuration (values in spec order), given
    /// [`MeasuredCache::key_order`].
    pub fn get(&self, order: &[usize], values: &[Value]) -> Option<&Measured> {
        let key: Vec<String> = order.iter().map(|&i| key_part(&values[i])).collect();
        self.entries.get(&key.join(","))
    }
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
}
