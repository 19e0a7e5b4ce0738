//! Oracle test: the exact occupancy (`kerneltime::device::occupancy`) must agree with NVIDIA's
//! `cuda_occupancy.h` on every case.
//!
//! The C++ program `tests/oracle/occupancy_oracle.cpp` includes the header installed by the GPU
//! toolchain script; this test compiles it with g++ into Cargo's temporary directory under
//! `target/`, generates cases with a seeded generator over every catalogue device of compute
//! capability 3.0 or newer and over every compute capability 3.0 or newer of the limits table
//! (synthetic devices, so coverage does not depend on the catalogue), and compares active blocks,
//! the limiting factors and each resource's block limit. The header takes its allocation units,
//! block limits, sub-partitions and carve-out configurations from its own tables, so this also
//! checks `data/compute_capabilities.toml`. Skips with a message when the header or g++ is absent.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use kerneltime::device::limits::{for_compute_capability, known_compute_capabilities};
use kerneltime::device::occupancy::{
    max_shared_memory_per_block_bytes, occupancy_for_limits, BlockResources, Carveout, Limiter,
    OccupancyOptions,
};
use kerneltime::device::{catalogue, ComputeCapability, ComputeCapabilityLimits};

/// Random cases per device configuration (on top of the edge cases).
const RANDOM_CASES_PER_CONFIG: usize = 500;

/// splitmix64: a small seeded generator, enough for test cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in lo..=hi.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

fn header_dir() -> Option<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![];
    if let Ok(home) = std::env::var("CUDA13_HOME") {
        dirs.push(PathBuf::from(home).join("include"));
    }
    if let Ok(tc) = std::env::var("GPU_TC") {
        dirs.push(PathBuf::from(tc).join("cu13/nvidia/cu13/include"));
    }
    dirs.push(manifest.join(".gpu-toolchain/cu13/nvidia/cu13/include"));
    dirs.into_iter()
        .find(|d| d.join("cuda_occupancy.h").is_file())
}

fn compile_oracle(include: &Path) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("occupancy_oracle");
    std::fs::create_dir_all(&dir).ok()?;
    let exe = dir.join(format!("occupancy_oracle_{}", std::process::id()));
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle/occupancy_oracle.cpp");
    let out = Command::new("g++")
        .args(["-O1", "-std=c++11", "-Wall"])
        .arg("-I")
        .arg(include)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output();
    match out {
        Err(e) => {
            crate::common::missing_tool("gxx", &format!("occupancy oracle: cannot run g++ ({e})"));
            None
        }
        Ok(o) if !o.status.success() => panic!(
            "g++ failed to compile the oracle:\n{}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Ok(_) => Some(exe),
    }
}

struct Config {
    label: String,
    cc: ComputeCapability,
    limits: ComputeCapabilityLimits,
}

struct Case {
    config: usize,
    block: BlockResources,
    carveout: Carveout,
}

/// The header's (cacheConfig, carveoutConfig) for our carve-out option.
fn header_state(c: Carveout) -> (u32, i64) {
    match c {
        Carveout::Default => (0, -1),
        Carveout::PreferShared => (1, -1),
        Carveout::PreferL1 => (2, -1),
        Carveout::PreferEqual => (3, -1),
        Carveout::Percent(p) => (0, i64::from(p)),
    }
}

fn random_carveout(rng: &mut Rng, cc: ComputeCapability) -> Carveout {
    match rng.range(0, 9) {
        0 => Carveout::PreferShared,
        1 => Carveout::PreferL1,
        2 => Carveout::PreferEqual,
        3 | 4 if cc.major >= 7 => Carveout::Percent(rng.range(0, 100) as u32),
        _ => Carveout::Default,
    }
}

fn cases_for(config: usize, c: &Config, rng: &mut Rng, out: &mut Vec<Case>) {
    let l = &c.limits;
    let max_t = u64::from(l.max_threads_per_block);
    let max_r = u64::from(l.max_registers_per_thread);
    let max_s = max_shared_memory_per_block_bytes(c.cc, l);
    let unit = u64::from(l.shared_memory_allocation_unit_bytes);
    let reserved = u64::from(l.reserved_shared_memory_per_block_bytes);
    let per_block = u64::from(l.shared_memory_per_block_bytes);
    let reg_unit = u64::from(l.register_allocation_unit);
    let push = |out: &mut Vec<Case>, t: u64, r: u64, s: u64, carveout| {
        out.push(Case {
            config,
            block: BlockResources {
                threads_per_block: t.clamp(1, max_t) as u32,
                registers_per_thread: r.min(max_r) as u32,
                shared_memory_per_block_bytes: s.min(max_s) as u32,
            },
            carveout,
        })
    };

    // Edge cases: warp multiples and their neighbours, register counts on and just past an
    // allocation-unit boundary (R * 32 a multiple of the unit), shared memory at 0, at the
    // allocation unit with and without the reserved bytes, around the default per-block limit
    // and at the opt-in maximum.
    let threads = [
        1,
        31,
        32,
        33,
        64,
        96,
        128,
        192,
        256,
        384,
        512,
        640,
        max_t - 1,
        max_t,
    ];
    let mut regs = vec![0, 1, max_r];
    let regs_per_unit = (reg_unit / 32).max(1);
    for k in [1, 2, 3, 4, 5, 6, 7, 8] {
        regs.push(k * regs_per_unit);
        regs.push(k * regs_per_unit + 1);
    }
    let smem = [
        0,
        1,
        unit.saturating_sub(reserved),
        unit.saturating_sub(reserved) + 1,
        unit,
        per_block.saturating_sub(reserved),
        per_block,
        per_block + 1,
        max_s - 1,
        max_s,
    ];
    for &t in &threads {
        for &r in &regs {
            for &s in &smem {
                let carveout = random_carveout(rng, c.cc);
                push(out, t, r, s, carveout);
            }
        }
    }

    // Random cases: thread counts uniform, or a multiple of 32 half of the time; registers
    // uniform; shared memory uniform over 0..=max, or near a multiple of the unit.
    for _ in 0..RANDOM_CASES_PER_CONFIG {
        let t = if rng.range(0, 1) == 0 {
            rng.range(1, max_t)
        } else {
            32 * rng.range(1, max_t / 32)
        };
        let r = rng.range(0, max_r);
        let s = match rng.range(0, 3) {
            0 => 0,
            1 => (rng.range(0, max_s / unit) * unit)
                .saturating_sub(reserved)
                .saturating_add(rng.range(0, 2))
                .saturating_sub(1),
            _ => rng.range(0, max_s),
        };
        let carveout = random_carveout(rng, c.cc);
        push(out, t, r, s, carveout);
    }
}

/// Limits a device file may override but that cuda_occupancy.h does not take from the device
/// properties (it has its own switch per compute capability).
fn header_owned_overrides(
    d: &ComputeCapabilityLimits,
    base: &ComputeCapabilityLimits,
) -> Vec<&'static str> {
    let mut v = vec![];
    if d.max_blocks_per_sm != base.max_blocks_per_sm {
        v.push("max_blocks_per_sm");
    }
    if d.register_allocation_unit != base.register_allocation_unit {
        v.push("register_allocation_unit");
    }
    if d.warp_schedulers_per_sm != base.warp_schedulers_per_sm {
        v.push("warp_schedulers_per_sm");
    }
    if d.shared_memory_allocation_unit_bytes != base.shared_memory_allocation_unit_bytes {
        v.push("shared_memory_allocation_unit_bytes");
    }
    if d.shared_memory_carveout_kb != base.shared_memory_carveout_kb {
        v.push("shared_memory_carveout_kb");
    }
    v
}

fn factors(limited_by: &[Limiter]) -> u32 {
    limited_by
        .iter()
        .map(|l| match l {
            Limiter::Warps => 1,
            Limiter::Registers => 2,
            Limiter::SharedMemory => 4,
            Limiter::Blocks => 8,
        })
        .sum()
}

fn unlimited(v: u32) -> i64 {
    if v == u32::MAX {
        -1
    } else {
        i64::from(v)
    }
}

#[test]
fn exact_occupancy_agrees_with_cuda_occupancy_h() {
    let Some(include) = header_dir() else {
        crate::common::missing_tool(
            "toolchain",
            "occupancy oracle: cuda_occupancy.h not found (run scripts/install-gpu-toolchain.sh or set GPU_TC)",
        );
        return;
    };
    let started = Instant::now();
    let Some(oracle) = compile_oracle(&include) else {
        return;
    };
    let compiled_s = started.elapsed().as_secs_f64();

    let three = ComputeCapability::new(3, 0);
    let mut configs: Vec<Config> = vec![];
    for d in catalogue::all()
        .iter()
        .filter(|d| d.compute_capability >= three)
    {
        let base = for_compute_capability(d.compute_capability).expect("table entry");
        let own = header_owned_overrides(&d.limits, &base);
        if !own.is_empty() {
            // The header reads these from its own per-architecture tables, not from the device,
            // so it cannot judge a device (e.g. a paper's profile) that changes them.
            eprintln!(
                "NOTE occupancy oracle: {} overrides {} (taken by cuda_occupancy.h from its own tables); not compared",
                d.name,
                own.join(", ")
            );
            continue;
        }
        configs.push(Config {
            label: d.name.clone(),
            cc: d.compute_capability,
            limits: d.limits.clone(),
        });
    }
    let catalogue_configs = configs.len();
    for cc in known_compute_capabilities() {
        if cc >= three {
            configs.push(Config {
                label: format!("compute capability {cc}"),
                cc,
                limits: for_compute_capability(cc).expect("table entry loads"),
            });
        }
    }
    assert!(
        configs.len() > catalogue_configs,
        "the table has no cc >= 3.0"
    );

    let mut rng = Rng(0x6b65_726e_656c_7469);
    let mut cases = vec![];
    for (i, c) in configs.iter().enumerate() {
        cases_for(i, c, &mut rng, &mut cases);
    }
    assert!(cases.len() >= 10_000, "only {} cases", cases.len());

    let mut input = String::new();
    for case in &cases {
        let c = &configs[case.config];
        let l = &c.limits;
        let (cache, carve) = header_state(case.carveout);
        input.push_str(&format!(
            "{} {} {} {} {} {} {} {} {} {} {} {} {} {} {}\n",
            c.cc.major,
            c.cc.minor,
            l.max_threads_per_block,
            u64::from(l.max_warps_per_sm) * 32,
            l.registers_per_block,
            l.registers_per_sm,
            l.shared_memory_per_block_bytes,
            l.shared_memory_per_sm_bytes,
            l.shared_memory_per_block_optin_bytes,
            l.reserved_shared_memory_per_block_bytes,
            case.block.threads_per_block,
            case.block.registers_per_thread,
            case.block.shared_memory_per_block_bytes,
            cache,
            carve
        ));
    }
    let mut child = Command::new(&oracle)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the compiled oracle runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().expect("oracle output");
    writer.join().expect("writer").expect("write cases");
    let _ = std::fs::remove_file(&oracle);
    assert!(output.status.success(), "oracle failed");
    let text = String::from_utf8(output.stdout).expect("utf-8");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), cases.len(), "one answer per case");

    let mut mismatches = vec![];
    for (case, line) in cases.iter().zip(&lines) {
        let c = &configs[case.config];
        let v: Vec<i64> = line
            .split_whitespace()
            .map(|x| x.parse().expect("number"))
            .collect();
        let ours = occupancy_for_limits(
            c.cc,
            &c.limits,
            &case.block,
            &OccupancyOptions {
                carveout: case.carveout,
            },
        )
        .unwrap_or_else(|e| panic!("{}: {:?} rejected: {e}", c.label, case.block));
        let mine = [
            0,
            i64::from(ours.active_blocks_per_sm),
            i64::from(factors(&ours.limited_by)),
            unlimited(ours.blocks_limit_registers),
            unlimited(ours.blocks_limit_shared_memory),
            unlimited(ours.blocks_limit_warps),
            unlimited(ours.blocks_limit_blocks),
        ];
        if v != mine {
            mismatches.push(format!(
                "{} {:?} {:?}: header {v:?}, ours {mine:?}",
                c.label, case.block, case.carveout
            ));
        }
    }
    eprintln!(
        "occupancy oracle ({}): {} cases over {} configurations ({} catalogue devices, {} compute capabilities), {} mismatches, {:.2} s (g++ {:.2} s)",
        include.display(),
        cases.len(),
        configs.len(),
        catalogue_configs,
        configs.len() - catalogue_configs,
        mismatches.len(),
        started.elapsed().as_secs_f64(),
        compiled_s
    );
    assert!(
        mismatches.is_empty(),
        "{} of {} cases disagree with cuda_occupancy.h; first ones:\n{}",
        mismatches.len(),
        cases.len(),
        mismatches
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
