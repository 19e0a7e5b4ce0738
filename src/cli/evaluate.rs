//! `kerneltime calibrate` and `kerneltime evaluate`: fit models to a measurement file and judge
//! them against it, with a terminal table, JSON, CSV, Markdown, SVG charts and an HTML report.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::report;
use super::DeviceSelection;
use kerneltime::error::{write_atomic, Error, Result};
use kerneltime::eval::evaluate::{evaluate, Run};
use kerneltime::fit::calibrate::{
    calibrate_with_progress, prepare_with, CalibrateOptions, Calibration, Model, Scope,
};
use kerneltime::fit::measurements::read_measurements;
use kerneltime::fit::trace_calibration::KernelFileSource;

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// The model: roofline, mwp-cwp, hong-kim, wu, lslag, puchala or trace.
    #[arg(long)]
    pub model: String,
    /// A measurement file (any supported format, plain or gzip).
    #[arg(long, value_name = "FILE")]
    pub measurements: PathBuf,
    /// For `trace`: the PTX kernel file (the sweep's format) naming the measured kernel; the
    /// rows' grid, block and `param:` columns give each launch.
    #[arg(long, value_name = "KERNEL.toml")]
    pub kernel_file: Option<PathBuf>,
    #[command(flatten)]
    pub device: DeviceSelection,
    /// One parameter set per `device` or per `kernel` (device and kernel).
    #[arg(long, default_value = "kernel")]
    pub scope: String,
    /// Folds of the grouped cross-validation (0: none).
    #[arg(long, default_value_t = 5)]
    pub folds: usize,
    /// Bootstrap resamples for the intervals (0: none).
    #[arg(long, default_value_t = 20)]
    pub bootstrap: usize,
    #[arg(long, default_value_t = 2026)]
    pub seed: u64,
    /// Largest number of rows one fit uses (a seeded sample beyond it).
    #[arg(long, default_value_t = 2000)]
    pub max_fit_rows: usize,
    /// Where to write the calibration file.
    #[arg(short = 'o', long = "output", value_name = "CAL.toml")]
    pub output: PathBuf,
    /// Print the calibration as JSON too.
    #[arg(long)]
    pub json: bool,
}

pub fn run_calibrate(args: &CalibrateArgs) -> Result<()> {
    let model = Model::parse(&args.model)?;
    let device = args.device.resolve_optional()?;
    let set = read_measurements(&args.measurements)?;
    let kernel_file = read_kernel_file(args.kernel_file.as_deref())?;
    if model == Model::Trace && kernel_file.is_none() {
        return Err(Error::missing(
            "--kernel-file",
            "calibrating trace needs --kernel-file KERNEL.toml (a PTX kernel file naming the measured kernel)",
        ));
    }
    let prepared = prepare_with(
        &set.measurements,
        model,
        device.as_ref(),
        kernel_file.as_ref(),
    )?;
    let options = CalibrateOptions {
        scope: Scope::parse(&args.scope)?,
        folds: args.folds,
        bootstrap: args.bootstrap,
        seed: args.seed,
        max_fit_rows: args.max_fit_rows,
    };
    let bar = if std::io::stderr().is_terminal() {
        let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        if let Ok(style) =
            ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} groups fitted")
        {
            b.set_style(style);
        }
        b
    } else {
        ProgressBar::hidden()
    };
    let cal = calibrate_with_progress(model, &prepared, &options, &set.file, &|done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    write_atomic(&args.output, cal.to_toml()?.as_bytes())?;
    if args.json {
        return super::print_json(&cal);
    }
    println!(
        "{} calibrated on {} rows of {} ({} groups) -> {}",
        model.name(),
        cal.rows,
        set.file,
        cal.groups.len(),
        args.output.display()
    );
    println!(
        "{:<24} {:<36} {:>6} {:>9} {:>9}  parameters [95 % bootstrap interval]",
        "device", "kernel", "n", "train %", "CV %"
    );
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
            .take(36)
            .collect();
        println!(
            "{:<24} {:<36} {:>6} {:>9.2} {:>9}  {}",
            g.device,
            kernel,
            g.n,
            g.mape_train * 100.0,
            g.mape_cv
                .map_or("-".into(), |c| format!("{:.2}", c * 100.0)),
            params.join(", ")
        );
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
    /// Print JSON instead of the table.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print Markdown tables (per GPU, per GPU and kernel) instead of the table.
    #[arg(long)]
    pub markdown: bool,
}

pub fn run_evaluate(args: &EvaluateArgs) -> Result<()> {
    if let Some(path) = &args.suite.suite {
        return super::suite::run(&args.suite, path, &args.model, args.json);
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
    let models: Vec<Model> = if args.model == "all" {
        let mut m: Vec<Model> = Model::ALL
            .iter()
            .copied()
            .filter(|m| m.uses_counters())
            .collect();
        if cals.iter().any(|c| c.model == Model::Lslag) {
            m.push(Model::Lslag);
        }
        let builtin = |k: &str| {
            kerneltime::model::puchala::Builtin::parse(k.split('(').next().unwrap_or(k)).is_ok()
        };
        if set.measurements.iter().any(|x| builtin(&x.kernel)) {
            m.push(Model::Puchala);
        }
        if kernel_file.is_some() {
            m.push(Model::Trace);
        } else {
            extra_notes.push(
                "trace not evaluated: no PTX kernel file (--kernel-file KERNEL.toml) names the rows' kernel".to_string(),
            );
        }
        m
    } else {
        vec![Model::parse(&args.model)?]
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
    // One preparation per input family: the counter models share theirs.
    let family = |m: Model| {
        if m.uses_counters() {
            Model::Roofline
        } else {
            m
        }
    };
    let mut families: Vec<(Model, Vec<Run>)> = Vec::new();
    for &m in &models {
        let idx = match families.iter().position(|(f, _)| *f == family(m)) {
            Some(i) => i,
            None => {
                families.push((family(m), Vec::new()));
                families.len() - 1
            }
        };
        if m != Model::Lslag {
            families[idx].1.push(Run {
                model: m,
                calibration: None,
            });
        }
        for c in cals.iter().filter(|c| c.model == m) {
            families[idx].1.push(Run {
                model: m,
                calibration: Some(c),
            });
        }
    }
    let mut prepared = Vec::new();
    for (f, runs) in families {
        if !runs.is_empty() {
            prepared.push((
                prepare_with(&set.measurements, f, device.as_ref(), kernel_file.as_ref())?,
                runs,
            ));
        }
    }
    let total: usize = prepared.iter().map(|(p, r)| p.rows.len() * r.len()).sum();
    let bar = if std::io::stderr().is_terminal() && total > 10_000 {
        let b = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
        if let Ok(style) =
            ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {pos}/{len} predictions")
        {
            b.set_style(style);
        }
        b
    } else {
        ProgressBar::hidden()
    };
    let tick = || bar.inc(1);
    let mut evaluation: Option<kerneltime::eval::evaluate::Evaluation> = None;
    for (p, runs) in &prepared {
        let e = evaluate(p, runs, &set.file, &tick)?;
        match evaluation.as_mut() {
            None => evaluation = Some(e),
            Some(acc) => {
                acc.rows = acc.rows.max(e.rows);
                acc.aggregates.extend(e.aggregates);
                acc.experiments.extend(e.experiments);
                acc.comparisons.extend(e.comparisons);
                acc.failed.extend(e.failed);
                acc.notes.extend(e.notes);
            }
        }
    }
    bar.finish_and_clear();
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
    let charts = report::charts(e)?;
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

/// `predict --calibration CAL.toml`: the model with the calibration's parameters for the device
/// (and `--kernel`, when the calibration is per kernel).
pub fn run_predict_calibrated(args: &super::predict::PredictArgs, cal_path: &Path) -> Result<()> {
    use kerneltime::fit::calibrate::{apply_hong_kim, apply_mwp_cwp, apply_wu, param_specs};
    use kerneltime::model::{hong_kim, mwp_cwp, roofline, wu, Prediction};
    use kerneltime::workload::analytical::{HongKimInputs, MwpCwpInputs, WuInputs};

    let origin = cal_path.display().to_string();
    let cal = Calibration::from_toml(&super::read_text(cal_path)?, &origin)?;
    let model = Model::parse(&args.model)?;
    if model != cal.model {
        return Err(Error::invalid(
            "--calibration",
            format!(
                "{origin} calibrates {}, not {}",
                cal.model.name(),
                model.name()
            ),
        ));
    }
    let device = args.device.resolve()?;
    // A trace calibration per kernel is found by the PTX entry's name.
    let kernel = args
        .kernel
        .clone()
        .or_else(|| {
            (model == Model::Trace)
                .then(|| args.entry.clone())
                .flatten()
        })
        .unwrap_or_default();
    let q = cal.params_for(&device, &kernel).ok_or_else(|| {
        let kernels: Vec<String> = cal
            .groups
            .iter()
            .filter(|g| g.device == device.name)
            .filter_map(|g| g.kernel.clone())
            .collect();
        if kernels.is_empty() {
            Error::invalid(
                "--device",
                format!("{origin} has no parameters for {}", device.name),
            )
        } else {
            Error::missing(
                "--kernel",
                format!(
                    "{origin} is calibrated per kernel; name one of: {}",
                    kernels.join(", ")
                ),
            )
        }
    })?;
    let inputs_text = |what: &str| -> Result<(String, String)> {
        let p = args.inputs.as_ref().ok_or_else(|| {
            Error::missing(
                "--inputs",
                format!("the {what} model needs --inputs FILE.toml"),
            )
        })?;
        Ok((super::read_text(p)?, p.display().to_string()))
    };
    let launch = q.get(3).copied().unwrap_or(0.0);
    let mut p = match model {
        Model::Roofline => {
            let (text, o) = inputs_text("roofline")?;
            let i = roofline::RooflineInputs::from_toml(&text, &o)?;
            kerneltime::fit::calibrate::roofline_prediction(&device, &i, Some(&q))?
        }
        Model::MwpCwp => {
            let (text, o) = inputs_text("mwp-cwp")?;
            let mut i = MwpCwpInputs::from_toml(&text, &o, Some(&device))?.inputs;
            apply_mwp_cwp(&mut i, &q);
            let r = mwp_cwp::predict(&i)?;
            r.to_prediction(&device.name, device.cycles_to_us(r.t_exec) + launch)
        }
        Model::HongKim => {
            let (text, o) = inputs_text("hong-kim")?;
            let mut i = HongKimInputs::from_toml(&text, &o, Some(&device))?.inputs;
            apply_hong_kim(&mut i, &q);
            let r = hong_kim::predict(&i)?;
            r.to_prediction(
                &device.name,
                device.cycles_to_us(r.exec_cycles_with_synch) + launch,
            )
        }
        Model::Wu => {
            let (text, o) = inputs_text("wu")?;
            let mut i = WuInputs::from_toml(&text, &o, Some(&device))?.inputs;
            apply_wu(&mut i, &q);
            let r = wu::predict(&i)?;
            r.to_prediction(
                &device.name,
                device.cycles_to_us(r.exec_cycles_sm) + r.transfer_us + launch,
            )
        }
        Model::Puchala => {
            use kerneltime::fit::calibrate::{predict_row, Row, RowInputs};
            let name = args.kernel.as_deref().ok_or_else(|| {
                Error::missing(
                    "--kernel",
                    "puchala needs a built-in --kernel (dwt-matrix, dwt-lattice, mtx-mul-vec)",
                )
            })?;
            let builtin = kerneltime::model::puchala::Builtin::parse(name)?;
            let points =
                kerneltime::workload::params::ParamSpace::parse_all(&args.params, "--param")?
                    .points();
            let [point] = points.as_slice() else {
                return Err(Error::invalid(
                    "--param",
                    "give one value per parameter with --calibration",
                ));
            };
            builtin.check_params(point)?;
            let row = Row {
                device: 0,
                kernel: builtin.name().into(),
                point: String::new(),
                shape: String::new(),
                x: None,
                measured_us: 1.0,
                launch_api_us: None,
                inputs: RowInputs::Puchala {
                    kernel: builtin,
                    params: point.clone(),
                },
                source: String::new(),
            };
            let mut p = Prediction::new(
                "puchala",
                &device.name,
                predict_row(model, &device, &row, Some(&q))?,
            );
            p.params = point.to_json();
            p
        }
        Model::Trace => predict_trace_calibrated(args, &device, &q)?,
        Model::Lslag => {
            let gamma = args
                .gamma
                .ok_or_else(|| Error::missing("--gamma", "lslag needs --gamma"))?;
            let s = args
                .s
                .ok_or_else(|| Error::missing("--s", "lslag needs --s"))?;
            kerneltime::error::positive("--gamma", gamma)?;
            kerneltime::error::non_negative("--s", s)?;
            Prediction::new("lslag", &device.name, (q[0] / gamma + q[1]) * s)
        }
    };
    let params: Vec<String> = param_specs(model)
        .iter()
        .zip(&q)
        .map(|(s, v)| format!("{}={v}", s.name))
        .collect();
    p.notes
        .push(format!("calibrated with {origin}: {}", params.join(", ")));
    if args.json {
        return super::print_json(&p);
    }
    println!(
        "{} on {} (calibrated): {:.3} us",
        p.model, p.device, p.time_us
    );
    for n in &p.notes {
        println!("  note: {n}");
    }
    Ok(())
}

/// `predict --model trace --calibration CAL.toml --ptx ..`: the kernel emulated as `predict`
/// does, simulated with the calibrated DRAM and L2 latencies, plus the launch overhead.
fn predict_trace_calibrated(
    args: &super::predict::PredictArgs,
    device: &kerneltime::device::Device,
    q: &[f64],
) -> Result<kerneltime::model::Prediction> {
    use kerneltime::model::trace_sim::{self, KernelResources};
    let missing = |flag: &str| {
        Error::missing(
            flag,
            "trace with --calibration reads a kernel: --ptx FILE.ptx --entry NAME --grid X[,Y,Z] --block X[,Y,Z]",
        )
    };
    let ptx = args.ptx.as_ref().ok_or_else(|| missing("--ptx"))?;
    let entry = args.entry.clone().ok_or_else(|| missing("--entry"))?;
    let grid = args.grid.clone().ok_or_else(|| missing("--grid"))?;
    let block = args.block.clone().ok_or_else(|| missing("--block"))?;
    let report = match &args.resources {
        Some(p) => Some(
            kerneltime::ptx::resources::parse_report(&super::read_text(p)?)
                .into_iter()
                .find(|r| r.name == entry)
                .ok_or_else(|| Error::file(p, format!("has no entry for kernel `{entry}`")))?,
        ),
        None => None,
    };
    let em = super::trace::emulate_file(
        ptx,
        &entry,
        &grid,
        &block,
        &args.args,
        kerneltime::emulate::Options::default(),
    )?;
    let res = KernelResources {
        registers_per_thread: report
            .as_ref()
            .and_then(|r| r.registers)
            .map_or(32, |r| r as u32),
        shared_bytes_per_block: report
            .as_ref()
            .and_then(|r| r.shared_bytes)
            .unwrap_or(em.shared_bytes_static) as u32,
    };
    let mut lat = kerneltime::device::latencies::for_device(device)?;
    lat.values.dram *= q[0];
    lat.values.l2_hit *= q[1];
    let (mut p, _) = trace_sim::predict(device, &em, res, &lat)?;
    p.time_us += q[2];
    p.notes.push(format!(
        "launch overhead {:.3} us added to the simulated time",
        q[2]
    ));
    if report.is_none() {
        p.notes
            .push("no resource report (--resources): 32 registers per thread assumed".into());
    }
    Ok(p)
}
