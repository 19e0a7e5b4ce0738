//! `kerneltime device import` for the micro-benchmark and simulator formats, end to end: each
//! hand-written fixture (`tests/fixtures/device-tools/`) becomes a device file whose values carry
//! the fixture's file and line, and whose latencies reach the trace model's and the analytical
//! models' prediction notes. Our micro-benchmark program compiles to PTX with the toolchain, and
//! the real tool outputs in `../shared/data/device-tools` (or `$KERNELTIME_SHARED_DATA`) import and
//! agree with the catalogue's datasheet values. Tests that need the toolchain or the shared data
//! print a message and skip when it is absent.

use std::path::{Path, PathBuf};

use crate::common::{json, run, temp_dir};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/device-tools").join(name)
}

/// `$KERNELTIME_SHARED_DATA/rel`, else `../shared/data/rel`, when it exists.
fn shared_data(rel: &str) -> Option<PathBuf> {
    let base = std::env::var_os("KERNELTIME_SHARED_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/data"));
    let p = base.join(rel);
    if p.exists() {
        Some(p)
    } else {
        println!(
            "skipped: {} is absent (set KERNELTIME_SHARED_DATA to the shared data folder)",
            p.display()
        );
        None
    }
}

/// (fixture, --format value, the name it gives, its DRAM latency, the line that gives it)
const FIXTURES: &[(&str, &str, &str, f64, usize)] = &[
    (
        "accelsim-ubench-excerpt.txt",
        "accelsim-ubench",
        "Lab GPU",
        350.0,
        65,
    ),
    // DRAM = L1 30 + ROP 170 + DRAM 100 (lines 28, 33, 34).
    (
        "gpgpusim-excerpt.config",
        "gpgpusim-config",
        "Made-up V10",
        300.0,
        34,
    ),
    (
        "kerneltime-ubench-sample.txt",
        "kerneltime-ubench",
        "Sample RTX",
        420.0,
        23,
    ),
];

fn import(input: &Path, format: Option<&str>, out: &Path) {
    let mut args = vec![
        "device",
        "import",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    if let Some(f) = format {
        args.extend(["--format", f]);
    }
    let (code, stdout, stderr) = run(&args);
    assert_eq!(code, 0, "{args:?}: {stderr}");
    assert!(stdout.starts_with("wrote "), "{stdout}");
}

#[test]
fn each_fixture_imports_by_detection_and_by_format_with_line_sources() {
    let dir = temp_dir("device-import");
    for (file, format, name, dram, line) in FIXTURES {
        let input = fixture(file);
        for explicit in [None, Some(*format)] {
            let out = dir.join(format!("{format}-{}.toml", explicit.is_some()));
            import(&input, explicit, &out);
            let d = json(&["device", "check", out.to_str().unwrap(), "--json"]);
            assert_eq!(d["name"], *name, "{file}");
            assert_eq!(d["latencies"]["dram"].as_f64(), Some(*dram), "{file}");
            let src = d["sources"]["latencies.dram"].as_str().unwrap();
            assert!(
                src.contains(file) && src.contains(&format!("line {line}")),
                "{file}: {src}"
            );
            let sm = d["sources"]["sm_count"].as_str().unwrap();
            assert!(sm.contains(file) && sm.contains("line "), "{sm}");
            // The text view lists the imported tables, each value with a footnoted source.
            let (code, text, err) = run(&["device", "check", out.to_str().unwrap()]);
            assert_eq!(code, 0, "{err}");
            assert!(
                text.contains("latencies.dram") && text.contains("measured.launch_overhead_us"),
                "{text}"
            );
            assert!(
                text.lines()
                    .any(|l| l.trim_start().starts_with('[') && l.contains(file)),
                "{text}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn imported_latencies_appear_in_trace_and_analytical_notes_with_their_source() {
    let dir = temp_dir("device-import-notes");
    let ptx = root().join("tests/fixtures/ptx/basics.nvcc-sm75.ptx");
    let log = root().join("tests/fixtures/ptx/basics.nvcc-sm75.ptxas.txt");
    // MWP-CWP inputs without any device latency: they come from the device file.
    let inputs = dir.join("inputs.toml");
    std::fs::write(
        &inputs,
        "inst = 75\nmem_inst = 11\ntotal_warps = 4096\navg_inst_lat = 20\nilp = 5\nn = 8\n\
         avg_trans_warp = 4\nmiss_ratio_l2 = 1.0\nmiss_ratio_l1 = 0.05\ndata_size_bytes = 4\n\
         mlp = 4\ndeparture_delay = 1\n",
    )
    .unwrap();
    for (file, _, name, dram, line) in FIXTURES {
        let device = dir.join(format!("{file}.toml"));
        import(&fixture(file), None, &device);
        let device = device.to_str().unwrap();
        let from_line = format!("{file} line {line}");

        let trace = json(&[
            "predict",
            "--model",
            "trace",
            "--ptx",
            ptx.to_str().unwrap(),
            "--entry",
            "vector_add",
            "--grid",
            "640",
            "--block",
            "256",
            "--arg",
            "3=163840",
            "--resources",
            log.to_str().unwrap(),
            "--device-file",
            device,
            "--json",
        ]);
        let trace_notes = notes(&trace);
        let expected = format!("latency dram = {dram} cycles from device file {name}: ");
        assert!(
            trace_notes
                .iter()
                .any(|n| n.starts_with(&expected) && n.contains(&from_line)),
            "{file}: {trace_notes:?}"
        );

        let mwp = json(&[
            "predict",
            "--model",
            "mwp-cwp",
            "--inputs",
            inputs.to_str().unwrap(),
            "--device-file",
            device,
            "--json",
        ]);
        let mwp_notes = notes(&mwp);
        let expected =
            format!("dram_lat = {dram} from device {name} (micro-benchmark global_memory_read");
        assert!(
            mwp_notes
                .iter()
                .any(|n| n.starts_with(&expected) && n.contains(&from_line)),
            "{file}: {mwp_notes:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn notes(v: &serde_json::Value) -> Vec<String> {
    v["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect()
}

#[test]
fn a_wrong_format_exits_2_naming_the_file_and_what_is_missing() {
    let input = fixture("kerneltime-ubench-sample.txt");
    let (code, _, err) = run(&[
        "device",
        "import",
        input.to_str().unwrap(),
        "--format",
        "gpgpusim-config",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("kerneltime-ubench-sample.txt")
            && err.contains("compute_capability")
            && err.lines().count() == 1,
        "{err}"
    );
    let (code, _, err) = run(&[
        "device",
        "import",
        input.to_str().unwrap(),
        "--format",
        "nvidia-smi",
    ]);
    assert_eq!(code, 2, "{err}");
    // A config with no name comment, outside any folder: the user is asked for --name.
    let dir = temp_dir("device-import-noname");
    let text = std::fs::read_to_string(fixture("gpgpusim-excerpt.config")).unwrap();
    let unnamed = text.replace("# This config models the Made-up V10\n", "");
    std::fs::write(dir.join("gpgpusim.config"), unnamed).unwrap();
    let out = crate::common::bin()
        .current_dir(&dir)
        .args(["device", "import", "gpgpusim.config"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--name"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn our_micro_benchmark_program_compiles_to_ptx() {
    let env = root().join(".gpu-toolchain/env.sh");
    if !env.exists() {
        crate::common::missing_tool(
            "toolchain",
            "the GPU toolchain is absent (bash scripts/install-gpu-toolchain.sh)",
        );
        return;
    }
    let dir = temp_dir("ubench-ptx");
    let ptx = dir.join("ubench.ptx");
    let src = root().join("kernels/ubench/ubench.cu");
    let status = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source '{}' && nvcc -arch=sm_75 -ptx '{}' -o '{}'",
            env.display(),
            src.display(),
            ptx.display()
        ))
        .status()
        .expect("bash runs");
    assert!(status.success(), "nvcc -ptx failed on {}", src.display());
    let text = std::fs::read_to_string(&ptx).unwrap();
    // Every benchmark kernel is in the PTX, and the chases use the cache operators they need.
    for kernel in [
        "chase_global",
        "chase_shared",
        "copy",
        "read_l2",
        "empty_kernel",
        "atomics",
        "spin",
    ] {
        assert!(
            text.lines()
                .any(|l| l.starts_with(".visible .entry") && l.contains(kernel)),
            "{kernel} missing from the PTX"
        );
    }
    for op in [
        "ld.global.ca.u32",
        "ld.global.cg.u32",
        "ld.global.cg.v4.f32",
        "atom.global.add.u32",
    ] {
        assert!(text.contains(op), "{op} missing from the PTX");
    }
    // Our importer reads what the program prints: every key the program prints is one the
    // importer knows (the fixture in the program's format imports in the test above).
    let program = std::fs::read_to_string(&src).unwrap();
    let sample = std::fs::read_to_string(fixture("kerneltime-ubench-sample.txt")).unwrap();
    for key in sample
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(" = ").map(|(k, _)| k))
    {
        assert!(
            program.contains(&format!("\"{key} = ")) || program.contains(&format!("\"{key}\"")),
            "the program does not print `{key}`"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn real_accelsim_and_gpgpusim_outputs_agree_with_the_catalogue() {
    let Some(tools) = shared_data("device-tools") else {
        return;
    };
    let dir = temp_dir("device-import-real");
    // (input, catalogue device whose datasheet values the import must reproduce)
    let cases = [
        ("accelsim_ubench_output_TITANV.txt", "TITAN V"),
        ("gpgpusim-configs/SM7_TITANV/gpgpusim.config", "TITAN V"),
        ("gpgpusim-configs/SM75_RTX2060/gpgpusim.config", "RTX 2060"),
        ("gpgpusim-configs/SM86_RTX3070/gpgpusim.config", "RTX 3070"),
        ("gpgpusim-configs/SM7_QV100/gpgpusim.config", ""),
        ("gpgpusim-configs/SM6_TITANX/gpgpusim.config", ""),
    ];
    for (i, (rel, catalogue_name)) in cases.iter().enumerate() {
        let out = dir.join(format!("{i}.toml"));
        import(&tools.join(rel), None, &out);
        let d = json(&["device", "check", out.to_str().unwrap(), "--json"]);
        for field in ["l1_hit", "l2_hit", "dram", "shared_load"] {
            assert!(d["latencies"][field].as_f64().is_some(), "{rel}: {field}");
        }
        if catalogue_name.is_empty() {
            continue;
        }
        let c = json(&["device", "show", catalogue_name, "--json"]);
        for field in [
            "sm_count",
            "cores_per_sm",
            "l2_cache_bytes",
            "compute_capability",
        ] {
            assert_eq!(d[field], c[field], "{rel}: {field}");
        }
        let (a, b) = (
            d["memory_bandwidth_gbs"].as_f64().unwrap(),
            c["memory_bandwidth_gbs"].as_f64().unwrap(),
        );
        assert!((a - b).abs() / b < 0.005, "{rel}: {a} vs {b} GB/s");
        println!(
            "{rel}: {} SMs x {}, {a:.1} GB/s, L1 {} / L2 {} / DRAM {} cycles",
            d["sm_count"],
            d["cores_per_sm"],
            d["latencies"]["l1_hit"],
            d["latencies"]["l2_hit"],
            d["latencies"]["dram"]
        );
    }
    // The TITAN V micro-benchmark run: measured values as the suite prints them
    // (Mem BW 521.045920 GB/sec; 7257.6 cycles / 1200 MHz = 6.048 us; 0.464460 / 4 atomics/clk).
    let d = json(&[
        "device",
        "check",
        dir.join("0.toml").to_str().unwrap(),
        "--json",
    ]);
    let m = &d["measured"];
    assert!((m["achievable_dram_bandwidth_gbs"].as_f64().unwrap() - 521.04592).abs() < 1e-9);
    assert!((m["launch_overhead_us"].as_f64().unwrap() - 6.048).abs() < 1e-9);
    assert!((m["atomic_same_address_per_clk"].as_f64().unwrap() - 0.116115).abs() < 1e-9);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_one_command_script_compiles_runs_and_imports() {
    // No GPU here: a stand-in `nvcc` "compiles" a program that prints the hand-written sample of
    // ubench.cu's output, so the script's compile -> run -> import plumbing runs for real.
    let dir = temp_dir("ubench-script");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let sample = fixture("kerneltime-ubench-sample.txt");
    let nvcc = bin.join("nvcc");
    std::fs::write(
        &nvcc,
        format!(
            "#!/usr/bin/env bash\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=\"$2\"; shift; done\n\
             printf '#!/usr/bin/env bash\\ncat \"{}\"\\n' > \"$out\"\nchmod +x \"$out\"\n",
            sample.display()
        ),
    )
    .unwrap();
    let kerneltime_dir = Path::new(env!("CARGO_BIN_EXE_kerneltime"))
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}:{}",
        bin.display(),
        kerneltime_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = dir.join("lab.toml");
    let run_script = |path: &str| {
        std::process::Command::new("bash")
            .arg(root().join("scripts/ubench.sh"))
            .arg(&out)
            .env("PATH", path)
            .output()
            .expect("bash runs")
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&nvcc, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let o = run_script(&path);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let d = json(&["device", "check", out.to_str().unwrap(), "--json"]);
    assert_eq!(d["name"], "Sample RTX");
    assert_eq!(d["measured"]["launch_overhead_us"].as_f64(), Some(4.5));
    let raw = dir.join("lab.ubench.txt");
    assert_eq!(
        std::fs::read_to_string(raw).unwrap(),
        std::fs::read_to_string(&sample).unwrap()
    );
    // Without nvcc the script stops with one line saying so.
    if !Path::new("/usr/bin/nvcc").exists() && !Path::new("/bin/nvcc").exists() {
        let o = run_script("/usr/bin:/bin");
        assert!(!o.status.success());
        assert!(String::from_utf8_lossy(&o.stderr).contains("nvcc not found"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
