//! Best-configuration search: the point of a space that minimises an objective (predicted time,
//! time per element, time x SMs, cycles) among the points that satisfy every constraint
//! (`occupancy>=0.5`, `shared_memory_bytes<=49152`, `threads_per_block<=512`, or any swept
//! parameter), for each model of the space, with the runner-up and its margin, and which models
//! chose the same configuration as the first model.
//!
//! Points the model cannot run (infeasible or invalid) never win; a constraint on a quantity a
//! model does not report (NaN) excludes the point, and the report counts such points. Ties go
//! to the lower point index, so the answer does not depend on the thread count. This module
//! only searches; it reads no files.

use serde::Serialize;

use super::registry::Outcome;
use super::space::{Op, Space};
use super::sweep;
use crate::error::{Error, Result};
use crate::model::Prediction;

/// What `best` minimises.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Objective {
    /// Predicted time, microseconds.
    Time,
    Cycles,
    /// Time divided by the value of a swept parameter (the axis index).
    TimePerElement(usize),
    /// Time times the device's SM count (the cost of the GPU's parallel resources).
    TimeXSms,
}

/// Objective names for `--objective`.
pub const OBJECTIVES: &[&str] = &["time", "cycles", "time-per-element", "time-x-sms"];

impl Objective {
    /// Parses an objective; `elements` names the parameter `time-per-element` divides by.
    pub fn parse(text: &str, elements: &str, space: &Space) -> Result<Self> {
        match text {
            "time" => Ok(Objective::Time),
            "cycles" => Ok(Objective::Cycles),
            "time-x-sms" => Ok(Objective::TimeXSms),
            "time-per-element" => space
                .axes
                .iter()
                .position(|a| a.name.eq_ignore_ascii_case(elements))
                .map(Objective::TimePerElement)
                .ok_or_else(|| {
                    Error::invalid(
                        "elements",
                        format!(
                            "time-per-element divides by a swept parameter, and `{elements}` is not one (give `elements` NAME)"
                        ),
                    )
                }),
            other => Err(Error::invalid(
                "objective",
                format!("`{other}` is not an objective; use one of {}", OBJECTIVES.join(", ")),
            )),
        }
    }

    /// The objective of one point (NaN when the model does not report what it needs).
    pub fn value(&self, o: &Outcome, sm_count: f64, values: &[f64]) -> f64 {
        match *self {
            Objective::Time => o.time_us,
            Objective::Cycles => o.cycles,
            Objective::TimePerElement(a) => o.time_us / values[a],
            Objective::TimeXSms => o.time_us * sm_count,
        }
    }

    /// The unit of the objective, for reports.
    pub fn unit(&self) -> &'static str {
        match self {
            Objective::Time => "us",
            Objective::Cycles => "cycles",
            Objective::TimePerElement(_) => "us per element",
            Objective::TimeXSms => "us x SMs",
        }
    }
}

/// A quantity a constraint tests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Quantity {
    Axis(usize),
    TimeUs,
    Cycles,
    Occupancy,
    ThreadsPerBlock,
    Blocks,
    SharedMemoryBytes,
}

/// Quantity names a constraint can use besides the swept parameters.
pub const QUANTITIES: &[&str] = &[
    "time_us",
    "cycles",
    "occupancy",
    "threads_per_block",
    "blocks",
    "shared_memory_bytes",
];

/// One constraint, `QUANTITY OP NUMBER`.
#[derive(Debug, Clone, PartialEq)]
pub struct Constraint {
    pub text: String,
    pub quantity: Quantity,
    pub op: Op,
    pub value: f64,
}

impl Constraint {
    /// Parses `occupancy>=0.5`; a swept parameter's name wins over a model quantity.
    pub fn parse(text: &str, space: &Space) -> Result<Self> {
        const OPS: [(&str, Op); 7] = [
            (">=", Op::Ge),
            ("<=", Op::Le),
            ("!=", Op::Ne),
            ("==", Op::Eq),
            (">", Op::Gt),
            ("<", Op::Lt),
            ("=", Op::Eq),
        ];
        let found = OPS
            .iter()
            .filter_map(|(s, o)| text.find(s).map(|p| (p, *s, *o)))
            .min_by_key(|(p, s, _)| (*p, std::cmp::Reverse(s.len())));
        let Some((pos, sym, op)) = found else {
            return Err(Error::invalid(
                "constraint",
                format!("`{text}` is not QUANTITY OP NUMBER (e.g. occupancy>=0.5)"),
            ));
        };
        let name = text[..pos].trim();
        let value: f64 = text[pos + sym.len()..].trim().parse().map_err(|_| {
            Error::invalid(
                "constraint",
                format!("the right side of `{text}` is not a number"),
            )
        })?;
        let quantity = if let Some(a) = space.axes.iter().position(|a| a.name == name) {
            Quantity::Axis(a)
        } else {
            match name {
                "time_us" | "time" => Quantity::TimeUs,
                "cycles" => Quantity::Cycles,
                "occupancy" => Quantity::Occupancy,
                "threads_per_block" => Quantity::ThreadsPerBlock,
                "blocks" => Quantity::Blocks,
                "shared_memory_bytes" | "shared_memory" => Quantity::SharedMemoryBytes,
                other => {
                    return Err(Error::invalid(
                        "constraint",
                        format!(
                            "`{other}` is neither a swept parameter nor one of {}",
                            QUANTITIES.join(", ")
                        ),
                    ))
                }
            }
        };
        Ok(Constraint {
            text: text.to_string(),
            quantity,
            op,
            value,
        })
    }

    /// Whether a point satisfies it: `None` when the quantity is unknown for the point.
    pub fn holds(&self, o: &Outcome, values: &[f64]) -> Option<bool> {
        let v = match self.quantity {
            Quantity::Axis(a) => values[a],
            Quantity::TimeUs => o.time_us,
            Quantity::Cycles => o.cycles,
            Quantity::Occupancy => o.occupancy,
            Quantity::ThreadsPerBlock => o.threads_per_block,
            Quantity::Blocks => o.blocks,
            Quantity::SharedMemoryBytes => o.shared_memory_bytes,
        };
        if v.is_nan() {
            return None;
        }
        // A small tolerance so that `occupancy>=0.5` accepts 0.49999999999999994.
        let tol = 1e-12 * self.value.abs().max(1.0);
        Some(match self.op {
            Op::Ge => v >= self.value - tol,
            Op::Le => v <= self.value + tol,
            Op::Gt => v > self.value,
            Op::Lt => v < self.value,
            Op::Eq => (v - self.value).abs() <= tol,
            Op::Ne => (v - self.value).abs() > tol,
        })
    }
}

/// One chosen configuration.
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    pub index: u64,
    pub model: String,
    pub kernel: String,
    pub device: String,
    /// The calibration file's stem, or `none`.
    pub calibration: String,
    pub params: serde_json::Map<String, serde_json::Value>,
    pub objective: f64,
    pub time_us: f64,
}

/// The search's result for one model.
#[derive(Debug, Clone, Serialize)]
pub struct ModelBest {
    pub model: String,
    pub best: Option<Config>,
    pub runner_up: Option<Config>,
    /// `(runner_up - best) / best` of the objective, in percent.
    pub margin_percent: Option<f64>,
    /// Points the model could run.
    pub feasible_points: u64,
    /// Feasible points that satisfy every constraint.
    pub admissible_points: u64,
    /// Feasible points excluded because a constrained quantity is unknown for them.
    pub unknown_points: u64,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct BestReport {
    pub objective: String,
    pub objective_unit: String,
    pub constraints: Vec<String>,
    pub points: u64,
    /// One entry per model, in the order given; the first is the reference.
    pub models: Vec<ModelBest>,
    /// Models whose best configuration (kernel, device, parameters) is the first model's.
    pub agreeing_models: Vec<String>,
    /// The first model's full prediction at its best point.
    pub prediction: Option<Prediction>,
}

type Top2 = [Option<(f64, u64)>; 2];

#[derive(Clone, Default)]
struct Acc {
    top: Vec<Top2>,
    feasible: Vec<u64>,
    admissible: Vec<u64>,
    unknown: Vec<u64>,
}

fn better(a: (f64, u64), b: (f64, u64)) -> bool {
    a.0 < b.0 || (a.0 == b.0 && a.1 < b.1)
}

fn insert(top: &mut Top2, c: (f64, u64)) {
    match top[0] {
        None => top[0] = Some(c),
        Some(b) if better(c, b) => {
            top[1] = top[0];
            top[0] = Some(c);
        }
        Some(_) => match top[1] {
            Some(r) if !better(c, r) => {}
            _ => top[1] = Some(c),
        },
    }
}

/// Searches the space.
pub fn search(
    space: &Space,
    objective: Objective,
    objective_name: &str,
    constraints: &[Constraint],
) -> Result<BestReport> {
    search_with_progress(
        space,
        objective,
        objective_name,
        constraints,
        &crate::progress::Quiet,
    )
}

/// [`search`] reporting the points evaluated to `progress`.
pub fn search_with_progress(
    space: &Space,
    objective: Objective,
    objective_name: &str,
    constraints: &[Constraint],
    progress: &dyn crate::progress::Progress,
) -> Result<BestReport> {
    let n_models = space.models.len();
    let model_of: Vec<usize> = space
        .cells
        .iter()
        .map(|c| space.models.iter().position(|m| *m == c.model).unwrap_or(0))
        .collect();
    let identity = || Acc {
        top: vec![[None, None]; n_models],
        feasible: vec![0; n_models],
        admissible: vec![0; n_models],
        unknown: vec![0; n_models],
    };
    let acc = sweep::fold_with_progress(
        space,
        progress,
        identity,
        |acc, index, cell, values, r| {
            let Ok(o) = r else { return };
            let m = model_of[cell];
            acc.feasible[m] += 1;
            let mut ok = true;
            for c in constraints {
                match c.holds(o, values) {
                    Some(true) => {}
                    Some(false) => {
                        ok = false;
                        break;
                    }
                    None => {
                        acc.unknown[m] += 1;
                        ok = false;
                        break;
                    }
                }
            }
            if !ok {
                return;
            }
            let v = objective.value(o, space.cells[cell].sm_count, values);
            if v.is_nan() {
                acc.unknown[m] += 1;
                return;
            }
            acc.admissible[m] += 1;
            insert(&mut acc.top[m], (v, index));
        },
        |mut a, b| {
            for m in 0..n_models {
                for c in b.top[m].iter().flatten() {
                    insert(&mut a.top[m], *c);
                }
                a.feasible[m] += b.feasible[m];
                a.admissible[m] += b.admissible[m];
                a.unknown[m] += b.unknown[m];
            }
            a
        },
    );
    let config = |(objective, index): (f64, u64)| -> Config {
        let (cell, values) = space.values(index);
        let c = &space.cells[cell];
        let time_us = c
            .evaluator
            .evaluate(&values, &mut Default::default())
            .map_or(f64::NAN, |o| o.time_us);
        Config {
            index,
            model: c.model.to_string(),
            kernel: c.kernel.clone(),
            device: c.device.clone(),
            calibration: c.calibration.clone(),
            params: space.params_json(index),
            objective,
            time_us,
        }
    };
    let models: Vec<ModelBest> = (0..n_models)
        .map(|m| {
            let best = acc.top[m][0].map(config);
            let runner_up = acc.top[m][1].map(config);
            let margin_percent = match (&best, &runner_up) {
                (Some(b), Some(r)) if b.objective != 0.0 => {
                    Some((r.objective - b.objective) / b.objective * 100.0)
                }
                _ => None,
            };
            ModelBest {
                model: space.models[m].to_string(),
                best,
                runner_up,
                margin_percent,
                feasible_points: acc.feasible[m],
                admissible_points: acc.admissible[m],
                unknown_points: acc.unknown[m],
            }
        })
        .collect();
    // The same configuration: same device and parameter point, and the same kernel unless the
    // two models read different workloads (a kernel program against an inputs file, or two
    // models' own inputs files).
    let same = |a: &Config, b: &Config| {
        (a.kernel == b.kernel || a.model != b.model)
            && a.device == b.device
            && a.index % space.points_per_cell == b.index % space.points_per_cell
    };
    let reference = models.first().and_then(|m| m.best.clone());
    let Some(reference) = reference else {
        return Err(Error::Infeasible(format!(
            "no point of the space ({} points) can run and satisfy the constraints{}",
            space.len(),
            if constraints.is_empty() {
                String::new()
            } else {
                format!(
                    " ({})",
                    constraints
                        .iter()
                        .map(|c| c.text.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        )));
    };
    let agreeing_models = models
        .iter()
        .filter(|m| m.best.as_ref().is_some_and(|b| same(b, &reference)))
        .map(|m| m.model.clone())
        .collect();
    let prediction = {
        let (cell, values) = space.values(reference.index);
        space.cells[cell].evaluator.predict(&values).ok()
    };
    Ok(BestReport {
        objective: objective_name.to_string(),
        objective_unit: objective.unit().to_string(),
        constraints: constraints.iter().map(|c| c.text.clone()).collect(),
        points: space.len(),
        models,
        agreeing_models,
        prediction,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_two_keeps_order_and_ties_by_index() {
        let mut t: Top2 = [None, None];
        for c in [(5.0, 7), (3.0, 9), (3.0, 2), (4.0, 1), (9.0, 0)] {
            insert(&mut t, c);
        }
        assert_eq!(t, [Some((3.0, 2)), Some((3.0, 9))]);
    }
}
