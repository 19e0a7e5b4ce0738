//! The `trace` model (wang2019) in sweeps: a *PTX kernel file* names a kernel and says how its
//! launch and arguments follow from the swept parameters; each point is emulated and simulated.
//!
//! A PTX kernel file is TOML, given as ``inputs` trace=FILE.toml` (or `inputs = ["trace=..."]`
//! in a space file):
//!
//! ```toml
//! ptx = "basics.nvcc-sm75.ptx"               # relative to this file
//! entry = "vector_add"
//! grid = ["(n + block_x - 1) / block_x"]     # 1 to 3 expressions (x, y, z); default 1
//! block = ["block_x"]                        # 1 to 3 expressions
//! args = ["3=n"]                             # --arg NAME_OR_INDEX=EXPR (or a literal)
//! registers = 16                             # optional; else `resources`, else 32
//! resources = "basics.nvcc-sm75.ptxas.txt"   # optional ptxas -v / cuobjdump report
//! shared_bytes = 0                           # optional; else the report's, else the PTX's
//! ```
//!
//! Expressions are those of kernel programs (`workload::program`): parameter names, integers,
//! `+ - * /` (truncating) and parentheses, so `ceil(n / b)` is written `(n + b - 1) / b`.
//!
//! Per point, the fast path emulates only the block the trace model simulates (the interior
//! class, `Sampling::Representative`) and runs `trace_sim::run`: the same time as `predict`,
//! which emulates every sampled block for its notes (a test checks they agree). Reuse: the
//! emulated block is kept (up to [`MEMO_ENTRIES`] launches) and reused for a point with the same
//! block shape, the same argument values and the same representative block coordinates, with a
//! different grid, when the PTX never reads the grid size (`%nctaid`, `%nclusterid`,
//! `%gridid`): then that block executes exactly the same instructions at the same addresses,
//! and only eq 8 (blocks per SM, blocks in the round) sees the new grid. The round is simulated
//! again for every point (it depends on the grid through the number of blocks in a round).
//! Points that change an argument (typically `n`, from which the grid derives) are emulated
//! afresh: an argument can change any instruction.
//!
//! What it does NOT do: read the PTX again per point (parsed once per cell), run the other
//! models from the trace (see `model::from_trace`), or add launch overhead.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Deserialize;

use super::registry::{Context, Evaluator, Outcome, Prepared, Scratch, Workload};
use crate::device::latencies::{for_device, Resolved as LatencyTable};
use crate::device::Device;
use crate::emulate::{
    emulate, find_entry, ArgValue, Emulation, KernelArg, LaunchDims, Options, Sampling,
};
use crate::error::{Error, Result};
use crate::model::trace_sim::{self, KernelResources};
use crate::model::Prediction;
use crate::ptx::ast::Module;
use crate::workload::params::ParamValues;
use crate::workload::program::RepeatCount;

/// Emulated blocks kept per cell for reuse across grids.
pub const MEMO_ENTRIES: usize = 4096;

/// A PTX kernel file as written.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct PtxKernelFile {
    pub ptx: PathBuf,
    pub entry: String,
    #[serde(default)]
    pub grid: Vec<String>,
    pub block: Vec<String>,
    #[serde(default)]
    pub args: Vec<String>,
    pub registers: Option<u32>,
    pub resources: Option<PathBuf>,
    pub shared_bytes: Option<u32>,
}

/// An argument: a literal number, or an expression evaluated per point.
#[derive(Debug, Clone)]
enum ArgSource {
    Literal(ArgValue),
    Expr(RepeatCount),
}

/// Launch dimensions, arguments and the representative block: what decides an emulated block.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct BlockKey {
    block: [u32; 3],
    rep: [u32; 3],
    /// The grid when the kernel reads it, else zeros.
    grid: [u32; 3],
    args: Vec<KernelArg>,
}

struct TraceEvaluator {
    module: Module,
    entry: String,
    origin: String,
    grid: [RepeatCount; 3],
    block: [RepeatCount; 3],
    args: Vec<(String, ArgSource)>,
    device: Arc<Device>,
    lat: LatencyTable,
    res: KernelResources,
    axes: Vec<String>,
    reads_grid_size: bool,
    memo: Mutex<HashMap<BlockKey, Arc<Emulation>>>,
    notes: Vec<String>,
}

/// The position of the representative block in one grid dimension (`emulate::positions`: the
/// interior class when there are at least 4 blocks, else the first block).
fn rep_index(n: u32) -> u32 {
    if n >= 4 {
        n / 2
    } else {
        0
    }
}

impl TraceEvaluator {
    fn fill(&self, values: &[f64], params: &mut ParamValues) {
        for (name, v) in self.axes.iter().zip(values) {
            params.set(name, *v);
        }
    }

    fn dims(&self, exprs: &[RepeatCount; 3], params: &ParamValues, what: &str) -> Result<[u32; 3]> {
        let mut out = [1u32; 3];
        for (k, e) in exprs.iter().enumerate() {
            let v = e.evaluate(params, what)?;
            out[k] = u32::try_from(v).ok().filter(|v| *v > 0).ok_or_else(|| {
                Error::invalid(
                    format!("{} {what}", self.origin),
                    format!(
                        "dimension {k} evaluates to {v}; it must be between 1 and {}",
                        u32::MAX
                    ),
                )
            })?;
        }
        Ok(out)
    }

    fn launch(&self, params: &ParamValues) -> Result<(LaunchDims, Vec<KernelArg>)> {
        let launch = LaunchDims {
            grid: self.dims(&self.grid, params, "grid")?,
            block: self.dims(&self.block, params, "block")?,
        };
        Ok((launch, self.args_at(params)?))
    }

    /// The kernel arguments at a point: literals as written, expressions evaluated.
    fn args_at(&self, params: &ParamValues) -> Result<Vec<KernelArg>> {
        self.args
            .iter()
            .map(|(name, v)| {
                let value = match v {
                    ArgSource::Literal(v) => *v,
                    ArgSource::Expr(e) => ArgValue::Int(i128::from(e.evaluate(params, "args")?)),
                };
                Ok(KernelArg::new(name.clone(), value))
            })
            .collect()
    }

    /// The representative block's emulation for this launch (from the memo when exact).
    fn block_trace(&self, launch: LaunchDims, args: Vec<KernelArg>) -> Result<Arc<Emulation>> {
        let key = BlockKey {
            block: launch.block,
            rep: [
                rep_index(launch.grid[0]),
                rep_index(launch.grid[1]),
                rep_index(launch.grid[2]),
            ],
            grid: if self.reads_grid_size {
                launch.grid
            } else {
                [0; 3]
            },
            args,
        };
        if let Some(em) = self.memo.lock().ok().and_then(|m| m.get(&key).cloned()) {
            // The grid is not part of the emulation; still check it is a valid launch.
            launch.validate(find_entry(&self.module, &self.entry)?)?;
            return Ok(em);
        }
        let opts = Options {
            sampling: Sampling::Representative,
            ..Options::default()
        };
        let em = Arc::new(emulate(&self.module, &self.entry, launch, &key.args, opts)?);
        if let Ok(mut m) = self.memo.lock() {
            if m.len() >= MEMO_ENTRIES {
                m.clear();
            }
            m.insert(key, em.clone());
        }
        Ok(em)
    }
}

impl Evaluator for TraceEvaluator {
    fn evaluate(&self, values: &[f64], scratch: &mut Scratch) -> Result<Outcome> {
        let params = &mut scratch.params;
        self.fill(values, params);
        let (launch, args) = self.launch(params)?;
        let em = self.block_trace(launch, args)?;
        let r = trace_sim::run_on(&self.device, launch, &em, self.res, &self.lat)?;
        let warps_per_block = f64::from(launch.warps_per_block());
        Ok(Outcome {
            time_us: r.time_us,
            cycles: r.cycles,
            occupancy: f64::from(r.active_blocks_per_sm) * warps_per_block
                / f64::from(self.device.limits.max_warps_per_sm.max(1)),
            threads_per_block: f64::from(launch.threads_per_block()),
            blocks: launch.blocks() as f64,
            shared_memory_bytes: f64::from(self.res.shared_bytes_per_block),
        })
    }

    fn predict(&self, values: &[f64]) -> Result<Prediction> {
        let mut params = ParamValues::default();
        self.fill(values, &mut params);
        let (launch, args) = self.launch(&params)?;
        let em = emulate(&self.module, &self.entry, launch, &args, Options::default())?;
        let (mut p, _) = trace_sim::predict(&self.device, &em, self.res, &self.lat)?;
        p.notes.extend(self.notes.iter().cloned());
        Ok(p)
    }
}

fn parse_arg(text: &str, origin: &str) -> Result<(String, ArgSource)> {
    let (name, value) = text.split_once('=').ok_or_else(|| {
        Error::invalid(
            format!("{origin} args"),
            format!("`{text}` is not NAME=EXPR (e.g. 3=n or n=n)"),
        )
    })?;
    let value = value.trim();
    let v = if let Some(v) = ArgValue::parse(value) {
        ArgSource::Literal(v)
    } else {
        let e = RepeatCount::Param(value.to_string());
        e.check_syntax()
            .map_err(|m| Error::invalid(format!("{origin} args {name}"), m))?;
        ArgSource::Expr(e)
    };
    Ok((name.trim().to_string(), v))
}

fn dims_of(texts: &[String], origin: &str, what: &str) -> Result<[RepeatCount; 3]> {
    if texts.len() > 3 {
        return Err(Error::invalid(
            format!("{origin} {what}"),
            "has more than 3 dimensions",
        ));
    }
    let mut out = [
        RepeatCount::Fixed(1),
        RepeatCount::Fixed(1),
        RepeatCount::Fixed(1),
    ];
    for (k, t) in texts.iter().enumerate() {
        let t = t.trim();
        out[k] = match t.parse::<u64>() {
            Ok(v) => RepeatCount::Fixed(v),
            Err(_) => {
                let e = RepeatCount::Param(t.to_string());
                e.check_syntax()
                    .map_err(|m| Error::invalid(format!("{origin} {what}"), m))?;
                e
            }
        };
    }
    Ok(out)
}

/// Prepares the trace model for one PTX kernel file and one device.
pub fn prepare_trace(cx: &Context<'_>) -> Result<Prepared> {
    let (text, origin) = match cx.workload {
        Workload::Inputs { text, origin, .. } => (text, origin),
        Workload::Kernel(k) => {
            return Err(Error::invalid(
                "model",
                format!(
                    "model trace runs a PTX kernel file (`inputs` trace=FILE.toml), not the kernel program {}",
                    k.name
                ),
            ))
        }
    };
    let (evaluator, uses, notes) = build(text, origin, cx.device.cloned(), cx.axes, true)?;
    Ok(Prepared {
        evaluator: Box::new(evaluator),
        uses,
        notes,
    })
}

/// Loads a PTX kernel file for one device: parsed once, with its resources and latencies;
/// `axes` are the parameter names the caller will give values for; with `strict`, a name the file
/// uses that is not among them is an error (else it fails the points that lack it).
fn build(
    text: &str,
    origin: &String,
    device: Option<Arc<Device>>,
    axes: &[String],
    strict: bool,
) -> Result<(TraceEvaluator, Vec<bool>, Vec<String>)> {
    let file: PtxKernelFile = toml::from_str(text).map_err(|e| {
        Error::file(
            origin,
            format!(
                "is not a PTX kernel file (ptx, entry, grid, block, args): {}{}",
                e.message(),
                crate::device::toml_position(text, e.span())
            ),
        )
    })?;
    let device = device.ok_or_else(|| {
        Error::missing(
            "device",
            "model trace needs a device (`device` NAME or a filter)",
        )
    })?;
    let dir = Path::new(origin).parent().unwrap_or(Path::new(""));
    let rebase = |p: &Path| {
        if p.is_relative() {
            dir.join(p)
        } else {
            p.to_path_buf()
        }
    };
    let ptx_path = rebase(&file.ptx);
    let bytes = std::fs::read(&ptx_path)
        .map_err(|e| Error::file(&ptx_path, format!("cannot read: {e}")))?;
    let (module, _) = crate::ptx::parse_bytes(&bytes);
    let f = find_entry(&module, &file.entry)?;
    let source = String::from_utf8_lossy(&bytes);
    let reads_grid_size = ["%nctaid", "%nclusterid", "%gridid", "%cluster_nctaid"]
        .iter()
        .any(|s| source.contains(s));
    let mut notes = Vec::new();
    let report = match &file.resources {
        Some(p) => {
            let p = rebase(p);
            let t = std::fs::read_to_string(&p)
                .map_err(|e| Error::file(&p, format!("cannot read: {e}")))?;
            Some(
                crate::ptx::resources::parse_report(&t)
                    .into_iter()
                    .find(|r| r.name == file.entry)
                    .ok_or_else(|| {
                        Error::file(&p, format!("has no entry for kernel `{}`", file.entry))
                    })?,
            )
        }
        None => None,
    };
    let registers = match (file.registers, report.as_ref().and_then(|r| r.registers)) {
        (Some(r), _) => r,
        (None, Some(r)) => r as u32,
        (None, None) => {
            notes.push(format!(
                "{origin}: no registers or resources: 32 registers per thread assumed for occupancy"
            ));
            32
        }
    };
    let static_shared = {
        let cfg = crate::ptx::cfg::Cfg::build(f, &mut crate::ptx::diag::Diagnostics::default());
        u32::try_from(crate::emulate::decode::decode(&module, f, &cfg).shared_bytes)
            .unwrap_or(u32::MAX)
    };
    let shared = file
        .shared_bytes
        .or_else(|| {
            report
                .as_ref()
                .and_then(|r| r.shared_bytes)
                .map(|b| b as u32)
        })
        .unwrap_or(static_shared);
    if file.block.is_empty() {
        return Err(Error::missing(
            format!("{origin} block"),
            "give the block dimensions (e.g. block = [\"block_x\"])",
        ));
    }
    let grid = dims_of(&file.grid, origin, "grid")?;
    let block = dims_of(&file.block, origin, "block")?;
    let args = file
        .args
        .iter()
        .map(|a| parse_arg(a, origin))
        .collect::<Result<Vec<_>>>()?;
    let mut names: Vec<String> = Vec::new();
    for e in grid.iter().chain(&block) {
        names.extend(e.parameter_names());
    }
    for (_, v) in &args {
        if let ArgSource::Expr(e) = v {
            names.extend(e.parameter_names());
        }
    }
    let uses: Vec<bool> = axes
        .iter()
        .map(|a| names.iter().any(|n| n.eq_ignore_ascii_case(a)))
        .collect();
    if let Some(n) = names
        .iter()
        .find(|n| strict && !axes.iter().any(|a| a.eq_ignore_ascii_case(n)))
    {
        return Err(Error::missing(
            format!("param {n}"),
            format!("{origin} uses parameter `{n}`; give it a value with `param` {n}=..."),
        ));
    }
    let lat = for_device(&device)?;
    if !reads_grid_size {
        notes.push(format!(
            "{origin}: the kernel never reads the grid size: an emulated block is reused for points that change only the grid"
        ));
    }
    Ok((
        TraceEvaluator {
            module,
            entry: file.entry,
            origin: origin.clone(),
            grid,
            block,
            args,
            device,
            lat,
            res: KernelResources {
                registers_per_thread: registers,
                shared_bytes_per_block: shared,
            },
            axes: axes.to_vec(),
            reads_grid_size,
            memo: Mutex::new(HashMap::new()),
            notes: notes.clone(),
        },
        uses,
        notes,
    ))
}

/// A PTX kernel file loaded for one device outside a sweep (calibration and evaluation read
/// measured launches with it): the launch, arguments and representative-block emulation of a
/// parameter point. The PTX is parsed once; emulations are memoised as in sweeps.
pub struct LoadedKernelFile(TraceEvaluator);

impl LoadedKernelFile {
    /// Loads `text` (a PTX kernel file; `origin` names it and anchors its relative paths) for
    /// `device`; `names` are the parameters the caller will give values for.
    pub fn load(text: &str, origin: &str, device: Arc<Device>, names: &[String]) -> Result<Self> {
        let (ev, _, _) = build(text, &origin.to_string(), Some(device), names, false)?;
        Ok(Self(ev))
    }

    /// The kernel entry the file names.
    pub fn entry(&self) -> &str {
        &self.0.entry
    }

    /// Assumptions made while loading (e.g. registers defaulted).
    pub fn notes(&self) -> &[String] {
        &self.0.notes
    }

    pub fn resources(&self) -> KernelResources {
        self.0.res
    }

    /// The device's latency table the trace model uses.
    pub fn latencies(&self) -> &LatencyTable {
        &self.0.lat
    }

    /// The launch and arguments at `params`; `grid`/`block`, when given (measured), replace the
    /// file's expressions.
    pub fn launch(
        &self,
        params: &ParamValues,
        grid: Option<[u32; 3]>,
        block: Option<[u32; 3]>,
    ) -> Result<(LaunchDims, Vec<KernelArg>)> {
        let ev = &self.0;
        let launch = LaunchDims {
            grid: match grid {
                Some(g) => g,
                None => ev.dims(&ev.grid, params, "grid")?,
            },
            block: match block {
                Some(b) => b,
                None => ev.dims(&ev.block, params, "block")?,
            },
        };
        Ok((launch, ev.args_at(params)?))
    }

    /// The representative block's emulation of a launch (`trace_sim::run_on` gives the model's
    /// time from it).
    pub fn emulate(&self, launch: LaunchDims, args: Vec<KernelArg>) -> Result<Arc<Emulation>> {
        self.0.block_trace(launch, args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::catalogue;

    const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/ptx");

    fn prepared(toml_body: &str, axes: &[&str]) -> Result<Prepared> {
        let text = toml_body.replace("FIX", FIX);
        let workload = Workload::Inputs {
            name: "k".into(),
            origin: format!("{FIX}/k.toml"),
            text,
        };
        let dev = Arc::new(catalogue::find("V100").unwrap().clone());
        let axes: Vec<String> = axes.iter().map(|s| s.to_string()).collect();
        let first = vec![1.0; axes.len()];
        prepare_trace(&Context {
            workload: &workload,
            device: Some(&dev),
            axes: &axes,
            first_values: &first,
            t_p_us: None,
            t_m_cycles: None,
            calibration: None,
        })
    }

    const VECTOR_ADD: &str = r#"
ptx = "basics.nvcc-sm75.ptx"
entry = "vector_add"
grid = ["(n + block_x - 1) / block_x"]
block = ["block_x"]
args = ["3=n"]
resources = "basics.nvcc-sm75.ptxas.txt"
"#;

    #[test]
    fn fast_path_equals_the_full_prediction() {
        type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a [f64]]);
        let cases: [Case<'_>; 3] = [
            (
                VECTOR_ADD,
                &["block_x", "n"],
                &[&[32.0, 1000.0], &[256.0, 1_048_576.0], &[1024.0, 3000.0]],
            ),
            (
                r#"ptx = "basics.nvcc-sm75.ptx"
entry = "reduce_sum"
grid = ["(n + 255) / 256"]
block = ["256"]
args = ["2=n"]"#,
                &["n"],
                &[&[256.0], &[100_000.0]],
            ),
            (
                r#"ptx = "fdtd.nvcc-sm75.ptx"
entry = "fdtd_o2"
grid = ["nx / bx", "ny / by"]
block = ["bx", "by"]
args = ["5=nx", "6=ny", "7=nz"]"#,
                &["bx", "by", "nx", "ny", "nz"],
                &[
                    &[32.0, 4.0, 1280.0, 100.0, 16.0],
                    &[64.0, 2.0, 640.0, 20.0, 4.0],
                ],
            ),
        ];
        let mut scratch = Scratch::default();
        for (body, axes, points) in cases {
            let p = prepared(body, axes).unwrap();
            for v in points {
                let fast = p.evaluator.evaluate(v, &mut scratch).unwrap();
                let full = p.evaluator.predict(v).unwrap();
                assert_eq!(
                    fast.time_us.to_bits(),
                    full.time_us.to_bits(),
                    "{axes:?} {v:?}"
                );
                assert!(fast.time_us > 0.0);
            }
        }
    }

    #[test]
    fn a_block_is_reused_across_grids_with_the_same_result() {
        // n fixed, the grid swept on its own: vector_add never reads %nctaid, and grids of 8 and
        // 9 blocks share the representative block 4 (8 / 2 = 9 / 2 = 4).
        let body = r#"
ptx = "basics.nvcc-sm75.ptx"
entry = "vector_add"
grid = ["g"]
block = ["128"]
args = ["3=1000000"]
"#;
        let mut scratch = Scratch::default();
        let shared = prepared(body, &["g"]).unwrap();
        let a = shared.evaluator.evaluate(&[8.0], &mut scratch).unwrap();
        let b = shared.evaluator.evaluate(&[9.0], &mut scratch).unwrap();
        // Fresh evaluators (nothing to reuse) give the same bits.
        let fresh = |g: f64| {
            prepared(body, &["g"])
                .unwrap()
                .evaluator
                .evaluate(&[g], &mut Scratch::default())
                .unwrap()
                .time_us
        };
        assert_eq!(a.time_us.to_bits(), fresh(8.0).to_bits());
        assert_eq!(b.time_us.to_bits(), fresh(9.0).to_bits());
        // And the full path (every sampled block emulated for the 9-block grid) agrees.
        let full = shared.evaluator.predict(&[9.0]).unwrap();
        assert_eq!(b.time_us.to_bits(), full.time_us.to_bits());
    }

    #[test]
    fn representative_index_matches_the_emulator_choice() {
        // emulate's classes: 1 -> first; 2 -> first, last (tie: first); 3 -> one block each (tie:
        // first); n >= 4 -> the interior class (n - 2 blocks) at n / 2.
        for (n, want) in [(1, 0), (2, 0), (3, 0), (4, 2), (9, 4), (1000, 500)] {
            assert_eq!(rep_index(n), want);
            let blocks: Vec<crate::emulate::SampledBlock> = match n {
                1 => vec![(0, 1)],
                2 => vec![(0, 1), (1, 1)],
                _ => vec![(0, 1), (n / 2, u64::from(n - 2)), (n - 1, 1)],
            }
            .into_iter()
            .map(|(x, r)| crate::emulate::SampledBlock {
                block: [x, 0, 0],
                linear: u64::from(x),
                represents: r,
                class: String::new(),
            })
            .collect();
            let rep = crate::emulate::representative(&blocks).unwrap();
            assert_eq!(rep.block[0], want, "n = {n}");
        }
    }

    #[test]
    fn bad_kernel_files_are_one_sentence_errors() {
        let e = prepared(VECTOR_ADD, &["block_x"])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("param n"), "{e}");
        let e = prepared("ptx = \"basics.nvcc-sm75.ptx\"\n", &[])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("PTX kernel file"), "{e}");
        let e = prepared(
            "ptx = \"basics.nvcc-sm75.ptx\"\nentry = \"nope\"\nblock = [\"32\"]\n",
            &[],
        )
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("nope"), "{e}");
        // A grid expression that evaluates to 0 is an error, not a panic.
        let p = prepared(VECTOR_ADD, &["block_x", "n"]).unwrap();
        let e = p
            .evaluator
            .evaluate(&[32.0, 0.0], &mut Scratch::default())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("grid"), "{e}");
    }
}
