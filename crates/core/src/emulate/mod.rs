//! Warp emulation of a PTX kernel for one concrete launch: every sampled warp runs the kernel's
//! control flow with 32 lanes, active masks, guard predicates, divergence and reconvergence at the
//! immediate post-dominator (a SIMT stack), and exact integer and address arithmetic. The result
//! is one `workload::trace::WarpTrace` per emulated warp.
//!
//! Values: each register lane holds a value or is *unknown* (a two-level lattice). Kernel
//! arguments come from `--arg`; pointer parameters without a value get distinct synthetic base
//! addresses (`(k + 1) << 36`), so address patterns are exact relative to them. Values loaded from
//! memory are unknown. A branch whose predicate is unknown for some lanes follows wang2019's
//! conservative rule: those lanes take both sides of a forward branch (the code is assumed to
//! run), and leave a loop at a backward branch (one more iteration would be a guess); both are
//! reported in the notes. A per-warp step budget stops runaway loops with an error.
//!
//! Sampling: blocks at the first, middle and last position of each grid dimension (up to 27
//! blocks) stand for all blocks; every warp of a sampled block is emulated (partial warps
//! included), in launch order. `Sampling::All` emulates every block.
//!
//! What it does NOT do: follow calls, jump tables, or memory contents; model atomics' values or
//! textures; time anything (that is `model::trace_sim`).

pub mod decode;

use std::collections::{BTreeSet, HashSet};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::memory::{banks, coalescing};
use crate::ptx::ast::{Function, Module};
use crate::ptx::cfg::Cfg;
use crate::ptx::classify::Space;
use crate::ptx::diag::Diagnostics;
use crate::ptx::loops::find_loops;
use crate::workload::trace::{MemAccess, MemSpace, TraceOp, WarpTrace};
use decode::{decode, Cmp, DInst, Decoded, MulMode, OpK, Special, Src, Ty, GLOBAL_STRIDE_SHIFT};
use decode::{LOCAL_WINDOW, SHARED_WINDOW};

/// Lanes per warp.
pub const WARP: usize = 32;

/// Default budget of dynamic instructions per warp.
pub const DEFAULT_STEP_BUDGET: u64 = 4_000_000;

/// A launch: grid and block dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LaunchDims {
    pub grid: [u32; 3],
    pub block: [u32; 3],
}

impl LaunchDims {
    pub fn threads_per_block(&self) -> u32 {
        self.block[0] * self.block[1] * self.block[2]
    }
    pub fn blocks(&self) -> u64 {
        self.grid.iter().map(|&g| u64::from(g)).product()
    }
    pub fn warps_per_block(&self) -> u32 {
        self.threads_per_block().div_ceil(WARP as u32)
    }

    /// Parses `--grid`/`--block` text `X[,Y,Z]` (also `x` as separator).
    pub fn parse_dims(flag: &str, text: &str) -> Result<[u32; 3]> {
        let parts: Vec<&str> = text
            .split([',', 'x', 'X'])
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect();
        if parts.is_empty() || parts.len() > 3 {
            return Err(Error::invalid(
                flag,
                format!("expected X[,Y,Z] with one to three whole numbers, got `{text}`"),
            ));
        }
        let mut d = [1u32; 3];
        for (k, p) in parts.iter().enumerate() {
            d[k] = p.parse().map_err(|_| {
                Error::invalid(flag, format!("`{p}` is not a whole number in `{text}`"))
            })?;
            if d[k] == 0 {
                return Err(Error::invalid(
                    flag,
                    format!("dimensions must be at least 1, got `{text}`"),
                ));
            }
        }
        Ok(d)
    }

    /// Checks the launch against CUDA's limits (1024 threads per block, block z up to 64, grid
    /// x up to 2^31 - 1, y and z up to 65535) and the kernel's `.maxntid`/`.reqntid`.
    pub fn validate(&self, f: &Function) -> Result<()> {
        let t = u64::from(self.block[0]) * u64::from(self.block[1]) * u64::from(self.block[2]);
        if t > 1024 || self.block[0] > 1024 || self.block[1] > 1024 || self.block[2] > 64 {
            return Err(Error::invalid(
                "--block",
                format!(
                    "{}x{}x{} is outside CUDA's limits (at most 1024 threads, x and y up to 1024, z up to 64)",
                    self.block[0], self.block[1], self.block[2]
                ),
            ));
        }
        if self.grid[0] > i32::MAX as u32 || self.grid[1] > 65535 || self.grid[2] > 65535 {
            return Err(Error::invalid(
                "--grid",
                format!(
                    "{}x{}x{} is outside CUDA's limits (x up to 2^31-1, y and z up to 65535)",
                    self.grid[0], self.grid[1], self.grid[2]
                ),
            ));
        }
        let p = &f.performance;
        if !p.reqntid.is_empty() {
            let want: Vec<u64> = (0..3)
                .map(|k| p.reqntid.get(k).copied().unwrap_or(1))
                .collect();
            let got: Vec<u64> = self.block.iter().map(|&b| u64::from(b)).collect();
            if want != got {
                return Err(Error::invalid(
                    "--block",
                    format!(
                        "kernel `{}` requires a block of {:?} threads (.reqntid)",
                        f.name, want
                    ),
                ));
            }
        }
        if !p.maxntid.is_empty() {
            let max: u64 = p.maxntid.iter().product();
            if t > max {
                return Err(Error::invalid(
                    "--block",
                    format!(
                        "kernel `{}` allows at most {max} threads per block (.maxntid), got {t}",
                        f.name
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Which blocks to emulate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sampling {
    /// First, middle and last block of each grid dimension.
    Classes,
    /// Every block of the grid.
    All,
    /// Only the block of `Classes` that stands for the most blocks (ties: the lowest linear
    /// index), the one `model::trace_sim` simulates: what a sweep needs for the trace model's
    /// time, at a fraction of the cost.
    Representative,
}

/// Emulation options.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub step_budget: u64,
    pub sampling: Sampling,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            step_budget: DEFAULT_STEP_BUDGET,
            sampling: Sampling::Classes,
        }
    }
}

/// A kernel parameter's value as used.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParamValue {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: String,
    /// `argument`, `pointer` (synthetic base) or `unknown`.
    pub kind: String,
    /// The value or base address, as text.
    pub value: String,
}

/// A sampled block and the blocks it stands for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampledBlock {
    pub block: [u32; 3],
    pub linear: u64,
    /// How many blocks of the grid share this block's position class.
    pub represents: u64,
    /// `first`, `interior` or `last` per dimension, joined by `/`.
    pub class: String,
}

/// The result of emulating a launch.
#[derive(Debug, Clone)]
pub struct Emulation {
    pub entry: String,
    pub launch: LaunchDims,
    pub warps: Vec<WarpTrace>,
    pub sampled_blocks: Vec<SampledBlock>,
    pub params: Vec<ParamValue>,
    /// Static shared memory of the kernel, bytes.
    pub shared_bytes_static: u64,
    /// Notes for the whole launch (deduplicated from the warps).
    pub notes: Vec<String>,
    /// Registers each instruction writes and reads (by function instruction index), for
    /// dependency analyses of the traces (ILP, MLP).
    pub regs: Vec<InstrRegs>,
}

/// Register numbers an instruction writes and reads (`NO_REG` for an empty slot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstrRegs {
    pub dst: [u16; 4],
    pub src: [u16; 6],
}

/// An empty slot of [`InstrRegs`].
pub const NO_REG: u16 = u16::MAX;

fn instr_regs(d: &DInst) -> InstrRegs {
    let mut r = InstrRegs {
        dst: [NO_REG; 4],
        src: [NO_REG; 6],
    };
    for (k, x) in d.dst.iter().enumerate() {
        if let Some(x) = x {
            r.dst[k] = *x;
        }
    }
    let mut k = 0;
    let mut push = |s: Src| {
        if let Src::Reg(x) = s {
            if k < 6 {
                r.src[k] = x;
                k += 1;
            }
        }
    };
    for s in d.srcs.iter().take(d.nsrc as usize) {
        push(*s);
    }
    if let Some(m) = d.mem {
        push(m.base);
    }
    if let Some((g, _)) = d.guard {
        push(Src::Reg(g));
    }
    r
}

impl Emulation {
    /// The traces of one sampled block.
    pub fn block_warps(&self, linear: u64) -> impl Iterator<Item = &WarpTrace> {
        self.warps.iter().filter(move |w| w.block_linear == linear)
    }
}

/// Finds the kernel `entry` in a module (an error lists the kernels).
pub fn find_entry<'m>(m: &'m Module, entry: &str) -> Result<&'m Function> {
    m.entries().find(|f| f.name == entry).ok_or_else(|| {
        let names: Vec<&str> = m.entries().map(|f| f.name.as_str()).collect();
        Error::invalid(
            "--entry",
            format!(
                "no kernel `{entry}` in the PTX file; kernels: {}",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ),
        )
    })
}

/// Parses a numeric argument: decimal or 0x hex integer, or a float for float parameters.
fn parse_arg_value(name: &str, ty: &str, text: &str) -> Result<u64> {
    let t = text.trim();
    let bad = || {
        Error::invalid(
            "--arg",
            format!("`{name}={text}`: `{t}` is not a number for a .{ty} parameter"),
        )
    };
    if ty.starts_with('f') {
        let v: f64 = t.parse().map_err(|_| bad())?;
        return Ok(if ty == "f32" {
            u64::from((v as f32).to_bits())
        } else {
            v.to_bits()
        });
    }
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, t),
    };
    let mag: u64 = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).map_err(|_| bad())?
    } else {
        body.parse().map_err(|_| bad())?
    };
    let v = if neg { mag.wrapping_neg() } else { mag };
    let bits = decode::Ty::parse(ty).map_or(64, |t| t.bits);
    Ok(if bits >= 64 {
        v
    } else {
        v & ((1u64 << bits) - 1)
    })
}

/// Resolves `--arg NAME=VALUE` against a kernel's parameters. A name may be the PTX name
/// (`k_param_3`), the name without the kernel prefix (`param_3`), or the position (`3`).
pub fn resolve_args(
    f: &Function,
    args: &[String],
    address_bits: u32,
) -> Result<(Vec<Option<u64>>, Vec<ParamValue>)> {
    let mut given: Vec<Option<&str>> = vec![None; f.params.len()];
    for a in args {
        let (name, value) = a
            .split_once('=')
            .ok_or_else(|| Error::invalid("--arg", format!("expected NAME=VALUE, got `{a}`")))?;
        let name = name.trim();
        let prefix = format!("{}_", f.name);
        let idx = f
            .params
            .iter()
            .position(|p| p.name == name || p.name.strip_prefix(&prefix) == Some(name))
            .or_else(|| name.parse::<usize>().ok().filter(|&k| k < f.params.len()));
        let Some(k) = idx else {
            let names: Vec<&str> = f.params.iter().map(|p| p.name.as_str()).collect();
            return Err(Error::invalid(
                "--arg",
                format!(
                    "`{name}` names no parameter of kernel `{}`; parameters (by name or position 0..{}): {}",
                    f.name,
                    f.params.len(),
                    names.join(", ")
                ),
            ));
        };
        given[k] = Some(value);
    }
    let mut values = Vec::new();
    let mut report = Vec::new();
    for (k, p) in f.params.iter().enumerate() {
        let is_ptr_type = p.ptr_space.is_some()
            || (address_bits == 64 && matches!(p.ty.as_str(), "u64" | "b64" | "s64"))
            || (address_bits == 32 && p.ptr_space.is_some());
        let (v, kind, text) = match (given[k], p.array) {
            (Some(text), None) => {
                let v = parse_arg_value(&p.name, &p.ty, text)?;
                (Some(v), "argument", text.trim().to_string())
            }
            (Some(_), Some(_)) => {
                return Err(Error::invalid(
                    "--arg",
                    format!("parameter `{}` is a by-value aggregate (.b8 array); it cannot be given a number", p.name),
                ))
            }
            (None, Some(n)) => (None, "unknown", format!("{n}-byte aggregate, contents unknown")),
            (None, None) if is_ptr_type => {
                let base = (k as u64 + 1) << GLOBAL_STRIDE_SHIFT;
                (Some(base), "pointer", format!("{base:#x}"))
            }
            (None, None) => {
                return Err(Error::missing(
                    "--arg",
                    format!(
                        "kernel parameter `{}` (.{}, position {k}) has no value; give --arg {}=VALUE or --arg {k}=VALUE",
                        p.name, p.ty, p.name
                    ),
                ))
            }
        };
        values.push(v);
        report.push(ParamValue {
            name: p.name.clone(),
            ty: p.ty.clone(),
            kind: kind.into(),
            value: text,
        });
    }
    Ok((values, report))
}

fn positions(n: u32) -> Vec<(u32, u64, &'static str)> {
    // (index, blocks represented, class name)
    match n {
        1 => vec![(0, 1, "first")],
        2 => vec![(0, 1, "first"), (1, 1, "last")],
        _ => vec![
            (0, 1, "first"),
            (n / 2, u64::from(n - 2), "interior"),
            (n - 1, 1, "last"),
        ],
    }
}

/// Emulates a kernel of a parsed module for a launch and arguments.
pub fn emulate(
    m: &Module,
    entry: &str,
    launch: LaunchDims,
    args: &[String],
    opts: Options,
) -> Result<Emulation> {
    let f = find_entry(m, entry)?;
    launch.validate(f)?;
    let address_bits = m.address_size.unwrap_or(64);
    let (params, param_report) = resolve_args(f, args, address_bits)?;
    let mut diags = Diagnostics::default();
    let cfg = Cfg::build(f, &mut diags);
    let loops = find_loops(&cfg);
    let dec = decode(m, f, &cfg);
    let mut notes = Vec::new();
    for (op, line) in dec.opaque.iter().take(8) {
        notes.push(format!(
            "line {line}: `{op}` is not emulated; it issues and its result is unknown"
        ));
    }
    let mut back_edges = HashSet::new();
    for l in &loops {
        for &e in &l.back_edges {
            back_edges.insert(e);
        }
    }
    let mut em = Emulator::new(&cfg, &dec, params, launch, back_edges, opts.step_budget);
    let mut blocks: Vec<SampledBlock> = Vec::new();
    match opts.sampling {
        Sampling::Classes | Sampling::Representative => {
            for (z, wz, cz) in positions(launch.grid[2]) {
                for (y, wy, cy) in positions(launch.grid[1]) {
                    for (x, wx, cx) in positions(launch.grid[0]) {
                        let mut class = vec![cx];
                        if launch.grid[1] > 1 {
                            class.push(cy);
                        }
                        if launch.grid[2] > 1 {
                            class.push(cz);
                        }
                        blocks.push(SampledBlock {
                            block: [x, y, z],
                            linear: linear(&launch, [x, y, z]),
                            represents: wx * wy * wz,
                            class: class.join("/"),
                        });
                    }
                }
            }
        }
        Sampling::All => {
            for z in 0..launch.grid[2] {
                for y in 0..launch.grid[1] {
                    for x in 0..launch.grid[0] {
                        blocks.push(SampledBlock {
                            block: [x, y, z],
                            linear: linear(&launch, [x, y, z]),
                            represents: 1,
                            class: "all".into(),
                        });
                    }
                }
            }
        }
    }
    if opts.sampling == Sampling::Representative {
        if let Some(rep) = representative(&blocks).cloned() {
            blocks = vec![rep];
        }
    }
    blocks.sort_by_key(|b| b.linear);
    let mut warps = Vec::new();
    let mut seen_notes = BTreeSet::new();
    for b in &blocks {
        for w in 0..launch.warps_per_block() {
            let t = em.run_warp(b.block, w)?;
            for n in &t.notes {
                if seen_notes.insert(n.clone()) {
                    notes.push(n.clone());
                }
            }
            warps.push(t);
        }
    }
    let sampled = blocks.len();
    notes.push(format!(
        "emulated {} warps of {sampled} sampled blocks out of {} blocks ({} warps per block)",
        warps.len(),
        launch.blocks(),
        launch.warps_per_block()
    ));
    Ok(Emulation {
        entry: entry.to_string(),
        launch,
        warps,
        sampled_blocks: blocks,
        params: param_report,
        shared_bytes_static: dec.shared_bytes,
        notes,
        regs: dec.insts.iter().map(instr_regs).collect(),
    })
}

/// The sampled block that stands for the most blocks (ties: the lowest linear index).
pub fn representative(blocks: &[SampledBlock]) -> Option<&SampledBlock> {
    blocks
        .iter()
        .max_by_key(|b| (b.represents, std::cmp::Reverse(b.linear)))
}

fn linear(l: &LaunchDims, b: [u32; 3]) -> u64 {
    u64::from(b[0])
        + u64::from(l.grid[0]) * (u64::from(b[1]) + u64::from(l.grid[1]) * u64::from(b[2]))
}

/// Values of one register across the lanes.
#[derive(Debug, Clone, Copy)]
struct Lanes {
    v: [u64; WARP],
    known: u32,
}

/// A source as the lanes see it, without copying a register.
#[derive(Debug, Clone, Copy)]
enum View<'a> {
    Lanes(&'a Lanes),
    Uniform(u64),
    Unknown,
}

impl View<'_> {
    #[inline]
    fn known(&self) -> u32 {
        match self {
            View::Lanes(l) => l.known,
            View::Uniform(_) => u32::MAX,
            View::Unknown => 0,
        }
    }
    #[inline]
    fn get(&self, lane: usize) -> u64 {
        match self {
            View::Lanes(l) => l.v[lane],
            View::Uniform(v) => *v,
            View::Unknown => 0,
        }
    }
}

const UNKNOWN: Lanes = Lanes {
    v: [0; WARP],
    known: 0,
};

#[derive(Debug, Clone, Copy)]
struct Entry {
    pc: usize,
    mask: u32,
    reconv: usize,
}

struct Emulator<'a, 'f> {
    cfg: &'a Cfg<'f>,
    dec: &'a Decoded,
    params: Vec<Option<u64>>,
    launch: LaunchDims,
    back_edges: HashSet<(usize, usize)>,
    budget: u64,
    regs: Vec<Lanes>,
    addr_scratch: Vec<u64>,
    sector_scratch: Vec<u64>,
    /// `%tid.x`, `%tid.y`, `%tid.z` and `%laneid` of the current warp.
    special: [Lanes; 4],
}

fn mask_bits(v: u64, bits: u8) -> u64 {
    if bits >= 64 {
        v
    } else {
        v & ((1u64 << bits) - 1)
    }
}

fn sext(v: u64, bits: u8) -> i64 {
    if bits >= 64 || bits == 0 {
        v as i64
    } else {
        let s = 64 - u32::from(bits);
        ((v << s) as i64) >> s
    }
}

fn fget(v: u64, bits: u8) -> Option<f64> {
    match bits {
        32 => Some(f64::from(f32::from_bits(v as u32))),
        64 => Some(f64::from_bits(v)),
        _ => None,
    }
}

fn fput(x: f64, bits: u8) -> Option<u64> {
    match bits {
        32 => Some(u64::from((x as f32).to_bits())),
        64 => Some(x.to_bits()),
        _ => None,
    }
}

/// One lane's arithmetic; None = unknown (division by zero, unsupported type).
fn alu(d: &DInst, a: u64, b: u64, c: u64, e: u64) -> Option<u64> {
    let ty = d.ty;
    let bits = ty.bits;
    if ty.float
        && !matches!(
            d.op,
            OpK::Setp | OpK::Selp | OpK::Mov | OpK::Cvt | OpK::Cvta
        )
    {
        let (x, y, z) = (
            fget(a, bits)?,
            fget(b, bits).unwrap_or(0.0),
            fget(c, bits).unwrap_or(0.0),
        );
        let r = match d.op {
            OpK::Add => x + y,
            OpK::Sub => x - y,
            OpK::Mul => x * y,
            OpK::Mad | OpK::Fma => x.mul_add(y, z),
            OpK::Div => x / y,
            OpK::Neg => -x,
            OpK::Abs => x.abs(),
            OpK::Min => x.min(y),
            OpK::Max => x.max(y),
            _ => return None,
        };
        return fput(r, bits);
    }
    let m = |v: u64| mask_bits(v, bits);
    let s = |v: u64| sext(v, bits);
    let wide_bits = (bits.saturating_mul(2)).min(64);
    let mul = |a: u64, b: u64| -> u64 {
        match d.mul {
            MulMode::Lo => m(a.wrapping_mul(b)),
            MulMode::Wide => {
                if ty.signed {
                    mask_bits((s(a) as i128 * s(b) as i128) as u64, wide_bits)
                } else {
                    mask_bits((m(a) as u128 * m(b) as u128) as u64, wide_bits)
                }
            }
            MulMode::Hi => {
                if ty.signed {
                    m(((s(a) as i128 * s(b) as i128) >> bits) as u64)
                } else {
                    m(((m(a) as u128 * m(b) as u128) >> bits) as u64)
                }
            }
        }
    };
    Some(match d.op {
        OpK::Add => m(a.wrapping_add(b)),
        OpK::Sub => m(a.wrapping_sub(b)),
        OpK::Mul => mul(a, b),
        OpK::Mad => {
            let p = mul(a, b);
            if d.mul == MulMode::Wide {
                mask_bits(p.wrapping_add(c), wide_bits)
            } else {
                m(p.wrapping_add(c))
            }
        }
        OpK::Div => {
            if m(b) == 0 {
                return None;
            }
            if ty.signed {
                m(s(a).wrapping_div(s(b)) as u64)
            } else {
                m(a) / m(b)
            }
        }
        OpK::Rem => {
            if m(b) == 0 {
                return None;
            }
            if ty.signed {
                m(s(a).wrapping_rem(s(b)) as u64)
            } else {
                m(a) % m(b)
            }
        }
        OpK::And => m(a & b),
        OpK::Or => m(a | b),
        OpK::Xor => m(a ^ b),
        OpK::Not => m(!a),
        OpK::Cnot => u64::from(m(a) == 0),
        OpK::Shl => {
            let n = b as u32;
            if n >= u32::from(bits) {
                0
            } else {
                m(a << n)
            }
        }
        OpK::Shr => {
            let n = (b as u32).min(u32::from(bits));
            if ty.signed {
                m((s(a) >> n.min(63)) as u64)
            } else if n >= u32::from(bits) {
                0
            } else {
                m(a) >> n
            }
        }
        OpK::Neg => m(a.wrapping_neg()),
        OpK::Abs => m(s(a).unsigned_abs()),
        OpK::Min => {
            if ty.signed {
                m(s(a).min(s(b)) as u64)
            } else {
                m(a).min(m(b))
            }
        }
        OpK::Max => {
            if ty.signed {
                m(s(a).max(s(b)) as u64)
            } else {
                m(a).max(m(b))
            }
        }
        OpK::Popc => u64::from(m(a).count_ones()),
        OpK::Clz => u64::from(m(a).leading_zeros() - (64 - u32::from(bits))),
        OpK::Bfe => {
            let pos = (b & 0xff) as u32;
            let len = (c & 0xff) as u32;
            if len == 0 {
                return Some(0);
            }
            let raw = if pos >= 64 { 0 } else { m(a) >> pos };
            let field = if len >= 64 {
                raw
            } else {
                raw & ((1u64 << len) - 1)
            };
            if ty.signed && len < u32::from(bits) {
                m(sext(field, len as u8) as u64)
            } else {
                m(field)
            }
        }
        OpK::Bfi => {
            let pos = (c & 0xff) as u32;
            let len = (e & 0xff) as u32;
            if len == 0 || pos >= u32::from(bits) {
                return Some(m(b));
            }
            let fm = if len >= 64 {
                u64::MAX
            } else {
                (1u64 << len) - 1
            };
            let fm = fm << pos;
            m((b & !fm) | ((a << pos) & fm))
        }
        OpK::Selp => {
            if c != 0 {
                a
            } else {
                b
            }
        }
        OpK::Mov => a,
        OpK::Cvta => m(a.wrapping_add(d.cvta_shift as u64)),
        OpK::Cvt => {
            let st = d.ty_src;
            match (st.float, ty.float) {
                (false, false) => {
                    let v = if st.signed {
                        sext(a, st.bits) as u64
                    } else {
                        mask_bits(a, st.bits)
                    };
                    m(v)
                }
                (true, false) => {
                    let x = fget(a, st.bits)?;
                    if !x.is_finite() {
                        return None;
                    }
                    let x = if d.round_nearest {
                        x.round()
                    } else {
                        x.trunc()
                    };
                    if ty.signed {
                        m(x as i64 as u64)
                    } else {
                        m(x as u64)
                    }
                }
                (false, true) => {
                    let x = if st.signed {
                        sext(a, st.bits) as f64
                    } else {
                        mask_bits(a, st.bits) as f64
                    };
                    fput(x, bits)?
                }
                (true, true) => fput(fget(a, st.bits)?, bits)?,
            }
        }
        OpK::Setp => {
            let r = if ty.float {
                let (x, y) = (fget(a, bits)?, fget(b, bits)?);
                match d.cmp {
                    Cmp::Eq => x == y,
                    Cmp::Ne => x != y,
                    Cmp::Lt => x < y,
                    Cmp::Le => x <= y,
                    Cmp::Gt => x > y,
                    Cmp::Ge => x >= y,
                    Cmp::Num => !x.is_nan() && !y.is_nan(),
                    Cmp::Nan => x.is_nan() || y.is_nan(),
                }
            } else if d.unsigned_cmp {
                let (x, y) = (m(a), m(b));
                match d.cmp {
                    Cmp::Eq => x == y,
                    Cmp::Ne => x != y,
                    Cmp::Lt => x < y,
                    Cmp::Le => x <= y,
                    Cmp::Gt => x > y,
                    Cmp::Ge => x >= y,
                    _ => return None,
                }
            } else {
                let (x, y) = (s(a), s(b));
                match d.cmp {
                    Cmp::Eq => x == y,
                    Cmp::Ne => x != y,
                    Cmp::Lt => x < y,
                    Cmp::Le => x <= y,
                    Cmp::Gt => x > y,
                    Cmp::Ge => x >= y,
                    _ => return None,
                }
            };
            let c = c != 0;
            u64::from(match d.combine {
                1 => r && c,
                2 => r || c,
                3 => r ^ c,
                _ => r,
            })
        }
        _ => return None,
    })
}

/// The common integer operations with the operation chosen once for all lanes (the general
/// path decides per lane). Returns false when the operation is not one of them; when it is, every
/// lane of `known` gets its value (these operations cannot fail).
fn fast_lanes(d: &DInst, s: &[View; 4], known: u32, out: &mut [u64; WARP]) -> bool {
    let ty = d.ty;
    if ty.float || ty.bits < 8 {
        return false;
    }
    let bits = ty.bits;
    let wide = (bits * 2).min(64);
    macro_rules! each {
        ($f:expr) => {{
            let f = $f;
            let mut m = known;
            while m != 0 {
                let l = m.trailing_zeros() as usize;
                m &= m - 1;
                out[l] = f(s[0].get(l), s[1].get(l), s[2].get(l));
            }
            true
        }};
    }
    match (d.op, d.mul) {
        (OpK::Add, _) => each!(|a: u64, b: u64, _| mask_bits(a.wrapping_add(b), bits)),
        (OpK::Sub, _) => each!(|a: u64, b: u64, _| mask_bits(a.wrapping_sub(b), bits)),
        (OpK::And, _) => each!(|a: u64, b: u64, _| mask_bits(a & b, bits)),
        (OpK::Or, _) => each!(|a: u64, b: u64, _| mask_bits(a | b, bits)),
        (OpK::Xor, _) => each!(|a: u64, b: u64, _| mask_bits(a ^ b, bits)),
        (OpK::Mov, _) => each!(|a: u64, _, _| a),
        (OpK::Cvta, _) => {
            each!(|a: u64, _, _| mask_bits(a.wrapping_add(d.cvta_shift as u64), bits))
        }
        (OpK::Mul, MulMode::Lo) => each!(|a: u64, b: u64, _| mask_bits(a.wrapping_mul(b), bits)),
        (OpK::Mad, MulMode::Lo) => {
            each!(|a: u64, b: u64, c: u64| mask_bits(a.wrapping_mul(b).wrapping_add(c), bits))
        }
        (OpK::Mul, MulMode::Wide) if bits <= 32 => {
            if ty.signed {
                each!(|a: u64, b: u64, _| mask_bits(
                    sext(a, bits).wrapping_mul(sext(b, bits)) as u64,
                    wide
                ))
            } else {
                each!(|a: u64, b: u64, _| mask_bits(
                    mask_bits(a, bits).wrapping_mul(mask_bits(b, bits)),
                    wide
                ))
            }
        }
        (OpK::Shl, _) => each!(|a: u64, b: u64, _| if (b as u32) >= u32::from(bits) {
            0
        } else {
            mask_bits(a << (b as u32), bits)
        }),
        _ => false,
    }
}

impl<'a, 'f> Emulator<'a, 'f> {
    fn new(
        cfg: &'a Cfg<'f>,
        dec: &'a Decoded,
        params: Vec<Option<u64>>,
        launch: LaunchDims,
        back_edges: HashSet<(usize, usize)>,
        budget: u64,
    ) -> Self {
        Self {
            cfg,
            dec,
            params,
            launch,
            back_edges,
            budget,
            regs: vec![UNKNOWN; dec.reg_count],
            addr_scratch: Vec::with_capacity(64),
            sector_scratch: Vec::with_capacity(128),
            special: [UNKNOWN; 4],
        }
    }

    /// Sets the per-lane special registers for a warp.
    fn set_special(&mut self, warp: u32) {
        let b = self.launch.block;
        let (bx, by) = (u64::from(b[0]), u64::from(b[1]));
        for k in 0..WARP {
            let t = u64::from(warp) * WARP as u64 + k as u64;
            self.special[0].v[k] = t % bx;
            self.special[1].v[k] = (t / bx) % by;
            self.special[2].v[k] = t / (bx * by);
            self.special[3].v[k] = k as u64;
        }
        for l in self.special.iter_mut() {
            l.known = u32::MAX;
        }
    }

    /// A source for every lane: values and the known mask.
    fn view(&self, s: Src, ty: Ty, block: [u32; 3], warp: u32) -> View<'_> {
        match s {
            Src::Reg(r) => View::Lanes(&self.regs[r as usize]),
            Src::Imm(v) => View::Uniform(v),
            Src::FImm(bits) => {
                let x = f64::from_bits(bits);
                View::Uniform(if ty.float {
                    fput(x, ty.bits).unwrap_or(bits)
                } else {
                    x as i64 as u64
                })
            }
            Src::Addr(a) => View::Uniform(a),
            Src::Param(p) => match self.params.get(p as usize).copied().flatten() {
                Some(v) => View::Uniform(v),
                None => View::Unknown,
            },
            Src::Unknown => View::Unknown,
            Src::Special(sp) => {
                let b = self.launch.block;
                match sp {
                    Special::Ntid(d) => View::Uniform(u64::from(b[d as usize])),
                    Special::Ctaid(d) => View::Uniform(u64::from(block[d as usize])),
                    Special::Nctaid(d) => View::Uniform(u64::from(self.launch.grid[d as usize])),
                    Special::Warpid => View::Uniform(u64::from(warp)),
                    Special::Nwarpid => View::Uniform(u64::from(self.launch.warps_per_block())),
                    Special::Unknowable => View::Unknown,
                    Special::Laneid => View::Lanes(&self.special[3]),
                    Special::Tid(d) => View::Lanes(&self.special[(d as usize).min(2)]),
                }
            }
        }
    }

    fn write(&mut self, r: Option<u16>, exec: u32, vals: &[u64; WARP], known: u32) {
        if let Some(r) = r {
            let reg = &mut self.regs[r as usize];
            let mut m = exec;
            while m != 0 {
                let l = m.trailing_zeros() as usize;
                m &= m - 1;
                reg.v[l] = vals[l];
            }
            reg.known = (reg.known & !exec) | (known & exec);
        }
    }

    fn set_unknown(&mut self, dst: &[Option<u16>; 4], exec: u32) {
        for r in dst.iter().flatten() {
            self.regs[*r as usize].known &= !exec;
        }
    }

    /// Runs one warp of a block to completion.
    fn run_warp(&mut self, block: [u32; 3], warp: u32) -> Result<WarpTrace> {
        let tpb = self.launch.threads_per_block();
        let first = warp * WARP as u32;
        let threads = (tpb - first).min(WARP as u32);
        let full: u32 = if threads >= 32 {
            u32::MAX
        } else {
            (1u32 << threads) - 1
        };
        for r in self.regs.iter_mut() {
            r.known = 0;
        }
        self.set_special(warp);
        let mut trace = WarpTrace {
            block,
            block_linear: linear(&self.launch, block),
            warp,
            threads,
            ..Default::default()
        };
        let nblocks = self.cfg.blocks.len();
        let mut stack = vec![Entry {
            pc: 0,
            mask: full,
            reconv: nblocks,
        }];
        let mut noted: HashSet<u32> = HashSet::new();
        while let Some(top) = stack.last().copied() {
            if top.mask == 0 || top.pc == top.reconv || top.pc >= nblocks {
                stack.pop();
                continue;
            }
            let b = top.pc;
            let blk = &self.cfg.blocks[b];
            let (start, end) = (blk.start, blk.end);
            if trace.ops.len() as u64 + (end - start) as u64 > self.budget {
                let line = self.dec.insts.get(start).map_or(blk.line, |d| d.line);
                return Err(Error::invalid(
                    "--ptx",
                    format!(
                        "warp {warp} of block ({}, {}, {}) issued more than {} instructions (near PTX line {line}): a loop that does not end for these arguments? check the --arg values that bound it",
                        block[0], block[1], block[2], self.budget
                    ),
                ));
            }
            let mut active = top.mask;
            let mut next = b + 1;
            let mut diverged = false;
            for k in start..end {
                let d = &self.dec.insts[k];
                let mut exec = active;
                let mut guard_unknown = 0u32;
                if let Some((g, neg)) = d.guard {
                    let p = &self.regs[g as usize];
                    let mut t = 0u32;
                    let mut m = active;
                    while m != 0 {
                        let l = m.trailing_zeros() as usize;
                        m &= m - 1;
                        if (p.v[l] != 0) != neg {
                            t |= 1 << l;
                        }
                    }
                    guard_unknown = active & !p.known;
                    exec = (t & p.known) | guard_unknown;
                }
                let mut op = TraceOp {
                    instr: k as u32,
                    latency: d.latency,
                    access: TraceOp::NO_ACCESS,
                };
                match d.op {
                    OpK::Bra => {
                        trace.ops.push(op);
                        let Some(target) = d.target else {
                            return Err(Error::invalid(
                                "--ptx",
                                format!(
                                    "line {}: branch to a label the emulator cannot find",
                                    d.line
                                ),
                            ));
                        };
                        let back = self.back_edges.contains(&(b, target));
                        let known_taken = exec & !guard_unknown;
                        let (taken, fall) = if guard_unknown == 0 {
                            (exec, active & !exec)
                        } else if back {
                            if noted.insert(d.line) {
                                trace.notes.push(format!(
                                    "line {}: loop branch depends on data for {} lanes; those lanes leave the loop here (conservative rule cannot bound it)",
                                    d.line,
                                    guard_unknown.count_ones()
                                ));
                            }
                            (known_taken, active & !known_taken)
                        } else {
                            if noted.insert(d.line) {
                                trace.notes.push(format!(
                                    "line {}: data-dependent branch ({} lanes); both paths assumed to run (wang2019's conservative rule)",
                                    d.line,
                                    guard_unknown.count_ones()
                                ));
                            }
                            (exec, (active & !exec) | guard_unknown)
                        };
                        if d.guard.is_none() || fall == 0 {
                            next = target;
                        } else if taken == 0 {
                            next = b + 1;
                        } else {
                            let r = self.cfg.ipdom[b]
                                .filter(|&p| p <= nblocks)
                                .unwrap_or(nblocks);
                            if let Some(t) = stack.last_mut() {
                                t.pc = r;
                            }
                            stack.push(Entry {
                                pc: b + 1,
                                mask: fall,
                                reconv: r,
                            });
                            stack.push(Entry {
                                pc: target,
                                mask: taken,
                                reconv: r,
                            });
                            diverged = true;
                        }
                    }
                    OpK::Ret => {
                        trace.ops.push(op);
                        let leaving = exec & !guard_unknown;
                        for e in stack.iter_mut() {
                            e.mask &= !leaving;
                        }
                        active &= !leaving;
                        if d.guard.is_none() || active == 0 {
                            stack.pop();
                            diverged = true;
                        }
                    }
                    OpK::BrxIdx => {
                        return Err(Error::invalid(
                            "--ptx",
                            format!("line {}: `brx.idx` jump tables cannot be emulated", d.line),
                        ));
                    }
                    OpK::Call => {
                        trace.ops.push(op);
                        if noted.insert(d.line) {
                            trace.notes.push(format!("line {}: call not followed; counted as one instruction, results unknown", d.line));
                        }
                    }
                    OpK::Load | OpK::Store => {
                        let Some(mem) = d.mem else {
                            trace.ops.push(op);
                            continue;
                        };
                        if mem.space == Space::Param {
                            trace.ops.push(op);
                            if d.op == OpK::Load {
                                let v = match mem.base {
                                    Src::Param(p) if mem.offset == 0 => {
                                        self.params.get(p as usize).copied().flatten()
                                    }
                                    _ => None,
                                };
                                match v {
                                    Some(v) => {
                                        let vals = [mask_bits(v, d.ty.bits); WARP];
                                        self.write(d.dst[0], exec, &vals, u32::MAX);
                                    }
                                    None => self.set_unknown(&d.dst, exec),
                                }
                            }
                            continue;
                        }
                        // Addresses of executing lanes.
                        let mut unknown_lanes = 0u32;
                        let mut addrs = std::mem::take(&mut self.addr_scratch);
                        {
                            let base = self.view(
                                mem.base,
                                Ty {
                                    bits: 64,
                                    signed: false,
                                    float: false,
                                },
                                block,
                                warp,
                            );
                            let bk = base.known();
                            addrs.clear();
                            let mut m = exec;
                            while m != 0 {
                                let l = m.trailing_zeros() as usize;
                                m &= m - 1;
                                if bk & (1 << l) != 0 {
                                    addrs.push(base.get(l).wrapping_add(mem.offset as u64));
                                } else {
                                    unknown_lanes += 1;
                                }
                            }
                        }
                        self.addr_scratch = addrs;
                        let space = match mem.space {
                            Space::Shared => MemSpace::Shared,
                            Space::Local => MemSpace::Local,
                            Space::Const => MemSpace::Const,
                            Space::Generic => match self.addr_scratch.first() {
                                Some(&a)
                                    if (SHARED_WINDOW..SHARED_WINDOW + (1 << 32)).contains(&a) =>
                                {
                                    MemSpace::Shared
                                }
                                Some(&a)
                                    if (LOCAL_WINDOW..LOCAL_WINDOW + (1 << 40)).contains(&a) =>
                                {
                                    MemSpace::Local
                                }
                                _ => MemSpace::Global,
                            },
                            _ => MemSpace::Global,
                        };
                        if space == MemSpace::Shared && mem.space == Space::Generic {
                            for a in self.addr_scratch.iter_mut() {
                                *a -= SHARED_WINDOW;
                            }
                        }
                        if space == MemSpace::Local {
                            // Local memory is interleaved per lane by the hardware (each lane's
                            // word at the same offset sits side by side).
                            let mut m = exec;
                            let mut idx = 0;
                            while m != 0 {
                                let l = m.trailing_zeros() as u64;
                                m &= m - 1;
                                if let Some(a) = self.addr_scratch.get_mut(idx) {
                                    *a = (*a & !3).wrapping_mul(WARP as u64) + l * 4;
                                }
                                idx += 1;
                            }
                        }
                        if unknown_lanes > 0 && noted.insert(d.line) {
                            trace.notes.push(format!(
                                "line {}: address unknown for {unknown_lanes} lanes (it depends on loaded data); each counted as its own sector",
                                d.line
                            ));
                        }
                        let lanes = exec.count_ones();
                        let mut acc = MemAccess {
                            instr: k as u32,
                            space,
                            store: d.op == OpK::Store,
                            lanes: lanes as u8,
                            bytes_per_lane: mem.bytes,
                            addresses_known: unknown_lanes == 0,
                            sectors: 0,
                            lines: 0,
                            bank_ways: 0,
                            sector_start: trace.sector_ids.len() as u32,
                            sector_end: trace.sector_ids.len() as u32,
                        };
                        if lanes > 0 {
                            if space == MemSpace::Shared {
                                acc.bank_ways = banks::conflict_ways(
                                    &self.addr_scratch,
                                    u64::from(mem.bytes),
                                    &mut self.sector_scratch,
                                )
                                .max(1)
                                    + unknown_lanes.min(31);
                                acc.bank_ways = acc.bank_ways.min(32);
                                acc.sectors = acc.bank_ways;
                            } else {
                                acc.lines = coalescing::sectors_of(
                                    &self.addr_scratch,
                                    u64::from(mem.bytes),
                                    &mut self.sector_scratch,
                                ) + unknown_lanes;
                                acc.sectors = self.sector_scratch.len() as u32 + unknown_lanes;
                                trace.sector_ids.extend_from_slice(&self.sector_scratch);
                                acc.sector_end = trace.sector_ids.len() as u32;
                            }
                            op.access = trace.accesses.len() as u32;
                            trace.accesses.push(acc);
                        }
                        op.latency = match (space, d.op == OpK::Store) {
                            (MemSpace::Shared, false) => {
                                crate::workload::trace::LatencyClass::SharedLoad
                            }
                            (MemSpace::Shared, true) => {
                                crate::workload::trace::LatencyClass::SharedStore
                            }
                            (MemSpace::Local, false) => {
                                crate::workload::trace::LatencyClass::LocalLoad
                            }
                            (MemSpace::Local, true) => {
                                crate::workload::trace::LatencyClass::LocalStore
                            }
                            (MemSpace::Const, _) => crate::workload::trace::LatencyClass::ConstLoad,
                            (MemSpace::Global, false) => {
                                crate::workload::trace::LatencyClass::GlobalLoad
                            }
                            (MemSpace::Global, true) => {
                                crate::workload::trace::LatencyClass::GlobalStore
                            }
                        };
                        trace.ops.push(op);
                        if d.op == OpK::Load {
                            self.set_unknown(&d.dst, exec);
                        }
                    }
                    OpK::Bar | OpK::Opaque => {
                        trace.ops.push(op);
                        self.set_unknown(&d.dst, exec);
                    }
                    _ => {
                        trace.ops.push(op);
                        self.arith(d, exec, guard_unknown, block, warp);
                    }
                }
                if diverged {
                    break;
                }
            }
            if !diverged {
                if let Some(t) = stack.last_mut() {
                    t.pc = next;
                    t.mask = active;
                }
            }
        }
        Ok(trace)
    }

    fn arith(&mut self, d: &DInst, exec: u32, guard_unknown: u32, block: [u32; 3], warp: u32) {
        let n = d.nsrc as usize;
        let src_ty = if d.op == OpK::Cvt { d.ty_src } else { d.ty };
        let mut out = [0u64; WARP];
        let mut ok = 0u32;
        {
            let mut s = [View::Unknown; 4];
            let mut known = exec;
            #[allow(clippy::needless_range_loop)] // `k` also picks the operand type
            for k in 0..n.min(4) {
                // selp/setp's predicate operands are 1-bit values.
                let ty = if k == 2 && matches!(d.op, OpK::Selp | OpK::Setp) {
                    Ty {
                        bits: 1,
                        signed: false,
                        float: false,
                    }
                } else {
                    src_ty
                };
                s[k] = self.view(d.srcs[k], ty, block, warp);
                known &= s[k].known();
            }
            if fast_lanes(d, &s, known, &mut out) {
                ok = known;
            } else {
                let mut m = known;
                while m != 0 {
                    let l = m.trailing_zeros() as usize;
                    m &= m - 1;
                    if let Some(v) = alu(d, s[0].get(l), s[1].get(l), s[2].get(l), s[3].get(l)) {
                        out[l] = v;
                        ok |= 1 << l;
                    }
                }
            }
        }
        // Lanes whose guard was unknown may or may not have written: unknown.
        ok &= !guard_unknown;
        self.write(d.dst[0], exec, &out, ok);
        if d.op == OpK::Setp && d.dst[1].is_some() {
            let mut neg = [0u64; WARP];
            for l in 0..WARP {
                neg[l] = u64::from(out[l] == 0);
            }
            self.write(d.dst[1], exec, &neg, ok);
        } else if d.dst[1].is_some() {
            let extra = [d.dst[1], d.dst[2], d.dst[3], None];
            self.set_unknown(&extra, exec);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::decode::{Cmp, DInst, MulMode, OpK, Src, Ty};
    use super::*;
    use crate::ptx::classify::Class;
    use crate::workload::trace::LatencyClass;

    fn inst(op: OpK, mul: MulMode, bits: u8, signed: bool) -> DInst {
        DInst {
            op,
            ty: Ty {
                bits,
                signed,
                float: false,
            },
            ty_src: Ty {
                bits,
                signed,
                float: false,
            },
            mul,
            cmp: Cmp::Eq,
            combine: 0,
            unsigned_cmp: !signed,
            round_nearest: false,
            dst: [None; 4],
            srcs: [Src::Unknown; 4],
            nsrc: 3,
            guard: None,
            mem: None,
            target: None,
            class: Class::IntArith,
            latency: LatencyClass::Int,
            line: 0,
            cvta_shift: 0,
            opcode: "add",
        }
    }

    #[test]
    fn fast_path_agrees_with_the_general_path() {
        // Deterministic pseudo-random lane values (64-bit LCG), including sign bits.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x
        };
        let mut s = [UNKNOWN; 4];
        for l in s.iter_mut() {
            for v in l.v.iter_mut() {
                *v = next() >> (next() % 64);
            }
            l.known = u32::MAX;
        }
        let cases = [
            (OpK::Add, MulMode::Lo),
            (OpK::Sub, MulMode::Lo),
            (OpK::And, MulMode::Lo),
            (OpK::Or, MulMode::Lo),
            (OpK::Xor, MulMode::Lo),
            (OpK::Mul, MulMode::Lo),
            (OpK::Mad, MulMode::Lo),
            (OpK::Mul, MulMode::Wide),
            (OpK::Shl, MulMode::Lo),
        ];
        for (op, mul) in cases {
            for bits in [16u8, 32, 64] {
                for signed in [false, true] {
                    let d = inst(op, mul, bits, signed);
                    let mut out = [0u64; WARP];
                    let views = [
                        View::Lanes(&s[0]),
                        View::Lanes(&s[1]),
                        View::Lanes(&s[2]),
                        View::Lanes(&s[3]),
                    ];
                    if !fast_lanes(&d, &views, u32::MAX, &mut out) {
                        assert!(op == OpK::Mul && mul == MulMode::Wide && bits == 64);
                        continue;
                    }
                    for l in 0..WARP {
                        let want = alu(&d, s[0].v[l], s[1].v[l] % 70, s[2].v[l], 0);
                        let got = {
                            let mut t = s;
                            t[1].v[l] %= 70;
                            let mut o = [0u64; WARP];
                            let tv = [
                                View::Lanes(&t[0]),
                                View::Lanes(&t[1]),
                                View::Lanes(&t[2]),
                                View::Lanes(&t[3]),
                            ];
                            fast_lanes(&d, &tv, 1 << l, &mut o);
                            o[l]
                        };
                        // Operands that the fast path reads unmasked are masked by PTX typing
                        // in real code; compare on the result width.
                        let w = if mul == MulMode::Wide {
                            (bits * 2).min(64)
                        } else {
                            bits
                        };
                        assert_eq!(
                            want.map(|v| mask_bits(v, w)),
                            Some(mask_bits(got, w)),
                            "{op:?} {mul:?} {bits} signed={signed} lane {l}"
                        );
                    }
                    let _ = out;
                }
            }
        }
    }
}
