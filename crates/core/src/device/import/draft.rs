//! A device description being assembled by an importer: every value with the source (the file
//! and the line or field it came from), written out as a device file and checked by loading it.
//!
//! The importers (`device_query`, `accelsim_ubench`, `gpgpusim_config`, `kerneltime_ubench`) fill
//! a [`DeviceDraft`]; [`DeviceDraft::to_toml`] writes the catalogue's device-file schema: product
//! values, `[limits]` only where a value differs from `data/compute_capabilities.toml` (each such
//! difference is also listed in the notes), `[latencies]` (the trace model), `[microbenchmarks]`
//! (the analytical models) and `[measured]`, with one `[sources]` entry per value.
//!
//! It fills in only what no tool prints and the programming guide fixes per compute capability
//! (the architecture name and the unified L1/shared capacity), with a source saying so, and sets
//! the base clock to the maximum clock when a tool prints only that (with a note). It reads no
//! files and runs nothing.

use std::collections::BTreeMap;

use super::device_query::architecture_of;
use crate::device::{limits, microbenchmarks as mb, ComputeCapability, Device};
use crate::error::{Error, Result};

/// A value and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Sourced<T> {
    pub value: T,
    pub source: String,
}

/// Values an importer found, each with its source.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceDraft {
    /// The input file's name, as the user gave it.
    pub origin: String,
    /// What the input is, e.g. "deviceQuery output": the general source is "{tool} {origin}".
    pub tool: String,
    pub name: Option<Sourced<String>>,
    pub compute_capability: Option<Sourced<ComputeCapability>>,
    pub sm_count: Option<Sourced<u32>>,
    pub cores_per_sm: Option<Sourced<u32>>,
    pub warp_schedulers_per_sm: Option<Sourced<u32>>,
    pub base_clock_mhz: Option<Sourced<f64>>,
    pub boost_clock_mhz: Option<Sourced<f64>>,
    pub memory_bandwidth_gbs: Option<Sourced<f64>>,
    pub memory_size_bytes: Option<Sourced<u64>>,
    pub l2_cache_bytes: Option<Sourced<u64>>,
    pub l1_shared_per_sm_bytes: Option<Sourced<u64>>,
    /// Limits the input states (`limits::LIMIT_FIELDS`); written only where they differ from
    /// the compute capability's table.
    pub limits: BTreeMap<&'static str, Sourced<u32>>,
    /// Trace-model latencies and throughputs (`latencies::FIELDS`).
    pub latencies: BTreeMap<&'static str, Sourced<f64>>,
    /// Analytical-model latencies in cycles (`microbenchmarks::GLOBAL_MEMORY_READ` and the
    /// others), measured with one warp.
    pub microbenchmarks: BTreeMap<&'static str, Sourced<f64>>,
    /// Device-level measured values (`measured::FIELDS`).
    pub measured: BTreeMap<&'static str, Sourced<f64>>,
    pub notes: Vec<String>,
    /// Where the importer looks for each required product value, for "not found" errors.
    pub hints: BTreeMap<&'static str, &'static str>,
}

impl<T> Sourced<T> {
    pub fn new(value: T, source: impl Into<String>) -> Self {
        Self {
            value,
            source: source.into(),
        }
    }
}

/// `"file line N (`text`)"`: the source of a value read from one line.
pub fn at_line(tool: &str, origin: &str, line: usize, text: &str) -> String {
    format!("{tool} {origin} line {line} (`{}`)", text.trim())
}

impl DeviceDraft {
    pub fn new(tool: &str, origin: &str) -> Self {
        Self {
            origin: origin.to_string(),
            tool: tool.to_string(),
            ..Self::default()
        }
    }

    /// The general source of the file's values.
    pub fn file_source(&self) -> String {
        format!("{} {}", self.tool, self.origin)
    }

    /// An error saying a required value was not found, with the importer's hint.
    fn not_found(&self, field: &str) -> Error {
        let hint = self.hints.get(field).copied().unwrap_or("");
        let hint = if hint.is_empty() {
            String::new()
        } else {
            format!(" (looked for {hint})")
        };
        Error::file(
            &self.origin,
            format!(
                "no value for `{field}` found{hint}; is this {}?",
                with_article(&self.tool)
            ),
        )
    }

    fn need<'a, T>(&self, v: &'a Option<Sourced<T>>, field: &str) -> Result<&'a Sourced<T>> {
        v.as_ref().ok_or_else(|| self.not_found(field))
    }

    /// The device file's text. `name` replaces the name the input gives; the text is checked by
    /// loading it back as a device.
    pub fn to_toml(&self, name: Option<&str>) -> Result<String> {
        let origin = self.origin.as_str();
        let general = self.file_source();
        let name = match name {
            Some(n) => Sourced::new(n.to_string(), "given on import"),
            None => self.name.clone().ok_or_else(|| {
                Error::missing(
                    "name",
                    format!("{origin} does not name the GPU; give the device a name"),
                )
            })?,
        };
        let cc = self.need(&self.compute_capability, "compute_capability")?;
        let sm_count = self.need(&self.sm_count, "sm_count")?;
        let cores = self.need(&self.cores_per_sm, "cores_per_sm")?;
        let bandwidth = self.need(&self.memory_bandwidth_gbs, "memory_bandwidth_gbs")?;
        let l2 = self.need(&self.l2_cache_bytes, "l2_cache_bytes")?;
        let mut notes = self.notes.clone();
        let (boost, base) = match (&self.boost_clock_mhz, &self.base_clock_mhz) {
            (Some(boost), Some(base)) => (boost.clone(), base.clone()),
            (Some(clock), None) | (None, Some(clock)) => {
                notes.push(format!(
                    "{} gives one core clock ({} MHz); base_clock_mhz and boost_clock_mhz are both set to it.",
                    self.tool, clock.value
                ));
                (clock.clone(), clock.clone())
            }
            (None, None) => return Err(self.not_found("boost_clock_mhz")),
        };
        let cc_value = cc.value;
        let table = limits::for_compute_capability(cc_value)
            .map_err(|e| Error::file(origin, format!("{e} ({})", cc.source)))?;
        let (architecture, l1_guide) = architecture_of(cc_value).ok_or_else(|| {
            Error::file(
                origin,
                format!("compute capability {cc_value} has no known architecture"),
            )
        })?;
        let l1 = self.l1_shared_per_sm_bytes.clone().unwrap_or_else(|| {
            Sourced::new(
                l1_guide,
                format!("Not given by {}; CUDA C++ Programming Guide, unified L1/shared capacity for compute capability {cc_value}", self.tool),
            )
        });

        let mut sources: Vec<(String, String)> = vec![
            ("name".into(), name.source.clone()),
            (
                "architecture".into(),
                format!("CUDA C++ Programming Guide: compute capability {cc_value} is {architecture} ({})", cc.source),
            ),
            ("compute_capability".into(), cc.source.clone()),
            ("sm_count".into(), sm_count.source.clone()),
            ("cores_per_sm".into(), cores.source.clone()),
            ("base_clock_mhz".into(), base.source.clone()),
            ("boost_clock_mhz".into(), boost.source.clone()),
            ("memory_bandwidth_gbs".into(), bandwidth.source.clone()),
            ("l2_cache_bytes".into(), l2.source.clone()),
            ("l1_shared_per_sm_bytes".into(), l1.source.clone()),
        ];
        let q = |s: &str| toml::Value::String(s.to_string()).to_string();
        let mut t = String::new();
        t.push_str(&format!(
            "# Imported by `kerneltime device import` from {origin} ({}).\n",
            self.tool
        ));
        t.push_str(&format!("name = {}\n", q(&name.value)));
        t.push_str(&format!("architecture = {}\n", q(architecture)));
        t.push_str(&format!(
            "compute_capability = {}\n",
            q(&cc_value.to_string())
        ));
        t.push_str(&format!("sm_count = {}\n", sm_count.value));
        t.push_str(&format!("cores_per_sm = {}\n", cores.value));
        if let Some(w) = &self.warp_schedulers_per_sm {
            t.push_str(&format!("warp_schedulers_per_sm = {}\n", w.value));
            sources.push(("warp_schedulers_per_sm".into(), w.source.clone()));
        }
        t.push_str(&format!("base_clock_mhz = {}\n", float(base.value)));
        t.push_str(&format!("boost_clock_mhz = {}\n", float(boost.value)));
        t.push_str(&format!(
            "memory_bandwidth_gbs = {}\n",
            float(bandwidth.value)
        ));
        if let Some(m) = &self.memory_size_bytes {
            t.push_str(&format!("memory_size_bytes = {}\n", m.value));
            sources.push(("memory_size_bytes".into(), m.source.clone()));
        }
        t.push_str(&format!("l2_cache_bytes = {}\n", l2.value));
        t.push_str(&format!("l1_shared_per_sm_bytes = {}\n", l1.value));
        t.push_str(&format!("source = {}\n", q(&general)));

        // Limits: only those that differ from the compute capability's table.
        let mut overrides: Vec<(&str, u32)> = Vec::new();
        for (field, v) in &self.limits {
            let table_value = table_limit(&table, field);
            if table_value != Some(v.value) {
                overrides.push((field, v.value));
                sources.push((format!("limits.{field}"), v.source.clone()));
                notes.push(format!(
                    "limits.{field} = {} from {} differs from the compute capability {cc_value} table value {}",
                    v.value,
                    v.source,
                    table_value.map_or("(none)".to_string(), |t| t.to_string())
                ));
            }
        }
        for (prefix, values) in [
            ("latencies", &self.latencies),
            ("measured", &self.measured),
            ("microbenchmarks", &self.microbenchmarks),
        ] {
            for (field, v) in values {
                sources.push((format!("{prefix}.{field}"), v.source.clone()));
            }
        }

        let quoted: Vec<String> = notes.iter().map(|n| q(n)).collect();
        t.push_str(&format!("notes = [{}]\n", quoted.join(", ")));
        t.push_str("\n[sources]\n");
        for (k, v) in &sources {
            t.push_str(&format!("{} = {}\n", q(k), q(v)));
        }
        if !overrides.is_empty() {
            t.push_str("\n[limits]\n");
            for (field, v) in &overrides {
                t.push_str(&format!("{field} = {v}\n"));
            }
        }
        if !self.latencies.is_empty() {
            t.push_str(&format!("\n[latencies]\nsource = {}\n", q(&general)));
            for (field, v) in &self.latencies {
                t.push_str(&format!("{} = {}\n", q(field), float(v.value)));
            }
        }
        if !self.measured.is_empty() {
            t.push_str(&format!("\n[measured]\nsource = {}\n", q(&general)));
            for (field, v) in &self.measured {
                t.push_str(&format!("{field} = {}\n", float(v.value)));
            }
        }
        if !self.microbenchmarks.is_empty() {
            t.push_str(&format!(
                "\n[microbenchmarks]\nsource = {}\nwarps = [1]\n\n[microbenchmarks.latency_cycles]\n",
                q(&format!("{general} (pointer chases with one warp)"))
            ));
            for (bench, v) in &self.microbenchmarks {
                t.push_str(&format!("{bench} = [{}]\n", float(v.value)));
            }
        }

        // The written file must load as a device; report any inconsistency now, not at use.
        Device::from_toml(&t, origin)?;
        Ok(t)
    }

    /// Sets the analytical models' micro-benchmark latencies from the trace-model latencies the
    /// draft already has (both are one-warp pointer-chase latencies in core cycles).
    pub fn microbenchmarks_from_latencies(&mut self) {
        for (latency, bench) in [
            ("dram", mb::GLOBAL_MEMORY_READ),
            ("l2_hit", mb::L2_CACHE),
            ("l1_hit", mb::L1_CACHE),
            ("shared_load", mb::SHARED_MEMORY_READ),
        ] {
            if let Some(v) = self.latencies.get(latency) {
                self.microbenchmarks.insert(bench, v.clone());
            }
        }
    }
}

/// A float as TOML writes it (always with a decimal point or exponent).
fn float(v: f64) -> String {
    format!("{v:?}")
}

/// "an Accel-Sim ..." / "a deviceQuery ..." for the "is this ...?" question.
fn with_article(tool: &str) -> String {
    let vowel = tool
        .chars()
        .next()
        .is_some_and(|c| "aeiouAEIOU".contains(c));
    format!("{} {tool}", if vowel { "an" } else { "a" })
}

/// A compute-capability table's value of a numeric limit, by name.
fn table_limit(t: &limits::ComputeCapabilityLimits, field: &str) -> Option<u32> {
    let v = serde_json::to_value(t).ok()?;
    v.get(field)?.as_u64().and_then(|x| u32::try_from(x).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft() -> DeviceDraft {
        let mut d = DeviceDraft::new("test output", "t.txt");
        let s = |n: usize| format!("t.txt line {n}");
        d.name = Some(Sourced::new("Test GPU".into(), s(1)));
        d.compute_capability = Some(Sourced::new(ComputeCapability::new(7, 5), s(2)));
        d.sm_count = Some(Sourced::new(40, s(3)));
        d.cores_per_sm = Some(Sourced::new(64, s(4)));
        d.boost_clock_mhz = Some(Sourced::new(1590.0, s(5)));
        d.memory_bandwidth_gbs = Some(Sourced::new(320.064, s(6)));
        d.l2_cache_bytes = Some(Sourced::new(4 << 20, s(7)));
        d
    }

    #[test]
    fn every_value_keeps_its_source_and_limits_are_written_only_when_they_differ() {
        let mut d = draft();
        // Turing's table: 1024 threads per SM (equal: not written) and 16 blocks (differs).
        d.limits
            .insert("max_threads_per_sm", Sourced::new(1024, "t.txt line 8"));
        d.limits
            .insert("max_blocks_per_sm", Sourced::new(32, "t.txt line 9"));
        d.latencies
            .insert("dram", Sourced::new(460.5, "t.txt line 10"));
        d.measured
            .insert("launch_overhead_us", Sourced::new(4.5, "t.txt line 11"));
        d.microbenchmarks_from_latencies();
        let text = d.to_toml(None).unwrap();
        let dev = Device::from_toml(&text, "t.toml").unwrap();
        assert_eq!(dev.name, "Test GPU");
        assert_eq!(dev.architecture, "Turing");
        assert_eq!(dev.sources["sm_count"], "t.txt line 3");
        // One clock given: base = boost, with a note.
        assert_eq!(dev.base_clock_mhz, 1590.0);
        assert!(dev.notes.iter().any(|n| n.contains("one core clock")));
        assert_eq!(dev.limits.max_blocks_per_sm, 32);
        assert_eq!(dev.sources["limits.max_blocks_per_sm"], "t.txt line 9");
        assert!(
            !dev.sources.contains_key("limits.max_threads_per_sm")
                || dev.sources["limits.max_threads_per_sm"] != "t.txt line 8"
        );
        assert!(dev
            .notes
            .iter()
            .any(|n| n.contains("limits.max_blocks_per_sm = 32") && n.contains("table value 16")));
        assert_eq!(dev.latencies.as_ref().unwrap().values["dram"], 460.5);
        assert_eq!(dev.sources["latencies.dram"], "t.txt line 10");
        let m = dev.measured_value("launch_overhead_us").unwrap();
        assert_eq!((m.value, m.source.as_str()), (4.5, "t.txt line 11"));
        let mb = dev.microbenchmarks.as_ref().unwrap();
        assert_eq!(mb.representative_cycles("global_memory_read"), Some(460.5));
        assert_eq!(
            dev.sources["microbenchmarks.global_memory_read"],
            "t.txt line 10"
        );
        // Turing's unified L1/shared from the programming guide, said so.
        assert_eq!(dev.l1_shared_per_sm_bytes, 96 * 1024);
        assert!(dev.sources["l1_shared_per_sm_bytes"].contains("Programming Guide"));
    }

    #[test]
    fn a_missing_value_names_the_field_and_where_it_was_looked_for() {
        let mut d = draft();
        d.sm_count = None;
        d.hints.insert("sm_count", "`Multiprocessors Count`");
        let e = d.to_toml(None).unwrap_err().to_string();
        assert!(
            e.contains("t.txt") && e.contains("sm_count") && e.contains("Multiprocessors Count"),
            "{e}"
        );
        let mut d = draft();
        d.name = None;
        let e = d.to_toml(None).unwrap_err().to_string();
        assert!(e.contains("name"), "{e}");
        assert!(d.to_toml(Some("Mine")).is_ok());
    }
}
