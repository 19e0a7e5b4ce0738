//! `kerneltime best`: the configuration of a space that minimises an objective under
//! constraints, per model, with the runner-up and its margin.

use std::fmt::Write as _;

use clap::Args;

use super::{params_text, SpaceArgs};
use crate::cli::print_json;
use crate::cli::units::time_us;
use kerneltime::error::Result;
use kerneltime::explore::best::{self, Constraint, Objective};

/// `kerneltime best`.
#[derive(Debug, Args)]
pub struct BestArgs {
    #[command(flatten)]
    pub space: SpaceArgs,
    /// What to minimise: time, cycles, time-per-element, time-x-sms.
    #[arg(long, default_value = "time")]
    pub objective: String,
    /// The parameter counting elements, for time-per-element.
    #[arg(long, default_value = "n")]
    pub elements: String,
    /// A constraint QUANTITY OP NUMBER: a swept parameter or time_us, cycles, occupancy,
    /// threads_per_block, blocks, shared_memory_bytes (e.g. occupancy>=0.5). Repeatable.
    #[arg(long = "constraint", value_name = "EXPR")]
    pub constraints: Vec<String>,
    /// One JSON object on stdout: each model's best point and runner-up.
    #[arg(long)]
    pub json: bool,
}

/// Runs `best`.
pub fn run_best(args: &BestArgs) -> Result<()> {
    let space = args.space.build()?;
    let objective = Objective::parse(&args.objective, &args.elements, &space)?;
    let constraints = args
        .constraints
        .iter()
        .map(|c| Constraint::parse(c, &space))
        .collect::<Result<Vec<_>>>()?;
    let report = best::search_with_progress(
        &space,
        objective,
        &args.objective,
        &constraints,
        &crate::cli::progress::Bar::stderr(),
    )?;
    if args.json {
        return print_json(&report);
    }
    print!("{}", best_text(&report));
    Ok(())
}

fn best_text(r: &best::BestReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "objective: {} ({}) over {} points{}",
        r.objective,
        r.objective_unit,
        r.points,
        if r.constraints.is_empty() {
            String::new()
        } else {
            format!(", subject to {}", r.constraints.join(", "))
        }
    );
    for m in &r.models {
        match &m.best {
            Some(b) => {
                let objective = if r.objective_unit == "us" {
                    time_us(b.objective)
                } else {
                    format!(
                        "{} {} ({})",
                        b.objective,
                        r.objective_unit,
                        time_us(b.time_us)
                    )
                };
                let _ = writeln!(
                    s,
                    "{}: best {} on {}{} with {} -> {}",
                    m.model,
                    b.kernel,
                    b.device,
                    calibration_text(&b.calibration),
                    params_text(&b.params),
                    objective
                );
                if let (Some(ru), Some(margin)) = (&m.runner_up, m.margin_percent) {
                    let _ = writeln!(
                        s,
                        "  runner-up {} on {}{} with {} -> {} ({:+.3} %)",
                        ru.kernel,
                        ru.device,
                        calibration_text(&ru.calibration),
                        params_text(&ru.params),
                        if r.objective_unit == "us" {
                            time_us(ru.objective)
                        } else {
                            ru.objective.to_string()
                        },
                        margin
                    );
                }
            }
            None => {
                let _ = writeln!(s, "{}: no admissible point", m.model);
            }
        }
        let _ = writeln!(
            s,
            "  {} feasible points, {} satisfy the constraints{}",
            m.feasible_points,
            m.admissible_points,
            if m.unknown_points > 0 {
                format!(
                    ", {} excluded because the model does not report a constrained quantity",
                    m.unknown_points
                )
            } else {
                String::new()
            }
        );
    }
    if r.models.len() > 1 {
        let _ = writeln!(
            s,
            "models choosing {}'s configuration: {}",
            r.models[0].model,
            r.agreeing_models.join(", ")
        );
    }
    if let Some(p) = &r.prediction {
        for n in &p.notes {
            let _ = writeln!(s, "note: {n}");
        }
    }
    s
}

/// ` (calibrated with STEM)`, or nothing for an uncalibrated configuration.
fn calibration_text(name: &str) -> String {
    if name == "none" {
        String::new()
    } else {
        format!(" (calibrated with {name})")
    }
}
