//! Decoding a PTX function once into a compact form the warp emulator runs fast: register names
//! become indices, operands become sources, types become widths, branch targets become blocks.
//!
//! Nothing is executed here. Operands the emulator cannot evaluate become `Src::Unknown`, so an
//! instruction we do not understand still issues and yields unknown values.

use std::collections::HashMap;

use crate::workload::trace::{CacheOp, LatencyClass};
use kerneltime_ptx::ast::{Function, Instruction, Module, Operand};
use kerneltime_ptx::cfg::Cfg;
use kerneltime_ptx::classify::{Class, Space};

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
    /// Branch target block.
    pub target: Option<usize>,
    pub class: Class,
    pub latency: LatencyClass,
    pub line: u32,
    /// `cvta.to.shared` (-1), `cvta.shared` (+1) window shifts, by space.
    pub cvta_shift: i64,
    pub opcode: &'static str,
}

/// Base of the generic window that maps shared memory (so generic addresses can be told apart).
pub const SHARED_WINDOW: u64 = 0x7f00_0000_0000;
/// Base of the generic window for local memory.
pub const LOCAL_WINDOW: u64 = 0x7e00_0000_0000;
/// Distance between synthetic global allocations (64 GiB): pointer k gets `(k + 1) << 36`.
pub const GLOBAL_STRIDE_SHIFT: u32 = 36;

/// A decoded function.
#[derive(Debug, Clone)]
pub struct Decoded {
    pub insts: Vec<DInst>,
    pub reg_count: usize,
    /// Shared bytes laid out by the decoder (static declarations).
    pub shared_bytes: u64,
    /// Opcodes decoded as opaque (issued, unknown result), with a line.
    pub opaque: Vec<(String, u32)>,
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

struct Ctx<'a> {
    regs: HashMap<String, u16>,
    symbols: HashMap<&'a str, u64>,
    params: HashMap<&'a str, u16>,
}

impl Ctx<'_> {
    fn reg(&mut self, name: &str) -> u16 {
        let n = self.regs.len() as u16;
        *self.regs.entry(name.to_string()).or_insert(n)
    }

    fn src(&mut self, o: &Operand) -> Src {
        match o {
            Operand::Int(v) => Src::Imm(*v as u64),
            Operand::Float(f) => Src::FImm(f.to_bits()),
            Operand::Name(n) => {
                let n = n.as_str();
                if let Some(s) = special(n) {
                    Src::Special(s)
                } else if let Some(&a) = self.symbols.get(n) {
                    Src::Addr(a)
                } else if let Some(&p) = self.params.get(n) {
                    Src::Param(p)
                } else if n.starts_with('%') {
                    Src::Reg(self.reg(n))
                } else {
                    Src::Unknown
                }
            }
            _ => Src::Unknown,
        }
    }

    fn dst(&mut self, o: &Operand, out: &mut [Option<u16>; 4]) {
        match o {
            Operand::Name(n) if n.starts_with('%') && special(n).is_none() => {
                out[0] = Some(self.reg(n));
            }
            Operand::Pair(a, b) => {
                if let Some(n) = a.name() {
                    out[0] = Some(self.reg(n));
                }
                if let Some(n) = b.name() {
                    out[1] = Some(self.reg(n));
                }
            }
            Operand::Vector(v) => {
                for (k, e) in v.iter().take(4).enumerate() {
                    if let Some(n) = e.name() {
                        if n.starts_with('%') {
                            out[k] = Some(self.reg(n));
                        }
                    }
                }
            }
            _ => {}
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

/// Lays out the module's and function's variables in synthetic spaces: shared from offset 0,
/// module globals after the pointer parameters' allocations, the local depot from offset 0 of
/// the local space.
fn symbol_table<'a>(m: &'a Module, f: &'a Function) -> (HashMap<&'a str, u64>, u64) {
    let mut symbols = HashMap::new();
    let mut shared = 0u64;
    let mut global = (u64::from(f.params.len() as u32) + 2) << GLOBAL_STRIDE_SHIFT;
    // Local symbols are local-space offsets (from 0); `cvta.local` moves them into the generic
    // window, as `cvta.shared` does for shared ones.
    let mut local = 0u64;
    for v in m.variables.iter().chain(f.variables.iter()) {
        let align = v.align.unwrap_or(16).clamp(1, 4096);
        let size = v.size_bytes().unwrap_or(0).min(1 << 32);
        let slot = match v.space.as_str() {
            "shared" => &mut shared,
            "global" | "const" => &mut global,
            "local" => &mut local,
            _ => continue,
        };
        *slot = slot.div_ceil(align) * align;
        symbols.insert(v.name.as_str(), *slot);
        *slot += size.max(if v.space == "shared" { 0 } else { 256 });
    }
    // `__local_depotN` arrays are declared as `.local` variables and caught above.
    (symbols, shared)
}

/// Decodes a function of a module.
pub fn decode(m: &Module, f: &Function, cfg: &Cfg) -> Decoded {
    let (symbols, shared_bytes) = symbol_table(m, f);
    let params = f
        .params
        .iter()
        .enumerate()
        .map(|(k, p)| (p.name.as_str(), k as u16))
        .collect();
    let mut cx = Ctx {
        regs: HashMap::new(),
        symbols,
        params,
    };
    let mut opaque = Vec::new();
    let mut insts = Vec::with_capacity(cfg.instrs.len());
    for i in &cfg.instrs {
        let d = decode_one(i, cfg, &mut cx);
        if d.op == OpK::Opaque && !matches!(d.class, Class::Fence | Class::Other) {
            opaque.push((i.opcode.to_string(), i.line));
        }
        insts.push(d);
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
    for (d, i) in insts.iter_mut().zip(&cfg.instrs) {
        if d.op == OpK::Atom {
            let result = i.operands.first().and_then(|o| o.name());
            if result.is_none_or(|r| uses.get(r).copied().unwrap_or(0) <= 1) {
                d.op = OpK::Red;
            }
        }
    }
    Decoded {
        insts,
        reg_count: cx.regs.len(),
        shared_bytes,
        opaque,
    }
}

fn decode_one(i: &Instruction, cfg: &Cfg, cx: &mut Ctx) -> DInst {
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
        _ => OpK::Opaque,
    };
    // Types: cvt has dst then src type; setp's last type is the compared one.
    let types: Vec<Ty> = i.modifiers.iter().filter_map(|m| Ty::parse(m)).collect();
    let (ty, ty_src) = if op == OpK::Cvt && types.len() >= 2 {
        (types[types.len() - 2], types[types.len() - 1])
    } else {
        (ty, ty)
    };
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
                // A vector store gives one source per element.
                if let Operand::Vector(els) = v {
                    for (k, e) in els.iter().take(4).enumerate() {
                        srcs[k] = cx.src(e);
                        nsrc += 1;
                    }
                } else {
                    srcs[0] = cx.src(v);
                    nsrc = 1;
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
            target = kerneltime_ptx::cfg::branch_target(i).and_then(|l| cfg.labels.get(l).copied());
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
