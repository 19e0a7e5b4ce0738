//! Occupancy: how many blocks of one kernel are resident on one SM at the same time, and which
//! resource stops there being more.
//!
//! [`occupancy`] follows the algorithm of NVIDIA's occupancy calculator header `cuda_occupancy.h`
//! (CUDA 13.x, function `cudaOccMaxActiveBlocksPerMultiprocessor` and the helpers it calls) for
//! compute capability 3.0 to 12.x, re-implemented here from the header's arithmetic:
//!
//! - *warps*: `floor(max_warps_per_sm / ceil(T / 32))` (the header divides its threads per SM by
//!   32; the table keeps both equal); a block above the per-block thread limit is rejected.
//! - *registers*: a warp gets `R * 32` registers rounded up to the allocation unit (256). The
//!   register file is split evenly over the SM's sub-partitions (one per warp scheduler), so the SM
//!   holds `sub_partitions * floor((registers_per_sm / sub_partitions) / per_warp)` warps, and
//!   `floor(that / warps_per_block)` blocks. A block fits at all only if its warps, rounded up to a
//!   multiple of the sub-partition count, fit in `registers_per_block` (the hardware's check) and the
//!   unrounded warps do too. `R = 0` puts no limit. On 6.0 (GP100, two sub-partitions) the header
//!   also demands that the block fit a four-sub-partition Pascal SM and reports 0 otherwise.
//! - *shared memory*: a block takes its bytes plus the driver's reserved bytes per block, rounded
//!   up to the allocation unit. The bytes the SM devotes to shared memory follow the carve-out
//!   ([`Carveout`]): on 7.0 and newer a percentage of `shared_memory_per_sm_bytes` (default: all of
//!   it) rounded up to the next configuration the hardware offers (`shared_memory_carveout_kb`),
//!   raised to the smallest configuration that holds one block when the preference is smaller;
//!   on 3.x the L1 preference picks 16, 32 or 48 KB of L1 out of the shared pool; on 5.x and 6.x the
//!   shared memory is dedicated. With no bytes at all (no shared memory, nothing reserved) there
//!   is no limit.
//! - *blocks*: the per-SM block limit of the compute capability.
//!
//! The result is the minimum; every resource whose limit equals it is reported in `limited_by`, as
//! the header's `limitingFactors` does. The header's partitioned global caching (an opt-in for
//! some 5.x/6.x parts), barrier and virtual-resource limits are off, as in the header's default
//! function attributes; they never lower the result for a kernel with at most one barrier.
//!
//! Fermi (2.x) is no longer covered by the header. Our reading of the CUDA programming guide's
//! limits for it: 32768 registers per SM and per block, allocated per warp in units of 64, warps
//! allocated in pairs (the two warp schedulers: the same arithmetic as two sub-partitions), 63
//! registers per thread, 48 KB of shared memory (16 KB with the L1 preference) in 128-byte
//! units, 8 blocks and 48 warps per SM.
//!
//! All the numbers come from the device's compute-capability limits (`limits`); the test suite
//! checks them against the header with a C++ oracle (`tests/occupancy_oracle.rs`).
//!
//! The paper formulas (wu2019 eq 7-11, wang2019 eq 1-7) are in [`paper`]; [`Variant`] selects one.
//! This module does not pick block sizes or predict time.

pub mod paper;

use serde::{Serialize, Serializer};

use super::{ComputeCapability, ComputeCapabilityLimits, Device};
use crate::error::{Error, Result};

/// Threads per warp on every NVIDIA GPU.
pub const WARP_SIZE: u32 = 32;

/// What a block of the kernel asks of an SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BlockResources {
    pub threads_per_block: u32,
    pub registers_per_thread: u32,
    /// Static plus dynamic shared memory the kernel asks for, bytes (without the driver's
    /// reserved bytes, which are added here).
    pub shared_memory_per_block_bytes: u32,
}

/// A resource that bounds the number of active blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limiter {
    Blocks,
    Warps,
    Registers,
    SharedMemory,
}

/// The split of the SM's on-chip memory between L1 and shared memory that the kernel asks for.
///
/// `Default` is the header's default: on 7.0 and newer all of `shared_memory_per_sm_bytes`, on
/// 3.x the "prefer shared" split. A percentage (CUDA's `cudaFuncAttributePreferredSharedMemoryCarveout`)
/// exists on 7.0 and newer only. The three preferences are CUDA's cache configurations; on 7.0 and
/// newer they mean 100 %, 0 % and 50 %; on 5.x and 6.x (dedicated shared memory) they change nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Carveout {
    #[default]
    Default,
    PreferShared,
    PreferL1,
    PreferEqual,
    /// Percent of `shared_memory_per_sm_bytes`, 0..=100.
    Percent(u32),
}

impl Carveout {
    /// Parses the `--carveout` value: `default`, `shared`, `l1`, `equal` or a percentage 0..=100.
    pub fn parse(text: &str) -> Result<Self> {
        let t = text.trim().trim_end_matches('%').to_ascii_lowercase();
        match t.as_str() {
            "default" => Ok(Carveout::Default),
            "shared" | "prefer-shared" | "max-shared" => Ok(Carveout::PreferShared),
            "l1" | "prefer-l1" | "max-l1" => Ok(Carveout::PreferL1),
            "equal" | "prefer-equal" | "half" => Ok(Carveout::PreferEqual),
            _ => match t.parse::<u32>() {
                Ok(p) if p <= 100 => Ok(Carveout::Percent(p)),
                _ => Err(Error::invalid(
                    "carveout",
                    format!(
                        "expected default, shared, l1, equal or a percentage 0..100, got \"{text}\""
                    ),
                )),
            },
        }
    }
}

/// Options of the exact calculation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct OccupancyOptions {
    pub carveout: Carveout,
}

/// Which formula computes the occupancy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Variant {
    /// NVIDIA's `cuda_occupancy.h` algorithm ([`occupancy`]).
    #[default]
    Exact,
    /// wu2019 eq 7-11 ([`paper::wu2019`]).
    Wu2019,
    /// wang2019 eq 1-7 ([`paper::wang2019`]).
    Wang2019,
}

impl Variant {
    pub const NAMES: &'static [&'static str] = &["exact", "wu2019", "wang2019"];

    pub fn parse(text: &str) -> Result<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "exact" => Ok(Variant::Exact),
            "wu2019" => Ok(Variant::Wu2019),
            "wang2019" => Ok(Variant::Wang2019),
            _ => Err(Error::invalid(
                "variant",
                format!(
                    "expected one of {}, got \"{text}\"",
                    Variant::NAMES.join(", ")
                ),
            )),
        }
    }
}

/// The result of an occupancy calculation.
///
/// A `blocks_limit_*` of `u32::MAX` (JSON `null`) means the resource puts no limit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Occupancy {
    pub active_blocks_per_sm: u32,
    pub active_warps_per_sm: u32,
    /// Active warps over the SM's maximum, 0..1.
    pub occupancy: f64,
    /// Every resource whose limit equals `active_blocks_per_sm`, in the order of [`Limiter`].
    pub limited_by: Vec<Limiter>,
    #[serde(serialize_with = "unlimited_as_null")]
    pub blocks_limit_blocks: u32,
    #[serde(serialize_with = "unlimited_as_null")]
    pub blocks_limit_warps: u32,
    #[serde(serialize_with = "unlimited_as_null")]
    pub blocks_limit_registers: u32,
    #[serde(serialize_with = "unlimited_as_null")]
    pub blocks_limit_shared_memory: u32,
    /// Registers allocated to one block (after rounding), as the calculation counts them.
    pub allocated_registers_per_block: u64,
    /// Shared memory allocated to one block, including the reserved bytes, after rounding.
    pub allocated_shared_memory_per_block_bytes: u64,
    /// Shared memory per SM the calculation used (after the carve-out), bytes.
    pub shared_memory_per_sm_bytes: u64,
    pub variant: Variant,
}

fn unlimited_as_null<S: Serializer>(v: &u32, s: S) -> std::result::Result<S::Ok, S::Error> {
    if *v == u32::MAX {
        s.serialize_none()
    } else {
        s.serialize_u32(*v)
    }
}

/// Exact occupancy for a device and block, with the default carve-out.
pub fn occupancy(device: &Device, r: &BlockResources) -> Result<Occupancy> {
    occupancy_with(device, r, &OccupancyOptions::default())
}

/// Exact occupancy for a device and block with explicit options.
pub fn occupancy_with(
    device: &Device,
    r: &BlockResources,
    options: &OccupancyOptions,
) -> Result<Occupancy> {
    occupancy_for_limits(device.compute_capability, &device.limits, r, options)
}

/// Occupancy by the chosen formula.
pub fn occupancy_variant(
    device: &Device,
    r: &BlockResources,
    options: &OccupancyOptions,
    variant: Variant,
) -> Result<Occupancy> {
    match variant {
        Variant::Exact => occupancy_with(device, r, options),
        Variant::Wu2019 => paper::wu2019(device.compute_capability, &device.limits, r),
        Variant::Wang2019 => paper::wang2019(device.compute_capability, &device.limits, r),
    }
}

fn round_up(x: u64, unit: u64) -> u64 {
    x.div_ceil(unit.max(1)) * unit.max(1)
}

fn to_u32(x: u64) -> u32 {
    u32::try_from(x).unwrap_or(u32::MAX)
}

/// Shared memory the kernel may ask for per block, bytes: the largest request whose allocation
/// (request plus reserved bytes, rounded up to the unit) stays within the opt-in limit per block.
/// From 8.0 on the header lets the reserved bytes come on top of the opt-in limit, so this is the
/// opt-in maximum itself; before 8.0 nothing is reserved.
pub fn max_shared_memory_per_block_bytes(
    cc: ComputeCapability,
    l: &ComputeCapabilityLimits,
) -> u64 {
    let reserved = u64::from(l.reserved_shared_memory_per_block_bytes);
    let unit = u64::from(l.shared_memory_allocation_unit_bytes.max(1));
    let limit = per_block_limit_bytes(cc, l, u64::MAX);
    (limit / unit * unit).saturating_sub(reserved)
}

/// The per-block shared-memory limit the header applies (`cudaOccSMemPerBlock`), given what the
/// block may use at most (`max_usage_bytes`, reserved bytes included).
fn per_block_limit_bytes(
    cc: ComputeCapability,
    l: &ComputeCapabilityLimits,
    max_usage: u64,
) -> u64 {
    let default = u64::from(l.shared_memory_per_block_bytes);
    let optin = u64::from(l.shared_memory_per_block_optin_bytes);
    let base = if cc.major >= 7 && max_usage > default {
        optin
    } else {
        default
    };
    if cc.major >= 8 {
        base + u64::from(l.reserved_shared_memory_per_block_bytes)
    } else {
        base
    }
}

/// Checks the block against the hardware's per-block limits; the error names the CLI flag.
pub fn validate(
    cc: ComputeCapability,
    l: &ComputeCapabilityLimits,
    r: &BlockResources,
) -> Result<()> {
    if r.threads_per_block == 0 || r.threads_per_block > l.max_threads_per_block {
        return Err(Error::invalid(
            "threads_per_block",
            format!(
                "must be between 1 and {} on compute capability {cc}, got {}",
                l.max_threads_per_block, r.threads_per_block
            ),
        ));
    }
    if r.registers_per_thread > l.max_registers_per_thread {
        return Err(Error::invalid(
            "registers_per_thread",
            format!(
                "must be at most {} on compute capability {cc}, got {}",
                l.max_registers_per_thread, r.registers_per_thread
            ),
        ));
    }
    let max_smem = max_shared_memory_per_block_bytes(cc, l);
    if u64::from(r.shared_memory_per_block_bytes) > max_smem {
        return Err(Error::invalid(
            "shared_memory_per_block",
            format!(
                "must be at most {max_smem} bytes (the opt-in maximum per block on compute capability {cc}), got {}",
                r.shared_memory_per_block_bytes
            ),
        ));
    }
    Ok(())
}

/// The smallest carve-out configuration (bytes) that holds `bytes`; 0 stays 0 where the hardware
/// offers a zero-byte configuration (`cudaOccAlignUpShmemSizeVoltaPlus`).
fn align_up_to_configuration(l: &ComputeCapabilityLimits, bytes: u64) -> Result<u64> {
    let mut configs: Vec<u64> = l
        .shared_memory_carveout_kb
        .iter()
        .map(|kb| u64::from(*kb) * 1024)
        .collect();
    configs.sort_unstable();
    configs.into_iter().find(|c| *c >= bytes).ok_or_else(|| {
        Error::invalid(
            "limits.shared_memory_carveout_kb",
            format!(
                "no shared-memory configuration holds {bytes} bytes (configurations: {:?} KB)",
                l.shared_memory_carveout_kb
            ),
        )
    })
}

/// Shared memory per SM the carve-out preference asks for (`cudaOccSMemPerMultiprocessor`).
fn preferred_shared_memory_per_sm(
    cc: ComputeCapability,
    l: &ComputeCapabilityLimits,
    carveout: Carveout,
) -> Result<u64> {
    let per_sm = u64::from(l.shared_memory_per_sm_bytes);
    if cc.major >= 7 {
        let percent = match carveout {
            Carveout::Default => None,
            Carveout::PreferShared => Some(100),
            Carveout::PreferL1 => Some(0),
            Carveout::PreferEqual => Some(50),
            Carveout::Percent(p) if p <= 100 => Some(u64::from(p)),
            Carveout::Percent(p) => {
                return Err(Error::invalid(
                    "carveout",
                    format!("must be a percentage between 0 and 100, got {p}"),
                ))
            }
        };
        let wanted = percent.map_or(per_sm, |p| p * per_sm / 100);
        return align_up_to_configuration(l, wanted);
    }
    if let Carveout::Percent(_) = carveout {
        return Err(Error::invalid(
            "carveout",
            format!(
                "a percentage carve-out exists on compute capability 7.0 and newer, not {cc}; use shared, l1 or equal"
            ),
        ));
    }
    match cc.major {
        // L1 and shared memory share one pool; the L1 takes 16 (prefer shared), 32 (equal) or 48
        // KB (prefer L1) of it. Fermi has no equal split: it keeps the default there.
        2 | 3 => {
            const MIN_L1_BYTES: u64 = 16 * 1024;
            const MAX_L1_BYTES: u64 = 48 * 1024;
            let high = per_sm;
            let low = (per_sm + MIN_L1_BYTES).saturating_sub(MAX_L1_BYTES);
            Ok(match carveout {
                Carveout::PreferL1 => low,
                Carveout::PreferEqual if cc.major == 3 => (high + low) / 2,
                _ => high,
            })
        }
        _ => Ok(per_sm),
    }
}

/// Blocks per SM allowed by registers (`cudaOccMaxBlocksPerSMRegsLimit`), with `sub_partitions`
/// register-file partitions. Returns (limit, registers allocated per block).
fn register_limit(
    l: &ComputeCapabilityLimits,
    r: &BlockResources,
    sub_partitions: u64,
) -> (u64, u64) {
    let warps = u64::from(r.threads_per_block.div_ceil(WARP_SIZE));
    let sub_partitions = sub_partitions.max(1);
    let per_warp = round_up(
        u64::from(r.registers_per_thread) * u64::from(WARP_SIZE),
        u64::from(l.register_allocation_unit),
    );
    let per_block = per_warp * warps;
    let per_block_as_checked = per_warp * round_up(warps, sub_partitions);
    let per_block_limit = u64::from(l.registers_per_block);
    if per_block_as_checked > per_block_limit
        || per_block > per_block_limit
        || r.registers_per_thread > l.max_registers_per_thread
    {
        return (0, per_block);
    }
    if per_warp == 0 {
        return (u64::from(u32::MAX), per_block);
    }
    let per_sub_partition = u64::from(l.registers_per_sm) / sub_partitions;
    let warps_on_sm = per_sub_partition / per_warp * sub_partitions;
    (warps_on_sm / warps, per_block)
}

/// Exact occupancy from a compute capability and its limits (no device needed).
pub fn occupancy_for_limits(
    cc: ComputeCapability,
    l: &ComputeCapabilityLimits,
    r: &BlockResources,
    options: &OccupancyOptions,
) -> Result<Occupancy> {
    validate(cc, l, r)?;
    if l.register_allocation_granularity != "warp" {
        return Err(Error::invalid(
            "limits.register_allocation_granularity",
            "only per-warp register allocation (compute capability 2.0 and newer) is modelled",
        ));
    }
    let warps = u64::from(r.threads_per_block.div_ceil(WARP_SIZE));
    let max_warps = u64::from(l.max_warps_per_sm);

    // Warps.
    let by_warps = max_warps / warps;

    // Registers. GP100 (6.0) must also fit a four-sub-partition Pascal SM.
    let sub_partitions = u64::from(l.warp_schedulers_per_sm);
    let (mut by_regs, allocated_regs) = register_limit(l, r, sub_partitions);
    if cc == ComputeCapability::new(6, 0) && by_regs > 0 {
        const GP10X_SUB_PARTITIONS: u64 = 4;
        if register_limit(l, r, GP10X_SUB_PARTITIONS).0 == 0 {
            by_regs = 0;
        }
    }

    // Blocks.
    let by_blocks = u64::from(l.max_blocks_per_sm);

    // Shared memory.
    let unit = u64::from(l.shared_memory_allocation_unit_bytes);
    let reserved = u64::from(l.reserved_shared_memory_per_block_bytes);
    let request = u64::from(r.shared_memory_per_block_bytes);
    let allocated_smem = round_up(request + reserved, unit);
    let preference = preferred_shared_memory_per_sm(cc, l, options.carveout)?;
    let smem_per_sm = if preference >= allocated_smem {
        preference
    } else if cc.major >= 7 {
        align_up_to_configuration(l, allocated_smem)?
    } else {
        u64::from(l.shared_memory_per_sm_bytes)
    };
    let by_smem = if allocated_smem > per_block_limit_bytes(cc, l, request + reserved) {
        0
    } else {
        // Nothing allocated (no request, nothing reserved): no limit.
        smem_per_sm
            .checked_div(allocated_smem)
            .unwrap_or(u64::from(u32::MAX))
    };

    Ok(assemble(
        [
            (Limiter::Blocks, to_u32(by_blocks)),
            (Limiter::Warps, to_u32(by_warps)),
            (Limiter::Registers, to_u32(by_regs)),
            (Limiter::SharedMemory, to_u32(by_smem)),
        ],
        warps,
        max_warps,
        allocated_regs,
        allocated_smem,
        smem_per_sm,
        Variant::Exact,
    ))
}

/// Builds the result from the four per-resource limits.
pub(crate) fn assemble(
    limits: [(Limiter, u32); 4],
    warps_per_block: u64,
    max_warps_per_sm: u64,
    allocated_registers_per_block: u64,
    allocated_shared_memory_per_block_bytes: u64,
    shared_memory_per_sm_bytes: u64,
    variant: Variant,
) -> Occupancy {
    let active = limits.iter().map(|(_, v)| *v).min().unwrap_or(0);
    let limited_by = limits
        .iter()
        .filter(|(_, v)| *v == active)
        .map(|(k, _)| *k)
        .collect();
    let active_warps = u64::from(active) * warps_per_block;
    let occupancy = if max_warps_per_sm == 0 {
        0.0
    } else {
        (active_warps as f64 / max_warps_per_sm as f64).min(1.0)
    };
    let get = |k: Limiter| limits.iter().find(|(l, _)| *l == k).map_or(0, |(_, v)| *v);
    Occupancy {
        active_blocks_per_sm: active,
        active_warps_per_sm: to_u32(active_warps),
        occupancy,
        limited_by,
        blocks_limit_blocks: get(Limiter::Blocks),
        blocks_limit_warps: get(Limiter::Warps),
        blocks_limit_registers: get(Limiter::Registers),
        blocks_limit_shared_memory: get(Limiter::SharedMemory),
        allocated_registers_per_block,
        allocated_shared_memory_per_block_bytes,
        shared_memory_per_sm_bytes,
        variant,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::limits::for_compute_capability;

    fn cc(text: &str) -> (ComputeCapability, ComputeCapabilityLimits) {
        let c = ComputeCapability::parse(text).unwrap();
        (c, for_compute_capability(c).unwrap())
    }

    fn block(t: u32, r: u32, s: u32) -> BlockResources {
        BlockResources {
            threads_per_block: t,
            registers_per_thread: r,
            shared_memory_per_block_bytes: s,
        }
    }

    fn exact(text: &str, b: BlockResources) -> Occupancy {
        let (c, l) = cc(text);
        occupancy_for_limits(c, &l, &b, &OccupancyOptions::default()).unwrap()
    }

    #[test]
    fn registers_limit_on_ampere() {
        // 8.0, 256 threads (8 warps), 64 registers: a warp takes 64*32 = 2048 registers (a
        // multiple of 256). Sub-partition: 65536/4 = 16384 registers -> 16384/2048 = 8 warps;
        // SM: 4*8 = 32 warps -> 32/8 = 4 blocks. Warps: 64/8 = 8; blocks: 32; shared memory:
        // reserved 1024 B per block -> 167936/1024 = 164.
        let o = exact("8.0", block(256, 64, 0));
        assert_eq!(o.blocks_limit_registers, 4);
        assert_eq!(o.blocks_limit_warps, 8);
        assert_eq!(o.blocks_limit_blocks, 32);
        assert_eq!(o.blocks_limit_shared_memory, 164);
        assert_eq!(o.active_blocks_per_sm, 4);
        assert_eq!(o.active_warps_per_sm, 32);
        assert_eq!(o.limited_by, vec![Limiter::Registers]);
        assert!((o.occupancy - 0.5).abs() < 1e-12);
    }

    #[test]
    fn register_rounding_per_warp_and_sub_partition() {
        // 7.5, 96 threads (3 warps), 37 registers: 37*32 = 1184 -> rounded to 1280 (5*256).
        // 16384/1280 = 12 warps per sub-partition (12.8 floored), 48 per SM -> 48/3 = 16 blocks.
        // The warps limit is 32/3 = 10, so warps win.
        let o = exact("7.5", block(96, 37, 0));
        assert_eq!(o.blocks_limit_registers, 16);
        assert_eq!(o.blocks_limit_warps, 10);
        assert_eq!(o.active_blocks_per_sm, 10);
        assert_eq!(o.limited_by, vec![Limiter::Warps]);
        assert_eq!(o.allocated_registers_per_block, 3 * 1280);
    }

    #[test]
    fn hardware_register_check_rounds_warps_to_sub_partitions() {
        // 5.3 (32768 registers per block), 544 threads = 17 warps, 60 registers:
        // per warp 60*32 = 1920 (a multiple of 128 but not 256) -> 2048. Unrounded block:
        // 17*2048 = 34816 > 32768 -> 0 blocks. Take 15 warps (480 threads): 15*2048 = 30720 fits,
        // but rounded to 16 warps: 32768 = 32768 fits -> registers allow (16384/2048=8)*4/15 = 2.
        let o = exact("5.3", block(544, 60, 0));
        assert_eq!(o.blocks_limit_registers, 0);
        assert_eq!(o.active_blocks_per_sm, 0);
        assert_eq!(o.limited_by, vec![Limiter::Registers]);
        let o = exact("5.3", block(480, 60, 0));
        assert_eq!(o.blocks_limit_registers, 2);
        // 17 warps at 56 registers: 56*32 = 1792 (= 7*256), 17*1792 = 30464 fits unrounded, but
        // rounded to 20 warps: 20*1792 = 35840 > 32768 -> 0 (the hardware check alone).
        let o = exact("5.3", block(544, 56, 0));
        assert_eq!(o.blocks_limit_registers, 0);
    }

    #[test]
    fn gp100_must_also_fit_gp10x() {
        // 6.0 has 2 sub-partitions; registers 255: per warp 255*32 = 8160 -> 8192.
        // 1024 threads = 32 warps: 32*8192 = 262144 > 65536 -> 0 anyway. Take 224 threads = 7
        // warps: 7*8192 = 57344 <= 65536; rounded to 2 sub-partitions: 8 warps = 65536 fits.
        // GP100: 32768/8192 = 4 warps per sub-partition, 8 per SM -> 8/7 = 1 block.
        // GP10x check: rounded to 4 -> 8 warps = 65536 fits; 16384/8192 = 2 per sub-partition,
        // 8 per SM -> 1 block, so GP100 keeps 1.
        assert_eq!(exact("6.0", block(224, 255, 0)).blocks_limit_registers, 1);
        // 160 threads = 5 warps, 255 registers: GP100: 5*8192 = 40960, rounded to 6 warps =
        // 49152 fits; 8 warps per SM -> 8/5 = 1. GP10x: rounded to 8 warps = 65536 fits;
        // 2*4 = 8 warps -> 1. Both 1.
        assert_eq!(exact("6.0", block(160, 255, 0)).blocks_limit_registers, 1);
        // 96 threads = 3 warps, 168 registers: 168*32 = 5376 (= 21*256). GP100: 32768/5376 = 6
        // per sub-partition, 12 per SM -> 12/3 = 4. GP10x: 16384/5376 = 3 per sub-partition, 12
        // per SM -> 4. Both allow; GP100 reports its own 4.
        assert_eq!(exact("6.0", block(96, 168, 0)).blocks_limit_registers, 4);
        // 288 threads = 9 warps, 176 registers: 176*32 = 5632 (= 22*256). GP100: 9*5632 = 50688
        // and, rounded to 10 warps, 56320 <= 65536; 32768/5632 = 5 per sub-partition, 10 per SM
        // -> 10/9 = 1. GP10x: rounded to 12 warps, 12*5632 = 67584 > 65536 -> 0, so 6.0 gets 0.
        assert_eq!(exact("6.0", block(288, 176, 0)).blocks_limit_registers, 0);
    }

    #[test]
    fn shared_memory_with_reserved_bytes_and_carveout() {
        // 8.6: 100 KB per SM, 1 KB reserved per block, 128-byte unit. 48 KB request:
        // 49152 + 1024 = 50176 (= 392*128) -> 102400/50176 = 2 blocks.
        let o = exact("8.6", block(128, 0, 48 * 1024));
        assert_eq!(o.allocated_shared_memory_per_block_bytes, 50176);
        assert_eq!(o.blocks_limit_shared_memory, 2);
        // 10000 bytes: 11024 -> rounded to 11136 (87*128); 102400/11136 = 9.
        assert_eq!(
            exact("8.6", block(128, 0, 10000)).blocks_limit_shared_memory,
            9
        );
        // Carve-out 50 %: 51200 bytes -> next configuration 64 KB = 65536; 65536/11136 = 5.
        let (c, l) = cc("8.6");
        let half = OccupancyOptions {
            carveout: Carveout::Percent(50),
        };
        let o = occupancy_for_limits(c, &l, &block(128, 0, 10000), &half).unwrap();
        assert_eq!(o.shared_memory_per_sm_bytes, 65536);
        assert_eq!(o.blocks_limit_shared_memory, 5);
        // Prefer L1 (0 %) on 8.6: configuration 0 is smaller than one block, so the SM takes the
        // smallest configuration holding one block: 11136 -> 16 KB = 16384 -> 1 block.
        let l1 = OccupancyOptions {
            carveout: Carveout::PreferL1,
        };
        let o = occupancy_for_limits(c, &l, &block(128, 0, 10000), &l1).unwrap();
        assert_eq!(o.shared_memory_per_sm_bytes, 16384);
        assert_eq!(o.blocks_limit_shared_memory, 1);
    }

    #[test]
    fn kepler_cache_preference() {
        // 3.5: 48 KB shared. Prefer L1: 48 KB + 16 KB - 48 KB = 16 KB; equal: (48+16)/2 = 32 KB.
        // 5000 bytes -> 5120 (20*256): default 49152/5120 = 9, L1 16384/5120 = 3,
        // equal 32768/5120 = 6.
        let (c, l) = cc("3.5");
        let b = block(64, 0, 5000);
        let run = |carveout| {
            occupancy_for_limits(c, &l, &b, &OccupancyOptions { carveout })
                .unwrap()
                .blocks_limit_shared_memory
        };
        assert_eq!(run(Carveout::Default), 9);
        assert_eq!(run(Carveout::PreferL1), 3);
        assert_eq!(run(Carveout::PreferEqual), 6);
        // A block bigger than the L1-preferred pool falls back to the whole 48 KB: 20000 ->
        // 20224 (79*256) > 16384 -> 49152/20224 = 2.
        let b = block(64, 0, 20000);
        let o = occupancy_for_limits(
            c,
            &l,
            &b,
            &OccupancyOptions {
                carveout: Carveout::PreferL1,
            },
        )
        .unwrap();
        assert_eq!(o.blocks_limit_shared_memory, 2);
        assert!(occupancy_for_limits(
            c,
            &l,
            &b,
            &OccupancyOptions {
                carveout: Carveout::Percent(50)
            }
        )
        .is_err());
    }

    #[test]
    fn fermi_reading() {
        // 2.0: 192 threads = 6 warps, 21 registers: 21*32 = 672 -> 704 (11*64). 16384/704 = 23
        // warps per scheduler half, 46 per SM -> 46/6 = 7 blocks. Warps: 48/6 = 8. Blocks: 8.
        let o = exact("2.0", block(192, 21, 0));
        assert_eq!(o.blocks_limit_registers, 7);
        assert_eq!(o.blocks_limit_warps, 8);
        assert_eq!(o.blocks_limit_blocks, 8);
        assert_eq!(o.active_blocks_per_sm, 7);
        // 63 registers at 1024 threads: 63*32 = 2016 -> 2048; 32*2048 = 65536 > 32768 -> 0.
        assert_eq!(exact("2.0", block(1024, 63, 0)).active_blocks_per_sm, 0);
        // 4000 bytes of shared memory: 4096 (32*128) -> 49152/4096 = 12 (not limiting: 8 blocks).
        assert_eq!(
            exact("2.0", block(32, 0, 4000)).blocks_limit_shared_memory,
            12
        );
        // R = 64 is above Fermi's 63.
        let (c, l) = cc("2.0");
        assert!(validate(c, &l, &block(32, 64, 0)).is_err());
    }

    #[test]
    fn blocks_and_ties() {
        // 7.5, 32 threads, nothing else: blocks 16, warps 32/1 = 32 -> blocks limit alone.
        let o = exact("7.5", block(32, 0, 0));
        assert_eq!(o.active_blocks_per_sm, 16);
        assert_eq!(o.limited_by, vec![Limiter::Blocks]);
        assert_eq!(o.blocks_limit_registers, u32::MAX);
        assert_eq!(o.blocks_limit_shared_memory, u32::MAX);
        // 7.5, 64 threads: warps 32/2 = 16 = blocks 16 -> both.
        let o = exact("7.5", block(64, 0, 0));
        assert_eq!(o.limited_by, vec![Limiter::Blocks, Limiter::Warps]);
    }

    #[test]
    fn validation_names_the_input() {
        let (c, l) = cc("8.0");
        let msg = |b| validate(c, &l, &b).unwrap_err().to_string();
        assert!(msg(block(0, 0, 0)).starts_with("threads_per_block"));
        assert!(msg(block(1025, 0, 0)).starts_with("threads_per_block"));
        assert!(msg(block(32, 256, 0)).starts_with("registers_per_thread"));
        // 8.0 opt-in maximum: 163 KB = 166912 bytes.
        assert!(validate(c, &l, &block(32, 255, 166912)).is_ok());
        assert!(msg(block(32, 0, 166913)).starts_with("shared_memory_per_block"));
        assert_eq!(max_shared_memory_per_block_bytes(c, &l), 166912);
    }

    #[test]
    fn every_table_entry_is_computable() {
        for c in crate::device::limits::known_compute_capabilities() {
            let l = for_compute_capability(c).unwrap();
            let top = max_shared_memory_per_block_bytes(c, &l);
            assert_eq!(top, u64::from(l.shared_memory_per_block_optin_bytes), "{c}");
            for t in [1, 32, 33, l.max_threads_per_block] {
                for r in [0, 1, l.max_registers_per_thread] {
                    for s in [0, 1, top as u32] {
                        let o = exact(&c.to_string(), block(t, r, s));
                        assert!(o.occupancy <= 1.0 && !o.limited_by.is_empty(), "{c}");
                    }
                }
            }
        }
    }

    #[test]
    fn table_sub_partitions_and_carveouts_agree_with_the_algorithm() {
        for c in crate::device::limits::known_compute_capabilities() {
            let l = for_compute_capability(c).unwrap();
            // One number, two names: the register file's sub-partitions (warp schedulers) and
            // the granularity a block's warps are rounded to in the per-block register check.
            assert_eq!(
                l.warp_allocation_granularity, l.warp_schedulers_per_sm,
                "{c}"
            );
            let kb = |b: u64| u32::try_from(b / 1024).unwrap();
            let list = &l.shared_memory_carveout_kb;
            match c.major {
                // Pool split: prefer L1, equal, prefer shared.
                3 => {
                    let sizes: Vec<u32> =
                        [Carveout::PreferL1, Carveout::PreferEqual, Carveout::Default]
                            .iter()
                            .map(|p| kb(preferred_shared_memory_per_sm(c, &l, *p).unwrap()))
                            .collect();
                    assert_eq!(&sizes, list, "{c}");
                }
                5 | 6 => assert_eq!(list, &vec![l.shared_memory_per_sm_bytes / 1024], "{c}"),
                _ if c.major >= 7 => {
                    // The default carve-out is the whole per-SM shared memory, a configuration.
                    assert!(list.contains(&(l.shared_memory_per_sm_bytes / 1024)), "{c}");
                }
                _ => {}
            }
        }
    }

    proptest::proptest! {
        /// No input panics; a result is consistent (the minimum of the limits, every limiter
        /// equal to it, occupancy within 0..1); a rejection names the input.
        #[test]
        fn any_input_gives_a_consistent_result_or_names_the_input(
            t in proptest::prelude::any::<u32>(),
            r in proptest::prelude::any::<u32>(),
            s in proptest::prelude::any::<u32>(),
            small in 0u32..2048,
            pick in 0usize..64,
            carve in 0u32..130,
            variant in 0usize..3,
        ) {
            let ccs = crate::device::limits::known_compute_capabilities();
            let c = ccs[pick % ccs.len()];
            let l = for_compute_capability(c).unwrap();
            let carveout = match carve {
                101 => Carveout::Default,
                102 => Carveout::PreferL1,
                103 => Carveout::PreferShared,
                104 => Carveout::PreferEqual,
                p => Carveout::Percent(p),
            };
            let opts = OccupancyOptions { carveout };
            for b in [block(t, r, s), block(small, small / 8, small * 64)] {
                let result = match variant {
                    0 => occupancy_for_limits(c, &l, &b, &opts),
                    1 => paper::wu2019(c, &l, &b),
                    _ => paper::wang2019(c, &l, &b),
                };
                match result {
                    Ok(o) => {
                        let all = [
                            o.blocks_limit_blocks,
                            o.blocks_limit_warps,
                            o.blocks_limit_registers,
                            o.blocks_limit_shared_memory,
                        ];
                        proptest::prop_assert_eq!(o.active_blocks_per_sm, *all.iter().min().unwrap());
                        proptest::prop_assert!(!o.limited_by.is_empty());
                        proptest::prop_assert!((0.0..=1.0).contains(&o.occupancy));
                    }
                    Err(e) => {
                        let named = ["threads_per_block", "registers_per_thread", "shared_memory_per_block", "carveout"];
                        proptest::prop_assert!(named.iter().any(|n| e.to_string().starts_with(n)), "{}", e)
                    }
                }
            }
        }
    }

    #[test]
    fn carveout_parse() {
        assert_eq!(Carveout::parse("default").unwrap(), Carveout::Default);
        assert_eq!(Carveout::parse("L1").unwrap(), Carveout::PreferL1);
        assert_eq!(Carveout::parse("50%").unwrap(), Carveout::Percent(50));
        assert!(Carveout::parse("101").is_err());
        assert!(Carveout::parse("-1").is_err());
    }
}
