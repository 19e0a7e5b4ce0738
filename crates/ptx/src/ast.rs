//! The syntax tree of a PTX module: what the parser understood, with source lines.
//!
//! Plain data only. It keeps what the analyses need (directives, functions, declarations,
//! labels, instructions with guards, modifiers and operands, `.loc` source positions) and
//! drops debug sections and initializer values. It does not check types or semantics.

use std::sync::Arc;

use serde::Serialize;

use super::classify::Class;

/// A shared, immutable string. Opcodes, modifiers and register names repeat thousands of times
/// in a module; the parser interns them so that each distinct spelling is allocated once.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(Arc<str>);

impl Sym {
    pub fn new(s: &str) -> Sym {
        Sym(Arc::from(s))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for Sym {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Sym {
    fn from(s: &str) -> Sym {
        Sym::new(s)
    }
}

impl PartialEq<str> for Sym {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Sym {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl std::fmt::Debug for Sym {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

impl std::fmt::Display for Sym {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn serialize_syms<S: serde::Serializer>(v: &Arc<[Sym]>, s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter())
}

impl Serialize for Sym {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// A parsed PTX module.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Module {
    /// `.version` as written (`"9.5"`).
    pub version: Option<String>,
    /// `.target` entries (`["sm_80"]`, possibly `"debug"`, `"texmode_independent"`).
    pub target: Vec<String>,
    /// `.address_size` (32 or 64).
    pub address_size: Option<u32>,
    /// `.file` entries: index and name.
    pub files: Vec<(u64, String)>,
    /// Module-scope variables (`.global`, `.const`, `.shared`).
    pub variables: Vec<Variable>,
    /// Kernels (`.entry`) and device functions (`.func`), in source order.
    pub functions: Vec<Function>,
    /// Module-level `.pragma` strings.
    pub pragmas: Vec<String>,
}

impl Module {
    /// The kernels (`.entry` with a body).
    pub fn entries(&self) -> impl Iterator<Item = &Function> {
        self.functions.iter().filter(|f| f.is_entry && f.has_body)
    }
}

/// `.entry` or `.func`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Function {
    pub name: String,
    pub is_entry: bool,
    /// `.visible`, `.extern`, `.weak` or empty.
    pub linkage: String,
    /// Return parameters of a `.func`.
    pub returns: Vec<Param>,
    pub params: Vec<Param>,
    /// `.maxntid`, `.reqntid`, `.minnctapersm`, `.maxnreg` and similar.
    pub performance: Performance,
    /// Register and predicate declarations (`.reg`).
    pub registers: Vec<RegisterDecl>,
    /// Variables declared in the body (`.shared`, `.local`, `.param`, `.const`).
    pub variables: Vec<Variable>,
    /// Labels, instructions and pragmas in source order (nested `{}` scopes are flattened).
    pub body: Vec<Statement>,
    /// False for a prototype (`.func f(...);`).
    pub has_body: bool,
    /// Line of the `.entry` / `.func` keyword.
    pub line: u32,
}

impl Function {
    /// The instructions of the body, in order.
    pub fn instructions(&self) -> impl Iterator<Item = &Instruction> {
        self.body.iter().filter_map(|s| match s {
            Statement::Instr(i) => Some(i),
            _ => None,
        })
    }
}

/// Performance-tuning directives of a function.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Performance {
    pub maxntid: Vec<u64>,
    pub reqntid: Vec<u64>,
    pub minnctapersm: Option<u64>,
    pub maxnreg: Option<u64>,
    /// Any other directive as written, e.g. `"noreturn"`.
    pub other: Vec<String>,
}

/// A kernel or function parameter.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Param {
    pub name: String,
    /// The element type (`u64`, `b32`, `f32`, ...).
    pub ty: String,
    /// Array length for `.param .b8 name[16]`.
    pub array: Option<u64>,
    pub align: Option<u64>,
    /// The pointee space of an OpenCL-style `.ptr .global` parameter.
    pub ptr_space: Option<String>,
    /// True for a `.reg` parameter of a `.func` (passed in registers); false for `.param`.
    pub is_reg: bool,
    /// Vector width of a `.v2` / `.v4` parameter.
    pub vector: Option<u8>,
}

/// `.reg .f32 %f<60>;` declares 60 registers `%f0`..`%f59`; `.reg .b32 %r;` declares one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegisterDecl {
    pub name: String,
    pub ty: String,
    /// `<N>`: the number of numbered registers, when given.
    pub count: Option<u64>,
    /// Vector width for `.v2` / `.v4` registers.
    pub vector: Option<u8>,
}

/// A variable in a state space.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Variable {
    /// `global`, `const`, `shared`, `local`, `param`, `tex`, ...
    pub space: String,
    pub name: String,
    pub ty: String,
    pub align: Option<u64>,
    /// Array dimensions; an empty `[]` is recorded as 0.
    pub dims: Vec<u64>,
    pub linkage: String,
    pub line: u32,
}

impl Variable {
    /// Size in bytes when the element type and dimensions are known.
    pub fn size_bytes(&self) -> Option<u64> {
        let elem = type_size_bytes(&self.ty)?;
        self.dims
            .iter()
            .try_fold(elem, |acc, d| acc.checked_mul(*d))
    }
}

/// Size in bytes of a PTX fundamental type (`b8` -> 1, `f64` -> 8, `pred` -> None).
pub fn type_size_bytes(ty: &str) -> Option<u64> {
    let bits: u64 = ty
        .trim_start_matches(|c: char| c.is_ascii_alphabetic())
        .split('x')
        .next()?
        .parse()
        .ok()?;
    let lanes: u64 = ty
        .split_once('x')
        .map_or(Some(1), |(_, n)| n.parse().ok())?;
    Some(bits.div_ceil(8) * lanes)
}

/// A body statement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Statement {
    Label { name: String, line: u32 },
    Instr(Instruction),
    Pragma { text: String, line: u32 },
}

/// A predicate guard: `@%p1` or `@!%p1`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Guard {
    pub reg: Sym,
    pub negated: bool,
}

/// A source position from `.loc file line col`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SourceLoc {
    pub file: u64,
    pub line: u64,
    pub col: u64,
}

/// One instruction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Instruction {
    pub guard: Option<Guard>,
    /// The opcode without modifiers: `ld`, `fma`, `bra`.
    pub opcode: Sym,
    /// The dotted modifiers in order, without dots: `["global", "nc", "f32"]` (shared between
    /// instructions spelled alike).
    #[serde(serialize_with = "serialize_syms")]
    pub modifiers: Arc<[Sym]>,
    /// The instruction class (from `classify`'s table), decided once at parse time.
    pub class: Class,
    pub operands: Vec<Operand>,
    /// Position in the PTX text.
    pub line: u32,
    pub col: u32,
    /// The most recent `.loc` before the instruction, if any.
    pub loc: Option<SourceLoc>,
}

impl Instruction {
    /// Whether a modifier is present.
    pub fn has(&self, modifier: &str) -> bool {
        self.modifiers.iter().any(|m| m == modifier)
    }
}

/// An operand.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Operand {
    /// A register, special register, label, variable or function name.
    Name(Sym),
    /// An integer immediate (negative values are stored as such).
    Int(i64),
    /// A floating-point immediate.
    Float(f64),
    /// `[base+offset]`; `base` is None for `[1024]`. Other parts (texture coordinates, complex
    /// expressions) go to `extra`.
    Address {
        base: Option<Sym>,
        offset: i64,
        extra: Vec<Operand>,
    },
    /// `{a, b, c, d}`.
    Vector(Vec<Operand>),
    /// A parenthesized list, as in `call (retval0), f, (param0, param1);`.
    List(Vec<Operand>),
    /// `%r1|%p1` (a value and a predicate written by one instruction).
    Pair(Box<Operand>, Box<Operand>),
    /// `!%p1`.
    Not(Box<Operand>),
    /// `_` (a discarded result).
    Sink,
    /// Anything else, as text (`a+4` outside brackets, `-x`).
    Expr(String),
}

impl Operand {
    /// The name if the operand is a plain name.
    pub fn name(&self) -> Option<&str> {
        match self {
            Operand::Name(n) => Some(n.as_str()),
            _ => None,
        }
    }
}
