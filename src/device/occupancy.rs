//! Occupancy: how many blocks of a kernel are resident on one SM at once.
//! (Placeholder arithmetic; replaced by the exact cuda_occupancy.h algorithm.)

use serde::Serialize;

use super::Device;
use crate::error::{Error, Result};

/// What a block of the kernel asks of an SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BlockResources {
    pub threads_per_block: u32,
    pub registers_per_thread: u32,
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

/// The result of an occupancy calculation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Occupancy {
    pub active_blocks_per_sm: u32,
    pub active_warps_per_sm: u32,
    /// Active warps over the SM's maximum, 0..1.
    pub occupancy: f64,
    pub limited_by: Vec<Limiter>,
    pub blocks_limit_blocks: u32,
    pub blocks_limit_warps: u32,
    pub blocks_limit_registers: u32,
    pub blocks_limit_shared_memory: u32,
}

/// Exact occupancy for a device and block.
pub fn occupancy(device: &Device, r: &BlockResources) -> Result<Occupancy> {
    let l = &device.limits;
    if r.threads_per_block == 0 || r.threads_per_block > l.max_threads_per_block {
        return Err(Error::invalid(
            "--threads-per-block",
            format!("must be between 1 and {}", l.max_threads_per_block),
        ));
    }
    let warps = r.threads_per_block.div_ceil(32);
    let by_blocks = l.max_blocks_per_sm;
    let by_warps = l.max_warps_per_sm / warps;
    let by_regs = if r.registers_per_thread == 0 {
        u32::MAX
    } else {
        l.registers_per_sm / (r.registers_per_thread * 32 * warps)
    };
    let by_smem = l
        .shared_memory_per_sm_bytes
        .checked_div(r.shared_memory_per_block_bytes)
        .unwrap_or(u32::MAX);
    let active = by_blocks.min(by_warps).min(by_regs).min(by_smem);
    let mut limited_by = vec![];
    for (lim, v) in [
        (Limiter::Blocks, by_blocks),
        (Limiter::Warps, by_warps),
        (Limiter::Registers, by_regs),
        (Limiter::SharedMemory, by_smem),
    ] {
        if v == active {
            limited_by.push(lim);
        }
    }
    Ok(Occupancy {
        active_blocks_per_sm: active,
        active_warps_per_sm: active * warps,
        occupancy: f64::from(active * warps) / f64::from(l.max_warps_per_sm),
        limited_by,
        blocks_limit_blocks: by_blocks,
        blocks_limit_warps: by_warps,
        blocks_limit_registers: by_regs,
        blocks_limit_shared_memory: by_smem,
    })
}
