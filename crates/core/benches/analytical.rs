//! One prediction of each analytical model (target: at most 1 microsecond each), on the seeds'
//! worked examples, from already-validated inputs structs (file reading is not timed).

use criterion::{criterion_group, criterion_main, Criterion};
use kerneltime::model::{hong_kim, mwp_cwp, wu};
use kerneltime::workload::analytical::{HongKimInputs, MwpCwpInputs, WuInputs};
use std::hint::black_box;

fn read(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../../data/analytical/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("example inputs file")
}

fn bench(c: &mut Criterion) {
    let m = MwpCwpInputs::from_toml(&read("parra2016-stencil-order2-8warps.toml"), "mwp", None)
        .expect("mwp-cwp inputs")
        .inputs;
    let h = HongKimInputs::from_toml(&read("hong-kim-2009-worked-example.toml"), "hk", None)
        .expect("hong-kim inputs")
        .inputs;
    let w = WuInputs::from_toml(&read("wu2019-example.toml"), "wu", None)
        .expect("wu inputs")
        .inputs;
    c.bench_function("mwp_cwp_predict", |b| {
        b.iter(|| mwp_cwp::predict(black_box(&m)))
    });
    c.bench_function("hong_kim_predict", |b| {
        b.iter(|| hong_kim::predict(black_box(&h)))
    });
    c.bench_function("wu_predict", |b| b.iter(|| wu::predict(black_box(&w))));
    c.bench_function("wu_best_block_sweep_1024", |b| {
        b.iter(|| wu::sweep_block_sizes(black_box(&w), 1024))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
