//! `predict --ptx FILE --entry NAME --grid .. --block .. [--arg ..] [--resources LOG]`, or
//! `--source FILE.cu [--define K=V]` compiled for the device first: the `trace` model and every
//! other model from the same emulated kernel (`--model all`, or no
//! `--model`, shows them side by side with the spread between them as an uncertainty band,
//! headed by the recommended answer).
//!
//! Reads flags and files, prints; the work is `compile`, `emulate` and `model::from_trace`.

use std::path::PathBuf;
use std::sync::Arc;

use super::predict::PredictArgs;
use super::print_json;
use super::trace::{data_hints, emulate_module_with, load_ptx, ptx_entry};
use super::units::time_us;
use kerneltime::compile::cache::{default_dir, CompileCache};
use kerneltime::compile::{parse_define, Choice, CompileJob, Language};
use kerneltime::device::Device;
use kerneltime::emulate::Options as EmulationOptions;
use kerneltime::error::{Error, Result};
use kerneltime::fit::calibrate::CalibrationFile;
use kerneltime::ptx::resources::{parse_report, KernelResources};
use kerneltime::tune::host_link::mapped_link;
use kerneltime::tune::launch::{by_position, signature_params};
use kerneltime::{Kernel, ModelId, Options};

/// Whether `predict --model MODEL` takes the PTX path with these flags.
pub fn wants_ptx(model: ModelId, args: &PredictArgs) -> bool {
    let kernel = args.ptx.is_some() || args.source.is_some();
    model == ModelId::Trace || (kernel && ModelId::from_ptx().any(|m| m == model))
}

/// The kernel of `--ptx` or `--source`: its module, its PTX entry, its resources from the
/// compiler when it compiled them, and where those came from.
struct LoadedKernel {
    module: kerneltime::ptx::ast::Module,
    entry: String,
    from: KernelFrom,
    /// The parameter names of the kernel's declaration in the source (empty for PTX).
    params: Vec<String>,
}

/// Where a kernel came from.
enum KernelFrom {
    /// A PTX file (ptxas runs on it when no report came with it).
    Ptx(PathBuf),
    /// A source compiled here: the compiler's report for the kernel, and where it came from.
    Compiled {
        resources: Option<KernelResources>,
        origin: String,
    },
}

/// A missing kernel argument of a source's kernel, with the declaration's names by position
/// (the PTX's own names are mangled).
fn with_source_names(e: Error, params: &[String]) -> Error {
    match e {
        Error::MissingInput { name, message } if !params.is_empty() => {
            let names: Vec<String> = params
                .iter()
                .enumerate()
                .map(|(k, p)| format!("{k} `{p}`"))
                .collect();
            Error::MissingInput {
                name,
                message: format!("{message} (in the source: {})", names.join(", ")),
            }
        }
        e => e,
    }
}

/// The error of a PTX model given no kernel.
fn no_kernel(label: &str) -> Error {
    Error::missing(
        "--ptx",
        format!("the {label} model reads a kernel: --ptx FILE.ptx or --source FILE.cu, with --entry NAME --grid X[,Y,Z] --block X[,Y,Z]"),
    )
}

/// Reads `--ptx`, or compiles `--source` for `device`.
fn load_kernel(
    args: &PredictArgs,
    entry: &str,
    device: &Device,
    label: &str,
) -> Result<LoadedKernel> {
    if let Some(ptx) = &args.ptx {
        // (clap's `requires` lets these through beside --ptx, which --source conflicts with.)
        let compiler_flag = [
            ("--define", args.defines.is_empty()),
            ("--compiler-option", args.compiler_options.is_empty()),
        ]
        .into_iter()
        .find(|&(_, absent)| !absent);
        if let Some((flag, _)) = compiler_flag {
            return Err(Error::invalid(
                flag,
                "is for --source; a PTX file is compiled already",
            ));
        }
        let (module, entry) = load_ptx(ptx, entry)?;
        return Ok(LoadedKernel {
            module,
            entry,
            from: KernelFrom::Ptx(ptx.clone()),
            params: Vec::new(),
        });
    }
    let Some(path) = &args.source else {
        return Err(no_kernel(label));
    };
    let text = super::read_text(path)?;
    let language = match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("cl") => Language::OpenCl,
        _ => Language::Cuda,
    };
    let defines = args
        .defines
        .iter()
        .map(|d| parse_define("define", d))
        .collect::<Result<Vec<_>>>()?;
    let file_name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("kernel.cu");
    let job = CompileJob {
        source: &text,
        file_name,
        include_dir: path.parent().filter(|d| !d.as_os_str().is_empty()),
        language,
        defines: &defines,
        options: &args.compiler_options,
        arch: device.compute_capability,
    };
    let choice = Choice::parse(&args.compiler)?;
    let cache = CompileCache::new(if args.no_compile_cache {
        None
    } else {
        args.compile_cache.clone().or_else(default_dir)
    });
    let c = kerneltime::api::compile_kernel(&job, choice, &cache, "source")?;
    let params = signature_params(&text, entry, language);
    let (module, entry) = ptx_entry(c.ptx.as_bytes(), entry, |d| {
        Error::file(
            path,
            format!("compiled to PTX the emulator cannot run: {d}"),
        )
    })?;
    let resources = c.resources_of(&entry);
    let origin = if c.cached {
        format!("{}, from the compile cache", c.origin)
    } else {
        c.origin
    };
    Ok(LoadedKernel {
        module,
        entry,
        from: KernelFrom::Compiled { resources, origin },
        params,
    })
}

/// `model` on the PTX launch the flags describe; `None` is `--model all`.
pub fn run(
    model: Option<ModelId>,
    args: &PredictArgs,
    calibration: Option<CalibrationFile>,
) -> Result<()> {
    let models: Vec<ModelId> = match model {
        Some(m) => vec![m],
        None => ModelId::from_ptx().collect(),
    };
    let label = model.map_or_else(|| "all".to_string(), |m| m.to_string());
    if model.is_none() && calibration.is_some() {
        return Err(Error::invalid(
            "--calibration",
            "a calibration is for one model: give --model with it, not all",
        ));
    }
    let need = |v: &Option<String>, flag: &str, what: &str| {
        v.clone().ok_or_else(|| {
            Error::missing(
                flag,
                format!("the {label} model from PTX needs {flag} {what}"),
            )
        })
    };
    if args.ptx.is_none() && args.source.is_none() {
        return Err(no_kernel(&label));
    }
    let entry = need(&args.entry, "--entry", "NAME")?;
    let grid = need(&args.grid, "--grid", "X[,Y,Z]")?;
    let block = need(&args.block, "--block", "X[,Y,Z]")?;
    let device = args.device.resolve()?;
    // The PTX entry (a C++ kernel name means its mangled entry).
    let LoadedKernel {
        module,
        entry,
        from,
        params,
    } = load_kernel(args, &entry, &device, &label)?;
    let resources = match &args.resources {
        Some(p) => {
            let all = parse_report(&super::read_text(p)?);
            if all.is_empty() {
                return Err(Error::file(
                    p,
                    "is neither a ptxas -v / NVRTC log nor cuobjdump -res-usage output",
                ));
            }
            Some(
                all.into_iter()
                    .find(|r| r.name == entry)
                    .ok_or_else(|| Error::file(p, format!("has no entry for kernel `{entry}`")))?,
            )
        }
        None => None,
    };
    // Without a report: the compiler's, or ptxas when it is on this machine.
    let (resources, resources_origin) = match (resources, from) {
        (Some(r), _) => (Some(r), None),
        (None, KernelFrom::Compiled { resources, origin }) => {
            let origin = resources.is_some().then_some(origin);
            (resources, origin)
        }
        (None, KernelFrom::Ptx(ptx)) => {
            match kerneltime::compile::ptxas::ptxas_resources(
                &ptx,
                &entry,
                device.compute_capability,
            ) {
                Some(rep) => {
                    let note = rep.note();
                    (Some(rep.resources), Some(note))
                }
                None => (None, None),
            }
        }
    };
    // A source's parameter names stand for their positions (PTX names them by position).
    let kernel_args: Vec<String> = args.args.iter().map(|a| by_position(a, &params)).collect();
    let data_args: Vec<String> = args.data.iter().map(|a| by_position(a, &params)).collect();
    let data = data_hints(&data_args)?;
    let budgets = super::trace::budgets(args.step_budget, args.launch_budget)?;
    let em = emulate_module_with(&module, &entry, &grid, &block, &kernel_args, &data, budgets)
        .map_err(|e| with_source_names(e, &params))?;
    // Data the emulation could not know: the best case too, for the band.
    let best_case = if em.data_dependence.any() {
        let o = EmulationOptions {
            unknown: kerneltime::emulate::UnknownData::Best,
            ..budgets
        };
        Some(Arc::new(emulate_module_with(
            &module,
            &entry,
            &grid,
            &block,
            &kernel_args,
            &data,
            o,
        )?))
    } else {
        None
    };
    // Mapped host buffers: the transfer over the host link, and its note.
    let mapped: Vec<String> = args
        .mapped_host
        .iter()
        .map(|a| by_position(a, &params))
        .collect();
    let host_transfer = if mapped.is_empty() {
        None
    } else {
        let shown: Vec<&str> = args.mapped_host.iter().map(String::as_str).collect();
        Some(mapped_link(&module, &entry, &em, &mapped, &shown, &device)?)
    };
    let kernel = Kernel::Emulated {
        emulation: Arc::new(em),
        resources,
    };
    let calibrated = calibration.is_some();
    let options = Options {
        calibration,
        calibration_kernel: model.map(|m| super::predict::calibration_kernel(args, m)),
        t_p_us: args.t_p_us,
        t_m_cycles: args.t_m_cycles,
        dynamic_shared_bytes: args.dynamic_shared_bytes,
        resources_origin,
        best_case,
        host_transfer,
        ..Options::default()
    };
    let report = kerneltime::predict_models(&kernel, &device, &models, &options)?;
    // One model's prediction carries the launch's notes too (registers, emulation).
    let single = || {
        let mut p = report.predictions[0].clone();
        for n in &report.notes {
            if !p.notes.contains(n) {
                p.notes.push(n.clone());
            }
        }
        p
    };
    if calibrated {
        return super::predict::print_calibrated(&single(), args.json);
    }
    if args.json {
        if models.len() == 1 {
            return print_json(&single());
        }
        return print_json(&report);
    }
    println!(
        "{} on {}: grid {:?}, block {:?}",
        report.entry, report.device, report.launch.grid, report.launch.block
    );
    if let Some(r) = &report.recommended {
        println!("  recommended {}  ({})", time_us(r.time_us), r.why);
    }
    for p in &report.predictions {
        println!("  {:<10} {:>14}", p.model, time_us(p.time_us));
    }
    for e in &report.errors {
        println!("  {:<10} not run: {}", e.model, e.error);
    }
    if let Some(b) = &report.band {
        println!(
            "  band       {} .. {} (geometric mean {}, max/min {:.2})",
            time_us(b.min_us),
            time_us(b.max_us),
            time_us(b.geometric_mean_us),
            b.spread_ratio
        );
    }
    let b = &report.bound;
    println!(
        "  bound      {} ({}: DRAM {}, L2 {}, issue {}, atomics {}, launch {})",
        time_us(b.bound_us),
        b.binding,
        time_us(b.dram_us),
        time_us(b.l2_us),
        time_us(b.issue_us),
        time_us(b.atomic_us),
        time_us(b.launch_us)
    );
    if !report.bound_violations.is_empty() {
        let names: Vec<String> = report
            .bound_violations
            .iter()
            .map(|m| m.to_string())
            .collect();
        println!(
            "  warning: below the physical bound: {} (see their notes)",
            names.join(", ")
        );
    }
    let m = &report.mix;
    println!(
        "  per warp   {:.1} instructions, {:.1} global ld, {:.1} st, {:.2} sectors/request, L1 hit {:.3}, L2 hit {:.3}, ILP {:.2}, MLP {:.2}",
        m.inst, m.global_loads, m.global_stores, m.sectors_per_request, m.l1_hit_ratio, m.l2_hit_ratio, m.ilp, m.mlp
    );
    let mut shown = std::collections::HashSet::new();
    let single = models.len() == 1;
    let extra = report
        .predictions
        .iter()
        .filter(|_| single)
        .flat_map(|p| p.notes.iter());
    for n in report.notes.iter().chain(extra) {
        if shown.insert(n.as_str()) {
            println!("  note: {n}");
        }
    }
    Ok(())
}
