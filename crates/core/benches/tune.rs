//! Speed of `tune` (issue 15): enumerating a space of the convolution benchmark's shape
//! (16,896 combinations, 6,768 valid), evaluating its conditions, ranking the 22
//! configurations of the test fixture `tests/fixtures/tune/vadd.json` from a warm compile cache,
//! and configurations per second on `tests/fixtures/tune/stencil.json` (a tiled 2-D stencil of
//! our own in the convolution's shape, 64 configurations): cold (compiled afresh, two
//! configurations an iteration), warm with the compile cache only (every configuration parsed,
//! emulated and predicted) and warm with the prediction cache (whole results reused). The
//! issue's targets (20 configurations per second cold, 1,000 warm) are read off these
//! throughputs, never asserted. Everything but enumeration needs a CUDA compiler; without one
//! it is skipped with a message.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kerneltime::compile::{Choice, Compiler, Language};
use kerneltime::device::catalogue;
use kerneltime::progress::Quiet;
use kerneltime::tune::expr::{Expr, Value};
use kerneltime::tune::launch::Overrides;
use kerneltime::tune::space::{enumerate, Selection};
use kerneltime::tune::spec::TuneSpec;
use kerneltime::tune::{tune, TuneRequest};

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/tune");

/// The value lists and conditions of the published convolution space (a fact about that
/// benchmark), with our fixture kernel standing in for its source.
const CONVOLUTION_SHAPE: &str = r#"{
  "ConfigurationSpace": {
    "TuningParameters": [
      {"Name": "block_size_x", "Values": "[1, 2, 4, 8, 16, 32, 48, 64, 96, 112, 128]"},
      {"Name": "block_size_y", "Values": "[1, 2, 4, 8, 16, 32]"},
      {"Name": "filter_height", "Values": "[15]"},
      {"Name": "filter_width", "Values": "[15]"},
      {"Name": "read_only", "Values": "[0, 1]"},
      {"Name": "tile_size_x", "Values": "[i for i in range(1, 9)]"},
      {"Name": "tile_size_y", "Values": "[i for i in range(1, 9)]"},
      {"Name": "use_padding", "Values": "[0, 1]"}
    ],
    "Conditions": [
      {"Expression": "block_size_x*block_size_y>=64"},
      {"Expression": "block_size_x*block_size_y<=1024"},
      {"Expression": "tile_size_x*tile_size_y<30"}
    ]
  },
  "KernelSpecification": {"Language": "CUDA", "KernelName": "vadd", "KernelFile": "vadd.cu",
    "GridDivX": ["block_size_x", "tile_size_x"], "GridDivY": ["block_size_y", "tile_size_y"],
    "ProblemSize": [4096, 4096]}
}"#;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("tune");
    let spec = TuneSpec::parse(CONVOLUTION_SHAPE, "convolution-shape.json").unwrap();
    assert_eq!(enumerate(&spec).unwrap().len(), 6768);
    g.bench_function("enumerate_convolution_space_16896_combinations", |b| {
        b.iter(|| enumerate(black_box(&spec)).unwrap().len())
    });
    let cond = Expr::compile(
        "block_size_x*block_size_y>=64 and tile_size_x*tile_size_y<30",
        &["block_size_x", "block_size_y", "tile_size_x", "tile_size_y"],
    )
    .unwrap();
    let env = [Value::Int(32), Value::Int(4), Value::Int(3), Value::Int(5)];
    g.bench_function("evaluate_one_condition", |b| {
        b.iter(|| cond.eval(black_box(&env)).unwrap().truthy())
    });

    if let Err(e) = Compiler::find(Language::Cuda, Choice::Auto) {
        eprintln!("skipped the warm-cache bench: no CUDA compiler ({e})");
        g.finish();
        return;
    }
    let cache = std::env::temp_dir().join(format!("kerneltime-bench-tune-{}", std::process::id()));
    let req = TuneRequest {
        spec: TuneSpec::load(&PathBuf::from(FIX).join("vadd.json")).unwrap(),
        overrides: Overrides::default(),
        devices: vec![catalogue::find("RTX 2080 Ti").unwrap().clone()],
        selection: Selection::All,
        model: "trace".into(),
        compiler: Choice::Auto,
        compile_cache: Some(cache.clone()),
        host_link_gbs: None,
        prediction_cache: false,
    };
    // Fill the cache once.
    let first = tune(&req, &Quiet).unwrap();
    assert_eq!(first.rows.len(), 22);
    g.sample_size(10);
    g.bench_function("rank_22_configurations_warm_cache", |b| {
        b.iter(|| tune(black_box(&req), &Quiet).unwrap().rows.len())
    });

    // Configurations per second on the stencil fixture.
    let stencil =
        |selection: Selection, compile_cache: Option<PathBuf>, prediction_cache| TuneRequest {
            spec: TuneSpec::load(&PathBuf::from(FIX).join("stencil.json")).unwrap(),
            selection,
            compile_cache,
            prediction_cache,
            ..req.clone()
        };
    let cold = stencil(Selection::Sample { n: 2, seed: 1 }, None, false);
    g.throughput(Throughput::Elements(2));
    g.bench_function("stencil_cold_configurations", |b| {
        b.iter(|| tune(black_box(&cold), &Quiet).unwrap().rows.len())
    });
    let compile_warm = stencil(Selection::All, Some(cache.clone()), false);
    let n = tune(&compile_warm, &Quiet).unwrap().rows.len();
    assert_eq!(n, 64);
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("stencil_warm_compile_cache_configurations", |b| {
        b.iter(|| tune(black_box(&compile_warm), &Quiet).unwrap().rows.len())
    });
    let prediction_warm = stencil(Selection::All, Some(cache.clone()), true);
    tune(&prediction_warm, &Quiet).unwrap();
    g.bench_function("stencil_warm_prediction_cache_configurations", |b| {
        b.iter(|| {
            tune(black_box(&prediction_warm), &Quiet)
                .unwrap()
                .rows
                .len()
        })
    });
    g.finish();
    let _ = std::fs::remove_dir_all(cache);
}

criterion_group!(benches, bench);
criterion_main!(benches);
