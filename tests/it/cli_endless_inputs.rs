//! Regression: an endless input (a device file such as /dev/zero, or a pipe) given where a file
//! is expected must end with a one-line error and exit code 2, never with memory growing
//! without bound or a hang. Found by hand: `predict --ptx /dev/urandom` read forever because the
//! size check looked at the file's metadata, which is 0 for a character device.

use std::process::Command;

#[test]
#[cfg(unix)]
fn an_endless_ptx_input_is_a_clean_error() {
    if !std::path::Path::new("/dev/zero").exists() {
        eprintln!("skipped: /dev/zero is absent");
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_kerneltime"))
        .args(["analyze", "/dev/zero", "--json"])
        .output()
        .expect("run kerneltime");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("/dev/zero") && err.contains("larger than"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}
