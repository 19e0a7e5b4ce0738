//! Compiler drift: when the GPU-less toolchain is installed, recompile the DWT kernels and
//! check that the fresh PTX analyzes exactly like the committed fixtures. Skips (with a
//! message) when the toolchain is absent.

use std::path::{Path, PathBuf};
use std::process::Command;

use kerneltime::ptx::analysis::analyze_module;
use kerneltime::ptx::parse;
use kerneltime::ptx::program::MemoryDurations;

fn toolchain() -> Option<PathBuf> {
    let dir = std::env::var_os("GPU_TC")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".gpu-toolchain"));
    dir.join("env.sh").exists().then_some(dir)
}

fn analysis_json(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let (m, d) = parse(&text);
    let durations = MemoryDurations {
        load_cycles: 1.0,
        store_cycles: 1.0,
    };
    serde_json::to_string(&analyze_module(&m, &d, None, durations, &[])).unwrap()
}

#[test]
fn regenerated_dwt_fixtures_analyze_the_same() {
    let Some(tc) = toolchain() else {
        crate::common::missing_tool(
            "toolchain",
            "no GPU toolchain (.gpu-toolchain/env.sh or $GPU_TC); run scripts/install-gpu-toolchain.sh",
        );
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::env::temp_dir().join(format!("kt-drift-{}", std::process::id()));
    let status = Command::new("bash")
        .arg(root.join("scripts/regenerate-fixtures.sh"))
        .arg(&out)
        .env("ONLY", "dwt")
        .env("GPU_TC", &tc)
        .status()
        .expect("bash runs");
    assert!(status.success(), "regenerate-fixtures.sh failed");
    for route in [
        "nvcc-sm75",
        "nvcc-sm90",
        "nvrtc-sm52",
        "nvrtc-sm61",
        "clang14-sm61",
    ] {
        let name = format!("dwt.{route}.ptx");
        let fresh = analysis_json(&out.join(&name));
        let committed = analysis_json(&root.join("tests/fixtures/ptx").join(&name));
        assert_eq!(
            fresh, committed,
            "{name}: the compiler's output changed; regenerate and review"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}
