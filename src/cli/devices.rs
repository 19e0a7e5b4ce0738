//! `kerneltime devices` and `kerneltime device show|check|import`.
//!
//! `device show` prints each value with a numbered footnote for its source, so that a long
//! source is printed once. This file only parses flags and prints; the work is in `device`.

use clap::{Args, Subcommand, ValueEnum};

use super::print_json;
use kerneltime::device::import::{self, ImportFormat};
use kerneltime::device::{catalogue, Device};
use kerneltime::error::Result;

/// The `--format` values of `device import` (the library's [`ImportFormat`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportFormatArg {
    /// CUDA's deviceQuery sample output.
    Devicequery,
    /// The console output of Accel-Sim's GPU micro-benchmark suite.
    AccelsimUbench,
    /// A GPGPU-Sim / Accel-Sim gpgpusim.config.
    GpgpusimConfig,
    /// The output of kerneltime's own micro-benchmark program (kernels/ubench/ubench.cu).
    KerneltimeUbench,
}

impl From<ImportFormatArg> for ImportFormat {
    fn from(a: ImportFormatArg) -> Self {
        match a {
            ImportFormatArg::Devicequery => ImportFormat::DeviceQuery,
            ImportFormatArg::AccelsimUbench => ImportFormat::AccelsimUbench,
            ImportFormatArg::GpgpusimConfig => ImportFormat::GpgpusimConfig,
            ImportFormatArg::KerneltimeUbench => ImportFormat::KerneltimeUbench,
        }
    }
}

#[derive(Debug, Args)]
pub struct DevicesArgs {
    /// One JSON array on stdout, one object per device.
    #[arg(long)]
    pub json: bool,
    /// Only devices whose name, alias or architecture contains this text.
    #[arg(long)]
    pub filter: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum DeviceCommand {
    /// Every value of one device, with its source.
    Show {
        /// Catalogue name or alias (case-insensitive).
        name: String,
        /// One JSON object on stdout: the device with every value's source.
        #[arg(long)]
        json: bool,
    },
    /// Check a device description file and print the resolved device.
    Check {
        file: std::path::PathBuf,
        /// One JSON object on stdout: the resolved device with every value's source.
        #[arg(long)]
        json: bool,
    },
    /// Write a device file from a tool's output: CUDA's deviceQuery (first device), Accel-Sim's
    /// micro-benchmark suite, a gpgpusim.config, or kerneltime's own micro-benchmark program.
    Import {
        /// The tool's output (or the gpgpusim.config).
        file: std::path::PathBuf,
        /// The input's format (default: detected from the content, else devicequery).
        #[arg(long, value_enum)]
        format: Option<ImportFormatArg>,
        /// Where to write the device file (default: print it).
        #[arg(short = 'o', long = "output", value_name = "OUT.toml")]
        output: Option<std::path::PathBuf>,
        /// Name for the device (default: the name the input gives).
        #[arg(long)]
        name: Option<String>,
        /// One JSON object on stdout: the resolved device (after writing OUT.toml, if given).
        #[arg(long)]
        json: bool,
    },
}

pub fn run_list(args: &DevicesArgs) -> Result<()> {
    let filter = args.filter.as_deref().map(kerneltime::device::normalize);
    let devices: Vec<&Device> = catalogue::all()
        .iter()
        .filter(|d| match &filter {
            None => true,
            Some(f) => std::iter::once(&d.name)
                .chain(d.aliases.iter())
                .chain(std::iter::once(&d.architecture))
                .any(|n| kerneltime::device::normalize(n).contains(f.as_str())),
        })
        .collect();
    if args.json {
        let summaries: Vec<_> = devices.iter().map(|d| d.summary()).collect();
        return print_json(&summaries);
    }
    println!(
        "{:<40} {:>5} {:>4} {:>6} {:>6} {:>8}  architecture",
        "name", "cc", "SMs", "cores", "MHz", "GB/s"
    );
    for d in devices {
        println!(
            "{:<40} {:>5} {:>4} {:>6} {:>6.0} {:>8.1}  {}",
            d.name,
            d.compute_capability.to_string(),
            d.sm_count,
            d.sm_count * d.cores_per_sm,
            d.core_clock_mhz,
            d.memory_bandwidth_gbs,
            d.architecture
        );
    }
    Ok(())
}

pub fn run_device(cmd: &DeviceCommand) -> Result<()> {
    let (device, json) = match cmd {
        DeviceCommand::Show { name, json } => (catalogue::find(name)?.clone(), *json),
        DeviceCommand::Check { file, json } => (Device::load(file)?, *json),
        DeviceCommand::Import {
            file,
            format,
            output,
            name,
            json,
        } => {
            return run_import(
                file,
                format.map(ImportFormat::from),
                output.as_deref(),
                name.as_deref(),
                *json,
            )
        }
    };
    if json {
        return print_json(&device);
    }
    print_device(&device);
    Ok(())
}

fn print_device(d: &Device) {
    println!("{}", d.name);
    if !d.aliases.is_empty() {
        println!("  aliases: {}", d.aliases.join(", "));
    }
    let value = serde_json::to_value(d).unwrap_or_default();
    let mut rows: Vec<(String, String)> = Vec::new();
    if let serde_json::Value::Object(map) = &value {
        for (k, v) in map {
            match (k.as_str(), v) {
                ("sources" | "aliases" | "name" | "notes", _) => {}
                ("limits", serde_json::Value::Object(l)) => {
                    for (lk, lv) in l {
                        if lk != "source" {
                            rows.push((format!("limits.{lk}"), lv.to_string()));
                        }
                    }
                }
                ("microbenchmarks", serde_json::Value::Object(m)) => {
                    if let Some(serde_json::Value::Object(lat)) = m.get("latency_cycles") {
                        let warps = m.get("warps").map(|w| w.to_string()).unwrap_or_default();
                        for (bk, bv) in lat {
                            rows.push((
                                format!("microbenchmarks.{bk}"),
                                format!("{bv} @ warps {warps}"),
                            ));
                        }
                    }
                }
                ("latencies" | "measured", serde_json::Value::Object(t)) => {
                    for (tk, tv) in t {
                        if tk != "source" {
                            rows.push((format!("{k}.{tk}"), tv.to_string()));
                        }
                    }
                }
                ("puchala", serde_json::Value::Object(p)) => {
                    for (pk, pv) in p {
                        rows.push((format!("puchala.{pk}"), pv.to_string()));
                    }
                }
                (_, serde_json::Value::Null) => {}
                _ => rows.push((k.clone(), v.to_string())),
            }
        }
    }
    // puchala.* values have no field-level source unless the file gives one: they come with
    // the file's own `source` (which every product field also carries, e.g. `name`).
    let file_source = d.sources.get("name");
    let mut footnotes: Vec<&str> = Vec::new();
    for (k, v) in &rows {
        let src = d
            .sources
            .get(k)
            .or_else(|| k.starts_with("puchala").then_some(file_source).flatten());
        let mark = match src {
            Some(s) => {
                let i = footnotes
                    .iter()
                    .position(|f| *f == s.as_str())
                    .unwrap_or_else(|| {
                        footnotes.push(s.as_str());
                        footnotes.len() - 1
                    });
                format!("[{}]", i + 1)
            }
            None => String::new(),
        };
        println!("  {k:<46} {v:<16} {mark}");
    }
    for n in &d.notes {
        println!("  note: {n}");
    }
    if !footnotes.is_empty() {
        println!("sources:");
        for (i, f) in footnotes.iter().enumerate() {
            println!("  [{}] {f}", i + 1);
        }
    }
}

fn run_import(
    file: &std::path::Path,
    format: Option<ImportFormat>,
    output: Option<&std::path::Path>,
    name: Option<&str>,
    json: bool,
) -> Result<()> {
    let text = super::read_text(file)?;
    let origin = file.display().to_string();
    let draft = import::import(&text, &origin, format)?;
    if name.is_none() && draft.name.is_none() {
        return Err(kerneltime::error::Error::missing(
            "--name",
            format!("{origin} does not name the GPU; give the device a name with --name"),
        ));
    }
    let toml = draft.to_toml(name)?;
    let device = Device::from_toml(&toml, &origin)?;
    match output {
        Some(out) => {
            kerneltime::error::write_atomic(out, toml.as_bytes())?;
            if !json {
                println!(
                    "wrote {} ({}: compute capability {}, {} SMs x {} cores, {:.1} GB/s; {} latencies, {} measured values)",
                    out.display(),
                    device.name,
                    device.compute_capability,
                    device.sm_count,
                    device.cores_per_sm,
                    device.memory_bandwidth_gbs,
                    device.latencies.as_ref().map_or(0, |l| l.values.len()),
                    draft.measured.len(),
                );
            }
        }
        None if !json => print!("{toml}"),
        None => {}
    }
    if json {
        return print_json(&device);
    }
    Ok(())
}
