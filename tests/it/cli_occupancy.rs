//! `kerneltime occupancy` as a user runs it: the JSON contract, one hand-computed case per
//! limiting resource, the paper variants, every error path (exit code 2, one line naming the
//! flag) and a sweep of extreme values that must never panic.

use crate::common::output as kerneltime;

use std::path::PathBuf;

use serde_json::Value;

fn json(args: &[&str]) -> Value {
    let mut all = vec!["occupancy", "--json"];
    all.extend_from_slice(args);
    let out = kerneltime(&all);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

fn limited_by(v: &Value) -> Vec<String> {
    v["limited_by"]
        .as_array()
        .expect("limited_by is a list")
        .iter()
        .map(|x| x.as_str().expect("a string").to_string())
        .collect()
}

/// A cc 8.0 device (A100-like) written to a temporary file: the two catalogue files of this
/// branch are both Turing, and the reserved shared memory exists from 8.0 on.
fn ampere_device_file(tag: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli_occupancy");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("ampere-{tag}-{}.toml", std::process::id()));
    std::fs::write(
        &path,
        r#"name = "Test Ampere"
architecture = "Ampere"
compute_capability = "8.0"
sm_count = 108
cores_per_sm = 64
base_clock_mhz = 1065
boost_clock_mhz = 1410
memory_bandwidth_gbs = 1555
l2_cache_bytes = 41943040
l1_shared_per_sm_bytes = 196608
source = "test fixture (A100-like values)"
"#,
    )
    .unwrap();
    path
}

#[test]
fn json_contract() {
    let v = json(&["--device", "RTX 2080 Ti", "--threads-per-block", "256"]);
    for key in [
        "active_blocks_per_sm",
        "active_warps_per_sm",
        "occupancy",
        "limited_by",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert!(v["active_blocks_per_sm"].is_u64());
    assert!(v["active_warps_per_sm"].is_u64());
    let occ = v["occupancy"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&occ));
    let known = ["blocks", "warps", "registers", "shared_memory"];
    let lim = limited_by(&v);
    assert!(!lim.is_empty());
    assert!(lim.iter().all(|l| known.contains(&l.as_str())), "{lim:?}");
    assert_eq!(v["variant"], "exact");
}

#[test]
fn registers_limited() {
    // RTX 2080 Ti (7.5): 256 threads = 8 warps, 128 registers: a warp takes 128*32 = 4096
    // registers (a multiple of 256); a sub-partition holds 65536/4 = 16384 -> 4 warps; the SM
    // 4*4 = 16 warps -> 16/8 = 2 blocks. Warps: 32/8 = 4; blocks: 16. Active warps 2*8 = 16 of
    // 32 -> 0.5.
    let v = json(&[
        "--device",
        "RTX 2080 Ti",
        "--threads-per-block",
        "256",
        "--registers-per-thread",
        "128",
    ]);
    assert_eq!(v["active_blocks_per_sm"], 2);
    assert_eq!(v["active_warps_per_sm"], 16);
    assert_eq!(v["occupancy"].as_f64().unwrap(), 0.5);
    assert_eq!(limited_by(&v), ["registers"]);
}

#[test]
fn shared_memory_limited_with_reserved_memory_on_ampere() {
    // cc 8.0: 164 KB = 167936 B of shared memory per SM, 1024 B reserved per block, 128-B unit.
    // 33000 B: 33000 + 1024 = 34024 -> rounded up to 266*128 = 34048; 167936/34048 = 4 (4.93).
    // (Without the reserved bytes it would be 33024 -> 5 blocks.) Warps: 128 threads = 4 warps,
    // 64/4 = 16; blocks 32; no registers. Active warps 4*4 = 16 of 64 -> 0.25.
    let file = ampere_device_file("smem");
    let v = json(&[
        "--device-file",
        file.to_str().unwrap(),
        "--threads-per-block",
        "128",
        "--shared-memory-per-block",
        "33000",
    ]);
    assert_eq!(v["active_blocks_per_sm"], 4);
    assert_eq!(v["active_warps_per_sm"], 16);
    assert_eq!(v["occupancy"].as_f64().unwrap(), 0.25);
    assert_eq!(v["allocated_shared_memory_per_block_bytes"], 34048);
    assert_eq!(limited_by(&v), ["shared_memory"]);
    // With a 50 % carve-out: 167936/2 = 83968 -> next configuration 100 KB = 102400;
    // 102400/34048 = 3 (3.0075).
    let v = json(&[
        "--device-file",
        file.to_str().unwrap(),
        "--threads-per-block",
        "128",
        "--shared-memory-per-block",
        "33000",
        "--carveout",
        "50",
    ]);
    assert_eq!(v["active_blocks_per_sm"], 3);
    assert_eq!(v["shared_memory_per_sm_bytes"], 102400);
    let _ = std::fs::remove_file(file);
}

#[test]
fn warps_limited() {
    // RTX 2080 Ti: 96 threads = 3 warps -> 32/3 = 10 blocks; blocks 16; no other limit.
    // Active warps 10*3 = 30 of 32 -> 0.9375.
    let v = json(&["--device", "RTX 2080 Ti", "--threads-per-block", "96"]);
    assert_eq!(v["active_blocks_per_sm"], 10);
    assert_eq!(v["active_warps_per_sm"], 30);
    assert_eq!(v["occupancy"].as_f64().unwrap(), 0.9375);
    assert_eq!(limited_by(&v), ["warps"]);
}

#[test]
fn blocks_limited() {
    // RTX 2080 Ti: 32 threads = 1 warp -> warps allow 32 blocks, the SM 16. Active warps 16 of
    // 32 -> 0.5.
    let v = json(&["--device", "RTX 2080 Ti", "--threads-per-block", "32"]);
    assert_eq!(v["active_blocks_per_sm"], 16);
    assert_eq!(v["active_warps_per_sm"], 16);
    assert_eq!(v["occupancy"].as_f64().unwrap(), 0.5);
    assert_eq!(limited_by(&v), ["blocks"]);
}

#[test]
fn a_block_that_fits_nothing_reports_zero_and_the_limiter() {
    // RTX 2080 Ti: 1024 threads = 32 warps at 255 registers: 255*32 = 8160 -> 8192 per warp;
    // 32*8192 = 262144 > 65536 registers per block -> 0 blocks, limited by registers.
    let v = json(&[
        "--device",
        "RTX 2080 Ti",
        "--threads-per-block",
        "1024",
        "--registers-per-thread",
        "255",
    ]);
    assert_eq!(v["active_blocks_per_sm"], 0);
    assert_eq!(v["occupancy"].as_f64().unwrap(), 0.0);
    assert_eq!(limited_by(&v), ["registers"]);
    let out = kerneltime(&[
        "occupancy",
        "--device",
        "RTX 2080 Ti",
        "--threads-per-block",
        "1024",
        "--registers-per-thread",
        "255",
    ]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("active blocks per SM  0"));
}

#[test]
fn paper_variants() {
    // wu2019 on the RTX 2080 Ti (Max_B 16, Max_W 32, Max_R 65536, Max_SMem 65536, unit 256),
    // T 256, R 40, S 10000: Max_B_W = 1024/256 = 4, Max_B_R = 65536/10240 = 6,
    // Max_B_S = 65536/10240 = 6 -> 4 blocks, warps.
    let v = json(&[
        "--device",
        "RTX 2080 Ti",
        "--threads-per-block",
        "256",
        "--registers-per-thread",
        "40",
        "--shared-memory-per-block",
        "10000",
        "--variant",
        "wu2019",
    ]);
    assert_eq!(v["variant"], "wu2019");
    assert_eq!(v["active_blocks_per_sm"], 4);
    assert_eq!(limited_by(&v), ["warps"]);
    // wang2019, T 96 (3 warps), R 37: eq 1 min(16, 32/3 = 10) = 10; eq 4: ceil(1184, 256) = 1280,
    // 65536/1280 = 51 -> 48 (multiple of 4); eq 3: 48/3 * 65536/65536 = 16 -> 10 blocks, warps.
    let v = json(&[
        "--device",
        "RTX 2080 Ti",
        "--threads-per-block",
        "96",
        "--registers-per-thread",
        "37",
        "--variant",
        "wang2019",
    ]);
    assert_eq!(v["variant"], "wang2019");
    assert_eq!(v["active_blocks_per_sm"], 10);
    assert_eq!(v["blocks_limit_registers"], 16);
    assert_eq!(limited_by(&v), ["warps"]);
}

/// Runs, expects exit code 2 and exactly one stderr line containing `needle`.
fn assert_usage_error(args: &[&str], needle: &str) {
    let out = kerneltime(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}");
}

#[test]
fn error_paths_exit_2_with_one_line_naming_the_flag() {
    let dev = ["occupancy", "--device", "RTX 2080 Ti"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut v: Vec<&str> = dev.to_vec();
        v.extend_from_slice(extra);
        v
    };
    assert_usage_error(&with(&["--threads-per-block", "0"]), "--threads-per-block");
    assert_usage_error(
        &with(&["--threads-per-block", "1025"]),
        "--threads-per-block",
    );
    assert_usage_error(
        &with(&["--threads-per-block", "32", "--registers-per-thread", "256"]),
        "--registers-per-thread",
    );
    // The RTX 2080 Ti's opt-in maximum is 64 KB = 65536 B.
    assert_usage_error(
        &with(&[
            "--threads-per-block",
            "32",
            "--shared-memory-per-block",
            "65537",
        ]),
        "--shared-memory-per-block",
    );
    assert_usage_error(
        &[
            "occupancy",
            "--device",
            "No Such GPU 9000",
            "--threads-per-block",
            "32",
        ],
        "--device",
    );
    assert_usage_error(&["occupancy", "--threads-per-block", "32"], "--device");
    assert_usage_error(
        &with(&["--threads-per-block", "32", "--variant", "magic"]),
        "--variant",
    );
    assert_usage_error(
        &with(&["--threads-per-block", "32", "--carveout", "101"]),
        "--carveout",
    );
    // Within limits on 8.0, above the 7.5 limit: 166912 B is the 8.0 opt-in maximum.
    let file = ampere_device_file("errors");
    let f = file.to_str().unwrap();
    let ok = kerneltime(&[
        "occupancy",
        "--device-file",
        f,
        "--threads-per-block",
        "32",
        "--shared-memory-per-block",
        "166912",
    ]);
    assert!(ok.status.success());
    assert_usage_error(
        &[
            "occupancy",
            "--device-file",
            f,
            "--threads-per-block",
            "32",
            "--shared-memory-per-block",
            "166913",
        ],
        "--shared-memory-per-block",
    );
    let _ = std::fs::remove_file(file);
}

#[test]
fn extreme_values_never_panic() {
    let threads = ["0", "1", "33", "1024", "1025", "4294967295", "-1", "abc"];
    let regs = ["0", "255", "256", "4294967295"];
    let smem = ["0", "65536", "65537", "4294967295"];
    let variants = ["exact", "wu2019", "wang2019"];
    let carveouts = ["default", "l1", "0", "100"];
    let mut n = 0;
    for (i, t) in threads.iter().enumerate() {
        for (j, r) in regs.iter().enumerate() {
            for (k, s) in smem.iter().enumerate() {
                let variant = variants[(i + j + k) % variants.len()];
                let carveout = carveouts[(i + 2 * j + k) % carveouts.len()];
                let args = [
                    "occupancy",
                    "--device",
                    "RTX 2080 Ti",
                    "--threads-per-block",
                    t,
                    "--registers-per-thread",
                    r,
                    "--shared-memory-per-block",
                    s,
                    "--variant",
                    variant,
                    "--carveout",
                    carveout,
                    "--json",
                ];
                let out = kerneltime(&args);
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(!err.contains("panicked"), "{args:?}: {err}");
                match out.status.code() {
                    Some(0) => {
                        let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
                        let occ = v["occupancy"].as_f64().unwrap();
                        assert!((0.0..=1.0).contains(&occ), "{args:?}");
                    }
                    Some(2) => assert!(!err.is_empty(), "{args:?}"),
                    other => panic!("{args:?}: exit {other:?}: {err}"),
                }
                n += 1;
            }
        }
    }
    assert_eq!(n, threads.len() * regs.len() * smem.len());
}
