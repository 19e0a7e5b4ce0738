//! Speed of the PTX frontend: parse + CFG + loops + classification.
//! Targets (issue 6): >= 50 MB/s on a large file built from the fixtures; a 100,000-line
//! module in < 200 ms.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kerneltime::ptx::analysis::count;
use kerneltime::ptx::cfg::Cfg;
use kerneltime::ptx::diag::Diagnostics;
use kerneltime::ptx::loops::find_loops;
use kerneltime::ptx::parse;

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

/// All fixtures concatenated, repeated to at least `bytes`.
fn big_file(bytes: usize) -> String {
    let mut paths: Vec<_> = std::fs::read_dir(FIXTURES)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
        .collect();
    paths.sort();
    let all: String = paths
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let mut out = String::with_capacity(bytes + all.len());
    while out.len() < bytes {
        out.push_str(&all);
    }
    out
}

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

criterion_group!(benches, bench);
criterion_main!(benches);
