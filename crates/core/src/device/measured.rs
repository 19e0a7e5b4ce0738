//! Device-level values measured on the real GPU that have no place among the product values: the
//! optional `[measured]` table of a device file (written by `kerneltime device import` from a
//! micro-benchmark run, or by hand).
//!
//! Models that have per-architecture defaults for these quantities (launch overhead, achievable
//! DRAM bandwidth, L2 bandwidth, atomic throughput) take the device's measured value instead when
//! it is present, and say so with the value's source. This module stores, validates and looks up
//! the values; it does not decide how a model uses them and holds no defaults.
//!
//! File form (every value needs a source: the table's `source`, or a per-field entry
//! `"measured.<field>"` in the device file's `[sources]`, which wins):
//! ```toml
//! [measured]
//! source = "my micro-benchmark run, 2026-01-05"
//! launch_overhead_us = 4.8                 # empty-kernel launch, host call to completion
//! achievable_dram_bandwidth_gbs = 521.0    # streaming copy, 1e9 bytes per second
//! l2_bandwidth_gbs = 1661.0                # reads that hit L2, whole GPU
//! atomic_same_address_per_clk = 0.116      # global atomics to one address, per core clock, whole GPU
//! atomic_distinct_address_per_clk = 40.0   # global atomics to distinct addresses, per core clock
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The `[measured]` table of a device file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measured {
    /// Where the values come from, unless `[sources]` names a field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Host-observed time of an empty kernel launch until its completion, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_overhead_us: Option<f64>,
    /// DRAM bandwidth a streaming kernel reaches, GB/s (1e9 bytes per second).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achievable_dram_bandwidth_gbs: Option<f64>,
    /// Bandwidth of reads that hit in L2, whole GPU, GB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_bandwidth_gbs: Option<f64>,
    /// Global atomic operations on one address completed per core clock, whole GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atomic_same_address_per_clk: Option<f64>,
    /// Global atomic operations on distinct addresses completed per core clock, whole GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atomic_distinct_address_per_clk: Option<f64>,
}

/// Field names of [`Measured`] (without `source`), in order.
pub const FIELDS: &[&str] = &[
    "launch_overhead_us",
    "achievable_dram_bandwidth_gbs",
    "l2_bandwidth_gbs",
    "atomic_same_address_per_clk",
    "atomic_distinct_address_per_clk",
];

/// One measured value with the source it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasuredValue {
    pub value: f64,
    pub source: String,
}

impl Measured {
    /// The value of a field by name (`None` when absent or not a field).
    pub fn get(&self, field: &str) -> Option<f64> {
        match field {
            "launch_overhead_us" => self.launch_overhead_us,
            "achievable_dram_bandwidth_gbs" => self.achievable_dram_bandwidth_gbs,
            "l2_bandwidth_gbs" => self.l2_bandwidth_gbs,
            "atomic_same_address_per_clk" => self.atomic_same_address_per_clk,
            "atomic_distinct_address_per_clk" => self.atomic_distinct_address_per_clk,
            _ => None,
        }
    }

    /// Checks values and sources; `field_sources` is the device file's `[sources]` table.
    /// Errors name `measured.<field>`.
    pub fn validate(&self, field_sources: &BTreeMap<String, String>) -> Result<()> {
        let table_source = self.source.as_deref().filter(|s| !s.trim().is_empty());
        for field in FIELDS {
            let Some(v) = self.get(field) else { continue };
            let key = format!("measured.{field}");
            crate::error::positive(&key, v)?;
            let own = field_sources.get(&key).filter(|s| !s.trim().is_empty());
            if own.is_none() && table_source.is_none() {
                return Err(Error::invalid(
                    key,
                    "needs a source: set `source` in [measured] or this key in [sources]",
                ));
            }
        }
        Ok(())
    }

    /// Every present value with its source (per-field source first, then the table's).
    pub fn resolved(
        &self,
        field_sources: &BTreeMap<String, String>,
    ) -> BTreeMap<String, MeasuredValue> {
        let mut out = BTreeMap::new();
        for field in FIELDS {
            let Some(value) = self.get(field) else {
                continue;
            };
            let source = field_sources
                .get(&format!("measured.{field}"))
                .cloned()
                .or_else(|| self.source.clone())
                .unwrap_or_default();
            out.insert((*field).to_string(), MeasuredValue { value, source });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_needs_a_positive_number_and_a_source() {
        let mut m = Measured {
            launch_overhead_us: Some(5.0),
            ..Measured::default()
        };
        let none = BTreeMap::new();
        let e = m.validate(&none).unwrap_err().to_string();
        assert!(
            e.contains("measured.launch_overhead_us") && e.contains("source"),
            "{e}"
        );
        let mut own = BTreeMap::new();
        own.insert(
            "measured.launch_overhead_us".to_string(),
            "run.txt line 3".to_string(),
        );
        assert!(m.validate(&own).is_ok());
        m.source = Some("bench run".into());
        assert!(m.validate(&none).is_ok());
        m.l2_bandwidth_gbs = Some(0.0);
        let e = m.validate(&none).unwrap_err().to_string();
        assert!(e.contains("measured.l2_bandwidth_gbs"), "{e}");
    }

    #[test]
    fn per_field_sources_win_over_the_table_source() {
        let m = Measured {
            source: Some("table".into()),
            launch_overhead_us: Some(5.0),
            l2_bandwidth_gbs: Some(1600.0),
            ..Measured::default()
        };
        let mut own = BTreeMap::new();
        own.insert(
            "measured.l2_bandwidth_gbs".to_string(),
            "line 9".to_string(),
        );
        let r = m.resolved(&own);
        assert_eq!(r.len(), 2);
        assert_eq!(r["launch_overhead_us"].source, "table");
        assert_eq!(r["l2_bandwidth_gbs"].source, "line 9");
        assert_eq!(r["l2_bandwidth_gbs"].value, 1600.0);
    }
}
