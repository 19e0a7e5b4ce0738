//! Speed of the fit numerics: Kendall's tau-b on 100 000 tied pairs (O(n log n)), NNLS on the
//! LSLAG design of the paper's grid (360 x 2), and a whole LSLAG + LSLA fit.

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use kerneltime::fit::lslag::{fit, FitOptions, Sample};
use kerneltime::fit::matrix::Matrix;
use kerneltime::fit::nnls::nnls;
use kerneltime::fit::rank::kendall_tau_b;
use kerneltime::fit::split::SplitMix64;
use kerneltime::model::lslag::builtins;

fn grid_samples() -> Vec<Sample> {
    let p = &builtins()[2];
    let mut rng = SplitMix64::new(1);
    let mut out = Vec::new();
    for s in [512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0] {
        for gamma in [8.0, 16.0, 32.0, 64.0, 128.0, 256.0] {
            for _ in 0..10 {
                let t = p.times(gamma, s).unwrap();
                let mut j = |v: f64| v * (1.0 + 0.05 * rng.normal());
                out.push(Sample {
                    line: 0,
                    gamma,
                    s,
                    t_w: j(t.t_w),
                    t_1: j(t.t_1),
                    t_k: j(t.t_k),
                });
            }
        }
    }
    out
}

fn benches(c: &mut Criterion) {
    let mut rng = SplitMix64::new(9);
    let x: Vec<f64> = (0..100_000).map(|_| rng.below(1000) as f64).collect();
    let y: Vec<f64> = (0..100_000).map(|_| rng.below(1000) as f64).collect();
    c.bench_function("kendall_tau_b_100k", |b| {
        b.iter(|| kendall_tau_b(black_box(&x), black_box(&y)).unwrap())
    });
    let samples = grid_samples();
    let rows: Vec<[f64; 2]> = samples.iter().map(|s| [s.s / s.gamma, s.s]).collect();
    let a = Matrix::from_rows(&rows).unwrap();
    let t: Vec<f64> = samples.iter().map(|s| s.t_w).collect();
    c.bench_function("nnls_360x2", |b| {
        b.iter(|| nnls(black_box(&a), black_box(&t)).unwrap())
    });
    c.bench_function("lslag_fit_360", |b| {
        b.iter(|| {
            fit(
                black_box(&samples),
                &FitOptions::default(),
                Path::new("bench"),
            )
            .unwrap()
        })
    });
}

criterion_group!(fit_benches, benches);
criterion_main!(fit_benches);
