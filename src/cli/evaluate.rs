//! `kerneltime calibrate` and `kerneltime evaluate`: fit models to a measurement file and judge
//! them against it, with a terminal table, JSON, CSV, Markdown, SVG charts and an HTML report.

use std::path::{Path, PathBuf};

use clap::Args;

use super::report;
use super::DeviceSelection;
use kerneltime::error::{write_atomic, Error, Result};
use kerneltime::eval::evaluate::{evaluate, Run};
use kerneltime::fit::calibrate::{
    calibrate_with_progress, prepare_with, CalibrateOptions, Calibration, Scope,
};
use kerneltime::fit::measurements::read_measurements;
use kerneltime::fit::trace_calibration::KernelFileSource;
use kerneltime::model::ModelId;
use kerneltime::progress::Progress;

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// The model: roofline, mwp-cwp, hong-kim, wu, lslag, puchala or trace.
    #[arg(long)]
    pub model: String,
    /// A measurement file (any supported format, plain or gzip).
    #[arg(long, value_name = "FILE", required_unless_present = "suite")]
    pub measurements: Option<PathBuf>,
    /// A measurement suite (TOML, as `evaluate --suite`) instead of a measurement file: its cases
    /// are compiled, emulated and predicted, and the model is fitted to their measured times
    /// (groups by the cases' devices and `name`s). For the PTX models.
    #[arg(long, value_name = "SUITE.toml", conflicts_with_all = ["measurements", "kernel_file"])]
    pub suite: Option<PathBuf>,
    #[command(flatten)]
    pub suite_run: super::suite::SuiteRunArgs,
    /// For `trace`: the PTX kernel file (the sweep's format) naming the measured kernel; the
    /// rows' grid, block and `param:` columns give each launch.
    #[arg(long, value_name = "KERNEL.toml")]
    pub kernel_file: Option<PathBuf>,
    #[command(flatten)]
    pub device: DeviceSelection,
    /// The groups to fit: `all`, or a comma-separated list of `kernel` (kernel x device),
    /// `kernel-architecture` (kernel x compute-capability family), `device`, `architecture`
    /// (compute-capability family) and `global`. Predictions take the most specific group that
    /// covers a (kernel, device) pair, in the order the file's notes list.
    #[arg(long, default_value = "all")]
    pub scope: String,
    /// Folds of the grouped cross-validation (0: none).
    #[arg(long, default_value_t = 3)]
    pub folds: usize,
    /// Bootstrap resamples for 95 % intervals (0: none; each resample is one more fit).
    #[arg(long, default_value_t = 0)]
    pub bootstrap: usize,
    #[arg(long, default_value_t = 2026)]
    pub seed: u64,
    /// Largest number of rows one fit uses (a seeded sample beyond it); errors use every row.
    #[arg(long, default_value_t = 400)]
    pub max_fit_rows: usize,
    /// Where to write the calibration file.
    #[arg(short = 'o', long = "output", value_name = "CAL.toml")]
    pub output: PathBuf,
    /// Also print the calibration as one JSON object on stdout (instead of the table).
    #[arg(long)]
    pub json: bool,
}

pub fn run_calibrate(args: &CalibrateArgs) -> Result<()> {
    let model = parse_model(&args.model)?;
    let device = args.device.resolve_optional()?;
    let (prepared, origin) = match (&args.suite, &args.measurements) {
        (Some(path), _) => {
            if !ModelId::from_ptx().any(|m| m == model) {
                return Err(Error::invalid(
                    "--model",
                    format!(
                        "{model} does not run from PTX, so a suite cannot calibrate it; these can: {}",
                        ModelId::ptx_names()
                    ),
                ));
            }
            if device.is_some() {
                return Err(Error::invalid(
                    "--device",
                    "a suite names each case's device; narrow the suite instead",
                ));
            }
            let suite = kerneltime::suite::Suite::load(path)?;
            let opts =
                super::suite::options(&args.suite_run, path, vec![model.name().into()], &[])?;
            let (prepared, _) = kerneltime::suite::calibration_rows(
                &suite,
                &opts,
                model,
                &super::progress::Bar::stderr(),
            )?;
            (prepared, path.display().to_string())
        }
        (None, Some(measurements)) => {
            let set = read_measurements(measurements)?;
            let kernel_file = read_kernel_file(args.kernel_file.as_deref())?;
            if model == ModelId::Trace && kernel_file.is_none() {
                return Err(Error::missing(
                    "--kernel-file",
                    "calibrating trace needs --kernel-file KERNEL.toml (a PTX kernel file naming the measured kernel) or --suite SUITE.toml",
                ));
            }
            let prepared = prepare_with(
                &set.measurements,
                model,
                device.as_ref(),
                kernel_file.as_ref(),
            )?;
            (prepared, set.file)
        }
        (None, None) => {
            return Err(Error::missing(
                "--measurements",
                "give --measurements FILE or --suite FILE",
            ))
        }
    };
    let options = CalibrateOptions {
        scopes: Scope::parse_list(&args.scope)?,
        folds: args.folds,
        bootstrap: args.bootstrap,
        seed: args.seed,
        max_fit_rows: args.max_fit_rows,
    };
    let bar = super::progress::Bar::stderr();
    let cal = calibrate_with_progress(model, &prepared, &options, &origin, &bar)?;
    write_atomic(&args.output, cal.to_toml()?.as_bytes())?;
    if args.json {
        return super::print_json(&cal);
    }
    println!(
        "{} calibrated on {} rows of {} ({} groups) -> {}",
        model.name(),
        cal.rows,
        origin,
        cal.groups.len(),
        args.output.display()
    );
    println!(
        "{:<20} {:<24} {:<32} {:>6} {:>9} {:>9}  parameters{}",
        "scope",
        "device / family",
        "kernel",
        "n",
        "train %",
        "CV %",
        if cal.bootstrap > 0 {
            " [95 % bootstrap interval]"
        } else {
            ""
        }
    );
    let scope0 = cal.first_scope();
    let mut warnings = 0;
    for g in &cal.groups {
        let params: Vec<String> = g
            .params
            .iter()
            .map(|(k, v)| match g.intervals.get(k) {
                Some([lo, hi]) => format!("{k}={v:.4} [{lo:.4}, {hi:.4}]"),
                None => format!("{k}={v:.4}"),
            })
            .collect();
        let kernel: String = g
            .kernel
            .as_deref()
            .unwrap_or("(all)")
            .chars()
            .take(32)
            .collect();
        let place = if !g.device.is_empty() {
            g.device.clone()
        } else if let Some(a) = &g.architecture {
            format!("cc {a}.x ({} GPUs)", g.devices.len())
        } else {
            format!("all ({} GPUs)", g.devices.len())
        };
        println!(
            "{:<20} {:<24} {:<32} {:>6} {:>9.2} {:>9}  {}",
            g.scope_or(scope0).name(),
            place.chars().take(24).collect::<String>(),
            kernel,
            g.n,
            g.mape_train * 100.0,
            g.mape_cv
                .map_or("-".into(), |c| format!("{:.2}", c * 100.0)),
            params.join(", ")
        );
        for w in &g.warnings {
            warnings += 1;
            println!("  warning: {w}");
        }
    }
    if warnings > 0 {
        eprintln!("{warnings} warnings about parameters the rows cannot determine (listed under their groups)");
    }
    for n in &cal.notes {
        println!("note: {n}");
    }
    Ok(())
}

#[derive(Debug, Args)]
pub struct EvaluateArgs {
    /// A measurement file (any supported format, plain or gzip).
    #[arg(long, value_name = "FILE", required_unless_present = "suite")]
    pub measurements: Option<PathBuf>,
    #[command(flatten)]
    pub suite: super::suite::SuiteArgs,
    /// A model, or `all` (every model that can run on the rows).
    #[arg(long, default_value = "all")]
    pub model: String,
    /// Calibration files from `kerneltime calibrate` (repeatable, one per model): each model is
    /// also evaluated calibrated.
    #[arg(long, value_name = "CAL.toml")]
    pub calibration: Vec<PathBuf>,
    #[command(flatten)]
    pub device: DeviceSelection,
    /// The PTX kernel file of the measured kernel, for the `trace` model (without it, `all`
    /// leaves trace out).
    #[arg(long, value_name = "KERNEL.toml")]
    pub kernel_file: Option<PathBuf>,
    /// Directory for the report: HTML, SVG charts, CSV tables and JSON.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// One JSON object on stdout instead of the table (with --suite: the summary).
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print Markdown tables (per GPU, per GPU and kernel) instead of the table.
    #[arg(long)]
    pub markdown: bool,
}

pub fn run_evaluate(args: &EvaluateArgs) -> Result<()> {
    if let Some(path) = &args.suite.suite {
        return super::suite::run(&args.suite, path, &args.model, &args.calibration, args.json);
    }
    let measurements = args.measurements.as_ref().ok_or_else(|| {
        Error::missing("--measurements", "give --measurements FILE or --suite FILE")
    })?;
    let device = args.device.resolve_optional()?;
    let cals: Vec<Calibration> = args
        .calibration
        .iter()
        .map(|p| Calibration::from_toml(&super::read_text(p)?, &p.display().to_string()))
        .collect::<Result<_>>()?;
    let set = read_measurements(measurements)?;
    let kernel_file = read_kernel_file(args.kernel_file.as_deref())?;
    let mut extra_notes = Vec::new();
    let models: Vec<ModelId> = if args.model == "all" {
        let mut m: Vec<ModelId> = ModelId::ALL
            .iter()
            .copied()
            .filter(|m| m.from_counters())
            .collect();
        if cals.iter().any(|c| c.model == ModelId::Lslag) {
            m.push(ModelId::Lslag);
        }
        let builtin = |k: &str| {
            kerneltime::model::puchala::Builtin::parse(k.split('(').next().unwrap_or(k)).is_ok()
        };
        if set.measurements.iter().any(|x| builtin(&x.kernel)) {
            m.push(ModelId::Puchala);
        }
        if kernel_file.is_some() {
            m.push(ModelId::Trace);
        } else {
            extra_notes.push(
                "trace not evaluated: no PTX kernel file (--kernel-file KERNEL.toml) names the rows' kernel".to_string(),
            );
        }
        m
    } else {
        vec![parse_model(&args.model)?]
    };
    for c in &cals {
        if !models.contains(&c.model) {
            return Err(Error::invalid(
                "--calibration",
                format!(
                    "the calibration is for {}, which --model {} does not evaluate",
                    c.model.name(),
                    args.model
                ),
            ));
        }
    }
    // One preparation per model: each model builds its own inputs from the rows.
    let cal_names: Vec<String> = args
        .calibration
        .iter()
        .map(|p| {
            p.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect();
    let mut prepared = Vec::new();
    for &m in &models {
        let mut runs = Vec::new();
        if m != ModelId::Lslag {
            runs.push(Run::plain(m));
        }
        let of_model: Vec<usize> = (0..cals.len()).filter(|&i| cals[i].model == m).collect();
        for &i in &of_model {
            let mut r = Run::calibrated(m, &cals[i]);
            if of_model.len() > 1 {
                r.label = Some(format!("{} ({})", m.name(), cal_names[i]));
            }
            runs.push(r);
        }
        if !runs.is_empty() {
            prepared.push((
                prepare_with(&set.measurements, m, device.as_ref(), kernel_file.as_ref())?,
                runs,
            ));
        }
    }
    let total: usize = prepared.iter().map(|(p, r)| p.rows.len() * r.len()).sum();
    let bar = super::progress::Bar::stderr();
    bar.start("predictions", total as u64);
    let mut evaluation: Option<kerneltime::eval::evaluate::Evaluation> = None;
    for (p, runs) in &prepared {
        let e = evaluate(p, runs, &set.file, &bar)?;
        match evaluation.as_mut() {
            None => evaluation = Some(e),
            Some(acc) => {
                acc.rows = acc.rows.max(e.rows);
                acc.runs.extend(e.runs);
                acc.aggregates.extend(e.aggregates);
                acc.experiments.extend(e.experiments);
                acc.comparisons.extend(e.comparisons);
                acc.failed.extend(e.failed);
                acc.notes.extend(e.notes);
            }
        }
    }
    bar.finish();
    let mut e = evaluation.ok_or_else(|| Error::invalid("--model", "no model to evaluate"))?;
    e.notes.extend(extra_notes.iter().cloned());
    if e.aggregates.is_empty() {
        return Err(Error::invalid(
            "--measurements",
            format!(
                "no row of {} could be predicted by {} ({})",
                set.file,
                args.model,
                e.failed
                    .values()
                    .flat_map(|m| m.iter().map(|(k, v)| format!("{k}: {v}")))
                    .chain(e.notes.iter().take(1).cloned())
                    .chain(extra_notes.iter().cloned())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        ));
    }
    // A calibration that predicts no row is a mistake (another GPU family, other kernels):
    // say so instead of reporting the uncalibrated models alone.
    for (i, c) in cals.iter().enumerate() {
        let label_of = |r: &kerneltime::eval::evaluate::RunSummary| {
            let mut x = Run::calibrated(c.model, c);
            if cals.iter().filter(|o| o.model == c.model).count() > 1 {
                x.label = Some(format!("{} ({})", c.model.name(), cal_names[i]));
            }
            r.model == x.label()
        };
        if let Some(r) = e.runs.iter().find(|r| label_of(r)) {
            if r.predicted == 0 {
                // The calibration's own reasons first: those of reading the rows are the
                // uncalibrated run's too.
                let (why, n) = r
                    .left_out
                    .iter()
                    .max_by_key(|(why, n)| (!why.starts_with("read: "), **n))
                    .map(|(w, n)| (w.clone(), *n))
                    .unwrap_or_default();
                return Err(Error::invalid(
                    "--calibration",
                    format!(
                        "{} predicts none of the {} rows of {} ({n} rows: {why})",
                        args.calibration[i].display(),
                        r.rows,
                        set.file
                    ),
                ));
            }
        }
    }
    if let Some(dir) = &args.report {
        write_report(dir, &e)?;
    }
    if args.json {
        return super::print_json(&e);
    }
    if args.markdown {
        print!("{}", report::markdown(&e));
        return Ok(());
    }
    print!("{}", report::table(&e));
    if let Some(dir) = &args.report {
        println!("report: {}", dir.join("index.html").display());
    }
    Ok(())
}

/// Reads `--kernel-file` (a PTX kernel file; relative paths inside resolve against it).
fn read_kernel_file(path: Option<&Path>) -> Result<Option<KernelFileSource>> {
    path.map(|p| {
        Ok(KernelFileSource {
            text: super::read_text(p)?,
            origin: p.display().to_string(),
        })
    })
    .transpose()
}

/// Writes every output of an evaluation into `dir`, each file atomically.
pub fn write_report(dir: &Path, e: &kerneltime::eval::evaluate::Evaluation) -> Result<()> {
    kerneltime::error::create_output_dir(dir)?;
    let charts = super::charts::evaluation::charts(e)?;
    let json = serde_json::to_string_pretty(e)
        .map_err(|x| Error::invalid("json", format!("cannot serialize: {x}")))?;
    write_atomic(&dir.join("evaluation.json"), json.as_bytes())?;
    write_atomic(
        &dir.join("aggregates.csv"),
        report::aggregates_csv(e).as_bytes(),
    )?;
    write_atomic(
        &dir.join("experiments.csv"),
        report::experiments_csv(e).as_bytes(),
    )?;
    write_atomic(&dir.join("points.csv"), report::points_csv(e).as_bytes())?;
    for (name, _, svg) in &charts {
        write_atomic(&dir.join(name), svg.as_bytes())?;
    }
    write_atomic(&dir.join("index.html"), report::html(e, &charts).as_bytes())?;
    Ok(())
}

/// Reads `--model` (one model of the registry).
fn parse_model(text: &str) -> Result<ModelId> {
    text.parse()
        .map_err(|e: Error| Error::invalid("--model", e.to_string().replacen("model: ", "", 1)))
}
