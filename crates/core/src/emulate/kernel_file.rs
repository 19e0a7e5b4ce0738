//! PTX kernel files: a TOML file that names a PTX kernel and says how its launch and arguments
//! follow from named parameters (a sweep's axes, a measurement's columns):
//!
//! ```toml
//! ptx = "basics.nvcc-sm75.ptx"               # relative to this file
//! entry = "vector_add"
//! grid = ["(n + block_x - 1) / block_x"]     # 1 to 3 expressions (x, y, z); default 1
//! block = ["block_x"]                        # 1 to 3 expressions
//! args = ["3=n"]                             # NAME_OR_INDEX=EXPR (or a literal)
//! registers = 16                             # optional; else `resources`, else 32
//! resources = "basics.nvcc-sm75.ptxas.txt"   # optional ptxas -v / cuobjdump report
//! shared_bytes = 0                           # optional; else the report's, else the PTX's
//! ```
//!
//! Expressions are those of kernel programs (`workload::program`): parameter names, integers,
//! `+ - * /` (truncating) and parentheses, so `ceil(n / b)` is written `(n + b - 1) / b`.
//!
//! [`KernelFile::load`] reads the file and the PTX and report it names (the only files read here),
//! parses the PTX once, and keeps the representative block's emulation of recent launches
//! (up to [`MEMO_ENTRIES`]): a point with the same block shape, the same argument values and the
//! same representative block coordinates reuses it, whatever its grid, when the PTX never reads
//! the grid size (`%nctaid`, `%nclusterid`, `%gridid`): that block then executes exactly the same
//! instructions at the same addresses. Points that change an argument are emulated afresh.
//!
//! What it does NOT do: know about devices or time anything (the trace model does, in sweeps
//! through `explore::trace_cell`, in calibration through `fit::trace_calibration`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Deserialize;

use super::{emulate, find_entry, ArgValue, Emulation, KernelArg, LaunchDims, Options, Sampling};
use crate::error::{Error, Result};
use crate::workload::params::ParamValues;
use crate::workload::program::RepeatCount;
use kerneltime_ptx::ast::Module;

/// Emulated blocks kept per file for reuse across grids.
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
    /// The grid when the kernel reads it, or when the blocks emulated beside the representative
    /// one would wrap to the next row (then they depend on the grid's width), else zeros.
    grid: [u32; 3],
    args: Vec<KernelArg>,
}

/// A PTX kernel file loaded: the PTX parsed once, the expressions of its launch and arguments,
/// the kernel's resources, and the memo of emulated blocks.
pub struct KernelFile {
    module: Module,
    /// The kernel entry the file names.
    pub entry: String,
    /// The file, as named in errors and notes.
    pub origin: String,
    grid: [RepeatCount; 3],
    block: [RepeatCount; 3],
    args: Vec<(String, ArgSource)>,
    /// Registers per thread (the file's, the report's, or 32, said in the notes).
    pub registers_per_thread: u32,
    /// Shared memory per block, bytes (the file's, the report's, or the PTX's static shared).
    pub shared_bytes_per_block: u32,
    /// Spill stores and loads of the report, bytes per thread (0 without one).
    pub spill_store_bytes: u32,
    pub spill_load_bytes: u32,
    /// Whether the PTX reads the grid size (then an emulated block is only reused for its grid).
    pub reads_grid_size: bool,
    /// The parameter names the expressions use.
    pub parameters: Vec<String>,
    memo: Mutex<HashMap<BlockKey, Arc<Emulation>>>,
    /// Assumptions made while loading (e.g. registers defaulted) and how blocks are reused.
    pub notes: Vec<String>,
}

/// The position of the representative block in one grid dimension (`emulate::positions`: the
/// interior class when there are at least 4 blocks, else the first block).
pub fn rep_index(n: u32) -> u32 {
    if n >= 4 {
        n / 2
    } else {
        0
    }
}

impl KernelFile {
    /// Loads `text` (a PTX kernel file; `origin` names it and anchors its relative paths),
    /// reading the PTX and the resource report it names.
    pub fn load(text: &str, origin: &str) -> Result<Self> {
        let file = Self::parse(text, origin)?;
        Self::from_file(file, origin)
    }

    /// Reads a kernel file's TOML.
    pub fn parse(text: &str, origin: &str) -> Result<PtxKernelFile> {
        toml::from_str(text).map_err(|e| {
            Error::file(
                origin,
                format!(
                    "is not a PTX kernel file (ptx, entry, grid, block, args): {}{}",
                    e.message(),
                    crate::device::toml_position(text, e.span())
                ),
            )
        })
    }

    /// Loads a parsed kernel file (see [`KernelFile::load`]).
    pub fn from_file(file: PtxKernelFile, origin: &str) -> Result<Self> {
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
        let (module, _) = kerneltime_ptx::parse_bytes(&bytes);
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
                    kerneltime_ptx::resources::parse_report(&t)
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
            let cfg = kerneltime_ptx::cfg::Cfg::build(
                f,
                &mut kerneltime_ptx::diag::Diagnostics::default(),
            );
            u32::try_from(super::decode::decode(&module, f, &cfg).shared_bytes).unwrap_or(u32::MAX)
        };
        let shared = file
            .shared_bytes
            .or_else(|| {
                report
                    .as_ref()
                    .and_then(|r| r.shared_bytes)
                    .map(|b| u32::try_from(b).unwrap_or(u32::MAX))
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
        let mut parameters: Vec<String> = Vec::new();
        for e in grid.iter().chain(&block) {
            parameters.extend(e.parameter_names());
        }
        for (_, v) in &args {
            if let ArgSource::Expr(e) = v {
                parameters.extend(e.parameter_names());
            }
        }
        let spill = |b: Option<u64>| b.map_or(0, |b| u32::try_from(b).unwrap_or(u32::MAX));
        if !reads_grid_size {
            notes.push(format!(
                "{origin}: the kernel never reads the grid size: an emulated block is reused for points that change only the grid"
            ));
        }
        Ok(Self {
            module,
            entry: file.entry,
            origin: origin.to_string(),
            grid,
            block,
            args,
            registers_per_thread: registers,
            shared_bytes_per_block: shared,
            spill_store_bytes: spill(report.as_ref().and_then(|r| r.spill_store_bytes)),
            spill_load_bytes: spill(report.as_ref().and_then(|r| r.spill_load_bytes)),
            reads_grid_size,
            parameters,
            memo: Mutex::new(HashMap::new()),
            notes,
        })
    }

    /// For each name of `axes`, whether the file's expressions use it.
    pub fn uses(&self, axes: &[String]) -> Vec<bool> {
        axes.iter()
            .map(|a| self.parameters.iter().any(|n| n.eq_ignore_ascii_case(a)))
            .collect()
    }

    /// An error naming the first parameter the expressions use that is not among `axes`.
    pub fn check_parameters(&self, axes: &[String]) -> Result<()> {
        match self
            .parameters
            .iter()
            .find(|n| !axes.iter().any(|a| a.eq_ignore_ascii_case(n)))
        {
            Some(n) => Err(Error::missing(
                format!("param {n}"),
                format!(
                    "{} uses parameter `{n}`; give it a value with `param` {n}=...",
                    self.origin
                ),
            )),
            None => Ok(()),
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

    /// The launch and arguments at `params`; `grid`/`block`, when given (measured), replace the
    /// file's expressions.
    pub fn launch(
        &self,
        params: &ParamValues,
        grid: Option<[u32; 3]>,
        block: Option<[u32; 3]>,
    ) -> Result<(LaunchDims, Vec<KernelArg>)> {
        let launch = LaunchDims {
            grid: match grid {
                Some(g) => g,
                None => self.dims(&self.grid, params, "grid")?,
            },
            block: match block {
                Some(b) => b,
                None => self.dims(&self.block, params, "block")?,
            },
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

    /// The representative block's emulation of a launch (from the memo when exact): what the
    /// trace model simulates.
    pub fn representative(
        &self,
        launch: LaunchDims,
        args: Vec<KernelArg>,
    ) -> Result<Arc<Emulation>> {
        let rep = [
            rep_index(launch.grid[0]),
            rep_index(launch.grid[1]),
            rep_index(launch.grid[2]),
        ];
        let wave_wraps = rep[0] + super::DEFAULT_WAVE_BLOCKS >= launch.grid[0];
        let key = BlockKey {
            block: launch.block,
            rep,
            grid: if self.reads_grid_size || wave_wraps {
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

    /// Every sampled block of a launch, emulated afresh (for a full prediction's notes).
    pub fn emulate(&self, launch: LaunchDims, args: &[KernelArg]) -> Result<Emulation> {
        emulate(&self.module, &self.entry, launch, args, Options::default())
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
