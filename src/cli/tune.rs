//! `kerneltime tune SPEC.json --device NAME [...]`: ranks the configurations of a FAIR autotuning
//! search space on each device without a GPU, and with `--evaluate MEASURED` scores that ranking
//! against a measured Kernel Tuner cache.
//!
//! Output contract: one row per configuration x device with `device`, every tunable parameter,
//! `status` (`ok`, `cannot-launch`, `compile-error`, or `model-error` when the model itself
//! failed), `predicted_us`, `rank` (1 = fastest predicted, per device) and `reason`; as CSV
//! (`-o FILE.csv`, or on stdout) or JSON lines (`--json`). `--cache-out FILE.json` also writes
//! the predictions as a Kernel Tuner cache. With `--evaluate`, stdout holds the scores (a table,
//! or one JSON object with `--json`) and the rows go only to `-o`.
//!
//! Reads flags and files, prints; the work is `kerneltime::tune`.

use std::path::PathBuf;

use clap::Args;
use serde_json::{json, Map, Value as Json};

use super::print_json;
use super::units::time_us;
use kerneltime::compile::cache::default_dir;
use kerneltime::compile::Choice;
use kerneltime::device::{catalogue, Device};
use kerneltime::emulate::DataArg;
use kerneltime::error::{write_atomic, Error, Result};
use kerneltime::tune::evaluate::{evaluate, sample_measured, timed_pairs, Evaluation, TopK};
use kerneltime::tune::kt_cache::{cache_text, MeasuredCache};
use kerneltime::tune::launch::Overrides;
use kerneltime::tune::space::Selection;
use kerneltime::tune::spec::TuneSpec;
use kerneltime::tune::{tune, Row, Status, TuneReport, TuneRequest, DEFAULT_MODEL};

/// The k of the top-k regret when `--top` is not given.
const DEFAULT_EVALUATE_TOP: usize = 10;

#[derive(Debug, Args)]
pub struct TuneArgs {
    /// The search space in the FAIR autotuning benchmark format (JSON); its kernel file is
    /// relative to it.
    #[arg(value_name = "SPEC.json")]
    pub spec: PathBuf,
    /// A catalogue GPU by name or alias. Repeatable.
    #[arg(long = "device", value_name = "NAME")]
    pub devices: Vec<String>,
    /// A device description file. Repeatable.
    #[arg(long = "device-file", value_name = "FILE.toml")]
    pub device_files: Vec<PathBuf>,
    /// The core clock in MHz cycles become time at, for every device, instead of their
    /// descriptions' (say the clock `nvidia-smi` shows on a laptop part).
    #[arg(long, value_name = "MHZ")]
    pub clock_mhz: Option<f64>,
    /// Rank N configurations drawn uniformly at random (see --seed) instead of all; with
    /// --evaluate, drawn from the configurations the measured cache holds (its timed and its
    /// failed ones in proportion).
    #[arg(long, value_name = "N", conflicts_with = "all")]
    pub sample: Option<usize>,
    /// Seed of --sample.
    #[arg(long, value_name = "S", default_value_t = 0)]
    pub seed: u64,
    /// Rank every configuration of the space (the default).
    #[arg(long)]
    pub all: bool,
    /// Output only the K best-ranked configurations per device; with --evaluate, the k of the
    /// top-k regret (default 10).
    #[arg(long, value_name = "K")]
    pub top: Option<usize>,
    /// The model that predicts each configuration from its PTX: trace, mwp-cwp, hong-kim, wu,
    /// puchala.
    #[arg(long, default_value = DEFAULT_MODEL)]
    pub model: String,
    /// Write the ranking as CSV to this file (else CSV on stdout).
    #[arg(short = 'o', long = "output", value_name = "FILE.csv")]
    pub output: Option<PathBuf>,
    /// JSON lines on stdout instead of CSV (with --evaluate: the scores as one JSON object).
    #[arg(long)]
    pub json: bool,
    /// Also write the predictions as a Kernel Tuner cache file (times in ms), for one device.
    #[arg(long, value_name = "FILE.json")]
    pub cache_out: Option<PathBuf>,
    /// Score the ranking against a measured Kernel Tuner cache or T4 results file (.json or
    /// .json.gz).
    #[arg(long, value_name = "MEASURED")]
    pub evaluate: Option<PathBuf>,
    /// With --evaluate: also draw predicted against measured time, coloured by the parameter
    /// the error moves with most, beside that parameter's predicted / measured per value (SVG).
    #[arg(long, value_name = "FILE.svg", requires = "evaluate")]
    pub plot: Option<PathBuf>,
    /// The problem size X[,Y,Z], replacing the spec's ProblemSize.
    #[arg(long, value_name = "X[,Y,Z]")]
    pub problem_size: Option<String>,
    /// A kernel argument NAME=EXPR (NAME: parameter name or position; EXPR may use the tuning
    /// parameters and ProblemSize, e.g. n=ProblemSize[0]). Repeatable.
    #[arg(long = "arg", value_name = "NAME=EXPR")]
    pub args: Vec<String>,
    /// A preprocessor define K=V for every configuration (replaces one of the same name).
    /// Repeatable.
    #[arg(long = "define", value_name = "K=V")]
    pub defines: Vec<String>,
    /// What a buffer holds (a pointer argument, or a `__constant__`/`__device__` array the
    /// source declares): NAME=const:V, iota[:START[:STEP]], uniform:LO:HI[:SEED] or
    /// file:PATH. Repeatable.
    #[arg(long = "data", value_name = "NAME=SPEC")]
    pub data: Vec<String>,
    /// A kernel argument that is mapped host memory (zero-copy): its traffic crosses the host
    /// link. Repeatable.
    #[arg(long = "mapped-host", value_name = "NAME")]
    pub mapped_host: Vec<String>,
    /// The host link's bandwidth per direction, GB/s (default: PCIe x16 of the architecture).
    #[arg(long, value_name = "GBS")]
    pub host_link_gbs: Option<f64>,
    /// Keep compiled results here (default: the user's cache folder, kerneltime/compile); the
    /// accuracy harness's --cache-dir holds the same entries.
    #[arg(
        long,
        visible_alias = "cache-dir",
        value_name = "DIR",
        conflicts_with = "no_compile_cache"
    )]
    pub compile_cache: Option<PathBuf>,
    /// Compile everything afresh and keep nothing.
    #[arg(long)]
    pub no_compile_cache: bool,
    /// Predict every configuration afresh instead of reusing whole results kept in the compile cache's folder (predictions/, keyed by this build).
    #[arg(long)]
    pub no_prediction_cache: bool,
    /// The CUDA compiler: auto (NVRTC when found, else nvcc), nvrtc or nvcc.
    #[arg(long, default_value = "auto")]
    pub compiler: String,
}

/// A library field name as the flag that sets it.
fn as_flag(e: Error) -> Error {
    let flag = |name: &str| -> Option<&'static str> {
        Some(match name {
            "arg" => "--arg",
            "define" => "--define",
            "mapped_host" => "--mapped-host",
            "data" => "--data",
            "problem_size" => "--problem-size",
            "model" => "--model",
            "compiler" => "--compiler",
            "device" => "--device",
            _ => return None,
        })
    };
    match e {
        Error::InvalidInput { name, message } => Error::InvalidInput {
            name: flag(&name).map_or(name, str::to_string),
            message,
        },
        Error::MissingInput { name, message } => Error::MissingInput {
            name: flag(&name).map_or(name, str::to_string),
            message,
        },
        other => other,
    }
}

fn devices(a: &TuneArgs, measured: Option<&MeasuredCache>) -> Result<Vec<Device>> {
    let mut out = Vec::new();
    for name in &a.devices {
        out.push(catalogue::find(name)?.clone());
    }
    for path in &a.device_files {
        out.push(Device::load(path)?);
    }
    if out.is_empty() {
        if let Some(name) = measured.and_then(|m| m.device_name.as_deref()) {
            let d = catalogue::find(name).map_err(|e| {
                Error::missing(
                    "--device",
                    format!("the measured cache's GPU `{name}` is not in the catalogue ({e}); give --device or --device-file"),
                )
            })?;
            out.push(d.clone());
        }
    }
    let out = out
        .into_iter()
        .map(|d| d.at_core_clock(a.clock_mhz, "--clock-mhz"))
        .collect::<Result<Vec<_>>>()?;
    if out.is_empty() {
        return Err(Error::missing(
            "--device",
            "give a GPU with --device NAME (repeatable) or --device-file FILE.toml",
        ));
    }
    Ok(out)
}

fn overrides(a: &TuneArgs) -> Result<Overrides> {
    let problem_size = match &a.problem_size {
        Some(text) => {
            let sizes: Option<Vec<i64>> = text
                .split(',')
                .map(|p| p.trim().parse::<i64>().ok().filter(|&v| v >= 1))
                .collect();
            match sizes {
                Some(s) if (1..=3).contains(&s.len()) => Some(s),
                _ => {
                    return Err(Error::invalid(
                        "--problem-size",
                        format!(
                        "expected one to three whole numbers X[,Y,Z] of at least 1, got `{text}`"
                    ),
                    ))
                }
            }
        }
        None => None,
    };
    Ok(Overrides {
        problem_size,
        args: a.args.clone(),
        defines: a.defines.clone(),
        data: a
            .data
            .iter()
            .map(|d| DataArg::parse("--data", d))
            .collect::<Result<_>>()?,
        mapped_host: a.mapped_host.clone(),
    })
}

pub fn run(a: &TuneArgs) -> Result<()> {
    if a.sample == Some(0) {
        return Err(Error::invalid("--sample", "must be at least 1"));
    }
    if a.top == Some(0) {
        return Err(Error::invalid("--top", "must be at least 1"));
    }
    if let Some(g) = a.host_link_gbs {
        kerneltime::error::positive("--host-link-gbs", g)?;
    }
    let spec = TuneSpec::load(&a.spec)?;
    let measured = match &a.evaluate {
        Some(p) => Some(MeasuredCache::load(p)?),
        None => None,
    };
    let devices = devices(a, measured.as_ref())?;
    if measured.is_some() && devices.len() != 1 {
        return Err(Error::invalid(
            "--evaluate",
            "a measured cache belongs to one GPU; give exactly one --device",
        ));
    }
    if a.cache_out.is_some() && devices.len() != 1 {
        return Err(Error::invalid(
            "--cache-out",
            "a Kernel Tuner cache holds one GPU; give exactly one --device",
        ));
    }
    let compile_cache = if a.no_compile_cache {
        None
    } else {
        a.compile_cache.clone().or_else(default_dir)
    };
    let mut sample_note = None;
    let selection = match (a.sample, &measured) {
        (Some(n), Some(m)) => {
            let valid = kerneltime::tune::space::enumerate(&spec)?;
            let s = sample_measured(&spec, &valid, m, n, a.seed)?;
            sample_note = Some(format!(
                "sample of the measured cache's configurations (seed {}): {} of its {} timed and {} of its {} failed{}",
                a.seed,
                s.drawn_timed,
                s.timed,
                s.drawn_failed,
                s.failed,
                if s.outside > 0 {
                    format!("; {} of its entries are not configurations of the spec's space", s.outside)
                } else {
                    String::new()
                }
            ));
            Selection::Indices(s.indices)
        }
        (Some(n), None) => Selection::Sample { n, seed: a.seed },
        (None, _) => Selection::All,
    };
    let req = TuneRequest {
        overrides: overrides(a)?,
        spec,
        devices,
        selection,
        model: a.model.clone(),
        compiler: Choice::parse(&a.compiler).map_err(as_flag)?,
        compile_cache,
        host_link_gbs: a.host_link_gbs,
        prediction_cache: !a.no_prediction_cache,
    };
    let bar = super::progress::Bar::stderr();
    let report = tune(&req, &bar).map_err(as_flag)?;
    if let Some(path) = &a.cache_out {
        let problem = req
            .overrides
            .problem_size
            .clone()
            .unwrap_or_else(|| req.spec.kernel.problem_size.clone());
        write_atomic(path, cache_text(&req.spec, &report, 0, &problem).as_bytes())?;
    }
    let rows = output_rows(&report, if measured.is_some() { None } else { a.top });
    if let Some(path) = &a.output {
        write_atomic(path, &csv_bytes(&report, &rows)?)?;
    }
    for n in report.notes.iter().chain(&sample_note) {
        eprintln!("note: {n}");
    }
    let s = &report.stats;
    eprintln!(
        "note: {} of {} configurations x {} device(s) in {:.1} s ({:.1} configurations/s): {} compiled, {} from the cache",
        s.selected,
        s.space_size,
        report.devices.len(),
        s.wall_seconds,
        s.selected as f64 / s.wall_seconds.max(1e-9),
        s.compiled,
        s.cache_hits
    );
    // The time per phase, for profiling (`KERNELTIME_TUNE_TIMING=1`; not part of the contract).
    if std::env::var_os("KERNELTIME_TUNE_TIMING").is_some() {
        let p = &s.phases;
        eprintln!(
            "note: thread seconds per phase: prediction cache read {:.3}, compile cache read {:.3}, compile {:.3}, parse {:.3}, emulate {:.3}, predict {:.3}",
            p.prediction_read,
            p.cache_read, p.compile, p.parse, p.emulate, p.predict
        );
    }
    if let Some(m) = &measured {
        let e = evaluate(&report, 0, m, a.top.unwrap_or(DEFAULT_EVALUATE_TOP))?;
        if let Some(path) = &a.plot {
            let pairs = timed_pairs(&report, 0, m)?;
            let svg = crate::cli::charts::tuning::evaluation_svg(&e, &report.param_names, &pairs)?;
            std::fs::write(path, svg).map_err(|err| Error::file(path, err))?;
            eprintln!("note: chart written to {}", path.display());
        }
        if a.json {
            // The scores and what the run cost (not part of the library's evaluation).
            let mut v = serde_json::to_value(&e)
                .map_err(|e| Error::invalid("json", format!("cannot serialize output: {e}")))?;
            if let Some(o) = v.as_object_mut() {
                o.insert("wall_seconds".into(), json!(s.wall_seconds));
                o.insert("compiled".into(), json!(s.compiled));
                o.insert("compile_cache_hits".into(), json!(s.cache_hits));
            }
            return print_json(&v);
        }
        print_evaluation(&e);
        println!(
            "  wall time            {:.1} s ({} compiled, {} from the compile cache)",
            s.wall_seconds, s.compiled, s.cache_hits
        );
        return Ok(());
    }
    if a.json {
        for r in &rows {
            println!("{}", Json::Object(json_row(&report, r)));
        }
    } else if a.output.is_none() {
        print!("{}", String::from_utf8_lossy(&csv_bytes(&report, &rows)?));
    } else {
        print_summary(&report);
    }
    Ok(())
}

/// The rows to output, per device in order: `ok` by rank (only the first `top` when given),
/// then the others in configuration order.
fn output_rows(report: &TuneReport, top: Option<usize>) -> Vec<&Row> {
    let mut out = Vec::with_capacity(report.rows.len());
    for d in 0..report.devices.len() {
        let mut ok: Vec<&Row> = report
            .device_rows(d)
            .filter(|r| r.status == Status::Ok)
            .collect();
        ok.sort_by_key(|r| r.rank);
        if let Some(k) = top {
            ok.truncate(k);
            out.extend(ok);
            continue;
        }
        out.extend(ok);
        out.extend(report.device_rows(d).filter(|r| r.status != Status::Ok));
    }
    out
}

fn csv_bytes(report: &TuneReport, rows: &[&Row]) -> Result<Vec<u8>> {
    let fail = |e: csv::Error| Error::invalid("csv", format!("cannot write CSV: {e}"));
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["device".to_string()];
    header.extend(report.param_names.iter().cloned());
    header.extend(["status", "predicted_us", "rank", "reason"].map(String::from));
    w.write_record(&header).map_err(fail)?;
    for r in rows {
        let mut rec = vec![report.devices[r.device].clone()];
        rec.extend(
            report.configurations[r.config]
                .values
                .iter()
                .map(|v| v.to_string()),
        );
        rec.push(r.status.name().to_string());
        rec.push(r.predicted_us.map_or(String::new(), |t| format!("{t:.4}")));
        rec.push(r.rank.map_or(String::new(), |k| k.to_string()));
        rec.push(r.reason.clone());
        w.write_record(&rec).map_err(fail)?;
    }
    w.into_inner()
        .map_err(|e| Error::invalid("csv", format!("cannot write CSV: {e}")))
}

fn json_row(report: &TuneReport, r: &Row) -> Map<String, Json> {
    let mut m = Map::new();
    m.insert("device".into(), json!(report.devices[r.device]));
    for (n, v) in report
        .param_names
        .iter()
        .zip(&report.configurations[r.config].values)
    {
        m.insert(n.clone(), v.to_json());
    }
    m.insert("status".into(), json!(r.status.name()));
    m.insert("predicted_us".into(), json!(r.predicted_us));
    m.insert("rank".into(), json!(r.rank));
    m.insert("reason".into(), json!(r.reason));
    m
}

fn print_summary(report: &TuneReport) {
    let counts = kerneltime::tune::status_counts(report);
    for (d, name) in report.devices.iter().enumerate() {
        let parts: Vec<String> = ["ok", "cannot-launch", "compile-error", "model-error"]
            .iter()
            .filter_map(|s| counts.get(&(d, *s)).map(|n| format!("{n} {s}")))
            .collect();
        println!("{name}: {}", parts.join(", "));
        if let Some(best) = report.device_rows(d).find(|r| r.rank == Some(1)) {
            let values: Vec<String> = report
                .param_names
                .iter()
                .zip(&report.configurations[best.config].values)
                .map(|(n, v)| format!("{n}={v}"))
                .collect();
            println!(
                "  best predicted: {} ({})",
                values.join(" "),
                time_us(best.predicted_us.unwrap_or(f64::NAN))
            );
        }
    }
}

fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "n/a".to_string(), |x| format!("{x:.digits$}"))
}

fn fmt_regret(t: &TopK) -> String {
    match t.regret {
        Some(r) => format!("{:.1} % (k = {})", r * 100.0, t.k),
        None => format!("n/a: every one of the top {} failed when measured", t.k),
    }
}

fn print_evaluation(e: &Evaluation) {
    println!("{} against {}", e.device, e.measured_file);
    println!(
        "  configurations       {} matched ({} not in the measurements), {} measured times, {} measured failures",
        e.configurations, e.unmatched, e.measured_ok, e.measured_failed
    );
    println!(
        "  pairs                {} predicted and measured times",
        e.pairs
    );
    println!("  Kendall tau-b        {}", fmt_opt(e.kendall_tau_b, 3));
    println!("  Spearman rho         {}", fmt_opt(e.spearman, 3));
    println!(
        "  measured best        {} ms",
        fmt_opt(e.measured_best_ms, 4)
    );
    println!("  top-1 regret         {}", fmt_regret(&e.top1));
    println!("  top-k regret         {}", fmt_regret(&e.top_k));
    println!("  top-5 % regret       {}", fmt_regret(&e.top_5_percent));
    println!(
        "  best of 10 random    {} expected regret",
        e.random_10_expected_regret
            .map_or("n/a".into(), |r| format!("{:.1} %", r * 100.0))
    );
    let f = &e.refusals;
    println!(
        "  refusals             {} predicted, {} measured failures, {} agreed: precision {}, recall {}",
        f.predicted,
        f.measured,
        f.agreed,
        fmt_opt(f.precision, 3),
        fmt_opt(f.recall, 3)
    );
    if e.model_errors > 0 {
        println!("  model errors         {}", e.model_errors);
    }
    if !e.by_parameter.is_empty() {
        println!(
            "  by parameter         predicted / measured (geometric mean, pairs) per value; spread: the largest over the smallest (values with {}+ pairs), widest first",
            kerneltime::tune::evaluate::MIN_TREND_PAIRS
        );
        for t in &e.by_parameter {
            let values: Vec<String> = t
                .values
                .iter()
                .map(|v| format!("{} {:.2} ({})", v.value, v.geomean_ratio, v.pairs))
                .collect();
            println!(
                "    {:<18} spread {}: {}",
                t.name,
                fmt_opt(t.spread, 2),
                values.join(", ")
            );
        }
    }
}
