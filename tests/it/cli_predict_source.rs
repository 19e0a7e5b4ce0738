//! `predict --source FILE.cu`: a CUDA source compiled for the device's architecture (needs the
//! GPU-less toolchain of `scripts/install-gpu-toolchain.sh`; skipped without it outside the
//! README's test command). The defines reach the compiler, the source's parameter names stand for
//! their positions, the registers come from the compiler's report, and a refused source or a bad
//! define is one line on exit code 2.

use crate::common::{json, run, temp_dir, write};
use kerneltime::compile::{Choice, Compiler, Language};

/// An axpy whose inner loop runs `REPS` times (a define), so the define's effect on the
/// dynamic instruction count is known from the source alone.
const KERNEL: &str = r#"
#ifndef REPS
#define REPS 1
#endif
extern "C" __global__ void axpy_reps(int n, float a, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = y[i];
        float s = x[i];
        #pragma unroll 1
        for (int r = 0; r < REPS; ++r) {
            v = a * s + v;
        }
        y[i] = v;
    }
}
"#;

fn have_cuda_compiler() -> bool {
    match Compiler::find(Language::Cuda, Choice::Auto) {
        Ok(_) => true,
        Err(e) => {
            crate::common::missing_tool(
                "toolchain",
                &format!("no CUDA compiler ({e}); run scripts/install-gpu-toolchain.sh"),
            );
            false
        }
    }
}

#[test]
fn a_cuda_source_is_compiled_for_the_device_with_its_defines_and_parameter_names() {
    if !have_cuda_compiler() {
        return;
    }
    let dir = temp_dir("predict-source");
    let src = write(&dir, "axpy_reps.cu", KERNEL);
    let src = src.to_str().unwrap();
    let cache = dir.join("cache");
    let cache = cache.to_str().unwrap();
    let predict = |reps: &str, args: [&str; 2]| {
        json(&[
            "predict",
            "--model",
            "all",
            "--json",
            "--device",
            "A100",
            "--source",
            src,
            "--define",
            reps,
            "--entry",
            "axpy_reps",
            "--grid",
            "64",
            "--block",
            "256",
            "--arg",
            args[0],
            "--arg",
            args[1],
            "--compile-cache",
            cache,
        ])
    };
    let named = predict("REPS=1", ["n=16384", "a=2.0"]);
    let positional = predict("REPS=1", ["0=16384", "1=2.0"]);
    let trace = |r: &serde_json::Value| {
        r["predictions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["model"] == "trace")
            .cloned()
            .expect("a trace prediction")
    };
    // The names of the declaration are its positions 0 and 1: the same launch, every model.
    assert_eq!(named["mix"], positional["mix"]);
    let times = |r: &serde_json::Value| -> Vec<serde_json::Value> {
        let all = r["predictions"].as_array().unwrap();
        all.iter().map(|p| p["time_us"].clone()).collect()
    };
    assert_eq!(times(&named), times(&positional));
    let notes = named["notes"].to_string();
    assert!(
        notes.contains("registers from the compiler's report"),
        "{notes}"
    );
    // 64 more trips of the loop: at least one fma each per warp (the loop is not unrolled, so
    // its counter and branch come on top).
    let more = predict("REPS=65", ["n=16384", "a=2.0"]);
    let inst = |r: &serde_json::Value| r["mix"]["inst"].as_f64().unwrap();
    assert!(
        inst(&more) >= inst(&named) + 64.0,
        "{} vs {}",
        inst(&more),
        inst(&named)
    );
    assert!(trace(&more)["time_us"].as_f64() > trace(&named)["time_us"].as_f64());
    // A scalar without a value: the error names the declaration's parameters.
    let (code, _, err) = run(&[
        "predict",
        "--device",
        "A100",
        "--source",
        src,
        "--entry",
        "axpy_reps",
        "--grid",
        "1",
        "--block",
        "32",
        "--arg",
        "n=32",
        "--compile-cache",
        cache,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("position 1") && err.contains("1 `a`"), "{err}");
    // A Kepler GPU, which neither NVRTC 12.9 (sm_50 and up) nor nvcc 13.5 (sm_75 and up)
    // targets: compiled for the oldest target they have, and said.
    let kepler = json(&[
        "predict",
        "--model",
        "trace",
        "--json",
        "--device",
        "Tesla K20c",
        "--source",
        src,
        "--define",
        "REPS=1",
        "--entry",
        "axpy_reps",
        "--grid",
        "64",
        "--block",
        "256",
        "--arg",
        "n=16384",
        "--arg",
        "a=2.0",
        "--compile-cache",
        cache,
    ]);
    let notes = kepler["notes"].to_string();
    assert!(notes.contains("not the device's sm_35"), "{notes}");
    assert!(kepler["time_us"].as_f64().unwrap() > 0.0);
    // n = 0: every thread skips the body.
    let none = predict("REPS=65", ["n=0", "a=2.0"]);
    assert!(inst(&none) < inst(&named));
}

#[test]
fn a_refused_source_or_a_bad_define_is_one_line_on_exit_2() {
    if !have_cuda_compiler() {
        return;
    }
    let dir = temp_dir("predict-source-bad");
    let bad = write(
        &dir,
        "bad.cu",
        "__global__ void k(float *x) { x[threadIdx.x] = undefined_name; }\n",
    );
    let launch = [
        "predict",
        "--device",
        "A100",
        "--source",
        bad.to_str().unwrap(),
        "--entry",
        "k",
        "--grid",
        "1",
        "--block",
        "32",
        "--no-compile-cache",
    ];
    let (code, _, err) = run(&launch);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--source"), "{err}");
    assert!(err.contains("refused"), "{err}");
    assert!(err.contains("undefined_name"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let mut with_define = launch.to_vec();
    with_define.extend(["--define", "3x=1"]);
    let (code, _, err) = run(&with_define);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--define") && err.contains("not a C identifier"),
        "{err}"
    );
    // A define beside --ptx would be silently ignored: refused instead.
    let ptx = crate::common::fixture("../../examples/saxpy.ptx");
    let (code, _, err) = run(&[
        "predict",
        "--device",
        "A100",
        "--ptx",
        ptx.to_str().unwrap(),
        "--entry",
        "saxpy",
        "--grid",
        "1",
        "--block",
        "32",
        "--define",
        "X=1",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--define") && err.contains("--source"),
        "{err}"
    );
}
