//! The PTX frontend on the committed fixtures (our kernels compiled by nvcc 13.5, NVRTC 12.9 and
//! clang-14; see scripts/regenerate-fixtures.sh): every fixture parses cleanly, the golden
//! analysis dumps still match, and hand-checked facts about the DWT, stencil, reduction and
//! mtx_mul_vec kernels hold.
//!
//! Golden files (`*.golden`) hold the PTX input, a marker line, and the expected JSON analysis.
//! Re-record them after reviewing a change with `UPDATE_GOLDEN=1 cargo test --test ptx_fixtures`.

use std::path::{Path, PathBuf};

use kerneltime::ptx::analysis::{analyze_module, EntryAnalysis};
use kerneltime::ptx::diag::Severity;
use kerneltime::ptx::loops::TripCount;
use kerneltime::ptx::parse;
use kerneltime::ptx::program::MemoryDurations;
use kerneltime::ptx::resources::parse_report;
use kerneltime::workload::program::{Op, RepeatCount};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ptx");
const MARKER: &str =
    "//==== expected analysis: kerneltime analyze --json --load-cycles 60 --store-cycles 60 ====";
const DURATIONS: MemoryDurations = MemoryDurations {
    load_cycles: 60.0,
    store_cycles: 60.0,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(FIXTURES).join(name)
}

fn analyze_text(text: &str) -> Vec<EntryAnalysis> {
    let (m, d) = parse(text);
    analyze_module(&m, &d, None, DURATIONS, &[])
}

fn analyze(name: &str) -> Vec<EntryAnalysis> {
    let text = std::fs::read_to_string(fixture(name)).expect("fixture exists");
    analyze_text(&text)
}

fn entry<'a>(all: &'a [EntryAnalysis], name: &str) -> &'a EntryAnalysis {
    all.iter().find(|e| e.name == name).expect("kernel present")
}

fn ptx_fixtures() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(FIXTURES)
        .expect("fixture dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
        // Fixtures written by hand (`*.hand.ptx`) have no compiler or ptxas report behind them.
        .filter(|p| !p.to_string_lossy().ends_with(".hand.ptx"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_fixture_parses_without_errors_or_warnings() {
    let files = ptx_fixtures();
    // 6 CUDA files x 5 routes + 2 OpenCL files.
    assert_eq!(files.len(), 32);
    for p in files {
        let text = std::fs::read_to_string(&p).unwrap();
        let (m, d) = parse(&text);
        let bad: Vec<_> = d
            .items
            .iter()
            .filter(|x| x.severity >= Severity::Warning)
            .collect();
        assert!(bad.is_empty(), "{}: {bad:?}", p.display());
        assert!(m.entries().count() >= 1, "{}", p.display());
        for e in analyze_text(&text) {
            assert!(
                e.diagnostics.is_empty(),
                "{} {}: {:?}",
                p.display(),
                e.name,
                e.diagnostics
            );
            assert_eq!(e.static_counts.unknown, 0);
        }
        // The ptxas report beside it names every kernel with a register count.
        let log = std::fs::read_to_string(p.with_extension("ptxas.txt")).unwrap();
        let res = parse_report(&log);
        for f in m.entries() {
            let r = res.iter().find(|r| r.name == f.name);
            assert!(
                r.and_then(|r| r.registers).is_some(),
                "{}: {}",
                p.display(),
                f.name
            );
        }
    }
}

const GOLDEN: &[&str] = &[
    "basics.nvcc-sm75",
    "basics.clang14-sm61",
    "dwt.nvcc-sm75",
    "dwt.nvrtc-sm52",
    "dwt.clang14-sm61",
    "fdtd.nvcc-sm75",
    "mtx_mul_vec.nvcc-sm75",
    "registration.nvcc-sm75",
    "gaussian.clang14-ocl-sm61",
    "matmul.clang14-ocl-sm61",
];

#[test]
fn golden_analysis_dumps() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut failures = Vec::new();
    for stem in GOLDEN {
        let golden_path = fixture(&format!("{stem}.golden"));
        let ptx = std::fs::read_to_string(fixture(&format!("{stem}.ptx"))).unwrap();
        let actual =
            serde_json::to_string_pretty(&serde_json::json!({ "entries": analyze_text(&ptx) }))
                .unwrap();
        if update {
            std::fs::write(&golden_path, format!("{ptx}\n{MARKER}\n{actual}\n")).unwrap();
            continue;
        }
        let golden = std::fs::read_to_string(&golden_path).unwrap_or_else(|_| {
            panic!(
                "{} missing; record with UPDATE_GOLDEN=1",
                golden_path.display()
            )
        });
        let (input, expected) = golden
            .split_once(&format!("\n{MARKER}\n"))
            .expect("golden file has the marker line");
        // The golden input is the committed fixture; the expected part is checked against it.
        assert_eq!(
            input, ptx,
            "{stem}: golden input differs from the .ptx fixture"
        );
        let again =
            serde_json::to_string_pretty(&serde_json::json!({ "entries": analyze_text(input) }))
                .unwrap();
        if again.trim() != expected.trim() {
            failures.push(stem.to_string());
        }
    }
    assert!(
        failures.is_empty(),
        "golden dumps differ (review, then UPDATE_GOLDEN=1): {failures:?}"
    );
}

/// Hand check against kernels/cuda/dwt.cu, for every compiler route.
/// dwt_matrix: one loop `for (k = 0; k < taps; ++k)` -> depth 1, runs `taps` times, taps being
/// the fifth parameter (`dwt_matrix_param_4`); in it two global loads (h[k], x[...]); after it
/// one global store (y[i]); no shared memory, no barrier.
/// dwt_lattice_stage: straight-line code: loads coef[2s], coef[2s+1], in[ia], in[ib] (4),
/// stores out[ia], out[ib] (2), no loop.
#[test]
fn dwt_kernels_checked_by_hand() {
    for route in [
        "nvcc-sm75",
        "nvcc-sm90",
        "nvrtc-sm52",
        "nvrtc-sm61",
        "clang14-sm61",
    ] {
        let all = analyze(&format!("dwt.{route}.ptx"));
        let m = entry(&all, "dwt_matrix");
        assert_eq!(m.loops.len(), 1, "{route}");
        assert_eq!(m.loops[0].depth, 1);
        assert_eq!(
            m.loops[0].trip_count,
            TripCount::Expr("dwt_matrix_param_4".into()),
            "{route}"
        );
        let c = &m.static_counts;
        assert_eq!(
            (c.global_loads, c.global_stores, c.shared_loads, c.barriers),
            (2, 1, 0, 0),
            "{route}"
        );
        let l = entry(&all, "dwt_lattice_stage");
        assert!(l.loops.is_empty());
        let c = &l.static_counts;
        assert_eq!((c.global_loads, c.global_stores), (4, 2), "{route}");
        // Both loads of the matrix kernel sit inside its repeat block, the store after it.
        let repeat = m.program.ops.iter().find_map(|o| match o {
            Op::Repeat { count, ops } => Some((count, ops)),
            _ => None,
        });
        let (count, ops) = repeat.expect("a repeat block");
        assert_eq!(*count, RepeatCount::Param("dwt_matrix_param_4".into()));
        assert_eq!(ops.iter().filter(|o| matches!(o, Op::Load(_))).count(), 2);
    }
}

/// Hand check against kernels/cuda/fdtd.cu: the z loop runs from R to nz - R - 1, i.e. nz - 2R
/// times (nz = eighth parameter, `param_7`), R = 1, 2, 4 for orders 2, 4, 8. Global loads per
/// iteration: p[i] once (used twice, no store between), 6R neighbours, the R + 1 coefficients
/// c[0..R] (reloaded each iteration since the store to p_next may alias c), p_prev[i] and
/// vel2[i]: 7R + 4 = 11, 18, 32. One store (p_next[i]). The unrolled r-loop leaves no loop.
#[test]
fn stencil_kernels_checked_by_hand() {
    for route in [
        "nvcc-sm75",
        "nvcc-sm90",
        "nvrtc-sm52",
        "nvrtc-sm61",
        "clang14-sm61",
    ] {
        let all = analyze(&format!("fdtd.{route}.ptx"));
        for (name, r) in [("fdtd_o2", 1u64), ("fdtd_o4", 2), ("fdtd_o8", 4)] {
            let e = entry(&all, name);
            assert_eq!(e.loops.len(), 1, "{route} {name}");
            assert_eq!(
                e.loops[0].trip_count,
                TripCount::Expr(format!("{name}_param_7 - {}", 2 * r)),
                "{route} {name}"
            );
            assert_eq!(e.static_counts.global_loads, 7 * r + 4, "{route} {name}");
            assert_eq!(e.static_counts.global_stores, 1, "{route} {name}");
        }
        // add_source: p[at] += w[step] -> two loads, one store; ricker_source: one store.
        let a = entry(&all, "add_source");
        assert_eq!(
            (a.static_counts.global_loads, a.static_counts.global_stores),
            (2, 1)
        );
        let r = entry(&all, "ricker_source");
        assert_eq!(
            (r.static_counts.global_loads, r.static_counts.global_stores),
            (0, 1)
        );
    }
}

/// Hand check against reduce_sum in kernels/cuda/basics.cu (BLOCK = 256): the halving loop
/// sees half = 128, 64, 32, 16, 8, 4, 2, 1 -> 8 iterations. Barriers: one before the loop and
/// one in it (2). Shared: store part[t] before the loop and part[t] in it (2 stores); loads
/// part[t], part[t + half] in the loop and part[0] at the end (3). Global: in[i] and out[...].
/// clang-14 keeps part[t] in a register across the loop (only thread t writes it), so it has one
/// shared load fewer in the loop (2).
#[test]
fn reduction_checked_by_hand() {
    for route in [
        "nvcc-sm75",
        "nvcc-sm90",
        "nvrtc-sm52",
        "nvrtc-sm61",
        "clang14-sm61",
    ] {
        let all = analyze(&format!("basics.{route}.ptx"));
        let e = entry(&all, "reduce_sum");
        assert_eq!(e.loops.len(), 1);
        assert_eq!(e.loops[0].trip_count, TripCount::Known(8), "{route}");
        let c = &e.static_counts;
        assert_eq!(
            (
                c.barriers,
                c.shared_stores,
                c.shared_loads,
                c.global_loads,
                c.global_stores
            ),
            (2, 2, if route.starts_with("clang") { 2 } else { 3 }, 1, 1),
            "{route}"
        );
        // matmul_tiled: for (t = 0; t < n; t += 16) runs ceil(n / 16) = (n + 15) / 16 times,
        // written as (n - 1) / 16 + 1; the k-loop is fully unrolled: 2 x 16 shared loads.
        let t = entry(&all, "matmul_tiled");
        assert_eq!(
            t.loops[0].trip_count,
            TripCount::Expr("(matmul_tiled_param_3 - 1) / 16 + 1".into()),
            "{route}"
        );
        assert_eq!(t.static_counts.shared_loads, 32);
        assert_eq!(t.static_counts.barriers, 2);
    }
}

/// puchala2022 Listing 4 for mtx_mul_vec: `calc 27`, then N times `load, load, calc 10, store,
/// calc 14`. Our kernel (nvcc 13.5, sm_75) gives the same loop body: two loads, one `fma`
/// (1 instruction: 1 - 1 + 10 = 10 cycles), the store, then five instructions (two pointer
/// increments, the counter increment, `setp`, `bra`: 5 - 1 + 10 = 14 cycles), repeated N times
/// (N = the first parameter). Differences, all before and after the loop: nvcc 13.5 hoists the
/// load of v_out[row] out of the loop, so the prologue is `calc 22` (13 instructions), `load`,
/// `calc 15` (6 instructions) instead of one `calc 27` (the paper's 18 instructions, after its
/// manual rearrangement of the PTX), and the final `ret` becomes its own `calc 10`.
#[test]
fn mtx_mul_vec_has_the_structure_of_listing_4() {
    let all = analyze("mtx_mul_vec.nvcc-sm75.ptx");
    let ops = &entry(&all, "mtx_mul_vec").program.ops;
    let body = vec![
        Op::Load(60.0),
        Op::Load(60.0),
        Op::Calc(10.0),
        Op::Store(60.0),
        Op::Calc(14.0),
    ];
    assert_eq!(
        ops,
        &vec![
            Op::Calc(13.0 - 1.0 + 10.0),
            Op::Load(60.0),
            Op::Calc(6.0 - 1.0 + 10.0),
            Op::Repeat {
                count: RepeatCount::Param("mtx_mul_vec_param_0".into()),
                ops: body.clone(),
            },
            Op::Calc(1.0 - 1.0 + 10.0),
        ]
    );
    // The loop body is the same for every route of our toolchain.
    for route in ["nvcc-sm90", "nvrtc-sm52", "nvrtc-sm61"] {
        let all = analyze(&format!("mtx_mul_vec.{route}.ptx"));
        let ops = &entry(&all, "mtx_mul_vec").program.ops;
        assert!(
            ops.iter()
                .any(|o| matches!(o, Op::Repeat { ops, .. } if *ops == body)),
            "{route}: {ops:?}"
        );
    }
}

/// landmark_similarity: three nested loops from -radius to radius (2 radius + 1 times each);
/// radius is the ninth parameter.
#[test]
fn nested_loops_of_the_landmark_kernel() {
    let all = analyze("registration.nvcc-sm75.ptx");
    let e = entry(&all, "landmark_similarity");
    let depths: Vec<u32> = e.loops.iter().map(|l| l.depth).collect();
    assert_eq!(depths, vec![1, 2, 3]);
    for l in &e.loops {
        assert_eq!(
            l.trip_count,
            TripCount::Expr("2*landmark_similarity_param_8 + 1".into())
        );
    }
    // transform_shared stages 12 floats in shared memory behind one barrier.
    let s = entry(&all, "transform_shared");
    assert_eq!(s.shared_bytes_declared, 48);
    assert_eq!(s.static_counts.barriers, 1);
    assert_eq!(entry(&all, "transform_global").static_counts.barriers, 0);
}
