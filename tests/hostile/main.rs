//! The hostile-input suite (issue 17): each row of the table as a regression test, run
//! against the built binary with small sizes. Every test checks the exit code, the message, the
//! child's peak memory (its `ru_maxrss`, read with `wait4`) and that the output is intact or
//! absent. Fuzz-found inputs live in `tests/fixtures/fuzz-regressions/` and are replayed here.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// What one run of the binary did.
struct Run {
    code: i32,
    stdout: Vec<u8>,
    stderr: String,
    /// Peak resident memory of the child, MiB.
    max_rss_mib: f64,
}

impl Run {
    fn out(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kerneltime-hostile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs the binary in `cwd` with stdout and stderr in files (no pipe can fill), and reads the
/// child's peak RSS from the kernel's accounting of the reaped process.
fn run_in(cwd: &Path, args: &[&str]) -> Run {
    // Files of their own: tests run in parallel, often in the same `cwd`, and one run must not
    // truncate another's stderr before it is read.
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let files = dir(&format!("run{n}"));
    let out_path = files.join("stdout");
    let err_path = files.join("stderr");
    let child = Command::new(env!("CARGO_BIN_EXE_kerneltime"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(File::create(&out_path).unwrap())
        .stderr(File::create(&err_path).unwrap())
        .spawn()
        .expect("the kerneltime binary starts");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it for our own child, which is
    // not waited for anywhere else (the Child handle is forgotten below).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: pid is our child; status and usage point to live locals.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4 failed");
    std::mem::forget(child);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -libc::WTERMSIG(status)
    };
    let run = Run {
        code,
        stdout: std::fs::read(&out_path).unwrap(),
        stderr: std::fs::read_to_string(&err_path).unwrap(),
        max_rss_mib: usage.ru_maxrss as f64 / 1024.0,
    };
    let _ = std::fs::remove_dir_all(&files);
    run
}

fn assert_exit(r: &Run, code: i32, needle: &str) {
    assert_eq!(r.code, code, "stderr: {}", r.stderr);
    assert!(
        r.stderr.contains(needle),
        "expected `{needle}` in: {}",
        r.stderr
    );
    if code != 0 {
        // Warnings may come first; the error itself is one line, the last.
        let errors: Vec<&str> = r
            .stderr
            .lines()
            .filter(|l| l.starts_with("error:"))
            .collect();
        assert_eq!(errors.len(), 1, "one error line: {}", r.stderr);
        assert!(r.stderr.trim_end().ends_with(errors[0]), "{}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    }
}

/// `text` with every line whose first word starts with `key` replaced by `line`.
fn with_line(text: &str, key: &str, line: &str) -> String {
    text.lines()
        .map(|l| {
            if l.trim_start().starts_with(key) {
                line
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn fixture(rel: &str) -> String {
    format!("{ROOT}/{rel}")
}

const WU: &str = "data/analytical/wu2019-example.toml";

// Row 1: a gzip bomb is capped like a plain file.
#[test]
fn row01_gzip_bomb_is_capped() {
    let d = dir("gzip");
    let bomb = d.join("bomb.csv.gz");
    let mut gz =
        flate2::write::GzEncoder::new(File::create(&bomb).unwrap(), flate2::Compression::fast());
    let zeros = vec![b'0'; 1 << 20];
    for _ in 0..1100 {
        gz.write_all(&zeros).unwrap();
    }
    gz.finish().unwrap();
    let r = run_in(&d, &["measurements", "bomb.csv.gz"]);
    assert_exit(&r, 2, "decompresses to more than the 1073741824 bytes");
    // The cap is 1 GiB of text; the 10 GB bomb of the issue took 21 GB.
    assert!(r.max_rss_mib < 1400.0, "{} MiB", r.max_rss_mib);
}

// Row 2: predict over a parameter space streams, and has the sweep's point limit.
#[test]
fn row02_predict_space_streams_and_has_a_point_limit() {
    let d = dir("predict-space");
    let base = [
        "predict",
        "--model",
        "puchala",
        "--device",
        "RTX 2080 (puchala2022)",
        "--kernel",
        "dwt-matrix",
        "--param",
        "k=2",
    ];
    let mut args = base.to_vec();
    args.extend(["--param", "n=1..200000"]);
    let r = run_in(&d, &args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = r.out();
    assert_eq!(out.lines().count(), 200_001);
    assert!(out.lines().last().unwrap().starts_with("k=2 n=200000 "));
    // Held in memory, 200,000 predictions took about 200 MB (1 KB each).
    assert!(r.max_rss_mib < 60.0, "{} MiB", r.max_rss_mib);

    let mut json = base.to_vec();
    json.extend(["--param", "n=1..500", "--json"]);
    let r = run_in(&d, &json);
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).expect("one JSON array");
    assert_eq!(v.as_array().unwrap().len(), 500);

    let mut limited = base.to_vec();
    limited.extend(["--param", "n=1..300", "--max-points", "10"]);
    let r = run_in(&d, &limited);
    assert_exit(&r, 2, "more than --max-points 10");
    assert!(r.stdout.is_empty());
}

// Row 3: simulate --timeline stops at its cap while recording, and writes nothing.
#[test]
fn row03_timeline_cap_is_checked_while_recording() {
    let d = dir("timeline");
    std::fs::write(
        d.join("big.toml"),
        "ops = [{ repeat = 1000000, ops = [[\"calc\", 1]] }]\n",
    )
    .unwrap();
    let r = run_in(
        &d,
        &[
            "simulate",
            "--program",
            "big.toml",
            "--warps",
            "100",
            "--t-m",
            "2",
            "--timeline",
            "x.svg",
        ],
    );
    assert_exit(&r, 2, "--timeline");
    assert!(
        r.stderr.contains("more than 100000 segments"),
        "{}",
        r.stderr
    );
    assert!(r.max_rss_mib < 200.0, "{} MiB", r.max_rss_mib);
    assert!(!d.join("x.svg").exists());
}

fn sweep_args<'a>(out: &'a str, n_b: &'a str) -> Vec<&'a str> {
    vec![
        "sweep",
        "--model",
        "wu",
        "--inputs",
        WU,
        "--device",
        "Tesla K40",
        "--param",
        "threads_per_block=32..1024:32",
        "--param",
        n_b,
        "-o",
        out,
        "--chunk-points",
        "1000",
    ]
}

// Row 4: a second sweep into the same output is refused while the first holds the lock.
#[test]
fn row04_second_writer_is_refused() {
    let d = dir("lock");
    let out = d.join("same.csv");
    let out_s = out.to_str().unwrap().to_string();
    let args = sweep_args(&out_s, "n_b=1..100000");
    let mut first = Command::new(env!("CARGO_BIN_EXE_kerneltime"))
        .args(&args)
        .current_dir(ROOT)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lock = d.join(".same.csv.lock");
    let t0 = std::time::Instant::now();
    while !lock.exists() && t0.elapsed().as_secs() < 30 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let second = run_in(Path::new(ROOT), &args);
    let status = first.wait().unwrap();
    assert!(status.success());
    if second.code == 0 {
        eprintln!("skip: the first sweep finished before the second started");
        return;
    }
    assert_exit(&second, 2, "is being written by process");
    // The first sweep's output is whole: a header and one line per point.
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().count(), 1 + 32 * 100_000);
    assert!(text.ends_with('\n'));
    assert!(!lock.exists());
}

// Row 5: a checkpoint that does not match its partial file is refused, and nothing is written.
#[test]
fn row05_edited_checkpoints_are_refused() {
    for (field, value, needle) in [
        ("bytes_done", 1u64, "shorter than the header"),
        ("points_done", 10, "counts do not add up"),
        ("lines_done", 7, "lines for"),
    ] {
        let d = dir(&format!("ckpt-{field}"));
        let out = d.join("r.csv").to_str().unwrap().to_string();
        let mut args = sweep_args(&out, "n_b=1..300");
        args.extend(["--stop-after", "4000"]);
        let r = run_in(Path::new(ROOT), &args);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let ck = d.join(".r.csv.checkpoint");
        let partial = d.join(".r.csv.partial");
        let before = std::fs::read(&partial).unwrap();
        let mut c: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&ck).unwrap()).unwrap();
        c[field] = value.into();
        std::fs::write(&ck, c.to_string()).unwrap();
        let mut resume = sweep_args(&out, "n_b=1..300");
        resume.push("--resume");
        let r = run_in(Path::new(ROOT), &resume);
        assert_exit(&r, 2, needle);
        assert!(!d.join("r.csv").exists(), "no output from a corrupt resume");
        assert_eq!(
            std::fs::read(&partial).unwrap(),
            before,
            "partial untouched"
        );
    }
    // A changed byte in the rows is caught by the CRC.
    let d = dir("ckpt-crc");
    let out = d.join("r.csv").to_str().unwrap().to_string();
    let mut args = sweep_args(&out, "n_b=1..300");
    args.extend(["--stop-after", "4000"]);
    assert_eq!(run_in(Path::new(ROOT), &args).code, 0);
    let partial = d.join(".r.csv.partial");
    let mut bytes = std::fs::read(&partial).unwrap();
    let k = bytes.len() / 2;
    bytes[k] = if bytes[k] == b'1' { b'2' } else { b'1' };
    std::fs::write(&partial, &bytes).unwrap();
    let mut resume = sweep_args(&out, "n_b=1..300");
    resume.push("--resume");
    assert_exit(&run_in(Path::new(ROOT), &resume), 2, "CRC-32");
}

// Row 6: a wide launch of long loops stops at the per-launch budget, naming the flag.
#[test]
fn row06_launch_budget() {
    let r = run_in(
        Path::new(ROOT),
        &[
            "predict",
            "--model",
            "all",
            "--ptx",
            "tests/fixtures/ptx/basics.nvcc-sm75.ptx",
            "--entry",
            "matmul_naive",
            "--grid",
            "1000",
            "--block",
            "32,32",
            "--arg",
            "3=200000",
            "--device",
            "L4",
            "--resources",
            "tests/fixtures/ptx/basics.nvcc-sm75.ptxas.txt",
        ],
    );
    assert_exit(&r, 2, "per-launch budget");
    assert!(r.stderr.contains("--launch-budget"), "{}", r.stderr);
    assert!(r.max_rss_mib < 1024.0, "{} MiB", r.max_rss_mib);
}

// Row 7: registers named without `%` are registers (addresses known, 16 sectors per store).
#[test]
fn row07_registers_without_percent() {
    let r = run_in(
        Path::new(ROOT),
        &[
            "trace",
            "tests/fixtures/ptx/shapes/plain_registers.ptx",
            "--entry",
            "copy_plain",
            "--grid",
            "1",
            "--block",
            "32",
            "--json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    let text = v.to_string();
    assert!(!text.contains("\"addresses_known\":false"), "{text}");
}

// Row 8: non-finite or absurd inputs are exit 2 naming them; sweeps and `best` stay finite.
#[test]
fn row08_finite_answers_only() {
    let d = dir("finite");
    let wu = std::fs::read_to_string(fixture(WU)).unwrap();
    let huge = with_line(&wu, "n_b", "n_b = 1e308");
    std::fs::write(d.join("huge.toml"), huge).unwrap();
    let r = run_in(
        &d,
        &[
            "predict",
            "--model",
            "wu",
            "--inputs",
            "huge.toml",
            "--device",
            "Tesla K40",
        ],
    );
    assert_exit(&r, 2, "not a physical answer");
    assert!(r.stderr.contains("n_blocks"), "{}", r.stderr);

    let k40 = std::fs::read_to_string(fixture("data/devices/tesla-k40.toml")).unwrap();
    let slow = with_line(&k40, "boost_clock_mhz", "boost_clock_mhz = 1e-300");
    std::fs::write(d.join("slow.toml"), slow).unwrap();
    let r = run_in(&d, &["device", "check", "slow.toml"]);
    assert_exit(&r, 2, "boost_clock_mhz");

    // A sweep point whose time is not finite is an `invalid` row with a reason, never `ok`.
    let r = run_in(
        &d,
        &[
            "sweep",
            "--model",
            "wu",
            "--inputs",
            "huge.toml",
            "--device",
            "Tesla K40",
            "-o",
            "s.csv",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rows = std::fs::read_to_string(d.join("s.csv")).unwrap();
    assert!(!rows.contains(",ok,"), "{rows}");
    assert!(rows.contains("invalid"), "{rows}");
    let r = run_in(
        &d,
        &[
            "best",
            "--model",
            "wu",
            "--inputs",
            "huge.toml",
            "--device",
            "Tesla K40",
        ],
    );
    let all = format!("{}{}", r.out(), r.stderr);
    assert!(!all.contains("inf") && !all.contains("NaN"), "{all}");
}

// Row 9: analyze memory is linear in the input with a small constant.
#[test]
fn row09_analyze_memory_is_linear() {
    let d = dir("analyze");
    let one = std::fs::read_to_string(fixture("tests/fixtures/ptx/basics.nvcc-sm75.ptx")).unwrap();
    let (head, body) = one.split_at(one.find(".visible .entry").unwrap());
    let mut text = String::from(head);
    let mut k = 0;
    while text.len() < 200 << 20 {
        text.push_str(&body.replace(".entry ", &format!(".entry k{k}_")));
        k += 1;
    }
    std::fs::write(d.join("big.ptx"), &text).unwrap();
    let r = run_in(&d, &["analyze", "big.ptx", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let input_mib = text.len() as f64 / (1 << 20) as f64;
    // The target: 200 MB of PTX in under 1 GB.
    assert!(
        r.max_rss_mib < 1024.0,
        "{} MiB for {input_mib} MiB",
        r.max_rss_mib
    );
}

// Row 10: control characters in a device name are escaped in terminal output.
#[test]
fn row10_control_characters_are_escaped() {
    let d = dir("ansi");
    let k40 = std::fs::read_to_string(fixture("data/devices/tesla-k40.toml")).unwrap();
    let evil = with_line(&k40, "name", "name = \"Evil\\u001b[31mRED\\nline2\"");
    std::fs::write(d.join("evil.toml"), evil).unwrap();
    for args in [
        vec!["device", "check", "evil.toml"],
        vec![
            "predict",
            "--model",
            "wu",
            "--inputs",
            &format!("{ROOT}/{WU}"),
            "--device-file",
            "evil.toml",
        ],
    ] {
        let r = run_in(&d, &args);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(!r.stdout.contains(&0x1b), "raw escape in {}", r.out());
        assert!(
            r.out().contains("Evil\\u{1b}[31mRED\\nline2"),
            "{}",
            r.out()
        );
    }
}

// Row 11: CRLF files get the line numbers an editor shows.
#[test]
fn row11_crlf_line_numbers() {
    let d = dir("crlf");
    std::fs::write(
        d.join("crlf.csv"),
        "# note\r\n\r\nkernel,time_us\r\nk,1.5\r\n\r\nk,abc\r\n",
    )
    .unwrap();
    let r = run_in(&d, &["measurements", "crlf.csv"]);
    assert_exit(&r, 2, "line 6:");
}

// Row 12: values too large for their type say so and name the flag that was given.
#[test]
fn row12_huge_values_name_the_right_flag() {
    let r = run_in(
        Path::new(ROOT),
        &[
            "predict",
            "--model",
            "puchala",
            "--device",
            "RTX 2080 (puchala2022)",
            "--kernel",
            "dwt-matrix",
            "--param",
            "n=2^62",
            "--param",
            "k=2",
        ],
    );
    assert_exit(&r, 2, "--param n: 4.611686018427388e18 is too large");
    let base = [
        "predict",
        "--model",
        "trace",
        "--ptx",
        "tests/fixtures/ptx/basics.nvcc-sm75.ptx",
        "--entry",
        "vector_add",
        "--block",
        "32",
        "--device",
        "L4",
        "--resources",
        "tests/fixtures/ptx/basics.nvcc-sm75.ptxas.txt",
    ];
    let mut grid = base.to_vec();
    grid.extend(["--grid", "4294967296"]);
    assert_exit(
        &run_in(Path::new(ROOT), &grid),
        2,
        "--grid: `4294967296` is larger than",
    );
    let d = dir("bigshared");
    std::fs::write(
        d.join("big.ptx"),
        ".version 7.0\n.target sm_75\n.address_size 64\n\n.visible .entry k(.param .u64 p)\n{\n\t.shared .align 4 .b8 big[4294967296];\n\t.reg .b32 %r<3>;\n\tmov.u32 %r1, %tid.x;\n\tst.shared.u32 [big], %r1;\n\tret;\n}\n",
    )
    .unwrap();
    let r = run_in(
        &d,
        &[
            "predict", "--model", "trace", "--ptx", "big.ptx", "--entry", "k", "--grid", "1",
            "--block", "32", "--device", "L4",
        ],
    );
    assert_exit(&r, 2, "4294967296 bytes of shared memory");
    assert!(
        !r.stderr.contains("--shared-memory-per-block"),
        "{}",
        r.stderr
    );
}

// Row 13: an output into a missing directory is exit 2 and creates nothing.
#[test]
fn row13_no_directories_created() {
    let d = dir("mkdir");
    let target = d.join("missing/dir/s.csv");
    let t = target.to_str().unwrap();
    let r = run_in(Path::new(ROOT), &sweep_args(t, "n_b=1"));
    assert_exit(&r, 2, "does not exist");
    assert!(!d.join("missing").exists());
    let report = d.join("missing/report");
    let r = run_in(
        Path::new(ROOT),
        &[
            "compare",
            "--model",
            "puchala",
            "--kernel",
            "dwt-matrix,dwt-lattice",
            "--device",
            "RTX 2080 (puchala2022)",
            "--param",
            "n=2^10",
            "--param",
            "k=2",
            "--out",
            report.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(!d.join("missing").exists());
}

// Row 14: I/O failures exit 1 in one line (documented in the README), bad input exits 2.
#[test]
fn row14_io_errors_exit_one() {
    let full = File::options().write(true).open("/dev/full");
    let Ok(full) = full else {
        eprintln!("skip: no /dev/full on this machine");
        return;
    };
    let out = Command::new(env!("CARGO_BIN_EXE_kerneltime"))
        .args(["devices"])
        .stdout(full)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("error: cannot write to standard output"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let readme = std::fs::read_to_string(fixture("README.md")).unwrap();
    assert!(
        readme.contains("exits with code 1"),
        "the README documents exit code 1"
    );
}

// Fuzz-found inputs: each reader returns an error or a result, never a panic.
#[test]
fn fuzz_regressions_do_not_panic() {
    use kerneltime::fit::measurements::{parse_text, Format};
    let dir = Path::new(ROOT).join("tests/fixtures/fuzz-regressions/measurements");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let (_, rest) = bytes.split_first().unwrap();
        let text = String::from_utf8_lossy(rest);
        let _ = parse_text(&text, "fuzz.csv", None);
        for f in Format::ALL {
            let _ = parse_text(&text, "fuzz.csv", Some(*f));
        }
        n += 1;
    }
    assert!(n >= 1);
}
