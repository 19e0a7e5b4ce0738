//! `calibrate`, `evaluate` (table, JSON, report with HTML checked in headless Chromium when
//! installed) and `reproduce parra2016` through the real binary.

use crate::common::bin;

use std::path::{Path, PathBuf};
use std::process::Command;

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kerneltime-cli-eval-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A counters table (amaris2018 columns) of two variants of one kernel on two GPUs. Times are
/// made up: a 5 us launch plus 0.002 us per warp instruction, times 1.5 for variant b.
fn counters_csv(dir: &Path) -> PathBuf {
    let mut s = String::from("source,gpu,app,kernel,input_size_1,duration_s,grid_x,grid_y,grid_z,block_x,block_y,block_z,regs_per_thread,static_smem,dynamic_smem,warps_launched,inst_executed,gld_transactions,gst_transactions,dram_read_transactions,dram_write_transactions\n");
    for gpu in ["GTX-680", "TitanX"] {
        for (app, k) in [("va", 1.0), ("vb", 1.5)] {
            for e in 8..16u32 {
                let n = 1u64 << e;
                let blocks = n / 128;
                let warps = (blocks * 4) as f64;
                let inst = warps * 50.0 * k;
                let t_us = 5.0 + 0.002 * inst;
                s.push_str(&format!(
                    "NCA:x,{gpu},{app},\"vec(float*, int)\",{n},{},{blocks},1,1,128,1,1,12,0,0,{warps},{inst},{},{},{},{}\n",
                    t_us * 1e-6,
                    warps * 4.0,
                    warps * 4.0,
                    warps * 4.0 * k,
                    warps * 4.0
                ));
            }
        }
    }
    let p = dir.join("counters.csv");
    std::fs::write(&p, s).unwrap();
    p
}

fn run_ok(args: &[&str]) -> Vec<u8> {
    let out = bin().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn calibrate_then_evaluate_json_and_report() {
    let d = temp_dir("flow");
    let data = counters_csv(&d);
    let cal = d.join("cal.toml");
    run_ok(&[
        "calibrate",
        "--model",
        "roofline",
        "--measurements",
        data.to_str().unwrap(),
        "--folds",
        "4",
        "--bootstrap",
        "3",
        "-o",
        cal.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&cal).unwrap();
    assert!(text.contains("model = \"roofline\""), "{text}");
    assert!(text.contains("mape_cv"), "{text}");
    assert!(text.contains("intervals"), "{text}");

    // predict --calibration: hand-made roofline inputs on the GTX 680 (8 SMs x 192 cores x 2
    // FLOP per cycle at 1058 MHz; 192.26 GB/s): 10 us of compute and 4 us of DRAM traffic.
    let inputs = d.join("roof.toml");
    std::fs::write(
        &inputs,
        format!(
            "flops = {}\ndram_bytes = {}\n",
            8.0 * 192.0 * 2.0 * 1058.0 * 10.0,
            192.26e3 * 4.0
        ),
    )
    .unwrap();
    let out = run_ok(&[
        "predict",
        "--model",
        "roofline",
        "--device",
        "GTX-680",
        "--kernel",
        "va/vec",
        "--inputs",
        inputs.to_str().unwrap(),
        "--calibration",
        cal.to_str().unwrap(),
        "--json",
    ]);
    let p: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let file: toml::Value = toml::from_str(&text).unwrap();
    let group = file["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| {
            g["device"].as_str() == Some("GeForce GTX 680")
                && g["kernel"].as_str() == Some("va/vec")
        })
        .unwrap();
    let q = |k: &str| group["params"][k].as_float().unwrap();
    // The launch overhead is a scale on the roofline's 5 us for compute capability 3.0.
    let expected = (10.0 / q("compute_efficiency")).max(4.0 / q("memory_efficiency"))
        + q("launch_overhead_scale") * 5.0;
    let got = p["time_us"].as_f64().unwrap();
    assert!(
        (got - expected).abs() < 1e-9 * expected,
        "{got} vs {expected}"
    );

    let report = d.join("report");
    let out = run_ok(&[
        "evaluate",
        "--measurements",
        data.to_str().unwrap(),
        "--model",
        "roofline",
        "--calibration",
        cal.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let aggs = v["aggregates"].as_array().unwrap();
    // Uncalibrated and calibrated roofline on two GPUs.
    assert_eq!(aggs.len(), 4);
    for a in aggs {
        for key in ["model", "device", "n", "mape", "max_error", "kendall_tau"] {
            assert!(a.get(key).is_some(), "{key} missing in {a}");
        }
        assert_eq!(a["n"], 16);
        // Ratios are fractions: MAPE is a fraction, not a percentage.
        let mape = a["mape"].as_f64().unwrap();
        assert!((0.0..10.0).contains(&mape));
        if a["model"] == "roofline (calibrated)" {
            assert!(a["mape_cv"].as_f64().is_some(), "{a}");
        } else {
            assert!(a.get("mape_cv").is_none());
        }
    }
    // Each experiment lists its ratios r_k = model / measured (fractions), one per row.
    for x in v["experiments"].as_array().unwrap() {
        assert_eq!(
            x["ratios"].as_array().unwrap().len() as u64,
            x["n"].as_u64().unwrap()
        );
    }
    // va and vb solve the same sizes: comparisons (eq 21-22) appear per run and GPU.
    assert_eq!(v["comparisons"].as_array().unwrap().len(), 4);
    for f in [
        "index.html",
        "evaluation.json",
        "aggregates.csv",
        "experiments.csv",
        "points.csv",
    ] {
        assert!(report.join(f).exists(), "{f}");
    }
    let html = std::fs::read_to_string(report.join("index.html")).unwrap();
    // Two runs x three charts, all inline, nothing fetched from elsewhere.
    assert_eq!(html.matches("<svg").count(), 6);
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
    check_in_chromium(&report.join("index.html"), 6);
}

/// Loads the page in headless Chromium: no console error, and every chart in the DOM.
fn check_in_chromium(page: &Path, charts: usize) {
    let Some(chromium) = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
    else {
        crate::common::missing_tool(
            "chromium",
            "Chromium is not installed (apt-get install -y chromium)",
        );
        return;
    };
    let profile = temp_dir("chromium-profile");
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--dump-dom", &url])
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium failed: {log}");
    assert_eq!(
        dom.matches("<svg").count(),
        charts,
        "charts in the rendered DOM"
    );
    assert!(dom.contains("kerneltime evaluation"));
    let console_errors: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") && (l.contains("ERROR") || l.contains("Uncaught")))
        .collect();
    assert!(
        console_errors.is_empty(),
        "console errors: {console_errors:?}"
    );
}

#[test]
fn evaluate_errors_name_the_flag() {
    let d = temp_dir("errors");
    let data = counters_csv(&d);
    let out = bin()
        .args([
            "evaluate",
            "--measurements",
            data.to_str().unwrap(),
            "--model",
            "nope",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--model"));
    let out = bin()
        .args([
            "calibrate",
            "--model",
            "puchala",
            "--measurements",
            data.to_str().unwrap(),
            "-o",
            "x.toml",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!Path::new("x.toml").exists());
}

#[test]
fn reproduce_parra2016_table() {
    let d = temp_dir("parra");
    let out = run_ok(&[
        "reproduce",
        "parra2016",
        "--out",
        d.to_str().unwrap(),
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 12);
    // Table 4.6, order 2 with 8 warps, against Table 4.5's 102912: |102912 - 34520.3| / 34520.3.
    let e = cells[0]["thesis_4_5_error"].as_f64().unwrap();
    assert!((e - (102912.0 - 34520.3) / 34520.3).abs() < 1e-9);
    assert!(d.join("parra2016_table4_6.csv").exists());
    // Our three analytical models have order-2 predictions; orders 4 and 8 have none.
    for c in cells {
        let has = c["order"] == 2;
        for k in ["mwp_cwp_cycles", "hong_kim_cycles", "wu_cycles"] {
            assert_eq!(c[k].is_number(), has, "{k} in {c}");
        }
    }
}

/// puchala through the binary: times from `predict` with known t_p, t_m become a generic CSV
/// with launch API times; `calibrate` takes t_p from them and recovers t_m and the memory scale
/// (1: the built-in durations); `predict --calibration` then gives the original times back.
#[test]
fn puchala_round_trip_through_calibrate_and_predict() {
    let d = temp_dir("puchala");
    let out = run_ok(&[
        "predict",
        "--model",
        "puchala",
        "--device",
        "GTX 1070 (puchala2022)",
        "--kernel",
        "dwt-matrix",
        "--param",
        "n=2^6..2^16",
        "--param",
        "k=8,12",
        "--t-p",
        "6",
        "--t-m",
        "20",
        "--json",
    ]);
    let points: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let mut csv = String::from("kernel,device,param:n,param:k,launch_api_us,time_us\n");
    for p in points.as_array().unwrap() {
        csv.push_str(&format!(
            "dwt-matrix,GTX 1070 (puchala2022),{},{},6,{}\n",
            p["params"]["n"], p["params"]["k"], p["time_us"]
        ));
    }
    let data = d.join("dwt.csv");
    std::fs::write(&data, csv).unwrap();
    let cal = d.join("cal.toml");
    run_ok(&[
        "calibrate",
        "--model",
        "puchala",
        "--measurements",
        data.to_str().unwrap(),
        "--folds",
        "3",
        "--bootstrap",
        "0",
        "-o",
        cal.to_str().unwrap(),
        "--json",
    ]);
    let c: toml::Value = toml::from_str(&std::fs::read_to_string(&cal).unwrap()).unwrap();
    let g = &c["groups"][0];
    assert_eq!(g["params"]["t_p_us"].as_float(), Some(6.0));
    assert!(
        (g["params"]["t_m_cycles"].as_float().unwrap() - 20.0).abs() < 1e-6,
        "{g}"
    );
    assert!(
        (g["params"]["memory_scale"].as_float().unwrap() - 1.0).abs() < 1e-6,
        "{g}"
    );
    assert!(g["mape_cv"].as_float().unwrap() < 1e-6);
    let out = run_ok(&[
        "predict",
        "--model",
        "puchala",
        "--device",
        "GTX 1070 (puchala2022)",
        "--kernel",
        "dwt-matrix",
        "--param",
        "n=1024",
        "--param",
        "k=8",
        "--calibration",
        cal.to_str().unwrap(),
        "--json",
    ]);
    let p: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let want = points
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["params"]["n"] == 1024 && p["params"]["k"] == 8)
        .unwrap()["time_us"]
        .as_f64()
        .unwrap();
    assert!((p["time_us"].as_f64().unwrap() - want).abs() < 1e-6 * want);
}
