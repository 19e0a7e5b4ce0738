//! GPUs as the models see them: product values, compute-capability limits and their sources.
//!
//! A device description has three layers (after PPT-GPU): the product (SM count, cores, clocks,
//! bandwidth, caches), the compute-capability limits (threads, warps, blocks, registers, shared
//! memory, allocation units; `data/compute_capabilities.toml`) and model parameters attached to a
//! device (puchala2022's `t_p`/`t_m`, micro-benchmark profiles). Every value records its source.
//!
//! This module reads and validates device files and holds the embedded catalogue. It does not
//! compute anything about kernels except occupancy (`occupancy`), which depends only on the limits.

pub mod catalogue;
pub mod dram;
pub mod import;
pub mod latencies;
pub mod limits;
pub mod measured;
pub mod microbenchmarks;
pub mod occupancy;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
pub use limits::{ComputeCapabilityLimits, LimitsOverride};
pub use measured::{Measured, MeasuredValue};
pub use microbenchmarks::Microbenchmarks;

/// A compute capability such as 8.6.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ComputeCapability {
    pub major: u32,
    pub minor: u32,
}

impl ComputeCapability {
    pub const fn new(major: u32, minor: u32) -> Self {
        Self { major, minor }
    }

    /// Parses "8.6" (also "86" is rejected: the dot is required to tell 10.0 from 1.0).
    pub fn parse(text: &str) -> Result<Self> {
        let bad = || {
            Error::invalid(
                "compute_capability",
                format!("expected MAJOR.MINOR such as \"8.6\", got \"{text}\""),
            )
        };
        let (major, minor) = text.trim().split_once('.').ok_or_else(bad)?;
        let major: u32 = major.parse().map_err(|_| bad())?;
        let minor: u32 = minor.parse().map_err(|_| bad())?;
        Ok(Self { major, minor })
    }

    /// Major * 10 + minor, as NVIDIA's headers compare them.
    pub fn as_number(&self) -> u32 {
        self.major * 10 + self.minor
    }
}

impl fmt::Display for ComputeCapability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The `t_p`/`t_m` pair of puchala2022 for one algorithm on one device (paper Table 3).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PuchalaParams {
    /// Launch preparation time, microseconds.
    pub t_p_us: f64,
    /// Cycles a core package is busy issuing one memory instruction.
    pub t_m_cycles: f64,
}

/// A device file as written on disk (`data/devices/*.toml` or a user's `--device-file`).
///
/// Unknown keys are errors, so that a typo never silently falls back to a default.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceFile {
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    pub architecture: String,
    #[serde(default)]
    pub chip: Option<String>,
    pub compute_capability: String,
    pub sm_count: u32,
    pub cores_per_sm: u32,
    /// Defaults to the compute capability's value.
    #[serde(default)]
    pub warp_schedulers_per_sm: Option<u32>,
    pub base_clock_mhz: f64,
    pub boost_clock_mhz: f64,
    /// The clock models use to turn cycles into time; defaults to the boost clock.
    #[serde(default)]
    pub core_clock_mhz: Option<f64>,
    pub memory_bandwidth_gbs: f64,
    /// DRAM technology, a name of `data/dram.toml` (for the row-activation limit).
    #[serde(default)]
    pub memory_type: Option<String>,
    /// Total width of the memory interface, bits.
    #[serde(default)]
    pub memory_bus_bits: Option<u32>,
    #[serde(default)]
    pub memory_size_bytes: Option<u64>,
    pub l2_cache_bytes: u64,
    /// Combined L1 data cache and shared memory per SM.
    pub l1_shared_per_sm_bytes: u64,
    /// Where the values come from, unless `sources` names a field.
    pub source: String,
    /// Per-field sources (key: a field name, or `limits.<field>`, `latencies.<field>`,
    /// `measured.<field>`, `microbenchmarks.<name>` for the values of those tables).
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
    /// Overrides of the compute-capability limits.
    #[serde(default)]
    pub limits: LimitsOverride,
    /// puchala2022 `t_p`/`t_m` per algorithm (key: the built-in kernel name, e.g. `dwt-matrix`).
    #[serde(default)]
    pub puchala: BTreeMap<String, PuchalaParams>,
    /// Micro-benchmarked latencies (parra2016 Table 4.3 form), with their own source.
    #[serde(default)]
    pub microbenchmarks: Option<Microbenchmarks>,
    /// Free-form notes shown by `device show`.
    #[serde(default)]
    pub notes: Vec<String>,
    /// Latency overrides for the trace model (`latencies::FIELDS`), with their source.
    #[serde(default)]
    pub latencies: Option<latencies::LatencyOverride>,
    /// Values measured on the GPU that override models' per-architecture defaults
    /// (launch overhead, achievable DRAM bandwidth, L2 bandwidth, atomic throughput).
    #[serde(default)]
    pub measured: Option<Measured>,
}

/// A device ready for the models: the file's values with the compute-capability limits resolved.
#[derive(Debug, Clone, Serialize)]
pub struct Device {
    pub name: String,
    pub aliases: Vec<String>,
    pub architecture: String,
    pub chip: Option<String>,
    #[serde(serialize_with = "serialize_cc")]
    pub compute_capability: ComputeCapability,
    pub sm_count: u32,
    pub cores_per_sm: u32,
    pub warp_schedulers_per_sm: u32,
    pub base_clock_mhz: f64,
    pub boost_clock_mhz: f64,
    /// The one clock that turns cycles into time.
    pub core_clock_mhz: f64,
    pub memory_bandwidth_gbs: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_bus_bits: Option<u32>,
    pub memory_size_bytes: Option<u64>,
    pub l2_cache_bytes: u64,
    pub l1_shared_per_sm_bytes: u64,
    pub limits: ComputeCapabilityLimits,
    pub puchala: BTreeMap<String, PuchalaParams>,
    /// Micro-benchmarked latencies, when measured for this device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub microbenchmarks: Option<Microbenchmarks>,
    /// Source of every value, by field name.
    pub sources: BTreeMap<String, String>,
    pub notes: Vec<String>,
    /// Latency overrides of the device file (the trace model's defaults are per architecture).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latencies: Option<latencies::LatencyOverride>,
    /// Measured device-level values (`[measured]`); see [`Device::measured_value`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured: Option<Measured>,
}

fn serialize_cc<S: serde::Serializer>(cc: &ComputeCapability, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&cc.to_string())
}

impl Device {
    /// Parses and validates a device file's text; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self> {
        let file: DeviceFile = toml::from_str(text).map_err(|e| {
            Error::file(
                origin,
                e.message().to_string() + &toml_position(text, e.span()),
            )
        })?;
        Self::from_file(file).map_err(|e| Error::file(origin, e))
    }

    /// Reads a user's device file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = crate::error::read_text_file(path, "a device file")?;
        Self::from_toml(&text, &path.display().to_string())
    }

    /// Resolves the compute-capability limits and checks every value.
    pub fn from_file(file: DeviceFile) -> Result<Self> {
        let cc = ComputeCapability::parse(&file.compute_capability)?;
        let base = limits::for_compute_capability(cc)?;
        let limits = base.with_overrides(&file.limits)?;
        let name = file.name.trim().to_string();
        if name.is_empty() {
            return Err(Error::invalid("name", "must not be empty"));
        }
        for (field, value) in [
            ("sm_count", file.sm_count),
            ("cores_per_sm", file.cores_per_sm),
        ] {
            if value == 0 {
                return Err(Error::invalid(field, "must be at least 1"));
            }
        }
        // Physical ranges, wide enough for any GPU past or planned: a clock of 1e-300 MHz or a
        // bandwidth of 1e300 GB/s is a typo, and would turn every time into nonsense.
        use crate::error::within;
        within("base_clock_mhz", file.base_clock_mhz, 1.0, 100_000.0, "MHz")?;
        within(
            "boost_clock_mhz",
            file.boost_clock_mhz,
            1.0,
            100_000.0,
            "MHz",
        )?;
        let core_clock_mhz = within(
            "core_clock_mhz",
            file.core_clock_mhz.unwrap_or(file.boost_clock_mhz),
            1.0,
            100_000.0,
            "MHz",
        )?;
        within(
            "memory_bandwidth_gbs",
            file.memory_bandwidth_gbs,
            0.01,
            1_000_000.0,
            "GB/s",
        )?;
        if let Some(t) = &file.memory_type {
            if dram::lookup(t).is_none() {
                return Err(Error::invalid(
                    "memory_type",
                    format!(
                        "`{t}` is not a known memory type (one of {})",
                        dram::type_names().join(", ")
                    ),
                ));
            }
        }
        if let Some(bits) = file.memory_bus_bits {
            within("memory_bus_bits", f64::from(bits), 8.0, 65_536.0, "bits")?;
        }
        if file.sm_count > 1_000_000 || file.cores_per_sm > 1_000_000 {
            return Err(Error::invalid(
                "sm_count",
                "sm_count and cores_per_sm must be at most 1000000",
            ));
        }
        for (algorithm, p) in &file.puchala {
            crate::error::non_negative(&format!("puchala.{algorithm}.t_p_us"), p.t_p_us)?;
            crate::error::non_negative(&format!("puchala.{algorithm}.t_m_cycles"), p.t_m_cycles)?;
        }

        let mut sources = BTreeMap::new();
        for field in PRODUCT_FIELDS {
            sources.insert((*field).to_string(), file.source.clone());
        }
        if file.warp_schedulers_per_sm.is_none() {
            // Defaulted from the compute-capability table, so that table is the source.
            sources.insert("warp_schedulers_per_sm".to_string(), base.source.clone());
        }
        for field in limits::LIMIT_FIELDS {
            let key = format!("limits.{field}");
            let src = if file.limits.is_set(field) {
                file.sources
                    .get(&key)
                    .cloned()
                    .unwrap_or_else(|| file.source.clone())
            } else {
                base.source.clone()
            };
            sources.insert(key, src);
        }
        for (k, v) in &file.sources {
            let known = PRODUCT_FIELDS.contains(&k.as_str())
                || k.strip_prefix("limits.")
                    .is_some_and(|f| limits::LIMIT_FIELDS.contains(&f))
                || k.starts_with("puchala")
                || k.starts_with("microbenchmarks")
                || k.strip_prefix("latencies.")
                    .is_some_and(|f| latencies::FIELDS.contains(&f))
                || k.strip_prefix("measured.")
                    .is_some_and(|f| measured::FIELDS.contains(&f));
            if !known {
                return Err(Error::invalid(
                    format!("sources.{k}"),
                    "names no field of the device description",
                ));
            }
            sources.insert(k.clone(), v.clone());
        }

        if let Some(l) = &file.latencies {
            l.validate()?;
            for field in l.values.keys() {
                sources
                    .entry(format!("latencies.{field}"))
                    .or_insert_with(|| l.source.clone().unwrap_or_default());
            }
        }
        if let Some(m) = &file.measured {
            m.validate(&file.sources)?;
            for (field, v) in m.resolved(&file.sources) {
                sources.insert(format!("measured.{field}"), v.source);
            }
        }
        if let Some(m) = &file.microbenchmarks {
            m.validate()?;
            for bench in m.latency_cycles.keys() {
                sources
                    .entry(format!("microbenchmarks.{bench}"))
                    .or_insert_with(|| m.source.clone());
            }
        }

        // Names reach terminals: control characters in them are escaped once, here.
        Ok(Device {
            name: crate::error::escape_control(&name),
            aliases: file
                .aliases
                .iter()
                .map(|a| crate::error::escape_control(a))
                .collect(),
            architecture: file.architecture,
            chip: file.chip,
            compute_capability: cc,
            sm_count: file.sm_count,
            cores_per_sm: file.cores_per_sm,
            warp_schedulers_per_sm: file
                .warp_schedulers_per_sm
                .unwrap_or(limits.warp_schedulers_per_sm),
            base_clock_mhz: file.base_clock_mhz,
            boost_clock_mhz: file.boost_clock_mhz,
            core_clock_mhz,
            memory_bandwidth_gbs: file.memory_bandwidth_gbs,
            memory_type: file.memory_type,
            memory_bus_bits: file.memory_bus_bits,
            memory_size_bytes: file.memory_size_bytes,
            l2_cache_bytes: file.l2_cache_bytes,
            l1_shared_per_sm_bytes: file.l1_shared_per_sm_bytes,
            limits,
            puchala: file.puchala,
            microbenchmarks: file.microbenchmarks,
            sources,
            notes: file.notes,
            latencies: file.latencies,
            measured: file.measured,
        })
    }

    /// A measured device-level value (`measured::FIELDS`) with its source, when the device
    /// file has one. Models use it instead of their per-architecture default.
    pub fn measured_value(&self, field: &str) -> Option<MeasuredValue> {
        let value = self.measured.as_ref()?.get(field)?;
        let source = self
            .sources
            .get(&format!("measured.{field}"))
            .cloned()
            .unwrap_or_default();
        Some(MeasuredValue { value, source })
    }

    /// The DRAM row-activation limit, when the memory type has a timing source and the bus
    /// width is known.
    pub fn dram_activation(&self) -> Option<dram::Activation> {
        dram::activation(self.memory_type.as_deref()?, self.memory_bus_bits?)
    }

    /// Converts core-clock cycles to microseconds: the one place where cycles become time.
    pub fn cycles_to_us(&self, cycles: f64) -> f64 {
        cycles / self.core_clock_mhz
    }

    /// This device timed at `mhz` instead of its core clock when a clock is given (`None`
    /// keeps the description's): the clock a user read off their own GPU, say a laptop part's
    /// or one that boosts above its rated clock. `given_as` names the input it came from, in
    /// errors and as the clock's source (the notes of a PTX prediction say it). The base and
    /// boost clocks stay as the description gives them.
    pub fn at_core_clock(mut self, mhz: Option<f64>, given_as: &str) -> Result<Self> {
        let Some(mhz) = mhz else {
            return Ok(self);
        };
        self.core_clock_mhz = crate::error::within(given_as, mhz, 1.0, 100_000.0, "MHz")?;
        let source = format!("given with {given_as}");
        self.sources.insert("core_clock_mhz".to_string(), source);
        Ok(self)
    }

    /// Whether `name` is this device's name or one of its aliases (case-insensitive).
    pub fn answers_to(&self, name: &str) -> bool {
        let n = normalize(name);
        normalize(&self.name) == n || self.aliases.iter().any(|a| normalize(a) == n)
    }

    /// The flat summary printed by `kerneltime devices --json`.
    pub fn summary(&self) -> DeviceSummary {
        DeviceSummary {
            name: self.name.clone(),
            aliases: self.aliases.clone(),
            architecture: self.architecture.clone(),
            compute_capability: self.compute_capability.to_string(),
            sm_count: self.sm_count,
            cores_per_sm: self.cores_per_sm,
            warp_schedulers_per_sm: self.warp_schedulers_per_sm,
            base_clock_mhz: self.base_clock_mhz,
            boost_clock_mhz: self.boost_clock_mhz,
            core_clock_mhz: self.core_clock_mhz,
            memory_bandwidth_gbs: self.memory_bandwidth_gbs,
            memory_type: self.memory_type.clone(),
            memory_bus_bits: self.memory_bus_bits,
            l2_cache_bytes: self.l2_cache_bytes,
            l1_shared_per_sm_bytes: self.l1_shared_per_sm_bytes,
            registers_per_sm: self.limits.registers_per_sm,
            max_registers_per_thread: self.limits.max_registers_per_thread,
            max_threads_per_block: self.limits.max_threads_per_block,
            max_threads_per_sm: self.limits.max_threads_per_sm,
            max_warps_per_sm: self.limits.max_warps_per_sm,
            max_blocks_per_sm: self.limits.max_blocks_per_sm,
            shared_memory_per_sm_bytes: self.limits.shared_memory_per_sm_bytes,
            shared_memory_per_block_optin_bytes: self.limits.shared_memory_per_block_optin_bytes,
            reserved_shared_memory_per_block_bytes: self
                .limits
                .reserved_shared_memory_per_block_bytes,
        }
    }
}

/// Product fields of a device file (those that `source` covers).
pub const PRODUCT_FIELDS: &[&str] = &[
    "name",
    "architecture",
    "chip",
    "compute_capability",
    "sm_count",
    "cores_per_sm",
    "warp_schedulers_per_sm",
    "base_clock_mhz",
    "boost_clock_mhz",
    "core_clock_mhz",
    "memory_bandwidth_gbs",
    "memory_type",
    "memory_bus_bits",
    "memory_size_bytes",
    "l2_cache_bytes",
    "l1_shared_per_sm_bytes",
];

/// One line of `kerneltime devices`.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceSummary {
    pub name: String,
    pub aliases: Vec<String>,
    pub architecture: String,
    pub compute_capability: String,
    pub sm_count: u32,
    pub cores_per_sm: u32,
    pub warp_schedulers_per_sm: u32,
    pub base_clock_mhz: f64,
    pub boost_clock_mhz: f64,
    pub core_clock_mhz: f64,
    pub memory_bandwidth_gbs: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_bus_bits: Option<u32>,
    pub l2_cache_bytes: u64,
    pub l1_shared_per_sm_bytes: u64,
    pub registers_per_sm: u32,
    pub max_registers_per_thread: u32,
    pub max_threads_per_block: u32,
    pub max_threads_per_sm: u32,
    pub max_warps_per_sm: u32,
    pub max_blocks_per_sm: u32,
    pub shared_memory_per_sm_bytes: u32,
    pub shared_memory_per_block_optin_bytes: u32,
    pub reserved_shared_memory_per_block_bytes: u32,
}

/// Lower-case, with spaces, dashes and underscores removed: "RTX-2080 ti" == "rtx2080ti".
pub fn normalize(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, ' ' | '-' | '_'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// " (line L, column C)" for a TOML error span, or "" when unknown.
pub(crate) fn toml_position(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    match span {
        Some(r) if r.start <= text.len() => {
            let before = &text[..r.start];
            let line = before.matches('\n').count() + 1;
            let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!(" (line {line}, column {col})")
        }
        _ => String::new(),
    }
}
