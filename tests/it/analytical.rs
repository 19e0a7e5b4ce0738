//! The analytical models end to end: inputs files through the library and through the binary,
//! device filling from a K40 description with micro-benchmarks, errors and exit codes, best-block
//! output files and the speedup report.

use crate::common::run;

use std::path::{Path, PathBuf};

use kerneltime::device::Device;
use kerneltime::model::{hong_kim, mwp_cwp, wu};
use kerneltime::workload::analytical::{HongKimInputs, MwpCwpInputs, WuInputs};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn inputs_file(name: &str) -> PathBuf {
    root().join("data/analytical").join(name)
}

fn k40_path() -> PathBuf {
    root().join("tests/fixtures/k40-with-microbenchmarks.toml")
}

fn k40() -> Device {
    let text = std::fs::read_to_string(k40_path()).unwrap();
    Device::from_toml(&text, "k40 fixture").unwrap()
}

fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "kerneltime-analytical-{tag}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn thesis_worked_example_through_library_file() {
    let text =
        std::fs::read_to_string(inputs_file("parra2016-stencil-order2-8warps.toml")).unwrap();
    let resolved = MwpCwpInputs::from_toml(&text, "worked example", None).unwrap();
    assert!(resolved.notes.is_empty(), "{:?}", resolved.notes);
    let r = mwp_cwp::predict(&resolved.inputs).unwrap();
    // SPEC.md section 2: T_exec = 102912, T_mem = 88115.40, AMAT = 498.7 (to 0.01).
    assert!((r.t_exec - 102_912.0).abs() < 0.01);
    assert!((r.t_mem - 88_115.40).abs() < 0.01);
    assert!((r.amat - 498.7).abs() < 0.01);
}

#[test]
fn thesis_worked_example_through_cli() {
    let path = inputs_file("parra2016-stencil-order2-8warps.toml");
    let (code, out, err) = run(&[
        "predict",
        "--model",
        "mwp-cwp",
        "--inputs",
        path.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    let b = &v["breakdown"];
    assert!((v["cycles"].as_f64().unwrap() - 102_912.0).abs() < 0.01);
    assert!((b["t_mem"].as_f64().unwrap() - 88_115.40).abs() < 0.01);
    assert!((b["amat"].as_f64().unwrap() - 498.7).abs() < 0.01);
    for key in [
        "t_comp",
        "t_mem",
        "t_overlap",
        "amat",
        "avg_dram_lat",
        "mwp",
        "cwp",
        "mwp_peak_bw",
        "itilp",
        "itmlp",
    ] {
        assert!(b.get(key).is_some(), "breakdown lacks {key}");
    }
    // No device: 102912 cycles at the file's 1.11 GHz = 102912 / 1110 us.
    assert!((v["time_us"].as_f64().unwrap() - 102_912.0 / 1110.0).abs() < 1e-6);
}

#[test]
fn hong_kim_worked_example_through_cli() {
    let path = inputs_file("hong-kim-2009-worked-example.toml");
    let (code, out, err) = run(&[
        "predict",
        "--model",
        "hong-kim",
        "--inputs",
        path.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    // HONG_KIM.md 3.1: 38428.19 + 12300 = 50728.19 with unrounded MWP; about 50738 as printed.
    let cycles = v["cycles"].as_f64().unwrap();
    assert!((cycles - 50_728.187_5).abs() < 1e-6);
    assert!((cycles - 50_738.0).abs() / 50_738.0 < 1e-3);
    assert_eq!(v["breakdown"]["case"], "memory_bound");
}

#[test]
fn wu_example_and_speedup_through_cli() {
    let path = inputs_file("wu2019-example.toml");
    let (code, out, err) = run(&[
        "predict",
        "--model",
        "wu",
        "--inputs",
        path.to_str().unwrap(),
        "--cpu-time-us",
        "5665.72",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    let b = &v["breakdown"];
    // The file's comment: 80 warps x 500 cycles = 40000 cycles; 40000 / 706 MHz = 56.657 us.
    assert_eq!(v["cycles"].as_f64().unwrap(), 40_000.0);
    let t = 40_000.0 / 706.0;
    assert!((v["time_us"].as_f64().unwrap() - t).abs() < 1e-9);
    // Speedup = 5665.72 / 56.657 = 100.0.
    assert!((b["speedup"].as_f64().unwrap() - 5665.72 / t).abs() < 1e-9);
    assert!((b["speedup"].as_f64().unwrap() - 100.0).abs() < 0.01);
    for key in [
        "rwp_c",
        "rwp_m",
        "blocks_active",
        "warps_active",
        "cpw_c",
        "cpw_m",
        "sync_cycles",
        "exec_cycles_warp",
        "n_warps",
        "transfer_us",
        "dominant",
        "block_limiter",
    ] {
        assert!(b.get(key).is_some(), "breakdown lacks {key}");
    }
    assert_eq!(b["dominant"], "compute");
    // Text output names the speedup too.
    let (code, out, _) = run(&[
        "predict",
        "--model",
        "wu",
        "--inputs",
        path.to_str().unwrap(),
        "--cpu-time-us",
        "5665.72",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("speedup 100.00x"), "{out}");
}

#[test]
fn k40_fixture_profile_matches_table_4_3() {
    let csv = root().join("../shared/data/seed-tables/parra2016_table4_3_k40_microbenchmarks.csv");
    let Ok(text) = std::fs::read_to_string(&csv) else {
        eprintln!("skipping: {} is absent", csv.display());
        return;
    };
    let m = k40().microbenchmarks.unwrap();
    assert_eq!(m.warps, vec![1, 32]);
    let mut rows = 0;
    for line in text.lines().skip(1) {
        let cols: Vec<&str> = line.split(',').collect();
        let one: f64 = cols[1].parse().unwrap();
        let full: f64 = cols[2].parse().unwrap();
        assert_eq!(m.latency_cycles[cols[0]], vec![one, full], "{}", cols[0]);
        rows += 1;
    }
    assert_eq!(rows, m.latency_cycles.len());
}

#[test]
fn device_fills_missing_fields_and_notes_them() {
    let d = k40();
    // Only the kernel's own parameters; the device gives active_sms, simd_width, warp_size,
    // dram_lat, departure_delay, hit latencies, freq and bandwidth.
    let text = "inst = 75\nmem_inst = 11\ntotal_warps = 4096\navg_inst_lat = 201\nilp = 5\nn = 8\n\
                avg_trans_warp = 21\nmiss_ratio_l2 = 1.0\nmiss_ratio_l1 = 0.05\n\
                data_size_bytes = 4\nmlp = 17\n";
    let r = MwpCwpInputs::from_toml(text, "inline", Some(&d)).unwrap();
    let i = r.inputs;
    assert_eq!(i.active_sms, 15.0);
    assert_eq!(i.simd_width, 192.0);
    assert_eq!(i.warp_size, 32.0);
    // Means over the 1- and 32-warp columns: (402 + 395) / 2 = 398.5; (215.5 + 212) / 2 = 213.75.
    assert_eq!(i.dram_lat, 398.5);
    assert_eq!(i.hit_lat_l2, 213.75);
    assert_eq!(i.hit_lat_l1, 29.0);
    assert_eq!(i.departure_delay, 3.0);
    assert_eq!(i.freq_ghz, 0.875);
    assert_eq!(i.mem_peak_bandwidth_gbs, 288.0);
    for field in [
        "active_sms",
        "simd_width",
        "warp_size",
        "dram_lat",
        "departure_delay",
        "hit_lat_l2",
        "hit_lat_l1",
        "freq_ghz",
        "mem_peak_bandwidth_gbs",
        "w_serial",
    ] {
        assert!(
            r.notes
                .iter()
                .any(|n| n.starts_with(&format!("{field} = "))),
            "no note for {field}: {:?}",
            r.notes
        );
    }
    // The prediction runs and the time uses the device clock (875 MHz).
    let res = mwp_cwp::predict(&i).unwrap();
    assert!((d.cycles_to_us(res.t_exec) - res.t_exec / 875.0).abs() < 1e-9);

    // wu: limits and micro-benchmarks from the device (cc 3.5).
    let text =
        "comp_cycles = 1000\nmem_insts_global = 4\nmem_insts_shared = 2\nmem_insts_local = 0\n\
                n_conf = 1\nsync_insts = 1\nthreads_per_block = 128\nreg_per_thread = 32\n\
                smem_used_bytes = 0\nn_b = 150\n";
    let r = WuInputs::from_toml(text, "inline", Some(&d)).unwrap();
    let w = r.inputs;
    assert_eq!(w.n_sm, 15.0);
    assert_eq!(w.n_ws, f64::from(d.warp_schedulers_per_sm));
    assert_eq!(w.max_b, f64::from(d.limits.max_blocks_per_sm));
    assert_eq!(w.max_w, f64::from(d.limits.max_warps_per_sm));
    assert_eq!(w.max_r, f64::from(d.limits.registers_per_sm));
    assert_eq!(
        w.max_smem_bytes,
        f64::from(d.limits.shared_memory_per_sm_bytes)
    );
    assert_eq!(
        w.smem_unit_bytes,
        f64::from(d.limits.shared_memory_allocation_unit_bytes)
    );
    assert_eq!(w.mem_l_global, 398.5);
    assert_eq!(w.mem_l_shared, 45.0);
    assert_eq!(w.freq_mhz, 875.0);
    assert!(r.notes.iter().any(|n| n.contains("comu_bytes = 0")));
    wu::predict(&w).unwrap();

    // hong-kim: active_sms derived from the device's SM count.
    let text = "issue_cycles = 4\ndeparture_del_uncoal = 10\ndeparture_del_coal = 4\n\
                threads_per_block = 128\nblocks = 60\nactive_blocks_per_sm = 2\ncomp_insts = 27\n\
                uncoal_mem_insts = 0\ncoal_mem_insts = 6\nsynch_insts = 0\nuncoal_per_mw = 32\n\
                load_bytes_per_warp = 128\n";
    let r = HongKimInputs::from_toml(text, "inline", Some(&d)).unwrap();
    // min(15 SMs, 60 / 2 = 30) = 15.
    assert_eq!(r.inputs.active_sms, 15.0);
    assert_eq!(r.inputs.mem_ld, 398.5);
    hong_kim::predict(&r.inputs).unwrap();
}

#[test]
fn device_fill_through_cli_with_device_file() {
    let dir = temp_dir("fill");
    let inputs = dir.join("stencil.toml");
    std::fs::write(
        &inputs,
        "inst = 75\nmem_inst = 11\ntotal_warps = 4096\navg_inst_lat = 201\nilp = 5\nn = 8\n\
         avg_trans_warp = 21\nmiss_ratio_l2 = 1.0\nmiss_ratio_l1 = 0.05\ndata_size_bytes = 4\nmlp = 17\n",
    )
    .unwrap();
    let (code, out, err) = run(&[
        "predict",
        "--model",
        "mwp-cwp",
        "--inputs",
        inputs.to_str().unwrap(),
        "--device-file",
        k40_path().to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    let notes: Vec<String> = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    assert!(
        notes.iter().any(|n| n.starts_with("dram_lat = 398.5")),
        "{notes:?}"
    );
    // The time is the cycles at the device's 875 MHz.
    let cycles = v["cycles"].as_f64().unwrap();
    assert!((v["time_us"].as_f64().unwrap() - cycles / 875.0).abs() < 1e-9);
    // Without a device the same file lacks device fields: an error naming the first one.
    let (code, _, err) = run(&[
        "predict",
        "--model",
        "mwp-cwp",
        "--inputs",
        inputs.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("active_sms"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn device_check_lists_microbenchmarks_with_source() {
    let (code, out, err) = run(&["device", "check", k40_path().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.contains("microbenchmarks.global_memory_read"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("402"), "{line}");
    // `device show`/`check` print each source once, as a numbered footnote: follow the number.
    let mark = line
        .rsplit('[')
        .next()
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or_else(|| panic!("no footnote mark in {line}"));
    let footnote = out
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("[{mark}]")))
        .unwrap_or_else(|| panic!("footnote [{mark}] missing in {out}"));
    assert!(footnote.contains("Table 4.3"), "{footnote}");
}

#[test]
fn bad_inputs_exit_2_naming_the_field() {
    let dir = temp_dir("bad");
    let good =
        std::fs::read_to_string(inputs_file("parra2016-stencil-order2-8warps.toml")).unwrap();
    let cases = [
        (
            "unknown key",
            format!("{good}\nbogus_field = 1\n"),
            "bogus_field",
        ),
        (
            "zero warps",
            good.replace("total_warps = 4096", "total_warps = 0"),
            "total_warps",
        ),
        (
            "zero latency",
            good.replace("avg_inst_lat = 201", "avg_inst_lat = 0"),
            "avg_inst_lat",
        ),
        (
            "negative count",
            good.replace("mem_inst = 11", "mem_inst = -11"),
            "mem_inst",
        ),
        (
            "NaN",
            good.replace("dram_lat = 399", "dram_lat = nan"),
            "dram_lat",
        ),
        ("missing", good.replace("mlp = 17", ""), "mlp"),
    ];
    for (what, text, field) in cases {
        let path = dir.join("in.toml");
        std::fs::write(&path, text).unwrap();
        let (code, _, err) = run(&[
            "predict",
            "--model",
            "mwp-cwp",
            "--inputs",
            path.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{what}: {err}");
        assert!(err.contains(field), "{what}: {err}");
    }
    // wu with zero warps in the grid and a negative count.
    let wu_good = std::fs::read_to_string(inputs_file("wu2019-example.toml")).unwrap();
    for (text, field) in [
        (wu_good.replace("n_b = 130", "n_b = 0"), "n_b"),
        (
            wu_good.replace("sync_insts = 0", "sync_insts = -2"),
            "sync_insts",
        ),
        (
            wu_good.replace("mem_l_global = 400", "mem_l_global = 0"),
            "mem_l_global",
        ),
    ] {
        let path = dir.join("wu.toml");
        std::fs::write(&path, text).unwrap();
        let (code, _, err) = run(&[
            "predict",
            "--model",
            "wu",
            "--inputs",
            path.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(field), "{err}");
    }
    // Missing --inputs names the flag.
    let (code, _, err) = run(&["predict", "--model", "hong-kim"]);
    assert_eq!(code, 2);
    assert!(err.contains("--inputs"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn best_block_writes_curve_files() {
    let dir = temp_dir("best");
    let path = inputs_file("wu2019-example.toml");
    let (code, out, err) = run(&[
        "best-block",
        "--model",
        "wu",
        "--inputs",
        path.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    // Compute bound: cycles = ceil(130 / 13) x (T / 32) x 2000 / min(T / 32, 4): 20000 for
    // T = 32..128, then growing; the smallest block wins the tie.
    assert_eq!(v["best_threads_per_block"], 32);
    assert_eq!(v["best_cycles"].as_f64().unwrap(), 20_000.0);
    assert_eq!(v["curve"].as_array().unwrap().len(), 32);
    let csv = std::fs::read_to_string(dir.join("best_block.csv")).unwrap();
    assert_eq!(csv.lines().count(), 33);
    assert!(csv.lines().nth(5).unwrap().starts_with("160,true,25000,"));
    let svg = std::fs::read_to_string(dir.join("best_block.svg")).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("<polyline"),
        "{}",
        &svg[..200.min(svg.len())]
    );
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("best_block.json")).unwrap())
            .unwrap();
    assert_eq!(saved["best_threads_per_block"], 32);
    // With the K40 (cc 3.5) the sweep goes to its 1024-thread limit and uses its limits.
    let (code, out, err) = run(&[
        "best-block",
        "--inputs",
        path.to_str().unwrap(),
        "--device-file",
        k40_path().to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["max_threads_per_block"], 1024);
    // Other models have no block-size cost function.
    let (code, _, err) = run(&[
        "best-block",
        "--model",
        "mwp-cwp",
        "--inputs",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--model"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
