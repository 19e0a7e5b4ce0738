//! What memory does to a kernel's time (issue 13), on our own small kernels
//! (`kernels/cuda/memory_effects.cu`, compiled by nvcc 13.5 for sm_75): same-address atomics
//! serialise at the L2, histograms with few bins are slower than with many, `red` does not wait
//! and `atom` does, data hints make gathers and branches exact, indices staged through local
//! and shared memory stay exact, spills cost local traffic, blocks share the L2, Kepler does not
//! cache plain global loads in L1, a launch costs at least its overhead, a partial wave costs a
//! round, and nothing beats the achievable DRAM bandwidth. Expected values are derived in each
//! test from the device's numbers (throughputs, clock, bandwidth), never from the model's output.

use kerneltime::device::catalogue;
use kerneltime::device::latencies::{for_device, Resolved};
use kerneltime::device::Device;
use kerneltime::emulate::{
    emulate_with, BufferHint, DataHint, Emulation, KernelArg, LaunchDims, Options, UnknownData,
};
use kerneltime::model::trace_sim::{predict, KernelResources, TraceRun};
use kerneltime::ptx::parse;
use kerneltime::ptx::resources::parse_report;
use kerneltime::workload::trace::{Atomic, MemSpace};

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ptx");
const PTX: &str = "memory_effects.nvcc-sm75.ptx";

fn module() -> kerneltime::ptx::ast::Module {
    let text = std::fs::read_to_string(format!("{FIX}/{PTX}")).unwrap();
    parse(&text).0
}

fn emulate_opts(
    entry: &str,
    grid: u32,
    block: u32,
    args: &[&str],
    data: &[(&str, DataHint)],
    opts: Options,
) -> Emulation {
    let m = module();
    let args = KernelArg::parse_all(args).unwrap();
    let data: Vec<BufferHint> = data
        .iter()
        .map(|(p, h)| BufferHint {
            param: p.to_string(),
            hint: h.clone(),
        })
        .collect();
    let launch = LaunchDims {
        grid: [grid, 1, 1],
        block: [block, 1, 1],
    };
    emulate_with(&m, entry, launch, &args, &data, opts).unwrap()
}

fn emulate(
    entry: &str,
    grid: u32,
    block: u32,
    args: &[&str],
    data: &[(&str, DataHint)],
) -> Emulation {
    emulate_opts(entry, grid, block, args, data, Options::default())
}

fn device(name: &str) -> (&'static Device, Resolved) {
    let d = catalogue::find(name).unwrap();
    (d, for_device(d).unwrap())
}

fn res(registers: u32) -> KernelResources {
    KernelResources {
        registers_per_thread: registers,
        ..Default::default()
    }
}

fn run(d: &Device, lat: &Resolved, em: &Emulation, r: KernelResources) -> (f64, TraceRun) {
    let (p, run) = predict(d, em, r, lat).unwrap();
    (p.time_us, run)
}

/// Time without the launch overhead, µs.
fn kernel_us(d: &Device, lat: &Resolved, em: &Emulation, r: KernelResources) -> f64 {
    run(d, lat, em, r).0 - lat.values.launch_overhead_us
}

#[test]
fn one_address_atomics_serialise_at_the_same_address_rate() {
    let (v100, lat) = device("V100");
    // Every thread adds 1 to one float: n updates queue at one L2 slice at
    // global_atomic_same_address_per_clk for the whole GPU, so the kernel takes
    // n / rate / clock: linear in n.
    let rate = lat.values.global_atomic_same_address_per_clk;
    let mut times = Vec::new();
    for blocks in [64u32, 256, 1024] {
        let n = blocks * 256;
        let em = emulate("count_all", blocks, 256, &[&format!("1={n}")], &[]);
        // nvcc writes `atom` with an unused result; ptxas makes it a reduction.
        let acc = em.warps[0].accesses.iter().find(|a| a.atomic != Atomic::No);
        assert_eq!(acc.map(|a| a.atomic), Some(Atomic::Red));
        assert_eq!(acc.map(|a| a.same_address_lanes), Some(32));
        let t = kernel_us(v100, &lat, &em, res(16));
        let expected = f64::from(n) / rate / v100.core_clock_mhz;
        assert!(
            (t - expected).abs() <= 0.02 * expected,
            "n = {n}: {t} us against {expected} us"
        );
        times.push(t);
    }
    // 4x the threads, 4x the time.
    assert!((times[1] / times[0] - 4.0).abs() < 0.1, "{times:?}");
    assert!((times[2] / times[1] - 4.0).abs() < 0.1, "{times:?}");
}

#[test]
fn atom_waits_for_its_result_and_red_does_not() {
    let (v100, lat) = device("V100");
    // One warp. take_ticket's result is stored (atom); count_all's is not (red). The atom's
    // warp waits for the L2's answer: at least the L2 hit latency more.
    let red = emulate("count_all", 1, 32, &["1=32"], &[]);
    let atom = emulate("take_ticket", 1, 32, &["2=32"], &[]);
    let kind = |em: &Emulation| {
        em.warps[0]
            .accesses
            .iter()
            .find(|a| a.atomic != Atomic::No)
            .map(|a| a.atomic)
    };
    assert_eq!(kind(&red), Some(Atomic::Red));
    assert_eq!(kind(&atom), Some(Atomic::Atom));
    let (_, r) = run(v100, &lat, &red, res(16));
    let (_, a) = run(v100, &lat, &atom, res(16));
    assert!(
        a.pipeline_cycles >= r.pipeline_cycles + lat.values.l2_hit,
        "atom {} red {}",
        a.pipeline_cycles,
        r.pipeline_cycles
    );
}

#[test]
fn a_histogram_with_few_bins_queues_on_its_hottest_bin() {
    let (v100, lat) = device("V100");
    let n: u32 = 1 << 20;
    let blocks = n / 256;
    let hist = |bins: f64| {
        let em = emulate(
            "histogram",
            blocks,
            256,
            &[&format!("2={n}")],
            &[(
                "0",
                DataHint::Uniform {
                    lo: 0.0,
                    hi: bins,
                    seed: 1,
                },
            )],
        );
        // The bins' addresses come from the hint: every lane's address is known.
        assert!(em
            .warps
            .iter()
            .all(|w| w.accesses.iter().all(|a| a.addresses_known)));
        kernel_us(v100, &lat, &em, res(16))
    };
    let few = hist(4.0);
    let many = hist(4096.0);
    // 4 bins: n / 4 updates of the hottest bin at the same-address rate.
    let rate = lat.values.global_atomic_same_address_per_clk;
    let expected = f64::from(n) / 4.0 / rate / v100.core_clock_mhz;
    assert!(
        (few - expected).abs() <= 0.1 * expected,
        "{few} us against {expected} us"
    );
    assert!(few > 20.0 * many, "4 bins {few} us, 4096 bins {many} us");
}

#[test]
fn shared_atomics_serialise_on_the_same_word() {
    let (v100, lat) = device("V100");
    let n: u32 = 1 << 16;
    let shared = |bins: f64| {
        let em = emulate(
            "histogram_shared",
            n / 256,
            256,
            &[&format!("2={n}")],
            &[(
                "0",
                DataHint::Uniform {
                    lo: 0.0,
                    hi: bins,
                    seed: 3,
                },
            )],
        );
        let most = em
            .warps
            .iter()
            .flat_map(|w| &w.accesses)
            .filter(|a| a.space == MemSpace::Shared && a.atomic != Atomic::No)
            .map(|a| a.same_address_lanes)
            .max()
            .unwrap();
        (most, run(v100, &lat, &em, res(16)).1.pipeline_cycles)
    };
    // One bin: all 32 lanes on one word. 256 bins: a few lanes share a word at most.
    let (one, slow) = shared(1.0);
    let (spread, fast) = shared(256.0);
    assert_eq!(one, 32);
    assert!(spread <= 4, "{spread}");
    // Each further lane on one word is one more pass of shared_atomic_conflict_cycles: 31
    // more per warp request than a conflict-free one, for 8 warps in turn on the path.
    let extra = 31.0 * lat.values.shared_atomic_conflict_cycles;
    assert!(slow - fast >= extra, "{slow} vs {fast}");
}

#[test]
fn a_broadcast_gather_is_cheaper_than_a_random_one() {
    let (v100, lat) = device("V100");
    let n: u32 = 1 << 22;
    let gather = |hint: DataHint| {
        let em = emulate("gather", n / 256, 256, &[&format!("3={n}")], &[("1", hint)]);
        // Every warp of every sampled block: idx[i] and y[i] are 32 lanes x 4 B = 128 B = 4
        // sectors each, whatever idx holds; only the x load, whose address came from idx,
        // changes.
        let mut x_sectors = Vec::new();
        for w in &em.warps {
            let global: Vec<_> = w
                .accesses
                .iter()
                .filter(|a| a.space == MemSpace::Global)
                .collect();
            assert_eq!(global.len(), 3);
            assert_eq!((global[0].sectors, global[2].sectors), (4, 4));
            x_sectors.push(global[1].sectors);
        }
        x_sectors.sort_unstable();
        x_sectors.dedup();
        (x_sectors, kernel_us(v100, &lat, &em, res(16)))
    };
    // idx all zero: every lane of every warp reads x[0], one sector. Uniform over n: 32 lanes,
    // 32 sectors (two of 32 random floats among 2^22 share a sector with probability about
    // 32 * 31 / 2 / 2^19 < 0.001 per warp).
    let (s0, zero) = gather(DataHint::Const(0.0));
    let (sr, random) = gather(DataHint::Uniform {
        lo: 0.0,
        hi: f64::from(n),
        seed: 7,
    });
    assert_eq!((s0, sr), (vec![1], vec![32]));
    // The random gather moves 32 sectors per 32 elements from a 16 MB table (larger than the
    // V100's 6 MB L2) against 4 for idx and 4 for y: about (32 + 8) / (1 + 8) = 4.4 times
    // the DRAM traffic of the broadcast.
    assert!(
        random > 2.5 * zero,
        "random {random} us, broadcast {zero} us"
    );
}

#[test]
fn a_store_the_data_never_reach_does_not_run() {
    let (v100, lat) = device("V100");
    let n: u32 = 1 << 20;
    let stores = |em: &Emulation| {
        em.warps
            .iter()
            .flat_map(|w| &w.accesses)
            .filter(|a| a.store)
            .count()
    };
    // x all zero: `x[i] == 123.0f` is false everywhere, the store never runs.
    let hinted = emulate(
        "rare_store",
        n / 256,
        256,
        &[&format!("2={n}")],
        &[("0", DataHint::Const(0.0))],
    );
    assert_eq!(stores(&hinted), 0);
    assert_eq!(hinted.data_dependence.branches, 0);
    // Without a hint the worst case runs it in every warp, the best case in none.
    let worst = emulate("rare_store", n / 256, 256, &[&format!("2={n}")], &[]);
    assert_eq!(stores(&worst), worst.warps.len());
    assert!(worst.data_dependence.any());
    let best = emulate_opts(
        "rare_store",
        n / 256,
        256,
        &[&format!("2={n}")],
        &[],
        Options {
            unknown: UnknownData::Best,
            ..Options::default()
        },
    );
    assert_eq!(stores(&best), 0);
    // The hinted time is the best case's; both below the worst case's by about the stores'
    // share of the traffic (4 B of 8 B per element).
    let (t_h, t_b, t_w) = (
        kernel_us(v100, &lat, &hinted, res(16)),
        kernel_us(v100, &lat, &best, res(16)),
        kernel_us(v100, &lat, &worst, res(16)),
    );
    assert!((t_h - t_b).abs() <= 1e-9 * t_b, "{t_h} {t_b}");
    assert!(t_w > 1.5 * t_h, "worst {t_w} us, hinted {t_h} us");
}

/// Every global access of every warp has known addresses and is coalesced: 32 lanes x 4 B =
/// 128 B = 4 sectors.
fn all_coalesced(em: &Emulation) {
    for w in &em.warps {
        for a in w.accesses.iter().filter(|a| a.space == MemSpace::Global) {
            assert!(a.addresses_known, "block {:?} warp {}", w.block, w.warp);
            assert_eq!(a.sectors, 4, "block {:?} warp {}", w.block, w.warp);
        }
    }
}

#[test]
fn an_index_staged_through_a_local_variable_stays_exact() {
    let em = emulate("staged_local", 64, 256, &["2=16384"], &[]);
    // st.volatile.local then ld.volatile.local of the same slot: the loaded index is the one
    // stored, so y[i] = x[i] is two coalesced accesses.
    let locals = em.warps[0]
        .accesses
        .iter()
        .filter(|a| a.space == MemSpace::Local)
        .count();
    assert_eq!(locals, 2);
    all_coalesced(&em);
    assert!(!em.data_dependence.any(), "{:?}", em.data_dependence);
}

#[test]
fn an_index_staged_through_shared_memory_stays_exact() {
    // The block's last thread (warp 7) writes the base; every warp reads it after the barrier,
    // warp 0 included (warps run in turn up to each barrier).
    let em = emulate("staged_shared", 64, 256, &["2=16384"], &[]);
    all_coalesced(&em);
    assert!(!em.data_dependence.any(), "{:?}", em.data_dependence);
}

#[test]
fn spills_cost_local_traffic() {
    let (t4, lat) = device("T4");
    let report =
        std::fs::read_to_string(format!("{FIX}/memory_effects.nvcc-sm75.ptxas.txt")).unwrap();
    let r = parse_report(&report)
        .into_iter()
        .find(|r| r.name == "spill_heavy")
        .unwrap();
    let (st, ld) = (
        r.spill_store_bytes.unwrap() as u32,
        r.spill_load_bytes.unwrap() as u32,
    );
    assert!(st > 0 && ld > 0);
    let em = emulate("spill_heavy", 40, 1024, &["1=40960", "2=4"], &[]);
    let base = KernelResources {
        registers_per_thread: r.registers.unwrap() as u32,
        ..Default::default()
    };
    let spilled = KernelResources {
        spill_store_bytes: st,
        spill_load_bytes: ld,
        ..base
    };
    let (t0, r0) = run(t4, &lat, &em, base);
    let (t1, r1) = run(t4, &lat, &em, spilled);
    assert_eq!(r0.spill_accesses_per_warp, 0.0);
    // Per warp: (st / 4 + ld / 4) words x its instructions / the kernel's static instructions.
    let rep = r1.representative_block;
    let w = em.warps.iter().find(|w| w.block_linear == rep).unwrap();
    let words = f64::from(st.div_ceil(4) + ld.div_ceil(4));
    let expected = w.ops.len() as f64 * words / em.regs.len() as f64;
    assert!(
        (r1.spill_accesses_per_warp - expected).abs() <= 2.0,
        "{} vs {expected}",
        r1.spill_accesses_per_warp
    );
    assert!(t1 > t0, "spilled {t1} us, not spilled {t0} us");
}

#[test]
fn blocks_that_read_the_same_megabyte_hit_in_the_l2() {
    let (v100, lat) = device("V100");
    // 262,144 floats = 1 MB read whole by every block; 640 blocks of 256 threads (a full wave
    // of 8 blocks on each of the 80 SMs).
    let em = emulate("table_sum", 640, 256, &["2=262144"], &[]);
    let (_, r) = run(v100, &lat, &em, res(16));
    // The representative block and the blocks launched after it read the same sectors at
    // about the same time: of the 4 simulated blocks, the first to reach a sector misses and
    // the other 3 hit, so 3 of 4 L2 accesses hit (each block reads each sector once, so none
    // of them hits L1).
    assert_eq!(r.wave_blocks_simulated, 4);
    assert!(r.cache.l1_hit_ratio < 0.01, "{}", r.cache.l1_hit_ratio);
    assert!(
        (r.cache.l2_hit_ratio - 0.75).abs() < 0.02,
        "{}",
        r.cache.l2_hit_ratio
    );
}

#[test]
fn kepler_does_not_cache_plain_global_loads_in_l1() {
    // matmul_naive: the lanes of a warp read the same a[row * n + k] (a broadcast) and the
    // warps of a block the same b row, so loads would hit L1 if it cached them.
    let text = std::fs::read_to_string(format!("{FIX}/basics.nvcc-sm75.ptx")).unwrap();
    let (m, _) = parse(&text);
    let args = KernelArg::parse_all(&["3=256"]).unwrap();
    let launch = LaunchDims {
        grid: [16, 16, 1],
        block: [16, 16, 1],
    };
    let em = kerneltime::emulate::emulate(&m, "matmul_naive", launch, &args, Options::default())
        .unwrap();
    let (k20, lk) = device("Tesla K20c");
    let (v100, lv) = device("V100");
    let (_, rk) = run(k20, &lk, &em, res(16));
    let (_, rv) = run(v100, &lv, &em, res(16));
    assert!(!rk.l1_policy.global_loads);
    assert_eq!(rk.cache.l1_accesses, 0);
    assert!(rv.cache.l1_hit_ratio > 0.5, "{}", rv.cache.l1_hit_ratio);
}

#[test]
fn a_one_block_launch_costs_at_least_the_launch_overhead() {
    let text = std::fs::read_to_string(format!("{FIX}/basics.nvcc-sm75.ptx")).unwrap();
    let (m, _) = parse(&text);
    let args = KernelArg::parse_all(&["3=32"]).unwrap();
    let launch = LaunchDims {
        grid: [1, 1, 1],
        block: [32, 1, 1],
    };
    let em =
        kerneltime::emulate::emulate(&m, "vector_add", launch, &args, Options::default()).unwrap();
    for name in ["V100", "GTX 680", "A100", "RTX 4090"] {
        let (d, lat) = device(name);
        let (t, r) = run(d, &lat, &em, res(16));
        // The kernel's own cycles come on top of the overhead: at least one DRAM latency.
        let at_least = lat.values.launch_overhead_us + lat.values.dram / d.core_clock_mhz;
        assert!(t >= at_least, "{name}: {t} us < {at_least} us");
        assert_eq!(r.launch_overhead_us, lat.values.launch_overhead_us);
    }
}

#[test]
fn one_block_past_a_full_wave_costs_a_second_round() {
    let (v100, lat) = device("V100");
    // spill_heavy with 1024 threads of 64 registers: one block per SM (65,536 registers): 96
    // loads a thread, then 64 rounds of 96 multiply-adds. 80 blocks fill the 80 SMs once; one
    // more block runs alone in a second round. That round is no longer than the first (its
    // loads have the DRAM to themselves, where the 80 blocks' 31 MB share it) and no shorter
    // than its multiply-adds: 8 warps a scheduler x 64 x 96 of them, 2 cycles each at 16
    // lanes a scheduler (64 fp32 results per clock per SM on Volta).
    let go = |blocks: u32| {
        let n = blocks * 1024;
        let em = emulate(
            "spill_heavy",
            blocks,
            1024,
            &[&format!("1={n}"), "2=64"],
            &[],
        );
        run(v100, &lat, &em, res(64))
    };
    let (t1, r1) = go(80);
    let (t2, r2) = go(81);
    assert_eq!((r1.active_blocks_per_sm, r1.full_waves), (1, 1));
    assert_eq!(
        (r2.full_waves, r2.tail_blocks_per_sm, r2.tail_sms),
        (1, 1, 1)
    );
    let compute = 8.0 * 64.0 * 96.0 * 2.0;
    let tail = r2.tail_pipeline_cycles;
    assert!(
        tail >= compute && tail <= r1.pipeline_cycles,
        "{tail} vs {compute} and {}",
        r1.pipeline_cycles
    );
    let over = lat.values.launch_overhead_us;
    let ratio = (t2 - over) / (t1 - over);
    let least = 1.0 + compute / r1.pipeline_cycles;
    assert!((least..=2.0).contains(&ratio), "{t1} us, {t2} us: {ratio}");
}

#[test]
fn a_vector_add_never_beats_the_achievable_bandwidth() {
    let text = std::fs::read_to_string(format!("{FIX}/basics.nvcc-sm75.ptx")).unwrap();
    let (m, _) = parse(&text);
    for (name, n) in [("A100", 1u32 << 24), ("L4", 1 << 22), ("GTX 680", 1 << 22)] {
        let (d, lat) = device(name);
        let args = KernelArg::parse_all(&[format!("3={n}")]).unwrap();
        let launch = LaunchDims {
            grid: [n / 256, 1, 1],
            block: [256, 1, 1],
        };
        let em = kerneltime::emulate::emulate(&m, "vector_add", launch, &args, Options::default())
            .unwrap();
        let (t, r) = run(d, &lat, &em, res(16));
        // Two 4-byte loads and one store per element.
        let bytes = 12.0 * f64::from(n);
        let achievable_gbs = d.memory_bandwidth_gbs * lat.values.dram_efficiency;
        let gbs = bytes / ((t - lat.values.launch_overhead_us) * 1e3);
        assert!(gbs <= achievable_gbs * 1.001, "{name}: {gbs} GB/s");
        // And within reach of it: a streaming kernel is bandwidth bound.
        assert!(gbs >= 0.6 * achievable_gbs, "{name}: {gbs} GB/s");
        assert!(t >= r.bound.bound_us);
    }
}

/// The shared accesses of warp 0 of `rows` (tests/fixtures/ptx/shared_runs.hand.ptx) started
/// `off` bytes into each lane's row: (bytes per lane, bank ways) of each.
fn shared_runs(off: u32) -> Vec<(u16, u32)> {
    let text = std::fs::read_to_string(format!("{FIX}/shared_runs.hand.ptx")).unwrap();
    let m = parse(&text).0;
    let launch = LaunchDims {
        grid: [1, 1, 1],
        block: [32, 1, 1],
    };
    let args = KernelArg::parse_all(&[&format!("1={off}")]).unwrap();
    let em = emulate_with(&m, "rows", launch, &args, &[], Options::default()).unwrap();
    em.warps[0]
        .accesses
        .iter()
        .filter(|a| a.space == MemSpace::Shared)
        .map(|a| (a.bytes_per_lane, a.bank_ways))
        .collect()
}

#[test]
fn consecutive_shared_loads_are_one_vector_load_when_aligned() {
    // Lane l reads bytes 128 l .. 128 l + 16: words 32 l .. 32 l + 3, banks 0..3, each bank
    // holding one word of every lane: 32 ways, paid once for the 16-byte load ptxas issues.
    assert_eq!(shared_runs(0), vec![(16, 32)]);
    // Started 4 bytes in, the first word cannot lead an aligned pair: LDS.32 at +4, LDS.64 at
    // +8 (8-byte aligned), LDS.32 at +16; each of the 32 lanes in the same bank(s): 32 ways.
    assert_eq!(shared_runs(4), vec![(4, 32), (8, 32), (4, 32)]);
}
