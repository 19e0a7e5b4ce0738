//! A device's micro-benchmark profile: latencies in core-clock cycles measured on the real GPU at a
//! few warp counts (parra2016 section 4.5.3 and Table 4.3 for the Tesla K40), with their source.
//!
//! The profile is data attached to a catalogue device (`[microbenchmarks]` in a device file). This
//! module stores and validates it and answers "what latency should a model use for X". It does not
//! run benchmarks and does not derive parameters (eq 4.25, 4.27, 4.28 are in `model::microbench`).
//!
//! File form:
//! ```toml
//! [microbenchmarks]
//! source = "where the numbers come from"
//! warps = [1, 32]                       # the warp counts the columns were measured with
//! [microbenchmarks.latency_cycles]
//! global_memory_read = [402, 395]       # one value per entry of `warps`
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Latency names the analytical models look up (others may be present and are shown as data).
pub const GLOBAL_MEMORY_READ: &str = "global_memory_read";
pub const SHARED_MEMORY_READ: &str = "shared_memory_read";
pub const L1_CACHE: &str = "l1_cache";
pub const L2_CACHE: &str = "l2_cache";
pub const DEPARTURE_DELAY: &str = "departure_delay";

/// Micro-benchmarked latencies of one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Microbenchmarks {
    /// Where the measurements come from.
    pub source: String,
    /// Warps per launch for each column of `latency_cycles`, ascending.
    pub warps: Vec<u32>,
    /// Latency in core-clock cycles, one value per entry of `warps`, by benchmark name.
    pub latency_cycles: BTreeMap<String, Vec<f64>>,
}

impl Microbenchmarks {
    /// Checks the shape and values; errors name `microbenchmarks.<field>`.
    pub fn validate(&self) -> Result<()> {
        if self.source.trim().is_empty() {
            return Err(Error::invalid(
                "microbenchmarks.source",
                "must say where the measurements come from",
            ));
        }
        if self.warps.is_empty() {
            return Err(Error::invalid(
                "microbenchmarks.warps",
                "must list at least one warp count",
            ));
        }
        if self.warps[0] == 0 || self.warps.windows(2).any(|w| w[0] >= w[1]) {
            return Err(Error::invalid(
                "microbenchmarks.warps",
                "must be warp counts of at least 1 in ascending order",
            ));
        }
        for (name, values) in &self.latency_cycles {
            let field = format!("microbenchmarks.latency_cycles.{name}");
            if values.len() != self.warps.len() {
                return Err(Error::invalid(
                    field,
                    format!(
                        "has {} values but `warps` has {} entries",
                        values.len(),
                        self.warps.len()
                    ),
                ));
            }
            for v in values {
                crate::error::non_negative(&field, *v)?;
            }
        }
        Ok(())
    }

    /// The latency a model uses for `name`: the mean over the measured warp counts.
    ///
    /// parra2016's worked example takes values between its two columns (DRAM_lat 399 for 402/395,
    /// hit_lat_l2 214 for 215.5/212), i.e. about their mean; we use the unrounded mean.
    pub fn representative_cycles(&self, name: &str) -> Option<f64> {
        let values = self.latency_cycles.get(name)?;
        if values.is_empty() {
            return None;
        }
        Some(values.iter().sum::<f64>() / values.len() as f64)
    }
}
