//! The occupancy formulas of two seed papers, as printed, for comparison with the exact one.
//!
//! - [`wu2019`]: eq 7-11. `Blocks_active = min(Max_B, Max_B_W, Max_B_R, Max_B_S)` with
//!   `Max_B_W = floor(Max_W * 32 / T)`, `Max_B_R = floor(Max_R / (T * R))`,
//!   `Max_B_S = floor(Max_SMem / (ceil(S / SMem_unit) * SMem_unit))`. Threads, not warps, divide
//!   the warp and register limits, and registers are not rounded. Active warps are
//!   `floor(Blocks_active * T / 32)` (the paper's `Warps_active`).
//! - [`wang2019`]: eq 1-7. Warps per block `ceil(T / 32)` (eq 2); architecture limit
//!   `min(B_wg_SM, floor(B_warp_SM / warps))` (eq 1); register limit
//!   `floor(N_lim_warp_reg / warps) * floor(B_reg_SM / B_reg_wg)` (eq 3) with
//!   `N_lim_warp_reg = floor_to(B_reg_wg / ceil_to(R * 32, G_reg), G_warp)` (eq 4, `floor_to` and
//!   `ceil_to` round to a multiple); shared-memory limit `floor(B_sm_SM / ceil_to(S, G_sm))`, or 0
//!   when the allocation exceeds the per-block maximum (eq 5, 6); the minimum of the three (eq 7).
//!   `S` is read as the shared memory of one work group (eq 6 calls the result the allocation per
//!   work group); `B_sm_wg` is the opt-in maximum per block.
//!
//! Readings common to both: a kernel with no registers or no shared memory has no limit from
//! that resource (the formulas would divide by zero); the divisions are floors. Values come from
//! the device's compute-capability limits (no reserved shared memory, no carve-out: the papers
//! have neither). Inputs outside the hardware limits are rejected like the exact calculation
//! (the error names the CLI flag), so eq 3's "more registers than a thread may have" case is
//! reported as an error rather than as 0 blocks. Nothing here is the hardware's real behaviour;
//! use [`super::occupancy`] for that.

use super::{assemble, validate, Limiter, Occupancy, Variant, WARP_SIZE};
use crate::device::{ComputeCapability, ComputeCapabilityLimits};
use crate::error::Result;

use super::BlockResources;

const NO_LIMIT: u64 = u32::MAX as u64;

fn ceil_to(x: u64, unit: u64) -> u64 {
    x.div_ceil(unit.max(1)) * unit.max(1)
}

fn floor_to(x: u64, unit: u64) -> u64 {
    x / unit.max(1) * unit.max(1)
}

fn clamp(x: u64) -> u32 {
    u32::try_from(x).unwrap_or(u32::MAX)
}

/// wu2019 eq 7-11.
pub fn wu2019(
    cc: ComputeCapability,
    l: &ComputeCapabilityLimits,
    r: &BlockResources,
) -> Result<Occupancy> {
    validate(cc, l, r)?;
    let t = u64::from(r.threads_per_block);
    let regs = u64::from(r.registers_per_thread);
    let smem = u64::from(r.shared_memory_per_block_bytes);
    let warp = u64::from(WARP_SIZE);
    let max_w = u64::from(l.max_warps_per_sm);

    let max_b = u64::from(l.max_blocks_per_sm);
    let max_b_w = max_w * warp / t; // eq 8
    let max_b_r = if regs == 0 {
        NO_LIMIT
    } else {
        u64::from(l.registers_per_sm) / (t * regs) // eq 9
    };
    let smem_per_block = ceil_to(smem, u64::from(l.shared_memory_allocation_unit_bytes)); // eq 11
    let max_b_s = if smem == 0 {
        NO_LIMIT
    } else {
        u64::from(l.shared_memory_per_sm_bytes) / smem_per_block // eq 10
    };

    let mut o = assemble(
        [
            (Limiter::Blocks, clamp(max_b)),
            (Limiter::Warps, clamp(max_b_w)),
            (Limiter::Registers, clamp(max_b_r)),
            (Limiter::SharedMemory, clamp(max_b_s)),
        ],
        t.div_ceil(warp),
        max_w,
        t * regs,
        smem_per_block,
        u64::from(l.shared_memory_per_sm_bytes),
        Variant::Wu2019,
    );
    // The paper's active warps: Blocks_active * T / Warp_size.
    let warps_exact = f64::from(o.active_blocks_per_sm) * t as f64 / warp as f64;
    o.active_warps_per_sm = warps_exact.floor() as u32;
    o.occupancy = if max_w == 0 {
        0.0
    } else {
        warps_exact / max_w as f64
    };
    Ok(o)
}

/// wang2019 eq 1-7.
pub fn wang2019(
    cc: ComputeCapability,
    l: &ComputeCapabilityLimits,
    r: &BlockResources,
) -> Result<Occupancy> {
    validate(cc, l, r)?;
    let warp = u64::from(WARP_SIZE);
    let warps_per_wg = u64::from(r.threads_per_block).div_ceil(warp); // eq 2
    let b_wg_sm = u64::from(l.max_blocks_per_sm);
    let b_warp_sm = u64::from(l.max_warps_per_sm);
    let by_warps = b_warp_sm / warps_per_wg; // eq 1, second term

    let regs = u64::from(r.registers_per_thread);
    let b_reg_wg = u64::from(l.registers_per_block);
    let b_reg_sm = u64::from(l.registers_per_sm);
    let per_warp = ceil_to(regs * warp, u64::from(l.register_allocation_unit));
    let by_regs = if regs > u64::from(l.max_registers_per_thread) {
        0 // eq 3, first case (unreachable after validation)
    } else {
        // No registers (per_warp 0): no limit.
        b_reg_wg.checked_div(per_warp).map_or(NO_LIMIT, |w| {
            let warps_by_regs = floor_to(w, u64::from(l.warp_allocation_granularity)); // eq 4
            warps_by_regs / warps_per_wg * (b_reg_sm / b_reg_wg.max(1)) // eq 3
        })
    };

    let smem = u64::from(r.shared_memory_per_block_bytes);
    let alloc = ceil_to(smem, u64::from(l.shared_memory_allocation_unit_bytes)); // eq 6
    let by_smem = if alloc > u64::from(l.shared_memory_per_block_optin_bytes) {
        0
    } else {
        // eq 5; no shared memory: no limit.
        u64::from(l.shared_memory_per_sm_bytes)
            .checked_div(alloc)
            .unwrap_or(NO_LIMIT)
    };

    Ok(assemble(
        [
            (Limiter::Blocks, clamp(b_wg_sm)),
            (Limiter::Warps, clamp(by_warps)),
            (Limiter::Registers, clamp(by_regs)),
            (Limiter::SharedMemory, clamp(by_smem)),
        ],
        warps_per_wg,
        b_warp_sm,
        per_warp * warps_per_wg,
        alloc,
        u64::from(l.shared_memory_per_sm_bytes),
        Variant::Wang2019,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::limits::for_compute_capability;

    fn limits(text: &str) -> (ComputeCapability, ComputeCapabilityLimits) {
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

    #[test]
    fn wu2019_hand_computed() {
        // 7.5: Max_B 16, Max_W 32, Max_R 65536, Max_SMem 65536, SMem_unit 256.
        let (c, l) = limits("7.5");
        // T 256, R 40, S 10000:
        // Max_B_W = 32*32/256 = 4; Max_B_R = 65536/(256*40) = 65536/10240 = 6 (6.4);
        // SMem_per_block = ceil(10000/256)*256 = 40*256 = 10240; Max_B_S = 65536/10240 = 6.
        // Blocks_active = min(16, 4, 6, 6) = 4; Warps_active = 4*256/32 = 32; 32/32 = 1.
        let o = wu2019(c, &l, &block(256, 40, 10000)).unwrap();
        assert_eq!(
            (
                o.blocks_limit_blocks,
                o.blocks_limit_warps,
                o.blocks_limit_registers,
                o.blocks_limit_shared_memory
            ),
            (16, 4, 6, 6)
        );
        assert_eq!(o.active_blocks_per_sm, 4);
        assert_eq!(o.active_warps_per_sm, 32);
        assert_eq!(o.limited_by, vec![Limiter::Warps]);
        assert!((o.occupancy - 1.0).abs() < 1e-12);
        // T 100, R 64, S 0: Max_B_W = 1024/100 = 10; Max_B_R = 65536/6400 = 10 (10.24);
        // no shared-memory limit. Blocks = 10 (warps and registers);
        // Warps_active = 10*100/32 = 31.25 -> 31; occupancy 31.25/32 = 0.9765625.
        let o = wu2019(c, &l, &block(100, 64, 0)).unwrap();
        assert_eq!(o.active_blocks_per_sm, 10);
        assert_eq!(o.limited_by, vec![Limiter::Warps, Limiter::Registers]);
        assert_eq!(o.blocks_limit_shared_memory, u32::MAX);
        assert_eq!(o.active_warps_per_sm, 31);
        assert!((o.occupancy - 31.25 / 32.0).abs() < 1e-12);
        // T 1024, R 255: Max_B_R = 65536/(1024*255) = 65536/261120 = 0 -> cannot run.
        let o = wu2019(c, &l, &block(1024, 255, 0)).unwrap();
        assert_eq!(o.active_blocks_per_sm, 0);
        assert_eq!(o.limited_by, vec![Limiter::Registers]);
    }

    #[test]
    fn wang2019_hand_computed() {
        // 7.5: B_wg_SM 16, B_warp_SM 32, B_reg_wg = B_reg_SM = 65536, G_reg 256, G_warp 4,
        // B_sm_SM 65536, G_sm 256.
        let (c, l) = limits("7.5");
        // T 96 -> 3 warps (eq 2). Eq 1: min(16, floor(32/3) = 10) = 10.
        // R 37: ceil(37*32 = 1184, 256) = 1280; 65536/1280 = 51.2 -> floor to 4: 48 (eq 4);
        // eq 3: floor(48/3) * floor(65536/65536) = 16 * 1 = 16. S 0: no limit. Eq 7: 10.
        let o = wang2019(c, &l, &block(96, 37, 0)).unwrap();
        assert_eq!(o.blocks_limit_warps, 10);
        assert_eq!(o.blocks_limit_registers, 16);
        assert_eq!(o.active_blocks_per_sm, 10);
        assert_eq!(o.active_warps_per_sm, 30);
        assert_eq!(o.limited_by, vec![Limiter::Warps]);

        // 5.3: B_reg_wg 32768, B_reg_SM 65536, B_wg_SM 32, B_warp_SM 64, B_sm_SM 65536.
        let (c, l) = limits("5.3");
        // T 256 -> 8 warps; eq 1: min(32, 64/8 = 8) = 8.
        // R 32: ceil(1024, 256) = 1024; 32768/1024 = 32 -> floor to 4: 32 (eq 4);
        // eq 3: floor(32/8) * floor(65536/32768) = 4 * 2 = 8.
        // S 3000: ceil(3000, 256) = 12*256 = 3072 (eq 6); 65536/3072 = 21 (21.3) (eq 5).
        // Eq 7: min(8, 8, 21) = 8, limited by warps and registers.
        let o = wang2019(c, &l, &block(256, 32, 3000)).unwrap();
        assert_eq!(o.blocks_limit_registers, 8);
        assert_eq!(o.blocks_limit_shared_memory, 21);
        assert_eq!(o.allocated_shared_memory_per_block_bytes, 3072);
        assert_eq!(o.active_blocks_per_sm, 8);
        assert_eq!(o.limited_by, vec![Limiter::Warps, Limiter::Registers]);
        assert!((o.occupancy - 1.0).abs() < 1e-12);

        // 5.3, T 160 -> 5 warps, R 255: ceil(8160, 256) = 8192; 32768/8192 = 4 -> floor to 4:
        // 4 warps (eq 4); eq 3: floor(4/5) * 2 = 0 -> cannot run.
        let o = wang2019(c, &l, &block(160, 255, 0)).unwrap();
        assert_eq!(o.active_blocks_per_sm, 0);
        assert_eq!(o.limited_by, vec![Limiter::Registers]);
    }

    #[test]
    fn paper_variants_reject_out_of_range_input_like_exact() {
        let (c, l) = limits("8.0");
        for f in [wu2019, wang2019] {
            let e = f(c, &l, &block(0, 0, 0)).unwrap_err().to_string();
            assert!(e.starts_with("threads_per_block"), "{e}");
            let e = f(c, &l, &block(32, 256, 0)).unwrap_err().to_string();
            assert!(e.starts_with("registers_per_thread"), "{e}");
        }
    }
}
