//! Shared helpers for the puchala2022 integration tests (`crate::puchala_common`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use crate::common::write;

/// A device file with the values of one row of the paper's Table 3 (typed here from the
/// paper: cc, name, F MHz, SMs, cores/SM, max blocks/SM, max warps/SM, matrix t_p t_m,
/// lattice t_p t_m).
#[allow(clippy::too_many_arguments)]
pub fn paper_device(
    dir: &Path,
    cc: &str,
    name: &str,
    f_mhz: f64,
    sms: u32,
    cores: u32,
    max_blocks: u32,
    max_warps: u32,
    matrix: (f64, f64),
    lattice: (f64, f64),
) -> PathBuf {
    let text = format!(
        r#"name = "{name} (puchala2022)"
architecture = "paper profile"
compute_capability = "{cc}"
sm_count = {sms}
cores_per_sm = {cores}
base_clock_mhz = {f_mhz}
boost_clock_mhz = {f_mhz}
core_clock_mhz = {f_mhz}
memory_bandwidth_gbs = 100
l2_cache_bytes = 1048576
l1_shared_per_sm_bytes = 65536
source = "test profile from Puchala et al. 2022, Table 3"

[limits]
max_blocks_per_sm = {max_blocks}
max_warps_per_sm = {max_warps}
max_threads_per_block = 1024

[puchala.dwt-matrix]
t_p_us = {}
t_m_cycles = {}

[puchala.dwt-lattice]
t_p_us = {}
t_m_cycles = {}
"#,
        matrix.0, matrix.1, lattice.0, lattice.1
    );
    let file = format!("{}.toml", name.replace(' ', "-").to_lowercase());
    write(dir, &file, &text)
}

/// The paper's GTX 860M: 5 SMs (odd), 128 cores, 32 blocks, 64 warps, F = 1020 MHz.
pub fn gtx860m(dir: &Path) -> PathBuf {
    paper_device(
        dir,
        "5.0",
        "GeForce GTX 860M",
        1020.0,
        5,
        128,
        32,
        64,
        (8.7, 17.0),
        (7.9, 15.0),
    )
}

/// The five Table 3 profiles other than the RTX 2080 (which is in the catalogue).
pub fn other_paper_devices(dir: &Path) -> Vec<PathBuf> {
    vec![
        paper_device(
            dir,
            "2.1",
            "GeForce GT 720M",
            1550.0,
            2,
            32,
            8,
            48,
            (18.7, 9.5),
            (11.0, 33.0),
        ),
        paper_device(
            dir,
            "3.0",
            "Quadro K1000M",
            706.0,
            2,
            192,
            16,
            64,
            (11.2, 33.0),
            (11.2, 47.0),
        ),
        gtx860m(dir),
        paper_device(
            dir,
            "6.1",
            "GeForce GTX 1070",
            1760.0,
            10,
            128,
            32,
            64,
            (6.3, 18.5),
            (5.8, 19.0),
        ),
        paper_device(
            dir,
            "7.5",
            "GeForce RTX 2060",
            1200.0,
            30,
            64,
            16,
            32,
            (5.2, 1.1),
            (5.0, 12.5),
        ),
    ]
}

pub fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}
