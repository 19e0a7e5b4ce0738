//! One-call analysis of the kernels of a PTX module: graph, loops, counts per class and the
//! derived kernel program, as a serializable summary (what `kerneltime analyze` prints).
//!
//! It only combines the passes (parse, cfg, loops, classify, program, resources); it does no
//! reading of files and no printing.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Value};

use super::ast::{Function, Module};
use super::cfg::Cfg;
use super::classify::{classify, Class, Space};
use super::diag::{Diagnostic, Diagnostics};
use super::loops::{find_loops, TripCount};
use super::program::{derive, MemoryDurations};
use super::resources::KernelResources;
use crate::workload::program::{Op, Program, RepeatCount};

/// Static instruction counts of a kernel (every instruction once, whatever the control flow).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StaticCounts {
    pub total: u64,
    pub global_loads: u64,
    pub global_stores: u64,
    pub shared_loads: u64,
    pub shared_stores: u64,
    pub local_loads: u64,
    pub local_stores: u64,
    pub barriers: u64,
    pub branches: u64,
    pub atomics: u64,
    pub unknown: u64,
}

/// A kernel parameter as reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParamSummary {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub array: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ptr_space: Option<String>,
}

/// A loop as reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoopSummary {
    pub depth: u32,
    pub header_line: u32,
    pub header_block: usize,
    pub blocks: usize,
    pub back_edges: usize,
    /// A number, an expression string, or null.
    pub trip_count: TripCount,
}

/// The analysis of one kernel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EntryAnalysis {
    pub name: String,
    pub params: Vec<ParamSummary>,
    pub basic_blocks: usize,
    pub edges: usize,
    pub loops: Vec<LoopSummary>,
    pub static_counts: StaticCounts,
    /// Instructions per class name (`fp32`, `ld.global`, ...).
    pub classes: BTreeMap<String, u64>,
    /// Static shared memory declared in the body, bytes.
    pub shared_bytes_declared: u64,
    pub max_threads: Vec<u64>,
    pub kernel_program: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<KernelResources>,
    pub diagnostics: Vec<Diagnostic>,
    /// The program itself (not serialized; `kernel_program` is its JSON form).
    #[serde(skip)]
    pub program: Program,
}

/// Counts and classes of a function's instructions.
pub fn count(f: &Function) -> (StaticCounts, BTreeMap<String, u64>) {
    let mut c = StaticCounts::default();
    // A short list (a kernel uses a few dozen classes at most) beats a map per instruction.
    let mut classes: Vec<(Class, u64)> = Vec::new();
    for i in f.instructions() {
        let k = classify(i);
        match classes.iter_mut().find(|(c, _)| *c == k) {
            Some((_, n)) => *n += 1,
            None => classes.push((k, 1)),
        }
        c.total += 1;
        match k {
            Class::Load(Space::Global) => c.global_loads += 1,
            Class::Store(Space::Global) => c.global_stores += 1,
            Class::Load(Space::Shared) => c.shared_loads += 1,
            Class::Store(Space::Shared) => c.shared_stores += 1,
            Class::Load(Space::Local) => c.local_loads += 1,
            Class::Store(Space::Local) => c.local_stores += 1,
            Class::Barrier => c.barriers += 1,
            Class::Branch if i.opcode == "bra" || i.opcode == "brx" => c.branches += 1,
            Class::Atomic => c.atomics += 1,
            Class::Unknown => c.unknown += 1,
            _ => {}
        }
    }
    let named = classes.into_iter().map(|(k, v)| (k.name(), v)).collect();
    (c, named)
}

/// The JSON form of a kernel program: `[{"calc": 27}, {"repeat": "N", "ops": [...]}, ...]`.
pub fn program_json(ops: &[Op]) -> Value {
    Value::Array(
        ops.iter()
            .map(|op| match op {
                Op::Calc(c) => json!({ "calc": c }),
                Op::Load(c) => json!({ "load": c }),
                Op::Store(c) => json!({ "store": c }),
                Op::Repeat { count, ops } => {
                    let n = match count {
                        RepeatCount::Fixed(n) => json!(n),
                        RepeatCount::Param(e) => json!(e),
                    };
                    json!({ "repeat": n, "ops": program_json(ops) })
                }
            })
            .collect(),
    )
}

/// Analyzes one function.
pub fn analyze_function(f: &Function, durations: MemoryDurations) -> EntryAnalysis {
    let mut diags = Diagnostics::default();
    let cfg = Cfg::build(f, &mut diags);
    let loops = find_loops(&cfg);
    let (static_counts, classes) = count(f);
    let program = derive(&cfg, &loops, durations);
    EntryAnalysis {
        name: f.name.clone(),
        params: f
            .params
            .iter()
            .map(|p| ParamSummary {
                name: p.name.clone(),
                ty: p.ty.clone(),
                array: p.array,
                ptr_space: p.ptr_space.clone(),
            })
            .collect(),
        basic_blocks: cfg.blocks.len(),
        edges: cfg.edge_count(),
        loops: loops
            .iter()
            .map(|l| LoopSummary {
                depth: l.depth,
                header_line: l.header_line,
                header_block: l.header,
                blocks: l.blocks.len(),
                back_edges: l.back_edges.len(),
                trip_count: l.trip_count.clone(),
            })
            .collect(),
        static_counts,
        classes,
        shared_bytes_declared: f
            .variables
            .iter()
            .filter(|v| v.space == "shared")
            .filter_map(|v| v.size_bytes())
            .sum(),
        max_threads: if f.performance.reqntid.is_empty() {
            f.performance.maxntid.clone()
        } else {
            f.performance.reqntid.clone()
        },
        kernel_program: program_json(&program.ops),
        resources: None,
        diagnostics: diags.items,
        program,
    }
}

/// Analyzes every kernel of a module (or only `entry`), attaching parse diagnostics that fall
/// inside each kernel and the matching resource report, if given.
pub fn analyze_module(
    m: &Module,
    parse_diags: &Diagnostics,
    entry: Option<&str>,
    durations: MemoryDurations,
    resources: &[KernelResources],
) -> Vec<EntryAnalysis> {
    let funcs: Vec<&Function> = m.functions.iter().filter(|f| f.has_body).collect();
    let mut out = Vec::new();
    for (k, f) in funcs.iter().enumerate() {
        if !f.is_entry || entry.is_some_and(|e| e != f.name) {
            continue;
        }
        let mut a = analyze_function(f, durations);
        let end_line = funcs.get(k + 1).map_or(u32::MAX, |g| g.line);
        let mut mine: Vec<Diagnostic> = parse_diags
            .items
            .iter()
            .filter(|d| d.line >= f.line && d.line < end_line)
            .cloned()
            .collect();
        mine.append(&mut a.diagnostics);
        a.diagnostics = mine;
        a.resources = resources.iter().find(|r| r.name == f.name).cloned();
        out.push(a);
    }
    out
}
