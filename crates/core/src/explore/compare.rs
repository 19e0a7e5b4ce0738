//! Comparisons over a design space: two kernels (or inputs files) of one model point by point,
//! with their time ratio, and GPUs ranked by a model's best objective for one kernel. Plain
//! results; tables and charts are the command line's.

use serde::Serialize;

use super::best::{self, Objective};
use super::space::{resolve_devices, Fnv};
use super::{sweep, Space, SpaceSpec};
use crate::error::{Error, Result};

/// One point of a two-kernel comparison.
#[derive(Debug, Clone, Serialize)]
pub struct RatioPoint {
    pub device: String,
    pub params: serde_json::Map<String, serde_json::Value>,
    pub time_a_us: Option<f64>,
    pub time_b_us: Option<f64>,
    /// `time_a / time_b`.
    pub ratio: Option<f64>,
}

/// A two-kernel comparison.
#[derive(Debug, Clone, Serialize)]
pub struct KernelComparison {
    pub model: String,
    pub kernel_a: String,
    pub kernel_b: String,
    pub points: Vec<RatioPoint>,
    /// Points where kernel a is faster.
    pub a_faster: usize,
    pub b_faster: usize,
}

/// One GPU of a ranking.
#[derive(Debug, Clone, Serialize)]
pub struct RankedDevice {
    pub rank: usize,
    pub device: String,
    pub objective: f64,
    pub time_us: f64,
    pub params: serde_json::Map<String, serde_json::Value>,
}

/// A GPU ranking.
#[derive(Debug, Clone, Serialize)]
pub struct Ranking {
    pub model: String,
    pub kernel: String,
    pub objective: String,
    pub objective_unit: String,
    pub devices: Vec<RankedDevice>,
    /// Devices the model cannot run the kernel on, with the reason.
    pub skipped: Vec<(String, String)>,
}

/// Two kernels (or two inputs files) of one model, point by point.
pub fn compare_kernels(space: &Space) -> Result<KernelComparison> {
    compare_kernels_with_progress(space, &crate::progress::Quiet)
}

/// [`compare_kernels`] reporting the points evaluated to `progress`.
pub fn compare_kernels_with_progress(
    space: &Space,
    progress: &dyn crate::progress::Progress,
) -> Result<KernelComparison> {
    if space.models.len() != 1 {
        return Err(Error::invalid(
            "model",
            "comparing kernels takes one model (it compares two kernels under it)",
        ));
    }
    let mut kernels: Vec<&str> = Vec::new();
    for c in &space.cells {
        if !kernels.contains(&c.kernel.as_str()) {
            kernels.push(&c.kernel);
        }
    }
    if kernels.len() != 2 {
        return Err(Error::invalid(
            "kernel",
            format!(
                "comparing needs exactly two kernels (or two `inputs` files), got {}",
                kernels.len()
            ),
        ));
    }
    let outcomes = sweep::fold_with_progress(
        space,
        progress,
        Vec::new,
        |acc: &mut Vec<(u64, Option<f64>)>, i, _, _, r| {
            acc.push((i, r.as_ref().ok().map(|o| o.time_us)));
        },
        |mut a, b| {
            a.extend(b);
            a
        },
    );
    let mut times = vec![None; space.len() as usize];
    for (i, t) in outcomes {
        times[i as usize] = t;
    }
    let per_cell = space.points_per_cell;
    let mut points = Vec::new();
    let (mut a_faster, mut b_faster) = (0, 0);
    for (ca, cell_a) in space.cells.iter().enumerate() {
        if cell_a.kernel != kernels[0] {
            continue;
        }
        let Some(cb) = space.cells.iter().position(|c| {
            c.kernel == kernels[1]
                && c.device == cell_a.device
                && c.calibration == cell_a.calibration
        }) else {
            continue;
        };
        for p in 0..per_cell {
            let ta = times[(ca as u64 * per_cell + p) as usize];
            let tb = times[(cb as u64 * per_cell + p) as usize];
            let ratio = match (ta, tb) {
                (Some(a), Some(b)) if b > 0.0 => Some(a / b),
                _ => None,
            };
            match ratio {
                Some(r) if r < 1.0 => a_faster += 1,
                Some(r) if r > 1.0 => b_faster += 1,
                _ => {}
            }
            points.push(RatioPoint {
                device: cell_a.device.clone(),
                params: space.params_json(ca as u64 * per_cell + p),
                time_a_us: ta,
                time_b_us: tb,
                ratio,
            });
        }
    }
    Ok(KernelComparison {
        model: space.models[0].to_string(),
        kernel_a: kernels[0].to_string(),
        kernel_b: kernels[1].to_string(),
        points,
        a_faster,
        b_faster,
    })
}

/// Ranks devices: each device's minimum `objective` (`time`, `cycles`, `time-per-element` of the
/// parameter `elements`, `time-x-sms`) over the parameter space of `spec` (one model, one kernel
/// or inputs file; every catalogue GPU when `spec` names none).
pub fn rank_devices(
    spec: &SpaceSpec,
    max_points: u64,
    objective: &str,
    elements: &str,
) -> Result<Ranking> {
    if spec.models.len() != 1 || spec.models[0].contains(',') {
        return Err(Error::invalid("model", "ranking GPUs takes one model"));
    }
    if spec.kernels.len() + spec.inputs.len() != 1 {
        return Err(Error::invalid(
            "kernel",
            "ranking GPUs is for one kernel: give one `kernel` or one `inputs`",
        ));
    }
    let items = if spec.devices.is_empty() && spec.device_files.is_empty() {
        vec!["sm_count>=1".to_string()]
    } else {
        spec.devices.clone()
    };
    let devices = resolve_devices(&items, &[], &mut Fnv::new())?;
    let mut per_device: Vec<SpaceSpec> = devices
        .iter()
        .map(|d| SpaceSpec {
            devices: vec![d.name.clone()],
            device_files: Vec::new(),
            ..spec.clone()
        })
        .collect();
    for f in &spec.device_files {
        per_device.push(SpaceSpec {
            devices: Vec::new(),
            device_files: vec![f.clone()],
            ..spec.clone()
        });
    }
    let mut ranked = Vec::new();
    let mut skipped = Vec::new();
    let mut model = String::new();
    let mut kernel = String::new();
    for s in &per_device {
        let label = s
            .devices
            .first()
            .cloned()
            .or_else(|| s.device_files.first().map(|p| p.display().to_string()))
            .unwrap_or_default();
        let space = match Space::build(s, max_points) {
            Ok(space) => space,
            Err(e) => {
                skipped.push((label, e.to_string()));
                continue;
            }
        };
        let parsed = Objective::parse(objective, elements, &space)?;
        match best::search(&space, parsed, objective, &[]) {
            Ok(r) => {
                if let Some(b) = r.models.first().and_then(|m| m.best.clone()) {
                    model = b.model.clone();
                    kernel = b.kernel.clone();
                    ranked.push(RankedDevice {
                        rank: 0,
                        device: b.device,
                        objective: b.objective,
                        time_us: b.time_us,
                        params: b.params,
                    });
                }
            }
            Err(e) => skipped.push((label, e.to_string())),
        }
    }
    if ranked.is_empty() {
        return Err(Error::Infeasible(format!(
            "no device could run the kernel{}",
            skipped
                .first()
                .map(|(d, why)| format!(" (e.g. {d}: {why})"))
                .unwrap_or_default()
        )));
    }
    // Stable: equal objectives keep the catalogue order.
    ranked.sort_by(|a, b| a.objective.total_cmp(&b.objective));
    for (i, d) in ranked.iter_mut().enumerate() {
        d.rank = i + 1;
    }
    let unit = match objective {
        "cycles" => "cycles",
        "time-per-element" => "us per element",
        "time-x-sms" => "us x SMs",
        _ => "us",
    };
    Ok(Ranking {
        model,
        kernel,
        objective: objective.to_string(),
        objective_unit: unit.to_string(),
        devices: ranked,
        skipped,
    })
}
