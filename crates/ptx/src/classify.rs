//! Instruction classes, decided by one data table: opcode -> rule, the rule looking at the
//! modifiers (type, state space) where the opcode alone is not enough.
//!
//! Classes are what the performance models count: integer / fp16 / fp32 / fp64 arithmetic, FMA
//! by precision, special functions, conversions, moves, compares and predicate logic, control
//! flow, barriers, atomics, warp collectives, memory by state space and direction, tensor-core
//! operations, asynchronous copies and fences. This module does not estimate latencies or
//! throughputs; it only names what an instruction is. Unknown opcodes are [`Class::Unknown`].

use serde::Serialize;

use std::collections::HashMap;

use super::ast::{Instruction, Sym};
use super::parser::BuildFx;

/// A state space of a memory instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Space {
    Global,
    Shared,
    Local,
    Const,
    Param,
    Texture,
    /// No space given: the address decides at run time.
    Generic,
}

impl Space {
    fn name(self) -> &'static str {
        match self {
            Space::Global => "global",
            Space::Shared => "shared",
            Space::Local => "local",
            Space::Const => "const",
            Space::Param => "param",
            Space::Texture => "texture",
            Space::Generic => "generic",
        }
    }
}

/// What an instruction is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Class {
    IntArith,
    Fp16Arith,
    Fp32Arith,
    Fp64Arith,
    Fma16,
    Fma32,
    Fma64,
    /// sin, cos, ex2, lg2, rsqrt, rcp, sqrt, tanh, floating-point div.
    Special,
    Convert,
    Move,
    /// setp, set, selp, slct and logic on predicates.
    Compare,
    /// bra, brx.idx, call, ret, exit.
    Branch,
    /// bar, barrier, mbarrier.
    Barrier,
    /// atom, red (and surface reductions).
    Atomic,
    /// shfl, vote, match, redux, activemask, elect.
    Warp,
    Load(Space),
    Store(Space),
    /// mma, wmma, wgmma, ldmatrix, stmatrix, movmatrix, tcgen05.
    Tensor,
    /// cp.async and its bulk / tensor forms, their commit and wait.
    AsyncCopy,
    /// membar, fence.
    Fence,
    /// Known instructions that fit nowhere else (prefetch, nanosleep, trap, ...).
    Other,
    Unknown,
}

impl Class {
    /// A stable short name used as a key in reports: `fp32`, `ld.global`, `st.shared`, ...
    pub fn name(self) -> String {
        match self {
            Class::IntArith => "int".into(),
            Class::Fp16Arith => "fp16".into(),
            Class::Fp32Arith => "fp32".into(),
            Class::Fp64Arith => "fp64".into(),
            Class::Fma16 => "fma.fp16".into(),
            Class::Fma32 => "fma.fp32".into(),
            Class::Fma64 => "fma.fp64".into(),
            Class::Special => "special".into(),
            Class::Convert => "convert".into(),
            Class::Move => "move".into(),
            Class::Compare => "compare".into(),
            Class::Branch => "branch".into(),
            Class::Barrier => "barrier".into(),
            Class::Atomic => "atomic".into(),
            Class::Warp => "warp".into(),
            Class::Load(s) => format!("ld.{}", s.name()),
            Class::Store(s) => format!("st.{}", s.name()),
            Class::Tensor => "tensor".into(),
            Class::AsyncCopy => "async_copy".into(),
            Class::Fence => "fence".into(),
            Class::Other => "other".into(),
            Class::Unknown => "unknown".into(),
        }
    }
}

/// How an opcode's class is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// Always this class.
    Fixed(Class),
    /// Arithmetic whose class follows its type modifier (integer unless a float type).
    Arith,
    /// Fused multiply-add: FMA by precision for float types, integer otherwise (`mad.lo.s32`).
    Fma,
    /// Special function unit for float types, integer arithmetic otherwise (`div.s32`).
    Sfu,
    /// Bitwise logic: compare/predicate logic on `.pred`, integer otherwise.
    Logic,
    /// Load with the space taken from the modifiers.
    Ld,
    /// Store with the space taken from the modifiers.
    St,
}

use Class as C;

/// The data table, sorted by opcode (checked by a test; looked up by binary search).
const TABLE: &[(&str, Rule)] = &[
    ("abs", Rule::Arith),
    ("activemask", Rule::Fixed(C::Warp)),
    ("add", Rule::Arith),
    ("addc", Rule::Arith),
    ("alloca", Rule::Fixed(C::Other)),
    ("and", Rule::Logic),
    ("applypriority", Rule::Fixed(C::Other)),
    ("atom", Rule::Fixed(C::Atomic)),
    ("bar", Rule::Fixed(C::Barrier)),
    ("barrier", Rule::Fixed(C::Barrier)),
    ("bfe", Rule::Arith),
    ("bfi", Rule::Arith),
    ("bfind", Rule::Arith),
    ("bmsk", Rule::Arith),
    ("bra", Rule::Fixed(C::Branch)),
    ("brev", Rule::Arith),
    ("brkpt", Rule::Fixed(C::Other)),
    ("brx", Rule::Fixed(C::Branch)),
    ("call", Rule::Fixed(C::Branch)),
    ("clusterlaunchcontrol", Rule::Fixed(C::Other)),
    ("clz", Rule::Arith),
    ("cnot", Rule::Logic),
    ("copysign", Rule::Arith),
    ("cos", Rule::Sfu),
    ("cp", Rule::Fixed(C::AsyncCopy)),
    ("createpolicy", Rule::Fixed(C::Other)),
    ("cvt", Rule::Fixed(C::Convert)),
    ("cvta", Rule::Fixed(C::Convert)),
    ("discard", Rule::Fixed(C::Other)),
    ("div", Rule::Sfu),
    ("dp2a", Rule::Arith),
    ("dp4a", Rule::Arith),
    ("elect", Rule::Fixed(C::Warp)),
    ("ex2", Rule::Sfu),
    ("exit", Rule::Fixed(C::Branch)),
    ("fence", Rule::Fixed(C::Fence)),
    ("fma", Rule::Fma),
    ("fns", Rule::Arith),
    ("getctarank", Rule::Fixed(C::Other)),
    ("griddepcontrol", Rule::Fixed(C::Other)),
    ("isspacep", Rule::Fixed(C::Other)),
    ("istypep", Rule::Fixed(C::Other)),
    ("ld", Rule::Ld),
    ("ldmatrix", Rule::Fixed(C::Tensor)),
    ("ldu", Rule::Fixed(C::Load(Space::Global))),
    ("lg2", Rule::Sfu),
    ("lop3", Rule::Arith),
    ("mad", Rule::Fma),
    ("mad24", Rule::Arith),
    ("madc", Rule::Arith),
    ("mapa", Rule::Fixed(C::Other)),
    ("match", Rule::Fixed(C::Warp)),
    ("max", Rule::Arith),
    ("mbarrier", Rule::Fixed(C::Barrier)),
    ("membar", Rule::Fixed(C::Fence)),
    ("min", Rule::Arith),
    ("mma", Rule::Fixed(C::Tensor)),
    ("mov", Rule::Fixed(C::Move)),
    ("movmatrix", Rule::Fixed(C::Tensor)),
    ("mul", Rule::Arith),
    ("mul24", Rule::Arith),
    ("multimem", Rule::Fixed(C::Other)),
    ("nanosleep", Rule::Fixed(C::Other)),
    ("neg", Rule::Arith),
    ("not", Rule::Logic),
    ("or", Rule::Logic),
    ("pmevent", Rule::Fixed(C::Other)),
    ("popc", Rule::Arith),
    ("prefetch", Rule::Fixed(C::Other)),
    ("prefetchu", Rule::Fixed(C::Other)),
    ("prmt", Rule::Arith),
    ("rcp", Rule::Sfu),
    ("red", Rule::Fixed(C::Atomic)),
    ("redux", Rule::Fixed(C::Warp)),
    ("rem", Rule::Arith),
    ("ret", Rule::Fixed(C::Branch)),
    ("rsqrt", Rule::Sfu),
    ("sad", Rule::Arith),
    ("selp", Rule::Fixed(C::Compare)),
    ("set", Rule::Fixed(C::Compare)),
    ("setmaxnreg", Rule::Fixed(C::Other)),
    ("setp", Rule::Fixed(C::Compare)),
    ("shf", Rule::Arith),
    ("shfl", Rule::Fixed(C::Warp)),
    ("shl", Rule::Arith),
    ("shr", Rule::Arith),
    ("sin", Rule::Sfu),
    ("slct", Rule::Fixed(C::Compare)),
    ("sqrt", Rule::Sfu),
    ("st", Rule::St),
    ("stackrestore", Rule::Fixed(C::Other)),
    ("stacksave", Rule::Fixed(C::Other)),
    ("stmatrix", Rule::Fixed(C::Tensor)),
    ("sub", Rule::Arith),
    ("subc", Rule::Arith),
    ("suld", Rule::Fixed(C::Load(Space::Texture))),
    ("suq", Rule::Fixed(C::Other)),
    ("sured", Rule::Fixed(C::Atomic)),
    ("sust", Rule::Fixed(C::Store(Space::Texture))),
    ("szext", Rule::Arith),
    ("tanh", Rule::Sfu),
    ("tcgen05", Rule::Fixed(C::Tensor)),
    ("testp", Rule::Fixed(C::Compare)),
    ("tex", Rule::Fixed(C::Load(Space::Texture))),
    ("tld4", Rule::Fixed(C::Load(Space::Texture))),
    ("trap", Rule::Fixed(C::Branch)),
    ("txq", Rule::Fixed(C::Other)),
    ("vote", Rule::Fixed(C::Warp)),
    ("wgmma", Rule::Fixed(C::Tensor)),
    ("wmma", Rule::Fixed(C::Tensor)),
    ("xor", Rule::Logic),
];

/// The table as a hash map, built once (lookups are on the hot path of every pass).
fn rule(opcode: &str) -> Option<Rule> {
    static MAP: std::sync::OnceLock<HashMap<&'static str, Rule, BuildFx>> =
        std::sync::OnceLock::new();
    MAP.get_or_init(|| TABLE.iter().copied().collect())
        .get(opcode)
        .copied()
}

/// Whether the opcode is in the table.
pub fn is_known_opcode(opcode: &str) -> bool {
    rule(opcode).is_some()
}

/// The precision of the last type modifier: 16, 32, 64 for floats, 0 for anything else.
fn float_bits(modifiers: &[Sym]) -> u8 {
    for m in modifiers.iter().rev() {
        let m = m.as_str();
        if matches!(
            m,
            "f16" | "bf16" | "f16x2" | "bf16x2" | "e4m3x2" | "e5m2x2" | "tf32"
        ) {
            return 16;
        }
        if m == "f32" || m == "f32x2" {
            return 32;
        }
        if m == "f64" {
            return 64;
        }
        if matches!(
            m,
            "s8" | "s16"
                | "s32"
                | "s64"
                | "u8"
                | "u16"
                | "u32"
                | "u64"
                | "b8"
                | "b16"
                | "b32"
                | "b64"
                | "pred"
        ) {
            return 0;
        }
    }
    0
}

fn space_of(modifiers: &[Sym]) -> Space {
    for m in modifiers {
        let base = m.split("::").next().unwrap_or("");
        match base {
            "global" => return Space::Global,
            "shared" => return Space::Shared,
            "local" => return Space::Local,
            "const" => return Space::Const,
            "param" => return Space::Param,
            _ => {}
        }
    }
    Space::Generic
}

/// The class of an instruction (decided by the parser with [`classify_parts`]).
pub fn classify(i: &Instruction) -> Class {
    i.class
}

/// The class from an opcode and its modifiers.
pub fn classify_parts(opcode: &str, modifiers: &[Sym]) -> Class {
    let Some(r) = rule(opcode) else {
        return Class::Unknown;
    };
    match r {
        Rule::Fixed(c) => c,
        Rule::Arith => match float_bits(modifiers) {
            16 => C::Fp16Arith,
            32 => C::Fp32Arith,
            64 => C::Fp64Arith,
            _ => C::IntArith,
        },
        Rule::Fma => match float_bits(modifiers) {
            16 => C::Fma16,
            32 => C::Fma32,
            64 => C::Fma64,
            _ => C::IntArith,
        },
        Rule::Sfu => match float_bits(modifiers) {
            0 => C::IntArith,
            _ => C::Special,
        },
        Rule::Logic => {
            if modifiers.iter().any(|m| m == "pred") {
                C::Compare
            } else {
                C::IntArith
            }
        }
        Rule::Ld => C::Load(space_of(modifiers)),
        Rule::St => C::Store(space_of(modifiers)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(op: &str, mods: &[&str]) -> Class {
        let mods: Vec<Sym> = mods.iter().map(|s| Sym::new(s)).collect();
        classify_parts(op, &mods)
    }

    #[test]
    fn table_is_sorted_and_unique() {
        for w in TABLE.windows(2) {
            assert!(w[0].0 < w[1].0, "{} before {}", w[0].0, w[1].0);
        }
    }

    #[test]
    fn classes_follow_types_and_spaces() {
        assert_eq!(c("add", &["s32"]), Class::IntArith);
        assert_eq!(c("add", &["rn", "f16x2"]), Class::Fp16Arith);
        assert_eq!(c("mul", &["f32"]), Class::Fp32Arith);
        assert_eq!(c("add", &["f64"]), Class::Fp64Arith);
        assert_eq!(c("fma", &["rn", "f32"]), Class::Fma32);
        assert_eq!(c("fma", &["rn", "f64"]), Class::Fma64);
        assert_eq!(c("mad", &["lo", "s32"]), Class::IntArith);
        assert_eq!(c("div", &["rn", "f32"]), Class::Special);
        assert_eq!(c("div", &["s32"]), Class::IntArith);
        assert_eq!(c("ex2", &["approx", "ftz", "f32"]), Class::Special);
        assert_eq!(c("cvt", &["rn", "f16", "f32"]), Class::Convert);
        assert_eq!(c("and", &["pred"]), Class::Compare);
        assert_eq!(c("and", &["b32"]), Class::IntArith);
        assert_eq!(
            c("ld", &["global", "nc", "f32"]),
            Class::Load(Space::Global)
        );
        assert_eq!(
            c("ld", &["shared", "v4", "f32"]),
            Class::Load(Space::Shared)
        );
        assert_eq!(
            c("st", &["shared::cta", "f32"]),
            Class::Store(Space::Shared)
        );
        assert_eq!(c("ld", &["param", "u64"]), Class::Load(Space::Param));
        assert_eq!(c("ld", &["f32"]), Class::Load(Space::Generic));
        assert_eq!(
            c("tex", &["2d", "v4", "f32", "f32"]),
            Class::Load(Space::Texture)
        );
        assert_eq!(
            c("cp", &["async", "ca", "shared", "global"]),
            Class::AsyncCopy
        );
        assert_eq!(c("mma", &["sync", "aligned", "m16n8k16"]), Class::Tensor);
        assert_eq!(c("shfl", &["sync", "down", "b32"]), Class::Warp);
        assert_eq!(c("bar", &["sync"]), Class::Barrier);
        assert_eq!(c("membar", &["gl"]), Class::Fence);
        assert_eq!(c("atom", &["global", "add", "u32"]), Class::Atomic);
        assert_eq!(c("bra", &["uni"]), Class::Branch);
        assert_eq!(c("frob", &[]), Class::Unknown);
        assert_eq!(Class::Load(Space::Global).name(), "ld.global");
    }
}
