//! Speed of design-space sweeps (issue 9 targets, on this 2-core machine): analytical (wu)
//! points evaluated and formatted as CSV rows at >= 1,000,000 per second, puchala2022 DWT points
//! at >= 200,000 per second, both through the same parallel path as `kerneltime sweep`
//! (evaluate + format into buffers in point order; the file write is a memcpy on top). The
//! trace model's target (wang2019's 306,558 configurations in <= 60 s) waits for that model.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kerneltime::explore::best::{search, Objective};
use kerneltime::explore::sweep::{Format, RowWriter, SUB_CHUNK_POINTS};
use kerneltime::explore::{Space, SpaceSpec};
use rayon::prelude::*;

fn wu_space() -> Space {
    let spec = SpaceSpec {
        models: vec!["wu".into()],
        inputs: vec![concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../data/analytical/wu2019-example.toml"
        )
        .into()],
        params: vec!["threads_per_block=32..1024:32".into(), "n_b=1..8192".into()],
        ..Default::default()
    };
    Space::build(&spec, u64::MAX).unwrap()
}

fn dwt_space() -> Space {
    let spec = SpaceSpec {
        models: vec!["puchala".into()],
        kernels: vec!["dwt-matrix".into(), "dwt-lattice".into()],
        devices: vec!["GeForce RTX 2080 (puchala2022)".into()],
        // The paper's filter lengths; sizes every 64 up to 2^20: 2 x 16384 x 4 = 131,072 points.
        params: vec!["n=64..1048576:64".into(), "k=8,10,12,14".into()],
        ..Default::default()
    };
    Space::build(&spec, u64::MAX).unwrap()
}

/// Every point formatted as CSV, in parallel sub-chunks (what `sweep` does per chunk).
fn csv_rows(space: &Space) -> usize {
    let rows = RowWriter::new(space, Format::Csv);
    let n = space.len();
    let starts: Vec<u64> = (0..n).step_by(SUB_CHUNK_POINTS as usize).collect();
    starts
        .par_iter()
        .map(|&a| {
            let b = (a + SUB_CHUNK_POINTS).min(n);
            let mut buf = Vec::with_capacity(((b - a) * 96) as usize);
            rows.rows(a, b, &mut buf);
            buf.len()
        })
        .sum()
}

fn bench(c: &mut Criterion) {
    let wu = wu_space();
    let mut g = c.benchmark_group("sweep");
    g.sample_size(10);
    g.throughput(Throughput::Elements(wu.len()));
    g.bench_function("wu_csv_262144_points", |b| {
        b.iter(|| black_box(csv_rows(&wu)))
    });
    g.bench_function("wu_best_262144_points", |b| {
        b.iter(|| black_box(search(&wu, Objective::Time, "time", &[]).unwrap().points))
    });
    let dwt = dwt_space();
    g.throughput(Throughput::Elements(dwt.len()));
    g.bench_function("dwt_csv_131072_points", |b| {
        b.iter(|| black_box(csv_rows(&dwt)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
