//! Calibrations as a sweep axis and the roofline in the sweep registry, through the binary: a
//! calibrated sweep gives the times of `predict --calibration` at the same points (wu with the
//! parameters applied once and, when a calibrated field is swept, per point; roofline; puchala),
//! a calibration of another model or without the swept device is a one-sentence error with exit
//! code 2, a sweep with a calibration axis resumes to a byte-identical file, `best` and `compare`
//! take the axis, and a roofline sweep equals `predict --model roofline`.
//!
//! The calibration files are written by hand here (the format of `kerneltime calibrate`), so
//! their parameters are known exactly.

use crate::common::run;

use std::path::{Path, PathBuf};

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
        .join("explore-calibration")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run_ok(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

/// A calibration file of one device group with the given parameters.
fn write_calibration(path: &Path, model: &str, device: &str, params: &[(&str, f64)]) {
    let names: Vec<String> = params.iter().map(|(n, _)| format!("\"{n}\"")).collect();
    let mut s = format!(
        "model = \"{model}\"\nscope = \"device\"\nmeasurements = \"written by the test\"\n\
         rows = 0\nfolds = 0\nbootstrap = 0\nseed = 0\nobjective = \"none (hand-written)\"\n\
         parameters = [{}]\n\n[[groups]]\ndevice = \"{device}\"\nn = 0\npoints = 0\n\
         mape_train = 0.0\nmax_error_train = 0.0\n\n[groups.params]\n",
        names.join(", ")
    );
    for (n, v) in params {
        s.push_str(&format!("{n} = {v:?}\n"));
    }
    std::fs::write(path, s).unwrap();
}

fn wu_calibration(path: &Path, device: &str) {
    write_calibration(
        path,
        "wu",
        device,
        &[
            ("dram_latency_scale", 1.5),
            ("departure_delay_scale", 6.0),
            ("arithmetic_latency_scale", 1.25),
            ("launch_overhead_scale", 4.0),
        ],
    );
}

/// The CSV rows as (header name -> value) maps.
fn read_csv(path: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            header
                .iter()
                .zip(l.split(','))
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// An inputs file: `base` with some fields replaced.
fn inputs_at(base: &str, fields: &[(&str, f64)], path: &Path) {
    let mut t: toml::Table = toml::from_str(&std::fs::read_to_string(base).unwrap()).unwrap();
    for (k, v) in fields {
        t.insert(k.to_string(), toml::Value::Float(*v));
    }
    std::fs::write(path, toml::to_string(&t).unwrap()).unwrap();
}

fn predict_time(args: &[&str]) -> f64 {
    let mut a = args.to_vec();
    a.push("--json");
    json_time(&run_ok(&a))
}

/// `time_us` of a prediction's JSON, parsed by the standard library from its text (serde_json's
/// default float parsing may be one unit in the last place off).
fn json_time(json: &str) -> f64 {
    let at = json.find("\"time_us\":").unwrap() + "\"time_us\":".len();
    let rest = json[at..].trim_start();
    let end = rest.find([',', '\n', '}']).unwrap();
    rest[..end].trim().parse().unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1e-300)
}

/// Every row of a wu sweep over (calibration, none) equals `predict` with and without
/// `--calibration` on an inputs file holding the point's values.
fn check_wu_against_predict(dir: &Path, params: &[(&str, &str)], fields: &[&str]) {
    let cal = dir.join("cal-wu.toml");
    wu_calibration(&cal, "Tesla K40");
    let out = dir.join("sweep.csv");
    let example = wu_example();
    let mut a = vec![
        "sweep",
        "--model",
        "wu",
        "--inputs",
        &example,
        "--device",
        "Tesla K40",
        "--calibration",
        cal.to_str().unwrap(),
        "--calibration",
        "none",
        "-o",
        out.to_str().unwrap(),
    ];
    let specs: Vec<String> = params.iter().map(|(n, v)| format!("{n}={v}")).collect();
    for s in &specs {
        a.extend(["--param", s.as_str()]);
    }
    run_ok(&a);
    let rows = read_csv(&out);
    let per_cal = specs
        .iter()
        .map(|s| s.split(',').count())
        .product::<usize>();
    assert_eq!(rows.len(), 2 * per_cal);
    let mut calibrated_differs = false;
    for (i, r) in rows.iter().enumerate() {
        let point: Vec<(&str, f64)> = fields
            .iter()
            .map(|f| (*f, r[*f].parse::<f64>().unwrap()))
            .collect();
        let p = dir.join(format!("point-{i}.toml"));
        inputs_at(&example, &point, &p);
        let base = [
            "predict",
            "--model",
            "wu",
            "--device",
            "Tesla K40",
            "--inputs",
            p.to_str().unwrap(),
        ];
        let swept: f64 = r["time_us"].parse().unwrap();
        let expected_cal = if i < per_cal { "cal-wu" } else { "none" };
        assert_eq!(r["calibration"], expected_cal, "row {i}");
        let uncal = predict_time(&base);
        let want = if i < per_cal {
            let mut c = base.to_vec();
            c.extend(["--calibration", cal.to_str().unwrap()]);
            let t = predict_time(&c);
            calibrated_differs |= !close(t, uncal);
            t
        } else {
            uncal
        };
        assert!(
            close(swept, want),
            "row {i} {point:?}: sweep {swept} vs predict {want}"
        );
    }
    assert!(
        calibrated_differs,
        "the calibration should change the times"
    );
}

#[test]
fn calibrated_wu_sweep_equals_predict_calibration() {
    // Parameters applied once in prepare (no calibrated field swept).
    check_wu_against_predict(
        &tmp("wu-once"),
        &[("threads_per_block", "64,256,1024"), ("n_b", "13,130,1000")],
        &["threads_per_block", "n_b"],
    );
}

#[test]
fn calibrated_wu_sweep_of_a_calibrated_field_equals_predict_calibration() {
    // `comp_cycles` is scaled by the calibration: it must be applied to each point's value.
    check_wu_against_predict(
        &tmp("wu-per-point"),
        &[("comp_cycles", "500,2000,8000"), ("n_b", "13,1000")],
        &["comp_cycles", "n_b"],
    );
}

/// Roofline inputs on the GTX 680 (8 SMs x 192 cores x 2 FLOP per cycle at 1058 MHz).
fn roofline_inputs(dir: &Path) -> PathBuf {
    let p = dir.join("roof.toml");
    std::fs::write(&p, "flops = 1e9\ndram_bytes = 4e8\n").unwrap();
    p
}

#[test]
fn calibrated_roofline_and_puchala_sweeps_equal_predict_calibration() {
    let dir = tmp("roofline-puchala");
    let inputs = roofline_inputs(&dir);
    let cal = dir.join("roof-680.toml");
    write_calibration(
        &cal,
        "roofline",
        "GeForce GTX 680",
        &[
            ("compute_efficiency", 0.6),
            ("memory_efficiency", 0.8),
            ("launch_overhead_scale", 7.0),
        ],
    );
    let out = dir.join("roof.csv");
    run_ok(&[
        "sweep",
        "--model",
        "roofline",
        "--inputs",
        inputs.to_str().unwrap(),
        "--device",
        "GTX-680",
        "--calibration",
        cal.to_str().unwrap(),
        "--param",
        "flops=1e6,1e9,1e12",
        "--param",
        "dram_bytes=1e3,1e8,1e11",
        "-o",
        out.to_str().unwrap(),
    ]);
    let rows = read_csv(&out);
    assert_eq!(rows.len(), 9);
    for r in &rows {
        let flops: f64 = r["flops"].parse().unwrap();
        let bytes: f64 = r["dram_bytes"].parse().unwrap();
        // By hand: compute at 8 x 192 x 2 FLOP per cycle and 1058 cycles per us, DRAM at the
        // catalogue's bandwidth (1 GB/s = 1e3 B/us), each divided by its efficiency; the launch
        // overhead is 7 times compute capability 3.0's 3.0 us (`launch_overhead_us` of the
        // Kepler row of data/latencies.toml).
        let bw_gbs = 192.256;
        let hand = (flops / (8.0 * 192.0 * 2.0) / 1058.0 / 0.6).max(bytes / (bw_gbs * 1e3) / 0.8)
            + 7.0 * 3.0;
        let p = dir.join("point.toml");
        std::fs::write(&p, format!("flops = {flops:?}\ndram_bytes = {bytes:?}\n")).unwrap();
        let want = predict_time(&[
            "predict",
            "--model",
            "roofline",
            "--device",
            "GTX-680",
            "--inputs",
            p.to_str().unwrap(),
            "--calibration",
            cal.to_str().unwrap(),
        ]);
        let got: f64 = r["time_us"].parse().unwrap();
        assert!(close(got, want), "{r:?}: {got} vs {want}");
        assert_eq!(r["calibration"], "roof-680");
        // The catalogue's bandwidth may be rounded differently from 192.256: 0.1 % slack.
        assert!(
            (got - hand).abs() <= 1e-3 * hand,
            "{r:?}: {got} vs hand {hand}"
        );
    }

    // puchala: t_p, t_m and the memory-duration scale.
    let cal = dir.join("dwt-2080.toml");
    write_calibration(
        &cal,
        "puchala",
        "GeForce RTX 2080 (puchala2022)",
        &[("t_p_us", 3.5), ("t_m_cycles", 12.0), ("memory_scale", 1.7)],
    );
    let out = dir.join("dwt.csv");
    run_ok(&[
        "sweep",
        "--model",
        "puchala",
        "--kernel",
        "dwt-lattice",
        "--device",
        "GeForce RTX 2080 (puchala2022)",
        "--calibration",
        cal.to_str().unwrap(),
        "--param",
        "n=2^8,2^14",
        "--param",
        "k=8,12",
        "-o",
        out.to_str().unwrap(),
    ]);
    let rows = read_csv(&out);
    assert_eq!(rows.len(), 4);
    for r in &rows {
        let n = format!("n={}", r["n"]);
        let k = format!("k={}", r["k"]);
        let want = predict_time(&[
            "predict",
            "--model",
            "puchala",
            "--kernel",
            "dwt-lattice",
            "--device",
            "GeForce RTX 2080 (puchala2022)",
            "--param",
            &n,
            "--param",
            &k,
            "--calibration",
            cal.to_str().unwrap(),
        ]);
        let got: f64 = r["time_us"].parse().unwrap();
        assert!(close(got, want), "{r:?}: {got} vs {want}");
    }
}

#[test]
fn wrong_or_uncovering_calibrations_are_one_sentence_errors() {
    let dir = tmp("errors");
    let wu_k40 = dir.join("wu-k40.toml");
    wu_calibration(&wu_k40, "Tesla K40");
    let roof = dir.join("roof.toml");
    write_calibration(
        &roof,
        "roofline",
        "Tesla K40",
        &[
            ("compute_efficiency", 0.5),
            ("memory_efficiency", 0.5),
            ("launch_overhead_scale", 5.0),
        ],
    );
    let example = wu_example();
    let out = dir.join("x.csv");
    let out_s = out.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        // A calibration of another model.
        (
            vec![
                "--device",
                "Tesla K40",
                "--calibration",
                roof.to_str().unwrap(),
            ],
            "calibrates roofline",
        ),
        // A device the calibration does not cover (another compute-capability family).
        (
            vec![
                "--device",
                "GTX-970",
                "--calibration",
                wu_k40.to_str().unwrap(),
            ],
            "has no parameters for device",
        ),
        // No device at all.
        (
            vec!["--calibration", wu_k40.to_str().unwrap()],
            "give --device",
        ),
    ];
    for cmd in ["sweep", "best", "compare"] {
        for (extra, expect) in &cases {
            let mut a = vec![cmd, "--model", "wu", "--inputs", &example];
            if cmd == "sweep" {
                a.extend(["-o", out_s]);
            }
            if cmd == "compare" {
                a.extend(["--inputs", &example, "--out", dir.to_str().unwrap()]);
            }
            a.extend(extra.iter());
            let (code, _, err) = run(&a);
            assert_eq!(code, 2, "{cmd} {extra:?}: {err}");
            assert!(err.contains(expect), "{cmd} {extra:?}: {err}");
            assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
        }
    }
    // A model of the sweep that no calibration on the axis covers.
    let (code, _, err) = run(&[
        "sweep",
        "--model",
        "wu,mwp-cwp",
        "--inputs",
        &format!("wu={example}"),
        "--device",
        "Tesla K40",
        "--calibration",
        wu_k40.to_str().unwrap(),
        "-o",
        out_s,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--calibration none"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
    assert!(!out.exists());
}

#[test]
fn resumed_sweep_with_a_calibration_axis_is_byte_identical() {
    let dir = tmp("resume");
    let cal = dir.join("cal-wu.toml");
    wu_calibration(&cal, "Tesla K40");
    let example = wu_example();
    let args = |out: &Path| -> Vec<String> {
        [
            "sweep",
            "--model",
            "wu",
            "--inputs",
            &example,
            "--device",
            "Tesla K40",
            "--calibration",
            "none",
            "--calibration",
            cal.to_str().unwrap(),
            "--param",
            "threads_per_block=32..1024:32",
            "--param",
            "n_b=1..100",
            "--chunk-points",
            "700",
            "-o",
            &out.display().to_string(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let strs = |v: &[String]| v.iter().map(String::to_string).collect::<Vec<_>>();
    let whole = dir.join("whole.csv");
    let w = strs(&args(&whole));
    run_ok(&w.iter().map(String::as_str).collect::<Vec<_>>());
    let part = dir.join("part.csv");
    let mut stop = args(&part);
    // 6,400 points in two calibration cells: stop inside the calibrated one.
    stop.extend(["--stop-after".into(), "4000".into()]);
    let out = run_ok(&stop.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.contains("stopped after"), "{out}");
    assert!(!part.exists());
    let mut resume = args(&part);
    resume.push("--resume".into());
    let out = run_ok(&resume.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.contains("resumed after"), "{out}");
    let a = std::fs::read(&whole).unwrap();
    assert_eq!(a, std::fs::read(&part).unwrap(), "resumed output differs");
    let text = String::from_utf8(a).unwrap();
    assert_eq!(
        text.lines().filter(|l| l.contains(",cal-wu,")).count(),
        3200
    );
    assert_eq!(text.lines().filter(|l| l.contains(",none,")).count(), 3200);

    // A checkpoint of the same sweep with another calibration file is refused.
    let stop_again = {
        let mut s = args(&part);
        s.extend(["--stop-after".into(), "700".into()]);
        s
    };
    run_ok(&stop_again.iter().map(String::as_str).collect::<Vec<_>>());
    write_calibration(
        &cal,
        "wu",
        "Tesla K40",
        &[
            ("dram_latency_scale", 2.0),
            ("departure_delay_scale", 6.0),
            ("arithmetic_latency_scale", 1.25),
            ("launch_overhead_scale", 4.0),
        ],
    );
    let mut resume = args(&part);
    resume.push("--resume".into());
    let (code, _, err) = run(&resume.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("different sweep"), "{err}");
}

#[test]
fn best_and_compare_take_the_calibration_axis() {
    let dir = tmp("best-compare");
    let cal = dir.join("cal-wu.toml");
    wu_calibration(&cal, "Tesla K40");
    let example = wu_example();
    let out = run_ok(&[
        "best",
        "--model",
        "wu",
        "--inputs",
        &example,
        "--device",
        "Tesla K40",
        "--calibration",
        cal.to_str().unwrap(),
        "--param",
        "threads_per_block=32..1024:32",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let best = &v["models"][0]["best"];
    assert_eq!(best["calibration"], "cal-wu");
    // The calibrated time of the chosen point, from predict.
    let tpb = best["params"]["threads_per_block"].as_f64().unwrap();
    let p = dir.join("best.toml");
    inputs_at(&example, &[("threads_per_block", tpb)], &p);
    let want = predict_time(&[
        "predict",
        "--model",
        "wu",
        "--device",
        "Tesla K40",
        "--inputs",
        p.to_str().unwrap(),
        "--calibration",
        cal.to_str().unwrap(),
    ]);
    assert!(close(best["time_us"].as_f64().unwrap(), want));

    // compare: two inputs files (the example and a copy with twice the arithmetic), calibrated
    // and not: the ratio pairs cells of the same calibration.
    let heavy = dir.join("heavy.toml");
    inputs_at(&example, &[("comp_cycles", 4000.0)], &heavy);
    let cmp = dir.join("cmp");
    run_ok(&[
        "compare",
        "--model",
        "wu",
        "--inputs",
        &example,
        "--inputs",
        heavy.to_str().unwrap(),
        "--device",
        "Tesla K40",
        "--calibration",
        cal.to_str().unwrap(),
        "--calibration",
        "none",
        "--param",
        "n_b=13,130",
        "--out",
        cmp.to_str().unwrap(),
    ]);
    assert!(cmp.join("compare.csv").exists());
}

#[test]
fn roofline_sweep_equals_predict_roofline() {
    let dir = tmp("roofline");
    let inputs = roofline_inputs(&dir);
    let out = dir.join("roof.csv");
    run_ok(&[
        "sweep",
        "--model",
        "roofline",
        "--inputs",
        inputs.to_str().unwrap(),
        "--device",
        "GTX-680,NVIDIA A100 80GB SXM4",
        "--param",
        "flops=2^20..2^40",
        "--param",
        "dram_bytes=2^10..2^36",
        "-o",
        out.to_str().unwrap(),
    ]);
    let rows = read_csv(&out);
    assert_eq!(rows.len(), 2 * 21 * 27);
    // Every 37th row (both devices, both bounds) against predict.
    let mut bounds = std::collections::BTreeSet::new();
    for r in rows.iter().step_by(37) {
        let flops: f64 = r["flops"].parse().unwrap();
        let bytes: f64 = r["dram_bytes"].parse().unwrap();
        let p = dir.join("point.toml");
        std::fs::write(&p, format!("flops = {flops:?}\ndram_bytes = {bytes:?}\n")).unwrap();
        let out = run_ok(&[
            "predict",
            "--model",
            "roofline",
            "--device",
            &r["device"],
            "--inputs",
            p.to_str().unwrap(),
            "--json",
        ]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        bounds.insert(v["breakdown"]["bound"].as_str().unwrap().to_string());
        let got: f64 = r["time_us"].parse().unwrap();
        assert_eq!(got, json_time(&out), "{r:?}");
        assert_eq!(r["calibration"], "none");
    }
    assert_eq!(
        bounds.len(),
        2,
        "sampled both compute- and memory-bound points"
    );
}

#[test]
fn a_space_file_lists_calibrations_relative_to_itself() {
    let dir = tmp("space-file");
    wu_calibration(&dir.join("k40.toml"), "Tesla K40");
    let example = wu_example();
    std::fs::write(
        dir.join("space.toml"),
        format!(
            "models = [\"wu\"]\ninputs = [{example:?}]\ndevices = [\"Tesla K40\"]\n\
             params = [\"n_b=13,130\"]\ncalibrations = [\"k40.toml\", \"none\"]\n"
        ),
    )
    .unwrap();
    let from_file = dir.join("file.csv");
    run_ok(&[
        "sweep",
        "--space",
        dir.join("space.toml").to_str().unwrap(),
        "-o",
        from_file.to_str().unwrap(),
    ]);
    let rows = read_csv(&from_file);
    let cals: Vec<&str> = rows.iter().map(|r| r["calibration"].as_str()).collect();
    assert_eq!(cals, ["k40", "k40", "none", "none"]);
    // The same space from flags gives the same file.
    let from_flags = dir.join("flags.csv");
    run_ok(&[
        "sweep",
        "--model",
        "wu",
        "--inputs",
        &example,
        "--device",
        "Tesla K40",
        "--param",
        "n_b=13,130",
        "--calibration",
        dir.join("k40.toml").to_str().unwrap(),
        "--calibration",
        "none",
        "-o",
        from_flags.to_str().unwrap(),
    ]);
    assert_eq!(
        std::fs::read(&from_file).unwrap(),
        std::fs::read(&from_flags).unwrap()
    );
}
