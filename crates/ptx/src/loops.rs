//! Natural loops of a control-flow graph, their nesting, and trip counts where derivable.
//!
//! A back edge is an edge `latch -> header` whose header dominates the latch; the loop is the
//! header plus every block that reaches the latch without passing the header; loops sharing a
//! header are merged. Trip counts: the loop's single exit test `setp` is matched against an
//! induction variable (one `add`/`sub` of a constant per iteration); its start and bound are traced
//! through `mov`/`cvt`/`add`/`mul`/`shl`/`ld.param` to constants, kernel parameters or special
//! registers. The result is a number, an expression in those names, or unknown. What is NOT done:
//! loops with several exits, non-constant steps, bounds that depend on outer loop variables or on
//! memory, and irreducible control flow (such cycles are not natural loops and are not reported).

use std::collections::BTreeMap;

use serde::Serialize;

use super::ast::{Instruction, Operand};
use super::cfg::{branch_target, Cfg};

/// How many times a loop header runs each time the loop is entered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum TripCount {
    Known(u64),
    /// An expression in kernel-parameter names (`ld.param` symbols) and special registers
    /// (`ntid_x`, ...), e.g. `mtx_mul_vec_param_0`.
    Expr(String),
    Unknown,
}

/// One natural loop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Loop {
    pub header: usize,
    /// Blocks of the loop (including the header and nested loops), sorted.
    pub blocks: Vec<usize>,
    /// `(latch, header)` edges.
    pub back_edges: Vec<(usize, usize)>,
    /// Index of the innermost enclosing loop.
    pub parent: Option<usize>,
    /// 1 for an outermost loop.
    pub depth: u32,
    /// PTX line of the header block.
    pub header_line: u32,
    pub trip_count: TripCount,
}

/// Finds the natural loops of a graph (outer loops before inner ones) and their trip counts.
pub fn find_loops(cfg: &Cfg) -> Vec<Loop> {
    let n = cfg.blocks.len();
    let mut by_header: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (b, blk) in cfg.blocks.iter().enumerate() {
        if cfg.idom[b].is_none() {
            continue;
        }
        for &s in &blk.succs {
            if cfg.dominates(s, b) {
                by_header.entry(s).or_default().push(b);
            }
        }
    }
    let mut loops: Vec<Loop> = Vec::new();
    // One marker array for all loops: a block is in the current loop when its mark equals the
    // loop's stamp (no per-loop allocation of the block count).
    let mut mark = vec![usize::MAX; n];
    for (stamp, (header, latches)) in by_header.into_iter().enumerate() {
        mark[header] = stamp;
        let mut blocks = vec![header];
        let mut stack: Vec<usize> = Vec::new();
        for &l in &latches {
            if mark[l] != stamp {
                mark[l] = stamp;
                blocks.push(l);
                stack.push(l);
            }
        }
        while let Some(x) = stack.pop() {
            for &p in &cfg.blocks[x].preds {
                if mark[p] != stamp && cfg.idom[p].is_some() {
                    mark[p] = stamp;
                    blocks.push(p);
                    stack.push(p);
                }
            }
        }
        blocks.sort_unstable();
        loops.push(Loop {
            header,
            back_edges: latches.iter().map(|&l| (l, header)).collect(),
            blocks,
            parent: None,
            depth: 1,
            header_line: cfg.blocks[header].line,
            trip_count: TripCount::Unknown,
        });
    }
    // Outer loops first (bigger first), so parents precede children. Natural loops with
    // distinct headers are nested or disjoint, so the innermost loop seen so far that holds a
    // header is its parent.
    loops.sort_by(|a, b| {
        b.blocks
            .len()
            .cmp(&a.blocks.len())
            .then(a.header.cmp(&b.header))
    });
    let mut innermost: Vec<Option<usize>> = vec![None; n];
    for i in 0..loops.len() {
        let parent = innermost[loops[i].header];
        loops[i].parent = parent;
        loops[i].depth = parent.map_or(1, |p| loops[p].depth + 1);
        for k in 0..loops[i].blocks.len() {
            let b = loops[i].blocks[k];
            innermost[b] = Some(i);
        }
    }
    let counts: Vec<TripCount> = loops.iter().map(|l| trip_count(cfg, l)).collect();
    for (l, t) in loops.iter_mut().zip(counts) {
        l.trip_count = t;
    }
    loops
}

/// A linear expression: constant plus integer multiples of named values.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lin {
    pub constant: i64,
    pub terms: BTreeMap<String, i64>,
}

impl Lin {
    fn constant(c: i64) -> Lin {
        Lin {
            constant: c,
            terms: BTreeMap::new(),
        }
    }
    fn name(n: &str) -> Lin {
        let mut t = BTreeMap::new();
        t.insert(n.to_string(), 1);
        Lin {
            constant: 0,
            terms: t,
        }
    }
    fn as_const(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }
    fn add(&self, o: &Lin, sign: i64) -> Option<Lin> {
        let mut r = self.clone();
        r.constant = r.constant.checked_add(o.constant.checked_mul(sign)?)?;
        for (k, v) in &o.terms {
            let e = r.terms.entry(k.clone()).or_insert(0);
            *e = e.checked_add(v.checked_mul(sign)?)?;
        }
        r.terms.retain(|_, v| *v != 0);
        Some(r)
    }
    fn scale(&self, k: i64) -> Option<Lin> {
        let mut r = Lin::constant(self.constant.checked_mul(k)?);
        for (n, v) in &self.terms {
            let s = v.checked_mul(k)?;
            if s != 0 {
                r.terms.insert(n.clone(), s);
            }
        }
        Some(r)
    }
    fn mul(&self, o: &Lin) -> Option<Lin> {
        if let Some(c) = o.as_const() {
            return self.scale(c);
        }
        if let Some(c) = self.as_const() {
            return o.scale(c);
        }
        // A product of two single names becomes one named term.
        if self.constant == 0 && o.constant == 0 && self.terms.len() == 1 && o.terms.len() == 1 {
            let (a, ka) = self.terms.iter().next()?;
            let (b, kb) = o.terms.iter().next()?;
            let mut t = BTreeMap::new();
            t.insert(format!("{a}*{b}"), ka.checked_mul(*kb)?);
            return Some(Lin {
                constant: 0,
                terms: t,
            });
        }
        None
    }
}

impl std::fmt::Display for Lin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut first = true;
        for (n, k) in &self.terms {
            let (sign, mag) = if *k < 0 {
                ("-", k.unsigned_abs())
            } else {
                ("+", k.unsigned_abs())
            };
            if first {
                if sign == "-" {
                    write!(f, "-")?;
                }
            } else {
                write!(f, " {sign} ")?;
            }
            if mag == 1 {
                write!(f, "{n}")?;
            } else {
                write!(f, "{mag}*{n}")?;
            }
            first = false;
        }
        if first {
            write!(f, "{}", self.constant)
        } else if self.constant > 0 {
            write!(f, " + {}", self.constant)
        } else if self.constant < 0 {
            write!(f, " - {}", -(self.constant as i128))
        } else {
            Ok(())
        }
    }
}

pub use super::cfg::dest;

const MAX_TRACE_DEPTH: u32 = 24;

/// Finds the instruction that defines `reg` before instruction `at`: the latest definition
/// earlier in the same block, else the one in the nearest strictly dominating block.
fn reaching_def(cfg: &Cfg, reg: &str, at: usize) -> Option<usize> {
    let b = *cfg.block_of.get(at)?;
    reaching_def_in(cfg, reg, b, at)
}

/// Like [`reaching_def`], for the point just before instruction index `end` of block `b`
/// (`end` may be the block's end).
fn reaching_def_in(cfg: &Cfg, reg: &str, b: usize, end: usize) -> Option<usize> {
    let mut best: Option<usize> = None;
    for &k in cfg.defs_of(reg) {
        let kb = cfg.block_of[k];
        let visible = if kb == b {
            k < end
        } else {
            cfg.dominates(kb, b)
        };
        if !visible {
            continue;
        }
        // Among visible definitions, a later one in a dominated block wins.
        best = match best {
            None => Some(k),
            Some(o) => {
                let ob = cfg.block_of[o];
                if ob == kb {
                    Some(o.max(k))
                } else if cfg.dominates(ob, kb) {
                    Some(k)
                } else {
                    Some(o)
                }
            }
        };
    }
    best
}

/// The definitions of `reg` inside the loop.
fn loop_defs(cfg: &Cfg, lp: &Loop, reg: &str) -> Vec<usize> {
    cfg.defs_of(reg)
        .iter()
        .copied()
        .filter(|&k| in_loop(lp, cfg.block_of[k]))
        .collect()
}

/// How an induction variable changes once per iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Add(i64),
    /// `v >> k`, `v << k`, `v / c`, `v * c` (only evaluated with constant start and bound).
    Shr(u32),
    Shl(u32),
    Div(i64),
    Mul(i64),
}

impl Step {
    fn apply(self, v: i64) -> Option<i64> {
        match self {
            Step::Add(c) => v.checked_add(c),
            Step::Shr(k) => Some(v >> k.min(63)),
            Step::Shl(k) => v.checked_shl(k).filter(|r| r >> k == v),
            Step::Div(c) => v.checked_div(c),
            Step::Mul(c) => v.checked_mul(c),
        }
    }
}

/// The in-loop update of `reg` if it is an induction variable: one update by a constant, either
/// directly (`add r, r, 1`) or through a temporary (`add t, r, 1; ... mov r, t`). The index is
/// that of the instruction that writes `reg`.
fn induction_def(cfg: &Cfg, lp: &Loop, reg: &str) -> Option<(usize, Step)> {
    let defs = loop_defs(cfg, lp, reg);
    if defs.len() != 1 {
        return None;
    }
    let i = cfg.instrs[defs[0]];
    if let Some(step) = induction_step(i, reg) {
        return Some((defs[0], step));
    }
    if i.opcode == "mov" && i.operands.len() == 2 {
        let t = i.operands[1].name()?;
        let tdefs = loop_defs(cfg, lp, t);
        if tdefs.len() == 1 {
            if let Some(step) = induction_step(cfg.instrs[tdefs[0]], reg) {
                return Some((defs[0], step));
            }
        }
    }
    None
}

fn special_name(n: &str) -> Option<String> {
    let s = n.strip_prefix('%')?;
    if s.contains('.')
        || matches!(
            s,
            "laneid" | "warpid" | "nwarpid" | "smid" | "nsmid" | "gridid"
        )
    {
        Some(s.replace('.', "_"))
    } else {
        None
    }
}

/// The value of an operand used by instruction `at`, as a linear expression.
fn value_of(cfg: &Cfg, op: &Operand, at: usize, depth: u32) -> Option<Lin> {
    if depth > MAX_TRACE_DEPTH {
        return None;
    }
    match op {
        Operand::Int(v) => Some(Lin::constant(*v)),
        Operand::Name(n) => {
            if let Some(s) = special_name(n) {
                return Some(Lin::name(&s));
            }
            let d = reaching_def(cfg, n, at)?;
            value_of_def(cfg, d, depth + 1)
        }
        _ => None,
    }
}

/// The value written by instruction `d`.
fn value_of_def(cfg: &Cfg, d: usize, depth: u32) -> Option<Lin> {
    let i = cfg.instrs[d];
    let ops = &i.operands;
    let v = |k: usize| -> Option<Lin> { value_of(cfg, ops.get(k)?, d, depth) };
    match i.opcode.as_str() {
        "mov" | "cvt" => v(1),
        "ld" if i.has("param") => match ops.get(1)? {
            Operand::Address {
                base: Some(b),
                offset: 0,
                extra,
            } if extra.is_empty() => Some(Lin::name(b)),
            _ => None,
        },
        "add" if !is_float(i) => v(1)?.add(&v(2)?, 1),
        "sub" if !is_float(i) => v(1)?.add(&v(2)?, -1),
        "neg" if !is_float(i) => v(1)?.scale(-1),
        // Two's complement: !x == -x - 1.
        "not" if !i.has("pred") => v(1)?.scale(-1)?.add(&Lin::constant(-1), 1),
        "mul" if !is_float(i) && !i.has("hi") => v(1)?.mul(&v(2)?),
        "mad" if !is_float(i) && !i.has("hi") => v(1)?.mul(&v(2)?)?.add(&v(3)?, 1),
        "shl" => {
            let k = v(2)?.as_const()?;
            if (0..62).contains(&k) {
                v(1)?.scale(1 << k)
            } else {
                None
            }
        }
        _ => None,
    }
}

fn is_float(i: &Instruction) -> bool {
    i.modifiers
        .iter()
        .any(|m| m.starts_with('f') || m.starts_with("bf"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl Cmp {
    fn parse(m: &str) -> Option<Cmp> {
        Some(match m {
            "lt" | "lo" => Cmp::Lt,
            "le" | "ls" => Cmp::Le,
            "gt" | "hi" => Cmp::Gt,
            "ge" | "hs" => Cmp::Ge,
            "eq" => Cmp::Eq,
            "ne" => Cmp::Ne,
            _ => return None,
        })
    }
    fn negate(self) -> Cmp {
        match self {
            Cmp::Lt => Cmp::Ge,
            Cmp::Le => Cmp::Gt,
            Cmp::Gt => Cmp::Le,
            Cmp::Ge => Cmp::Lt,
            Cmp::Eq => Cmp::Ne,
            Cmp::Ne => Cmp::Eq,
        }
    }
    /// `a op b` == `b mirror(op) a`.
    fn mirror(self) -> Cmp {
        match self {
            Cmp::Lt => Cmp::Gt,
            Cmp::Le => Cmp::Ge,
            Cmp::Gt => Cmp::Lt,
            Cmp::Ge => Cmp::Le,
            c => c,
        }
    }
}

/// An operand of the exit test seen as `iv + offset` (iv an induction register) or invariant.
enum Side {
    Affine { iv: String, offset: Lin },
    Invariant(Lin),
}

fn trip_count(cfg: &Cfg, lp: &Loop) -> TripCount {
    trip_count_inner(cfg, lp).unwrap_or(TripCount::Unknown)
}

fn in_loop(lp: &Loop, b: usize) -> bool {
    lp.blocks.binary_search(&b).is_ok()
}

fn trip_count_inner(cfg: &Cfg, lp: &Loop) -> Option<TripCount> {
    // The single exiting block and its conditional branch.
    let exiting: Vec<usize> = lp
        .blocks
        .iter()
        .copied()
        .filter(|&b| cfg.blocks[b].succs.iter().any(|&s| !in_loop(lp, s)))
        .collect();
    if exiting.len() != 1 {
        return None;
    }
    let eb = exiting[0];
    let blk = &cfg.blocks[eb];
    if blk.end == blk.start {
        return None;
    }
    let br_idx = blk.end - 1;
    let br = cfg.instrs[br_idx];
    let guard = br.guard.as_ref()?;
    let target = branch_target(br)?;
    let target_in_loop = cfg.labels.get(target).is_some_and(|&b| in_loop(lp, b));
    // The loop continues when the guard holds iff the branch target is inside the loop.
    let continue_when_true = target_in_loop != guard.negated;
    // The compare that sets the predicate, inside the loop.
    let setp_idx = reaching_def(cfg, &guard.reg, br_idx)?;
    if !in_loop(lp, cfg.block_of[setp_idx]) {
        return None;
    }
    let setp = cfg.instrs[setp_idx];
    if setp.opcode != "setp" || setp.operands.len() != 3 {
        return None;
    }
    let mut cmp = setp.modifiers.first().and_then(|m| Cmp::parse(m))?;
    if setp
        .modifiers
        .iter()
        .any(|m| matches!(m.as_str(), "and" | "or" | "xor"))
    {
        return None;
    }
    if !continue_when_true {
        cmp = cmp.negate();
    }
    let a = side(cfg, lp, &setp.operands[1], setp_idx)?;
    let b = side(cfg, lp, &setp.operands[2], setp_idx)?;
    let (iv, offset, bound) = match (a, b) {
        (Side::Affine { iv, offset }, Side::Invariant(bound)) => (iv, offset, bound),
        (Side::Invariant(bound), Side::Affine { iv, offset }) => {
            cmp = cmp.mirror();
            (iv, offset, bound)
        }
        _ => return None,
    };
    // The induction variable: one update `iv = iv +/- step` in the loop.
    let (inc_idx, step) = induction_def(cfg, lp, &iv)?;
    // Whether the update precedes the test within one iteration (iterations start at the
    // header, so this holds when the update's block dominates the test's block).
    let (ib, sb) = (cfg.block_of[inc_idx], cfg.block_of[setp_idx]);
    let post = if ib == sb {
        inc_idx < setp_idx
    } else {
        cfg.dominates(ib, sb)
    };
    // Start value: the definition of iv that reaches the header from its one outside predecessor.
    let outside_preds: Vec<usize> = cfg.blocks[lp.header]
        .preds
        .iter()
        .copied()
        .filter(|&p| !in_loop(lp, p))
        .collect();
    if outside_preds.len() != 1 {
        return None;
    }
    let pre = outside_preds[0];
    let init_def = reaching_def_in(cfg, &iv, pre, cfg.blocks[pre].end)?;
    let init = value_of_def(cfg, init_def, 0)?;
    match step {
        Step::Add(0) => None,
        Step::Add(step) => {
            // Compared value at test j (0-based): a + j*step, with a = init + offset + post*step.
            let mut a = init.add(&offset, 1)?;
            if post {
                a = a.add(&Lin::constant(step), 1)?;
            }
            count_tests(cmp, &a, step, &bound)
        }
        _ => simulate_tests(
            cmp,
            init.as_const()?,
            offset.as_const()?,
            post,
            step,
            bound.as_const()?,
        ),
    }
}

/// Most tests simulated for a non-additive induction variable.
const MAX_SIMULATED_TESTS: u64 = 1 << 16;

/// Header executions for a constant start and bound, by running the update: the value tested
/// at test j is `f^(j + post)(init) + offset`.
fn simulate_tests(
    cmp: Cmp,
    init: i64,
    offset: i64,
    post: bool,
    step: Step,
    bound: i64,
) -> Option<TripCount> {
    let mut v = if post { step.apply(init)? } else { init };
    for j in 0..MAX_SIMULATED_TESTS {
        let x = v.checked_add(offset)?;
        let holds = match cmp {
            Cmp::Lt => x < bound,
            Cmp::Le => x <= bound,
            Cmp::Gt => x > bound,
            Cmp::Ge => x >= bound,
            Cmp::Eq => x == bound,
            Cmp::Ne => x != bound,
        };
        if !holds {
            return Some(TripCount::Known(j + 1));
        }
        v = step.apply(v)?;
    }
    None
}

/// Number of header executions T = J + 1, where J is the number of tests `a + j*step CMP bound`
/// (j = 0, 1, ...) that hold before the first that fails.
fn count_tests(cmp: Cmp, a: &Lin, step: i64, bound: &Lin) -> Option<TripCount> {
    // Work with the distance d = bound - a (for increasing loops) or a - bound (decreasing).
    // |step| as i64 (None for i64::MIN, whose magnitude does not fit).
    let s = step.checked_abs()?;
    let (dist, inclusive) = match (cmp, step > 0) {
        (Cmp::Lt, true) => (bound.add(a, -1)?, false),
        (Cmp::Le, true) => (bound.add(a, -1)?, true),
        (Cmp::Gt, false) => (a.add(bound, -1)?, false),
        (Cmp::Ge, false) => (a.add(bound, -1)?, true),
        (Cmp::Ne, true) => (bound.add(a, -1)?, false),
        (Cmp::Ne, false) => (a.add(bound, -1)?, false),
        (Cmp::Eq, _) => {
            let d = bound.add(a, -1)?.as_const()?;
            return Some(TripCount::Known(if d == 0 { 2 } else { 1 }));
        }
        _ => return None,
    };
    let exact = cmp == Cmp::Ne;
    if let Some(d) = dist.as_const() {
        let j = if exact {
            if d < 0 || d % s != 0 {
                return None;
            }
            d / s
        } else if inclusive {
            if d < 0 {
                0
            } else {
                d / s + 1
            }
        } else if d <= 0 {
            0
        } else {
            d.checked_add(s - 1)? / s
        };
        return Some(TripCount::Known(u64::try_from(j).ok()? + 1));
    }
    // Symbolic: assume the loop is entered (compilers guard rotated loops).
    let expr = if s == 1 {
        let j = if inclusive {
            dist.add(&Lin::constant(1), 1)?
        } else {
            dist
        };
        j.add(&Lin::constant(1), 1)?.to_string()
    } else if exact {
        format!("({dist}) / {s} + 1")
    } else if inclusive {
        format!("({dist}) / {s} + 2")
    } else {
        let num = dist.add(&Lin::constant(s - 1), 1)?;
        format!("({num}) / {s} + 1")
    };
    Some(TripCount::Expr(expr))
}

/// The update if `i` computes `iv + c`, `c + iv`, `iv - c`, `iv >> k`, `iv << k`, `iv / c` or
/// `iv * c` from `iv` (the result may go to another register).
fn induction_step(i: &Instruction, iv: &str) -> Option<Step> {
    if is_float(i) || i.operands.len() != 3 {
        return None;
    }
    let (x, y) = (&i.operands[1], &i.operands[2]);
    let on_iv = x.name() == Some(iv);
    match (i.opcode.as_str(), x, y) {
        ("add", _, Operand::Int(c)) if on_iv => Some(Step::Add(*c)),
        ("add", Operand::Int(c), Operand::Name(n)) if n == iv => Some(Step::Add(*c)),
        ("sub", _, Operand::Int(c)) if on_iv => c.checked_neg().map(Step::Add),
        ("shr", _, Operand::Int(k)) if on_iv => u32::try_from(*k).ok().map(Step::Shr),
        ("shl", _, Operand::Int(k)) if on_iv => u32::try_from(*k).ok().map(Step::Shl),
        ("div", _, Operand::Int(c)) if on_iv && *c > 1 => Some(Step::Div(*c)),
        ("mul", _, Operand::Int(c)) if on_iv && *c > 1 && i.has("lo") => Some(Step::Mul(*c)),
        _ => None,
    }
}

/// Classifies an exit-test operand as `iv + offset` or loop-invariant.
fn side(cfg: &Cfg, lp: &Loop, op: &Operand, at: usize) -> Option<Side> {
    let n = match op {
        Operand::Int(v) => return Some(Side::Invariant(Lin::constant(*v))),
        Operand::Name(n) => n,
        _ => return None,
    };
    if let Some(s) = special_name(n) {
        return Some(Side::Invariant(Lin::name(&s)));
    }
    if induction_def(cfg, lp, n).is_some() {
        return Some(Side::Affine {
            iv: n.to_string(),
            offset: Lin::default(),
        });
    }
    let defs = loop_defs(cfg, lp, n);
    if defs.is_empty() {
        let d = reaching_def(cfg, n, at)?;
        return Some(Side::Invariant(value_of_def(cfg, d, 0)?));
    }
    if defs.len() != 1 {
        return None;
    }
    let d = defs[0];
    let i = cfg.instrs[d];
    // Computed in the loop from values that do not change in it (not hoisted by the compiler).
    let invariant = i.operands.iter().skip(1).all(|o| {
        o.name()
            .is_none_or(|r| special_name(r).is_some() || loop_defs(cfg, lp, r).is_empty())
    });
    if invariant {
        return Some(Side::Invariant(value_of_def(cfg, d, 0)?));
    }
    // `t = iv + invariant` (either order) or `t = iv - invariant`.
    if !(i.opcode == "add" || i.opcode == "sub") || is_float(i) || i.operands.len() != 3 {
        return None;
    }
    for (k, other) in [(1usize, 2usize), (2, 1)] {
        if i.opcode == "sub" && k == 2 {
            continue;
        }
        let Some(cand) = i.operands[k].name() else {
            continue;
        };
        if induction_def(cfg, lp, cand).is_none() {
            continue;
        }
        let inv = match &i.operands[other] {
            Operand::Int(v) => Lin::constant(*v),
            o => {
                let name = o.name()?;
                if !loop_defs(cfg, lp, name).is_empty() {
                    return None;
                }
                let od = reaching_def(cfg, name, d)?;
                value_of_def(cfg, od, 0)?
            }
        };
        let offset = if i.opcode == "sub" {
            inv.scale(-1)?
        } else {
            inv
        };
        return Some(Side::Affine {
            iv: cand.to_string(),
            offset,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Diagnostics;
    use crate::parser::parse;

    fn loops_of(src: &str) -> Vec<Loop> {
        let (m, d) = parse(src);
        assert!(!d.has_errors(), "{:?}", d);
        let mut diags = Diagnostics::default();
        let g = Cfg::build(&m.functions[0], &mut diags);
        find_loops(&g)
    }

    #[test]
    fn rotated_loop_with_parameter_bound() {
        // for (i = 0; i < n; ++i) as nvcc rotates it: guard, then body, i += 1, test at the end.
        // The header runs n times: test j sees i = j + 1, continues while j + 1 < n.
        let l = loops_of(
            "
.entry k(.param .u32 k_n)
{
	ld.param.u32 %r1, [k_n];
	setp.lt.s32 %p1, %r1, 1;
	@%p1 bra DONE;
	mov.u32 %r2, 0;
LOOP:
	add.s32 %r2, %r2, 1;
	setp.lt.s32 %p2, %r2, %r1;
	@%p2 bra LOOP;
DONE:
	ret;
}",
        );
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].depth, 1);
        assert_eq!(l[0].trip_count, TripCount::Expr("k_n".into()));
    }

    #[test]
    fn constant_nested_loops() {
        // Outer: s = 128; s > 0; s >>= ... is not affine, so use a count-down by 32 from 256
        // (tests see 224, 192, ..., 0: continue while > 0 -> 7 continues, 8 header runs).
        // Inner: j from 0 step 4 while j != 16 before the update (top-tested): tests see
        // 0, 4, 8, 12 (continue) and 16 (exit) -> 5 header runs.
        let l = loops_of(
            "
.entry k()
{
	mov.u32 %r1, 256;
OUTER:
	mov.u32 %r2, 0;
INNER:
	setp.eq.s32 %p1, %r2, 16;
	@%p1 bra NEXT;
	add.s32 %r2, %r2, 4;
	bra.uni INNER;
NEXT:
	sub.s32 %r1, %r1, 32;
	setp.gt.s32 %p2, %r1, 0;
	@%p2 bra OUTER;
	ret;
}",
        );
        assert_eq!(l.len(), 2);
        assert_eq!((l[0].depth, l[1].depth), (1, 2));
        assert_eq!(l[1].parent, Some(0));
        assert_eq!(l[0].trip_count, TripCount::Known(8));
        assert_eq!(l[1].trip_count, TripCount::Known(5));
    }

    #[test]
    fn data_dependent_loop_is_unknown() {
        let l = loops_of(
            "
.entry k(.param .u64 p)
{
	ld.param.u64 %rd1, [p];
L:
	ld.global.u32 %r1, [%rd1];
	setp.ne.s32 %p1, %r1, 0;
	@%p1 bra L;
	ret;
}",
        );
        assert_eq!(l[0].trip_count, TripCount::Unknown);
    }

    #[test]
    fn extreme_constants_do_not_overflow() {
        for (start, step, bound) in [
            (
                "-9223372036854775808",
                "9223372036854775807",
                "9223372036854775807",
            ),
            ("0", "-9223372036854775808", "-5"),
            ("9223372036854775807", "1", "-9223372036854775808"),
        ] {
            let src = format!(
                ".entry k(.param .u32 n)\n{{\n mov.u64 %r1, {start};\nL:\n add.s64 %r1, %r1, {step};\n setp.lt.s64 %p1, %r1, {bound};\n @%p1 bra L;\n ret;\n}}"
            );
            let (m, _) = parse(&src);
            let mut diags = Diagnostics::default();
            let g = Cfg::build(&m.functions[0], &mut diags);
            let l = find_loops(&g);
            assert_eq!(l.len(), 1);
        }
        // A symbolic bound with a coefficient of i64::MIN prints without overflow.
        let mut t = BTreeMap::new();
        t.insert("n".to_string(), i64::MIN);
        let lin = Lin {
            constant: i64::MIN,
            terms: t,
        };
        assert_eq!(
            lin.to_string(),
            "-9223372036854775808*n - 9223372036854775808"
        );
    }
}
