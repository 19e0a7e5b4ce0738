//! The paper's experiment grid (puchala2022 section 6): six GPU profiles x {matrix, lattice}
//! DWT x filter lengths K in {8, 10, 12, 14} x sizes N = 2^6 .. 2^20, with the modelled
//! matrix/lattice time ratio of every point (the model's side of Figs 10-15).
//!
//! The device profiles are looked up by the caller (they are data files); `t_p`/`t_m` come
//! from each profile's `puchala.dwt-matrix` / `puchala.dwt-lattice` entries. Pure: no I/O.

use serde::Serialize;

use super::{predict, Builtin, Request};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::model::Prediction;
use crate::workload::params::ParamValues;

/// The six device profiles of the paper's Table 3, in its order.
pub const PAPER_DEVICES: [&str; 6] = [
    "GeForce GT 720M (puchala2022)",
    "Quadro K1000M (puchala2022)",
    "GeForce GTX 860M (puchala2022)",
    "GeForce GTX 1070 (puchala2022)",
    "GeForce RTX 2060 (puchala2022)",
    "GeForce RTX 2080 (puchala2022)",
];

/// Filter lengths of the experiments.
pub const PAPER_K: [u32; 4] = [8, 10, 12, 14];

/// Exponents of the transform sizes N = 2^6 .. 2^20.
pub const PAPER_N_LOG2: std::ops::RangeInclusive<u32> = 6..=20;

/// One point of the grid: both predictions and their ratio.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GridPoint {
    pub device: String,
    pub k: u32,
    pub n: u64,
    pub matrix: Prediction,
    pub lattice: Prediction,
    /// `matrix.time_us / lattice.time_us` (the paper's `R`).
    pub ratio: f64,
}

/// The `t_p`/`t_m` of a built-in on a device profile, or an error naming the missing entry.
pub fn profile_params(device: &Device, kernel: Builtin) -> Result<(f64, f64)> {
    device
        .puchala
        .get(kernel.name())
        .map(|p| (p.t_p_us, p.t_m_cycles))
        .ok_or_else(|| {
            Error::missing(
                format!("puchala.{}", kernel.name()),
                format!(
                    "device `{}` has no puchala2022 t_p/t_m for {}",
                    device.name,
                    kernel.name()
                ),
            )
        })
}

/// Every (K, N) point of the grid for one device: 4 x 15 points, 120 predictions.
pub fn device_grid(device: &Device) -> Result<Vec<GridPoint>> {
    let matrix = Builtin::DwtMatrix.spec();
    let lattice = Builtin::DwtLattice.spec();
    let (mtp, mtm) = profile_params(device, Builtin::DwtMatrix)?;
    let (ltp, ltm) = profile_params(device, Builtin::DwtLattice)?;
    let mut out = Vec::with_capacity(PAPER_K.len() * PAPER_N_LOG2.clone().count());
    for k in PAPER_K {
        for e in PAPER_N_LOG2 {
            let n = 1u64 << e;
            let params = ParamValues::new([("n", n as f64), ("k", f64::from(k))]);
            let req = |kernel, t_p_us, t_m_cycles| Request {
                kernel,
                params: &params,
                launch: None,
                t_p_us,
                t_m_cycles,
            };
            let m = predict(device, &req(&matrix, mtp, mtm))?;
            let l = predict(device, &req(&lattice, ltp, ltm))?;
            out.push(GridPoint {
                device: device.name.clone(),
                k,
                n,
                ratio: m.time_us / l.time_us,
                matrix: m,
                lattice: l,
            });
        }
    }
    Ok(out)
}
