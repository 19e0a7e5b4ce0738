//! The LSLAG commands through the binary: `predict --model lslag`, `lslag fit`, `lslag cost`.

use crate::common::output as kerneltime;

use std::path::PathBuf;
use std::process::Output;

fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kerneltime-lslag-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// Exit code 2 and a stderr that contains every `needle`.
fn usage_error(out: &Output, needles: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    for n in needles {
        assert!(err.contains(n), "`{n}` not in: {err}");
    }
}

#[test]
fn predict_builtin_table_ii_set() {
    // B1 at gamma = 8, S = 1024 (hand): t_k = (0.001/8 + 0.008) * 1024 = 8.32,
    // t_1 = 0.004 * 1024 = 4.096, t_c = (0.005/8 + 0.068) * 1024 = 70.272, t_w = 82.688.
    let v = json(&kerneltime(&[
        "predict",
        "--model",
        "lslag",
        "--platform",
        "Baffin RX460",
        "--app",
        "matrix_multiplication",
        "--gamma",
        "8",
        "--s",
        "1024",
        "--json",
    ]));
    for (k, want) in [
        ("t_w", 82.688),
        ("t_k", 8.32),
        ("t_1", 4.096),
        ("t_c", 70.272),
    ] {
        assert!(close(v[k].as_f64().unwrap(), want), "{k}: {}", v[k]);
        let b = &v["breakdown"][format!("{k}_us")];
        assert!(close(b.as_f64().unwrap(), want), "breakdown {k}: {b}");
    }
    assert!(close(v["time_us"].as_f64().unwrap(), 82.688));
    assert_eq!(v["model"], "lslag");
    assert_eq!(v["device"], "Baffin RX460");
}

#[test]
fn predict_errors_exit_2() {
    let base = ["predict", "--model", "lslag", "--gamma", "8", "--s", "512"];
    let mut a = base.to_vec();
    a.extend(["--platform", "Adreno", "--app", "gaussian_filtering"]);
    usage_error(&kerneltime(&a), &["Adreno", "Baffin RX460", "Mali T628"]);
    let mut a = base.to_vec();
    a.extend(["--platform", "Mali T628", "--app", "fft"]);
    usage_error(&kerneltime(&a), &["fft", "matrix_multiplication"]);
    let mut a = base.to_vec();
    a.extend(["--platform", "Mali T628"]);
    usage_error(&kerneltime(&a), &["--app"]);
    usage_error(&kerneltime(&base), &["--params"]);
    usage_error(
        &kerneltime(&[
            "predict",
            "--model",
            "lslag",
            "--platform",
            "Mali T628",
            "--app",
            "gaussian_filtering",
            "--s",
            "512",
        ]),
        &["--gamma"],
    );
    usage_error(
        &kerneltime(&[
            "predict",
            "--model",
            "lslag",
            "--platform",
            "Mali T628",
            "--app",
            "gaussian_filtering",
            "--s",
            "512",
            "--gamma",
            "0",
        ]),
        &["--gamma"],
    );
}

/// Noiseless samples of Table II row M3 on the paper's grid, 2 repetitions, as CSV.
fn m3_csv() -> String {
    let (ag, bg, a1, b1, ac, bc) = (0.003, 0.023, 0.022, 0.0, 0.082, 0.460);
    let mut text = String::from("gamma,s,t_w,t_1,t_k\n");
    for s in [512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0] {
        for gamma in [8.0, 16.0, 32.0, 64.0, 128.0, 256.0] {
            let t_k = (ag / gamma + bg) * s;
            let t_1 = (a1 / gamma + b1) * s;
            let t_c = (ac / gamma + bc) * s;
            for _ in 0..2 {
                text.push_str(&format!("{gamma},{s},{},{t_1},{t_k}\n", t_k + t_1 + t_c));
            }
        }
    }
    text
}

#[test]
fn fit_writes_a_params_file_that_predict_loads() {
    let dir = scratch("fit");
    let csv = dir.join("m3.csv");
    let params = dir.join("m3.toml");
    std::fs::write(&csv, m3_csv()).unwrap();
    let v = json(&kerneltime(&[
        "lslag",
        "fit",
        "--samples",
        csv.to_str().unwrap(),
        "--seed",
        "5",
        "--json",
        "-o",
        params.to_str().unwrap(),
    ]));
    assert_eq!(
        (v["samples"].as_u64(), v["test_rows"].as_u64()),
        (Some(72), Some(14))
    );
    let e = &v["lslag"]["elements"];
    assert!(close(e["interconnect"]["alpha"].as_f64().unwrap(), 0.082));
    assert!(close(e["interconnect"]["beta"].as_f64().unwrap(), 0.460));
    assert!(close(e["gpu"]["beta"].as_f64().unwrap(), 0.023));
    assert!(close(v["lslag"]["fidelity"].as_f64().unwrap(), 1.0));
    assert!(v["lsla"]["fidelity"].is_number());
    assert!(v["lsla"]["elements"]["gpu"]["a"].is_number());
    // M3 at gamma = 64, S = 4096 (hand): t_k = (0.003/64 + 0.023) * 4096 = 0.192 + 94.208,
    // t_1 = 0.022/64 * 4096 = 1.408, t_c = 0.082/64 * 4096 + 0.46 * 4096 = 5.248 + 1884.16.
    let p = json(&kerneltime(&[
        "predict",
        "--model",
        "lslag",
        "--params",
        params.to_str().unwrap(),
        "--gamma",
        "64",
        "--s",
        "4096",
        "--json",
    ]));
    assert!(close(p["t_k"].as_f64().unwrap(), 94.4));
    assert!(close(p["t_1"].as_f64().unwrap(), 1.408));
    assert!(close(p["t_c"].as_f64().unwrap(), 1889.408));
    assert!(close(p["t_w"].as_f64().unwrap(), 94.4 + 1.408 + 1889.408));
    // Text output works too.
    let out = kerneltime(&["lslag", "fit", "--samples", csv.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("fidelity"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_samples_name_the_file_and_line() {
    let dir = scratch("bad");
    let good_rows = "8,512,10,2,3\n16,512,9,2,2\n32,512,8,2,1\n";
    let cases = [
        (
            "negative",
            format!("gamma,s,t_w,t_1,t_k\n{good_rows}8,1024,-1,2,3\n"),
            "line 5",
        ),
        (
            "gamma0",
            format!("gamma,s,t_w,t_1,t_k\n{good_rows}0,1024,10,2,3\n"),
            "line 5",
        ),
        (
            "nan",
            format!("gamma,s,t_w,t_1,t_k\n8,1024,NaN,2,3\n{good_rows}"),
            "line 2",
        ),
        (
            "missing",
            "gamma,s,t_w,t_k\n8,1024,10,3\n".to_string(),
            "line 1: missing column `t_1`",
        ),
        (
            "few",
            "gamma,s,t_w,t_1,t_k\n8,512,10,2,3\n".to_string(),
            "training rows",
        ),
    ];
    for (name, text, needle) in cases {
        let path = dir.join(format!("{name}.csv"));
        std::fs::write(&path, text).unwrap();
        let out = kerneltime(&["lslag", "fit", "--samples", path.to_str().unwrap()]);
        usage_error(&out, &[&format!("{name}.csv"), needle]);
    }
    let out = kerneltime(&[
        "lslag",
        "fit",
        "--samples",
        dir.join("absent.csv").to_str().unwrap(),
    ]);
    usage_error(&out, &["absent.csv"]);
    let _ = std::fs::remove_dir_all(&dir);
}

const GRAPH: &str = r#"
unit = "us"
lambda = 0.5
[[processing_element]]
name = "PE1"
cost_per_quantum = 0.004
[[processing_element]]
name = "GPU"
cost_per_quantum = 0.008
fixed_cost = 2.0
[[communication_node]]
name = "CN"
cost_per_quantum = 0.068
fixed_cost = 10.0
[[token]]
name = "io"
element = "PE1"
quanta = 1000
[[token]]
name = "kernel"
element = "GPU"
quanta = 1000
count = 3
[[token]]
name = "fifo"
element = "CN"
quanta = 500
"#;

#[test]
fn cost_of_a_mapped_graph() {
    let dir = scratch("cost");
    let path = dir.join("g.toml");
    std::fs::write(&path, GRAPH).unwrap();
    let v = json(&kerneltime(&[
        "lslag",
        "cost",
        "--graph",
        path.to_str().unwrap(),
        "--json",
    ]));
    // io: 0.004 * 1000 = 4; kernel: 3 * (0.008 * 1000 + 2) = 30; processing 34.
    // fifo: 0.068 * 500 + 10 = 44; total = 34 + 0.5 * 44 = 56.
    assert!(close(v["processing_cost"].as_f64().unwrap(), 34.0));
    assert!(close(v["communication_cost"].as_f64().unwrap(), 44.0));
    assert!(close(v["total_cost"].as_f64().unwrap(), 56.0));
    assert_eq!(v["unit"], "us");
    let out = kerneltime(&["lslag", "cost", "--graph", path.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("56"));

    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        GRAPH.replace("element = \"GPU\"", "element = \"DSP\""),
    )
    .unwrap();
    let out = kerneltime(&["lslag", "cost", "--graph", bad.to_str().unwrap()]);
    usage_error(&out, &["bad.toml", "token `kernel`", "DSP", "GPU"]);
    let _ = std::fs::remove_dir_all(&dir);
}
