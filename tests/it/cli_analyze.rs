//! `kerneltime analyze` end to end: JSON shape, resources, --entry, and clean errors.

use crate::common::run;

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ptx");

#[test]
fn json_has_the_documented_fields() {
    let ptx = format!("{FIX}/basics.nvcc-sm75.ptx");
    let log = format!("{FIX}/basics.nvcc-sm75.ptxas.txt");
    let (code, out, err) = run(&[
        "analyze",
        &ptx,
        "--resources",
        &log,
        "--json",
        "--load-cycles",
        "100",
        "--store-cycles",
        "80",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let entries = v["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 4);
    for e in entries {
        for key in [
            "name",
            "params",
            "basic_blocks",
            "loops",
            "static_counts",
            "classes",
            "kernel_program",
            "diagnostics",
        ] {
            assert!(e.get(key).is_some(), "{key} missing");
        }
        for key in [
            "total",
            "global_loads",
            "global_stores",
            "shared_loads",
            "shared_stores",
            "barriers",
            "branches",
        ] {
            assert!(e["static_counts"][key].is_u64(), "{key}");
        }
        assert!(e["resources"]["registers"].is_u64());
    }
    let reduce = entries.iter().find(|e| e["name"] == "reduce_sum").unwrap();
    assert_eq!(reduce["loops"][0]["trip_count"], 8);
    assert_eq!(reduce["loops"][0]["depth"], 1);
    // Shared memory per the ptxas report: 256 floats = 1024 bytes.
    assert_eq!(reduce["resources"]["shared_bytes"], 1024);
    let naive = entries
        .iter()
        .find(|e| e["name"] == "matmul_naive")
        .unwrap();
    assert_eq!(naive["loops"][0]["trip_count"], "matmul_naive_param_3");
    let vadd = entries.iter().find(|e| e["name"] == "vector_add").unwrap();
    assert!(vadd["loops"].as_array().unwrap().is_empty());
    // vector_add: two loads, one store with the given durations.
    let prog = vadd["kernel_program"].as_array().unwrap();
    assert_eq!(prog.iter().filter(|o| o["load"] == 100.0).count(), 2);
    assert_eq!(prog.iter().filter(|o| o["store"] == 80.0).count(), 1);
}

#[test]
fn entry_filter_and_unknown_entry() {
    let ptx = format!("{FIX}/dwt.nvcc-sm75.ptx");
    let (code, out, _) = run(&["analyze", &ptx, "--entry", "dwt_matrix", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["entries"].as_array().unwrap().len(), 1);
    let (code, _, err) = run(&["analyze", &ptx, "--entry", "nope", "--json"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--entry") && err.contains("dwt_lattice_stage"),
        "{err}"
    );
}

#[test]
fn garbage_and_missing_files_are_clean_errors() {
    let dir = std::env::temp_dir().join(format!("kt-analyze-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let junk = dir.join("junk.ptx");
    std::fs::write(&junk, [0u8, 159, 146, 150, b'{', b';', 255]).unwrap();
    let (code, _, err) = run(&["analyze", junk.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("junk.ptx") && err.contains("no kernel"),
        "{err}"
    );
    let (code, _, err) = run(&["analyze", dir.join("absent.ptx").to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("absent.ptx"), "{err}");
    let ptx = format!("{FIX}/dwt.nvcc-sm75.ptx");
    let (code, _, err) = run(&["analyze", &ptx, "--resources", junk.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("junk.ptx"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `analyze --json` streams: one kernel per line of one JSON document, and memory that follows
/// the input rather than the number of kernels. 900 copies of the four basics kernels (8 MB,
/// 3,600 kernels) must analyze within 64 MB plus four times the input of address space
/// (`ulimit -v`); holding every kernel's analysis and a JSON tree of all of them took about
/// fifteen times the input.
#[cfg(target_os = "linux")]
#[test]
fn json_streams_one_kernel_per_line_in_bounded_memory() {
    let base = std::fs::read_to_string(format!("{FIX}/basics.nvcc-sm75.ptx")).unwrap();
    let kernels = ["vector_add", "matmul_naive", "matmul_tiled", "reduce_sum"];
    let mut module = String::new();
    for copy in 0..900 {
        let mut t = base.clone();
        for k in kernels {
            t = t.replace(k, &format!("{k}_{copy}"));
        }
        module.push_str(&t);
    }
    let dir = std::env::temp_dir().join(format!("kt-analyze-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("many.ptx");
    std::fs::write(&file, &module).unwrap();
    let limit_kb = 64 * 1024 + 4 * module.len() / 1024;
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {limit_kb} && exec \"$0\" analyze \"$1\" --json"
        ))
        .arg(env!("CARGO_BIN_EXE_kerneltime"))
        .arg(&file)
        .output()
        .expect("sh runs");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "analyze failed within {limit_kb} KB: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    // `{"entries":[`, one line per kernel, `],"notes":[...]}`.
    assert_eq!(text.lines().count(), 3600 + 2);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let entries = v["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 3600);
    assert_eq!(entries[3599]["name"], "reduce_sum_899");
    assert_eq!(entries[3599]["loops"][0]["trip_count"], 8);
}
