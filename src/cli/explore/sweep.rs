//! `kerneltime sweep`: every point of a space into CSV or JSON lines (optionally gzip), in
//! parallel, with a checkpoint to `--resume` from and a progress bar on a terminal.

use std::path::PathBuf;

use clap::Args;

use super::SpaceArgs;
use crate::cli::print_json;
use kerneltime::error::{Error, Result};
use kerneltime::explore::sweep::{self, Format, SweepOptions, DEFAULT_CHUNK_POINTS};

/// `kerneltime sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub space: SpaceArgs,
    /// Output file: .csv or .jsonl, optionally .gz (compressed).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: PathBuf,
    /// Output format when the extension does not say (csv, jsonl).
    #[arg(long)]
    pub format: Option<String>,
    /// Continue an interrupted sweep of the same space into the same file.
    #[arg(long)]
    pub resume: bool,
    /// Points per checkpoint.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_CHUNK_POINTS)]
    pub chunk_points: u64,
    /// Testing aid: stop once this many points are written, leaving the checkpoint.
    #[arg(long, value_name = "N", hide = true)]
    pub stop_after: Option<u64>,
    /// Print the run's summary as one JSON object on stdout (the points go to --output).
    #[arg(long)]
    pub json: bool,
}

/// Runs `sweep`.
/// Prints, once each, the warnings of the space's cells: an inputs file whose device fields
/// override the devices being swept (the same SM count applied to every GPU, for example).
pub fn warn_overrides(space: &kerneltime::explore::space::Space) {
    let mut seen = std::collections::BTreeSet::new();
    for cell in &space.cells {
        for n in cell.notes.iter().filter(|n| n.starts_with("warning: ")) {
            if seen.insert(n.as_str()) {
                eprintln!("{n}");
            }
        }
    }
}

pub fn run_sweep(args: &SweepArgs) -> Result<()> {
    let (from_name, gzip) = Format::from_path(&args.output);
    let format = match (&args.format, from_name) {
        (Some(f), _) => Format::parse(f)?,
        (None, Some(f)) => f,
        (None, None) => {
            return Err(Error::invalid(
                "--output",
                format!(
                    "cannot tell the format of {} from its extension; use .csv, .jsonl (optionally .gz) or give --format",
                    args.output.display()
                ),
            ))
        }
    };
    if args.chunk_points == 0 {
        return Err(Error::invalid("--chunk-points", "must be at least 1"));
    }
    let space = args.space.build()?;
    warn_overrides(&space);
    let opts = SweepOptions {
        format,
        gzip,
        resume: args.resume,
        chunk_points: args.chunk_points,
        stop_after: args.stop_after,
    };
    let summary = sweep::run_to_file(
        &space,
        &args.output,
        &opts,
        &crate::cli::progress::Bar::stderr(),
    )?;
    if args.json {
        return print_json(&summary);
    }
    if summary.stopped {
        println!(
            "stopped after {} of {} points (checkpoint kept; rerun with --resume)",
            summary.points,
            space.len()
        );
        return Ok(());
    }
    println!(
        "wrote {} points to {} in {:.2} s ({:.0} points/s{}): {} ok, {} infeasible, {} invalid",
        summary.points,
        summary.output.display(),
        summary.seconds,
        summary.points_per_second,
        if summary.resumed_points > 0 {
            format!(", resumed after {} points", summary.resumed_points)
        } else {
            String::new()
        },
        summary.counts.ok,
        summary.counts.infeasible,
        summary.counts.invalid
    );
    Ok(())
}
