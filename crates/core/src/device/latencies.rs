//! Per-architecture latencies, throughputs and memory-system constants the models charge: the
//! defaults of `data/latencies.toml` (embedded; every row cites where each value comes from, see
//! `docs/sources/arch-constants.md`) and the optional `[latencies]` table of a device file, which
//! overrides single values with its own source.
//!
//! A row covers one architecture and lists its compute capabilities; where a compute capability
//! of the row differs (Fermi 2.1, Kepler 3.0, Blackwell 10.3, ...), the row's `per_cc` table
//! overrides the values for that compute capability alone, with its own source. Values copied
//! from a neighbouring architecture for lack of a measurement are listed in `estimated` and
//! marked in the resolved sources.
//!
//! Units are in the field names: latencies in core-clock cycles, `*_per_clk_sm` per core clock
//! per SM, `*_per_clk` per core clock for the whole GPU, `*_us` microseconds. The core clock is
//! the device's `core_clock_mhz` (the boost clock for catalogue GPUs; Fermi's processor clock).
//!
//! Lookup and validation only; the models decide how to use the numbers.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::{ComputeCapability, Device};
use crate::error::{Error, Result};

/// The values of one architecture (or one compute capability of it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Latencies {
    /// L1 hit latency of a global load, cycles.
    pub l1_hit: f64,
    pub shared_load: f64,
    pub l2_hit: f64,
    pub dram: f64,
    /// A constant-bank operand (`c[bank][offset]` of an arithmetic instruction), cycles.
    #[serde(rename = "const")]
    pub const_: f64,
    /// A constant load at a register address (`LDC`, an indexed `ld.const`): a load through
    /// the constant cache, cycles to its result on a hit.
    pub const_ldc: f64,
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
    /// 32-bit integer multiply and multiply-add (`mul.lo`, `mad.lo`) SASS instructions per
    /// clock per SM (CUDA programming guide throughput table; below the add rate on 2.x and
    /// 3.x, where fewer lanes multiply).
    pub int_mul_per_clk_sm: f64,
    /// SASS instructions per 32-bit integer multiply: 1 where the hardware multiplies 32 bits
    /// (IMAD), 3 on 5.x and 6.x (XMAD, XMAD.MRG, XMAD.PSL: 16-bit multiplies).
    pub int_mul_instructions: f64,
    /// Special-function results (rcp, rsqrt, lg2, ex2, sin, cos) per clock per SM.
    pub sfu_per_clk_sm: f64,
    /// What one launch adds to a kernel's time on the GPU timeline: the time per launch of an
    /// empty kernel queued back to back in one stream, µs. It excludes the host API time of a
    /// lone launch that CUDA events around it also see (about 5 µs; see the sources document).
    pub launch_overhead_us: f64,
    /// Achievable over peak DRAM bandwidth for a streaming copy/triad kernel (0 < x <= 1).
    pub dram_efficiency: f64,
    /// L2 hit bandwidth of the whole GPU divided by its SM count, bytes per core clock per SM.
    pub l2_bytes_per_clk_sm: f64,
    /// atomicAdd (int32/fp32) results per core clock for the whole GPU when every thread hits
    /// one address (they serialise at one L2 slice).
    pub global_atomic_same_address_per_clk: f64,
    /// Global atomics to distinct, scattered addresses (one 32-byte L2 sector each), results per
    /// core clock per SM.
    pub global_atomic_distinct_per_clk_sm: f64,
    /// Shared-memory atomics without address conflicts, results per clock per SM.
    pub shared_atomic_per_clk_sm: f64,
    /// Cycles each further lane of a warp adds when it hits the same shared-memory word as
    /// another lane of the same atomic instruction (the conflicts serialise).
    pub shared_atomic_conflict_cycles: f64,
    /// Type conversions between 32-bit types (int <-> fp32, fp16 <-> fp32), results per clock
    /// per SM (CUDA programming guide, "all other type conversions").
    pub convert_per_clk_sm: f64,
    /// Type conversions from and to 64-bit types, results per clock per SM.
    pub convert64_per_clk_sm: f64,
    /// 32-bit integer shifts, results per clock per SM (CUDA programming guide throughput
    /// table, "32-bit integer shift").
    pub shift_per_clk_sm: f64,
    /// Compares, minimum and maximum, results per clock per SM (the throughput table's
    /// "compare, minimum, maximum").
    pub compare_per_clk_sm: f64,
    /// `__syncthreads()` (`bar.sync`) per thread per clock per SM (the programming guide's
    /// "Synchronization Instruction" throughput): a warp's barrier holds its scheduler's share
    /// for `32 / rate` of the SM's clocks.
    pub barrier_per_clk_sm: f64,
    /// 128-byte lines (cache tags) of one warp's global or local request the SM's load/store
    /// path handles per clock: a request that touches `k` lines holds it `k / rate` cycles (an
    /// uncoalesced request is replayed once per line).
    pub l1_lines_per_clk_sm: f64,
    /// Bytes the shared-memory banks deliver per clock per SM: a warp request of `k` 128-byte
    /// wavefronts (its bank-conflict ways) holds them `k x 128 / rate` cycles.
    pub shared_bytes_per_clk_sm: f64,
    /// Threads' shared-memory addresses the SM's load/store units handle per clock (the LD/ST
    /// unit count of the SM diagrams): a warp request of `n` active lanes holds the shared path
    /// at least `ceil(n / rate)` cycles, whatever its bank conflicts.
    pub shared_lanes_per_clk_sm: f64,
    /// Whether an ordinary `ld.global` (no `.nc`, default compiler flags) is cached in L1.
    pub global_loads_cached_in_l1: bool,
    /// Whether ordinary global loads can be cached in L1 when asked (`-Xptxas -dlcm=ca` or
    /// `ld.global.ca`); true where they are cached by default.
    pub global_l1_opt_in: bool,
    /// Whether shared memory and the L1 are one SRAM behind one load/store data path (Fermi,
    /// Kepler, Volta and later), so that shared wavefronts and global or local request lines
    /// queue on one path; Maxwell and Pascal have a dedicated shared memory.
    pub shared_on_l1_path: bool,
}

/// Numeric field names of [`Latencies`], in order.
pub const FIELDS: &[&str] = &[
    "l1_hit",
    "shared_load",
    "l2_hit",
    "dram",
    "const",
    "const_ldc",
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
    "int_mul_per_clk_sm",
    "int_mul_instructions",
    "sfu_per_clk_sm",
    "launch_overhead_us",
    "dram_efficiency",
    "l2_bytes_per_clk_sm",
    "global_atomic_same_address_per_clk",
    "global_atomic_distinct_per_clk_sm",
    "shared_atomic_per_clk_sm",
    "shared_atomic_conflict_cycles",
    "convert_per_clk_sm",
    "convert64_per_clk_sm",
    "shift_per_clk_sm",
    "compare_per_clk_sm",
    "barrier_per_clk_sm",
    "l1_lines_per_clk_sm",
    "shared_bytes_per_clk_sm",
    "shared_lanes_per_clk_sm",
];

/// Yes/no field names of [`Latencies`].
pub const FLAGS: &[&str] = &[
    "global_loads_cached_in_l1",
    "global_l1_opt_in",
    "shared_on_l1_path",
];

fn is_field(name: &str) -> bool {
    FIELDS.contains(&name) || FLAGS.contains(&name)
}

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
            "const_ldc" => &mut self.const_ldc,
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
            "int_mul_per_clk_sm" => &mut self.int_mul_per_clk_sm,
            "int_mul_instructions" => &mut self.int_mul_instructions,
            "sfu_per_clk_sm" => &mut self.sfu_per_clk_sm,
            "launch_overhead_us" => &mut self.launch_overhead_us,
            "dram_efficiency" => &mut self.dram_efficiency,
            "l2_bytes_per_clk_sm" => &mut self.l2_bytes_per_clk_sm,
            "global_atomic_same_address_per_clk" => &mut self.global_atomic_same_address_per_clk,
            "global_atomic_distinct_per_clk_sm" => &mut self.global_atomic_distinct_per_clk_sm,
            "shared_atomic_per_clk_sm" => &mut self.shared_atomic_per_clk_sm,
            "shared_atomic_conflict_cycles" => &mut self.shared_atomic_conflict_cycles,
            "convert_per_clk_sm" => &mut self.convert_per_clk_sm,
            "convert64_per_clk_sm" => &mut self.convert64_per_clk_sm,
            "shift_per_clk_sm" => &mut self.shift_per_clk_sm,
            "compare_per_clk_sm" => &mut self.compare_per_clk_sm,
            "barrier_per_clk_sm" => &mut self.barrier_per_clk_sm,
            "l1_lines_per_clk_sm" => &mut self.l1_lines_per_clk_sm,
            "shared_bytes_per_clk_sm" => &mut self.shared_bytes_per_clk_sm,
            "shared_lanes_per_clk_sm" => &mut self.shared_lanes_per_clk_sm,
            _ => return None,
        })
    }

    /// Every numeric field with its name.
    fn numbers(&self) -> Vec<(&'static str, f64)> {
        let mut copy = self.clone();
        FIELDS
            .iter()
            .map(|f| (*f, *copy.slot(f).expect("FIELDS lists the slots")))
            .collect()
    }

    /// Checks that every number is finite and above zero and that `dram_efficiency` is a
    /// fraction; `origin` prefixes the field in errors.
    fn validate(&self, origin: &str) -> Result<()> {
        for (f, v) in self.numbers() {
            check_value(&format!("{origin}.{f}"), f, v)?;
        }
        Ok(())
    }
}

fn check_value(name: &str, field: &str, v: f64) -> Result<()> {
    crate::error::positive(name, v)?;
    if field == "dram_efficiency" && v > 1.0 {
        return Err(Error::invalid(
            name,
            format!("is a fraction of the peak bandwidth and cannot exceed 1, got {v}"),
        ));
    }
    Ok(())
}

/// A device file's `[latencies]` table (or a row's `per_cc` table): any subset of the fields,
/// with a source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyOverride {
    /// Where the overriding numbers come from (required when any value is given).
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global_loads_cached_in_l1: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global_l1_opt_in: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_on_l1_path: Option<bool>,
    #[serde(flatten)]
    pub values: BTreeMap<String, f64>,
}

impl LatencyOverride {
    fn flags(&self) -> Vec<(&'static str, bool)> {
        let mut v = Vec::new();
        if let Some(b) = self.global_loads_cached_in_l1 {
            v.push(("global_loads_cached_in_l1", b));
        }
        if let Some(b) = self.global_l1_opt_in {
            v.push(("global_l1_opt_in", b));
        }
        if let Some(b) = self.shared_on_l1_path {
            v.push(("shared_on_l1_path", b));
        }
        v
    }

    /// Checks names and values; errors name `latencies.<field>`.
    pub fn validate(&self) -> Result<()> {
        self.validate_as("latencies")
    }

    fn validate_as(&self, origin: &str) -> Result<()> {
        for (k, v) in &self.values {
            if !FIELDS.contains(&k.as_str()) {
                return Err(Error::invalid(
                    format!("{origin}.{k}"),
                    format!(
                        "is not a latency field; known: {}, {}",
                        FIELDS.join(", "),
                        FLAGS.join(", ")
                    ),
                ));
            }
            check_value(&format!("{origin}.{k}"), k, *v)?;
        }
        let given = !self.values.is_empty() || !self.flags().is_empty();
        if given && self.source.as_deref().is_none_or(|s| s.trim().is_empty()) {
            return Err(Error::invalid(
                format!("{origin}.source"),
                "must say where the overriding latencies come from",
            ));
        }
        Ok(())
    }
}

/// The `per_cc` entry of a row: overrides for one compute capability of the architecture.
#[derive(Debug, Clone, Deserialize)]
struct CcOverride {
    /// Fields of this override copied from a neighbour for lack of a measurement.
    #[serde(default)]
    estimated: Vec<String>,
    #[serde(flatten)]
    values: LatencyOverride,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ArchRow {
    name: String,
    compute_capabilities: Vec<String>,
    #[serde(flatten)]
    values: Latencies,
    estimated: Vec<String>,
    /// Source of every field the `sources` table does not name.
    source: String,
    /// Per-field sources (key: a field name).
    #[serde(default)]
    sources: BTreeMap<String, String>,
    /// Overrides per compute capability (key: one of `compute_capabilities`).
    #[serde(default)]
    per_cc: BTreeMap<String, CcOverride>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    arch: Vec<ArchRow>,
}

/// Parses and checks a latency table (the text of `data/latencies.toml`).
fn parse_table(text: &str) -> Result<Vec<ArchRow>> {
    let table: Table =
        toml::from_str(text).map_err(|e| Error::invalid("data/latencies.toml", e.to_string()))?;
    for row in &table.arch {
        let at = format!("latencies.{}", row.name);
        row.values.validate(&at)?;
        for cc in &row.compute_capabilities {
            ComputeCapability::parse(cc)?;
        }
        for name in row.estimated.iter().chain(row.sources.keys()) {
            if !is_field(name) {
                return Err(Error::invalid(
                    format!("{at}.{name}"),
                    "is named in `estimated` or `sources` but is not a latency field",
                ));
            }
        }
        for (cc, o) in &row.per_cc {
            if !row.compute_capabilities.contains(cc) {
                return Err(Error::invalid(
                    format!("{at}.per_cc.{cc}"),
                    "is not one of the row's compute capabilities",
                ));
            }
            o.values.validate_as(&format!("{at}.per_cc.{cc}"))?;
            if let Some(e) = o.estimated.iter().find(|e| !is_field(e)) {
                return Err(Error::invalid(
                    format!("{at}.per_cc.{cc}.estimated"),
                    format!("names `{e}`, which is not a latency field"),
                ));
            }
        }
    }
    Ok(table.arch)
}

fn table() -> &'static [ArchRow] {
    static T: OnceLock<Vec<ArchRow>> = OnceLock::new();
    T.get_or_init(|| {
        let text = include_str!("../../../../data/latencies.toml");
        // The embedded table is checked by a unit test; an unreadable one yields no rows.
        parse_table(text).unwrap_or_default()
    })
}

/// The values a model should use for a device, with the source of each field.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resolved {
    pub values: Latencies,
    pub architecture: String,
    /// Source of each field (numeric and yes/no).
    pub sources: BTreeMap<String, String>,
    /// Fields whose value is an estimate copied from a neighbouring architecture.
    pub estimated: BTreeSet<String>,
}

const ESTIMATED_MARK: &str = " (estimated by analogy: no measurement for this architecture)";

impl Resolved {
    /// Applies an override; `origin` says whose it is ("device file X", "compute capability
    /// 2.1 of Fermi"); `estimated` lists the overriding fields that are estimates.
    fn apply(&mut self, o: &LatencyOverride, origin: &str, estimated: &[String]) {
        let src = o.source.clone().unwrap_or_default();
        let mut touched: Vec<String> = Vec::new();
        for (k, v) in &o.values {
            if let Some(slot) = self.values.slot(k) {
                *slot = *v;
                touched.push(k.clone());
            }
        }
        for (k, b) in o.flags() {
            match k {
                "global_loads_cached_in_l1" => self.values.global_loads_cached_in_l1 = b,
                "shared_on_l1_path" => self.values.shared_on_l1_path = b,
                _ => self.values.global_l1_opt_in = b,
            }
            touched.push(k.to_string());
        }
        for k in touched {
            let est = estimated.contains(&k);
            let mark = if est { ESTIMATED_MARK } else { "" };
            self.sources
                .insert(k.clone(), format!("{origin}: {src}{mark}"));
            if est {
                self.estimated.insert(k);
            } else {
                self.estimated.remove(&k);
            }
        }
    }
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
    defaults_of(row, &key)
}

/// A row's values for one of its compute capabilities (`key`, such as "3.5").
fn defaults_of(row: &ArchRow, key: &str) -> Result<Resolved> {
    let mut sources = BTreeMap::new();
    let mut estimated = BTreeSet::new();
    for f in FIELDS.iter().chain(FLAGS) {
        let est = row.estimated.iter().any(|e| e == f);
        let mark = if est { ESTIMATED_MARK } else { "" };
        let src = row.sources.get(*f).unwrap_or(&row.source);
        sources.insert((*f).to_string(), format!("{src}{mark}"));
        if est {
            estimated.insert((*f).to_string());
        }
    }
    let mut r = Resolved {
        values: row.values.clone(),
        architecture: row.name.clone(),
        sources,
        estimated,
    };
    if let Some(o) = row.per_cc.get(key) {
        r.apply(
            &o.values,
            &format!("compute capability {key} of {}", row.name),
            &o.estimated,
        );
    }
    Ok(r)
}

/// The architecture default values of a compute capability (its row with the row's `per_cc`
/// override), without their sources: for hot paths that read one number per call (a fit's
/// launch overhead). `None` when the table has no row for it.
pub fn default_values(cc: ComputeCapability) -> Option<&'static Latencies> {
    static V: OnceLock<Vec<(ComputeCapability, Latencies)>> = OnceLock::new();
    V.get_or_init(|| {
        let mut out = Vec::new();
        for row in table() {
            for key in &row.compute_capabilities {
                if let (Ok(c), Ok(r)) = (ComputeCapability::parse(key), defaults_of(row, key)) {
                    out.push((c, r.values));
                }
            }
        }
        out
    })
    .iter()
    .find(|(c, _)| *c == cc)
    .map(|(_, v)| v)
}

/// The values for a device: architecture defaults with the device file's overrides.
pub fn for_device(device: &Device) -> Result<Resolved> {
    let mut r = defaults(device.compute_capability)?;
    if let Some(o) = &device.latencies {
        o.validate()?;
        r.apply(o, &format!("device file {}", device.name), &[]);
        // A per-field `[sources]` entry (an importer's file and line) wins.
        for k in o.values.keys() {
            if let Some(src) = device.sources.get(&format!("latencies.{k}")) {
                r.sources
                    .insert(k.clone(), format!("device file {}: {src}", device.name));
            }
        }
    }
    Ok(r)
}

/// The `launch_overhead_us` of [`for_device`] without building its sources (no allocation: fits
/// call it for every row): the device file's `[latencies]` value, else its compute capability's
/// default. `None` where [`for_device`] fails for want of a row for the compute capability.
pub fn launch_overhead_us(device: &Device) -> Option<f64> {
    let default = default_values(device.compute_capability)?.launch_overhead_us;
    Some(
        device
            .latencies
            .as_ref()
            .and_then(|o| o.values.get("launch_overhead_us"))
            .copied()
            .unwrap_or(default),
    )
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

    fn cc(major: u32, minor: u32) -> Latencies {
        defaults(ComputeCapability::new(major, minor))
            .unwrap()
            .values
    }

    #[test]
    fn the_embedded_table_parses_and_covers_every_compute_capability() {
        let rows = parse_table(include_str!("../../../../data/latencies.toml")).unwrap();
        assert!(rows.len() >= 13, "{} rows", rows.len());
        assert_eq!(table().len(), rows.len());
        for cc in super::super::limits::known_compute_capabilities() {
            let r = defaults(cc).unwrap();
            assert!(r.values.dram > r.values.l2_hit && r.values.l2_hit > r.values.l1_hit);
            for f in FIELDS.iter().chain(FLAGS) {
                assert!(
                    r.sources.get(*f).is_some_and(|s| s.len() > 10),
                    "{cc}: no source for {f}"
                );
            }
            // The latencies proper still come from the shared latency table.
            for f in &FIELDS[..13] {
                assert!(r.sources[*f].contains("arch_defaults.csv"), "{cc} {f}");
            }
        }
        // Volta row of shared/data/latencies/arch_defaults.csv: L1 30, shared 23, L2 212, DRAM 400.
        let v = cc(7, 0);
        assert_eq!(
            (v.l1_hit, v.shared_load, v.l2_hit, v.dram),
            (30.0, 23.0, 212.0, 400.0)
        );
    }

    /// Physical sanity ranges, for every compute capability after its `per_cc` overrides.
    #[test]
    fn every_value_is_physically_plausible() {
        for c in super::super::limits::known_compute_capabilities() {
            let l = defaults(c).unwrap().values;
            let within = |name: &str, v: f64, lo: f64, hi: f64| {
                assert!(v >= lo && v <= hi, "{c}: {name} = {v} outside [{lo}, {hi}]");
            };
            // Empty-kernel launches cost about 1-5 us on every GPU generation.
            within("launch_overhead_us", l.launch_overhead_us, 0.5, 6.0);
            // Streaming kernels reach 50-100 % of the DRAM peak.
            within("dram_efficiency", l.dram_efficiency, 0.5, 1.0);
            // 2-8 L2 slices of 32-64 B/clk per SM; Kepler's big SMX sits at the top.
            within("l2_bytes_per_clk_sm", l.l2_bytes_per_clk_sm, 4.0, 64.0);
            // From one line every other clock (Kepler's replays) to Volta's 4 tags per clock.
            within("l1_lines_per_clk_sm", l.l1_lines_per_clk_sm, 0.25, 8.0);
            // From Fermi's 32 banks of 4 bytes every other clock to 32 banks of 8 bytes a clock.
            within(
                "shared_bytes_per_clk_sm",
                l.shared_bytes_per_clk_sm,
                64.0,
                256.0,
            );
            // 16 or 32 LD/ST units per SM in every SM diagram from Fermi to Hopper.
            assert!(
                [16.0, 32.0].contains(&l.shared_lanes_per_clk_sm),
                "{c}: shared_lanes_per_clk_sm = {}",
                l.shared_lanes_per_clk_sm
            );
            // One L2 slice serialises same-address atomics: at most a few per clock.
            within(
                "global_atomic_same_address_per_clk",
                l.global_atomic_same_address_per_clk,
                0.01,
                2.0,
            );
            // Scattered atomics cannot beat one 32-byte L2 sector each.
            assert!(
                l.global_atomic_distinct_per_clk_sm <= l.l2_bytes_per_clk_sm / 32.0 + 1e-9,
                "{c}: distinct atomics faster than the L2 sector rate"
            );
            within(
                "shared_atomic_per_clk_sm",
                l.shared_atomic_per_clk_sm,
                1.0,
                32.0,
            );
            within(
                "shared_atomic_conflict_cycles",
                l.shared_atomic_conflict_cycles,
                1.0,
                100.0,
            );
            // Issue-rate ordering from the programming guide's throughput table.
            assert!(l.fp64_per_clk_sm <= l.fp32_per_clk_sm, "{c}");
            assert!(l.sfu_per_clk_sm <= l.fp32_per_clk_sm, "{c}");
            assert!(l.convert_per_clk_sm <= l.fp32_per_clk_sm, "{c}");
            assert!(
                l.convert64_per_clk_sm <= l.convert_per_clk_sm.max(32.0),
                "{c}"
            );
            assert!(l.global_l1_opt_in || !l.global_loads_cached_in_l1, "{c}");
        }
    }

    /// For every catalogue GPU the L2 must deliver more than the achievable DRAM bandwidth:
    /// otherwise a bound built from these constants would say DRAM is never the limit.
    #[test]
    fn l2_bandwidth_exceeds_achievable_dram_bandwidth_on_every_catalogue_gpu() {
        for d in super::super::catalogue::all() {
            let Ok(r) = for_device(d) else { continue };
            let l = r.values;
            let l2_gbs = l.l2_bytes_per_clk_sm * d.sm_count as f64 * d.core_clock_mhz / 1e3;
            let dram_gbs = l.dram_efficiency * d.memory_bandwidth_gbs;
            assert!(
                l2_gbs > 1.2 * dram_gbs,
                "{}: L2 {l2_gbs:.0} GB/s vs achievable DRAM {dram_gbs:.0} GB/s",
                d.name
            );
        }
    }

    /// Specific values equal the numbers of the cited sources (docs/sources/arch-constants.md).
    #[test]
    fn cited_values() {
        // te42kyfo/gpu-benches @1c36d509 gpu-small-kernels: back-to-back launches, A100 80GB
        // 2.62 us, A40 2.05 us, L40 1.64 us, H200 2.43 us.
        assert_eq!(cc(8, 0).launch_overhead_us, 2.6);
        assert_eq!(cc(8, 6).launch_overhead_us, 2.0);
        assert_eq!(cc(8, 9).launch_overhead_us, 1.6);
        assert_eq!(cc(9, 0).launch_overhead_us, 2.4);
        // gpu-benches gpu-l2-cache a100_80: 5430 GB/s / (108 SMs x 1.41 GHz) = 35.7 B/clk/SM.
        assert_eq!(cc(8, 0).l2_bytes_per_clk_sm, 35.7);
        assert!((5430.0f64 / (108.0 * 1.41) - 35.7).abs() < 0.05);
        // gpu-benches gpu-l2-cache l40: 5220 GB/s / (142 x 2.49 GHz) = 14.8 B/clk/SM.
        assert_eq!(cc(8, 9).l2_bytes_per_clk_sm, 14.8);
        assert!((5220.0f64 / (142.0 * 2.49) - 14.8).abs() < 0.05);
        // Accel-Sim atomic_add_bw_conflict on TITAN V: 0.464460 B/clk of 4-byte atomics.
        assert_eq!(cc(7, 0).global_atomic_same_address_per_clk, 0.116);
        assert!((0.464460f64 / 4.0 - 0.116).abs() < 0.0005);
        // GK110 whitepaper: same-address atomics at one per clock (9x Fermi).
        assert_eq!(cc(3, 5).global_atomic_same_address_per_clk, 1.0);
        assert_eq!(cc(2, 0).global_atomic_same_address_per_clk, 0.11);
        // V100-PCIE-16GB: BabelStream copy 811.7 and triad 846.5 of 900 GB/s, gpu-benches triad 814;
        // TITAN V stream-like copy 609.9 of 652.8: ratios 0.90, 0.94, 0.90, 0.93, median 0.91.
        assert_eq!(cc(7, 0).dram_efficiency, 0.91);
        // Programming guide throughput table, per compute capability.
        assert_eq!(
            (cc(2, 0).fp32_per_clk_sm, cc(2, 1).fp32_per_clk_sm),
            (32.0, 48.0)
        );
        assert_eq!(
            (cc(2, 0).sfu_per_clk_sm, cc(2, 1).sfu_per_clk_sm),
            (4.0, 8.0)
        );
        assert_eq!(
            (cc(3, 0).fp64_per_clk_sm, cc(3, 5).fp64_per_clk_sm),
            (8.0, 64.0)
        );
        assert_eq!(
            (cc(3, 0).convert64_per_clk_sm, cc(3, 5).convert64_per_clk_sm),
            (8.0, 32.0)
        );
        assert_eq!(
            (cc(6, 0).convert_per_clk_sm, cc(6, 1).convert_per_clk_sm),
            (16.0, 32.0)
        );
        assert_eq!(
            (cc(7, 0).convert64_per_clk_sm, cc(7, 5).convert64_per_clk_sm),
            (16.0, 2.0)
        );
        // FP32:FP64 = 64:1 on 10.3 and 11.0 against 2:1 on 10.0 (compute-capability table).
        assert_eq!(cc(10, 0).fp64_per_clk_sm, 64.0);
        assert_eq!(cc(10, 3).fp64_per_clk_sm, 2.0);
        assert_eq!(cc(11, 0).fp64_per_clk_sm, 2.0);
    }

    /// The default L1 policy of ordinary global loads, per compute capability (programming
    /// guide 3.x and 5.x global-memory sections, Pascal tuning guide, Accel-Sim measurements).
    #[test]
    fn global_load_caching_policy_per_compute_capability() {
        let policy = |major, minor| {
            let l = cc(major, minor);
            (l.global_loads_cached_in_l1, l.global_l1_opt_in)
        };
        assert_eq!(policy(2, 0), (true, true));
        assert_eq!(policy(3, 0), (false, false));
        assert_eq!(policy(3, 5), (false, true));
        assert_eq!(policy(3, 7), (false, true));
        assert_eq!(policy(5, 0), (false, false));
        assert_eq!(policy(5, 2), (false, true));
        assert_eq!(policy(6, 0), (true, true));
        assert_eq!(policy(6, 1), (false, true));
        for (major, minor) in [
            (7, 0),
            (7, 5),
            (8, 0),
            (8, 6),
            (8, 9),
            (9, 0),
            (10, 0),
            (12, 0),
        ] {
            assert_eq!(policy(major, minor), (true, true), "{major}.{minor}");
        }
    }

    #[test]
    fn per_compute_capability_overrides_carry_their_own_source() {
        let fermi = defaults(ComputeCapability::new(2, 1)).unwrap();
        assert!(fermi.sources["fp32_per_clk_sm"].contains("compute capability 2.1 of Fermi"));
        assert!(!fermi.sources["l2_hit"].contains("compute capability 2.1"));
        let b300 = defaults(ComputeCapability::new(10, 3)).unwrap();
        assert!(b300.sources["fp64_per_clk_sm"].contains("10.3"));
        // Estimates are listed and marked.
        let bw = defaults(ComputeCapability::new(12, 0)).unwrap();
        assert!(bw.estimated.contains("dram_efficiency"));
        assert!(bw.sources["dram_efficiency"].contains("estimated by analogy"));
        assert!(!cc(8, 0).global_l1_opt_in || cc(8, 0).global_loads_cached_in_l1);
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
        // A flag alone needs a source too; an efficiency above one is refused.
        let flag = LatencyOverride {
            global_loads_cached_in_l1: Some(true),
            ..Default::default()
        };
        assert!(flag.validate().is_err());
        let mut eff = LatencyOverride {
            source: Some("my stream run".into()),
            ..Default::default()
        };
        eff.values.insert("dram_efficiency".into(), 1.2);
        assert!(eff
            .validate()
            .unwrap_err()
            .to_string()
            .contains("dram_efficiency"));
    }

    #[test]
    fn device_file_overrides_replace_new_fields_and_flags() {
        let text = "source = \"my runs on a K40\"\nglobal_loads_cached_in_l1 = true\nlaunch_overhead_us = 4.5\ndram_efficiency = 0.7\n";
        let o: LatencyOverride = toml::from_str(text).unwrap();
        o.validate().unwrap();
        let mut r = defaults(ComputeCapability::new(3, 5)).unwrap();
        assert!(!r.values.global_loads_cached_in_l1);
        r.apply(&o, "device file K40", &[]);
        assert!(r.values.global_loads_cached_in_l1);
        assert_eq!(
            (r.values.launch_overhead_us, r.values.dram_efficiency),
            (4.5, 0.7)
        );
        assert_eq!(
            r.sources["launch_overhead_us"],
            "device file K40: my runs on a K40"
        );
        assert!(!r.estimated.contains("launch_overhead_us"));
    }

    #[test]
    fn malformed_tables_are_refused_with_the_field_named() {
        let good = include_str!("../../../../data/latencies.toml");
        // An unknown key in a row (deny_unknown_fields holds through the flattened values).
        let bad = good.replacen("dram = 440\n", "dram = 440\ndram_latency = 1\n", 1);
        assert_ne!(bad, good);
        let e = parse_table(&bad).unwrap_err().to_string();
        assert!(e.contains("dram_latency"), "{e}");
        // A required field missing.
        let bad = good.replacen("dram_efficiency = 0.80\n", "", 1);
        assert_ne!(bad, good);
        assert!(parse_table(&bad).is_err());
        // An estimate naming no field.
        let bad = good.replacen("estimated = [", "estimated = [\"dramm\", ", 1);
        let e = parse_table(&bad).unwrap_err().to_string();
        assert!(e.contains("dramm"), "{e}");
        // An efficiency above one.
        let bad = good.replacen("dram_efficiency = 0.80\n", "dram_efficiency = 1.3\n", 1);
        assert!(parse_table(&bad)
            .unwrap_err()
            .to_string()
            .contains("dram_efficiency"));
    }
}
