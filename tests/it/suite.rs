//! `kerneltime evaluate --suite`: the accuracy harness on suites of our own `scale` kernel
//! (`tests/fixtures/suite/`), bad suite files, the column mapping of a measurement file, the
//! compile cache (when the GPU toolchain is installed) and the development suites (when
//! `../shared` is present; set `SHARED` to point elsewhere).

use std::path::{Path, PathBuf};

use crate::common::{json, run, temp_dir, write};
use kerneltime::suite::{Compiler, Suite, Toolchain};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/suite")
}

fn ptx() -> String {
    fixtures().join("scale.nvcc-sm75.ptx").display().to_string()
}

/// The trace model's time for a `scale` launch, through `predict` (not the suite code).
fn predicted_us(device: &str, n: u64) -> f64 {
    predicted_with_overhead(device, n).0
}

/// The trace model's time and launch overhead for a `scale` launch, through `predict`.
fn predicted_with_overhead(device: &str, n: u64) -> (f64, f64) {
    let grid = n.div_ceil(256).to_string();
    let arg = format!("3={n}");
    let v = json(&[
        "predict",
        "--model",
        "trace",
        "--device",
        device,
        "--ptx",
        &ptx(),
        "--entry",
        "scale",
        "--grid",
        &grid,
        "--block",
        "256",
        "--arg",
        &arg,
        "--arg",
        "2=2.0",
        "--json",
    ]);
    let overhead = v["breakdown"]["launch_overhead_us"]
        .as_f64()
        .expect("launch_overhead_us in the breakdown");
    (v["time_us"].as_f64().expect("time_us"), overhead)
}

/// `evaluate --suite SUITE --model trace --json --out OUT --cache-dir CACHE`, which must succeed.
fn evaluate_trace(suite: &Path, out: &Path, cache: &Path) -> serde_json::Value {
    json(&[
        "evaluate",
        "--suite",
        suite.to_str().unwrap(),
        "--model",
        "trace",
        "--json",
        "--out",
        out.to_str().unwrap(),
        "--cache-dir",
        cache.to_str().unwrap(),
    ])
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn hand_chosen_ratios_give_hand_computed_metrics() {
    // Four launches of `scale`; each "measured" time is the trace model's own prediction
    // (from `predict`) divided by a hand-chosen ratio, so predicted / measured is exactly that
    // ratio whatever the model says. The largest ratio goes to the fastest launch, so the
    // measured times keep the predicted order.
    let sizes = [1u64 << 18, 1 << 20, 1 << 22, 1 << 24];
    let mut launches: Vec<(u64, f64)> = sizes
        .iter()
        .map(|&n| (n, predicted_us("RTX 2080 Ti", n)))
        .collect();
    launches.sort_by(|a, b| a.1.total_cmp(&b.1));
    for w in launches.windows(2) {
        assert!(w[0].1 < w[1].1, "distinct predictions needed: {launches:?}");
    }
    let ratios = [1.3, 1.1, 0.96, 0.8];
    let dir = temp_dir("suite-hand");
    let mut text = format!(
        "[defaults]\ndataset = \"tiny\"\ndevice = \"RTX 2080 Ti\"\nptx = \"{}\"\nentry = \"scale\"\nblock = 256\n",
        ptx()
    );
    for (k, ((n, p), r)) in launches.iter().zip(ratios).enumerate() {
        text += &format!(
            "\n[[case]]\nid = \"n{n}\"\ngrid = {}\nargs = {{ 3 = {n}, scale_param_2 = 2.0 }}\nmeasured_us = {:?}\n",
            n.div_ceil(256),
            p / r
        );
        if k == 0 {
            // The same launch on a GPU the catalogue does not know: counted, not dropped.
            text += &format!(
                "\n[[case]]\nid = \"lost\"\ndevice = \"No Such GPU\"\ngrid = {}\nargs = {{ 3 = {n}, scale_param_2 = 2.0 }}\nmeasured_us = 1.0\n",
                n.div_ceil(256)
            );
        }
    }
    let suite = write(&dir, "tiny.toml", &text);
    let out = dir.join("out");
    let v = evaluate_trace(&suite, &out, &dir.join("cache"));
    assert_eq!(v["cases"], 5);
    let groups = v["groups"].as_array().unwrap();
    let find = |device: &str| {
        groups
            .iter()
            .find(|g| g["device"] == device)
            .unwrap_or_else(|| panic!("no group for {device}: {groups:?}"))
    };
    // Errors |r - 1|: 0.3, 0.1, 0.04, 0.2. MAPE 0.64 / 4 = 0.16; median of 0.04 0.1 0.2 0.3
    // is 0.15; 3 of 4 within 0.25; all pairs concordant; geomean (1.3*1.1*0.96*0.8)^(1/4)
    // = 1.09824^(1/4) = 1.0237.
    for device in ["GeForce RTX 2080 Ti", "all"] {
        let g = find(device);
        assert_eq!(g["dataset"], "tiny");
        assert_eq!(g["model"], "trace");
        assert_eq!(g["n"], 4);
        assert!(close(g["mape"].as_f64().unwrap(), 0.16), "{g}");
        assert!(close(g["median_error"].as_f64().unwrap(), 0.15), "{g}");
        assert!(close(g["within_25"].as_f64().unwrap(), 0.75), "{g}");
        assert!(close(g["kendall_tau"].as_f64().unwrap(), 1.0), "{g}");
        let geomean = (1.3f64 * 1.1 * 0.96 * 0.8).powf(0.25);
        assert!(close(g["geomean_ratio"].as_f64().unwrap(), geomean), "{g}");
    }
    assert_eq!(find("all")["failed"], 1);
    let lost = find("No Such GPU");
    assert_eq!(
        (lost["n"].as_u64(), lost["failed"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(lost["failures"]["unknown device"], 1);
    assert!(lost["mape"].is_null());
    let f = &v["failures"][0];
    assert_eq!(
        (f["reason"].as_str(), f["cases"].as_u64()),
        (Some("unknown device"), Some(1))
    );
    // Two distinct launches per size would be wrong: the lost case shares its launch.
    assert_eq!(v["launches"], 4);

    // --out: the same summary, one CSV row per case and model, the Markdown table.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["groups"], v["groups"]);
    let csv = std::fs::read_to_string(out.join("cases.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 6, "{csv}");
    assert!(
        rows[0].starts_with("id,dataset,device,entry,model,measured_us,predicted_us,ratio,failure")
    );
    for ((n, _), r) in launches.iter().zip(ratios) {
        let row = rows
            .iter()
            .find(|l| l.starts_with(&format!("n{n},")))
            .unwrap();
        let ratio: f64 = row.split(',').nth(7).unwrap().parse().unwrap();
        assert!(close(ratio, r), "{row}");
    }
    assert!(rows
        .iter()
        .any(|l| l.starts_with("lost,") && l.contains(",unknown device,")));
    let md = std::fs::read_to_string(out.join("accuracy.md")).unwrap();
    assert!(md.contains("**tiny**"), "{md}");
    assert!(
        md.contains("| GeForce RTX 2080 Ti | trace | 4 | 15.0 | 75.0 | 1.00 | 16.0 | 1.02 | 0 |"),
        "{md}"
    );

    // The text table has the same figures.
    let (code, stdout, _) = run(&[
        "evaluate",
        "--suite",
        suite.to_str().unwrap(),
        "--model",
        "trace",
        "--cache-dir",
        dir.join("cache").to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    assert!(stdout.contains("1 x unknown device (trace)"), "{stdout}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("tiny") && l.contains("GeForce RTX 2080 Ti"))
        .unwrap();
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        cells[cells.len() - 7..],
        ["4", "0", "16.0", "15.0", "75.0", "1.000", "1.024"]
    );
}

#[test]
fn failures_are_counted_per_reason_and_hints_are_named() {
    let dir = temp_dir("suite-failures");
    let text = format!(
        r#"[defaults]
dataset = "odd"
device = "RTX 2080 Ti"
ptx = "{ptx}"
entry = "scale"
grid = 4
block = 1024
args = {{ 3 = 4096, 2 = 2.0 }}
measured_us = 3.0

[[case]]
id = "fine"
registers = 10
dynamic_shared_bytes = 2048
data = {{ 1 = "uniform:0:1:7" }}
mapped_host = ["scale_param_0"]

[[case]]
id = "too-many-registers"
registers = 255

[[case]]
id = "bad-hint"
data = {{ nosuch = "const:0" }}

[[case]]
id = "no-kernel"
entry = "nosuch"

[[case]]
id = "no-arg"
args = {{ 2 = 2.0 }}
"#,
        ptx = ptx()
    );
    let suite = write(&dir, "odd.toml", &text);
    let out = dir.join("out");
    let v = evaluate_trace(&suite, &out, &dir.join("cache"));
    let g = &v["groups"][0];
    assert_eq!(
        (g["n"].as_u64(), g["failed"].as_u64()),
        (Some(1), Some(4)),
        "{v}"
    );
    // 1024 threads x 255 registers do not fit in 64 K registers: the model says it cannot run.
    assert_eq!(g["failures"]["model error"], 1, "{v}");
    assert_eq!(g["failures"]["bad case"], 1, "{v}");
    // A missing kernel and a missing argument.
    assert_eq!(g["failures"]["ptx error"], 1, "{v}");
    assert_eq!(g["failures"]["emulation error"], 1, "{v}");
    let csv = std::fs::read_to_string(out.join("cases.csv")).unwrap();
    let fine = csv.lines().find(|l| l.starts_with("fine,")).unwrap();
    assert!(
        fine.contains("data hints used by the emulation: 1=uniform:0:1:7"),
        "{fine}"
    );
    assert!(
        fine.contains("mapped host memory (scale_param_0) crosses the host link"),
        "{fine}"
    );
    assert!(
        fine.contains("2048 bytes of dynamic shared memory"),
        "{fine}"
    );
    let bad = csv.lines().find(|l| l.starts_with("bad-hint,")).unwrap();
    assert!(
        bad.contains("`nosuch` names no parameter of kernel `scale`"),
        "{bad}"
    );
}

/// The hand-written kernels of the data-hint tests.
fn hints_ptx() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/ptx/data_hints.hand.ptx")
        .display()
        .to_string()
}

/// Writes a suite into a fresh folder and evaluates it with the trace model: the summary and
/// the rows of `cases.csv` as (id, predicted_us, notes).
fn evaluate_rows(name: &str, text: &str) -> (serde_json::Value, Vec<(String, f64, String)>) {
    let dir = temp_dir(name);
    let suite = write(&dir, "suite.toml", text);
    let out = dir.join("out");
    let v = evaluate_trace(&suite, &out, &dir.join("cache"));
    let text = std::fs::read_to_string(out.join("cases.csv")).unwrap();
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let rows = r
        .records()
        .map(|rec| {
            let rec = rec.unwrap();
            (
                rec[0].to_string(),
                rec[6].parse().unwrap_or(f64::NAN),
                rec[10].to_string(),
            )
        })
        .collect();
    (v, rows)
}

#[test]
fn a_case_with_data_hints_is_emulated_with_them() {
    let ptx = hints_ptx();
    let text = format!(
        r#"[defaults]
dataset = "hints"
device = "V100"
ptx = "{ptx}"
entry = "gather"
grid = 16384
block = 256
args = {{ n = 4194304 }}
measured_us = 100.0

[[case]]
id = "unhinted"

[[case]]
id = "broadcast"
data = {{ idx = "const:0" }}
"#
    );
    let (v, rows) = evaluate_rows("suite-hints", &text);
    // The hint is part of the launch: two emulations.
    assert_eq!(v["launches"], 2, "{v}");
    let (unhinted, broadcast) = (&rows[0], &rows[1]);
    assert_eq!(
        (unhinted.0.as_str(), broadcast.0.as_str()),
        ("unhinted", "broadcast")
    );
    assert!(
        broadcast
            .2
            .contains("data hints used by the emulation: idx=const:0"),
        "{broadcast:?}"
    );
    assert!(!unhinted.2.contains("data hints"), "{unhinted:?}");
    // Unknown indices are read as 32 scattered sectors per warp, idx = 0 as one: the hinted
    // case is the faster, and it is what `predict --data` gives for the same launch.
    assert!(broadcast.1 < unhinted.1, "{rows:?}");
    let predicted = json(&[
        "predict",
        "--model",
        "trace",
        "--device",
        "V100",
        "--ptx",
        &ptx,
        "--entry",
        "gather",
        "--grid",
        "16384",
        "--block",
        "256",
        "--arg",
        "n=4194304",
        "--data",
        "idx=const:0",
        "--json",
    ])["time_us"]
        .as_f64()
        .unwrap();
    assert!(
        close(broadcast.1, predicted),
        "{} vs {predicted}",
        broadcast.1
    );
}

#[test]
fn a_case_with_mapped_host_memory_is_timed_over_the_host_link() {
    let text = format!(
        r#"[defaults]
dataset = "mapped"
device = "RTX 2080 Ti"
ptx = "{ptx}"
entry = "rare_store"
grid = 4096
block = 256
args = {{ n = 1048576 }}
data = {{ x = "const:0" }}
measured_us = 300.0

[[case]]
id = "device"

[[case]]
id = "mapped"
mapped_host = ["x"]
"#,
        ptx = hints_ptx()
    );
    let (v, rows) = evaluate_rows("suite-mapped-host", &text);
    // Mapping a buffer does not change the emulation: one launch.
    assert_eq!(v["launches"], 1, "{v}");
    let (device, mapped) = (&rows[0], &rows[1]);
    // x is read once, 1,048,576 floats = 4,194,304 bytes, over the RTX 2080 Ti's PCIe 3.0
    // x16 (compute capability 7.5): 16 lanes x 8 GT/s x 128/130 / 8 = 15.7538 GB/s per
    // direction, so 4,194,304 / 15,753.8 = 266.24 us. Nothing is written to mapped memory
    // (out is device memory, and x = 0 never stores).
    let link_us: f64 = 4_194_304.0 / (16.0 * 8.0 * 128.0 / 130.0 / 8.0 * 1e3);
    assert!((link_us - 266.24).abs() < 0.01);
    assert!(
        mapped.2.contains("PCIe 3.0 x16") && mapped.2.contains("(4194304 bytes read, 0 written)"),
        "{mapped:?}"
    );
    assert!(!device.2.contains("host link"), "{device:?}");
    // The headline overlaps the transfer with the kernel's work: max(model, link).
    let expected = device.1.max(link_us);
    assert!(device.1 < link_us, "{rows:?}");
    assert!((mapped.1 - expected).abs() <= 1e-9 * expected, "{rows:?}");
}

#[test]
fn bad_suite_files_exit_2_naming_the_case_and_the_field() {
    let dir = temp_dir("suite-bad");
    let head = format!(
        "[defaults]\ndevice = \"RTX 2080 Ti\"\nptx = \"{}\"\nentry = \"scale\"\ngrid = 4\nblock = 256\nargs = {{ 3 = 1000, 2 = 1.0 }}\nmeasured_us = 2.0\n",
        ptx()
    );
    let csv = fixtures().join("scale-measured.csv").display().to_string();
    let cases: &[(&str, String, &str)] = &[
        (
            "missing-time",
            "[[case]]\nid = \"a\"\n[[case]]\nid = \"b\"\nmeasured_us = \"soon\"\n".into(),
            "case 2 (`b`), field `measured_us`: must be a number, got `soon`",
        ),
        ("zero-grid", "[[case]]\ngrid = [0, 1]\n".into(), "case 1, field `grid`"),
        (
            "unknown-field",
            "[[case]]\nregs = 3\n".into(),
            "case 1: unknown field `regs`",
        ),
        (
            "bad-hint",
            "[[case]]\ndata = { x = \"zeros\" }\n".into(),
            "case 1, field `data.x`: `zeros` is not a data hint",
        ),
        (
            "bad-registers",
            "[[case]]\nid = \"r\"\nregisters = \"lots\"\n".into(),
            "case 1 (`r`), field `registers`: must be a whole number or \"compiler\"",
        ),
        (
            "no-ptx-file",
            "[[case]]\nptx = \"missing.ptx\"\n".into(),
            "case 1, field `ptx`: no file",
        ),
        (
            "both-kernels",
            "[[case]]\nsource = \"k.cu\"\nptx = \"k.ptx\"\n".into(),
            "case 1: give `source` or `ptx`, not both",
        ),
        (
            "template-column",
            format!("[[group]]\ndataset = \"g\"\nmeasurements = \"{csv}\"\n[group.case]\nargs = {{ 3 = \"{{nn}}\" }}\n"),
            "group 1 (`g`) row ",
        ),
        (
            "template-syntax",
            format!("[[group]]\nmeasurements = \"{csv}\"\n[group.case]\ngrid = \"{{n +}}\"\n"),
            "group 1, field `case.grid`",
        ),
        (
            "filter-column",
            format!("[[group]]\nmeasurements = \"{csv}\"\nwhere = {{ gpu = \"x\" }}\n[group.case]\n"),
            "group 1, field `where.gpu`: no row of",
        ),
        ("not-toml", "[[case]\n".into(), "is not valid TOML"),
        ("top-level", "cases = 3\n".into(), "the suite: unknown key `cases`"),
    ];
    for (name, body, expected) in cases {
        let text = if ["template", "filter", "top"]
            .iter()
            .any(|p| name.starts_with(p))
        {
            body.clone()
        } else {
            format!("{head}\n{body}")
        };
        let suite = write(&dir, &format!("{name}.toml"), &text);
        let (code, stdout, stderr) = run(&["evaluate", "--suite", suite.to_str().unwrap()]);
        assert_eq!(code, 2, "{name}: {stderr}");
        assert!(stdout.is_empty(), "{name}: {stdout}");
        assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
        assert!(
            stderr.contains(expected),
            "{name}: expected `{expected}` in {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
    }
    // The template error names the row and the column.
    let suite = dir.join("template-column.toml");
    let (_, _, stderr) = run(&["evaluate", "--suite", suite.to_str().unwrap()]);
    assert!(
        stderr.contains("scale-measured.csv:3, field `args`: `{nn}`: the row has no column `nn`"),
        "{stderr}"
    );
    // A model the PTX path does not have.
    let ok = write(&dir, "ok.toml", &format!("{head}\n[[case]]\n"));
    let (code, _, stderr) = run(&[
        "evaluate",
        "--suite",
        ok.to_str().unwrap(),
        "--model",
        "lslag",
    ]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--model: `lslag` cannot run on a suite"),
        "{stderr}"
    );
    // --suite and --measurements are alternatives.
    let (code, _, stderr) = run(&[
        "evaluate",
        "--suite",
        ok.to_str().unwrap(),
        "--measurements",
        "x.csv",
    ]);
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn a_measurement_file_becomes_cases_through_filter_sample_and_template() {
    let path = fixtures().join("mapped.toml");
    let suite = Suite::load(&path).unwrap();
    // Seven rows on the two GPUs; two per GPU by the seeded sample, in file order.
    assert_eq!(suite.cases.len(), 4);
    let lines: Vec<usize> = suite
        .cases
        .iter()
        .map(|c| c.id.rsplit(' ').next().unwrap().parse().unwrap())
        .collect();
    assert!(lines.windows(2).all(|w| w[0] < w[1]), "{lines:?}");
    // The CSV (hand-written) holds each row's grid = ceil(n / 256) and the template computes
    // it from `n`; the block and the device come from the row, the time from `time_us`.
    let csv = std::fs::read_to_string(fixtures().join("scale-measured.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    for (c, line) in suite.cases.iter().zip(&lines) {
        let row = &rows[line - 1];
        assert_eq!(
            c.launch.grid,
            [row[2].parse::<u32>().unwrap(), 1, 1],
            "{}",
            c.id
        );
        assert_eq!(c.launch.block, [256, 1, 1]);
        let mut args = c.args.clone();
        args.sort();
        assert_eq!(args, ["2=1.5".to_string(), format!("3={}", row[4])]);
        assert_eq!(c.device.to_string(), row[1]);
        assert_eq!(c.measured_us, row[5].parse::<f64>().unwrap());
        assert_eq!(c.entry, "scale");
        assert_eq!(c.dataset, "mapped");
    }
    for d in ["RTX 2080 Ti", "GTX 680"] {
        assert_eq!(
            suite
                .cases
                .iter()
                .filter(|c| c.device.to_string() == d)
                .count(),
            2
        );
    }
    // The same file gives the same sample; a GPU's sample does not depend on the other GPU's rows.
    let again = Suite::load(&path).unwrap();
    assert_eq!(again.cases, suite.cases);
    let text = std::fs::read_to_string(&path).unwrap();
    let dir = temp_dir("suite-mapped");
    std::fs::copy(
        fixtures().join("scale-measured.csv"),
        dir.join("scale-measured.csv"),
    )
    .unwrap();
    std::fs::copy(
        fixtures().join("scale.nvcc-sm75.ptx"),
        dir.join("scale.nvcc-sm75.ptx"),
    )
    .unwrap();
    let one = write(
        &dir,
        "one.toml",
        &text.replace(
            r#"device = ["RTX 2080 Ti", "GTX 680"]"#,
            r#"device = "GTX 680""#,
        ),
    );
    let alone = Suite::load(&one).unwrap();
    let both: Vec<&str> = suite
        .cases
        .iter()
        .filter(|c| c.device.to_string() == "GTX 680")
        .map(|c| c.id.as_str())
        .collect();
    let single: Vec<&str> = alone.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(both, single);
    // Whole configurations: two sizes, with every row of them on the two GPUs.
    let by = write(
        &dir,
        "by.toml",
        &text.replace(r#"sample_per = ["device"]"#, r#"sample_by = ["n"]"#),
    );
    let by = Suite::load(&by).unwrap();
    let size =
        |c: &kerneltime::suite::Case| c.args.iter().find(|a| a.starts_with("3=")).unwrap().clone();
    let mut sizes: Vec<String> = by.cases.iter().map(size).collect();
    sizes.sort();
    sizes.dedup();
    assert_eq!(sizes.len(), 2, "{sizes:?}");
    let expected = rows
        .iter()
        .filter(|r| r.len() == 6 && r[1] != "No Such GPU" && sizes.contains(&format!("3={}", r[4])))
        .count();
    assert_eq!(by.cases.len(), expected);
    // Without a sample, every row that passes the filter.
    let all = write(&dir, "all.toml", &text.replace("sample = 2\n", ""));
    let (code, _, stderr) = run(&["evaluate", "--suite", all.to_str().unwrap()]);
    assert_eq!(code, 2, "sample_per without sample: {stderr}");
    assert!(
        stderr.contains("field `sample_per`: needs `sample`"),
        "{stderr}"
    );
    let all = write(
        &dir,
        "all.toml",
        &text.replace("sample = 2\nsample_per = [\"device\"]\n", ""),
    );
    assert_eq!(Suite::load(&all).unwrap().cases.len(), 7);

    // End to end: the groups count what the sample kept.
    let v = json(&[
        "evaluate",
        "--suite",
        path.to_str().unwrap(),
        "--model",
        "trace",
        "--json",
    ]);
    let n: Vec<(String, u64)> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["device"].as_str().unwrap().to_string(),
                g["n"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        n,
        [
            ("GeForce RTX 2080 Ti".to_string(), 2),
            ("GeForce GTX 680".to_string(), 2),
            ("all".to_string(), 4)
        ]
    );
}

fn toolchain() -> Option<Toolchain> {
    let tc = Toolchain::discover(&[Path::new(env!("CARGO_MANIFEST_DIR"))]);
    match tc.missing_for(Compiler::Nvrtc) {
        None => Some(tc),
        Some(why) => {
            eprintln!("skipped: {why}");
            None
        }
    }
}

#[test]
fn sources_compile_once_per_target_and_come_back_from_the_cache() {
    if toolchain().is_none() {
        return;
    }
    let dir = temp_dir("suite-compile");
    let src = fixtures().join("scale.cu").display().to_string();
    // Two defines x two targets (sm_75 twice, sm_86) = 4 compilations for 6 cases, plus one
    // source that does not compile and one PTX file whose registers come from ptxas.
    let mut text = format!(
        "[defaults]\nsource = \"{src}\"\nentry = \"scale\"\nblock = 256\nargs = {{ 3 = 65536, 2 = 2.0 }}\nmeasured_us = 5.0\n"
    );
    for per in [1, 2] {
        for dev in ["RTX 2080 Ti", "Titan RTX", "RTX 3090"] {
            text += &format!(
                "\n[[case]]\ndevice = \"{dev}\"\ndefines = {{ PER_THREAD = {per} }}\ngrid = {}\n",
                256 / per
            );
        }
    }
    text += "\n[[case]]\nid = \"broken\"\ndevice = \"RTX 3090\"\ngrid = 256\ndefines = { PER_THREAD = \"(\" }\n";
    text += &format!(
        "\n[[case]]\nid = \"ptx\"\nptx = \"{}\"\ndevice = \"RTX 2080 Ti\"\ngrid = 256\nregisters = \"compiler\"\n",
        ptx()
    );
    let suite = write(&dir, "compile.toml", &text);
    let cache = dir.join("cache");
    let out = dir.join("out");
    let first = evaluate_trace(&suite, &out, &cache);
    assert_eq!(first["cases"], 8);
    let c = &first["compile"];
    assert_eq!(
        (
            c["units"].as_u64(),
            c["compiled"].as_u64(),
            c["failed"].as_u64()
        ),
        (Some(6), Some(5), Some(1)),
        "{c}"
    );
    let all = first["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["device"] == "all")
        .unwrap();
    assert_eq!(
        (all["n"].as_u64(), all["failed"].as_u64()),
        (Some(7), Some(1)),
        "{all}"
    );
    assert_eq!(all["failures"]["compile error"], 1);
    let csv = std::fs::read_to_string(dir.join("out/cases.csv")).unwrap();
    assert!(
        csv.contains("registers per thread from the ptxas report for sm_86"),
        "{csv}"
    );
    let broken = csv.lines().find(|l| l.starts_with("broken,")).unwrap();
    assert!(
        broken.contains(",compile error,") && broken.contains("NVRTC:"),
        "{broken}"
    );
    let second = evaluate_trace(&suite, &out, &cache);
    let c = &second["compile"];
    assert_eq!(
        (c["from_cache"].as_u64(), c["compiled"].as_u64()),
        (Some(5), Some(0)),
        "{c}"
    );
    assert_eq!(second["groups"], first["groups"]);
}

/// `../shared` (or `$SHARED`), when present.
fn shared_data() -> Option<PathBuf> {
    let root = std::env::var_os("SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    let data = root.join("data");
    if data.join("tuning/caches").is_dir() && data.join("measurements/amaris2018").is_dir() {
        Some(data)
    } else {
        eprintln!(
            "skipped: the development data ({}) is absent",
            data.display()
        );
        None
    }
}

/// A Kernel Tuner cache, read by the test itself.
fn tuning_cache(path: &Path) -> serde_json::Value {
    use std::io::Read;
    let mut s = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut s)
        .unwrap();
    serde_json::from_str(&s).unwrap()
}

#[test]
fn development_suites_run_on_a_handful_of_cases() {
    let Some(data) = shared_data() else { return };
    if toolchain().is_none() {
        return;
    }
    let dir = temp_dir("suite-shared");
    std::fs::create_dir_all(dir.join("stub")).unwrap();
    write(
        &dir,
        "stub/cuda_profiler_api.h",
        "#include <cuda_runtime_api.h>\nextern \"C\" { cudaError_t cudaProfilerStart(void); cudaError_t cudaProfilerStop(void); cudaError_t cudaThreadExit(void); }\n",
    );
    let amaris = data.join("measurements/amaris2018");
    let tuning = data.join("tuning");
    // The NCA rows through a group (the measurement-file path) ...
    let mut text = format!(
        r#"[[group]]
dataset = "nca"
measurements = "{meas}"
where = {{ app = "vectorAdd", block_x = 256, input_size_1 = 131072 }}
[group.case]
source = "{amaris}/kernels/vectorAdd.cu"
compiler = "nvcc"
include = ["stub"]
defines = {{ Tile_Width = 16 }}
args = {{ 3 = "{{input_size_1}}" }}
registers = "{{regs_per_thread}}"
shared_bytes = "{{static_smem_bytes}}"
"#,
        meas = amaris.join("measurements_dev.csv.gz").display(),
        amaris = amaris.display(),
    );
    // ... and a few tuning configurations as plain cases, their times read here (the cache
    // reader is slow in a debug build).
    let mut expected: Vec<(String, f64)> = Vec::new();
    let conv = tuning_cache(&tuning.join("caches/convolution_RTX_2080_Ti.json.gz"));
    for e in conv["cache"].as_object().unwrap().values() {
        let p = |k: &str| e[k].as_u64().unwrap();
        if p("tile_size_x") != 1
            || p("tile_size_y") != 1
            || p("block_size_x") != 32
            || p("block_size_y") != 8
        {
            continue;
        }
        let id = format!("conv-ro{}-pad{}", p("read_only"), p("use_padding"));
        let time_us = e["time"].as_f64().unwrap() * 1000.0;
        text += &format!(
            r#"
[[case]]
id = "{id}"
dataset = "convolution"
device = "{device}"
source = "{tuning}/kernels/convolution.cu"
options = ["-std=c++11"]
defines = {{ block_size_x = 32, block_size_y = 8, tile_size_x = 1, tile_size_y = 1, filter_width = 15, filter_height = 15, read_only = {ro}, use_padding = {pad} }}
entry = "convolution_kernel"
grid = [128, 512]
block = [32, 8]
measured_us = {time_us:?}
"#,
            device = conv["device_name"].as_str().unwrap(),
            tuning = tuning.display(),
            ro = p("read_only"),
            pad = p("use_padding"),
        );
        expected.push((id, time_us));
    }
    let pnpoly = tuning_cache(&tuning.join("caches/pnpoly_RTX_3090.json.gz"));
    for e in pnpoly["cache"].as_object().unwrap().values() {
        let p = |k: &str| e[k].as_u64().unwrap();
        if p("tile_size") != 1 || p("block_size_x") != 256 || p("between_method") != 0 {
            continue;
        }
        let id = format!("pnpoly-m{}", p("use_method"));
        let time_us = e["time"].as_f64().unwrap() * 1000.0;
        text += &format!(
            r#"
[[case]]
id = "{id}"
dataset = "pnpoly"
device = "{device}"
source = "{tuning}/kernels/pnpoly.cu"
defines = {{ block_size_x = 256, tile_size = 1, between_method = 0, use_method = {m} }}
entry = "cn_pnpoly"
grid = 78125
block = 256
args = {{ 2 = 20000000 }}
mapped_host = ["0", "1"]
measured_us = {time_us:?}
"#,
            device = pnpoly["device_name"].as_str().unwrap(),
            tuning = tuning.display(),
            m = p("use_method"),
        );
        expected.push((id, time_us));
    }
    assert_eq!(
        expected.len(),
        4 + 3,
        "read_only x use_padding, and three methods"
    );
    let suite = write(&dir, "dev.toml", &text);
    let out = dir.join("out");
    let v = evaluate_trace(&suite, &out, &dir.join("cache"));
    // vectorAdd at one size on the five GPUs (one launch), 4 + 3 tuning configurations.
    assert!(v["cases"].as_u64().unwrap() >= 5 + 7, "{v}");
    assert!(
        v["failures"].as_array().unwrap().is_empty(),
        "{}",
        v["failures"]
    );
    let nca = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["dataset"] == "nca" && g["device"] == "all")
        .unwrap();
    assert!(nca["n"].as_u64().unwrap() >= 5, "{nca}");
    for g in v["groups"].as_array().unwrap() {
        assert!(g["n"].as_u64().unwrap() > 0, "{g}");
        let ratio = g["geomean_ratio"].as_f64().unwrap();
        assert!(ratio.is_finite() && ratio > 0.0, "{g}");
    }
    let csv = std::fs::read_to_string(out.join("cases.csv")).unwrap();
    for (id, time_us) in &expected {
        let row = csv
            .lines()
            .find(|l| l.starts_with(&format!("{id},")))
            .unwrap();
        let measured: f64 = row.split(',').nth(5).unwrap().parse().unwrap();
        assert!(close(measured, *time_us), "{row}");
        if id.starts_with("pnpoly") {
            assert!(
                row.contains("_Z9cn_pnpolyPiP6float2i"),
                "the source name finds the mangled entry: {row}"
            );
        }
    }
}

#[test]
fn the_launch_budget_of_a_suite_is_a_flag() {
    let dir = temp_dir("suite-budget");
    let text = format!(
        r#"[[case]]
id = "scale"
dataset = "budget"
device = "RTX 2080 Ti"
ptx = "{ptx}"
entry = "scale"
grid = 4
block = 1024
args = {{ 3 = 4096, 2 = 2.0 }}
measured_us = 3.0
"#,
        ptx = ptx()
    );
    let suite = write(&dir, "budget.toml", &text);
    let run = |budget: &str| {
        json(&[
            "evaluate",
            "--suite",
            suite.to_str().unwrap(),
            "--model",
            "trace",
            "--json",
            "--cache-dir",
            dir.join("cache").to_str().unwrap(),
            "--launch-budget",
            budget,
        ])
    };
    // 4 blocks of 32 warps: every emulated warp issues more than one instruction, so a budget
    // of 32 warp instructions cannot hold the launch; the default (32 M) can.
    let v = run("32");
    let g = &v["groups"][0];
    assert_eq!(
        (g["n"].as_u64(), g["failed"].as_u64()),
        (Some(0), Some(1)),
        "{v}"
    );
    assert_eq!(g["failures"]["emulation error"], 1, "{v}");
    let v = run("32000000");
    assert_eq!(v["groups"][0]["n"].as_u64(), Some(1), "{v}");
}

#[test]
fn a_suite_calibrates_trace_and_the_calibration_applies_by_name() {
    // Launches of `scale` on two GPUs whose "measured" times are the trace model's with a
    // hand-chosen time scale (0.8) on the simulated time without the launch overhead and twice
    // the architecture's overhead: t = 0.8 (T - L) + 2 L. The suite's rows keep their
    // simulation, so the fit is linear in both and must find them; the latency scales are
    // held at 1.
    let (scale, overhead) = (0.8, 2.0);
    let dir = temp_dir("suite-calibrate");
    let mut text = format!(
        "[defaults]\ndataset = \"tiny\"\nptx = \"{}\"\nentry = \"scale\"\nname = \"scale-kernel\"\nblock = 256\n",
        ptx()
    );
    let mut spread = Vec::new();
    for device in ["RTX 2080 Ti", "GTX 680"] {
        for n in [1u64 << 12, 1 << 16, 1 << 20, 1 << 23] {
            let (t, l) = predicted_with_overhead(device, n);
            let measured = scale * (t - l) + overhead * l;
            spread.push((t / measured - 1.0).abs());
            text += &format!(
                "\n[[case]]\nid = \"{device} {n}\"\ndevice = \"{device}\"\ngrid = {}\nargs = {{ 3 = {n}, 2 = 2.0 }}\nmeasured_us = {measured:?}\n",
                n.div_ceil(256)
            );
        }
    }
    let suite = write(&dir, "cal.toml", &text);
    let cache = dir.join("cache");
    let cal = dir.join("global.toml");
    let c = json(&[
        "calibrate",
        "--model",
        "trace",
        "--suite",
        suite.to_str().unwrap(),
        "--scope",
        "global,kernel",
        "--folds",
        "0",
        "-o",
        cal.to_str().unwrap(),
        "--cache-dir",
        cache.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(c["rows"], 8, "{c}");
    let groups = c["groups"].as_array().unwrap();
    let global = groups
        .iter()
        .find(|g| g["scope"] == "global")
        .expect("a global group");
    let p = &global["params"];
    assert!(
        (p["time_scale"].as_f64().unwrap() - scale).abs() < 1e-6,
        "{p}"
    );
    assert!(
        (p["launch_overhead_scale"].as_f64().unwrap() - overhead).abs() < 1e-6,
        "{p}"
    );
    assert_eq!(p["dram_latency_scale"], 1.0);
    assert_eq!(p["l2_latency_scale"], 1.0);
    assert!(
        global["warnings"].as_array().is_none_or(|w| w.is_empty()),
        "{global}"
    );
    // Kernel groups go by the cases' `name`, not the PTX entry.
    assert!(groups
        .iter()
        .filter(|g| g["scope"] == "kernel")
        .all(|g| g["kernel"] == "scale-kernel"));
    let notes = c["notes"].to_string();
    assert!(
        notes.contains("held, not fitted: dram_latency_scale, l2_latency_scale"),
        "{notes}"
    );

    // Applied to the suite: the calibrated model is exact, the uncalibrated one is not.
    let v = json(&[
        "evaluate",
        "--suite",
        suite.to_str().unwrap(),
        "--model",
        "trace",
        "--calibration",
        cal.to_str().unwrap(),
        "--json",
        "--cache-dir",
        cache.to_str().unwrap(),
    ]);
    let all = |model: &str| {
        v["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["device"] == "all" && g["model"] == model)
            .unwrap_or_else(|| panic!("no pooled group for {model}: {v}"))
            .clone()
    };
    let calibrated = all("trace (calibrated)");
    assert_eq!(calibrated["n"], 8);
    assert!(calibrated["mape"].as_f64().unwrap() < 1e-6, "{calibrated}");
    let mean = spread.iter().sum::<f64>() / spread.len() as f64;
    let uncalibrated = all("trace")["mape"].as_f64().unwrap();
    assert!(
        (uncalibrated - mean).abs() < 1e-9,
        "{uncalibrated} vs {mean}"
    );
    assert!(uncalibrated > 0.05, "{uncalibrated}");

    // A calibration of another model is refused, in one sentence.
    let wrong = write(
        &dir,
        "wu.toml",
        &std::fs::read_to_string(&cal)
            .unwrap()
            .replacen("model = \"trace\"", "model = \"wu\"", 1),
    );
    let (code, _, err) = run(&[
        "evaluate",
        "--suite",
        suite.to_str().unwrap(),
        "--model",
        "trace",
        "--calibration",
        wrong.to_str().unwrap(),
        "--cache-dir",
        cache.to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("wu"), "{err}");
}
