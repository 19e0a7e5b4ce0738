//! Which blocks of a grid are emulated: the first, middle and last block of each grid dimension
//! stand for all blocks of their position class (`Sampling::Classes`), every block
//! (`Sampling::All`), or only the class that stands for the most blocks (`Sampling::Representative`).
//! Nothing here emulates a warp.

use serde::Serialize;

use super::launch::LaunchDims;

/// A sampled block and the blocks it stands for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampledBlock {
    pub block: [u32; 3],
    pub linear: u64,
    /// How many blocks of the grid share this block's position class.
    pub represents: u64,
    /// `first`, `interior` or `last` per dimension, joined by `/`.
    pub class: String,
}

pub fn positions(n: u32) -> Vec<(u32, u64, &'static str)> {
    // (index, blocks represented, class name)
    match n {
        1 => vec![(0, 1, "first")],
        2 => vec![(0, 1, "first"), (1, 1, "last")],
        _ => vec![
            (0, 1, "first"),
            (n / 2, u64::from(n - 2), "interior"),
            (n - 1, 1, "last"),
        ],
    }
}

/// The sampled block that stands for the most blocks (ties: the lowest linear index).
pub fn representative(blocks: &[SampledBlock]) -> Option<&SampledBlock> {
    blocks
        .iter()
        .max_by_key(|b| (b.represents, std::cmp::Reverse(b.linear)))
}

/// A block's linear index in its grid (x fastest).
pub fn linear(l: &LaunchDims, b: [u32; 3]) -> u64 {
    u64::from(b[0])
        + u64::from(l.grid[0]) * (u64::from(b[1]) + u64::from(l.grid[1]) * u64::from(b[2]))
}

/// The block of a linear index in its grid (x fastest): the inverse of [`linear`].
pub fn block_at(l: &LaunchDims, linear: u64) -> [u32; 3] {
    let (gx, gy) = (u64::from(l.grid[0]), u64::from(l.grid[1]));
    [
        (linear % gx) as u32,
        ((linear / gx) % gy) as u32,
        (linear / (gx * gy)) as u32,
    ]
}

/// Which blocks to emulate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sampling {
    /// First, middle and last block of each grid dimension.
    Classes,
    /// Every block of the grid.
    All,
    /// Only the block of `Classes` that stands for the most blocks (ties: the lowest linear
    /// index), the one `model::trace_sim` simulates: what a sweep needs for the trace model's
    /// time, at a fraction of the cost.
    Representative,
}

/// The blocks a launch emulates under `sampling`, in linear order.
pub fn blocks(launch: &LaunchDims, sampling: Sampling) -> Vec<SampledBlock> {
    let mut blocks: Vec<SampledBlock> = Vec::new();
    match sampling {
        Sampling::Classes | Sampling::Representative => {
            for (z, wz, cz) in positions(launch.grid[2]) {
                for (y, wy, cy) in positions(launch.grid[1]) {
                    for (x, wx, cx) in positions(launch.grid[0]) {
                        let mut class = vec![cx];
                        if launch.grid[1] > 1 {
                            class.push(cy);
                        }
                        if launch.grid[2] > 1 {
                            class.push(cz);
                        }
                        blocks.push(SampledBlock {
                            block: [x, y, z],
                            linear: linear(launch, [x, y, z]),
                            represents: wx * wy * wz,
                            class: class.join("/"),
                        });
                    }
                }
            }
        }
        Sampling::All => {
            for z in 0..launch.grid[2] {
                for y in 0..launch.grid[1] {
                    for x in 0..launch.grid[0] {
                        blocks.push(SampledBlock {
                            block: [x, y, z],
                            linear: linear(launch, [x, y, z]),
                            represents: 1,
                            class: "all".into(),
                        });
                    }
                }
            }
        }
    }
    if sampling == Sampling::Representative {
        if let Some(rep) = representative(&blocks).cloned() {
            blocks = vec![rep];
        }
    }
    blocks.sort_by_key(|b| b.linear);
    blocks
}
