//! `kerneltime compare`: two kernels of one model point by point (time ratios), or GPUs ranked
//! for one kernel, with CSV tables and SVG charts (`cli::charts::explore`).

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;

use super::{file_slug, params_text, SpaceArgs};
use crate::cli::charts;
use crate::cli::print_json;
use crate::cli::units::time_us;
use kerneltime::error::{write_atomic, Result};
use kerneltime::explore::compare::{
    compare_kernels_with_progress, rank_devices, KernelComparison, Ranking,
};

/// `kerneltime compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub space: SpaceArgs,
    /// Rank GPUs for one kernel (default: the whole catalogue, or the --device filters) instead
    /// of comparing two kernels.
    #[arg(long)]
    pub rank_devices: bool,
    /// What ranks GPUs (the minimum over the parameter space): time, cycles, time-per-element,
    /// time-x-sms.
    #[arg(long, default_value = "time")]
    pub objective: String,
    /// The parameter counting elements, for time-per-element.
    #[arg(long, default_value = "n")]
    pub elements: String,
    /// Write compare.csv and SVG charts into this directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// One JSON object on stdout: the comparison (or the ranking with --rank-devices).
    #[arg(long)]
    pub json: bool,
}

/// Runs `compare`.
pub fn run_compare(args: &CompareArgs) -> Result<()> {
    if args.rank_devices {
        let ranking = rank_devices(
            &args.space.spec()?,
            args.space.max_points,
            &args.objective,
            &args.elements,
        )?;
        if let Some(dir) = &args.out {
            kerneltime::error::create_output_dir(dir)?;
            write_atomic(&dir.join("ranking.csv"), ranking_csv(&ranking).as_bytes())?;
            write_atomic(
                &dir.join("ranking.svg"),
                charts::explore::ranking_svg(&ranking)?.as_bytes(),
            )?;
        }
        if args.json {
            return print_json(&ranking);
        }
        println!(
            "{} on {}: GPUs by {} ({})",
            ranking.kernel, ranking.model, ranking.objective, ranking.objective_unit
        );
        for d in &ranking.devices {
            let objective = if ranking.objective_unit == "us" {
                time_us(d.objective)
            } else {
                format!("{:.4}", d.objective)
            };
            println!(
                "{:>3}. {:<40} {:>14}  {}",
                d.rank,
                d.device,
                objective,
                params_text(&d.params)
            );
        }
        for (d, why) in &ranking.skipped {
            println!("skipped {d}: {why}");
        }
        if let Some(dir) = &args.out {
            kerneltime::error::create_output_dir(dir)?;
            println!("wrote ranking.csv and ranking.svg in {}", dir.display());
        }
        return Ok(());
    }
    let space = args.space.build()?;
    let cmp = compare_kernels_with_progress(&space, &crate::cli::progress::Bar::stderr())?;
    let mut charts = Vec::new();
    if let Some(dir) = &args.out {
        kerneltime::error::create_output_dir(dir)?;
        write_atomic(&dir.join("compare.csv"), compare_csv(&cmp).as_bytes())?;
        for (device, svg) in charts::explore::compare_svgs(&space, &cmp)? {
            let name = format!("ratio-{}.svg", file_slug(&device));
            write_atomic(&dir.join(&name), svg.as_bytes())?;
            charts.push(name);
        }
    }
    if args.json {
        return print_json(&cmp);
    }
    println!(
        "{} / {} on {}: {} is faster at {} points, {} at {}",
        cmp.kernel_a,
        cmp.kernel_b,
        cmp.model,
        cmp.kernel_a,
        cmp.a_faster,
        cmp.kernel_b,
        cmp.b_faster
    );
    for p in &cmp.points {
        println!(
            "{:<36} {:<24} {}",
            p.device,
            params_text(&p.params),
            p.ratio.map_or("-".to_string(), |r| format!("{r:.4}"))
        );
    }
    if let Some(dir) = &args.out {
        println!(
            "wrote compare.csv and {} in {}",
            charts.join(", "),
            dir.display()
        );
    }
    Ok(())
}

fn compare_csv(c: &KernelComparison) -> String {
    let mut names: Vec<&String> = c
        .points
        .first()
        .map(|p| p.params.keys().collect())
        .unwrap_or_default();
    names.sort();
    let mut s = String::from("device,");
    for n in &names {
        let _ = write!(s, "{},", kerneltime::explore::sweep::csv_field(n));
    }
    let _ = writeln!(s, "time_{}_us,time_{}_us,ratio", c.kernel_a, c.kernel_b);
    let num = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for p in &c.points {
        let _ = write!(s, "{},", kerneltime::explore::sweep::csv_field(&p.device));
        for n in &names {
            let _ = write!(
                s,
                "{},",
                p.params.get(*n).map(|v| v.to_string()).unwrap_or_default()
            );
        }
        let _ = writeln!(
            s,
            "{},{},{}",
            num(p.time_a_us),
            num(p.time_b_us),
            num(p.ratio)
        );
    }
    s
}

fn ranking_csv(r: &Ranking) -> String {
    let mut s = String::from("rank,device,objective,time_us,params\n");
    for d in &r.devices {
        let _ = writeln!(
            s,
            "{},{},{},{},{}",
            d.rank,
            kerneltime::explore::sweep::csv_field(&d.device),
            d.objective,
            d.time_us,
            kerneltime::explore::sweep::csv_field(&params_text(&d.params))
        );
    }
    s
}
