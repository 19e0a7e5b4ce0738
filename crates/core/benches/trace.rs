//! Speed of the trace path (issue 7): a `trace` prediction for a kernel of about 50,000 dynamic
//! instructions per warp in at most 10 ms, and emulation of a 1,000-block stencil launch in at
//! most 50 ms.
//!
//! Kernels: `dwt_matrix` with K = 4542 taps (28 + 11 K = 49,990 instructions per warp) on a V100,
//! 1280 blocks of 256 threads (a full round of 8 blocks = 64 warps per SM) and 80 blocks (one
//! block of 8 warps per SM); `fdtd_o2` on a 1280 x 100 x 16 grid in 40 x 25 = 1,000 blocks of
//! 32 x 4 threads, sampled (first/interior/last blocks) and every block.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use kerneltime::device::catalogue;
use kerneltime::device::latencies::for_device;
use kerneltime::emulate::{emulate, KernelArg, LaunchDims, Options, Sampling};
use kerneltime::explore::registry::{Context, Scratch, Workload};
use kerneltime::explore::trace_cell::prepare_trace;
use kerneltime::model::trace_sim::{predict, run_with, KernelResources, LatencyRule, Overlap};
use kerneltime::ptx::parse;

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/ptx");

fn bench(c: &mut Criterion) {
    let dwt = std::fs::read_to_string(format!("{FIX}/dwt.nvcc-sm75.ptx")).unwrap();
    let (m, _) = parse(&dwt);
    let launch = LaunchDims {
        grid: [1280, 1, 1],
        block: [256, 1, 1],
    };
    let args = KernelArg::parse_all(&["3=327680", "4=4542"]).unwrap();
    let dev = catalogue::find("V100").unwrap().clone();
    let lat = for_device(&dev).unwrap();
    let res = KernelResources {
        registers_per_thread: 32,
        shared_bytes_per_block: 0,
        ..Default::default()
    };
    let em = emulate(&m, "dwt_matrix", launch, &args, Options::default()).unwrap();
    assert_eq!(em.warps[0].ops.len(), 28 + 11 * 4542);
    let mut g = c.benchmark_group("trace");
    g.sample_size(10);
    g.bench_function("trace_model_50k_instr_per_warp_64_warps", |b| {
        b.iter(|| {
            predict(black_box(&dev), black_box(&em), res, &lat)
                .unwrap()
                .0
                .time_us
        })
    });
    // The same on one thread (the caches and compression before the round, not beside it): the
    // path a sweep takes for small kernels, and a machine with one core.
    g.bench_function("trace_model_50k_instr_per_warp_64_warps_one_thread", |b| {
        b.iter(|| {
            run_with(
                black_box(&dev),
                launch,
                black_box(&em),
                res,
                &lat,
                LatencyRule::default(),
                Overlap::Off,
            )
            .unwrap()
            .time_us
        })
    });
    // The same kernel with one block per SM (80 blocks on 80 SMs): a round of 8 warps.
    let small = LaunchDims {
        grid: [80, 1, 1],
        block: [256, 1, 1],
    };
    let em_small = emulate(&m, "dwt_matrix", small, &args, Options::default()).unwrap();
    g.bench_function("trace_model_50k_instr_per_warp_8_warps", |b| {
        b.iter(|| {
            predict(black_box(&dev), black_box(&em_small), res, &lat)
                .unwrap()
                .0
                .time_us
        })
    });
    g.bench_function("emulate_dwt_50k_instr_per_warp_24_warps", |b| {
        b.iter(|| {
            emulate(&m, "dwt_matrix", launch, &args, Options::default())
                .unwrap()
                .warps
                .len()
        })
    });

    let fdtd = std::fs::read_to_string(format!("{FIX}/fdtd.nvcc-sm75.ptx")).unwrap();
    let (f, _) = parse(&fdtd);
    // 1,000 blocks: 40 x 25 blocks of 32 x 4 threads cover a 1280 x 100 plane; nz = 16.
    let launch = LaunchDims {
        grid: [40, 25, 1],
        block: [32, 4, 1],
    };
    let args = KernelArg::parse_all(&["5=1280", "6=100", "7=16"]).unwrap();
    g.bench_function("emulate_fdtd_o2_1000_blocks_sampled", |b| {
        b.iter(|| {
            emulate(&f, "fdtd_o2", launch, &args, Options::default())
                .unwrap()
                .warps
                .len()
        })
    });
    let all = Options {
        sampling: Sampling::All,
        ..Options::default()
    };
    g.bench_function("emulate_fdtd_o2_1000_blocks_every_block", |b| {
        b.iter(|| {
            emulate(&f, "fdtd_o2", launch, &args, all)
                .unwrap()
                .warps
                .len()
        })
    });

    // One sweep point of the trace model (src/explore/trace_cell.rs): dwt_matrix with 8 taps,
    // 256 threads per block; n changes every iteration, so nothing is reused (the 307,200-point
    // README sweep is 4 such kernels x 32 block sizes x 2,400 sizes).
    let kernel_file = format!(
        "ptx = \"{FIX}/dwt.nvcc-sm75.ptx\"\nentry = \"dwt_matrix\"\ngrid = [\"(n + block_x - 1) / block_x\"]\nblock = [\"block_x\"]\nargs = [\"3=n\", \"4=8\"]\nregisters = 32\n"
    );
    let workload = Workload::Inputs {
        name: "dwt_matrix".into(),
        origin: format!("{FIX}/dwt_matrix.toml"),
        text: kernel_file,
    };
    let dev = std::sync::Arc::new(dev);
    let axes = vec!["block_x".to_string(), "n".to_string()];
    let prepared = prepare_trace(&Context {
        model: kerneltime::ModelId::Trace,
        workload: &workload,
        device: Some(&dev),
        axes: &axes,
        first_values: &[256.0, 1024.0],
        t_p_us: None,
        t_m_cycles: None,
        calibration: None,
    })
    .unwrap();
    let mut scratch = Scratch::default();
    let mut n = 1024.0;
    g.bench_function("sweep_point_trace_dwt_matrix_k8_fresh", |b| {
        b.iter(|| {
            n += 1024.0;
            prepared
                .evaluator
                .evaluate(black_box(&[256.0, n]), &mut scratch)
                .unwrap()
                .time_us
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
