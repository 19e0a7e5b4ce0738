//! Helpers shared by the integration tests that run the `kerneltime` binary (`crate::common`;
//! each test uses some of them).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary, ready for arguments.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kerneltime"))
}

/// Runs the binary and returns what it did.
pub fn output(args: &[&str]) -> Output {
    bin()
        .args(args)
        .output()
        .expect("the kerneltime binary runs")
}

/// Runs the binary with extra environment variables: (exit code, stdout, stderr).
pub fn run_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = bin();
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("the kerneltime binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs the binary: (exit code, stdout, stderr).
pub fn run(args: &[&str]) -> (i32, String, String) {
    run_env(args, &[])
}

/// Runs the binary, which must succeed, and parses its standard output as JSON.
pub fn json(args: &[&str]) -> serde_json::Value {
    let out = output(args);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

/// A file under `tests/fixtures`.
pub fn fixture(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(relative)
}

/// A fresh temporary directory for one test.
pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kerneltime-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes a file into `dir`.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Reports a tool a test needs but cannot find. Outside the README's test command the test
/// skips with `message`; the test command sets `KERNELTIME_REQUIRE_TOOLS` (a comma-separated
/// list of tools it installed, or `all`), and then a missing tool is a failure, so that an oracle
/// or drift check can never pass by not running.
pub fn missing_tool(tool: &str, message: &str) {
    let required = std::env::var("KERNELTIME_REQUIRE_TOOLS").unwrap_or_default();
    if required
        .split(',')
        .any(|t| t.trim() == tool || t.trim() == "all")
    {
        panic!("{tool} is required (KERNELTIME_REQUIRE_TOOLS={required}) but missing: {message}");
    }
    eprintln!("skipped: {message}");
}
