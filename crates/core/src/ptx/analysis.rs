//! One-call analysis of the kernels of a PTX module: graph, loops, counts per class and the
//! derived kernel program, as a serializable summary (what `kerneltime analyze` prints).
//!
//! It only combines the passes (parse, cfg, loops, classify, program, resources). A whole parsed
//! module is analyzed by [`analyze_module`]; [`analyze_each`] parses and analyzes one kernel at a
//! time and hands each to a sink, so memory follows the largest kernel rather than the module,
//! and [`JsonEntries`] writes them out as they come (the path of `kerneltime analyze`). It
//! reads no files.

use std::collections::BTreeMap;
use std::io::Write;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::{json, Value};

use super::ast::{Function, Module};
use super::cfg::Cfg;
use super::classify::{classify, Class, Space};
use super::diag::{Diagnostic, Diagnostics, Severity};
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
    /// The puchala2022 kernel program, serialized as `kernel_program`:
    /// `[{"calc": 27.0}, {"repeat": "N", "ops": [...]}, ...]` (see [`program_json`]).
    #[serde(rename = "kernel_program", serialize_with = "serialize_program")]
    pub program: Program,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<KernelResources>,
    pub diagnostics: Vec<Diagnostic>,
}

/// A program's ops in their JSON form, written straight to the serializer.
struct OpsJson<'a>(&'a [Op]);

impl Serialize for OpsJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for op in self.0 {
            seq.serialize_element(&OpJson(op))?;
        }
        seq.end()
    }
}

struct OpJson<'a>(&'a Op);

impl Serialize for OpJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Op::Calc(c) => one_entry(s, "calc", c),
            Op::Load(c) => one_entry(s, "load", c),
            Op::Store(c) => one_entry(s, "store", c),
            Op::Repeat { count, ops } => {
                let mut m = s.serialize_map(Some(2))?;
                match count {
                    RepeatCount::Fixed(n) => m.serialize_entry("repeat", n)?,
                    RepeatCount::Param(e) => m.serialize_entry("repeat", e)?,
                }
                m.serialize_entry("ops", &OpsJson(ops))?;
                m.end()
            }
        }
    }
}

fn one_entry<S: Serializer>(s: S, key: &str, v: &f64) -> Result<S::Ok, S::Error> {
    let mut m = s.serialize_map(Some(1))?;
    m.serialize_entry(key, v)?;
    m.end()
}

fn serialize_program<S: Serializer>(p: &Program, s: S) -> Result<S::Ok, S::Error> {
    OpsJson(&p.ops).serialize(s)
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

/// The JSON form of a kernel program: `[{"calc": 27}, {"repeat": "N", "ops": [...]}, ...]`
/// (what `kernel_program` holds in the serialized analysis).
pub fn program_json(ops: &[Op]) -> Value {
    serde_json::to_value(OpsJson(ops)).unwrap_or_else(|_| json!([]))
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
        program,
        resources: None,
        diagnostics: diags.items,
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

/// What [`analyze_each`] saw besides the kernels it handed out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamSummary {
    /// Kernels analyzed (handed to the sink).
    pub analyzed: usize,
    /// Names of every kernel of the module, kept only when an `entry` was asked for (to list
    /// them when it is missing).
    pub kernels: Vec<String>,
    /// Parse diagnostics raised outside any function.
    pub outside_functions: usize,
    /// The first error-level parse diagnostic, if any.
    pub first_error: Option<Diagnostic>,
}

/// Parses PTX text and analyzes its kernels (or only `entry`) one at a time, handing each
/// analysis to `sink` in source order with the parse diagnostics raised inside the kernel and
/// its resource report attached. A sink error stops the analysis of further kernels and is
/// returned.
pub fn analyze_each<E>(
    text: &str,
    entry: Option<&str>,
    durations: MemoryDurations,
    resources: &[KernelResources],
    mut sink: impl FnMut(EntryAnalysis) -> std::result::Result<(), E>,
) -> std::result::Result<StreamSummary, E> {
    let mut summary = StreamSummary::default();
    let mut failed = None;
    let mut inside = 0usize;
    let (_, diags) = super::parse_each(text, |_, f, fdiags| {
        inside += fdiags.len();
        if !(f.is_entry && f.has_body) || failed.is_some() {
            return;
        }
        if entry.is_some() {
            summary.kernels.push(f.name.clone());
        }
        if entry.is_some_and(|e| e != f.name) {
            return;
        }
        let mut a = analyze_function(&f, durations);
        let mut mine = fdiags.to_vec();
        mine.append(&mut a.diagnostics);
        a.diagnostics = mine;
        a.resources = resources.iter().find(|r| r.name == f.name).cloned();
        summary.analyzed += 1;
        if let Err(e) = sink(a) {
            failed = Some(e);
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    summary.outside_functions = diags.items.len().saturating_sub(inside);
    summary.first_error = diags
        .items
        .iter()
        .find(|d| d.severity == Severity::Error)
        .cloned();
    Ok(summary)
}

/// Writes kernel analyses as one JSON document as they come: `{"entries":[` then one kernel
/// per line, then `],"notes":[...]}`. Nothing is written before the first kernel, so a run
/// that finds none can still fail cleanly.
pub struct JsonEntries<W: Write> {
    out: W,
    written: usize,
}

impl<W: Write> JsonEntries<W> {
    pub fn new(out: W) -> Self {
        Self { out, written: 0 }
    }

    /// Writes one kernel.
    pub fn entry(&mut self, e: &EntryAnalysis) -> std::io::Result<()> {
        self.out.write_all(if self.written == 0 {
            b"{\"entries\":[\n"
        } else {
            b",\n"
        })?;
        serde_json::to_writer(&mut self.out, e)?;
        self.written += 1;
        Ok(())
    }

    /// Kernels written so far.
    pub fn written(&self) -> usize {
        self.written
    }

    /// Closes the document with the notes and flushes; returns the writer.
    pub fn finish(mut self, notes: &[String]) -> std::io::Result<W> {
        if self.written == 0 {
            self.out.write_all(b"{\"entries\":[")?;
        }
        self.out.write_all(b"\n],\"notes\":")?;
        serde_json::to_writer(&mut self.out, notes)?;
        self.out.write_all(b"}\n")?;
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/ptx");

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!("{FIXTURES}/{name}")).expect("fixture")
    }

    const D: MemoryDurations = MemoryDurations {
        load_cycles: 60.0,
        store_cycles: 40.0,
    };

    #[test]
    fn streamed_analysis_equals_the_whole_module_analysis() {
        for name in [
            "basics.nvcc-sm75.ptx",
            "dwt.clang14-sm61.ptx",
            "matmul.clang14-ocl-sm61.ptx",
        ] {
            let text = fixture(name);
            let (m, d) = super::super::parse(&text);
            let whole = analyze_module(&m, &d, None, D, &[]);
            let mut streamed = Vec::new();
            let s = analyze_each::<()>(&text, None, D, &[], |e| {
                streamed.push(e);
                Ok(())
            })
            .unwrap();
            assert_eq!(streamed, whole, "{name}");
            assert_eq!(s.analyzed, whole.len());
            assert!(s.kernels.is_empty() && s.first_error.is_none());
            // The JSON document holds the same entries, one per line.
            let mut json = JsonEntries::new(Vec::new());
            for e in &streamed {
                json.entry(e).unwrap();
            }
            let bytes = json.finish(&["a note".to_string()]).unwrap();
            let out = String::from_utf8(bytes).unwrap();
            assert_eq!(out.lines().count(), whole.len() + 2);
            let v: Value = serde_json::from_str(&out).unwrap();
            assert_eq!(v, json!({ "entries": whole, "notes": ["a note"] }));
        }
    }

    #[test]
    fn streamed_analysis_filters_stops_and_reports() {
        let text = fixture("dwt.nvcc-sm75.ptx");
        let mut names = Vec::new();
        let s = analyze_each::<()>(&text, Some("dwt_matrix"), D, &[], |e| {
            names.push(e.name);
            Ok(())
        })
        .unwrap();
        assert_eq!(names, ["dwt_matrix"]);
        assert_eq!(s.kernels, ["dwt_matrix", "dwt_lattice_stage"]);
        // A sink error ends the run with that error, after the first kernel.
        let mut calls = 0;
        let r = analyze_each(&text, None, D, &[], |_| {
            calls += 1;
            Err("stop")
        });
        assert_eq!((r, calls), (Err("stop"), 1));
        // No kernel: nothing written, and the first parse error is reported.
        let s =
            analyze_each::<()>("garbage; .func f() { ret; }", None, D, &[], |_| Ok(())).unwrap();
        assert_eq!(s.analyzed, 0);
        assert!(s.first_error.is_some());
        let json = JsonEntries::new(Vec::new());
        assert_eq!(json.written(), 0);
        let out = String::from_utf8(json.finish(&[]).unwrap()).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&out).unwrap(),
            json!({"entries": [], "notes": []})
        );
    }
}
