//! `calibrate`, `evaluate` (table, JSON, report with HTML checked in headless Chromium when
//! installed) and `reproduce parra2016` through the real binary.

use crate::common::bin;

use std::path::{Path, PathBuf};
use std::process::Command;

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kerneltime-cli-eval-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A counters table (amaris2018 columns) of two variants of one kernel on two GPUs. Times are
/// made up: a 5 us launch plus 0.002 us per warp instruction, times 1.5 for variant b.
fn counters_csv(dir: &Path) -> PathBuf {
    let mut s = String::from("source,gpu,app,kernel,input_size_1,duration_s,grid_x,grid_y,grid_z,block_x,block_y,block_z,regs_per_thread,static_smem,dynamic_smem,warps_launched,inst_executed,gld_transactions,gst_transactions,dram_read_transactions,dram_write_transactions\n");
    for gpu in ["GTX-680", "TitanX"] {
        for (app, k) in [("va", 1.0), ("vb", 1.5)] {
            for e in 8..16u32 {
                let n = 1u64 << e;
                let blocks = n / 128;
                let warps = (blocks * 4) as f64;
                let inst = warps * 50.0 * k;
                let t_us = 5.0 + 0.002 * inst;
                s.push_str(&format!(
                    "NCA:x,{gpu},{app},\"vec(float*, int)\",{n},{},{blocks},1,1,128,1,1,12,0,0,{warps},{inst},{},{},{},{}\n",
                    t_us * 1e-6,
                    warps * 4.0,
                    warps * 4.0,
                    warps * 4.0 * k,
                    warps * 4.0
                ));
            }
        }
    }
    let p = dir.join("counters.csv");
    std::fs::write(&p, s).unwrap();
    p
}

fn run_ok(args: &[&str]) -> Vec<u8> {
    let out = bin().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn calibrate_then_evaluate_json_and_report() {
    let d = temp_dir("flow");
    let data = counters_csv(&d);
    let cal = d.join("cal.toml");
    run_ok(&[
        "calibrate",
        "--model",
        "roofline",
        "--measurements",
        data.to_str().unwrap(),
        "--folds",
        "4",
        "--bootstrap",
        "3",
        "-o",
        cal.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&cal).unwrap();
    assert!(text.contains("model = \"roofline\""), "{text}");
    assert!(text.contains("mape_cv"), "{text}");
    assert!(text.contains("intervals"), "{text}");

    // predict --calibration: hand-made roofline inputs on the GTX 680 (8 SMs x 192 cores x 2
    // FLOP per cycle at 1058 MHz; 192.26 GB/s): 10 us of compute and 4 us of DRAM traffic.
    let inputs = d.join("roof.toml");
    std::fs::write(
        &inputs,
        format!(
            "flops = {}\ndram_bytes = {}\n",
            8.0 * 192.0 * 2.0 * 1058.0 * 10.0,
            192.26e3 * 4.0
        ),
    )
    .unwrap();
    let out = run_ok(&[
        "predict",
        "--model",
        "roofline",
        "--device",
        "GTX-680",
        "--kernel",
        "va/vec",
        "--inputs",
        inputs.to_str().unwrap(),
        "--calibration",
        cal.to_str().unwrap(),
        "--json",
    ]);
    let p: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let file: toml::Value = toml::from_str(&text).unwrap();
    let group = file["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| {
            g["device"].as_str() == Some("GeForce GTX 680")
                && g["kernel"].as_str() == Some("va/vec")
        })
        .unwrap();
    let q = |k: &str| group["params"][k].as_float().unwrap();
    // The launch overhead is a scale on compute capability 3.0's `launch_overhead_us` in
    // data/latencies.toml: 3.0 us (the Kepler row, estimated from the Fermi row's ~3 us per
    // asynchronous empty launch).
    let expected = (10.0 / q("compute_efficiency")).max(4.0 / q("memory_efficiency"))
        + q("launch_overhead_scale") * 3.0;
    let got = p["time_us"].as_f64().unwrap();
    assert!(
        (got - expected).abs() < 1e-9 * expected,
        "{got} vs {expected}"
    );

    let report = d.join("report");
    let out = run_ok(&[
        "evaluate",
        "--measurements",
        data.to_str().unwrap(),
        "--model",
        "roofline",
        "--calibration",
        cal.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let aggs = v["aggregates"].as_array().unwrap();
    // Uncalibrated and calibrated roofline on two GPUs.
    assert_eq!(aggs.len(), 4);
    for a in aggs {
        for key in ["model", "device", "n", "mape", "max_error", "kendall_tau"] {
            assert!(a.get(key).is_some(), "{key} missing in {a}");
        }
        assert_eq!(a["n"], 16);
        // Ratios are fractions: MAPE is a fraction, not a percentage.
        let mape = a["mape"].as_f64().unwrap();
        assert!((0.0..10.0).contains(&mape));
        if a["model"] == "roofline (calibrated)" {
            assert!(a["mape_cv"].as_f64().is_some(), "{a}");
        } else {
            assert!(a.get("mape_cv").is_none());
        }
    }
    // Each experiment lists its ratios r_k = model / measured (fractions), one per row.
    for x in v["experiments"].as_array().unwrap() {
        assert_eq!(
            x["ratios"].as_array().unwrap().len() as u64,
            x["n"].as_u64().unwrap()
        );
    }
    // va and vb solve the same sizes: comparisons (eq 21-22) appear per run and GPU.
    assert_eq!(v["comparisons"].as_array().unwrap().len(), 4);
    for f in [
        "index.html",
        "evaluation.json",
        "aggregates.csv",
        "experiments.csv",
        "points.csv",
    ] {
        assert!(report.join(f).exists(), "{f}");
    }
    let html = std::fs::read_to_string(report.join("index.html")).unwrap();
    // Two runs x three charts, all inline, nothing fetched from elsewhere.
    assert_eq!(html.matches("<svg").count(), 6);
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
    let dom = check_in_chromium(&report.join("index.html"), 6);
    if !dom.is_empty() {
        // Every row was predicted: the section says so.
        assert!(dom.contains("None: every run predicted every measured row."));
    }
}

/// Chromium, when installed; otherwise reports the missing tool (a skip unless
/// `KERNELTIME_REQUIRE_TOOLS` names chromium).
fn chromium() -> Option<&'static str> {
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    if found.is_none() {
        crate::common::missing_tool(
            "chromium",
            "Chromium is not installed (apt-get install -y chromium)",
        );
    }
    found
}

/// Runs headless Chromium on `url` with a fresh profile and `args`; its output.
fn headless(chromium: &str, url: &str, args: &[String]) -> std::process::Output {
    // A profile of its own per run: tests run Chromium in parallel.
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let profile = temp_dir(&format!("chromium-profile-{run}"));
    Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .output()
        .unwrap()
}

/// Loads the page in headless Chromium: no console error, and every chart in the DOM. Returns
/// the rendered DOM (empty when Chromium is missing).
fn check_in_chromium(page: &Path, charts: usize) -> String {
    let Some(chromium) = chromium() else {
        return String::new();
    };
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    let out = headless(chromium, &url, &["--dump-dom".to_string()]);
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium failed: {log}");
    assert_eq!(
        dom.matches("<svg").count(),
        charts,
        "charts in the rendered DOM"
    );
    assert!(dom.contains("kerneltime evaluation"));
    let console_errors: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") && (l.contains("ERROR") || l.contains("Uncaught")))
        .collect();
    assert!(
        console_errors.is_empty(),
        "console errors: {console_errors:?}"
    );
    dom
}

/// A decoded PNG: width, height and RGB pixels row by row.
struct Image {
    width: usize,
    height: usize,
    rgb: Vec<[u8; 3]>,
}

/// Decodes an 8-bit, non-interlaced RGB or RGBA PNG (what Chromium's screenshots are): the
/// chunks' IDAT data inflated with flate2, then each scanline unfiltered (PNG filters 0-4).
fn decode_png(bytes: &[u8]) -> Image {
    use std::io::Read as _;
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let (mut pos, mut idat) = (8, Vec::new());
    let (mut width, mut height, mut channels) = (0, 0, 0);
    while pos + 8 <= bytes.len() {
        let len = u32::from_be_bytes(bytes[pos..pos + 4].try_into().unwrap()) as usize;
        let kind = &bytes[pos + 4..pos + 8];
        let data = &bytes[pos + 8..pos + 8 + len];
        match kind {
            b"IHDR" => {
                width = u32::from_be_bytes(data[0..4].try_into().unwrap()) as usize;
                height = u32::from_be_bytes(data[4..8].try_into().unwrap()) as usize;
                assert_eq!(data[8], 8, "bit depth");
                channels = match data[9] {
                    2 => 3,
                    6 => 4,
                    t => panic!("PNG colour type {t}"),
                };
                assert_eq!(data[12], 0, "interlaced");
            }
            b"IDAT" => idat.extend_from_slice(data),
            _ => {}
        }
        pos += 12 + len;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&idat[..])
        .read_to_end(&mut raw)
        .unwrap();
    let stride = width * channels;
    assert_eq!(raw.len(), height * (stride + 1), "scanlines");
    let mut prev = vec![0u8; stride];
    let mut rgb = Vec::with_capacity(width * height);
    for y in 0..height {
        let filter = raw[y * (stride + 1)];
        let mut line = raw[y * (stride + 1) + 1..(y + 1) * (stride + 1)].to_vec();
        for i in 0..stride {
            let a = if i >= channels { line[i - channels] } else { 0 } as i16;
            let b = prev[i] as i16;
            let c = if i >= channels { prev[i - channels] } else { 0 } as i16;
            let add = match filter {
                0 => 0,
                1 => a,
                2 => b,
                3 => (a + b) / 2,
                4 => {
                    let p = a + b - c;
                    let (pa, pb, pc) = ((p - a).abs(), (p - b).abs(), (p - c).abs());
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                f => panic!("PNG filter {f}"),
            };
            line[i] = line[i].wrapping_add(add as u8);
        }
        rgb.extend(line.chunks(channels).map(|p| [p[0], p[1], p[2]]));
        prev = line;
    }
    Image { width, height, rgb }
}

/// Takes a 1200 x 2000 screenshot of the page in headless Chromium and checks its layout: the
/// page is drawn (not blank or one colour), the summary table's best rows (background
/// #fff6d5) are on the first screen, and its text starts at the left margin.
fn check_screenshot(page: &Path, shot: &Path) {
    let Some(chromium) = chromium() else {
        return;
    };
    let url = format!("file://{}", page.canonicalize().unwrap().display());
    let out = headless(
        chromium,
        &url,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1200,2000".to_string(),
            "--hide-scrollbars".to_string(),
        ],
    );
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let img = decode_png(&std::fs::read(shot).unwrap());
    assert_eq!((img.width, img.height), (1200, 2000));
    let white = img.rgb.iter().filter(|p| **p == [255, 255, 255]).count();
    let mut colours: Vec<[u8; 3]> = img.rgb.clone();
    colours.sort_unstable();
    colours.dedup();
    assert!(
        colours.len() > 50,
        "{} colours: a blank page",
        colours.len()
    );
    // Text, rules and charts cover a few percent of the page; a white page would be ~100 %.
    assert!(white < img.rgb.len() * 98 / 100, "{white} white pixels");
    // The best rows' highlight: at least one table row's worth (~500 x 20 px) on screen.
    let best = img.rgb.iter().filter(|p| **p == [255, 246, 213]).count();
    assert!(best > 5000, "{best} pixels of the best rows' background");
    // Body margin 2em (32 px): nothing is drawn in the first 20 columns.
    let left_margin_ink = (0..img.height)
        .flat_map(|y| (0..20).map(move |x| (x, y)))
        .filter(|(x, y)| img.rgb[y * img.width + x] != [255, 255, 255])
        .count();
    assert_eq!(left_margin_ink, 0, "ink in the left margin");
}

/// A fresh directory, the rows-left-out fixture and its calibration: roofline per kernel on
/// the fixture's GTX 680 rows alone (`DIR/gtx680.toml`).
fn left_out_fixture(name: &str) -> (PathBuf, String, PathBuf) {
    let dir = temp_dir(name);
    let data = crate::common::fixture("measurements/evaluate-left-out.csv");
    let data = data.to_str().unwrap().to_string();
    let cal = dir.join("gtx680.toml");
    run_ok(&[
        "calibrate",
        "--model",
        "roofline",
        "--measurements",
        &data,
        "--device",
        "GTX-680",
        "--scope",
        "kernel",
        "-o",
        cal.to_str().unwrap(),
    ]);
    (dir, data, cal)
}

/// Every output counts the rows a run did not predict, per kind of reason. The fixture
/// (tests/fixtures/measurements/evaluate-left-out.csv, written by hand) has 15 rows of one kernel
/// `va/vec`: 8 on the GTX 680 with counters, 4 on the Titan X, 2 on a `Voodoo-5` that is in no
/// catalogue, and one GTX 680 row without `inst_executed`. Calibrated per kernel on the
/// GTX 680 alone, the calibration has no group for the Titan X's 4 rows.
#[test]
fn evaluate_counts_rows_left_out_in_every_output() {
    let (d, data, cal) = left_out_fixture("left-out");
    let data = data.as_str();
    let eval = |extra: &[&str]| {
        let mut args = vec![
            "evaluate",
            "--measurements",
            data,
            "--model",
            "roofline",
            "--calibration",
            cal.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        run_ok(&args)
    };
    // JSON: per run, the rows read, predicted and left out per kind.
    let v: serde_json::Value = serde_json::from_slice(&eval(&["--json"])).unwrap();
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let plain = &runs[0];
    assert_eq!(plain["model"], "roofline");
    assert_eq!(
        (plain["rows"].as_u64(), plain["predicted"].as_u64()),
        (Some(15), Some(12))
    );
    assert_eq!(
        plain["left_out_by_kind"],
        serde_json::json!({"device": 2, "inputs": 1})
    );
    let calibrated = &runs[1];
    assert_eq!(calibrated["model"], "roofline (calibrated)");
    assert_eq!(calibrated["predicted"].as_u64(), Some(8));
    assert_eq!(
        calibrated["left_out_by_kind"],
        serde_json::json!({"device": 2, "inputs": 1, "no-calibration-group": 4})
    );

    // Text: one summary line per run and the exact reasons under it.
    let report = d.join("report");
    let text = String::from_utf8(eval(&["--report", report.to_str().unwrap()])).unwrap();
    assert!(
        text.contains("roofline: predicted 12 of 15; left out 3 (device unknown or not selected 2, model inputs missing 1)"),
        "{text}"
    );
    assert!(
        text.contains("roofline (calibrated): predicted 8 of 15; left out 7 (device unknown or not selected 2, model inputs missing 1, no calibration group 4)"),
        "{text}"
    );
    assert!(text.contains("Voodoo-5"), "{text}");

    // HTML: the same counts in the rows-left-out table, one column per kind.
    let html = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert!(html.contains("<h2 id=\"left-out\">Rows left out</h2>"));
    assert!(html.contains(
        "<tr><td class=\"t\">roofline (calibrated)</td><td>15</td><td>8</td><td>7</td><td>2</td><td>1</td><td>4</td></tr>"
    ), "{html}");
    // The calibrated run is exact on its GTX 680 rows (the fixture's times follow the
    // roofline's compute term), so it is the best there.
    assert_eq!(html.matches("★ best").count(), 2);

    // Rendered: the table with its best marker and the section are in the DOM, and the
    // screenshot's layout holds.
    let dom = check_in_chromium(&report.join("index.html"), 6);
    if !dom.is_empty() {
        assert!(dom.contains("id=\"models\""));
        assert!(dom.contains("★ best"));
        assert!(dom.contains("id=\"left-out-table\""));
        assert!(dom.contains("no calibration group"));
        check_screenshot(&report.join("index.html"), &d.join("report.png"));
    }
}

/// A run that predicts nothing exits 2 with one sentence: a calibration for another GPU, and
/// a device none of the rows was measured on.
#[test]
fn evaluate_that_predicts_nothing_exits_2() {
    let (_dir, data, cal) = left_out_fixture("nothing");
    let data = data.as_str();
    // The calibration's case names its own reason (no group for the Titan X), not that of
    // reading the rows (the 11 rows of other GPUs).
    let cases: [(&[&str], &[&str]); 2] = [
        (
            &["--calibration", cal.to_str().unwrap(), "--device", "TitanX"],
            &[
                "predicts none of the 15 rows",
                "(4 rows: no calibration group covers kernel `va/vec`",
            ],
        ),
        (&["--device", "V100"], &["could be predicted"]),
    ];
    for (extra, says) in cases {
        let mut args = vec!["evaluate", "--measurements", data, "--model", "roofline"];
        args.extend_from_slice(extra);
        let out = bin().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        for phrase in says {
            assert!(err.contains(phrase), "{phrase} not in {err}");
        }
        assert_eq!(err.trim_end().lines().count(), 1, "one sentence: {err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn evaluate_errors_name_the_flag() {
    let d = temp_dir("errors");
    let data = counters_csv(&d);
    let out = bin()
        .args([
            "evaluate",
            "--measurements",
            data.to_str().unwrap(),
            "--model",
            "nope",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--model"));
    let out = bin()
        .args([
            "calibrate",
            "--model",
            "puchala",
            "--measurements",
            data.to_str().unwrap(),
            "-o",
            "x.toml",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!Path::new("x.toml").exists());
}

#[test]
fn reproduce_parra2016_table() {
    let d = temp_dir("parra");
    let out = run_ok(&[
        "reproduce",
        "parra2016",
        "--out",
        d.to_str().unwrap(),
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 12);
    // Table 4.6, order 2 with 8 warps, against Table 4.5's 102912: |102912 - 34520.3| / 34520.3.
    let e = cells[0]["thesis_4_5_error"].as_f64().unwrap();
    assert!((e - (102912.0 - 34520.3) / 34520.3).abs() < 1e-9);
    assert!(d.join("parra2016_table4_6.csv").exists());
    // Our three analytical models have order-2 predictions; orders 4 and 8 have none.
    for c in cells {
        let has = c["order"] == 2;
        for k in ["mwp_cwp_cycles", "hong_kim_cycles", "wu_cycles"] {
            assert_eq!(c[k].is_number(), has, "{k} in {c}");
        }
    }
}

/// puchala through the binary: times from `predict` with known t_p, t_m become a generic CSV
/// with launch API times; `calibrate` takes t_p from them and recovers t_m and the memory scale
/// (1: the built-in durations); `predict --calibration` then gives the original times back.
#[test]
fn puchala_round_trip_through_calibrate_and_predict() {
    let d = temp_dir("puchala");
    let out = run_ok(&[
        "predict",
        "--model",
        "puchala",
        "--device",
        "GTX 1070 (puchala2022)",
        "--kernel",
        "dwt-matrix",
        "--param",
        "n=2^6..2^16",
        "--param",
        "k=8,12",
        "--t-p",
        "6",
        "--t-m",
        "20",
        "--json",
    ]);
    let points: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let mut csv = String::from("kernel,device,param:n,param:k,launch_api_us,time_us\n");
    for p in points.as_array().unwrap() {
        csv.push_str(&format!(
            "dwt-matrix,GTX 1070 (puchala2022),{},{},6,{}\n",
            p["params"]["n"], p["params"]["k"], p["time_us"]
        ));
    }
    let data = d.join("dwt.csv");
    std::fs::write(&data, csv).unwrap();
    let cal = d.join("cal.toml");
    run_ok(&[
        "calibrate",
        "--model",
        "puchala",
        "--measurements",
        data.to_str().unwrap(),
        "--folds",
        "3",
        "--bootstrap",
        "0",
        "-o",
        cal.to_str().unwrap(),
        "--json",
    ]);
    let c: toml::Value = toml::from_str(&std::fs::read_to_string(&cal).unwrap()).unwrap();
    let g = &c["groups"][0];
    assert_eq!(g["params"]["t_p_us"].as_float(), Some(6.0));
    assert!(
        (g["params"]["t_m_cycles"].as_float().unwrap() - 20.0).abs() < 1e-6,
        "{g}"
    );
    assert!(
        (g["params"]["memory_scale"].as_float().unwrap() - 1.0).abs() < 1e-6,
        "{g}"
    );
    assert!(g["mape_cv"].as_float().unwrap() < 1e-6);
    let out = run_ok(&[
        "predict",
        "--model",
        "puchala",
        "--device",
        "GTX 1070 (puchala2022)",
        "--kernel",
        "dwt-matrix",
        "--param",
        "n=1024",
        "--param",
        "k=8",
        "--calibration",
        cal.to_str().unwrap(),
        "--json",
    ]);
    let p: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let want = points
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["params"]["n"] == 1024 && p["params"]["k"] == 8)
        .unwrap()["time_us"]
        .as_f64()
        .unwrap();
    assert!((p["time_us"].as_f64().unwrap() - want).abs() < 1e-6 * want);
}
