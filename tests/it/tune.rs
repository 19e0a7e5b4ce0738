//! `kerneltime tune`: the published FAIR specs enumerate to the configurations of their measured
//! caches (skipped without `../shared`), a small spec of our own goes through the binary end to
//! end (skipped without a CUDA compiler), the cache it writes reads back through our Kernel
//! Tuner reader, and mapped host memory reaches the prediction.

use std::path::{Path, PathBuf};

use crate::common::{run, temp_dir, write};
use kerneltime::compile::{Choice, Compiler, Language};
use kerneltime::tune::kt_cache::MeasuredCache;
use kerneltime::tune::space::{configuration, enumerate};
use kerneltime::tune::spec::TuneSpec;

const TUNING: &str = "/work/shared/data/tuning";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tune")
        .join(name)
}

fn shared(rel: &str) -> Option<PathBuf> {
    let p = Path::new(TUNING).join(rel);
    if p.exists() {
        Some(p)
    } else {
        eprintln!("skipped: {} is absent", p.display());
        None
    }
}

fn have_cuda_compiler() -> bool {
    match Compiler::find(Language::Cuda, Choice::Auto) {
        Ok(_) => true,
        Err(e) => {
            eprintln!("skipped: no CUDA compiler ({e}); run scripts/install-gpu-toolchain.sh");
            false
        }
    }
}

fn json_lines(stdout: &str) -> Vec<serde_json::Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn the_published_specs_enumerate_to_the_measured_configurations() {
    // The data README: convolution 6,768 configurations, pnpoly 4,092 (4 x 31 x 11 x 3).
    for (spec, cache, count) in [
        (
            "kernels/convolution.json",
            "caches/convolution_RTX_2080_Ti.json.gz",
            6768,
        ),
        (
            "kernels/pnpoly.json",
            "caches/pnpoly_RTX_3090.json.gz",
            4092,
        ),
    ] {
        let (Some(spec), Some(cache)) = (shared(spec), shared(cache)) else {
            return;
        };
        let s = TuneSpec::load(&spec).unwrap();
        let valid = enumerate(&s).unwrap();
        assert_eq!(valid.len(), count, "{}", spec.display());
        // Every enumerated configuration is one the brute-force cache measured.
        let m = MeasuredCache::load(&cache).unwrap();
        assert_eq!(m.len(), count);
        let names: Vec<String> = s.params.iter().map(|p| p.name.clone()).collect();
        let order = m.key_order(&names).unwrap();
        for &i in &valid {
            let c = configuration(&s, i);
            assert!(
                m.get(&order, &c.values).is_some(),
                "{:?} is not measured",
                c.values
            );
        }
    }
}

/// Runs `tune` on the vadd fixture with extra flags; (exit code, stdout, stderr).
fn tune_vadd(dir: &Path, extra: &[&str]) -> (i32, String, String) {
    tune_fixture(dir, "vadd.json", "RTX 2080 Ti", extra)
}

/// `tune` of a spec of `tests/fixtures/tune` on one device, compiled results kept in `dir`.
fn tune_fixture(dir: &Path, spec: &str, device: &str, extra: &[&str]) -> (i32, String, String) {
    let cache = dir.join("cc");
    let spec = fixture(spec);
    let mut args = vec![
        "tune",
        spec.to_str().unwrap(),
        "--device",
        device,
        "--compile-cache",
        cache.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    run(&args)
}

#[test]
fn a_small_spec_is_ranked_end_to_end() {
    if !have_cuda_compiler() {
        return;
    }
    let dir = temp_dir("tune-vadd");
    let (code, out, err) = tune_vadd(&dir, &["--json"]);
    assert_eq!(code, 0, "{err}");
    let rows = json_lines(&out);
    // 4 block sizes x 3 tiles x 2 stage sizes, minus (tile 4, block 256) x 2 = 22.
    assert_eq!(rows.len(), 22, "{out}");
    let status = |r: &serde_json::Value| r["status"].as_str().unwrap().to_string();
    let count = |s: &str| rows.iter().filter(|r| status(r) == s).count();
    // 2048 threads exceed the 1024 per block: 3 tiles x 2 stage sizes.
    assert_eq!(count("cannot-launch"), 6);
    // 16384 floats of static shared memory (64 KB > 48 KB) do not compile: the other 8.
    assert_eq!(count("compile-error"), 8);
    assert_eq!(count("ok"), 8);
    for r in &rows {
        for key in [
            "device",
            "block_size_x",
            "tile",
            "stage_floats",
            "predicted_us",
            "rank",
            "reason",
        ] {
            assert!(r.get(key).is_some(), "{key} missing in {r}");
        }
        match status(r).as_str() {
            "cannot-launch" => {
                assert_eq!(r["block_size_x"], 2048);
                assert!(r["reason"].as_str().unwrap().contains("1024"), "{r}");
                assert!(r["rank"].is_null() && r["predicted_us"].is_null());
            }
            "compile-error" => {
                assert_eq!(r["stage_floats"], 16384);
                assert!(r["reason"].as_str().unwrap().contains("shared"), "{r}");
            }
            _ => assert_eq!(r["stage_floats"], 32),
        }
    }
    // Ranks 1..8 follow the predicted times.
    let mut ok: Vec<(u64, f64)> = rows
        .iter()
        .filter(|r| status(r) == "ok")
        .map(|r| {
            (
                r["rank"].as_u64().unwrap(),
                r["predicted_us"].as_f64().unwrap(),
            )
        })
        .collect();
    ok.sort_by_key(|p| p.0);
    assert_eq!(
        ok.iter().map(|p| p.0).collect::<Vec<_>>(),
        (1..=8).collect::<Vec<_>>()
    );
    assert!(ok.windows(2).all(|w| w[0].1 <= w[1].1), "{ok:?}");
    assert!(ok.iter().all(|p| p.1 > 0.0));
    // The second run takes every compilation from the cache and gives the same rows.
    let (code, again, err2) = tune_vadd(&dir, &["--json"]);
    assert_eq!(code, 0);
    assert_eq!(again, out);
    assert!(err2.contains("16 results reused, 0 compiled"), "{err2}");
    assert!(err.contains("compiler: "), "{err}");

    // --top 3 keeps the three best; -o writes the same columns as CSV.
    let (code, top, _) = tune_vadd(&dir, &["--json", "--top", "3"]);
    assert_eq!(code, 0);
    let top = json_lines(&top);
    assert_eq!(top.len(), 3);
    assert_eq!(
        top.iter()
            .map(|r| r["rank"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    let csv = dir.join("ranking.csv");
    let (code, summary, _) = tune_vadd(&dir, &["-o", csv.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(
        summary.contains("8 ok, 6 cannot-launch, 8 compile-error"),
        "{summary}"
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "device,block_size_x,tile,stage_floats,status,predicted_us,rank,reason"
    );
    assert_eq!(lines.count(), 22);
}

#[test]
fn reused_whole_predictions_are_bit_for_bit_the_computed_ones() {
    if !have_cuda_compiler() {
        return;
    }
    let dir = temp_dir("tune-prediction-cache");
    let cache = dir.join("cc");
    let spec = fixture("stencil.json");
    let csv = |name: &str, extra: &[&str]| -> (String, String) {
        let out = dir.join(name);
        let mut args = vec![
            "tune",
            spec.to_str().unwrap(),
            "--device",
            "RTX 2080 Ti",
            "--device",
            "A100",
            "--sample",
            "12",
            "--seed",
            "3",
            "--compile-cache",
            cache.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let (code, _, err) = run(&args);
        assert_eq!(code, 0, "{err}");
        (std::fs::read_to_string(out).unwrap(), err)
    };
    // Compiled and predicted afresh, then predicted from cached PTX (which fills the
    // prediction cache), then whole results reused: the same bytes every time.
    let (fresh, _) = csv("fresh.csv", &["--no-prediction-cache"]);
    let (filled, err) = csv("filled.csv", &[]);
    assert!(err.contains("0 whole results reused"), "{err}");
    let (reused, err) = csv("reused.csv", &[]);
    // 12 configurations on two architectures (sm_75, sm_80).
    assert!(err.contains(": 24 whole results reused"), "{err}");
    assert!(err.contains("24 results reused, 0 compiled"), "{err}");
    assert_eq!(fresh.lines().count(), 25, "{fresh}");
    assert_eq!(filled, fresh);
    assert_eq!(reused, fresh);
}

#[test]
fn the_cache_out_file_reads_back_as_kernel_tuner_measurements() {
    if !have_cuda_compiler() {
        return;
    }
    let dir = temp_dir("tune-cache-out");
    let cache_out = dir.join("predicted.json");
    let (code, out, err) = tune_vadd(
        &dir,
        &["--json", "--cache-out", cache_out.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{err}");
    let rows = json_lines(&out);
    let set = kerneltime::fit::measurements::read_measurements(&cache_out).unwrap();
    assert_eq!(
        set.format,
        kerneltime::fit::measurements::Format::KernelTuner
    );
    // Our reader keeps the 8 timed configurations and counts the 14 refused ones as failed.
    assert_eq!(set.measurements.len(), 8);
    assert!(
        set.notes
            .iter()
            .any(|n| n.starts_with("14 configuration(s) failed")),
        "{:?}",
        set.notes
    );
    for m in &set.measurements {
        assert_eq!(m.kernel, "vadd");
        let row = rows
            .iter()
            .find(|r| {
                ["block_size_x", "tile", "stage_floats"]
                    .iter()
                    .all(|k| r[*k] == m.params[*k])
            })
            .expect("a row for every cached configuration");
        let predicted = row["predicted_us"].as_f64().unwrap();
        // Written in ms, read back in us.
        assert!(
            (m.time_us - predicted).abs() <= 1e-9 * predicted,
            "{} vs {predicted}",
            m.time_us
        );
        assert_eq!(m.params["problem_size_x"], 100000);
    }
    // The same file is a measured cache for --evaluate: refusals then agree exactly.
    let (code, eval, err) = tune_vadd(&dir, &["--json", "--evaluate", cache_out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let e: serde_json::Value = serde_json::from_str(&eval).unwrap();
    assert_eq!(e["configurations"], 22);
    assert_eq!(e["unmatched"], 0);
    assert_eq!(e["pairs"], 8);
    assert_eq!(e["refusals"]["precision"], 1.0);
    assert_eq!(e["refusals"]["recall"], 1.0);
    // Predictions scored against themselves: perfect order, no regret.
    assert!(e["kendall_tau_b"].as_f64().unwrap() > 0.999_999, "{e}");
    assert_eq!(e["top1"]["regret"], 0.0);
    // ... and no trend along any parameter: every value's predicted / measured is 1.
    let trends = e["by_parameter"].as_array().expect("by_parameter");
    assert!(!trends.is_empty(), "{e}");
    for t in trends {
        for v in t["values"].as_array().unwrap() {
            let r = v["geomean_ratio"].as_f64().unwrap();
            assert!((r - 1.0).abs() < 1e-9, "{t}");
        }
    }
}

#[test]
fn hand_made_measurements_score_as_computed_by_hand() {
    if !have_cuda_compiler() {
        return;
    }
    // A measured cache written by hand for four configurations of the fixture's space:
    // two timed, one that failed at run time, one that is not in the selection (block 32).
    let dir = temp_dir("tune-evaluate");
    let measured = write(
        &dir,
        "measured.json",
        r#"{"device_name": "GeForce RTX 2080 Ti", "kernel_name": "vadd",
            "tune_params_keys": ["block_size_x", "tile", "stage_floats"],
            "cache": {
              "64,1,32": {"block_size_x": 64, "tile": 1, "stage_floats": 32, "time": 0.02},
              "128,1,32": {"block_size_x": 128, "tile": 1, "stage_floats": 32, "time": 0.01},
              "2048,1,32": {"block_size_x": 2048, "tile": 1, "stage_floats": 32, "time": "RuntimeFailedConfig"},
              "32,1,32": {"block_size_x": 32, "tile": 1, "stage_floats": 32, "time": 0.5}
            }}"#,
    );
    let (code, eval, err) = tune_vadd(&dir, &["--json", "--evaluate", measured.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let e: serde_json::Value = serde_json::from_str(&eval).unwrap();
    // 3 of the 22 selected configurations are measured; 19 are not.
    assert_eq!(e["configurations"], 3);
    assert_eq!(e["unmatched"], 19);
    assert_eq!(e["measured_ok"], 2);
    assert_eq!(e["measured_failed"], 1);
    assert_eq!(e["measured_best_ms"], 0.01);
    // The failed one is block 2048, which tune refuses: one agreement of one each.
    assert_eq!(e["refusals"]["agreed"], 1);
    assert_eq!(e["refusals"]["precision"], 1.0);
    assert_eq!(e["refusals"]["recall"], 1.0);
    // Best of 10 random out of {0.01, 0.02}: both are drawn, so no regret.
    assert_eq!(e["random_10_expected_regret"], 0.0);
    // The top 10 (all 8 predicted ok) hold both timed configurations: measuring them finds
    // the best.
    assert_eq!(e["top_k"]["k"], 10);
    assert_eq!(e["top_k"]["regret"], 0.0);
    // Two timed configurations, differing in block_size_x only: one trend, a value each,
    // too few pairs for a spread.
    let trends = e["by_parameter"].as_array().expect("by_parameter");
    assert_eq!(trends.len(), 1, "{e}");
    assert_eq!(trends[0]["name"], "block_size_x");
    assert_eq!(trends[0]["values"].as_array().unwrap().len(), 2);
    assert!(trends[0]["spread"].is_null());
    let (code, text, _) = tune_vadd(&dir, &["--evaluate", measured.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(
        text.contains("Kendall tau-b") && text.contains("precision 1.000, recall 1.000"),
        "{text}"
    );
    assert!(
        text.contains("by parameter") && text.contains("block_size_x"),
        "{text}"
    );
    // --plot draws both panels: the scatter and the trend of block_size_x.
    let svg = dir.join("evaluation.svg");
    let (code, _, err) = tune_vadd(
        &dir,
        &[
            "--evaluate",
            measured.to_str().unwrap(),
            "--plot",
            svg.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let svg = std::fs::read_to_string(&svg).expect("the chart is written");
    assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(80)]);
    assert!(
        svg.contains("predicted vs measured") && svg.contains("per block_size_x"),
        "{svg}"
    );
}

#[test]
fn mapped_host_memory_adds_the_pcie_transfer() {
    let Some(spec) = shared("kernels/pnpoly.json") else {
        return;
    };
    if !have_cuda_compiler() {
        return;
    }
    let dir = temp_dir("tune-mapped");
    let cache = dir.join("cc");
    let predict = |mapped: bool| -> Vec<f64> {
        let mut args = vec![
            "tune",
            spec.to_str().unwrap(),
            "--device",
            "RTX 3090",
            "--sample",
            "2",
            "--seed",
            "5",
            "--arg",
            "n=ProblemSize[0]",
            "--json",
            "--compile-cache",
            cache.to_str().unwrap(),
        ];
        if mapped {
            args.extend(["--mapped-host", "points", "--mapped-host", "bitmap"]);
        }
        let (code, out, err) = run(&args);
        assert_eq!(code, 0, "{err}");
        if mapped {
            assert!(err.contains("PCIe 4.0 x16"), "{err}");
        }
        let mut rows = json_lines(&out);
        rows.sort_by_key(|r| {
            ["block_size_x", "tile_size", "use_method", "between_method"].map(|k| r[k].as_u64())
        });
        // Configurations that cannot launch (too many registers) have no time.
        rows.iter()
            .filter_map(|r| r["predicted_us"].as_f64())
            .collect()
    };
    let plain = predict(false);
    let mapped = predict(true);
    assert_eq!(plain.len(), mapped.len());
    assert!(!plain.is_empty());
    // 20,000,000 float2 points (160 MB) are read over PCIe 4.0 x16 (16 GT/s x 16 lanes x
    // 128/130 / 8 = 31.51 GB/s per direction): 160e6 / 31.51e3 = 5078 us; the 80 MB of
    // results go the other way at the same time. The transfer overlaps the kernel's work
    // (tune::host_link): each time is max(model, link).
    let link_us = 160e6 / (16.0 * 16.0 * 128.0 / 130.0 / 8.0 * 1e3);
    for (p, m) in plain.iter().zip(&mapped) {
        let expected = p.max(link_us);
        assert!(
            (m - expected).abs() < 0.01 * expected,
            "{m} us with the link, {p} us without, link {link_us} us"
        );
    }
}

/// `tune --json` of a fixture spec on one device: the predicted times by `block_size_x` and the
/// notes (stderr); the run must succeed.
fn times_by_block(dir: &Path, spec: &str, device: &str, extra: &[&str]) -> (Vec<f64>, String) {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    let (code, out, err) = tune_fixture(dir, spec, device, &args);
    assert_eq!(code, 0, "{err}");
    let mut rows = json_lines(&out);
    rows.sort_by_key(|r| r["block_size_x"].as_u64());
    let times = rows
        .iter()
        .map(|r| r["predicted_us"].as_f64().unwrap())
        .collect();
    (times, err)
}

#[test]
fn spec_fills_and_data_flags_reach_the_emulator() {
    if !have_cuda_compiler() {
        return;
    }
    let dir = temp_dir("tune-gather");
    let tune = |extra: &[&str]| times_by_block(&dir, "gather.json", "V100", extra);
    // The spec fills idx with the constant 0 (FillType Constant, FillValue 0): every lane
    // reads in[0], one sector per warp instead of 32.
    let (broadcast, notes) = tune(&[]);
    assert!(
        notes
            .contains("data hints used by the emulation: in=uniform:0:1, idx=const:0, out=const:0"),
        "{notes}"
    );
    // A --data flag replaces the fill of the same parameter: idx uniform over the 2^20
    // elements scatters the gather (32 sectors per warp), so each configuration is slower.
    let (random, notes) = tune(&["--data", "idx=uniform:0:1048576:3"]);
    assert!(
        notes.contains(
            "data hints used by the emulation: in=uniform:0:1, out=const:0, idx=uniform:0:1048576:3"
        ),
        "{notes}"
    );
    assert_eq!((broadcast.len(), random.len()), (2, 2));
    for (b, r) in broadcast.iter().zip(&random) {
        assert!(b < r, "broadcast {b} us, random {r} us");
    }
    // A hint on the scalar n is refused, naming the flag.
    let (code, _, err) = tune_fixture(&dir, "gather.json", "V100", &["--data", "n=const:1"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--data") && err.contains("not a pointer"),
        "{err}"
    );
}

#[test]
fn a_constant_memory_fill_reaches_the_divides_that_read_it() {
    if !have_cuda_compiler() {
        return;
    }
    let dir = temp_dir("tune-divide");
    let tune = |extra: &[&str]| times_by_block(&dir, "divide.json", "RTX 3060 Laptop", extra);
    // The spec fills the `__constant__` table with zeros (MemType Constant, FillValue 0): every
    // divide is x / 0, which takes ptxas's slow path.
    let (zero, notes) = tune(&[]);
    assert!(notes.contains("c_div=const:0"), "{notes}");
    // A --data flag replaces that fill: x / 2 stays on the fast path, so each configuration is
    // faster (the slow path adds 20 integer-unit instructions to each of the 64 divides).
    let (two, notes) = tune(&["--data", "c_div=const:2"]);
    assert!(
        notes.contains("c_div=const:2") && !notes.contains("c_div=const:0"),
        "{notes}"
    );
    assert_eq!((zero.len(), two.len()), (2, 2));
    for (z, t) in zero.iter().zip(&two) {
        assert!(z > t, "zero {z} us, two {t} us");
    }
    // --clock-mhz times every device at that clock: at half the catalogue's 1478 MHz the
    // compute-bound divides take twice the cycles' time; the launch overhead (2 us on Ampere,
    // data/latencies.toml) and the DRAM time (bytes per second) do not grow, so the time above
    // the overhead grows by at most 2x, and by nearly 2x for this kernel.
    let (half, notes) = tune(&["--clock-mhz", "739"]);
    assert!(notes.contains("--clock-mhz"), "{notes}");
    for (z, h) in zero.iter().zip(&half) {
        let ratio = (h - 2.0) / (z - 2.0);
        assert!((1.8..=2.0 + 1e-9).contains(&ratio), "{z} us -> {h} us");
    }
}

/// `predicted_us` of the `ok` rows by configuration.
fn ok_times(stdout: &str) -> Vec<(String, f64)> {
    let mut v: Vec<(String, f64)> = json_lines(stdout)
        .into_iter()
        .filter(|r| r["status"] == "ok")
        .map(|r| {
            let key = format!("{},{},{}", r["block_size_x"], r["tile"], r["stage_floats"]);
            (key, r["predicted_us"].as_f64().unwrap())
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

#[test]
fn mapped_buffers_of_our_own_kernel_cross_pcie_3() {
    if !have_cuda_compiler() {
        return;
    }
    let dir = temp_dir("tune-mapped-vadd");
    let (code, plain, err) = tune_vadd(&dir, &["--json"]);
    assert_eq!(code, 0, "{err}");
    let (code, mapped, err) = tune_vadd(
        &dir,
        &[
            "--json",
            "--mapped-host",
            "a",
            "--mapped-host",
            "2",
            "--mapped-host",
            "c",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("mapped host memory (a, b, c)") && err.contains("PCIe 3.0 x16"),
        "{err}"
    );
    let (plain, mapped) = (ok_times(&plain), ok_times(&mapped));
    assert_eq!(plain.len(), 8);
    // a and b: 2 x 100,000 floats = 800,000 bytes read; c: 400,000 bytes written the other
    // way at the same time. PCIe 3.0 x16: 16 lanes x 8 GT/s x 128/130 / 8 = 15.754 GB/s, so
    // 800,000 / 15.754e3 = 50.78 us. The last block of a grid is partial but is counted like
    // the interior block the trace model emulates: up to 0.4 % more (196 blocks x 512). The
    // transfer overlaps the kernel's work (tune::host_link): each time is max(model, link),
    // here the link's, as 100,000 floats take a few microseconds on the device.
    let link_us = 800_000.0 / (16.0 * 8.0 * 128.0 / 130.0 / 8.0 * 1e3);
    assert!(err.contains("up to model + link with no overlap"), "{err}");
    for ((k1, p), (k2, m)) in plain.iter().zip(&mapped) {
        assert_eq!(k1, k2);
        assert!(*p < link_us, "{k1}: {p} us without the link");
        assert!(
            *m >= link_us * 0.999 && *m <= link_us * 1.004,
            "{k1}: {m} us with the link, expected {link_us}"
        );
    }
}

#[test]
fn nvcc_is_the_fallback_route_with_the_same_verdicts() {
    if kerneltime::compile::nvcc::Nvcc::find().is_none() {
        eprintln!("skipped: nvcc is not on PATH or in a CUDA or toolchain folder");
        return;
    }
    let dir = temp_dir("tune-nvcc");
    let (code, out, err) = tune_vadd(&dir, &["--json", "--compiler", "nvcc"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("compiler: nvcc"), "{err}");
    let rows = json_lines(&out);
    let count = |s: &str| rows.iter().filter(|r| r["status"] == s).count();
    assert_eq!(
        (count("ok"), count("cannot-launch"), count("compile-error")),
        (8, 6, 8)
    );
    // ptxas names the problem itself on this route.
    let refused = rows
        .iter()
        .find(|r| r["status"] == "compile-error")
        .unwrap();
    assert!(
        refused["reason"]
            .as_str()
            .unwrap()
            .contains("too much shared data"),
        "{refused}"
    );
}

#[test]
fn mistakes_are_one_line_errors_with_exit_code_2() {
    let dir = temp_dir("tune-errors");
    let spec_text = std::fs::read_to_string(fixture("vadd.json")).unwrap();
    let bad = write(&dir, "bad.json", &spec_text.replace("range(3)", "range(3"));
    std::fs::copy(fixture("vadd.cu"), dir.join("vadd.cu")).unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                bad.display().to_string(),
                "--device".into(),
                "RTX 2080 Ti".into(),
            ],
            "TuningParameters[0].Values",
        ),
        (
            vec![
                fixture("vadd.json").display().to_string(),
                "--device".into(),
                "RTX 2080 Ti".into(),
                "--mapped-host".into(),
                "d".into(),
            ],
            "`d` names no parameter of kernel `vadd`; parameters: c, a, b, n",
        ),
        (vec![fixture("vadd.json").display().to_string()], "--device"),
        (
            vec![
                fixture("vadd.json").display().to_string(),
                "--device".into(),
                "RTX 2080 Ti".into(),
                "--data".into(),
                "a=gauss".into(),
            ],
            "--data",
        ),
        (
            vec![
                fixture("vadd.json").display().to_string(),
                "--device".into(),
                "RTX 2080 Ti".into(),
                "--model".into(),
                "lslag".into(),
            ],
            "--model",
        ),
    ];
    for (args, expect) in cases {
        let mut full = vec!["tune".to_string()];
        full.extend(args);
        let refs: Vec<&str> = full.iter().map(String::as_str).collect();
        let (code, _, err) = run(&refs);
        assert_eq!(code, 2, "{full:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(expect), "{full:?}: {err}");
    }
}

#[test]
fn a_sample_of_a_measured_cache_draws_its_timed_part_as_the_harness_does() {
    // A space of 4 x 3 = 12 configurations and a measured cache of 10 timed and 2 failed
    // ones; the cache's keys are in an order other than the sorted one.
    let dir = temp_dir("tune-measured-sample");
    write(&dir, "k.cu", "__global__ void k(float *x) {}\n");
    let spec = write(
        &dir,
        "k.json",
        r#"{"ConfigurationSpace": {"TuningParameters": [
              {"Name": "a", "Values": "[1, 2, 3, 4]"}, {"Name": "b", "Values": "[10, 20, 30]"}],
              "Conditions": []},
            "KernelSpecification": {"Language": "CUDA", "KernelName": "k", "KernelFile": "k.cu",
              "ProblemSize": [1024]}}"#,
    );
    let mut entries = Vec::new();
    for a in [4, 1, 3, 2] {
        for b in [30, 10, 20] {
            let time = match (a, b) {
                (2, 20) | (4, 10) => "\"RuntimeFailedConfig\"".to_string(),
                _ => format!("{}", a * 100 + b),
            };
            entries.push(format!(
                r#""{a},{b}": {{"a": {a}, "b": {b}, "time": {time}}}"#
            ));
        }
    }
    let cache = write(
        &dir,
        "measured.json",
        &format!(
            r#"{{"device_name": "GeForce RTX 2080 Ti", "kernel_name": "k",
                "tune_params_keys": ["a", "b"], "cache": {{{}}}}}"#,
            entries.join(",\n")
        ),
    );
    // The harness's group over the same cache: 5 rows, seed 7.
    let suite = write(
        &dir,
        "suite.toml",
        &format!(
            r#"[[group]]
measurements = "{}"
sample = 5
seed = 7
[group.case]
source = "k.cu"
defines = {{ a = "{{a}}", b = "{{b}}" }}
grid = "1"
block = "32"
"#,
            cache.display()
        ),
    );
    let suite = kerneltime::suite::Suite::load(&suite).unwrap();
    let mut harness: Vec<(String, String)> = suite
        .cases
        .iter()
        .map(|c| match &c.kernel {
            kerneltime::suite::KernelSource::Source(s) => {
                let get = |n: &str| {
                    s.defines
                        .iter()
                        .find(|(k, _)| k == n)
                        .map(|(_, v)| v.clone())
                        .unwrap()
                };
                (get("a"), get("b"))
            }
            other => panic!("{other:?}"),
        })
        .collect();
    harness.sort();
    assert_eq!(harness.len(), 5);

    let spec = TuneSpec::load(&spec).unwrap();
    let valid = enumerate(&spec).unwrap();
    let measured = MeasuredCache::load(&cache).unwrap();
    // 6 of 12: the failed share is 6 x 2 / 12 = 1, so 5 timed, as many as the harness drew.
    let s = kerneltime::tune::evaluate::sample_measured(&spec, &valid, &measured, 6, 7).unwrap();
    assert_eq!(
        (s.timed, s.failed, s.drawn_timed, s.drawn_failed, s.outside),
        (10, 2, 5, 1, 0)
    );
    assert_eq!(s.indices.len(), 6);
    let order = measured.key_order(&["a".into(), "b".into()]).unwrap();
    let mut timed = Vec::new();
    let mut failed = 0;
    for &i in &s.indices {
        let c = configuration(&spec, i);
        match measured.get(&order, &c.values).unwrap() {
            kerneltime::tune::kt_cache::Measured::TimeMs(_) => {
                timed.push((c.values[0].to_string(), c.values[1].to_string()))
            }
            kerneltime::tune::kt_cache::Measured::Failed(_) => failed += 1,
        }
    }
    timed.sort();
    assert_eq!(failed, 1);
    assert_eq!(timed, harness);
    // Fewer draws take the first ones of the same shuffle: a subset of the harness's sample.
    let s3 = kerneltime::tune::evaluate::sample_measured(&spec, &valid, &measured, 3, 7).unwrap();
    assert_eq!((s3.drawn_timed, s3.drawn_failed), (2, 1));
    assert!(s3.indices.iter().all(|i| !matches!(
        measured.get(&order, &configuration(&spec, *i).values),
        Some(kerneltime::tune::kt_cache::Measured::TimeMs(_))
    ) || s.indices.contains(i)));
    // Another seed draws another sample; a sample as large as the cache is all of it.
    let other =
        kerneltime::tune::evaluate::sample_measured(&spec, &valid, &measured, 6, 8).unwrap();
    assert_ne!(other.indices, s.indices);
    let all = kerneltime::tune::evaluate::sample_measured(&spec, &valid, &measured, 50, 7).unwrap();
    assert_eq!(all.indices, valid);
}
