//! A launch's grid and block dimensions, and the checks CUDA applies to them (per-dimension and
//! per-block limits). Nothing here emulates anything.

use serde::Serialize;

use super::WARP;
use crate::error::{Error, Result};
use kerneltime_ptx::ast::Function;

/// A launch: grid and block dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LaunchDims {
    pub grid: [u32; 3],
    pub block: [u32; 3],
}

impl LaunchDims {
    pub fn threads_per_block(&self) -> u32 {
        self.block[0] * self.block[1] * self.block[2]
    }
    pub fn blocks(&self) -> u64 {
        self.grid.iter().map(|&g| u64::from(g)).product()
    }
    pub fn warps_per_block(&self) -> u32 {
        self.threads_per_block().div_ceil(WARP as u32)
    }

    /// Parses `--grid`/`--block` text `X[,Y,Z]` (also `x` as separator).
    pub fn parse_dims(flag: &str, text: &str) -> Result<[u32; 3]> {
        let parts: Vec<&str> = text
            .split([',', 'x', 'X'])
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect();
        if parts.is_empty() || parts.len() > 3 {
            return Err(Error::invalid(
                flag,
                format!("expected X[,Y,Z] with one to three whole numbers, got `{text}`"),
            ));
        }
        let mut d = [1u32; 3];
        for (k, p) in parts.iter().enumerate() {
            d[k] = match p.parse::<u64>() {
                Ok(v) => u32::try_from(v).map_err(|_| {
                    Error::invalid(
                        flag,
                        format!(
                            "`{p}` is larger than a CUDA launch dimension can be (at most {} = 2^32 - 1)",
                            u32::MAX
                        ),
                    )
                })?,
                Err(_) => {
                    return Err(Error::invalid(
                        flag,
                        format!("`{p}` is not a whole number in `{text}`"),
                    ))
                }
            };
            if d[k] == 0 {
                return Err(Error::invalid(
                    flag,
                    format!("dimensions must be at least 1, got `{text}`"),
                ));
            }
        }
        Ok(d)
    }

    /// Checks the launch against CUDA's limits (1024 threads per block, block z up to 64, grid
    /// x up to 2^31 - 1, y and z up to 65535) and the kernel's `.maxntid`/`.reqntid`.
    pub fn validate(&self, f: &Function) -> Result<()> {
        let t = u64::from(self.block[0]) * u64::from(self.block[1]) * u64::from(self.block[2]);
        if t > 1024 || self.block[0] > 1024 || self.block[1] > 1024 || self.block[2] > 64 {
            return Err(Error::invalid(
                "block",
                format!(
                    "{}x{}x{} is outside CUDA's limits (at most 1024 threads, x and y up to 1024, z up to 64)",
                    self.block[0], self.block[1], self.block[2]
                ),
            ));
        }
        if self.grid[0] > i32::MAX as u32 || self.grid[1] > 65535 || self.grid[2] > 65535 {
            return Err(Error::invalid(
                "grid",
                format!(
                    "{}x{}x{} is outside CUDA's limits (x up to 2^31-1, y and z up to 65535)",
                    self.grid[0], self.grid[1], self.grid[2]
                ),
            ));
        }
        let p = &f.performance;
        if !p.reqntid.is_empty() {
            let want: Vec<u64> = (0..3)
                .map(|k| p.reqntid.get(k).copied().unwrap_or(1))
                .collect();
            let got: Vec<u64> = self.block.iter().map(|&b| u64::from(b)).collect();
            if want != got {
                return Err(Error::invalid(
                    "block",
                    format!(
                        "kernel `{}` requires a block of {:?} threads (.reqntid)",
                        f.name, want
                    ),
                ));
            }
        }
        if !p.maxntid.is_empty() {
            let max: u64 = p.maxntid.iter().product();
            if t > max {
                return Err(Error::invalid(
                    "block",
                    format!(
                        "kernel `{}` allows at most {max} threads per block (.maxntid), got {t}",
                        f.name
                    ),
                ));
            }
        }
        Ok(())
    }
}
