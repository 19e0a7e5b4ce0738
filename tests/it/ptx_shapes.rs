//! PTX as public projects write it (issue 17): fixtures written by us in the shapes of the public
//! files that used to fail, under `tests/fixtures/ptx/shapes/` (hand-written, plus
//! `calls.nvcc-sm75.ptx` compiled from `kernels/shapes/calls.cu`). Each parses without errors,
//! predicts with the trace model, and emulates to the dynamic instruction counts and sectors per
//! request derived by hand in the comments below (a misread shape changes them: an unknown
//! address costs one sector per lane, an unfollowed call drops the callee's instructions).

use std::path::PathBuf;

use crate::common::run;
use kerneltime::emulate::{emulate, Emulation, KernelArg, LaunchDims, Options};
use kerneltime::ptx::analysis::analyze_module;
use kerneltime::ptx::diag::Severity;
use kerneltime::ptx::parse;
use kerneltime::ptx::program::MemoryDurations;
use kerneltime::workload::trace::MemAccess;

fn path(name: &str) -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/ptx/shapes"
    ))
    .join(name)
}

fn text(name: &str) -> String {
    std::fs::read_to_string(path(name)).expect("shape fixture")
}

/// Emulates one warp (a 32-thread block) of `entry`.
fn warp(name: &str, entry: &str, args: &[&str]) -> kerneltime::Result<Emulation> {
    let (m, _) = parse(&text(name));
    let args = KernelArg::parse_all(args)?;
    emulate(
        &m,
        entry,
        LaunchDims {
            grid: [1, 1, 1],
            block: [32, 1, 1],
        },
        &args,
        Options::default(),
    )
}

fn sectors(e: &Emulation) -> Vec<u32> {
    e.warps[0].accesses.iter().map(|a| a.sectors).collect()
}

fn instructions(e: &Emulation) -> usize {
    e.warps[0].ops.len()
}

/// (file, kernel, arguments) of every shape fixture's kernels.
const KERNELS: &[(&str, &str, &[&str])] = &[
    ("plain_registers.ptx", "copy_plain", &[]),
    ("vectors.ptx", "vectors", &[]),
    ("textures.ptx", "textures", &["2=0.5"]),
    ("names.ptx", "%1", &[]),
    ("reg_calls.ptx", "reg_calls", &["depth=3"]),
    (
        "calls.nvcc-sm75.ptx",
        "by_value",
        &["0+0=68719476736", "0+8=5", "0+12=1.5", "0+16=2"],
    ),
    ("calls.nvcc-sm75.ptx", "recursive", &["1=2"]),
    ("calls.nvcc-sm75.ptx", "textured", &[]),
];

#[test]
fn every_shape_parses_cleanly_and_predicts() {
    let mut files: Vec<&str> = KERNELS.iter().map(|k| k.0).collect();
    files.dedup();
    for f in &files {
        let (m, d) = parse(&text(f));
        let bad: Vec<_> = d
            .items
            .iter()
            .filter(|x| x.severity >= Severity::Warning)
            .collect();
        assert!(bad.is_empty(), "{f}: {bad:?}");
        let durations = MemoryDurations {
            load_cycles: 1.0,
            store_cycles: 1.0,
        };
        for e in analyze_module(&m, &d, None, durations, &[]) {
            assert_eq!(e.static_counts.unknown, 0, "{f} {}", e.name);
            assert!(
                e.diagnostics.is_empty(),
                "{f} {}: {:?}",
                e.name,
                e.diagnostics
            );
        }
    }
    for (f, entry, args) in KERNELS {
        let p = path(f);
        let mut argv = vec![
            "predict",
            "--model",
            "trace",
            "--device",
            "V100",
            "--ptx",
            p.to_str().unwrap(),
            "--entry",
            entry,
            "--grid",
            "64",
            "--block",
            "128",
            "--json",
        ];
        for a in *args {
            argv.push("--arg");
            argv.push(a);
        }
        let (code, out, err) = run(&argv);
        assert_eq!(code, 0, "{f} {entry}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        let t = v["time_us"].as_f64().expect("a time");
        assert!(t.is_finite() && t > 0.0, "{f} {entry}: {t}");
    }
}

#[test]
fn registers_without_percent_are_registers() {
    // Each lane copies 16 bytes at in + 16 * tid (32 lanes: 512 contiguous bytes = 16 sectors
    // of 32 bytes) and writes 4 bytes at flags + 4 * tid (128 bytes = 4 sectors). Read as
    // unknown data, each of the three requests would cost one sector per lane (32).
    let e = warp("plain_registers.ptx", "copy_plain", &[]).unwrap();
    assert_eq!(sectors(&e), [16, 16, 4]);
    assert!(e.warps[0]
        .accesses
        .iter()
        .all(|a: &MemAccess| a.addresses_known));
    // 3 ld.param, mov, mul.wide, 2 add, ld, st, mul.wide, add, setp, mov, st, ret.
    assert_eq!(instructions(&e), 15);
}

#[test]
fn vector_operands_pack_unpack_and_pass_through_calls() {
    // pair = {tid, 2 tid}; swap_add returns {2 tid, 3 tid}, so the load and the first store are
    // at out + 4 * 3 tid (stride 12): the 16-byte loads span bytes 0..388 (13 sectors), the
    // 4-byte stores 0..376 (12 sectors). The second store goes through a pack and an
    // unpack/repack to out + 4 tid (4 sectors).
    let e = warp("vectors.ptx", "vectors", &[]).unwrap();
    assert_eq!(sectors(&e), [13, 12, 4]);
    // Kernel: ld.param, mov, shl, mov.v2, call, mul.wide, add, ld, mov, st, cvt, mov, mov
    // (pack), mul.wide, add, mov (unpack), mov (pack), st, ret = 19; swap_add: add, 3 mov, ret.
    assert_eq!(instructions(&e), 24);
}

#[test]
fn texture_fetches_are_loads_with_unknown_values() {
    let (m, d) = parse(&text("textures.ptx"));
    let durations = MemoryDurations {
        load_cycles: 1.0,
        store_cycles: 1.0,
    };
    let a = analyze_module(&m, &d, None, durations, &[]);
    assert_eq!(a[0].classes.get("ld.texture"), Some(&4));
    // tex.1d at {tid} and tex.2d at {tid, c}: 32 distinct texels each; tex.3d and tld4 at a
    // parameter's coordinates: one texel for the whole warp. Then one 4-byte store per lane.
    let e = warp("textures.ptx", "textures", &["2=0.5"]).unwrap();
    assert_eq!(sectors(&e), [32, 32, 1, 1, 4]);
    assert!(e.notes.iter().any(|n| n.contains("texture fetch")));
    // 3 ld.param, cvta, mov, cvt, 4 texture fetches, 2 add, mul.wide, add, st, ret.
    assert_eq!(instructions(&e), 16);
    // The fetched values are unknown: a store address built from one would be unknown too,
    // which the nvcc fixture's `textured` does not do (its store is at out + 4 tid).
    let t = warp("calls.nvcc-sm75.ptx", "textured", &[]).unwrap();
    assert_eq!(sectors(&t), [32, 4]);
}

#[test]
fn by_value_aggregates_take_fields_by_offset() {
    // struct Params { float *out; int n; float scale; int stride; } passed by value: the kernel
    // reads n at +8, scale at +12, stride at +16 and the pointer at +0.
    let given = ["0+0=68719476736", "0+8=5", "0+12=1.5", "0+16=2"];
    let e = warp("calls.nvcc-sm75.ptx", "by_value", &given).unwrap();
    // n = 5: the loop unrolled by 4 runs once (four calls) and the remainder loop once (one
    // call). Kernel: 16 before the loops, 31 in the unrolled body, 2 to the remainder, 10 in
    // it, 10 after = 69; square: ld.param, mul, st.param, ret = 4 per call, 5 calls = 20.
    assert_eq!(instructions(&e), 89);
    // square's `mul.f32` (the second instruction after the kernel's 69) ran five times.
    let (m, _) = parse(&text("calls.nvcc-sm75.ptx"));
    let kernel_len = m
        .entries()
        .find(|f| f.name == "by_value")
        .unwrap()
        .instructions()
        .count();
    assert_eq!(kernel_len, 69);
    let calls = e.warps[0]
        .ops
        .iter()
        .filter(|o| o.instr as usize == kernel_len + 1)
        .count();
    assert_eq!(calls, 5);
    // stride 2: 4-byte stores 8 bytes apart, 256 bytes = 8 sectors.
    assert_eq!(sectors(&e), [8]);
    assert!(e.params[0].value.contains("+8=5"), "{:?}", e.params);
    // Without fields the pointer and the bound are unknown: one sector per lane, and notes.
    let u = warp("calls.nvcc-sm75.ptx", "by_value", &[]).unwrap();
    assert_eq!(sectors(&u), [32]);
    assert_eq!(u.params[0].kind, "unknown");
    assert!(u
        .notes
        .iter()
        .any(|n| n.contains("loop branch depends on data")));
    // A number for the whole aggregate, an offset outside it, or an offset on a scalar: errors
    // that say what to write instead.
    let err = |args: &[&str], entry: &str| {
        warp("calls.nvcc-sm75.ptx", entry, args)
            .unwrap_err()
            .to_string()
    };
    assert!(err(&["0=5"], "by_value").contains("by_value_param_0+0=VALUE"));
    assert!(err(&["0+24=5"], "by_value").contains("outside it"));
    assert!(err(&["1+4=5"], "recursive").contains("scalar"));
    let a = KernelArg::parse("param_0+0x10=7").unwrap();
    assert_eq!((a.param.as_str(), a.offset), ("param_0", Some(16)));
}

#[test]
fn calls_into_func_are_followed_with_their_own_frames() {
    // nvcc's callseq through .param variables: depth_sum(2) = 3 sets the store stride to
    // 3 * 4 = 12 bytes (bytes 0..376: 12 sectors). Kernel 15 instructions; depth_sum(2): 13 to
    // the remainder test, 2 there, 6 per iteration x 2, st.param and ret = 29.
    let e = warp("calls.nvcc-sm75.ptx", "recursive", &["1=2"]).unwrap();
    assert_eq!((instructions(&e), sectors(&e)), (44, vec![12]));
    // Registers as parameters, two return values, true recursion: add_mult(tid, 2) gives the
    // product 2 tid (stride 8: 8 sectors); rsum(3) = 6 gives stride 24 (4 lanes per 3 sectors:
    // 24 sectors). Kernel 20 instructions, add_mult 4, rsum 7 per level with n > 0 (3 levels)
    // and 4 at n = 0: 20 + 4 + 21 + 4 = 49.
    let r = warp("reg_calls.ptx", "reg_calls", &["depth=3"]).unwrap();
    assert_eq!((instructions(&r), sectors(&r)), (49, vec![8, 24]));
    // The call through a pointer and the one into a prototype stay single instructions.
    assert!(r
        .notes
        .iter()
        .any(|n| n.contains("`fptr`") && n.contains("function pointer")));
    assert!(r
        .notes
        .iter()
        .any(|n| n.contains("`vprintf`") && n.contains("no body")));
    // Recursion deeper than the bound is a clear error, not a hang or a stack overflow: even
    // on a thread with a 1 MiB stack (half a test thread's), in a debug build.
    let deep = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(|| {
            warp("reg_calls.ptx", "reg_calls", &["depth=100"])
                .unwrap_err()
                .to_string()
        })
        .unwrap()
        .join()
        .unwrap();
    assert!(
        deep.contains("nested more than 64 deep") && deep.contains("rsum"),
        "{deep}"
    );
}

#[test]
fn kernel_named_percent_one_and_dotted_and_quoted_functions() {
    // %1 calls scale.by.two(tid) = 2 tid (stride 8: 8 sectors) and "plus.one". Kernel 12
    // instructions, scale.by.two 4, plus.one 1.
    let e = warp("names.ptx", "%1", &[]).unwrap();
    assert_eq!((instructions(&e), sectors(&e)), (17, vec![8]));
    let p = path("names.ptx");
    let (code, out, err) = run(&[
        "trace",
        p.to_str().unwrap(),
        "--entry",
        "%1",
        "--grid",
        "2",
        "--block",
        "64",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("%1"), "{out}");
}

#[test]
fn the_step_budget_error_says_how_to_narrow_the_launch() {
    // n = 10^9 iterations cannot fit the per-warp budget.
    let given = ["0+0=68719476736", "0+8=1000000000", "0+12=1.5", "0+16=1"];
    let err = warp("calls.nvcc-sm75.ptx", "by_value", &given)
        .unwrap_err()
        .to_string();
    assert!(err.contains("per-warp step budget"), "{err}");
    assert!(err.contains("narrow the launch"), "{err}");
    assert!(err.contains("raise the per-warp step budget"), "{err}");
}
