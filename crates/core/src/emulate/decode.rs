//! Decoding a PTX function once into a compact form the warp emulator runs fast: register names
//! become indices, operands become sources, types become widths, branch targets become blocks.
//!
//! Nothing is executed here. Operands the emulator cannot evaluate become `Src::Unknown`, so an
//! instruction we do not understand still issues and yields unknown values.

use std::collections::{HashMap, HashSet};

use crate::workload::trace::{CacheOp, LatencyClass};
use kerneltime_ptx::ast::{
    type_size_bytes, Function, Instruction, Module, Operand, Param, Variable,
};
use kerneltime_ptx::cfg::Cfg;
use kerneltime_ptx::classify::{Class, Space};
use kerneltime_ptx::diag::Diagnostics;

/// A special register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    Laneid,
    Warpid,
    Nwarpid,
    /// Clocks, performance counters, SM ids: not known before running.
    Unknowable,
}

/// An instruction source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Src {
    Reg(u16),
    Imm(u64),
    /// A floating-point immediate as f64 bits (converted to the instruction's width on use).
    FImm(u64),
    Special(Special),
    /// The address of a symbol (shared/global variable, local depot) in its synthetic space.
    Addr(u64),
    /// A kernel parameter's value (by parameter index).
    Param(u16),
    Unknown,
}

/// Operation kinds the emulator computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpK {
    Add,
    Sub,
    Mul,
    Mad,
    Div,
    Rem,
    And,
    Or,
    Xor,
    Not,
    Cnot,
    Shl,
    Shr,
    Neg,
    Abs,
    Min,
    Max,
    Popc,
    Clz,
    Bfe,
    Bfi,
    Selp,
    Setp,
    Mov,
    Cvt,
    Cvta,
    Fma,
    Load,
    Store,
    /// `atom`: read-modify-write that returns the old value.
    Atom,
    /// `red`: read-modify-write without a result.
    Red,
    Bra,
    Ret,
    Bar,
    Call,
    BrxIdx,
    /// A texture or surface fetch (`tex`, `tld4`, `suld`): a load through the texture path whose
    /// value is unknown; `srcs` hold the coordinates.
    Tex,
    /// `mov.b32 d, {a, b}`: the sources packed into one value, the first in the low bits.
    Pack,
    /// `mov.b64 {a, b}, s`: one value split into the destinations, the first from the low bits.
    Unpack,
    /// `mov.v4.f32 {a, b, c, d}, V`: element-wise moves, all sources read before any write.
    VecMov,
    /// Issued, result (if any) unknown.
    Opaque,
}

/// Multiply width: `.lo`, `.hi` or `.wide`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MulMode {
    Lo,
    Hi,
    Wide,
}

/// A comparison of `setp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Num,
    Nan,
}

/// A scalar type: width in bits, signedness, float.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ty {
    pub bits: u8,
    pub signed: bool,
    pub float: bool,
}

impl Ty {
    pub fn parse(m: &str) -> Option<Ty> {
        if m == "pred" {
            return Some(Ty {
                bits: 1,
                signed: false,
                float: false,
            });
        }
        let (signed, float, rest) = match m.as_bytes().first()? {
            b's' => (true, false, &m[1..]),
            b'u' | b'b' => (false, false, &m[1..]),
            b'f' => (true, true, &m[1..]),
            _ => return None,
        };
        let bits: u8 = rest.parse().ok()?;
        if !matches!(bits, 8 | 16 | 32 | 64) {
            return None;
        }
        Some(Ty {
            bits,
            signed,
            float,
        })
    }
}

/// A memory operand.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mem {
    pub base: Src,
    pub offset: i64,
    pub space: Space,
    /// Bytes per lane (element size times vector width).
    pub bytes: u16,
    /// Bytes per element (a vector access moves `bytes / elem_bytes` elements).
    pub elem_bytes: u16,
    /// The load's cache operator (`Default` for other accesses).
    pub cache: CacheOp,
}

/// One decoded instruction.
#[derive(Debug, Clone)]
pub struct DInst {
    pub op: OpK,
    /// The type that decides the arithmetic (the last type modifier; for `cvt` the destination).
    pub ty: Ty,
    /// `cvt`: the source type.
    pub ty_src: Ty,
    pub mul: MulMode,
    pub cmp: Cmp,
    /// `setp.<cmp>.<bool>`: combine with a third predicate (0 none, 1 and, 2 or, 3 xor).
    pub combine: u8,
    pub unsigned_cmp: bool,
    /// `cvt.rni`: round to nearest (otherwise float-to-integer truncates).
    pub round_nearest: bool,
    /// Destination registers (a `Pair` gives two; vectors give several).
    pub dst: [Option<u16>; 4],
    pub srcs: [Src; 4],
    pub nsrc: u8,
    pub guard: Option<(u16, bool)>,
    pub mem: Option<Mem>,
    /// Branch target block (global, see [`Decoded::blocks`]); for a `call` that the emulator
    /// follows, the index of the call site in [`Decoded::calls`].
    pub target: Option<usize>,
    pub class: Class,
    pub latency: LatencyClass,
    pub line: u32,
    /// `cvta.to.shared` (-1), `cvta.shared` (+1) window shifts, by space.
    pub cvta_shift: i64,
    pub opcode: &'static str,
}

impl DInst {
    /// The registers the instruction reads: its register operands, its address's base and its
    /// guard predicate, in that order.
    pub fn source_regs(&self) -> impl Iterator<Item = u16> + '_ {
        self.srcs[..usize::from(self.nsrc).min(self.srcs.len())]
            .iter()
            .chain(self.mem.as_ref().map(|m| &m.base))
            .filter_map(|s| match s {
                Src::Reg(r) => Some(*r),
                _ => None,
            })
            .chain(self.guard.map(|(g, _)| g))
    }
}

/// Base of the generic window that maps shared memory (so generic addresses can be told apart).
pub const SHARED_WINDOW: u64 = 0x7f00_0000_0000;
/// Base of the generic window for local memory.
pub const LOCAL_WINDOW: u64 = 0x7e00_0000_0000;
/// Base of the addresses of a function's `.param` variables (its own parameters and return
/// values, and the argument variables it declares around a call). Each call frame has its own
/// parameter space, so functions may reuse the same addresses.
pub const PARAM_WINDOW: u64 = 0x7d00_0000_0000;
/// Distance between synthetic global allocations (64 GiB): pointer k gets `(k + 1) << 36`.
pub const GLOBAL_STRIDE_SHIFT: u32 = 36;

/// One basic block of the decoded program, in the program's global numbering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DBlock {
    /// First instruction and one past the last (global instruction indices).
    pub start: usize,
    pub end: usize,
    pub line: u32,
    /// The immediate post-dominator, or the function's `block_end` for its exit.
    pub ipdom: usize,
    /// The block ends in a guarded forward branch over a short straight-line body that ptxas
    /// predicates instead of branching ([`PREDICATION_THRESHOLD`]): the branch is not issued,
    /// and a warp whose lanes all skip the body still issues it with every lane off.
    pub predicated: bool,
}

/// The longest body (PTX instructions) of a guarded forward branch that the emulator takes as
/// predicated: the CUDA C++ Best Practices Guide ("Branch Predication") says the compiler
/// replaces a branch with predicated instructions only when the instructions it controls are at
/// most 7 when it expects many divergent warps, 4 otherwise. The emulator does not tell the two
/// cases apart and takes 7. A branch straight to the kernel's `ret` is not taken as predicated:
/// ptxas makes it a conditional exit.
pub const PREDICATION_THRESHOLD: usize = 7;

/// Where a formal parameter or return value of a function lives in its frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Formal {
    /// A `.reg` parameter: its registers (one, or one per vector element) and element bits.
    Regs { regs: Vec<u16>, bits: u8 },
    /// A `.param` parameter: its address in the frame's parameter space and size in bytes.
    Param {
        addr: u64,
        bytes: u64,
        elem_bits: u8,
    },
}

/// What a call site passes for one argument or receives for one return value.
#[derive(Debug, Clone, PartialEq)]
pub enum Actual {
    /// Registers or immediates (one, or one per vector element).
    Values(Vec<Src>),
    /// A `.param` variable of the caller: its address in the caller's frame and size in bytes.
    Param { addr: u64, bytes: u64 },
}

/// A function the program contains: the kernel first, then every `.func` it calls (directly or
/// not) that has a body in the module.
#[derive(Debug, Clone)]
pub struct DFunc {
    pub name: String,
    /// Its blocks, `block_start..block_end` of [`Decoded::blocks`]; the first is its entry.
    pub block_start: usize,
    pub block_end: usize,
    /// Its registers, `reg_start..reg_end`.
    pub reg_start: u16,
    pub reg_end: u16,
    pub params: Vec<Formal>,
    pub returns: Vec<Formal>,
}

/// A `call` the emulator follows.
#[derive(Debug, Clone)]
pub struct DCall {
    /// Index into [`Decoded::funcs`].
    pub callee: usize,
    pub args: Vec<Actual>,
    pub returns: Vec<Actual>,
}

/// A decoded kernel and the functions it calls.
#[derive(Debug, Clone)]
pub struct Decoded {
    pub insts: Vec<DInst>,
    pub reg_count: usize,
    /// Shared bytes laid out by the decoder (static declarations).
    pub shared_bytes: u64,
    /// Opcodes decoded as opaque (issued, unknown result), with a line.
    pub opaque: Vec<(String, u32)>,
    /// Every function's blocks; the kernel's come first, numbered as in its `Cfg`.
    pub blocks: Vec<DBlock>,
    /// `(latch, header)` edges of every natural loop, in global block numbers.
    pub back_edges: HashSet<(usize, usize)>,
    /// The kernel (index 0) and the functions it calls.
    pub funcs: Vec<DFunc>,
    pub calls: Vec<DCall>,
    /// Calls that are not followed: (line, what is called, why).
    pub unfollowed: Vec<(u32, String, &'static str)>,
}

/// Marks the predicate logic that is no SASS instruction of its own as
/// [`LatencyClass::Folded`]: every `not.pred` (a SASS predicate operand can be negated), and an
/// unguarded `and`/`or`/`xor.pred` with an operand that a plain unguarded `setp` of the same
/// block wrote, which ptxas makes one compare with a boolean operator (PTX ISA, "setp":
/// `setp.CmpOp.BoolOp`; `FSETP.LT.AND P0, PT, R4, R3, P0` in the sm_86 SASS of the pnpoly
/// tuning kernel, where the PTX has `setp.lt.f32` then `and.pred`). A compare takes one boolean
/// operator: once folded, or once its predicate is written again, it takes no more.
fn fold_predicate_logic(insts: &mut [DInst], blocks: &[kerneltime_ptx::cfg::Block]) {
    let reg = |s: &Src| match s {
        Src::Reg(r) => Some(*r),
        _ => None,
    };
    // Predicates written by a plain compare of the block, not yet folded into.
    let mut fresh: Vec<u16> = Vec::new();
    let n = insts.len();
    for blk in blocks {
        fresh.clear();
        for d in &mut insts[blk.start.min(n)..blk.end.min(n)] {
            let pred_logic = d.ty.bits == 1 && !d.ty.float && d.guard.is_none();
            match d.op {
                OpK::Not if pred_logic => d.latency = LatencyClass::Folded,
                OpK::And | OpK::Or | OpK::Xor if pred_logic => {
                    let srcs = &d.srcs[..usize::from(d.nsrc).min(4)];
                    if let Some(k) = fresh
                        .iter()
                        .position(|r| srcs.iter().filter_map(reg).any(|s| s == *r))
                    {
                        fresh.swap_remove(k);
                        d.latency = LatencyClass::Folded;
                    }
                }
                _ => {}
            }
            for r in d.dst.iter().flatten() {
                fresh.retain(|f| f != r);
            }
            if d.op == OpK::Setp && d.combine == 0 && d.guard.is_none() {
                fresh.extend(d.dst.iter().flatten());
            }
        }
    }
}

/// Marks a `selp` of the constants 1 and 0 (a predicate made a number) as
/// [`LatencyClass::Folded`] when its result has exactly one reader, a later integer `selp` of
/// the same block: ptxas makes the two one predicated `SEL R, RZ, 0x1, P` (ptxas 12.9, sm_75,
/// read with cuobjdump). Not into an add: there ptxas emits the add and a predicated move
/// back, `IADD3 R2, R3, 0x1` then `@P0 IMAD.MOV R2, R3` (ptxas 12.9 and 13.5, sm_75 and sm_86,
/// on the pnpoly tuning kernel's NVRTC PTX and on a two-line test), as many instructions as
/// the PTX.
fn fold_predicate_selects(insts: &mut [DInst], blocks: &[kerneltime_ptx::cfg::Block]) {
    let reads = |d: &DInst, r: u16| d.source_regs().filter(|&x| x == r).count();
    let mut uses: HashMap<u16, usize> = HashMap::new();
    for r in insts.iter().flat_map(DInst::source_regs) {
        *uses.entry(r).or_default() += 1;
    }
    let n = insts.len();
    for blk in blocks {
        let (start, end) = (blk.start.min(n), blk.end.min(n));
        for i in start..end {
            let d = &insts[i];
            let ones_and_zeros = matches!(
                (d.srcs[0], d.srcs[1]),
                (Src::Imm(1), Src::Imm(0)) | (Src::Imm(0), Src::Imm(1))
            );
            let Some(r) = d.dst[0] else {
                continue;
            };
            if d.op != OpK::Selp
                || d.ty.float
                || d.guard.is_some()
                || !ones_and_zeros
                || uses.get(&r) != Some(&1)
            {
                continue;
            }
            let reader = (i + 1..end).find(|&j| {
                reads(&insts[j], r) > 0 || insts[j].dst.iter().flatten().any(|&w| w == r)
            });
            if let Some(j) = reader {
                let e = &insts[j];
                if reads(e, r) == 1 && !e.ty.float && e.op == OpK::Selp {
                    insts[i].latency = LatencyClass::Folded;
                }
            }
        }
    }
}

/// Whether block `b` of `cfg` ends in a guarded forward branch over a short `if` body that
/// ptxas predicates: the body is the blocks `b + 1 .. t` up to the branch target `t` (the
/// block's immediate post-dominator), entered only from `b` or from within and left only
/// forward within it or to `t`, straight-line code but for inner branches that are predicated
/// themselves (`if (a && b) x++;` is a branch over a branch over `x++`, one predicated
/// sequence in SASS), at most [`PREDICATION_THRESHOLD`] instructions besides those branches,
/// with no return, call or barrier, and a target that is not the function's `ret`. IEEE
/// divide/square-root sequences and integer division are branches in SASS (a slow path), so a
/// body holding one is not predicated.
fn predicated_branch(
    dec: &Decoded,
    cfg: &Cfg<'_>,
    inst_base: usize,
    b: usize,
    ipdom: usize,
) -> bool {
    let Some(blk) = cfg.blocks.get(b) else {
        return false;
    };
    let Some(last) = blk
        .end
        .checked_sub(1)
        .and_then(|k| dec.insts.get(inst_base + k))
    else {
        return false;
    };
    let t = ipdom;
    if last.op != OpK::Bra
        || last.guard.is_none()
        || t < b + 2
        || blk.succs.len() != 2
        || !blk.succs.contains(&t)
        || !blk.succs.contains(&(b + 1))
    {
        return false;
    }
    let mut len = 0;
    for r in b + 1..t {
        let Some(body) = cfg.blocks.get(r) else {
            return false;
        };
        let entered_inside = body.preds.iter().all(|&p| p >= b && p < t);
        let left_forward = body.succs.iter().all(|&s| s > r && s <= t);
        if !entered_inside || !left_forward {
            return false;
        }
        for k in body.start..body.end {
            let Some(d) = dec.insts.get(inst_base + k) else {
                return false;
            };
            let inner_branch = d.op == OpK::Bra && k + 1 == body.end;
            if inner_branch {
                let inner = cfg.ipdom.get(r).copied().flatten().unwrap_or(usize::MAX);
                if inner > t || !predicated_branch(dec, cfg, inst_base, r, inner) {
                    return false;
                }
                continue;
            }
            let plain = !matches!(
                d.op,
                OpK::Bra | OpK::Ret | OpK::Call | OpK::Bar | OpK::BrxIdx
            ) && !matches!(
                d.latency,
                LatencyClass::Fp32Sequence
                    | LatencyClass::Fp32Divide
                    | LatencyClass::Fp64Sequence
                    | LatencyClass::IntDiv
            );
            if !plain {
                return false;
            }
            len += 1;
        }
    }
    let exits = cfg
        .blocks
        .get(t)
        .and_then(|tb| dec.insts.get(inst_base + tb.start))
        .is_some_and(|d| d.op == OpK::Ret);
    len > 0 && len <= PREDICATION_THRESHOLD && !exits
}

fn special(name: &str) -> Option<Special> {
    let dim = |s: &str| match s {
        "x" => Some(0u8),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    let (base, d) = match name.split_once('.') {
        Some((b, d)) => (b, dim(d)),
        None => (name, None),
    };
    Some(match (base, d) {
        ("%tid", Some(d)) => Special::Tid(d),
        ("%ntid", Some(d)) => Special::Ntid(d),
        ("%ctaid", Some(d)) => Special::Ctaid(d),
        ("%nctaid", Some(d)) => Special::Nctaid(d),
        ("%laneid", None) => Special::Laneid,
        ("%warpid", None) => Special::Warpid,
        ("%nwarpid", None) => Special::Nwarpid,
        _ if name.starts_with("%clock")
            || name.starts_with("%smid")
            || name.starts_with("%nsmid")
            || name.starts_with("%globaltimer")
            || name.starts_with("%pm")
            || name.starts_with("%gridid")
            || name.starts_with("%lanemask")
            || name.starts_with("%envreg")
            || name.starts_with("%dynamic_smem_size")
            || name.starts_with("%total_smem_size") =>
        {
            Special::Unknowable
        }
        _ => return None,
    })
}

/// The names of one function as the decoder resolves them.
struct Ctx<'a> {
    /// Register names of this function -> global register numbers.
    regs: HashMap<String, u16>,
    /// The next free global register number.
    next_reg: usize,
    /// Registers declared one by one (`.reg .u64 out_addr;`, `.reg .b32 %r;`): any name is a
    /// register only where its function declares it (PTX ISA 9.1, "Identifiers", 4.4: `%` is
    /// only a convention of compilers, and hand-written or generated PTX often drops it).
    declared: HashSet<&'a str>,
    /// `.reg .b32 r<8>;` ranges: prefix -> count (and vector width).
    ranges: HashMap<&'a str, (u64, Option<u8>)>,
    /// Vector registers (`.reg .v4 .f32 V;`) and their widths.
    vectors: HashMap<&'a str, u8>,
    /// Variables -> synthetic addresses (`.param` ones in the frame's parameter space).
    symbols: HashMap<&'a str, u64>,
    /// Sizes of the function's `.param` variables, bytes.
    param_sizes: HashMap<&'a str, u64>,
    /// Kernel parameters (the kernel only) -> position.
    params: HashMap<&'a str, u16>,
}

/// The element a vector suffix names: `.x`/`.r` 0, `.y`/`.g` 1, `.z`/`.b` 2, `.w`/`.a` 3
/// (PTX ISA 9.1, "Vectors as Operands", 6.4.3).
fn component(c: &str) -> Option<u8> {
    match c {
        "x" | "r" => Some(0),
        "y" | "g" => Some(1),
        "z" | "b" => Some(2),
        "w" | "a" => Some(3),
        _ => None,
    }
}

const COMPONENTS: [&str; 4] = ["x", "y", "z", "w"];

impl<'a> Ctx<'a> {
    /// Records a function's register declarations and `.reg` parameters.
    fn declare(&mut self, name: &'a str, count: Option<u64>, vector: Option<u8>) {
        match count {
            Some(n) => {
                self.ranges.insert(name, (n, vector));
            }
            None => {
                self.declared.insert(name);
                if let Some(v) = vector {
                    self.vectors.insert(name, v);
                }
            }
        }
    }

    /// The global number of a register of this function (allocated on first use). Past 65,534
    /// registers in one program every further name shares the last number (its values are
    /// then unreliable, never out of bounds).
    fn reg(&mut self, name: &str) -> u16 {
        if let Some(&r) = self.regs.get(name) {
            return r;
        }
        let r = self.next_reg.min(usize::from(u16::MAX - 1)) as u16;
        self.next_reg = (self.next_reg + 1).min(usize::from(u16::MAX));
        self.regs.insert(name.to_string(), r);
        r
    }

    /// Whether `n` names a register the function declares (one by one or in a `<N>` range).
    fn is_declared(&self, n: &str) -> bool {
        self.declared.contains(n) || self.range_of(n).is_some()
    }

    /// The declaration range `n` falls in, if any: `r5` in `.reg .b32 r<8>`.
    fn range_of(&self, n: &str) -> Option<(u64, Option<u8>)> {
        if self.ranges.is_empty() {
            return None;
        }
        let digits = n.len() - n.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 || digits == n.len() {
            return None;
        }
        let (prefix, idx) = n.split_at(n.len() - digits);
        let &(count, vector) = self.ranges.get(prefix)?;
        (idx.parse::<u64>().ok()? < count).then_some((count, vector))
    }

    /// The width of a vector register named `n`, if it is one.
    fn vector_width(&self, n: &str) -> Option<u8> {
        self.vectors
            .get(n)
            .copied()
            .or_else(|| self.range_of(n).and_then(|(_, v)| v))
    }

    /// `V.x` -> the register of element 0 of the vector register `V`.
    fn element(&mut self, n: &str) -> Option<u16> {
        let (base, c) = n.rsplit_once('.')?;
        let k = component(c)?;
        let w = self.vector_width(base)?;
        (k < w).then(|| self.reg(&format!("{base}.{}", COMPONENTS[usize::from(k)])))
    }

    /// The element registers of a whole vector register (at most four are tracked).
    fn elements(&mut self, n: &str) -> Option<Vec<u16>> {
        let w = self.vector_width(n)?;
        Some(
            (0..w.min(4))
                .map(|k| self.reg(&format!("{n}.{}", COMPONENTS[usize::from(k)])))
                .collect(),
        )
    }

    /// Whether `n` is a register: declared in the function, or spelled with `%` and not a
    /// special register, variable or parameter.
    fn is_register(&self, n: &str) -> bool {
        self.is_declared(n)
            || (n.starts_with('%')
                && special(n).is_none()
                && !self.symbols.contains_key(n)
                && !self.params.contains_key(n))
    }

    fn name_src(&mut self, n: &str) -> Src {
        if let Some(s) = special(n) {
            return Src::Special(s);
        }
        if let Some(r) = self.element(n) {
            return Src::Reg(r);
        }
        if self.is_declared(n) && self.vector_width(n).is_none() {
            return Src::Reg(self.reg(n));
        }
        if let Some(&a) = self.symbols.get(n) {
            return Src::Addr(a);
        }
        if let Some(&p) = self.params.get(n) {
            return Src::Param(p);
        }
        if n.starts_with('%') && self.vector_width(n).is_none() {
            return Src::Reg(self.reg(n));
        }
        Src::Unknown
    }

    fn src(&mut self, o: &Operand) -> Src {
        match o {
            Operand::Int(v) => Src::Imm(*v as u64),
            Operand::Float(f) => Src::FImm(f.to_bits()),
            Operand::Name(n) => self.name_src(n.as_str()),
            _ => Src::Unknown,
        }
    }

    /// The sources of a vector operand: a `{a, b}` list or a whole vector register.
    fn vector_srcs(&mut self, o: &Operand) -> Option<Vec<Src>> {
        match o {
            Operand::Vector(v) => Some(
                v.iter()
                    .map(|e| match e {
                        Operand::Sink => Src::Unknown,
                        _ => self.src(e),
                    })
                    .collect(),
            ),
            Operand::Name(n) => Some(
                self.elements(n.as_str())?
                    .into_iter()
                    .map(Src::Reg)
                    .collect(),
            ),
            _ => None,
        }
    }

    /// The register a destination name writes, if it is one.
    fn dst_reg(&mut self, n: &str) -> Option<u16> {
        if special(n).is_some() {
            return None;
        }
        if let Some(r) = self.element(n) {
            return Some(r);
        }
        (self.is_register(n) && self.vector_width(n).is_none()).then(|| self.reg(n))
    }

    /// The destinations of a vector operand (`_` and non-registers are `None`).
    fn vector_dsts(&mut self, o: &Operand) -> Option<Vec<Option<u16>>> {
        match o {
            Operand::Vector(v) => Some(
                v.iter()
                    .map(|e| e.name().and_then(|n| self.dst_reg(n)))
                    .collect(),
            ),
            Operand::Name(n) => Some(self.elements(n.as_str())?.into_iter().map(Some).collect()),
            _ => None,
        }
    }

    fn dst(&mut self, o: &Operand, out: &mut [Option<u16>; 4]) {
        match o {
            Operand::Pair(a, b) => {
                if let Some(n) = a.name() {
                    out[0] = self.dst_reg(n);
                }
                if let Some(n) = b.name() {
                    out[1] = self.dst_reg(n);
                }
            }
            Operand::Name(n) if self.vector_width(n).is_none() => out[0] = self.dst_reg(n),
            _ => {
                for (k, r) in self
                    .vector_dsts(o)
                    .unwrap_or_default()
                    .into_iter()
                    .take(4)
                    .enumerate()
                {
                    out[k] = r;
                }
            }
        }
    }
}

fn last_type(i: &Instruction) -> Ty {
    i.modifiers
        .iter()
        .rev()
        .find_map(|m| Ty::parse(m))
        .unwrap_or(Ty {
            bits: 32,
            signed: false,
            float: false,
        })
}

fn vector_width(i: &Instruction) -> u16 {
    if i.has("v4") {
        4
    } else if i.has("v2") {
        2
    } else if i.has("v8") {
        8
    } else {
        1
    }
}

/// Synthetic addresses of variables: shared from offset 0, globals after the kernel's pointer
/// parameters' allocations, local depots in the local window; one layout for the kernel and
/// every function it calls (a function's own variables follow the module's).
struct Layout<'m> {
    module: HashMap<&'m str, u64>,
    shared: u64,
    global: u64,
    local: u64,
}

impl<'m> Layout<'m> {
    fn new(m: &'m Module, entry: &Function) -> Self {
        let mut l = Layout {
            module: HashMap::new(),
            shared: 0,
            global: (u64::from(entry.params.len() as u32) + 2) << GLOBAL_STRIDE_SHIFT,
            // Local symbols are local-space offsets (from 0); `cvta.local` moves them into the
            // generic window, as `cvta.shared` does for shared ones.
            local: 0,
        };
        let mut module = HashMap::new();
        for v in &m.variables {
            if let Some(a) = l.place(v) {
                module.insert(v.name.as_str(), a);
            }
        }
        l.module = module;
        l
    }

    fn place(&mut self, v: &Variable) -> Option<u64> {
        let align = v.align.unwrap_or(16).clamp(1, 4096);
        let size = v.size_bytes().unwrap_or(0).min(1 << 32);
        let slot = match v.space.as_str() {
            "shared" => &mut self.shared,
            "global" | "const" => &mut self.global,
            "local" => &mut self.local,
            _ => return None,
        };
        *slot = slot.div_ceil(align) * align;
        let at = *slot;
        *slot += size.max(if v.space == "shared" { 0 } else { 256 });
        Some(at)
    }
}

/// The module variables a data hint may describe: those of the constant and global spaces
/// (`__constant__` and `__device__` arrays the host fills by name).
pub fn hintable_variables(m: &Module) -> impl Iterator<Item = &Variable> {
    m.variables
        .iter()
        .filter(|v| matches!(v.space.as_str(), "const" | "global"))
}

/// Where the emulator places a module variable of the constant or global space that kernel
/// `entry` can read (its first byte's address, its size in bytes), by its PTX name; None for
/// another space or an unknown name. The addresses are those the decoder gives the variable's
/// name in `entry`'s instructions.
pub fn module_variable(m: &Module, entry: &Function, name: &str) -> Option<(u64, u64)> {
    let v = hintable_variables(m).find(|v| v.name == name)?;
    let at = *Layout::new(m, entry).module.get(v.name.as_str())?;
    Some((at, v.size_bytes().unwrap_or(0)))
}

/// Size of a parameter in bytes (`.param .align 8 .b8 p[16]` -> 16; `.reg .v2 .u32 x` -> 8).
fn param_bytes(p: &Param) -> u64 {
    let elem = type_size_bytes(&p.ty).unwrap_or(8);
    let n = match p.array {
        Some(0) | None => 1,
        Some(n) => n.min(1 << 20),
    };
    elem * n * u64::from(p.vector.unwrap_or(1))
}

/// The functions of a program: the kernel, then each `.func` with a body reached by a call.
struct Callees<'m> {
    ids: HashMap<&'m str, usize>,
    order: Vec<&'m Function>,
    bodies: HashMap<&'m str, &'m Function>,
}

impl<'m> Callees<'m> {
    /// The program index of the function `name`, adding it on first call; None when the
    /// module has no body for it.
    fn id(&mut self, name: &str) -> Option<usize> {
        if let Some(&k) = self.ids.get(name) {
            return Some(k);
        }
        let (&key, &f) = self.bodies.get_key_value(name)?;
        let k = self.order.len();
        self.ids.insert(key, k);
        self.order.push(f);
        Some(k)
    }
}

/// Decodes a kernel of a module and every function it calls that has a body in the module
/// (each with its own registers, parameter space and blocks, numbered after the kernel's).
pub fn decode(m: &Module, f: &Function, cfg: &Cfg) -> Decoded {
    let mut layout = Layout::new(m, f);
    let mut dec = Decoded {
        insts: Vec::with_capacity(cfg.instrs.len()),
        reg_count: 0,
        shared_bytes: 0,
        opaque: Vec::new(),
        blocks: Vec::with_capacity(cfg.blocks.len()),
        back_edges: HashSet::new(),
        funcs: Vec::new(),
        calls: Vec::new(),
        unfollowed: Vec::new(),
    };
    let mut callees = Callees {
        ids: HashMap::from([(f.name.as_str(), 0)]),
        order: vec![f],
        bodies: m
            .functions
            .iter()
            .filter(|g| g.has_body && !g.is_entry)
            .map(|g| (g.name.as_str(), g))
            .collect(),
    };
    decode_function(f, cfg, true, &mut layout, &mut dec, &mut callees);
    let mut k = 1;
    while k < callees.order.len() {
        let g = callees.order[k];
        let mut diags = Diagnostics::default();
        let gcfg = Cfg::build(g, &mut diags);
        decode_function(g, &gcfg, false, &mut layout, &mut dec, &mut callees);
        k += 1;
    }
    dec.shared_bytes = layout.shared;
    dec
}

/// Decodes one function of the program and appends it to `dec`.
fn decode_function<'m>(
    g: &'m Function,
    cfg: &Cfg,
    is_entry: bool,
    layout: &mut Layout<'m>,
    dec: &mut Decoded,
    callees: &mut Callees<'m>,
) {
    let block_start = dec.blocks.len();
    let inst_base = dec.insts.len();
    let reg_start = dec.reg_count.min(usize::from(u16::MAX - 1)) as u16;
    let mut cx = Ctx {
        regs: HashMap::new(),
        next_reg: dec.reg_count,
        declared: HashSet::new(),
        ranges: HashMap::new(),
        vectors: HashMap::new(),
        symbols: layout.module.clone(),
        param_sizes: HashMap::new(),
        params: HashMap::new(),
    };
    for r in &g.registers {
        cx.declare(r.name.as_str(), r.count, r.vector);
    }
    // The function's parameter space: its `.param` parameters and return values, then the
    // `.param` variables it declares (argument and return slots of its calls).
    let mut param_at = PARAM_WINDOW;
    let mut param_slot = |cx: &mut Ctx<'m>, name: &'m str, bytes: u64, align: u64| {
        param_at = param_at.div_ceil(align) * align;
        cx.symbols.insert(name, param_at);
        cx.param_sizes.insert(name, bytes);
        let at = param_at;
        param_at += bytes.max(1);
        at
    };
    if is_entry {
        for (k, p) in g.params.iter().enumerate() {
            cx.params.insert(p.name.as_str(), k as u16);
        }
    } else {
        for p in g.returns.iter().chain(g.params.iter()) {
            if p.is_reg {
                cx.declare(p.name.as_str(), None, p.vector);
            } else {
                let align = p.align.unwrap_or(8).clamp(1, 256);
                param_slot(&mut cx, p.name.as_str(), param_bytes(p), align);
            }
        }
    }
    for v in &g.variables {
        if v.space == "param" {
            let bytes = v.size_bytes().unwrap_or(8).min(1 << 20);
            param_slot(
                &mut cx,
                v.name.as_str(),
                bytes,
                v.align.unwrap_or(8).clamp(1, 256),
            );
        } else if let Some(a) = layout.place(v) {
            cx.symbols.insert(v.name.as_str(), a);
        }
    }
    let formal = |cx: &mut Ctx<'m>, p: &Param| -> Formal {
        let bits = Ty::parse(&p.ty).map_or(32, |t| t.bits.max(8));
        if p.is_reg {
            let regs = match cx.elements(&p.name) {
                Some(v) => v,
                None => vec![cx.reg(&p.name)],
            };
            Formal::Regs { regs, bits }
        } else {
            Formal::Param {
                addr: cx
                    .symbols
                    .get(p.name.as_str())
                    .copied()
                    .unwrap_or(PARAM_WINDOW),
                bytes: param_bytes(p),
                elem_bits: bits,
            }
        }
    };
    let (params, returns) = if is_entry {
        (Vec::new(), Vec::new())
    } else {
        (
            g.params.iter().map(|p| formal(&mut cx, p)).collect(),
            g.returns.iter().map(|p| formal(&mut cx, p)).collect(),
        )
    };
    for i in &cfg.instrs {
        let mut d = decode_one(i, cfg, &mut cx, block_start);
        if d.op == OpK::Call {
            d.target = decode_call(i, &mut cx, dec, callees);
            // Registers that receive return values (set by a followed call, unknown otherwise).
            if let Some(Operand::List(rets)) = i.operands.first() {
                for (k, r) in rets.iter().take(4).enumerate() {
                    d.dst[k] = r.name().and_then(|n| cx.dst_reg(n));
                }
            }
        }
        if d.op == OpK::Opaque && !matches!(d.class, Class::Fence | Class::Other) {
            dec.opaque.push((i.opcode.to_string(), i.line));
        }
        dec.insts.push(d);
    }
    // ptxas assembles an `atom` whose result no instruction reads as a reduction (RED): the
    // warp does not wait for it. A register that appears in no instruction but its own atom is
    // never read (guards included).
    let mut uses: HashMap<&str, u32> = HashMap::new();
    for i in &cfg.instrs {
        if let Some(g) = &i.guard {
            *uses.entry(g.reg.as_str()).or_default() += 1;
        }
        for o in &i.operands {
            count_names(o, &mut uses);
        }
    }
    for (d, i) in dec.insts[inst_base..].iter_mut().zip(&cfg.instrs) {
        if d.op == OpK::Atom {
            let result = i.operands.first().and_then(|o| o.name());
            if result.is_none_or(|r| uses.get(r).copied().unwrap_or(0) <= 1) {
                d.op = OpK::Red;
            }
        }
    }
    fold_predicate_logic(&mut dec.insts[inst_base..], &cfg.blocks);
    fold_predicate_selects(&mut dec.insts[inst_base..], &cfg.blocks);
    let n = cfg.blocks.len();
    for (b, blk) in cfg.blocks.iter().enumerate() {
        let ipdom = cfg
            .ipdom
            .get(b)
            .copied()
            .flatten()
            .filter(|&p| p <= n)
            .unwrap_or(n);
        let predicated = predicated_branch(dec, cfg, inst_base, b, ipdom);
        dec.blocks.push(DBlock {
            start: inst_base + blk.start,
            end: inst_base + blk.end,
            line: blk.line,
            ipdom: block_start + ipdom,
            predicated,
        });
        // Back edges as `loops::find_loops` defines them: to a block that dominates the source.
        if cfg.idom.get(b).copied().flatten().is_some() {
            for &s in &blk.succs {
                if cfg.dominates(s, b) {
                    dec.back_edges.insert((block_start + b, block_start + s));
                }
            }
        }
    }
    dec.reg_count = cx.next_reg;
    dec.funcs.push(DFunc {
        name: g.name.clone(),
        block_start,
        block_end: block_start + n,
        reg_start,
        reg_end: cx.next_reg.min(usize::from(u16::MAX)) as u16,
        params,
        returns,
    });
}

/// A `call`'s operands (PTX ISA 9.1, "Control Flow Instructions: call": `call{.uni} (ret-param),
/// func, (param-list);` with the return and argument lists optional, and `call{.uni} (ret),
/// fptr, (params), flist|fproto;` for indirect calls through a register). Returns the index of
/// the call site in `dec.calls` when the emulator can follow it.
fn decode_call<'m>(
    i: &Instruction,
    cx: &mut Ctx,
    dec: &mut Decoded,
    callees: &mut Callees<'m>,
) -> Option<usize> {
    let mut ops = i.operands.iter().peekable();
    let rets = match ops.peek() {
        Some(Operand::List(v)) => {
            ops.next();
            v.as_slice()
        }
        _ => &[],
    };
    let target = match ops.next() {
        Some(Operand::Name(n)) => n.as_str(),
        _ => {
            dec.unfollowed
                .push((i.line, "?".into(), "the call names no function"));
            return None;
        }
    };
    let args = match ops.next() {
        Some(Operand::List(v)) => v.as_slice(),
        _ => &[],
    };
    if !callees.bodies.contains_key(target)
        && (cx.is_register(target) || cx.symbols.contains_key(target))
    {
        dec.unfollowed.push((
            i.line,
            target.to_string(),
            "a call through a function pointer",
        ));
        return None;
    }
    let Some(callee) = callees.id(target) else {
        dec.unfollowed
            .push((i.line, target.to_string(), "the module has no body for it"));
        return None;
    };
    let mut actual = |o: &Operand| -> Actual {
        if let Operand::Name(n) = o {
            if let Some(&bytes) = cx.param_sizes.get(n.as_str()) {
                let addr = cx.symbols.get(n.as_str()).copied().unwrap_or(PARAM_WINDOW);
                return Actual::Param { addr, bytes };
            }
        }
        match cx.vector_srcs(o) {
            Some(v) => Actual::Values(v),
            None => Actual::Values(vec![cx.src(o)]),
        }
    };
    let call = DCall {
        callee,
        args: args.iter().map(&mut actual).collect(),
        returns: rets.iter().map(&mut actual).collect(),
    };
    dec.calls.push(call);
    Some(dec.calls.len() - 1)
}

fn decode_one(i: &Instruction, cfg: &Cfg, cx: &mut Ctx, block_start: usize) -> DInst {
    let opc = i.opcode.as_str();
    let ty = last_type(i);
    let class = i.class;
    let op = match opc {
        "add" | "addc" => OpK::Add,
        "sub" | "subc" => OpK::Sub,
        "mul" | "mul24" => OpK::Mul,
        "mad" | "mad24" | "madc" => OpK::Mad,
        "fma" => OpK::Fma,
        "div" => OpK::Div,
        "rem" => OpK::Rem,
        "and" => OpK::And,
        "or" => OpK::Or,
        "xor" => OpK::Xor,
        "not" => OpK::Not,
        "cnot" => OpK::Cnot,
        "shl" => OpK::Shl,
        "shr" => OpK::Shr,
        "neg" => OpK::Neg,
        "abs" => OpK::Abs,
        "min" => OpK::Min,
        "max" => OpK::Max,
        "popc" => OpK::Popc,
        "clz" => OpK::Clz,
        "bfe" => OpK::Bfe,
        "bfi" => OpK::Bfi,
        "selp" => OpK::Selp,
        "setp" => OpK::Setp,
        "mov" => OpK::Mov,
        "cvt" => OpK::Cvt,
        "cvta" => OpK::Cvta,
        "ld" | "ldu" => OpK::Load,
        "st" => OpK::Store,
        "atom" => OpK::Atom,
        "red" => OpK::Red,
        "bra" => OpK::Bra,
        "ret" | "exit" => OpK::Ret,
        "bar" | "barrier" => {
            if i.has("sync") || i.has("red") || i.modifiers.is_empty() || opc == "barrier" {
                OpK::Bar
            } else {
                OpK::Opaque
            }
        }
        "call" => OpK::Call,
        "brx" => OpK::BrxIdx,
        "tex" | "tld4" | "suld" => OpK::Tex,
        _ => OpK::Opaque,
    };
    // Types: cvt has dst then src type; setp's last type is the compared one.
    let types: Vec<Ty> = i.modifiers.iter().filter_map(|m| Ty::parse(m)).collect();
    let (ty, mut ty_src) = if op == OpK::Cvt && types.len() >= 2 {
        (types[types.len() - 2], types[types.len() - 1])
    } else {
        (ty, ty)
    };
    // `mov` with vector operands (PTX ISA 9.1, "Vectors as Operands", 6.4.3, and "Data Movement
    // and Conversion Instructions: mov": `mov.b32 d, {a, b}` packs, `mov.b64 {a, b}, s` unpacks,
    // `mov.v4.f32 {a, b, c, d}, V` copies element-wise).
    let mut op = op;
    let mut vector_dst = None;
    let mut vector_src = None;
    if op == OpK::Mov && i.operands.len() == 2 {
        vector_dst = cx.vector_dsts(&i.operands[0]);
        vector_src = cx.vector_srcs(&i.operands[1]);
        let elems = |n: usize| Ty {
            bits: (u16::from(ty.bits) / n.max(1) as u16).clamp(1, 64) as u8,
            ..ty
        };
        match (&vector_dst, &vector_src) {
            // At most four elements are tracked; wider vectors give unknown values.
            (Some(d), _) if d.len() > 4 => op = OpK::Opaque,
            (_, Some(s)) if s.len() > 4 => op = OpK::Opaque,
            (Some(d), Some(s)) if d.len() == s.len() => op = OpK::VecMov,
            (Some(d), None) => {
                op = OpK::Unpack;
                ty_src = elems(d.len());
            }
            (None, Some(s)) => {
                op = OpK::Pack;
                ty_src = elems(s.len());
            }
            _ => {}
        }
    }
    let mul = if i.has("wide") {
        MulMode::Wide
    } else if i.has("hi") {
        MulMode::Hi
    } else {
        MulMode::Lo
    };
    let mut cmp = Cmp::Eq;
    let mut unsigned_cmp = !ty.signed;
    let mut combine = 0u8;
    if op == OpK::Setp {
        for m in i.modifiers.iter() {
            let (c, u) = match m.as_str() {
                "eq" | "equ" => (Cmp::Eq, false),
                "ne" | "neu" => (Cmp::Ne, false),
                "lt" | "ltu" => (Cmp::Lt, false),
                "le" | "leu" => (Cmp::Le, false),
                "gt" | "gtu" => (Cmp::Gt, false),
                "ge" | "geu" => (Cmp::Ge, false),
                "lo" => (Cmp::Lt, true),
                "ls" => (Cmp::Le, true),
                "hi" => (Cmp::Gt, true),
                "hs" => (Cmp::Ge, true),
                "num" => (Cmp::Num, false),
                "nan" => (Cmp::Nan, false),
                "and" => {
                    combine = 1;
                    continue;
                }
                "or" => {
                    combine = 2;
                    continue;
                }
                "xor" => {
                    combine = 3;
                    continue;
                }
                _ => continue,
            };
            cmp = c;
            if u {
                unsigned_cmp = true;
            }
        }
    }
    let mut dst = [None; 4];
    let mut srcs = [Src::Unknown; 4];
    let mut nsrc = 0u8;
    let mut mem = None;
    let mut target = None;
    let writes = !matches!(
        op,
        OpK::Store | OpK::Red | OpK::Bra | OpK::Ret | OpK::Bar | OpK::Call | OpK::BrxIdx
    ) && !matches!(class, Class::Fence | Class::Store(_));
    let ops = &i.operands;
    match op {
        OpK::Load | OpK::Store => {
            let (addr_op, val_op) = if op == OpK::Load {
                (ops.get(1), ops.first())
            } else {
                (ops.first(), ops.get(1))
            };
            let space = match class {
                Class::Load(s) | Class::Store(s) => s,
                _ => Space::Generic,
            };
            let elem = types.last().map_or(4, |t| u16::from(t.bits.max(8) / 8));
            let bytes = elem * vector_width(i);
            let cache = if op == OpK::Store {
                CacheOp::Default
            } else if opc == "ldu" || i.has("nc") {
                CacheOp::ReadOnly
            } else if i.has("cg") || i.has("cv") {
                CacheOp::BypassL1
            } else if i.has("ca") {
                CacheOp::CacheAll
            } else {
                CacheOp::Default
            };
            mem = Some(mem_operand(addr_op, space, bytes, elem, cache, cx));
            if op == OpK::Load {
                if let Some(v) = val_op {
                    cx.dst(v, &mut dst);
                }
            } else if let Some(v) = val_op {
                match cx.vector_srcs(v) {
                    Some(elems) => {
                        for (k, e) in elems.into_iter().take(4).enumerate() {
                            srcs[k] = e;
                            nsrc += 1;
                        }
                    }
                    None => {
                        srcs[0] = cx.src(v);
                        nsrc = 1;
                    }
                }
            }
        }
        OpK::Atom | OpK::Red => {
            // atom d, [a], b[, c]; red [a], b.
            let skip = usize::from(op == OpK::Atom);
            let space = if i.has("global") {
                Space::Global
            } else if i.modifiers.iter().any(|m| m.starts_with("shared")) {
                Space::Shared
            } else {
                Space::Generic
            };
            let elem = types.last().map_or(4, |t| u16::from(t.bits.max(8) / 8));
            mem = Some(mem_operand(
                ops.get(skip),
                space,
                elem * vector_width(i),
                elem,
                CacheOp::Default,
                cx,
            ));
            if op == OpK::Atom {
                if let Some(d) = ops.first() {
                    cx.dst(d, &mut dst);
                }
            }
            for o in ops.iter().skip(skip + 1).take(4) {
                srcs[nsrc as usize] = cx.src(o);
                nsrc += 1;
            }
        }
        OpK::Bra => {
            target = kerneltime_ptx::cfg::branch_target(i)
                .and_then(|l| cfg.labels.get(l).copied())
                .map(|b| block_start + b);
        }
        OpK::VecMov | OpK::Unpack | OpK::Pack => {
            let d = vector_dst.unwrap_or_default();
            let s = vector_src.unwrap_or_default();
            if op == OpK::Unpack {
                srcs[0] = cx.src(&ops[1]);
                nsrc = 1;
            }
            for (k, r) in d.into_iter().take(4).enumerate() {
                dst[k] = r;
            }
            if op == OpK::Pack {
                cx.dst(&ops[0], &mut dst);
            }
            for (k, e) in s.into_iter().take(4).enumerate() {
                srcs[k] = e;
                nsrc = k as u8 + 1;
            }
        }
        OpK::Tex => {
            // `tex.geom.v4.dtype.ctype d, [a, c]`, `[a, b, c]` with a sampler, and `tld4` and
            // `suld.b.geom` alike (PTX ISA 9.1, "Texture Instructions: tex" 9.7.10.3, "tld4"
            // 9.7.10.4, "Surface Instructions: suld"): the coordinates are the last part of
            // the address operand, a vector or a scalar.
            if let Some(d) = ops.first() {
                cx.dst(d, &mut dst);
            }
            if let Some(Operand::Address { extra, .. }) = ops.get(1) {
                if let Some(c) = extra.last() {
                    let coords = cx.vector_srcs(c).unwrap_or_else(|| vec![cx.src(c)]);
                    for (k, e) in coords.into_iter().take(4).enumerate() {
                        srcs[k] = e;
                        nsrc = k as u8 + 1;
                    }
                }
            }
            // The element type: `.dtype` before the coordinate type, or the only type.
            let elem = match types.len() {
                0 => 4,
                1 => u16::from(types[0].bits.max(8) / 8),
                n => u16::from(types[n - 2].bits.max(8) / 8),
            };
            mem = Some(Mem {
                base: Src::Unknown,
                offset: 0,
                space: Space::Texture,
                bytes: elem * vector_width(i),
                elem_bytes: elem,
                cache: CacheOp::ReadOnly,
            });
        }
        _ => {
            let mut it = ops.iter();
            if writes {
                if let Some(d) = it.next() {
                    cx.dst(d, &mut dst);
                }
            }
            for o in it.take(4) {
                srcs[nsrc as usize] = match o {
                    Operand::Not(inner) => {
                        // `!%p` source (setp combine, selp): decoded as the register; the
                        // negation is rare enough to treat the value as unknown.
                        let _ = cx.src(inner);
                        Src::Unknown
                    }
                    _ => cx.src(o),
                };
                nsrc += 1;
            }
        }
    }
    let guard = i
        .guard
        .as_ref()
        .map(|g| (cx.reg(g.reg.as_str()), g.negated));
    let cvta_shift = if op == OpK::Cvta {
        let to = i.has("to");
        let window = if i.has("shared") {
            SHARED_WINDOW as i64
        } else if i.has("local") {
            LOCAL_WINDOW as i64
        } else {
            0
        };
        if to {
            -window
        } else {
            window
        }
    } else {
        0
    };
    let mut latency = LatencyClass::of(class, opc, ty.float);
    if op == OpK::Cvt && types.len() >= 2 {
        if !ty.float && !ty_src.float {
            // A width change between integers is a move, shift or sign extension in SASS.
            latency = LatencyClass::Int;
        } else if ty.bits == 64 || ty_src.bits == 64 {
            latency = LatencyClass::Convert64;
        }
    }
    if op == OpK::Load && matches!(class, Class::Load(Space::Param)) {
        latency = LatencyClass::Param;
    }
    // IEEE-rounded divide, reciprocal and square root are instruction sequences in SASS.
    if latency == LatencyClass::Special
        && matches!(opc, "div" | "rcp" | "sqrt")
        && !i.has("approx")
        && !i.has("full")
        && (ty.bits == 64 || ["rn", "rz", "rm", "rp"].iter().any(|m| i.has(m)))
    {
        latency = if ty.bits == 64 {
            LatencyClass::Fp64Sequence
        } else if opc == "div" {
            LatencyClass::Fp32Divide
        } else {
            LatencyClass::Fp32Sequence
        };
    }
    // A left shift by a constant is scaled-index arithmetic: ptxas folds it with the add that
    // uses it into one ISCADD (2.x-6.x) or LEA (7.x and later), an add-rate instruction (seen
    // in the sm_35 and sm_52 SASS of the project's build of the Amaris et al. dotProd kernel).
    if latency == LatencyClass::Shift && op == OpK::Shl && matches!(srcs.get(1), Some(Src::Imm(_)))
    {
        latency = LatencyClass::Int;
    }
    // A constant-bank load at a fixed address is an operand of the instruction that reads it in
    // SASS (`FFMA R4, R5, c[0x3][0x10], R4`), not an instruction of its own: the convolution
    // tuning kernel's 225 filter loads (`ld.const.f32 %f, [d_filter+OFFSET]`) leave no LDC in
    // its sm_75 and sm_86 SASS. A load through a register address is an LDC and stays.
    if op == OpK::Load
        && mem.is_some_and(|m| {
            m.space == Space::Const && matches!(m.base, Src::Addr(_) | Src::Imm(_))
        })
    {
        latency = LatencyClass::Folded;
    }
    // A multiply by a power of two is a shift (SHL, or LEA/ISCADD into an add) in SASS.
    if latency == LatencyClass::IntMul
        && matches!(op, OpK::Mul | OpK::Mad)
        && srcs[..2]
            .iter()
            .any(|s| matches!(s, Src::Imm(v) if v.is_power_of_two()))
    {
        latency = LatencyClass::Int;
    }
    DInst {
        op,
        ty,
        ty_src,
        mul,
        cmp,
        combine,
        unsigned_cmp,
        round_nearest: i.has("rni") || i.has("rn"),
        dst,
        srcs,
        nsrc,
        guard,
        mem,
        target,
        class,
        latency,
        line: i.line,
        cvta_shift,
        opcode: static_opcode(opc),
    }
}

/// Counts the names an operand mentions (registers, in any position).
fn count_names<'a>(o: &'a Operand, uses: &mut HashMap<&'a str, u32>) {
    match o {
        Operand::Name(n) => *uses.entry(n.as_str()).or_default() += 1,
        Operand::Address { base, extra, .. } => {
            if let Some(b) = base {
                *uses.entry(b.as_str()).or_default() += 1;
            }
            for e in extra {
                count_names(e, uses);
            }
        }
        Operand::Vector(v) | Operand::List(v) => {
            for e in v {
                count_names(e, uses);
            }
        }
        Operand::Pair(a, b) => {
            count_names(a, uses);
            count_names(b, uses);
        }
        Operand::Not(a) => count_names(a, uses),
        _ => {}
    }
}

/// The memory operand of a load, store or atomic.
fn mem_operand(
    addr_op: Option<&Operand>,
    space: Space,
    bytes: u16,
    elem_bytes: u16,
    cache: CacheOp,
    cx: &mut Ctx,
) -> Mem {
    let (base, offset) = match addr_op {
        Some(Operand::Address { base, offset, .. }) => (
            match base {
                Some(b) => cx.src(&Operand::Name(b.clone())),
                None => Src::Imm(0),
            },
            *offset,
        ),
        _ => (Src::Unknown, 0),
    };
    Mem {
        base,
        offset,
        space,
        bytes,
        elem_bytes,
        cache,
    }
}

/// A static name for the opcodes the emulator reports (others become "other").
fn static_opcode(op: &str) -> &'static str {
    const KNOWN: &[&str] = &[
        "add", "sub", "mul", "mad", "fma", "div", "rem", "and", "or", "xor", "not", "shl", "shr",
        "neg", "abs", "min", "max", "setp", "selp", "mov", "cvt", "cvta", "ld", "st", "bra", "ret",
        "exit", "bar", "call", "brx", "atom", "red", "shfl", "vote",
    ];
    KNOWN.iter().copied().find(|k| *k == op).unwrap_or("other")
}
