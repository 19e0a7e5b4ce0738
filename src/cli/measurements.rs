//! `kerneltime measurements FILE`: what a measurement file holds (rows, kernels, devices, time
//! range), read with the same readers calibration and evaluation use. It changes nothing.

use std::path::PathBuf;

use clap::Args;

use super::print_json;
use super::units::time_us;
use kerneltime::error::Result;
use kerneltime::fit::measurements::{read_measurements_as, summarize, Format};

#[derive(Debug, Args)]
pub struct MeasurementsArgs {
    /// A measurement file (plain or gzip-compressed): generic CSV, nvprof CSV or log, nsys
    /// stats CSV, ncu CSV, Kernel Tuner cache JSON, KTT JSON or CSV, T4 results JSON or a
    /// profiler-counter table.
    pub file: PathBuf,
    /// The format, when detection from the content is not wanted: generic, nvprof-csv,
    /// nvprof-log, nsys-kern-sum, nsys-trace, ncu, kernel-tuner, ktt-json, ktt-csv, t4, counters.
    #[arg(long)]
    pub format: Option<String>,
    /// One JSON object on stdout: the summary.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &MeasurementsArgs) -> Result<()> {
    let format = args.format.as_deref().map(Format::parse).transpose()?;
    let set = read_measurements_as(&args.file, format)?;
    let s = summarize(&set);
    if args.json {
        return print_json(&s);
    }
    println!("{} ({})", s.file, s.format);
    println!("  rows                 {}", s.rows);
    println!(
        "  time                 {} .. {} (median {})",
        time_us(s.time_min_us),
        time_us(s.time_max_us),
        time_us(s.time_median_us)
    );
    println!("  with launch          {}", s.rows_with_launch);
    println!("  with launch API time {}", s.rows_with_launch_api_time);
    println!("  with counters        {}", s.rows_with_counters);
    println!("  devices ({}):", s.devices.len());
    for (d, n) in &s.devices {
        println!("    {n:>8}  {d}");
    }
    println!("  kernels ({}):", s.kernels.len());
    for (k, n) in &s.kernels {
        println!("    {n:>8}  {k}");
    }
    for n in &s.notes {
        println!("  note: {n}");
    }
    Ok(())
}
