//! `kerneltime evaluate --suite SUITE.toml [--model M|all] [--json] [--out DIR]`: runs a
//! measurement suite (the format is documented in `kerneltime::suite`) and prints the
//! accuracy per dataset x device x model, with failed cases counted per reason.
//!
//! `--out DIR` writes `summary.json` (what `--json` prints), `cases.csv` (one row per case and
//! model: measured, predicted, ratio or the failure) and `accuracy.md` (a Markdown table per
//! dataset, for the README). Reading flags, printing and writing only; the work is
//! `kerneltime::suite`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::Args;

use super::progress::Bar;
use kerneltime::error::{write_atomic, Error, Result};
use kerneltime::model::ModelId;
use kerneltime::suite::{evaluate_suite, Suite, SuiteEvaluation, SuiteOptions, Toolchain};

#[derive(Debug, Clone, Default, Args)]
pub struct SuiteArgs {
    /// A measurement suite (TOML): kernels, launches, devices and measured times; every case is
    /// compiled/emulated and predicted by the PTX models (instead of --measurements).
    #[arg(
        long,
        value_name = "SUITE.toml",
        conflicts_with_all = ["measurements", "kernel_file", "report", "markdown", "device", "device_file"]
    )]
    pub suite: Option<PathBuf>,
    /// With --suite: write summary.json, cases.csv and accuracy.md into this directory.
    #[arg(long, value_name = "DIR", requires = "suite")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub run: SuiteRunArgs,
}

/// How a suite's cases are compiled and emulated (`evaluate --suite`, `calibrate --suite`).
#[derive(Debug, Clone, Default, Args)]
pub struct SuiteRunArgs {
    /// With --suite: where compiled kernels are kept between runs (default:
    /// $XDG_CACHE_HOME/kerneltime/compile or ~/.cache/kerneltime/compile).
    #[arg(long, value_name = "DIR", requires = "suite")]
    pub cache_dir: Option<PathBuf>,
    /// With --suite: most warp instructions the emulation of one launch may issue, over its
    /// sampled warps (a launch over it fails with that reason).
    #[arg(long, value_name = "N", requires = "suite", default_value_t = kerneltime::emulate::DEFAULT_LAUNCH_BUDGET)]
    pub launch_budget: u64,
}

/// The default compile cache directory.
fn default_cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("kerneltime").join("compile")
}

/// How a suite runs from the flags: the models, the toolchain found beside the suite and the
/// working directory, the compile cache, the launch budget and the calibrations to apply.
pub fn options(
    args: &SuiteRunArgs,
    suite_path: &Path,
    models: Vec<String>,
    calibrations: &[PathBuf],
) -> Result<SuiteOptions> {
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let suite_dir = suite_path.parent().unwrap_or(Path::new("."));
    Ok(SuiteOptions {
        models,
        toolchain: Toolchain::discover(&[&here, suite_dir]),
        cache_dir: args.cache_dir.clone().unwrap_or_else(default_cache_dir),
        launch_budget: match args.launch_budget {
            0 => kerneltime::emulate::DEFAULT_LAUNCH_BUDGET,
            n => n,
        },
        calibrations: calibrations
            .iter()
            .map(|p| super::predict::load_calibration(p))
            .collect::<Result<_>>()?,
        keep_inputs: None,
    })
}

pub fn run(
    args: &SuiteArgs,
    suite_path: &Path,
    model: &str,
    calibrations: &[PathBuf],
    json: bool,
) -> Result<()> {
    let models: Vec<String> = if model == "all" {
        ModelId::from_ptx().map(|m| m.name().to_string()).collect()
    } else if let Some(m) = ModelId::ptx_model(model) {
        vec![m.name().to_string()]
    } else {
        return Err(Error::invalid(
            "--model",
            format!(
                "`{model}` cannot run on a suite; the PTX models are {}, or all",
                ModelId::ptx_names()
            ),
        ));
    };
    let suite = Suite::load(suite_path)?;
    let opts = options(&args.run, suite_path, models, calibrations)?;
    let e = evaluate_suite(&suite, &opts, &Bar::stderr())?;
    if let Some(dir) = &args.out {
        kerneltime::error::create_output_dir(dir)?;
        let json_text = serde_json::to_string_pretty(&e)
            .map_err(|x| Error::invalid("json", format!("cannot serialize: {x}")))?;
        write_atomic(&dir.join("summary.json"), json_text.as_bytes())?;
        write_atomic(&dir.join("cases.csv"), cases_csv(&e)?.as_bytes())?;
        write_atomic(&dir.join("accuracy.md"), markdown(&e).as_bytes())?;
    }
    if json {
        return super::print_json(&e);
    }
    print!("{}", table(&e));
    Ok(())
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{:.1}", x * 100.0))
}

fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.digits$}"))
}

/// The terminal table, the failures and the notes.
pub fn table(e: &SuiteEvaluation) -> String {
    let mut s = String::new();
    let c = &e.compile;
    let _ = writeln!(
        s,
        "{}: {} cases, {} distinct launches; compilations: {} ({} from the cache, {} compiled, {} failed)",
        e.suite, e.cases, e.launches, c.units, c.from_cache, c.compiled, c.failed
    );
    if !c.ptx_by.is_empty() {
        let by: Vec<String> = c.ptx_by.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(s, "PTX by: {}", by.join(", "));
    }
    // Model names: 9 columns, or the longest (`trace (calibrated)`).
    let mw = e.groups.iter().map(|g| g.model.len()).fold(9, usize::max);
    let _ = writeln!(
        s,
        "{:<14} {:<26} {:<mw$} {:>6} {:>6} {:>8} {:>9} {:>8} {:>7} {:>8}",
        "dataset",
        "device",
        "model",
        "n",
        "failed",
        "MAPE %",
        "median %",
        "<=25 %",
        "tau",
        "geomean"
    );
    for g in &e.groups {
        let _ = writeln!(
            s,
            "{:<14} {:<26} {:<mw$} {:>6} {:>6} {:>8} {:>9} {:>8} {:>7} {:>8}",
            g.dataset,
            g.device,
            g.model,
            g.n,
            g.failed,
            pct(g.mape),
            pct(g.median_error),
            pct(g.within_25),
            num(g.kendall_tau, 3),
            num(g.geomean_ratio, 3)
        );
    }
    if !e.failures.is_empty() {
        let _ = writeln!(s, "failed cases:");
        for f in &e.failures {
            let _ = writeln!(
                s,
                "  {}: {} x {} ({}), e.g. {}",
                f.dataset,
                f.cases,
                f.reason,
                f.models.join(", "),
                f.example
            );
        }
    }
    for n in &e.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// One row per case and model.
fn cases_csv(e: &SuiteEvaluation) -> Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let bad = |x: csv::Error| Error::invalid("csv", format!("cannot write: {x}"));
    w.write_record([
        "id",
        "dataset",
        "device",
        "entry",
        "model",
        "measured_us",
        "predicted_us",
        "ratio",
        "failure",
        "message",
        "notes",
    ])
    .map_err(bad)?;
    for r in &e.results {
        let notes = r.notes.join("; ");
        for m in &r.models {
            let (pred, ratio, failure, message) = match &m.outcome {
                Ok(p) => (
                    format!("{p}"),
                    format!("{}", p / r.measured_us),
                    String::new(),
                    String::new(),
                ),
                Err(f) => (
                    String::new(),
                    String::new(),
                    f.reason.clone(),
                    f.message.clone(),
                ),
            };
            w.write_record([
                r.id.as_str(),
                &r.dataset,
                &r.device,
                &r.entry,
                &m.model,
                &format!("{}", r.measured_us),
                &pred,
                &ratio,
                &failure,
                &message,
                &notes,
            ])
            .map_err(bad)?;
        }
    }
    let bytes = w
        .into_inner()
        .map_err(|x| Error::invalid("csv", format!("cannot write: {x}")))?;
    String::from_utf8(bytes).map_err(|x| Error::invalid("csv", format!("not UTF-8: {x}")))
}

/// A Markdown table per dataset: device x model with median error, share within 25 %, Kendall
/// tau, MAPE and the geometric mean of predicted/measured.
pub fn markdown(e: &SuiteEvaluation) -> String {
    let mut s = String::new();
    let mut datasets: Vec<&str> = Vec::new();
    for g in &e.groups {
        if !datasets.contains(&g.dataset.as_str()) {
            datasets.push(&g.dataset);
        }
    }
    for ds in datasets {
        let _ = writeln!(s, "**{ds}**\n");
        let _ = writeln!(
            s,
            "| GPU | model | n | median error % | within 25 % | Kendall tau | MAPE % | geomean pred/meas | failed |"
        );
        let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|---:|");
        for g in e.groups.iter().filter(|g| g.dataset == ds) {
            let failed = if g.failed == 0 {
                "0".to_string()
            } else {
                let reasons: Vec<String> =
                    g.failures.iter().map(|(k, v)| format!("{v} {k}")).collect();
                format!("{} ({})", g.failed, reasons.join(", "))
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                g.device,
                g.model,
                g.n,
                pct(g.median_error),
                pct(g.within_25),
                num(g.kendall_tau, 2),
                pct(g.mape),
                num(g.geomean_ratio, 2),
                failed
            );
        }
        let _ = writeln!(s);
    }
    s
}
