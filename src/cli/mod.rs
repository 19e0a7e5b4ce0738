//! The command line: clap lives only here. Raw flags become typed, validated requests once,
//! then the library does the work and this module prints the result (text or `--json`).
//!
//! Each command has its own file. Errors are returned, never printed here; `main` prints them
//! and picks the exit code.

mod analytical;
mod analyze;
mod charts;
mod devices;
mod evaluate;
mod explore;
mod flags;
mod help;
mod lslag;
mod manual;
mod measurements;
mod occupancy;
mod predict;
mod progress;
mod ptx_predict;
mod puchala;

mod report;
mod reproduce;
mod suite;
mod trace;
mod tune;
mod units;

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};
use serde::Serialize;

use kerneltime::device::{catalogue, Device};
use kerneltime::error::{Error, Result};

/// Predict how long GPU kernels take on a given GPU, without running them.
#[derive(Debug, Parser)]
#[command(name = "kerneltime", version, about, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// List the GPUs in the catalogue.
    Devices(devices::DevicesArgs),
    /// Show or import one device description.
    #[command(subcommand)]
    Device(devices::DeviceCommand),
    /// Active blocks and warps per SM for a block of a kernel, exactly as NVIDIA computes them.
    Occupancy(occupancy::OccupancyArgs),
    /// Predict a kernel's time with one model.
    Predict(predict::PredictArgs),
    /// Summarize a measurement file: rows, kernels, devices, time range.
    Measurements(measurements::MeasurementsArgs),
    /// The threads per block that minimise a model's predicted time (wu2019), with the curve.
    BestBlock(analytical::BestBlockArgs),
    /// Simulate one core package running a kernel program (puchala2022 Algorithm 2).
    Simulate(puchala::SimulateArgs),
    /// Reproduce a paper's results (puchala2022: the DWT grid; parra2016: Table 4.6 vs the models).
    Reproduce(reproduce::ReproduceArgs),
    /// Explain the formulas behind a kernel (dwt-matrix, dwt-lattice), with values.
    Explain(puchala::ExplainArgs),
    /// Fit a model's free parameters to measurements (with bootstrap intervals and CV error).
    Calibrate(evaluate::CalibrateArgs),
    /// Judge models against measurements: table, JSON, CSV, SVG charts, HTML report.
    Evaluate(evaluate::EvaluateArgs),
    /// LSLAG: fit the linear architecture model to measurements, or cost a mapped LSLA graph.
    #[command(subcommand)]
    Lslag(lslag::LslagCommand),
    /// Analyze a PTX file: blocks, loops, instruction counts and the kernel program per kernel.
    Analyze(analyze::AnalyzeArgs),
    /// Sweep models x kernels x devices x parameters in parallel into CSV or JSON lines.
    Sweep(explore::SweepArgs),
    /// The configuration of a space that minimises an objective under constraints.
    Best(explore::BestArgs),
    /// Two kernels across a space (time ratios), or GPUs ranked for one kernel, with SVG charts.
    Compare(explore::CompareArgs),
    /// Emulate the warps of one PTX kernel launch: instructions, coalescing, bank conflicts.
    Trace(trace::TraceArgs),
    /// Rank every configuration of an autotuning search space (FAIR spec) per GPU, or score a ranking.
    Tune(tune::TuneArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(manual::CompletionsArgs),
    /// Print the man page (roff), or write one page per command with --out-dir.
    Man(manual::ManArgs),
}

/// Parses the process arguments and runs the command.
pub fn main() -> Result<()> {
    use clap::FromArgMatches;
    let command = help::command();
    let matches = command.clone().get_matches();
    let command_flags = flags::of_subcommand(&command, &matches);
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    run(cli, &command_flags)
}

/// Runs a parsed command line; errors name the flags of `command_flags` (the long flags of the
/// subcommand that ran) where the library named an input.
pub fn run(cli: Cli, command_flags: &std::collections::BTreeSet<String>) -> Result<()> {
    dispatch(cli).map_err(|e| flags::rename(e, command_flags))
}

fn dispatch(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Devices(a) => devices::run_list(&a),
        Command::Device(c) => devices::run_device(&c),
        Command::Occupancy(a) => occupancy::run(&a),
        Command::Predict(a) => predict::run(&a),
        Command::Measurements(a) => measurements::run(&a),
        Command::BestBlock(a) => analytical::run_best_block(&a),
        Command::Simulate(a) => puchala::run_simulate(&a),
        Command::Reproduce(a) => reproduce::run(&a),
        Command::Explain(a) => puchala::run_explain(&a),
        Command::Lslag(c) => lslag::run(&c),
        Command::Analyze(a) => analyze::run(&a),
        Command::Sweep(a) => explore::run_sweep(&a),
        Command::Best(a) => explore::run_best(&a),
        Command::Compare(a) => explore::run_compare(&a),
        Command::Calibrate(a) => evaluate::run_calibrate(&a),
        Command::Evaluate(a) => evaluate::run_evaluate(&a),
        Command::Trace(a) => trace::run(&a),
        Command::Tune(a) => tune::run(&a),
        Command::Completions(a) => manual::run_completions(&a),
        Command::Man(a) => manual::run_man(&a),
    }
}

/// Device selection shared by every command that needs a GPU.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DeviceSelection {
    /// A catalogue GPU, by name or alias (case-insensitive): see `kerneltime devices`.
    #[arg(long)]
    pub device: Option<String>,
    /// A device description file of the catalogue's schema (`data/devices/*.toml`).
    #[arg(long, value_name = "FILE.toml", conflicts_with = "device")]
    pub device_file: Option<PathBuf>,
    /// The GPU's core clock in MHz, instead of the description's: the clock cycles become time
    /// at (say the clock `nvidia-smi` shows for a laptop part, or for a GPU that boosts above
    /// its rated clock).
    #[arg(long, value_name = "MHZ")]
    pub clock_mhz: Option<f64>,
}

impl DeviceSelection {
    /// The selected device, or an error naming the missing flag.
    pub fn resolve(&self) -> Result<Device> {
        let device = match (&self.device, &self.device_file) {
            (_, Some(path)) => Device::load(path)?,
            (Some(name), None) => catalogue::find(name)?.clone(),
            (None, None) => {
                return Err(Error::missing(
                    "--device",
                    "give a catalogue GPU with --device NAME or a description with --device-file FILE.toml",
                ))
            }
        };
        device.at_core_clock(self.clock_mhz, "--clock-mhz")
    }

    /// The selected device if any flag was given.
    pub fn resolve_optional(&self) -> Result<Option<Device>> {
        if self.device.is_none() && self.device_file.is_none() {
            Ok(None)
        } else {
            self.resolve().map(Some)
        }
    }
}

/// Prints a value as pretty JSON on stdout.
pub fn print_json<T: Serialize + ?Sized>(value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| Error::invalid("json", format!("cannot serialize output: {e}")))?;
    println!("{text}");
    Ok(())
}

/// Reads a text file, with an error naming it.
pub fn read_text(path: &Path) -> Result<String> {
    kerneltime::error::read_text_file(path, "a text file")
}
