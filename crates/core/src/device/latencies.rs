//! Latencies and throughputs the trace model (wang2019) charges per operation: per-architecture
//! defaults from `data/latencies.toml` (embedded; every row cites the micro-benchmarks it comes
//! from) and the optional `[latencies]` table of a device file, which overrides single values
//! with its own source.
//!
//! Lookup and validation only; the model decides how to use the numbers.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::{ComputeCapability, Device};
use crate::error::{Error, Result};

/// The values of one architecture (cycles; throughputs per clock per SM).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Latencies {
    pub l1_hit: f64,
    pub shared_load: f64,
    pub l2_hit: f64,
    pub dram: f64,
    #[serde(rename = "const")]
    pub const_: f64,
    pub int: f64,
    pub int_mul: f64,
    pub fp32: f64,
    pub fp64: f64,
    pub special: f64,
    pub convert: f64,
    pub int_div: f64,
    pub fp32_per_clk_sm: f64,
    pub fp64_per_clk_sm: f64,
    pub int_per_clk_sm: f64,
    pub sfu_per_clk_sm: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ArchRow {
    name: String,
    compute_capabilities: Vec<String>,
    #[serde(flatten)]
    values: Latencies,
    estimated: Vec<String>,
    source: String,
}

#[derive(Debug, Deserialize)]
struct Table {
    arch: Vec<ArchRow>,
}

/// A device file's `[latencies]` table: any subset of the fields, with a source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyOverride {
    /// Where the overriding numbers come from (required when any value is given).
    #[serde(default)]
    pub source: Option<String>,
    #[serde(flatten)]
    pub values: BTreeMap<String, f64>,
}

/// Field names of [`Latencies`], in order.
pub const FIELDS: &[&str] = &[
    "l1_hit",
    "shared_load",
    "l2_hit",
    "dram",
    "const",
    "int",
    "int_mul",
    "fp32",
    "fp64",
    "special",
    "convert",
    "int_div",
    "fp32_per_clk_sm",
    "fp64_per_clk_sm",
    "int_per_clk_sm",
    "sfu_per_clk_sm",
];

impl Latencies {
    /// The value of a field by name (`FIELDS`).
    pub fn get(&self, field: &str) -> Option<f64> {
        self.clone().slot(field).map(|v| *v)
    }

    fn slot(&mut self, field: &str) -> Option<&mut f64> {
        Some(match field {
            "l1_hit" => &mut self.l1_hit,
            "shared_load" => &mut self.shared_load,
            "l2_hit" => &mut self.l2_hit,
            "dram" => &mut self.dram,
            "const" => &mut self.const_,
            "int" => &mut self.int,
            "int_mul" => &mut self.int_mul,
            "fp32" => &mut self.fp32,
            "fp64" => &mut self.fp64,
            "special" => &mut self.special,
            "convert" => &mut self.convert,
            "int_div" => &mut self.int_div,
            "fp32_per_clk_sm" => &mut self.fp32_per_clk_sm,
            "fp64_per_clk_sm" => &mut self.fp64_per_clk_sm,
            "int_per_clk_sm" => &mut self.int_per_clk_sm,
            "sfu_per_clk_sm" => &mut self.sfu_per_clk_sm,
            _ => return None,
        })
    }
}

impl LatencyOverride {
    /// Checks names and values; errors name `latencies.<field>`.
    pub fn validate(&self) -> Result<()> {
        for (k, v) in &self.values {
            if !FIELDS.contains(&k.as_str()) {
                return Err(Error::invalid(
                    format!("latencies.{k}"),
                    format!("is not a latency field; known: {}", FIELDS.join(", ")),
                ));
            }
            crate::error::positive(&format!("latencies.{k}"), *v)?;
        }
        if !self.values.is_empty() && self.source.as_deref().is_none_or(|s| s.trim().is_empty()) {
            return Err(Error::invalid(
                "latencies.source",
                "must say where the overriding latencies come from",
            ));
        }
        Ok(())
    }
}

fn table() -> &'static [ArchRow] {
    static T: OnceLock<Vec<ArchRow>> = OnceLock::new();
    T.get_or_init(|| {
        let text = include_str!("../../../../data/latencies.toml");
        // The embedded table is checked by a unit test; an unreadable one yields no rows.
        toml::from_str::<Table>(text)
            .map(|t| t.arch)
            .unwrap_or_default()
    })
}

/// The latencies a model should use for a device, with one source line per value group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resolved {
    pub values: Latencies,
    pub architecture: String,
    /// Source of each field.
    pub sources: BTreeMap<String, String>,
}

/// The architecture defaults for a compute capability.
pub fn defaults(cc: ComputeCapability) -> Result<Resolved> {
    let key = cc.to_string();
    let row = table()
        .iter()
        .find(|r| r.compute_capabilities.contains(&key))
        .ok_or_else(|| {
            Error::missing(
                "latencies",
                format!("no latency defaults for compute capability {key}; add a [latencies] table with every field to the device file"),
            )
        })?;
    let mut sources = BTreeMap::new();
    for f in FIELDS {
        let mark = if row.estimated.iter().any(|e| e == f) {
            " (estimated by analogy: no measurement for this architecture)"
        } else {
            ""
        };
        sources.insert((*f).to_string(), format!("{}{mark}", row.source));
    }
    Ok(Resolved {
        values: row.values.clone(),
        architecture: row.name.clone(),
        sources,
    })
}

/// The latencies for a device: architecture defaults with the device file's overrides.
pub fn for_device(device: &Device) -> Result<Resolved> {
    let mut r = defaults(device.compute_capability)?;
    if let Some(o) = &device.latencies {
        o.validate()?;
        for (k, v) in &o.values {
            if let Some(slot) = r.values.slot(k) {
                *slot = *v;
                // A per-field `[sources]` entry (an importer's file and line) wins.
                let src = device
                    .sources
                    .get(&format!("latencies.{k}"))
                    .or(o.source.as_ref())
                    .cloned()
                    .unwrap_or_default();
                r.sources
                    .insert(k.clone(), format!("device file {}: {src}", device.name));
            }
        }
    }
    Ok(r)
}

/// One note per value the device file overrides: the value and where it comes from, for a
/// model's prediction notes (empty when the device file has no `[latencies]` table).
pub fn override_notes(device: &Device, resolved: &Resolved) -> Vec<String> {
    let Some(o) = &device.latencies else {
        return Vec::new();
    };
    FIELDS
        .iter()
        .filter(|f| o.values.contains_key(**f))
        .filter_map(|f| {
            let v = resolved.values.get(f)?;
            let src = resolved.sources.get(*f)?;
            let unit = if f.ends_with("_per_clk_sm") {
                "per clock per SM"
            } else {
                "cycles"
            };
            Some(format!("latency {f} = {v} {unit} from {src}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_compute_capability_has_defaults() {
        assert!(table().len() >= 12, "embedded table did not parse");
        for cc in super::super::limits::known_compute_capabilities() {
            let r = defaults(cc).unwrap();
            assert!(r.values.dram > r.values.l2_hit && r.values.l2_hit > r.values.l1_hit);
            assert!(r.sources.values().all(|s| s.contains("arch_defaults.csv")));
        }
        // Volta row of shared/data/latencies/arch_defaults.csv: L1 30, shared 23, L2 212, DRAM 400.
        let v = defaults(ComputeCapability::new(7, 0)).unwrap().values;
        assert_eq!(
            (v.l1_hit, v.shared_load, v.l2_hit, v.dram),
            (30.0, 23.0, 212.0, 400.0)
        );
    }

    #[test]
    fn overrides_need_known_fields_and_a_source() {
        let mut o = LatencyOverride::default();
        o.values.insert("dram".into(), 350.0);
        assert!(o.validate().is_err());
        o.source = Some("my pointer chase".into());
        assert!(o.validate().is_ok());
        o.values.insert("dramm".into(), 1.0);
        assert!(o
            .validate()
            .unwrap_err()
            .to_string()
            .contains("latencies.dramm"));
    }
}
