//! Design-space exploration end to end: resumed sweeps are byte-identical to uninterrupted ones
//! (stopped by the test flag, with a torn partial file, and killed for real), `best` agrees with
//! `best-block` and with hand computations, invalid spaces are one-sentence errors with exit
//! code 2, output does not depend on the thread count, the sweep's fast path equals the full
//! predictions, and `compare` reproduces puchala2022's ratios and ranks GPUs.

use crate::common::{run, run_env};

use std::path::{Path, PathBuf};
use std::process::Command;

use kerneltime::device::catalogue;
use kerneltime::explore::{Space, SpaceSpec};
use kerneltime::model::puchala::paper::device_grid;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn wu_example() -> String {
    root()
        .join("data/analytical/wu2019-example.toml")
        .display()
        .to_string()
}

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("explore")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A wu sweep of 32 block sizes x 300 grid sizes (9,600 points) on the example inputs file.
fn wu_args(out: &Path) -> Vec<String> {
    vec![
        "sweep".into(),
        "--model".into(),
        "wu".into(),
        "--inputs".into(),
        wu_example(),
        "--param".into(),
        "threads_per_block=32..1024:32".into(),
        "--param".into(),
        "n_b=1..300".into(),
        "-o".into(),
        out.display().to_string(),
    ]
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn stopped_and_resumed_sweep_is_byte_identical() {
    for ext in ["csv", "jsonl.gz"] {
        let dir = tmp(&format!("resume-{}", ext.replace('.', "-")));
        let whole = dir.join(format!("whole.{ext}"));
        let (code, _, err) = run(&strs(&wu_args(&whole)));
        assert_eq!(code, 0, "{err}");

        let part = dir.join(format!("part.{ext}"));
        let mut a = wu_args(&part);
        a.extend(["--chunk-points".into(), "1000".into()]);
        let mut stop = a.clone();
        stop.extend(["--stop-after".into(), "4500".into()]);
        let (code, out, err) = run(&strs(&stop));
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("stopped after 5000"), "{out}");
        assert!(!part.exists(), "no output before the sweep completes");
        let name = part.file_name().unwrap().to_string_lossy().into_owned();
        let partial = dir.join(format!(".{name}.partial"));
        let checkpoint = dir.join(format!(".{name}.checkpoint"));
        assert!(partial.exists() && checkpoint.exists());

        // A torn write after the checkpoint (as a kill mid-chunk leaves) is cut off on resume.
        let mut bytes = std::fs::read(&partial).unwrap();
        bytes.extend_from_slice(b"wu,half a row");
        std::fs::write(&partial, bytes).unwrap();

        let mut resume = a.clone();
        resume.push("--resume".into());
        let (code, out, err) = run(&strs(&resume));
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("resumed after 5000 points"), "{out}");
        assert_eq!(
            std::fs::read(&whole).unwrap(),
            std::fs::read(&part).unwrap(),
            "{ext}: resumed output differs"
        );
        assert!(!partial.exists() && !checkpoint.exists());
    }
}

#[test]
fn killed_and_resumed_sweep_is_byte_identical() {
    let dir = tmp("kill");
    let args = |out: &Path| {
        let mut a = wu_args(out);
        // 32 x 20000 = 640,000 points: long enough to be killed in the middle in a debug build.
        a[8] = "n_b=1..20000".into();
        a.extend(["--chunk-points".into(), "20000".into()]);
        a
    };
    let whole = dir.join("whole.csv");
    let (code, _, err) = run(&strs(&args(&whole)));
    assert_eq!(code, 0, "{err}");

    let part = dir.join("part.csv");
    let checkpoint = dir.join(".part.csv.checkpoint");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kerneltime"))
        .args(args(&part))
        .spawn()
        .unwrap();
    // Kill once some but not all points are checkpointed.
    let start = std::time::Instant::now();
    let mut killed_mid_way = false;
    loop {
        if let Ok(text) = std::fs::read_to_string(&checkpoint) {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            if v["points_done"].as_u64().unwrap_or(0) > 0 {
                killed_mid_way = child.try_wait().unwrap().is_none();
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
        }
        if child.try_wait().unwrap().is_some() || start.elapsed().as_secs() > 60 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    if !killed_mid_way {
        eprintln!("skip: the sweep finished before it could be killed; resume is covered by the stop-after test");
        return;
    }
    assert!(!part.exists());
    let mut resume = args(&part);
    resume.push("--resume".into());
    let (code, out, err) = run(&strs(&resume));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("resumed after"), "{out}");
    assert_eq!(
        std::fs::read(&whole).unwrap(),
        std::fs::read(&part).unwrap()
    );
}

#[test]
fn a_checkpoint_of_another_space_is_refused() {
    let dir = tmp("other-space");
    let out = dir.join("a.csv");
    let mut a = wu_args(&out);
    a.extend([
        "--chunk-points".into(),
        "1000".into(),
        "--stop-after".into(),
        "1".into(),
    ]);
    assert_eq!(run(&strs(&a)).0, 0);
    let mut b = wu_args(&out);
    b[8] = "n_b=1..299".into();
    b.push("--resume".into());
    let (code, _, err) = run(&strs(&b));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("different sweep"), "{err}");
}

#[test]
fn output_does_not_depend_on_the_thread_count() {
    let dir = tmp("threads");
    let mut files = Vec::new();
    for threads in ["1", "2", "3"] {
        let out = dir.join(format!("t{threads}.jsonl"));
        let args = [
            "sweep",
            "--model",
            "puchala",
            "--kernel",
            "dwt-matrix,dwt-lattice",
            "--device",
            "GeForce RTX 2080 (puchala2022),GeForce GTX 1070 (puchala2022)",
            "--param",
            "n=2^6..2^20",
            "--param",
            "k=2..16:2",
            "-o",
            out.to_str().unwrap(),
        ];
        let (code, _, err) = run_env(&args, &[("RAYON_NUM_THREADS", threads)]);
        assert_eq!(code, 0, "{err}");
        files.push(std::fs::read(&out).unwrap());
    }
    // 2 kernels x 2 devices x 15 sizes x 8 filter lengths = 480 rows.
    assert_eq!(files[0].iter().filter(|b| **b == b'\n').count(), 480);
    assert!(files.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn best_matches_best_block_and_the_hand_computation() {
    let example = wu_example();
    // Hand computation for the example (13 SMs, 130 blocks, 2000 compute cycles per warp, 4
    // schedulers): 32 threads -> RWP_C = 1, CPW_C = 2000, N_warps = 10 x 1 -> 20000 cycles;
    // 64 -> 1000 x 20 = 20000; 128 -> 500 x 40 = 20000; 256 -> 500 x 80 = 40000 (file header).
    // The first three tie; both commands take the smallest block: 32, at 20000 / 706 us.
    let (code, out, err) = run(&[
        "best",
        "--model",
        "wu",
        "--inputs",
        &example,
        "--param",
        "threads_per_block=32..1024:32",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let best = &v["models"][0]["best"];
    assert_eq!(best["params"]["threads_per_block"], 32);
    assert!((best["time_us"].as_f64().unwrap() - 20_000.0 / 706.0).abs() < 1e-9);
    assert_eq!(
        v["models"][0]["runner_up"]["params"]["threads_per_block"],
        64
    );
    assert_eq!(v["models"][0]["margin_percent"], 0.0);

    let (code, bb, err) = run(&["best-block", "--inputs", &example, "--json"]);
    assert_eq!(code, 0, "{err}");
    let bb: serde_json::Value = serde_json::from_str(&bb).unwrap();
    assert_eq!(
        bb["best_threads_per_block"],
        best["params"]["threads_per_block"]
    );
    assert_eq!(bb["best_time_us"], best["time_us"]);

    // With occupancy >= 0.5: 32 threads give 16 blocks x 1 warp = 16 of 64 warps (0.25); 64
    // threads give 16 x 2 = 32 of 64 (0.5), so 64 wins.
    let (code, out, err) = run(&[
        "best",
        "--model",
        "wu",
        "--inputs",
        &example,
        "--param",
        "threads_per_block=32..1024:32",
        "--constraint",
        "occupancy>=0.5",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["models"][0]["best"]["params"]["threads_per_block"], 64);
}

#[test]
fn best_matches_best_block_on_a_device_with_an_interior_optimum() {
    // A register- and memory-heavy variant, on the K40 fixture: here the curve is not flat.
    let dir = tmp("best-k40");
    let text = std::fs::read_to_string(wu_example())
        .unwrap()
        .replace("mem_insts_global = 2", "mem_insts_global = 30")
        .replace("reg_per_thread = 32", "reg_per_thread = 48")
        .replace("smem_used_bytes = 0", "smem_used_bytes = 5000")
        .replace("sync_insts = 0", "sync_insts = 4");
    let inputs = dir.join("heavy.toml");
    std::fs::write(&inputs, text).unwrap();
    let k40 = root().join("tests/fixtures/k40-with-microbenchmarks.toml");
    let (k40, inputs) = (k40.to_str().unwrap(), inputs.to_str().unwrap());
    let (code, bb, err) = run(&[
        "best-block",
        "--inputs",
        inputs,
        "--device-file",
        k40,
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let bb: serde_json::Value = serde_json::from_str(&bb).unwrap();
    let max = bb["max_threads_per_block"].as_u64().unwrap();
    let (code, out, err) = run(&[
        "best",
        "--model",
        "wu",
        "--inputs",
        inputs,
        "--device-file",
        k40,
        "--param",
        &format!("threads_per_block=32..{max}:32"),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["models"][0]["best"]["params"]["threads_per_block"],
        bb["best_threads_per_block"]
    );
    assert_eq!(v["models"][0]["best"]["time_us"], bb["best_time_us"]);
}

#[test]
fn invalid_spaces_are_one_sentence_errors_with_exit_code_2() {
    let example = wu_example();
    let out = tmp("errors").join("x.csv");
    let out = out.to_str().unwrap();
    let base = ["sweep", "--model", "wu", "--inputs", &example, "-o", out];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--param", "n_b=10..1"], "A <= B"),
        (vec!["--param", "n_b=1..10:0"], "step"),
        (vec!["--device", "speed>=3"], "not a device field"),
        (
            vec!["--device", "sm_count>=100000"],
            "no catalogue device matches",
        ),
        (vec!["--device", "No Such GPU"], "unknown device"),
        (
            vec![
                "--param",
                "threads_per_block=1..1000",
                "--param",
                "n_b=1..1000",
                "--max-points",
                "1000",
            ],
            "more than the limit of 1000",
        ),
        (vec!["--param", "bogus=1,2"], "no model of the sweep"),
    ];
    for (extra, expect) in cases {
        let mut a = base.to_vec();
        a.extend(extra.iter());
        let (code, _, err) = run(&a);
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(err.contains(expect), "{extra:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
    }
    let (code, _, err) = run(&["sweep", "--model", "nope", "--inputs", &example, "-o", out]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown model `nope`"), "{err}");
    assert!(!Path::new(out).exists());
}

#[test]
fn the_fast_path_equals_the_full_predictions() {
    let spec = SpaceSpec {
        models: vec!["puchala".into()],
        kernels: vec![
            "dwt-matrix".into(),
            "dwt-lattice".into(),
            "mtx-mul-vec".into(),
        ],
        devices: vec!["GeForce GTX 1070 (puchala2022)".into()],
        params: vec!["n=2^6..2^14".into(), "k=8,14".into()],
        t_p_us: Some(3.0),
        t_m_cycles: Some(4.0),
        ..Default::default()
    };
    let space = Space::build(&spec, 1_000_000).unwrap();
    for i in 0..space.len() {
        let (cell, values) = space.values(i);
        let e = &space.cells[cell].evaluator;
        let fast = e.evaluate(&values, &mut Default::default()).unwrap();
        let full = e.predict(&values).unwrap();
        assert_eq!(fast.time_us, full.time_us, "point {i}");
        assert_eq!(Some(fast.cycles), full.cycles, "point {i}");
    }
    let spec = SpaceSpec {
        models: vec!["wu".into()],
        inputs: vec![wu_example().into()],
        devices: vec!["Tesla K40".into()],
        params: vec![
            "threads_per_block=32..1024:32".into(),
            "n_b=100,1000".into(),
        ],
        ..Default::default()
    };
    let space = Space::build(&spec, 1_000_000).unwrap();
    for i in 0..space.len() {
        let (cell, values) = space.values(i);
        let e = &space.cells[cell].evaluator;
        match (
            e.evaluate(&values, &mut Default::default()),
            e.predict(&values),
        ) {
            (Ok(f), Ok(p)) => assert_eq!(f.time_us, p.time_us, "point {i}"),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
            (a, b) => panic!("point {i}: {a:?} vs {b:?}"),
        }
    }
}

#[test]
fn compare_reproduces_the_paper_ratios_and_draws_them() {
    let device = "GeForce RTX 2080 (puchala2022)";
    let dir = tmp("compare");
    let (code, out, err) = run(&[
        "compare",
        "--model",
        "puchala",
        "--kernel",
        "dwt-matrix",
        "--kernel",
        "dwt-lattice",
        "--device",
        device,
        "--param",
        "n=2^6..2^20",
        "--param",
        "k=8,10,12,14",
        "--out",
        dir.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let grid = device_grid(catalogue::find(device).unwrap()).unwrap();
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), grid.len());
    for g in &grid {
        let p = points
            .iter()
            .find(|p| p["params"]["n"] == g.n && p["params"]["k"] == g.k)
            .unwrap();
        // serde_json's default float parsing may be one ulp off; the values are the same.
        assert!((p["ratio"].as_f64().unwrap() - g.ratio).abs() <= 1e-14 * g.ratio);
    }
    let svg = std::fs::read_to_string(dir.join("ratio-geforce-rtx-2080-puchala2022.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("K = 14"));
    assert!(dir.join("compare.csv").exists());
}

#[test]
fn gpu_ranking_is_sorted_and_drawn() {
    let dir = tmp("rank");
    let (code, out, err) = run(&[
        "compare",
        "--rank-devices",
        "--model",
        "puchala",
        "--kernel",
        "dwt-lattice",
        "--t-p",
        "5",
        "--t-m",
        "4",
        "--param",
        "n=2^20",
        "--param",
        "k=8",
        "--device",
        "compute_capability>=7.0",
        "--out",
        dir.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ranked = v["devices"].as_array().unwrap();
    assert!(ranked.len() > 3);
    let times: Vec<f64> = ranked
        .iter()
        .map(|d| d["objective"].as_f64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
    for d in ranked {
        let dev = catalogue::find(d["device"].as_str().unwrap()).unwrap();
        assert!(dev.compute_capability.major >= 7);
    }
    let svg = std::fs::read_to_string(dir.join("ranking.svg")).unwrap();
    assert!(svg.contains(ranked[0]["device"].as_str().unwrap()));
}

#[test]
fn models_agreeing_on_the_winner_are_listed() {
    let hk = root().join("data/analytical/hong-kim-2009-worked-example.toml");
    let (code, out, err) = run(&[
        "best",
        "--model",
        "wu,hong-kim",
        "--inputs",
        &format!("wu={}", wu_example()),
        "--inputs",
        &format!("hong-kim={}", hk.display()),
        "--param",
        "threads_per_block=32..512:32",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let models = v["models"].as_array().unwrap();
    assert_eq!(models.len(), 2);
    let agree: Vec<&str> = v["agreeing_models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert!(agree.contains(&"wu"));
    let same = models[0]["best"]["params"] == models[1]["best"]["params"];
    assert_eq!(agree.contains(&"hong-kim"), same);
}

#[test]
fn a_ptx_kernel_given_by_flags_sweeps_like_its_kernel_file() {
    // data/sweeps/trace/dwt_matrix.toml written out as flags: the same CSV, byte for byte
    // (the kernel column is the entry name, which is also that file's name).
    let dir = tmp("ptx_flags");
    let fix = root().join("tests/fixtures/ptx");
    let ptx = fix.join("dwt.nvcc-sm75.ptx").display().to_string();
    let res = fix.join("dwt.nvcc-sm75.ptxas.txt").display().to_string();
    let file = root()
        .join("data/sweeps/trace/dwt_matrix.toml")
        .display()
        .to_string();
    let (a, b) = (dir.join("file.csv"), dir.join("flags.csv"));
    let axes = [
        "--param",
        "block_x=64..256:64",
        "--param",
        "n=1024..8192:1024",
    ];
    let mut by_file = vec!["sweep", "--model", "trace", "--device", "V100"];
    let inputs = format!("trace={file}");
    by_file.extend(["--inputs", &inputs, "-o", a.to_str().unwrap()]);
    by_file.extend(axes);
    let (code, _, err) = run(&by_file);
    assert_eq!(code, 0, "{err}");
    let mut by_flags = vec!["sweep", "--device", "V100", "--ptx", &ptx];
    by_flags.extend([
        "--entry",
        "dwt_matrix",
        "--grid",
        "(n + block_x - 1) / block_x",
    ]);
    by_flags.extend(["--block", "block_x", "--arg", "3=n", "--arg", "4=8"]);
    by_flags.extend(["--resources", &res, "-o", b.to_str().unwrap()]);
    by_flags.extend(axes);
    let (code, _, err) = run(&by_flags);
    assert_eq!(code, 0, "{err}");
    let (ta, tb) = (
        std::fs::read_to_string(&a).unwrap(),
        std::fs::read_to_string(&b).unwrap(),
    );
    assert_eq!(ta.lines().count(), 1 + 4 * 8);
    assert!(tb.lines().nth(1).unwrap().starts_with("trace,dwt_matrix,"));
    assert_eq!(ta, tb);

    // --ptx without --entry: one sentence naming the flag, exit 2.
    let out = dir.join("x.csv");
    let (code, _, err) = run(&[
        "sweep",
        "--device",
        "V100",
        "--ptx",
        &ptx,
        "--grid",
        "4",
        "--block",
        "32",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--entry") && err.lines().count() == 1, "{err}");
}
