//! Algorithm 1 of puchala2022: a whole kernel launch from the core-package time `T_c(n_w)`.
//!
//! Blocks are spread evenly over the SMs; one SM runs its blocks in *runs* of `active_blocks`
//! (limited by the blocks scheduled on it, the warp limit and the block limit), and every run
//! splits its warps evenly over the SM's core packages. With the paper's errata applied
//! (SPEC.md): `full_runs = floor(blocks_per_sm / active_blocks)` and one *remaining run* when
//! `blocks_per_sm mod active_blocks > 0`. A block that cannot be resident (zero active blocks)
//! is an error. This module counts cycles only; the caller adds `t_p` and converts to time.

use serde::Serialize;

use crate::device::Device;
use crate::error::{Error, Result};

/// Threads per warp on every NVIDIA GPU.
pub const WARP_SIZE: u32 = 32;

/// The device values Algorithms 1 and 3 read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmShape {
    pub sm_count: u32,
    pub cores_per_sm: u32,
    pub max_blocks_per_sm: u32,
    pub max_warps_per_sm: u32,
    pub max_threads_per_block: u32,
}

impl SmShape {
    /// The values of a device.
    pub fn of(device: &Device) -> Self {
        Self {
            sm_count: device.sm_count,
            cores_per_sm: device.cores_per_sm,
            max_blocks_per_sm: device.limits.max_blocks_per_sm,
            max_warps_per_sm: device.limits.max_warps_per_sm,
            max_threads_per_block: device.limits.max_threads_per_block,
        }
    }
}

/// Every intermediate quantity of Algorithm 1 for one launch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct KernelRun {
    pub blocks_per_sm: u64,
    pub warps_per_block: u32,
    pub core_packages_per_sm: u32,
    pub active_blocks_per_sm: u64,
    pub full_runs: u64,
    /// Warps per core package in a full run (`N_aw/cp`).
    pub warps_per_core_package: u64,
    pub cycles_per_full_run: f64,
    /// 0 or 1.
    pub remaining_runs: u64,
    pub remaining_blocks_per_sm: u64,
    pub warps_per_core_package_remaining_run: u64,
    pub cycles_remaining_run: f64,
    /// `full_runs * cycles_per_full_run + cycles_remaining_run`.
    pub cycles: f64,
}

/// Algorithm 1 for a launch of `blocks` blocks of `threads_per_block` threads; `t_c` is the
/// core-package time in cycles for a number of warps (called at most twice).
pub fn kernel_run(
    shape: &SmShape,
    blocks: u64,
    threads_per_block: u32,
    mut t_c: impl FnMut(u64) -> f64,
) -> Result<KernelRun> {
    if blocks == 0 {
        return Err(Error::invalid("blocks", "must be at least 1"));
    }
    if threads_per_block == 0 {
        return Err(Error::invalid("threads_per_block", "must be at least 1"));
    }
    if threads_per_block > shape.max_threads_per_block {
        return Err(Error::Infeasible(format!(
            "a block of {threads_per_block} threads exceeds the device's limit of {} threads per block",
            shape.max_threads_per_block
        )));
    }
    let core_packages_per_sm = shape.cores_per_sm / WARP_SIZE;
    if core_packages_per_sm == 0 || shape.sm_count == 0 {
        return Err(Error::Infeasible(format!(
            "the device has {} SMs of {} cores; the model needs at least one SM with a core package of {WARP_SIZE} cores",
            shape.sm_count, shape.cores_per_sm
        )));
    }
    let blocks_per_sm = blocks.div_ceil(u64::from(shape.sm_count));
    let warps_per_block = threads_per_block.div_ceil(WARP_SIZE);
    let active_blocks_per_sm = blocks_per_sm
        .min(u64::from(shape.max_warps_per_sm / warps_per_block))
        .min(u64::from(shape.max_blocks_per_sm));
    if active_blocks_per_sm == 0 {
        return Err(Error::Infeasible(format!(
            "a block of {threads_per_block} threads ({warps_per_block} warps) does not fit on an SM, which holds at most {} warps and {} blocks: zero active blocks per SM",
            shape.max_warps_per_sm, shape.max_blocks_per_sm
        )));
    }
    let packages = u64::from(core_packages_per_sm);
    let warps_per_core_package =
        (active_blocks_per_sm * u64::from(warps_per_block)).div_ceil(packages);
    let cycles_per_full_run = t_c(warps_per_core_package);
    let full_runs = blocks_per_sm / active_blocks_per_sm;
    let remaining_blocks_per_sm = blocks_per_sm % active_blocks_per_sm;
    let (remaining_runs, warps_rest, cycles_rest) = if remaining_blocks_per_sm > 0 {
        let w = (remaining_blocks_per_sm * u64::from(warps_per_block)).div_ceil(packages);
        (1, w, t_c(w))
    } else {
        (0, 0, 0.0)
    };
    Ok(KernelRun {
        blocks_per_sm,
        warps_per_block,
        core_packages_per_sm,
        active_blocks_per_sm,
        full_runs,
        warps_per_core_package,
        cycles_per_full_run,
        remaining_runs,
        remaining_blocks_per_sm,
        warps_per_core_package_remaining_run: warps_rest,
        cycles_remaining_run: cycles_rest,
        cycles: full_runs as f64 * cycles_per_full_run + cycles_rest,
    })
}

/// Algorithm 3: blocks and threads per block for `total_threads` threads, spreading the work
/// over an even number of SMs. Divisions that are not exact round up (odd SM counts).
pub fn launch_heuristic(shape: &SmShape, total_threads: u64) -> Result<(u64, u32)> {
    if total_threads == 0 {
        return Err(Error::invalid(
            "threads",
            "the kernel launches no threads; the total thread count must be at least 1",
        ));
    }
    let even_sms = u64::from(shape.sm_count + shape.sm_count % 2);
    if even_sms == 0 {
        return Err(Error::Infeasible("the device has no SMs".into()));
    }
    let min_threads = u64::from(WARP_SIZE);
    let max_threads = u64::from(shape.max_threads_per_block);
    let to_u32 = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
    Ok(if total_threads < min_threads {
        (1, to_u32(total_threads))
    } else if total_threads < min_threads * even_sms {
        // Fewer than a warp per SM: blocks of one warp each.
        (total_threads.div_ceil(min_threads), WARP_SIZE)
    } else if total_threads <= max_threads * even_sms {
        (even_sms, to_u32(total_threads.div_ceil(even_sms)))
    } else {
        (
            total_threads.div_ceil(max_threads),
            shape.max_threads_per_block,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // GeForce GTX 860M as in the paper's Table 3: 5 SMs of 128 cores, 32 blocks, 64 warps.
    const GTX860M: SmShape = SmShape {
        sm_count: 5,
        cores_per_sm: 128,
        max_blocks_per_sm: 32,
        max_warps_per_sm: 64,
        max_threads_per_block: 1024,
    };

    #[test]
    fn heuristic_cases_with_an_odd_sm_count() {
        // even SMs = 5 + 1 = 6.
        assert_eq!(launch_heuristic(&GTX860M, 16).unwrap(), (1, 16)); // < 32 threads
        assert_eq!(launch_heuristic(&GTX860M, 64).unwrap(), (2, 32)); // 64/6 < 32: 64/32 blocks
        assert_eq!(launch_heuristic(&GTX860M, 100).unwrap(), (4, 32)); // ceil(100/32) = 4
        assert_eq!(launch_heuristic(&GTX860M, 1024).unwrap(), (6, 171)); // ceil(1024/6) = 171
        assert_eq!(launch_heuristic(&GTX860M, 6144).unwrap(), (6, 1024)); // 6144/6 = 1024 exactly
        assert_eq!(launch_heuristic(&GTX860M, 8192).unwrap(), (8, 1024)); // 8192/1024
        assert_eq!(launch_heuristic(&GTX860M, 10000).unwrap(), (10, 1024)); // ceil(10000/1024)
        assert!(launch_heuristic(&GTX860M, 0).is_err());
    }

    #[test]
    fn full_and_remaining_runs_by_hand() {
        // 23 blocks of 1024 threads on 5 SMs: ceil(23/5) = 5 blocks per SM, 32 warps per
        // block, active = min(5, floor(64/32) = 2, 32) = 2; full runs = floor(5/2) = 2,
        // remaining = 5 mod 2 = 1 block; warps per package = ceil(2*32/4) = 16 (full),
        // ceil(1*32/4) = 8 (remaining). With T_c(w) = 10 w: 2 * 160 + 80 = 400 cycles.
        let run = kernel_run(&GTX860M, 23, 1024, |w| 10.0 * w as f64).unwrap();
        assert_eq!(run.blocks_per_sm, 5);
        assert_eq!(run.warps_per_block, 32);
        assert_eq!(run.core_packages_per_sm, 4);
        assert_eq!(run.active_blocks_per_sm, 2);
        assert_eq!(run.full_runs, 2);
        assert_eq!(run.remaining_runs, 1);
        assert_eq!(run.remaining_blocks_per_sm, 1);
        assert_eq!(run.warps_per_core_package, 16);
        assert_eq!(run.warps_per_core_package_remaining_run, 8);
        assert_eq!(run.cycles, 2.0 * 160.0 + 80.0);
    }

    #[test]
    fn no_remaining_run_calls_t_c_once() {
        // 6 blocks of 171 threads: ceil(6/5) = 2 per SM, ceil(171/32) = 6 warps, active =
        // min(2, floor(64/6) = 10, 32) = 2, one full run of ceil(12/4) = 3 warps per package.
        let mut calls = 0;
        let run = kernel_run(&GTX860M, 6, 171, |w| {
            calls += 1;
            w as f64
        })
        .unwrap();
        assert_eq!(calls, 1);
        assert_eq!(
            (
                run.full_runs,
                run.remaining_runs,
                run.warps_per_core_package
            ),
            (1, 0, 3)
        );
        assert_eq!(run.cycles, 3.0);
    }

    #[test]
    fn a_block_that_cannot_fit_is_an_error() {
        let small = SmShape {
            max_warps_per_sm: 16,
            ..GTX860M
        };
        let e = kernel_run(&small, 4, 1024, |_| 0.0).unwrap_err();
        assert!(matches!(e, Error::Infeasible(_)), "{e}");
        assert!(e.to_string().contains("does not fit"), "{e}");
        let e = kernel_run(&GTX860M, 4, 2048, |_| 0.0).unwrap_err();
        assert!(e.to_string().contains("limit of 1024"), "{e}");
        assert!(kernel_run(&GTX860M, 0, 32, |_| 0.0).is_err());
    }
}
