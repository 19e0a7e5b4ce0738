//! The KTT (JSON and CSV), T4 and Nsight Compute readers through the binary: each hand-written
//! fixture (`tests/fixtures/measurements/`) is recognised from its content, reads the same
//! gzip-compressed, and a malformed record exits 2 naming the file and the line.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::common::{json, run, temp_dir, write};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/measurements")
        .join(name)
}

/// (fixture, detected format, rows, rows with counters, rows with a launch)
const CASES: &[(&str, &str, u64, u64, u64)] = &[
    ("ktt-output.json", "ktt-json", 2, 2, 2),
    ("ktt-results.csv", "ktt-csv", 2, 2, 2),
    // T4 gives the block (block_size_x/y) but not the grid: no complete launch.
    ("t4-results.json", "t4", 2, 1, 0),
    ("ncu-raw-metrics.csv", "ncu", 2, 2, 2),
];

#[test]
fn each_format_is_detected_and_reads_the_same_gzip_compressed() {
    let dir = temp_dir("readers");
    for (file, format, rows, with_counters, with_launch) in CASES {
        let plain = fixture(file);
        let v = json(&["measurements", plain.to_str().unwrap(), "--json"]);
        assert_eq!(v["format"], *format, "{file}");
        assert_eq!(v["rows"], *rows, "{file}");
        assert_eq!(v["rows_with_counters"], *with_counters, "{file}");
        assert_eq!(v["rows_with_launch"], *with_launch, "{file}");
        let forced = json(&[
            "measurements",
            plain.to_str().unwrap(),
            "--format",
            format,
            "--json",
        ]);
        assert_eq!(forced["rows"], *rows, "{file}");

        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(&std::fs::read(&plain).unwrap()).unwrap();
        let gz = dir.join(format!("{file}.gz"));
        std::fs::write(&gz, enc.finish().unwrap()).unwrap();
        let z = json(&["measurements", gz.to_str().unwrap(), "--json"]);
        for key in [
            "format",
            "rows",
            "kernels",
            "devices",
            "time_min_us",
            "time_max_us",
        ] {
            assert_eq!(z[key], v[key], "{file}.gz: {key}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ktt_json_is_no_longer_read_as_a_kernel_tuner_cache() {
    let v = json(&[
        "measurements",
        fixture("ktt-output.json").to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(v["format"], "ktt-json");
    assert_eq!(v["devices"]["NVIDIA GeForce RTX 2080 Ti"], 2);
    assert_eq!(v["kernels"]["directCoulombSum"], 2);
    assert!(v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str().unwrap().contains("CompilationFailed")));
}

#[test]
fn malformed_records_exit_2_naming_file_and_line() {
    let dir = temp_dir("readers-bad");
    let cases = [
        (
            "ktt-output.json",
            "\"Duration\": 3037.5",
            "\"Duration\": null",
            "line 28",
        ),
        ("ktt-results.csv", "812.5", "soon", "line 2"),
        (
            "t4-results.json",
            "\"value\": 1.25",
            "\"value\": []",
            "line 4",
        ),
        ("ncu-raw-metrics.csv", "\"16.00\"", "\"sixteen\"", "line 5"),
    ];
    for (file, from, to, line) in cases {
        let text = std::fs::read_to_string(fixture(file)).unwrap();
        assert!(text.contains(from), "{file}");
        let bad = write(&dir, file, &text.replacen(from, to, 1));
        let (code, _, err) = run(&["measurements", bad.to_str().unwrap()]);
        assert_eq!(code, 2, "{file}: {err}");
        assert!(
            err.contains(file) && err.contains(line) && err.lines().count() == 1,
            "{file}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
