//! The analytical models on the command line: `predict --model mwp-cwp|hong-kim|wu --inputs FILE`
//! and `best-block --model wu --inputs FILE`, with the `--cpu-time-us` speedup.
//!
//! Time: with `--device`/`--device-file` cycles become microseconds through the device's clock
//! (`Device::cycles_to_us`); without a device, through the inputs file's own clock field
//! (`freq_ghz` or `freq_mhz`), and the prediction says so in its notes. This file only reads flags,
//! calls the library and prints or writes results; the arithmetic is in `model::*`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;

use super::predict::PredictArgs;
use super::units::time_us;
use super::{print_json, read_text, DeviceSelection};
use kerneltime::device::Device;
use kerneltime::error::{write_atomic, Error, Result};
use kerneltime::fit::calibrate::CalibrationFile;
use kerneltime::model::{analytical, wu, ModelId, Prediction, Source};
use kerneltime::workload::analytical::WuInputs;
use kerneltime::Options;

/// Runs `predict` for a model that reads an inputs file (mwp-cwp, hong-kim, wu, and any model of
/// the registry without a layout of its own), printed from its breakdown.
pub fn run_predict(
    id: ModelId,
    args: &PredictArgs,
    calibration: Option<CalibrationFile>,
) -> Result<()> {
    let path = args.inputs.as_deref().ok_or_else(|| {
        Error::missing(
            "--inputs",
            format!("the {id} model reads an analytical inputs file: --inputs FILE.toml"),
        )
    })?;
    let calibrated = calibration.is_some();
    let device = if calibrated {
        Some(args.device.resolve()?)
    } else {
        args.device.resolve_optional()?
    };
    let text = read_text(path)?;
    let options = Options {
        calibration,
        calibration_kernel: Some(super::predict::calibration_kernel(args, id)),
        ..Options::default()
    };
    let origin = path.display().to_string();
    let source = Source::File {
        text: &text,
        origin: &origin,
    };
    let mut p = kerneltime::api::predict_source(&source, device.as_ref(), id, &options, "")?;
    if calibrated {
        return super::predict::print_calibrated(&p, args.json);
    }
    if let Some(cpu) = args.cpu_time_us {
        let s = wu::speedup(cpu, p.time_us)?;
        p.breakdown.insert("cpu_time_us".into(), cpu.into());
        p.breakdown.insert("speedup".into(), s.into());
    }
    if args.json {
        return print_json(&p);
    }
    print!("{}", render_prediction(&p));
    Ok(())
}

fn render_prediction(p: &Prediction) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "model   {}", p.model);
    let _ = writeln!(out, "device  {}", p.device);
    if let Some(c) = p.cycles {
        let _ = writeln!(out, "cycles  {c:.2}");
    }
    let _ = writeln!(out, "time    {}", time_us(p.time_us));
    if let Some(s) = p.breakdown.get("speedup").and_then(|v| v.as_f64()) {
        let _ = writeln!(out, "speedup {s:.2}x over the given single-thread CPU time");
    }
    let _ = writeln!(out, "breakdown:");
    for (k, v) in &p.breakdown {
        let shown = match v {
            serde_json::Value::Number(n) => n
                .as_f64()
                .map_or_else(|| n.to_string(), |f| format!("{f:.4}")),
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Null => "none".into(),
            other => other.to_string(),
        };
        let _ = writeln!(out, "  {k:<26} {shown}");
    }
    for n in &p.notes {
        // Warnings (an inputs file overriding the device) keep their own label.
        if n.starts_with("warning: ") {
            let _ = writeln!(out, "{n}");
        } else {
            let _ = writeln!(out, "note: {n}");
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// best-block

/// `kerneltime best-block`: the block size that minimises wu2019's predicted time.
#[derive(Debug, Args)]
pub struct BestBlockArgs {
    /// The model (only `wu` has a block-size cost function).
    #[arg(long, default_value = "wu")]
    pub model: String,
    /// A wu analytical inputs file (TOML).
    #[arg(long, value_name = "FILE.toml")]
    pub inputs: PathBuf,
    #[command(flatten)]
    pub device: DeviceSelection,
    /// Write best_block.json, best_block.csv and best_block.svg into this directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// One JSON object on stdout: the best block size and the whole curve.
    #[arg(long)]
    pub json: bool,
}

/// One row of the block-size curve as reported.
#[derive(Debug, Clone, Serialize)]
pub struct CurvePoint {
    pub threads_per_block: u32,
    pub feasible: bool,
    pub cycles: Option<f64>,
    pub time_us: Option<f64>,
    pub blocks_active: Option<f64>,
    pub warps_active: Option<f64>,
    pub block_limiter: Option<wu::BlockLimiter>,
    pub dominant: Option<&'static str>,
    pub reason: Option<String>,
}

/// The whole `best-block` report.
#[derive(Debug, Clone, Serialize)]
pub struct BestBlockReport {
    pub model: String,
    pub device: String,
    pub max_threads_per_block: u32,
    pub best_threads_per_block: u32,
    pub best_cycles: f64,
    pub best_time_us: f64,
    pub curve: Vec<CurvePoint>,
    pub notes: Vec<String>,
}

/// Runs `best-block`.
pub fn run_best_block(args: &BestBlockArgs) -> Result<()> {
    if args.model != "wu" {
        return Err(Error::invalid(
            "--model",
            format!(
                "best-block needs a model with a block-size cost function: only `wu`, got `{}`",
                args.model
            ),
        ));
    }
    let device = args.device.resolve_optional()?;
    let text = read_text(&args.inputs)?;
    let report = best_block_report(&text, &args.inputs.display().to_string(), device.as_ref())?;
    if let Some(dir) = &args.out {
        write_best_block(&report, dir)?;
    }
    if args.json {
        return print_json(&report);
    }
    println!(
        "best threads per block: {} ({:.2} cycles, {}) on {}",
        report.best_threads_per_block,
        report.best_cycles,
        time_us(report.best_time_us),
        report.device
    );
    println!(
        "{:>8} {:>14} {:>12} {:>7}  limiter / reason",
        "threads", "cycles", "time", "blocks"
    );
    for c in &report.curve {
        match (c.cycles, c.time_us, c.blocks_active) {
            (Some(cy), Some(t), Some(b)) => println!(
                "{:>8} {:>14.2} {:>12} {:>7}  {:?}, {}",
                c.threads_per_block,
                cy,
                time_us(t),
                b,
                c.block_limiter.unwrap_or(wu::BlockLimiter::Blocks),
                c.dominant.unwrap_or("")
            ),
            _ => println!(
                "{:>8} {:>14} {:>12} {:>7}  {}",
                c.threads_per_block,
                "-",
                "-",
                0,
                c.reason.as_deref().unwrap_or("")
            ),
        }
    }
    for n in &report.notes {
        println!("note: {n}");
    }
    if let Some(dir) = &args.out {
        println!(
            "wrote best_block.json, best_block.csv, best_block.svg in {}",
            dir.display()
        );
    }
    Ok(())
}

/// Sweeps the block size for a wu inputs file (library path of `best-block`).
pub fn best_block_report(
    text: &str,
    origin: &str,
    device: Option<&Device>,
) -> Result<BestBlockReport> {
    // The swept field replaces threads_per_block; a file may leave it out.
    let mut table: toml::Table =
        toml::from_str(text).map_err(|e| Error::file(origin, e.message().to_string()))?;
    table
        .entry("threads_per_block")
        .or_insert(toml::Value::Integer(32));
    let text = toml::to_string(&table).map_err(|e| Error::file(origin, e))?;
    let resolved = WuInputs::from_toml(&text, origin, device)?;
    let mut notes = resolved.notes;
    let (max_threads, why) = match (device, resolved.inputs.max_threads_per_block) {
        (Some(d), _) => (
            d.limits.max_threads_per_block,
            format!("{}'s limits.max_threads_per_block", d.name),
        ),
        (None, Some(m)) => (
            m as u32,
            "the inputs file's max_threads_per_block".to_string(),
        ),
        (None, None) => (
            1024,
            "SPEC.md section 3's default of 1024 (no device, no max_threads_per_block in the file)"
                .to_string(),
        ),
    };
    notes.push(format!(
        "block sizes swept: multiples of {} up to {max_threads} ({why})",
        resolved.inputs.warp_size
    ));
    let points = wu::sweep_block_sizes(&resolved.inputs, max_threads)?;
    let freq_mhz = resolved.inputs.freq_mhz;
    let to_time = |cycles: f64, transfer_us: f64| {
        analytical::cycles_to_us(cycles, device, freq_mhz) + transfer_us
    };
    let curve: Vec<CurvePoint> = points
        .iter()
        .map(|p| match &p.result {
            Ok(r) => CurvePoint {
                threads_per_block: p.threads_per_block,
                feasible: true,
                cycles: Some(r.exec_cycles_sm),
                time_us: Some(to_time(r.exec_cycles_sm, r.transfer_us)),
                blocks_active: Some(r.blocks_active),
                warps_active: Some(r.warps_active),
                block_limiter: Some(r.block_limiter),
                dominant: Some(r.dominant),
                reason: None,
            },
            Err(why) => CurvePoint {
                threads_per_block: p.threads_per_block,
                feasible: false,
                cycles: None,
                time_us: None,
                blocks_active: Some(0.0),
                warps_active: None,
                block_limiter: None,
                dominant: None,
                reason: Some(why.clone()),
            },
        })
        .collect();
    if curve.iter().any(|c| c.feasible) {
        notes.extend(analytical::clock_note(device, freq_mhz, "freq_mhz"));
    }
    let (best_t, best) = wu::best_block(&points).ok_or_else(|| {
        Error::Infeasible(format!(
            "no block size from {} to {max_threads} threads can run on an SM with these inputs",
            resolved.inputs.warp_size
        ))
    })?;
    let best_time_us = to_time(best.exec_cycles_sm, best.transfer_us);
    Ok(BestBlockReport {
        model: "wu".into(),
        device: device.map_or_else(
            || "none (clock from the inputs file)".to_string(),
            |d| d.name.clone(),
        ),
        max_threads_per_block: max_threads,
        best_threads_per_block: best_t,
        best_cycles: best.exec_cycles_sm,
        best_time_us,
        curve,
        notes,
    })
}

/// Writes the report as JSON, CSV and an SVG line chart, each atomically.
pub fn write_best_block(report: &BestBlockReport, dir: &Path) -> Result<()> {
    kerneltime::error::create_output_dir(dir)?;
    let json = serde_json::to_string_pretty(report)
        .map_err(|e| Error::invalid("json", format!("cannot serialize output: {e}")))?;
    write_atomic(&dir.join("best_block.json"), json.as_bytes())?;
    write_atomic(&dir.join("best_block.csv"), curve_csv(report).as_bytes())?;
    let svg = super::charts::best_block::curve_svg(report)
        .map_err(|e| Error::file(dir.join("best_block.svg"), e))?;
    write_atomic(&dir.join("best_block.svg"), svg.as_bytes())
}

fn curve_csv(report: &BestBlockReport) -> String {
    let mut out = String::from(
        "threads_per_block,feasible,cycles,time_us,blocks_active,warps_active,block_limiter,dominant,reason\n",
    );
    let num = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for c in &report.curve {
        let limiter = c
            .block_limiter
            .and_then(|l| serde_json::to_value(l).ok())
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let reason = c.reason.as_deref().unwrap_or("").replace('"', "'");
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},\"{}\"",
            c.threads_per_block,
            c.feasible,
            num(c.cycles),
            num(c.time_us),
            num(c.blocks_active),
            num(c.warps_active),
            limiter,
            c.dominant.unwrap_or(""),
            reason
        );
    }
    out
}
