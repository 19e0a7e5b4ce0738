//! The LSLAG commands: `predict --model lslag`, `lslag fit` and `lslag cost`.
//!
//! This file turns flags into validated calls of `kerneltime::model::lslag`, `kerneltime::fit::lslag` and
//! `kerneltime::model::lsla`, and prints the results (text or `--json`). It does no modelling.
//!
//! `predict --model lslag --json` prints the usual `Prediction` plus `t_w`, `t_k`, `t_1` and `t_c`
//! (microseconds) at the top level, for scripts that only want the four times.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand, ValueEnum};
use serde::Serialize;

use super::predict::PredictArgs;
use super::units::time_us;
use super::{print_json, read_text};
use kerneltime::error::{Error, Result};
use kerneltime::fit::calibrate::CalibrationFile;
use kerneltime::fit::lslag::{fit, parse_samples_csv, FitOptions, FitReport, ModelFit};
use kerneltime::model::lsla::Graph;
use kerneltime::model::lslag::{
    LslagParams, TimeUnit, BUILTIN_APPS, BUILTIN_NOTE, BUILTIN_PLATFORMS,
};
use kerneltime::model::{ModelId, Prediction, Source};
use kerneltime::Options;

/// `kerneltime lslag ...`
#[derive(Debug, Subcommand)]
pub enum LslagCommand {
    /// Fit LSLAG (and the LSLA baseline) to measurements by non-negative least squares.
    Fit(FitArgs),
    /// The LSLA cost (eq 1) of tokens mapped to processing elements and communication nodes.
    Cost(CostArgs),
}

/// Unit of the times in a samples file.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum UnitArg {
    Us,
    Ms,
    S,
}

impl From<UnitArg> for TimeUnit {
    fn from(u: UnitArg) -> Self {
        match u {
            UnitArg::Us => TimeUnit::Us,
            UnitArg::Ms => TimeUnit::Ms,
            UnitArg::S => TimeUnit::S,
        }
    }
}

#[derive(Debug, Args)]
pub struct FitArgs {
    /// Measurements: CSV with columns gamma,s,t_w,t_1,t_k (t_c = t_w - t_1 - t_k).
    #[arg(long, value_name = "FILE.csv")]
    pub samples: PathBuf,
    /// Seed of the random train/test split.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Share of the rows held out to measure the fidelity.
    #[arg(long, default_value_t = 0.2)]
    pub test_fraction: f64,
    /// Unit of the times in the samples (written into the parameter file).
    #[arg(long, value_enum, default_value = "us")]
    pub time_unit: UnitArg,
    /// Platform name recorded in the parameter file.
    #[arg(long)]
    pub platform: Option<String>,
    /// Application name recorded in the parameter file.
    #[arg(long)]
    pub app: Option<String>,
    /// Write the fitted LSLAG parameters here (loadable by `predict --model lslag --params`).
    #[arg(short = 'o', long = "output", value_name = "PARAMS.toml")]
    pub output: Option<PathBuf>,
    /// One JSON object on stdout: the fitted parameters, errors and fidelity.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CostArgs {
    /// The architecture graph and mapped tokens (TOML; schema in `kerneltime::model::lsla`).
    #[arg(long, value_name = "FILE.toml")]
    pub graph: PathBuf,
    /// One JSON object on stdout: the cost per element and in total.
    #[arg(long)]
    pub json: bool,
}

/// Runs `kerneltime lslag ...`.
pub fn run(command: &LslagCommand) -> Result<()> {
    match command {
        LslagCommand::Fit(a) => run_fit(a),
        LslagCommand::Cost(a) => run_cost(a),
    }
}

/// The JSON of `predict --model lslag`: the prediction plus the four times at the top level.
#[derive(Serialize)]
struct PredictOutput<'a> {
    #[serde(flatten)]
    prediction: &'a Prediction,
    t_w: f64,
    t_k: f64,
    t_1: f64,
    t_c: f64,
}

/// The `predict --model lslag` arm: a platform's parameters (built-in or fitted), or a
/// calibration's `alpha`/`beta` for a device.
pub fn run_predict(args: &PredictArgs, calibration: Option<CalibrationFile>) -> Result<()> {
    let gamma = args.gamma.ok_or_else(|| {
        Error::missing(
            "--gamma",
            "LSLAG needs the parallelism factor, e.g. --gamma 64",
        )
    })?;
    let s = args
        .s
        .ok_or_else(|| Error::missing("--s", "LSLAG needs the input size, e.g. --s 4096"))?;
    if let Some(cal) = calibration {
        let device = args.device.resolve()?;
        let source = Source::Lslag {
            gamma,
            s,
            params: None,
        };
        let options = Options {
            calibration: Some(cal),
            ..Options::default()
        };
        let name = args.kernel.clone().unwrap_or_default();
        let p = kerneltime::api::predict_source(
            &source,
            Some(&device),
            ModelId::Lslag,
            &options,
            &name,
        )?;
        return super::predict::print_calibrated(&p, args.json);
    }
    let registry = kerneltime::model::model(ModelId::Lslag);
    let run = |params: &LslagParams| {
        let source = Source::Lslag {
            gamma,
            s,
            params: Some(params),
        };
        let (inputs, _) = registry.inputs(&source, None)?;
        registry.predict(None, &inputs, None)
    };
    let mut prediction = match (&args.lslag_params, &args.platform, &args.app) {
        (Some(path), None, None) => {
            let params = LslagParams::from_toml_str(&read_text(path)?, path)?;
            let mut p = run(&params)?;
            p.notes
                .insert(0, format!("parameters from {}", path.display()));
            p
        }
        (Some(_), _, _) => {
            return Err(Error::invalid(
                "--params",
                "give either --params FILE.toml or --platform and --app, not both",
            ))
        }
        (None, Some(platform), Some(app)) => {
            let mut p = run(&kerneltime::model::lslag::builtin(platform, app)?)?;
            p.notes.insert(0, BUILTIN_NOTE.into());
            p
        }
        (None, Some(_), None) => {
            return Err(Error::missing(
                "--app",
                format!(
                    "a built-in LSLAG set needs --app: {}",
                    BUILTIN_APPS.join(", ")
                ),
            ))
        }
        (None, None, Some(_)) => {
            return Err(Error::missing(
                "--platform",
                format!(
                    "a built-in LSLAG set needs --platform: {}",
                    BUILTIN_PLATFORMS.join(", ")
                ),
            ))
        }
        (None, None, None) => {
            return Err(Error::missing(
                "--params",
                "LSLAG needs --params FILE.toml or --platform NAME --app NAME",
            ))
        }
    };
    if let Some(device) = args.device.resolve_optional()? {
        prediction.notes.push(format!(
            "--device {} does not change an LSLAG prediction: its parameters are measured per \
             platform and application",
            device.name
        ));
    }
    let get = |k: &str| prediction.breakdown[k].as_f64().unwrap_or(f64::NAN);
    let (t_w, t_k, t_1, t_c) = (get("t_w_us"), get("t_k_us"), get("t_1_us"), get("t_c_us"));
    if args.json {
        return print_json(&PredictOutput {
            prediction: &prediction,
            t_w,
            t_k,
            t_1,
            t_c,
        });
    }
    println!("lslag on {} at gamma = {gamma}, S = {s}", prediction.device);
    println!("  t_w (wall clock)    {:>14}", time_us(t_w));
    println!("  t_k (GPU)           {:>14}", time_us(t_k));
    println!("  t_1 (host)          {:>14}", time_us(t_1));
    println!("  t_c (interconnect)  {:>14}", time_us(t_c));
    for n in &prediction.notes {
        println!("  note: {n}");
    }
    Ok(())
}

fn run_fit(args: &FitArgs) -> Result<()> {
    let text = read_text(&args.samples)?;
    let samples = parse_samples_csv(&text, &args.samples)?;
    let options = FitOptions {
        seed: args.seed,
        test_fraction: args.test_fraction,
        time_unit: args.time_unit.into(),
    };
    let mut report = fit(&samples, &options, &args.samples)?;
    report.params.platform = args.platform.clone();
    report.params.app = args.app.clone();
    if let Some(out) = &args.output {
        kerneltime::error::write_atomic(out, report.params.to_toml_string()?.as_bytes())?;
    }
    if args.json {
        return print_json(&report);
    }
    print_fit(&report, &args.samples, args.output.as_deref());
    Ok(())
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or_else(|| "undefined".to_string(), |x| format!("{x:.4}"))
}

fn print_model(name: &str, m: &ModelFit, keys: [&str; 2]) {
    println!("{name}: {}", m.formula);
    for (element, e) in [
        ("gpu (t_k)", &m.elements.gpu),
        ("host (t_1)", &m.elements.host),
        ("interconnect (t_c)", &m.elements.interconnect),
    ] {
        let c = |k: &str| {
            e.coefficients
                .get(k)
                .and_then(|v| v.as_f64())
                .unwrap_or(f64::NAN)
        };
        println!(
            "  {element:<19} {} = {:<12.6e} {} = {:<12.6e} train rms {:.4e}",
            keys[0],
            c(keys[0]),
            keys[1],
            c(keys[1]),
            e.train_rms
        );
    }
    println!(
        "  t_w rms: train {:.4e}, test {}; fidelity (Kendall tau-b, test) {}; Spearman rho {}",
        m.t_w_train_rms,
        m.t_w_test_rms
            .map_or_else(|| "-".to_string(), |x| format!("{x:.4e}")),
        fmt_opt(m.fidelity),
        fmt_opt(m.spearman_rho)
    );
}

fn print_fit(r: &FitReport, samples: &Path, output: Option<&Path>) {
    println!(
        "{}: {} samples, {} training / {} test rows (seed {}), times in {}",
        samples.display(),
        r.samples,
        r.train_rows,
        r.test_rows,
        r.seed,
        r.time_unit.symbol()
    );
    print_model("LSLAG", &r.lslag, ["alpha", "beta"]);
    print_model("LSLA (baseline)", &r.lsla, ["a", "b"]);
    for n in &r.notes {
        println!("note: {n}");
    }
    if let Some(out) = output {
        println!("wrote {}", out.display());
    }
}

fn run_cost(args: &CostArgs) -> Result<()> {
    let text = read_text(&args.graph)?;
    let cost = Graph::from_toml_str(&text, &args.graph)?
        .cost()
        .map_err(|e| Error::file(&args.graph, e))?;
    if args.json {
        return print_json(&cost);
    }
    let unit = cost.unit.as_deref().unwrap_or("cost units");
    println!("{}: LSLA cost (eq 1)", args.graph.display());
    for e in &cost.elements {
        println!(
            "  {:<24} {:<13} {:>6} tokens {:>14.6} {unit}",
            e.name,
            format!("{:?}", e.kind).to_lowercase(),
            e.tokens,
            e.cost
        );
    }
    println!(
        "  processing              {:>14.6} {unit}",
        cost.processing_cost
    );
    println!(
        "  communication x {:<8} {:>14.6} {unit}",
        cost.lambda,
        cost.lambda * cost.communication_cost
    );
    println!("  total                   {:>14.6} {unit}", cost.total_cost);
    for n in &cost.notes {
        println!("  note: {n}");
    }
    Ok(())
}
