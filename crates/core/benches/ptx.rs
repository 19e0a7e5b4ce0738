//! Speed of the PTX frontend: parse + CFG + loops + classification.
//! Targets (issue 6): >= 50 MB/s on a large file built from the fixtures; a 100,000-line
//! module in < 200 ms. Issue 17: `kerneltime analyze --json` end to end (the library path the
//! command runs, writing to a sink) >= 50 MB/s on a module of many kernels.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kerneltime::ptx::analysis::{analyze_each, analyze_module, count, JsonEntries};
use kerneltime::ptx::cfg::Cfg;
use kerneltime::ptx::diag::Diagnostics;
use kerneltime::ptx::loops::find_loops;
use kerneltime::ptx::parse;
use kerneltime::ptx::program::MemoryDurations;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/ptx");

/// Parses, then builds the graph, finds loops and classifies every instruction of every function.
fn frontend(text: &str) -> usize {
    let (m, _) = parse(text);
    let mut work = 0;
    for f in m.functions.iter().filter(|f| f.has_body) {
        let mut d = Diagnostics::default();
        let cfg = Cfg::build(f, &mut d);
        let loops = find_loops(&cfg);
        let (counts, _) = count(f);
        work += cfg.blocks.len() + loops.len() + counts.total as usize;
    }
    work
}

/// The fixture files, sorted.
fn fixture_paths() -> Vec<std::path::PathBuf> {
    let mut paths: Vec<_> = std::fs::read_dir(FIXTURES)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
        .collect();
    paths.sort();
    paths
}

/// All fixtures concatenated, repeated to at least `bytes`.
fn big_file(bytes: usize) -> String {
    let all: String = fixture_paths()
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let mut out = String::with_capacity(bytes + all.len());
    while out.len() < bytes {
        out.push_str(&all);
    }
    out
}

/// Whether `b` can continue a PTX identifier.
fn ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

/// `text` with every whole-word `name` followed by `suffix`.
fn rename(text: &str, name: &str, suffix: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 256);
    let (mut copied, mut from) = (0, 0);
    while let Some(i) = text[from..].find(name) {
        let (at, end) = (from + i, from + i + name.len());
        let whole =
            (at == 0 || !ident_byte(b[at - 1])) && b.get(end).is_none_or(|&c| !ident_byte(c));
        if whole {
            out.push_str(&text[copied..end]);
            out.push_str(suffix);
            copied = end;
        }
        from = end;
    }
    out.push_str(&text[copied..]);
    out
}

/// A module of many kernels: every fixture, its kernels renamed per copy (`name_c7`), repeated
/// to at least `bytes` (about 3,850 kernels in 13 MB).
fn many_kernels(bytes: usize) -> (String, usize) {
    let files: Vec<(String, Vec<String>)> = fixture_paths()
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            let names = parse(&text).0.entries().map(|f| f.name.clone()).collect();
            (text, names)
        })
        .collect();
    let (mut out, mut kernels, mut copy) = (String::with_capacity(bytes + (1 << 20)), 0, 0);
    while out.len() < bytes {
        for (text, names) in &files {
            let mut t = text.clone();
            for n in names {
                t = rename(&t, n, &format!("_c{copy}"));
            }
            out.push_str(&t);
            kernels += names.len();
        }
        copy += 1;
    }
    (out, kernels)
}

/// What `kerneltime analyze --json` does after reading the file: parse and analyze kernel by
/// kernel, each written as JSON as it comes.
fn analyze_streamed(text: &str) -> usize {
    let mut json = JsonEntries::new(std::io::sink());
    analyze_each(text, None, DURATIONS, &[], |e| json.entry(&e)).unwrap();
    let n = json.written();
    json.finish(&[]).unwrap();
    n
}

/// The path `analyze --json` took before streaming: the whole module parsed, every kernel
/// analyzed, then one JSON value of everything printed pretty.
fn analyze_whole(text: &str) -> usize {
    let (m, d) = parse(text);
    let entries = analyze_module(&m, &d, None, DURATIONS, &[]);
    let v = serde_json::json!({ "entries": entries, "notes": Vec::<String>::new() });
    serde_json::to_writer_pretty(std::io::sink(), &v).unwrap();
    entries.len()
}

const DURATIONS: MemoryDurations = MemoryDurations {
    load_cycles: 60.0,
    store_cycles: 60.0,
};

/// One kernel of `lines` lines: a chain of small counted loops with loads, FMAs and stores.
fn module_of_lines(lines: usize) -> String {
    let chunks = lines / 10;
    let mut s = String::from(
        ".version 9.5\n.target sm_80\n.address_size 64\n.visible .entry big(\n\t.param .u64 big_param_0,\n\t.param .u32 big_param_1\n)\n{\n",
    );
    s.push_str(&format!("\t.reg .pred %p<{chunks}>;\n\t.reg .b32 %r<{chunks}>;\n\t.reg .f32 %f<8>;\n\t.reg .b64 %rd<4>;\n"));
    s.push_str("\tld.param.u64 %rd1, [big_param_0];\n\tld.param.u32 %r0, [big_param_1];\n");
    for i in 0..chunks {
        s.push_str(&format!(
            "\tmov.u32 %r{i}, 0;\n$L_{i}:\n\tld.global.f32 %f2, [%rd1];\n\tfma.rn.f32 %f1, %f2, %f2, %f1;\n\tadd.s32 %r{i}, %r{i}, 1;\n\tsetp.lt.s32 %p{i}, %r{i}, %r0;\n\t@%p{i} bra $L_{i};\n\tst.global.f32 [%rd1+4], %f1;\n\tadd.s64 %rd1, %rd1, 8;\n\tbar.sync 0;\n"
        ));
    }
    s.push_str("\tret;\n}\n");
    s
}

fn bench(c: &mut Criterion) {
    let big = big_file(8 << 20);
    let mut g = c.benchmark_group("ptx_frontend");
    g.throughput(Throughput::Bytes(big.len() as u64));
    g.sample_size(10);
    g.bench_function("fixtures_8MB", |b| {
        b.iter(|| black_box(frontend(black_box(&big))))
    });
    g.finish();

    let m = module_of_lines(100_000);
    assert!(m.lines().count() >= 100_000);
    let mut g = c.benchmark_group("ptx_frontend_100k_lines");
    g.sample_size(10);
    g.bench_function("module_100k_lines", |b| {
        b.iter(|| black_box(frontend(black_box(&m))))
    });
    g.finish();
}

fn bench_analyze(c: &mut Criterion) {
    let (module, kernels) = many_kernels(13 << 20);
    assert_eq!(analyze_streamed(&module), kernels);
    assert_eq!(analyze_whole(&module), kernels);
    let mut g = c.benchmark_group("analyze_json_end_to_end");
    g.throughput(Throughput::Bytes(module.len() as u64));
    g.sample_size(10);
    g.bench_function("streamed_many_kernels_13MB", |b| {
        b.iter(|| black_box(analyze_streamed(black_box(&module))))
    });
    g.bench_function("whole_module_then_json_13MB", |b| {
        b.iter(|| black_box(analyze_whole(black_box(&module))))
    });
    g.finish();
}

criterion_group!(benches, bench, bench_analyze);
criterion_main!(benches);
