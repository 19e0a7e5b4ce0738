//! Compute-capability limits: what every GPU of one compute capability shares.
//!
//! The table lives in `data/compute_capabilities.toml` (embedded). A device file may override any
//! limit in its `[limits]` table, with a source. This module only stores and looks up limits;
//! occupancy arithmetic is in `occupancy`.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::ComputeCapability;
use crate::error::{Error, Result};

/// Limits shared by all GPUs of a compute capability (CUDA programming guide, cuda_occupancy.h).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComputeCapabilityLimits {
    pub max_threads_per_block: u32,
    pub max_threads_per_sm: u32,
    pub max_warps_per_sm: u32,
    pub max_blocks_per_sm: u32,
    pub registers_per_sm: u32,
    pub registers_per_block: u32,
    pub max_registers_per_thread: u32,
    /// Registers are allocated in units of this many (per warp).
    pub register_allocation_unit: u32,
    /// "warp" (per-warp allocation) or "block".
    pub register_allocation_granularity: String,
    /// Warps are allocated in groups of this many when registers are counted.
    pub warp_allocation_granularity: u32,
    pub shared_memory_per_sm_bytes: u32,
    pub shared_memory_per_block_bytes: u32,
    pub shared_memory_per_block_optin_bytes: u32,
    pub reserved_shared_memory_per_block_bytes: u32,
    pub shared_memory_allocation_unit_bytes: u32,
    pub warp_schedulers_per_sm: u32,
    /// Shared-memory sizes (KiB) the L1/shared split can be configured to.
    pub shared_memory_carveout_kb: Vec<u32>,
    pub source: String,
}

/// Names of the limit fields (for sources and overrides).
pub const LIMIT_FIELDS: &[&str] = &[
    "max_threads_per_block",
    "max_threads_per_sm",
    "max_warps_per_sm",
    "max_blocks_per_sm",
    "registers_per_sm",
    "registers_per_block",
    "max_registers_per_thread",
    "register_allocation_unit",
    "register_allocation_granularity",
    "warp_allocation_granularity",
    "shared_memory_per_sm_bytes",
    "shared_memory_per_block_bytes",
    "shared_memory_per_block_optin_bytes",
    "reserved_shared_memory_per_block_bytes",
    "shared_memory_allocation_unit_bytes",
    "warp_schedulers_per_sm",
    "shared_memory_carveout_kb",
];

/// A device file's `[limits]` table: any subset of the limits.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsOverride {
    pub max_threads_per_block: Option<u32>,
    pub max_threads_per_sm: Option<u32>,
    pub max_warps_per_sm: Option<u32>,
    pub max_blocks_per_sm: Option<u32>,
    pub registers_per_sm: Option<u32>,
    pub registers_per_block: Option<u32>,
    pub max_registers_per_thread: Option<u32>,
    pub register_allocation_unit: Option<u32>,
    pub register_allocation_granularity: Option<String>,
    pub warp_allocation_granularity: Option<u32>,
    pub shared_memory_per_sm_bytes: Option<u32>,
    pub shared_memory_per_block_bytes: Option<u32>,
    pub shared_memory_per_block_optin_bytes: Option<u32>,
    pub reserved_shared_memory_per_block_bytes: Option<u32>,
    pub shared_memory_allocation_unit_bytes: Option<u32>,
    pub warp_schedulers_per_sm: Option<u32>,
    pub shared_memory_carveout_kb: Option<Vec<u32>>,
}

impl LimitsOverride {
    /// Whether the named limit is overridden.
    pub fn is_set(&self, field: &str) -> bool {
        match field {
            "max_threads_per_block" => self.max_threads_per_block.is_some(),
            "max_threads_per_sm" => self.max_threads_per_sm.is_some(),
            "max_warps_per_sm" => self.max_warps_per_sm.is_some(),
            "max_blocks_per_sm" => self.max_blocks_per_sm.is_some(),
            "registers_per_sm" => self.registers_per_sm.is_some(),
            "registers_per_block" => self.registers_per_block.is_some(),
            "max_registers_per_thread" => self.max_registers_per_thread.is_some(),
            "register_allocation_unit" => self.register_allocation_unit.is_some(),
            "register_allocation_granularity" => self.register_allocation_granularity.is_some(),
            "warp_allocation_granularity" => self.warp_allocation_granularity.is_some(),
            "shared_memory_per_sm_bytes" => self.shared_memory_per_sm_bytes.is_some(),
            "shared_memory_per_block_bytes" => self.shared_memory_per_block_bytes.is_some(),
            "shared_memory_per_block_optin_bytes" => {
                self.shared_memory_per_block_optin_bytes.is_some()
            }
            "reserved_shared_memory_per_block_bytes" => {
                self.reserved_shared_memory_per_block_bytes.is_some()
            }
            "shared_memory_allocation_unit_bytes" => {
                self.shared_memory_allocation_unit_bytes.is_some()
            }
            "warp_schedulers_per_sm" => self.warp_schedulers_per_sm.is_some(),
            "shared_memory_carveout_kb" => self.shared_memory_carveout_kb.is_some(),
            _ => false,
        }
    }
}

impl ComputeCapabilityLimits {
    /// These limits with a device file's overrides applied and checked.
    pub fn with_overrides(&self, o: &LimitsOverride) -> Result<Self> {
        let mut l = self.clone();
        macro_rules! set {
            ($($f:ident),*) => { $( if let Some(v) = o.$f.clone() { l.$f = v; } )* };
        }
        set!(
            max_threads_per_block,
            max_threads_per_sm,
            max_warps_per_sm,
            max_blocks_per_sm,
            registers_per_sm,
            registers_per_block,
            max_registers_per_thread,
            register_allocation_unit,
            register_allocation_granularity,
            warp_allocation_granularity,
            shared_memory_per_sm_bytes,
            shared_memory_per_block_bytes,
            shared_memory_per_block_optin_bytes,
            reserved_shared_memory_per_block_bytes,
            shared_memory_allocation_unit_bytes,
            warp_schedulers_per_sm,
            shared_memory_carveout_kb
        );
        l.validate()?;
        Ok(l)
    }

    fn validate(&self) -> Result<()> {
        for (name, v) in [
            ("limits.max_threads_per_block", self.max_threads_per_block),
            ("limits.max_threads_per_sm", self.max_threads_per_sm),
            ("limits.max_warps_per_sm", self.max_warps_per_sm),
            ("limits.max_blocks_per_sm", self.max_blocks_per_sm),
            ("limits.registers_per_sm", self.registers_per_sm),
            ("limits.registers_per_block", self.registers_per_block),
            (
                "limits.max_registers_per_thread",
                self.max_registers_per_thread,
            ),
            (
                "limits.register_allocation_unit",
                self.register_allocation_unit,
            ),
            (
                "limits.warp_allocation_granularity",
                self.warp_allocation_granularity,
            ),
            (
                "limits.shared_memory_allocation_unit_bytes",
                self.shared_memory_allocation_unit_bytes,
            ),
            ("limits.warp_schedulers_per_sm", self.warp_schedulers_per_sm),
        ] {
            if v == 0 {
                return Err(Error::invalid(name, "must be at least 1"));
            }
        }
        if !matches!(
            self.register_allocation_granularity.as_str(),
            "warp" | "block"
        ) {
            return Err(Error::invalid(
                "limits.register_allocation_granularity",
                format!(
                    "must be \"warp\" or \"block\", got \"{}\"",
                    self.register_allocation_granularity
                ),
            ));
        }
        Ok(())
    }
}

fn table() -> &'static BTreeMap<String, ComputeCapabilityLimits> {
    static TABLE: OnceLock<BTreeMap<String, ComputeCapabilityLimits>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let text = include_str!("../../../../data/compute_capabilities.toml");
        // The embedded table is checked by the test suite; a broken table is a build defect.
        toml::from_str(text).expect("data/compute_capabilities.toml is valid")
    })
}

/// Every compute capability the table knows, ascending.
pub fn known_compute_capabilities() -> Vec<ComputeCapability> {
    let mut v: Vec<_> = table()
        .keys()
        .filter_map(|k| ComputeCapability::parse(k).ok())
        .collect();
    v.sort();
    v
}

/// The limits of one compute capability.
pub fn for_compute_capability(cc: ComputeCapability) -> Result<ComputeCapabilityLimits> {
    let key = cc.to_string();
    let limits = table().get(&key).cloned().ok_or_else(|| {
        let known: Vec<String> = known_compute_capabilities()
            .iter()
            .map(|c| c.to_string())
            .collect();
        Error::invalid(
            "compute_capability",
            format!(
                "{key} is not in the compute-capability table (known: {}); give every limit in a [limits] table",
                known.join(", ")
            ),
        )
    })?;
    limits.validate()?;
    Ok(limits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_entry_is_consistent() {
        for cc in known_compute_capabilities() {
            let l = for_compute_capability(cc).unwrap();
            assert_eq!(l.max_warps_per_sm * 32, l.max_threads_per_sm, "{cc}");
            assert!(
                l.shared_memory_per_block_optin_bytes
                    >= l.shared_memory_per_block_bytes
                        .min(l.shared_memory_per_sm_bytes),
                "{cc}"
            );
            assert!(
                l.shared_memory_per_block_optin_bytes <= l.shared_memory_per_sm_bytes,
                "{cc}"
            );
        }
    }
}
