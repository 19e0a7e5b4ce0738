//! The `measurements` command and `predict --model roofline` through the real binary.

use crate::common::bin;

use std::io::Write;
use std::path::PathBuf;

fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kerneltime-cli-meas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

const GENERIC: &str = "kernel,device,blocks,threads_per_block,time_us\n\
k1,RTX 2080 Ti,4,256,12.5\nk1,RTX 2080 Ti,8,256,20\nk2,,2,32,3\n";

#[test]
fn summary_json_counts_rows_kernels_devices_and_range() {
    let p = temp_file("g.csv", GENERIC.as_bytes());
    let out = bin()
        .args(["measurements", p.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["format"], "generic");
    assert_eq!(v["rows"], 3);
    assert_eq!(v["kernels"]["k1"], 2);
    assert_eq!(v["devices"]["RTX 2080 Ti"], 2);
    assert_eq!(v["time_min_us"], 3.0);
    assert_eq!(v["time_median_us"], 12.5);
    assert_eq!(v["time_max_us"], 20.0);
}

#[test]
fn gzip_file_is_read_transparently() {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(GENERIC.as_bytes()).unwrap();
    let p = temp_file("g.csv.gz", &enc.finish().unwrap());
    let out = bin()
        .args(["measurements", p.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rows"], 3);
}

#[test]
fn malformed_row_exits_2_naming_file_and_line() {
    let p = temp_file("bad.csv", b"kernel,time_us\nk,1\nk,oops\n");
    let out = bin()
        .args(["measurements", p.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.csv") && err.contains("line 3"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn format_override_is_used_and_unknown_format_is_rejected() {
    let p = temp_file("f.csv", GENERIC.as_bytes());
    let out = bin()
        .args([
            "measurements",
            p.to_str().unwrap(),
            "--format",
            "nsys-trace",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = bin()
        .args(["measurements", p.to_str().unwrap(), "--format", "excel"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--format"));
}

#[test]
fn roofline_predict_by_hand_on_the_rtx_2080_ti() {
    let p = temp_file(
        "r.toml",
        b"flops = 1e9\ndram_bytes = 4e8\nlaunch_overhead_us = 3\n",
    );
    let out = bin()
        .args([
            "predict",
            "--model",
            "roofline",
            "--device",
            "RTX 2080 Ti",
            "--inputs",
            p.to_str().unwrap(),
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Catalogue: 68 SMs, 64 cores/SM, 1545 MHz boost, 616 GB/s.
    let compute_us = 1e9 / (68.0 * 64.0 * 2.0 * 1545.0);
    let memory_us = 4e8 / 616e3;
    let b = &v["breakdown"];
    assert!((b["compute_us"].as_f64().unwrap() - compute_us).abs() < 1e-9);
    assert!((b["memory_us"].as_f64().unwrap() - memory_us).abs() < 1e-9);
    assert_eq!(b["bound"], "memory");
    assert!((v["time_us"].as_f64().unwrap() - (memory_us + 3.0)).abs() < 1e-9);
}

#[test]
fn roofline_without_inputs_exits_2() {
    let out = bin()
        .args(["predict", "--model", "roofline", "--device", "RTX 2080 Ti"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--inputs"));
}
