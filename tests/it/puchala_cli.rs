//! puchala2022 through the command line: golden cycle counts, Algorithms 1 and 3 against hand
//! calculations, catalogue/file equivalence, sweeps and error paths.

use crate::common::{json, output as run, temp_dir, write};
use crate::puchala_common::*;

const RTX2080: &str = "GeForce RTX 2080 (puchala2022)";

const LISTING1_LOAD: &str =
    r#"ops = [["load", 15], ["calc", 5], ["calc", 6], ["load", 35], ["calc", 10], ["store", 15]]"#;
const LISTING1_STORE: &str =
    r#"ops = [["load", 15], ["calc", 5], ["calc", 6], ["store", 35], ["calc", 10], ["store", 15]]"#;

#[test]
fn simulate_reproduces_listing1_golden_values() {
    let d = temp_dir("listing1");
    let load = write(&d, "l1.toml", LISTING1_LOAD);
    let store = write(&d, "l2.toml", LISTING1_STORE);
    let svg = d.join("profile.svg");
    let v = json(&[
        "simulate",
        "--program",
        load.to_str().unwrap(),
        "--warps",
        "3",
        "--t-m",
        "2",
        "--timeline",
        svg.to_str().unwrap(),
        "--json",
    ]);
    // Paper section 5.2 (Fig 7): 112 cycles.
    assert_eq!(v["cycles"].as_f64(), Some(112.0));
    let v = json(&[
        "simulate",
        "--program",
        store.to_str().unwrap(),
        "--warps",
        "3",
        "--t-m",
        "2",
        "--json",
    ]);
    // Fig 8: 111 cycles.
    assert_eq!(v["cycles"].as_f64(), Some(111.0));
    // Snapshot sanity of the execution profile chart.
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"), "an SVG document");
    for label in [
        "warp 1",
        "warp 3",
        "calc",
        "memory issue",
        "in flight",
        "idle",
        "cycles",
        "112",
    ] {
        assert!(text.contains(label), "timeline SVG lacks `{label}`");
    }
}

#[test]
fn simulate_with_a_repeat_parameter() {
    let d = temp_dir("simrepeat");
    let p = write(
        &d,
        "p.toml",
        r#"ops = [{ repeat = "K", ops = [["calc", 10]] }]"#,
    );
    // One warp, K = 4 calcs of 10 cycles: 40 cycles; two warps take turns: 80.
    let v = json(&[
        "simulate",
        "--program",
        p.to_str().unwrap(),
        "--warps",
        "2",
        "--t-m",
        "1",
        "--param",
        "k=4",
        "--json",
    ]);
    assert_eq!(v["cycles"].as_f64(), Some(80.0));
}

fn lattice_860m(dir: &std::path::Path, n: &str, k: &str) -> serde_json::Value {
    let dev = gtx860m(dir);
    json(&[
        "predict",
        "--model",
        "puchala",
        "--device-file",
        dev.to_str().unwrap(),
        "--kernel",
        "dwt-lattice",
        "--param",
        n,
        "--param",
        k,
        "--json",
    ])
}

#[test]
fn algorithms_1_and_3_on_an_odd_sm_count_by_hand() {
    let d = temp_dir("odd860m");
    let v = lattice_860m(&d, "N=1024", "K=8");
    // eq 18: K/2 + 1 = 5 launches of N/2 = 512 threads.
    // Algorithm 3: even SMs = 5 + 1 = 6; 512 / 6 = 85.3 per SM, within [32, 1024]:
    // 6 blocks of ceil(85.3) = 86 threads.
    assert_eq!(v["launch"]["launches"], 5);
    assert_eq!(v["launch"]["blocks"], 6);
    assert_eq!(v["launch"]["threads_per_block"], 86);
    // Algorithm 1: ceil(6 / 5) = 2 blocks per SM, ceil(86 / 32) = 3 warps per block,
    // 128 / 32 = 4 core packages, active = min(2, floor(64 / 3) = 21, 32) = 2, one full run,
    // no remainder, ceil(2 * 3 / 4) = 2 warps per core package.
    let b = &v["breakdown"];
    assert_eq!(b["blocks_per_sm"], 2);
    assert_eq!(b["warps_per_block"], 3);
    assert_eq!(b["core_packages_per_sm"], 4);
    assert_eq!(b["active_blocks_per_sm"], 2);
    assert_eq!(b["full_runs"], 1);
    assert_eq!(b["remaining_runs"], 0);
    assert_eq!(b["warps_per_core_package"], 2);
    // Algorithm 2 for Listing 9 with 2 warps, t_m = 15 (GTX 860M lattice):
    // warp 1: calc 0-30; loads issued at 30, 45, 60, 75 (done 40, 55, 180, 195); t = 90.
    // warp 2: calc 90-120; loads at 120, 135, 150, 165 (done 130, 145, 270, 285); t = 180.
    // warp 1: waits to 195; calc 195-213; stores at 213 (done 313), 228 (done 328); t = 243.
    // warp 2: waits to 285; calc 285-303; stores at 303 (done 403), 318 (done 418); t = 333.
    // End: wait for the last store, 418 cycles.
    assert_eq!(b["cycles_per_full_run"].as_f64(), Some(418.0));
    // Time: 5 launches x (t_p 7.9 us + 418 cycles / 1020 MHz).
    let expected = 5.0 * (7.9 + 418.0 / 1020.0);
    assert!(close(v["time_us"].as_f64().unwrap(), expected), "{v}");
}

#[test]
fn algorithm_3_cases_on_the_odd_sm_count() {
    let d = temp_dir("odd860m_cases");
    // Matrix DWT: N threads in one launch; even SMs = 6.
    let dev = gtx860m(&d);
    let launch = |n: &str| {
        let v = json(&[
            "predict",
            "--model",
            "puchala",
            "--device-file",
            dev.to_str().unwrap(),
            "--kernel",
            "dwt-matrix",
            "--param",
            n,
            "--param",
            "k=8",
            "--json",
        ]);
        (
            v["launch"]["blocks"].as_u64().unwrap(),
            v["launch"]["threads_per_block"].as_u64().unwrap(),
        )
    };
    assert_eq!(launch("n=16"), (1, 16)); // fewer than 32 threads: one block
    assert_eq!(launch("n=64"), (2, 32)); // 64 / 6 < 32 per SM: 64 / 32 blocks of a warp
    assert_eq!(launch("n=4096"), (6, 683)); // 4096 / 6 = 682.7 -> ceil 683
    assert_eq!(launch("n=8192"), (8, 1024)); // 8192 / 6 > 1024: 8192 / 1024 blocks
}

#[test]
fn remaining_run_by_hand_with_a_program_file() {
    let d = temp_dir("remaining");
    let dev = gtx860m(&d);
    let prog = write(&d, "calc.toml", r#"ops = [["calc", 10]]"#);
    let v = json(&[
        "predict",
        "--model",
        "puchala",
        "--device-file",
        dev.to_str().unwrap(),
        "--program",
        prog.to_str().unwrap(),
        "--blocks",
        "23",
        "--threads-per-block",
        "1024",
        "--t-p",
        "2",
        "--t-m",
        "1",
        "--json",
    ]);
    // ceil(23 / 5) = 5 blocks per SM, 32 warps per block, active = min(5, 64 / 32 = 2, 32) = 2;
    // full runs = floor(5 / 2) = 2 of ceil(2 * 32 / 4) = 16 warps per package: 16 * 10 = 160
    // cycles each; remaining run of 5 mod 2 = 1 block: ceil(32 / 4) = 8 warps, 80 cycles.
    let b = &v["breakdown"];
    assert_eq!(b["full_runs"], 2);
    assert_eq!(b["remaining_runs"], 1);
    assert_eq!(b["warps_per_core_package"], 16);
    assert_eq!(b["warps_per_core_package_remaining_run"], 8);
    assert_eq!(b["cycles_per_full_run"].as_f64(), Some(160.0));
    assert_eq!(b["cycles_remaining_run"].as_f64(), Some(80.0));
    // 2 us + (2 * 160 + 80) cycles / 1020 MHz.
    assert!(close(v["time_us"].as_f64().unwrap(), 2.0 + 400.0 / 1020.0));
}

#[test]
fn a_block_that_cannot_fit_exits_2_with_one_line() {
    let d = temp_dir("nofit");
    let dev = paper_device(
        &d,
        "5.0",
        "Tiny SM",
        1000.0,
        2,
        128,
        32,
        16,
        (1.0, 1.0),
        (1.0, 1.0),
    );
    let prog = write(&d, "calc.toml", r#"ops = [["calc", 10]]"#);
    // 1024 threads = 32 warps; the SM holds 16: floor(16 / 32) = 0 active blocks.
    let out = run(&[
        "predict",
        "--model",
        "puchala",
        "--device-file",
        dev.to_str().unwrap(),
        "--program",
        prog.to_str().unwrap(),
        "--blocks",
        "4",
        "--threads-per-block",
        "1024",
        "--t-p",
        "1",
        "--t-m",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("does not fit"), "{err}");
}

#[test]
fn catalogue_and_equivalent_file_give_the_same_prediction() {
    let d = temp_dir("equiv");
    let lattice = write(
        &d,
        "lattice.toml",
        "ops = [\n  [\"calc\", 30], [\"load\", 10], [\"load\", 10], [\"load\", 120], [\"load\", 120],\n  [\"calc\", 18], [\"store\", 100], [\"store\", 100],\n]\n[launch]\nthreads = \"N / 2\"\nlaunches = \"K / 2 + 1\"\n",
    );
    let matrix = write(
        &d,
        "matrix.toml",
        "ops = [[\"calc\", 33], { repeat = \"K\", ops = [[\"load\", 120], [\"load\", 160], [\"calc\", 17]] }, [\"store\", 100]]\n[launch]\nthreads = \"N\"\n",
    );
    for (kernel, file, t_p, t_m) in [
        ("dwt-lattice", &lattice, "5.6", "12.3"),
        ("dwt-matrix", &matrix, "5.2", "1.1"),
    ] {
        let builtin = json(&[
            "predict",
            "--model",
            "puchala",
            "--device",
            RTX2080,
            "--kernel",
            kernel,
            "--param",
            "n=2^6..2^20",
            "--param",
            "k=8,14",
            "--json",
        ]);
        let from_file = json(&[
            "predict",
            "--model",
            "puchala",
            "--device",
            RTX2080,
            "--program",
            file.to_str().unwrap(),
            "--param",
            "n=2^6..2^20",
            "--param",
            "k=8,14",
            "--t-p",
            t_p,
            "--t-m",
            t_m,
            "--json",
        ]);
        let (a, b) = (builtin.as_array().unwrap(), from_file.as_array().unwrap());
        assert_eq!(a.len(), 30);
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!(
                close(
                    x["time_us"].as_f64().unwrap(),
                    y["time_us"].as_f64().unwrap()
                ),
                "{x} vs {y}"
            );
            assert_eq!(x["launch"], y["launch"]);
        }
    }
}

#[test]
fn sweep_gives_one_object_per_combination() {
    let v = json(&[
        "predict",
        "--model",
        "puchala",
        "--device",
        RTX2080,
        "--kernel",
        "dwt-matrix",
        "--param",
        "n=64,128",
        "--param",
        "K=8",
        "--json",
    ]);
    let a = v.as_array().expect("a list parameter gives an array");
    assert_eq!(a.len(), 2);
    assert_eq!(a[0]["params"]["n"], 64);
    assert_eq!(a[1]["params"]["n"], 128);
    for p in a {
        assert_eq!(p["model"], "puchala");
        assert_eq!(p["device"], RTX2080);
        for key in [
            "launch_time_us",
            "full_runs",
            "remaining_runs",
            "cycles_per_full_run",
            "warps_per_core_package",
        ] {
            assert!(p["breakdown"].get(key).is_some(), "breakdown lacks {key}");
        }
    }
    let single = json(&[
        "predict",
        "--model",
        "puchala",
        "--device",
        RTX2080,
        "--kernel",
        "dwt-matrix",
        "--param",
        "n=64",
        "--param",
        "k=8",
        "--json",
    ]);
    assert!(single.is_object());
}

#[test]
fn rtx2080_matrix_small_size_by_hand() {
    // N = 64 threads on the paper's RTX 2080 (68 SMs): 64 / 68 < 32 per SM, so 64 / 32 = 2
    // blocks of 32 threads; 1 block per SM, 1 warp per block, 1 warp on one core package.
    // One warp of Listing 7 with K = 2 and t_m = 1.1 runs alone: calc 33; load at 33 (done
    // 153), load at 34.1 (done 194.1); t = 35.2, switch; wait to 194.1; calc 17 -> 211.1;
    // load at 211.1 (done 331.1), load at 212.2 (done 372.2); t = 213.3; wait to 372.2;
    // calc 17 -> 389.2; store at 389.2 (done 489.2). T_c = 489.2 cycles.
    let v = json(&[
        "predict",
        "--model",
        "puchala",
        "--device",
        RTX2080,
        "--kernel",
        "dwt-matrix",
        "--param",
        "n=64",
        "--param",
        "k=2",
        "--json",
    ]);
    assert_eq!(v["launch"]["blocks"], 2);
    assert_eq!(v["launch"]["threads_per_block"], 32);
    // 5.2 us + 489.2 cycles / 1545 MHz.
    assert!(
        close(v["time_us"].as_f64().unwrap(), 5.2 + 489.2 / 1545.0),
        "{v}"
    );
}

#[test]
fn error_paths_exit_2_with_one_line() {
    let d = temp_dir("errors");
    let bad_kind = write(
        &d,
        "bad.toml",
        "ops = [\n [\"calc\", 1],\n [\"jump\", 2]\n]\n",
    );
    let neg = write(&d, "neg.toml", r#"ops = [["load", -3]]"#);
    let needs_m = write(
        &d,
        "m.toml",
        r#"ops = [{ repeat = "m", ops = [["calc", 1]] }]"#,
    );
    let calc = write(&d, "calc.toml", r#"ops = [["calc", 1]]"#);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "simulate",
                "--program",
                bad_kind.to_str().unwrap(),
                "--warps",
                "1",
                "--t-m",
                "1",
            ],
            "line 3, ops[1]: unknown operation kind `jump`",
        ),
        (
            vec![
                "simulate",
                "--program",
                neg.to_str().unwrap(),
                "--warps",
                "1",
                "--t-m",
                "1",
            ],
            "must not be negative",
        ),
        (
            vec![
                "simulate",
                "--program",
                needs_m.to_str().unwrap(),
                "--warps",
                "1",
                "--t-m",
                "1",
            ],
            "--param m",
        ),
        (
            vec![
                "simulate",
                "--program",
                calc.to_str().unwrap(),
                "--warps",
                "1",
                "--t-m=-1",
            ],
            "--t-m",
        ),
        (
            vec![
                "predict",
                "--model",
                "puchala",
                "--device",
                RTX2080,
                "--kernel",
                "dwt-matrix",
                "--param",
                "n=64",
            ],
            "--param k",
        ),
        (
            vec![
                "predict", "--model", "puchala", "--device", RTX2080, "--kernel", "fft", "--param",
                "n=64",
            ],
            "unknown kernel",
        ),
        (
            vec![
                "predict",
                "--model",
                "puchala",
                "--device",
                RTX2080,
                "--kernel",
                "dwt-lattice",
                "--param",
                "n=64",
                "--param",
                "k=7",
            ],
            "even",
        ),
        (
            vec![
                "predict",
                "--model",
                "puchala",
                "--device",
                RTX2080,
                "--program",
                calc.to_str().unwrap(),
                "--blocks",
                "1",
                "--threads-per-block",
                "32",
            ],
            "--t-p",
        ),
        (
            vec![
                "predict",
                "--model",
                "puchala",
                "--device",
                RTX2080,
                "--kernel",
                "mtx-mul-vec",
                "--param",
                "n=64",
            ],
            "--t-p",
        ),
        (
            vec![
                "predict",
                "--model",
                "puchala",
                "--device",
                RTX2080,
                "--program",
                calc.to_str().unwrap(),
                "--t-p",
                "1",
                "--t-m",
                "1",
            ],
            "--blocks",
        ),
        (
            vec![
                "predict",
                "--model",
                "puchala",
                "--device",
                RTX2080,
                "--kernel",
                "dwt-matrix",
                "--param",
                "n=2^9..2^3",
                "--param",
                "k=8",
            ],
            "--param n",
        ),
        (
            vec!["predict", "--model", "puchala", "--kernel", "dwt-matrix"],
            "--device",
        ),
        (vec!["explain", "fft"], "topics"),
        (vec!["reproduce", "nopaper"], "unknown paper"),
    ];
    for (args, want) in cases {
        let out = run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: `{err}` lacks `{want}`");
    }
}

#[test]
fn explain_gives_formulas_and_values() {
    let out = run(&[
        "explain",
        "dwt-matrix",
        "--param",
        "n=1024",
        "--param",
        "k=8",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    // n (2k - 1) = 1024 * 15 = 15360; 2k - 1 = 15.
    assert!(
        text.contains("n (2k - 1)") && text.contains("15360"),
        "{text}"
    );
    let v = json(&[
        "explain",
        "dwt-lattice",
        "--param",
        "N=1024",
        "--param",
        "K=8",
        "--json",
    ]);
    // n (k + 1) = 1024 * 9 = 9216; 2k + 2 = 18; 2D: 2 * 1024 * (1024 + 6) * 9 = 18984960.
    let c = &v["values"][0]["complexity"];
    assert_eq!(c["operations_1d"].as_f64(), Some(9216.0));
    assert_eq!(c["steps_1d"].as_f64(), Some(18.0));
    assert_eq!(c["operations_2d"].as_f64(), Some(18_984_960.0));
    assert_eq!(c["steps_2d"].as_f64(), Some(36.0));
}
