//! Warp emulation checks: dynamic instruction counts derived by hand from the PTX fixtures and
//! trip counts, coalescing and bank conflicts of strided accesses, the conservative rule for
//! data-dependent branches, and clear errors for runaway loops, missing arguments, bad launches
//! and PTX that cannot be executed.

use kerneltime::emulate::{emulate, ArgValue, Emulation, KernelArg, LaunchDims, Options, Sampling};
use kerneltime::ptx::parse;

fn fixture(name: &str) -> String {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ptx/");
    std::fs::read_to_string(format!("{p}{name}")).expect("fixture")
}

fn run(
    ptx: &str,
    entry: &str,
    grid: [u32; 3],
    block: [u32; 3],
    args: &[&str],
) -> kerneltime::Result<Emulation> {
    let (m, _) = parse(ptx);
    let args = KernelArg::parse_all(args)?;
    emulate(
        &m,
        entry,
        LaunchDims { grid, block },
        &args,
        Options::default(),
    )
}

fn counts(e: &Emulation) -> Vec<u64> {
    e.warps.iter().map(|w| w.ops.len() as u64).collect()
}

#[test]
fn dwt_matrix_counts_follow_the_trip_count() {
    // Entry block 11 (5 ld.param, 3 mov, mad, setp, bra), K test 3 (setp, mov, bra), preheader 9,
    // loop body 11 per tap (rem, mul.wide, add, 2 ld, fma, 3 add, setp, bra), store block 4, ret 1:
    // 11 + 3 + 9 + 11 K + 4 + 1 = 28 + 11 K.
    for k in [1u64, 8, 33] {
        let kk = k.to_string();
        let e = run(
            &fixture("dwt.nvcc-sm75.ptx"),
            "dwt_matrix",
            [4, 1, 1],
            [128, 1, 1],
            &["3=512", &format!("4={kk}")],
        )
        .unwrap();
        assert!(
            counts(&e).iter().all(|&c| c == 28 + 11 * k),
            "K={k}: {:?}",
            counts(&e)
        );
        // two loads per tap, one store per thread.
        let s = e.warps[0].summary();
        assert_eq!(s.global_load_requests, 2 * k);
        assert_eq!(s.global_store_requests, 1);
    }
    // Threads beyond N (param 3) return after the entry block: 11 + ret 1 = 12.
    let e = run(
        &fixture("dwt.nvcc-sm75.ptx"),
        "dwt_matrix",
        [4, 1, 1],
        [128, 1, 1],
        &["dwt_matrix_param_3=128", "param_4=8"],
    )
    .unwrap();
    // Block 0 (threads 0..127) all compute; blocks 2 and 3 are beyond N = 128.
    assert!(e.block_warps(0).all(|w| w.ops.len() == 28 + 88));
    assert!(e.block_warps(3).all(|w| w.ops.len() == 12));
}

#[test]
fn dwt_matrix_sectors_by_hand() {
    // K = 8, N = 512: x[(i & ~1) + j] for lanes 0..31 covers words j..30+j: bytes 4j..4j+123,
    // 4 sectors for j = 0, 1 and 5 for j = 2..7 -> 2*4 + 6*5 = 38; h[(i & 1) K + j] touches words
    // j and 8 + j, 32 bytes apart: 2 sectors per tap -> 16. Total 54 sectors in 16 requests.
    let e = run(
        &fixture("dwt.nvcc-sm75.ptx"),
        "dwt_matrix",
        [4, 1, 1],
        [128, 1, 1],
        &["3=512", "4=8"],
    )
    .unwrap();
    let s = e.warps[0].summary();
    assert_eq!(s.global_load_sectors, 2 * 4 + 6 * 5 + 8 * 2);
    // the store y[i] of 32 consecutive floats: 4 sectors.
    assert_eq!(s.global_store_sectors, 4);
}

#[test]
fn mtx_mul_vec_counts() {
    // entry 6 (4 ld.param, setp, bra), setup 14, loop 9 per row element, ret 1: 21 + 9 N.
    for n in [1u64, 16, 100] {
        let e = run(
            &fixture("mtx_mul_vec.nvcc-sm75.ptx"),
            "mtx_mul_vec",
            [2, 1, 1],
            [64, 1, 1],
            &[&format!("0={n}")],
        )
        .unwrap();
        assert!(
            counts(&e).iter().all(|&c| c == 21 + 9 * n),
            "{:?}",
            counts(&e)
        );
    }
    // N = 0: the loop is skipped: 6 + ret 1.
    let e = run(
        &fixture("mtx_mul_vec.nvcc-sm75.ptx"),
        "mtx_mul_vec",
        [1, 1, 1],
        [32, 1, 1],
        &["0=0"],
    )
    .unwrap();
    assert_eq!(counts(&e), vec![7]);
}

#[test]
fn fdtd_o2_counts_boundary_and_interior() {
    // Entry 26 (8 ld.param, 2 x (3 mov + mad), 3 setp, 3 or.pred, 2 add, bra), nz test 2,
    // preheader 36, loop body 34 per z plane (nz - 2 planes: r18 runs 1 .. nz-2), ret 1:
    // 65 + 34 (nz - 2). A warp whose lanes all sit on the y = 0 face returns at once: 26 + 1.
    let args = ["5=64", "6=64", "7=10"];
    let e = run(
        &fixture("fdtd.nvcc-sm75.ptx"),
        "fdtd_o2",
        [2, 16, 1],
        [32, 4, 1],
        &args,
    )
    .unwrap();
    let b0: Vec<u64> = e.block_warps(0).map(|w| w.ops.len() as u64).collect();
    assert_eq!(b0, vec![27, 65 + 34 * 8, 65 + 34 * 8, 65 + 34 * 8]);
    // 11 loads per plane in each interior warp: p[i], c[0], six neighbours, c[1], p_prev, vel2.
    let w = e.block_warps(0).nth(1).unwrap().summary();
    assert_eq!(w.global_load_requests, 11 * 8);
    assert_eq!(w.global_store_requests, 8);
    // Sampled blocks: x in {0, 1}, y in {0, 8, 15}: 6 blocks of 4 warps, in launch order.
    let classes: Vec<u64> = e
        .sampled_blocks
        .iter()
        .filter(|b| b.represents > 0)
        .map(|b| b.linear)
        .collect();
    assert_eq!(classes, vec![0, 1, 16, 17, 30, 31]);
    // The blocks launched right after the representative one (16, the lowest of the two
    // interior classes) run beside it: 17 (sampled already), then 18, 19, ... as far as the
    // wave budget goes (each costs the 4 warps of block 16), in launch order with the others,
    // standing for no block.
    assert_eq!(&e.wave[..2], &[16, 17]);
    let order: Vec<u64> = e.sampled_blocks.iter().map(|b| b.linear).collect();
    assert!(order.windows(2).all(|p| p[0] < p[1]), "{order:?}");
    // And the block one grid row (2 blocks) before the representative one, for what it
    // leaves in the L2.
    assert_eq!(e.above, Some(16 - 2));
    for b in e.sampled_blocks.iter().filter(|b| b.represents == 0) {
        assert!(
            (e.wave.contains(&b.linear) && b.class == "wave")
                || (e.above == Some(b.linear) && b.class == "above"),
            "{b:?}"
        );
    }
    assert_eq!(e.warps.len(), 4 * e.sampled_blocks.len());
    let represented: u64 = e.sampled_blocks.iter().map(|b| b.represents).sum();
    assert_eq!(represented, 32);
}

#[test]
fn reduce_sum_divergence_and_barriers() {
    // ptxas predicates the two short `if` bodies (at most 7 instructions, and not a branch to
    // `ret`), so their branches are not issued and every warp issues the bodies, with its lanes
    // off where the condition fails. Per warp of a 256-thread block (all threads in range):
    // entry 10 - 1 branch, load body 4, shared store block 7, 8 tree steps of header 2 - 1
    // branch + body 6 + latch 4, tail test 2 (its branch goes to `ret`: a conditional exit, not
    // predicated), ret 1; warp 0 also runs the final store (4) for lane 0.
    let e = run(
        &fixture("basics.nvcc-sm75.ptx"),
        "reduce_sum",
        [4, 1, 1],
        [256, 1, 1],
        &["2=100000"],
    )
    .unwrap();
    let base = 9 + 4 + 7 + 8 * (1 + 6 + 4) + 2 + 1;
    let mut want = [base; 8];
    want[0] += 4;
    let got: Vec<u64> = e.block_warps(0).map(|w| w.ops.len() as u64).collect();
    assert_eq!(got, want.to_vec());
    // A body issued with every lane off makes no request: shared requests are the first store
    // plus 2 loads and a store in each step the warp has a lane in (warp 0 8 steps and the final
    // load, warp 1 2 steps, warps 2 and 3 one, warps 4 to 7 none). In the last step lane 0
    // alone reads words 0 and 1, one aligned 8-byte vector load in SASS (`SharedRun`).
    let shared: Vec<u64> = e
        .block_warps(0)
        .map(|w| w.summary().shared_requests)
        .collect();
    assert_eq!(shared, vec![1 + 7 * 3 + 2 + 1, 1 + 2 * 3, 4, 4, 1, 1, 1, 1]);
    // 1 + 8 barriers per warp.
    assert!(e.warps.iter().all(|w| w.summary().barriers == 9));
}

const STRIDED: &str = r#"
.version 7.0
.target sm_75
.address_size 64
.visible .entry strided(.param .u64 p, .param .u32 stride)
{
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;
    .reg .f32 %f<2>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [stride];
    mov.u32 %r2, %tid.x;
    mul.lo.s32 %r3, %r2, %r1;
    mul.wide.s32 %rd2, %r3, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.f32 %f1, [%rd3];
    st.global.f32 [%rd3], %f1;
    ret;
}
.visible .entry shstride(.param .u32 stride)
{
    .reg .b32 %r<6>;
    .reg .f32 %f<2>;
    .shared .align 4 .b8 buf[4096];
    ld.param.u32 %r1, [stride];
    mov.u32 %r2, %tid.x;
    mul.lo.s32 %r3, %r2, %r1;
    shl.b32 %r4, %r3, 2;
    mov.u32 %r5, buf;
    add.s32 %r5, %r5, %r4;
    ld.shared.f32 %f1, [%r5];
    ret;
}
.visible .entry datadep(.param .u64 p)
{
    .reg .pred %p<2>;
    .reg .b32 %r<3>;
    .reg .b64 %rd<2>;
    .reg .f32 %f<2>;
    ld.param.u64 %rd1, [p];
    ld.global.f32 %f1, [%rd1];
    setp.gt.f32 %p1, %f1, 0f00000000;
    @%p1 bra SKIP;
    add.s32 %r1, %r1, 1;
    add.s32 %r1, %r1, 1;
SKIP:
    ret;
}
.visible .entry forever(.param .u32 n)
{
    .reg .b32 %r<3>;
    mov.u32 %r1, 0;
LOOP:
    add.s32 %r1, %r1, 1;
    bra.uni LOOP;
}
.visible .entry counted(.param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<3>;
    ld.param.u32 %r2, [n];
    mov.u32 %r1, 0;
LOOP:
    add.s32 %r1, %r1, 1;
    setp.lt.u32 %p1, %r1, %r2;
    @%p1 bra LOOP;
    ret;
}
.visible .entry jump(.param .u32 n)
{
    .reg .b32 %r<3>;
    ld.param.u32 %r1, [n];
    ts: .branchtargets A, B;
    brx.idx %r1, ts;
A:
    ret;
B:
    ret;
}
"#;

#[test]
fn strided_global_sectors_per_request() {
    // stride 1, 2, 4, 8, 32 floats: 128 B, 256 B, 512 B, 1 KB, 4 KB spans over 32 lanes with an
    // aligned base: 4, 8, 16, 32 sectors, then one sector per lane = 32.
    for (stride, sectors) in [(1, 4), (2, 8), (4, 16), (8, 32), (32, 32)] {
        let e = run(
            STRIDED,
            "strided",
            [1, 1, 1],
            [32, 1, 1],
            &[&format!("stride={stride}")],
        )
        .unwrap();
        let s = e.warps[0].summary();
        assert_eq!(
            (s.global_load_requests, s.global_load_sectors),
            (1, sectors),
            "stride {stride}"
        );
        assert_eq!(
            (s.global_store_requests, s.global_store_sectors),
            (1, sectors),
            "stride {stride}"
        );
    }
}

#[test]
fn shared_bank_conflict_ways() {
    // word stride 1: 32 banks, 1 way; 2: lanes l and l+16 share a bank: 2 ways; 32: one bank,
    // 32 words: 32 ways.
    for (stride, ways) in [(1, 1), (2, 2), (32, 32)] {
        let e = run(
            STRIDED,
            "shstride",
            [1, 1, 1],
            [32, 1, 1],
            &[&format!("0={stride}")],
        )
        .unwrap();
        let s = e.warps[0].summary();
        assert_eq!(
            (s.shared_requests, s.shared_bank_conflict_ways),
            (1, ways),
            "stride {stride}"
        );
    }
}

#[test]
fn data_dependent_branch_runs_both_paths_and_is_noted() {
    // 6 instructions before SKIP (ld.param, ld, setp, bra, 2 add) + ret: all issue because the
    // condition depends on loaded data; the note names the branch's line.
    let e = run(STRIDED, "datadep", [1, 1, 1], [32, 1, 1], &[]).unwrap();
    assert_eq!(counts(&e), vec![7]);
    assert!(
        e.notes.iter().any(|n| n.contains("data-dependent branch")),
        "{:?}",
        e.notes
    );
}

const PREDICATED: &str = r#"
.version 7.0
.target sm_75
.address_size 64
.visible .entry guarded(.param .u64 p, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<2>;
    .reg .f32 %f<4>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r2, [n];
    mov.u32 %r1, %tid.x;
    setp.ge.u32 %p1, %r1, %r2;
    @%p1 bra SKIP;
    add.s32 %r3, %r1, 1;
    st.global.u32 [%rd1], %r3;
SKIP:
    st.global.u32 [%rd1], %r1;
    ret;
}
.visible .entry guarded_div(.param .u64 p, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<2>;
    .reg .f32 %f<4>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r2, [n];
    mov.u32 %r1, %tid.x;
    setp.ge.u32 %p1, %r1, %r2;
    @%p1 bra SKIP;
    cvt.rn.f32.u32 %f1, %r1;
    div.rn.f32 %f2, %f1, %f1;
    st.global.f32 [%rd1], %f2;
SKIP:
    st.global.u32 [%rd1], %r1;
    ret;
}
"#;

#[test]
fn short_if_bodies_are_predicated_and_divides_are_not() {
    // `guarded`: 4 instructions, the branch, a body of 2, then the store and ret. ptxas
    // predicates the body (2 <= 7 instructions), so the branch is not issued and a warp whose
    // lanes all skip it still issues it, without a memory request: 4 + 2 + 2 = 8 with n = 0
    // (every lane skips), n = 16 (half) and n = 32 (none).
    for (n, stores) in [(0, 1), (16, 2), (32, 2)] {
        let e = run(
            PREDICATED,
            "guarded",
            [1, 1, 1],
            [32, 1, 1],
            &[&format!("1={n}")],
        )
        .unwrap();
        assert_eq!(counts(&e), vec![8], "n = {n}");
        assert_eq!(
            e.warps[0].summary().global_store_requests,
            stores,
            "n = {n}"
        );
    }
    // `guarded_div`: the IEEE divide is a branch to a slow path in SASS, so the `if` stays a
    // branch: with every lane skipping, 4 + the branch + store + ret = 7; with every lane in
    // it, 4 + 1 + 3 + 2 = 10.
    let e = run(PREDICATED, "guarded_div", [1, 1, 1], [32, 1, 1], &["1=0"]).unwrap();
    assert_eq!(counts(&e), vec![7]);
    let e = run(PREDICATED, "guarded_div", [1, 1, 1], [32, 1, 1], &["1=32"]).unwrap();
    assert_eq!(counts(&e), vec![10]);
}

/// `if (tid < n && tid < 8) x++;`: C's `&&` makes a branch over a branch over the increment,
/// which ptxas predicates as one sequence (the sm_86 SASS of the pnpoly tuning kernel, from
/// NVRTC 12.9's PTX through ptxas 12.9, has no branch left in its point test).
const NESTED_IF: &str = r#"
.version 7.0
.target sm_75
.address_size 64
.visible .entry nested(.param .u64 p, .param .u32 n)
{
    .reg .pred %p<3>;
    .reg .b32 %r<5>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r2, [n];
    mov.u32 %r1, %tid.x;
    mov.u32 %r4, 0;
    setp.ge.u32 %p1, %r1, %r2;
    @%p1 bra JOIN;
    setp.ge.u32 %p2, %r1, 8;
    @%p2 bra JOIN;
    add.s32 %r4, %r4, 1;
JOIN:
    st.global.u32 [%rd1], %r4;
    ret;
}
"#;

#[test]
fn an_if_over_a_short_condition_chain_is_predicated_whole() {
    // 11 instructions, two of them the branches ptxas removes: 9 issued whether every lane
    // skips the body (n = 0: the setp and add issue with every lane off), some lanes enter it
    // (n = 4) or all do and the inner condition splits them (n = 32).
    for n in [0, 4, 32] {
        let e = run(
            NESTED_IF,
            "nested",
            [1, 1, 1],
            [32, 1, 1],
            &[&format!("1={n}")],
        )
        .unwrap();
        assert_eq!(counts(&e), vec![9], "n = {n}");
        assert_eq!(e.warps[0].data_dependent_branches, 0, "n = {n}");
    }
}

#[test]
fn runaway_loops_stop_with_an_error() {
    let (m, _) = parse(STRIDED);
    let opts = Options {
        step_budget: 10_000,
        sampling: Sampling::Classes,
        ..Options::default()
    };
    let launch = LaunchDims {
        grid: [1, 1, 1],
        block: [32, 1, 1],
    };
    let err = emulate(
        &m,
        "forever",
        launch,
        &[KernelArg::new("n", ArgValue::Int(1))],
        opts,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("more than 10000 instructions"), "{err}");
    // A counted loop runs exactly: 2 + 3 n + 1 instructions.
    let e = emulate(
        &m,
        "counted",
        launch,
        &[KernelArg::new("n", ArgValue::Int(1000))],
        opts,
    )
    .unwrap();
    assert_eq!(counts(&e), vec![2 + 3 * 1000 + 1]);
    // ... and a huge count hits the budget instead of hanging.
    let err = emulate(
        &m,
        "counted",
        launch,
        &[KernelArg::new("n", ArgValue::Int(4_000_000_000))],
        opts,
    )
    .unwrap_err();
    assert!(err.is_usage());
}

#[test]
fn missing_argument_bad_launch_and_unsupported_ptx_are_errors() {
    let e = run(STRIDED, "strided", [1, 1, 1], [32, 1, 1], &[])
        .unwrap_err()
        .to_string();
    // The library names its input (`args`); the command line turns it into `--arg`.
    assert!(e.contains("`stride`") && e.contains("`args`"), "{e}");
    let e = run(
        STRIDED,
        "strided",
        [1, 1, 1],
        [32, 1, 1],
        &["stride=1", "bogus=3"],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("bogus"), "{e}");
    let e = run(STRIDED, "strided", [1, 1, 1], [2048, 1, 1], &["stride=1"])
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("block:"), "{e}");
    let e = run(STRIDED, "strided", [1, 70000, 1], [32, 1, 1], &["stride=1"])
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("grid:"), "{e}");
    let e = run(STRIDED, "nothere", [1, 1, 1], [32, 1, 1], &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("strided"), "{e}");
    let e = run(STRIDED, "jump", [1, 1, 1], [32, 1, 1], &["n=0"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("brx.idx"), "{e}");
}

#[test]
fn partial_warps_and_every_block() {
    // 48 threads: warp 1 has 16 lanes; stride-1 access by 16 lanes = 64 B = 2 sectors.
    let (m, _) = parse(STRIDED);
    let opts = Options {
        sampling: Sampling::All,
        ..Options::default()
    };
    let e = emulate(
        &m,
        "strided",
        LaunchDims {
            grid: [5, 1, 1],
            block: [48, 1, 1],
        },
        &KernelArg::parse_all(&["stride=1"]).unwrap(),
        opts,
    )
    .unwrap();
    assert_eq!(e.warps.len(), 10);
    assert_eq!(e.warps[1].threads, 16);
    assert_eq!(e.warps[1].summary().global_load_sectors, 2);
}

#[test]
fn matmul_tiled_counts_and_conflict_free_shared_tiles() {
    // Entry 15 (4 ld.param, 7 mov/shl/add, mul.lo, setp, mov.f32, bra), preheader 22, one tile
    // per 16 columns: 2 ld.global + 2 st.shared + bar, 16 x (2 ld.shared + fma), bar and 5 loop
    // instructions = 59, exit 7 (address, st.global, ret): 44 + 59 T with T = N / 16.
    let e = run(
        &fixture("basics.nvcc-sm75.ptx"),
        "matmul_tiled",
        [4, 4, 1],
        [16, 16, 1],
        &["3=64"],
    )
    .unwrap();
    assert!(
        counts(&e).iter().all(|&c| c == 44 + 59 * 4),
        "{:?}",
        counts(&e)
    );
    let s = e.warps[0].summary();
    // 22 shared requests per tile: 2 stores, 16 B-tile reads, and the 16 A-tile reads
    // As[ty][k] that ptxas folds into 4 LDS.128 (each lane reads 4 consecutive words from a
    // 16-byte aligned start). A warp is two rows of 16: the B-tile reads are broadcast in pairs,
    // the A-tile reads hit two 16-byte groups (banks 0-3 and 16-19 for rows 0 and 1), the stores
    // 32 consecutive words: no conflict anywhere.
    assert_eq!(s.shared_requests, 22 * 4);
    assert_eq!(s.shared_bank_conflict_ways, 1);
    assert_eq!(s.barriers, 2 * 4);
}

#[test]
fn every_fixture_kernel_emulates_without_panicking() {
    // Every kernel of every fixture, every scalar parameter 64 (floats 0.5), two launch shapes:
    // the emulator must finish or return an error, never panic or run away.
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ptx");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
        .collect();
    files.sort();
    let mut ran = 0;
    for p in files {
        let text = std::fs::read_to_string(&p).unwrap();
        let (m, _) = parse(&text);
        for f in m.entries() {
            let args: Vec<String> = f
                .params
                .iter()
                .enumerate()
                .filter(|(_, q)| {
                    q.array.is_none() && !matches!(q.ty.as_str(), "u64" | "b64" | "s64")
                })
                .map(|(k, q)| {
                    if q.ty.starts_with('f') {
                        format!("{k}=0.5")
                    } else {
                        format!("{k}=64")
                    }
                })
                .collect();
            for (grid, block) in [([3, 1, 1], [64, 1, 1]), ([2, 3, 1], [16, 8, 1])] {
                let opts = Options {
                    step_budget: 200_000,
                    sampling: Sampling::Classes,
                    ..Options::default()
                };
                let args = KernelArg::parse_all(&args).unwrap();
                let r = emulate(&m, &f.name, LaunchDims { grid, block }, &args, opts);
                // Errors must name the cause: gaussian_filter and landmark_similarity with a
                // radius of 64 run (2 * 64 + 1)^2 or ^3 iterations and hit the budget.
                if let Err(err) = &r {
                    assert!(err.is_usage() && !err.to_string().is_empty());
                }
                if let Ok(e) = &r {
                    assert!(!e.warps.is_empty());
                }
                ran += 1;
            }
        }
    }
    assert!(ran >= 40, "only {ran} emulations ran");
}

/// A kernel reading its divisor from a `__constant__` table the host fills by name (`table`,
/// four floats), as the pnpoly tuning kernel reads its polygon: the loop divides by the table's
/// second entry and skips a store when that entry is zero.
const CONST_TABLE: &str = r#"
.version 7.0
.target sm_75
.address_size 64
.const .align 4 .b8 table[16];
.visible .entry by_table(.param .u64 out)
{
    .reg .pred %p<2>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u64 %rd2, table;
    add.s64 %rd3, %rd2, 4;
    ld.const.f32 %f1, [%rd3];
    mov.f32 %f2, 0f3F800000;
    div.rn.f32 %f3, %f2, %f1;
    setp.eq.f32 %p1, %f1, 0f00000000;
    @%p1 bra DONE;
    st.global.f32 [%rd1], %f3;
DONE:
    ret;
}
"#;

/// `by_table` on one warp, with `hint` as `(NAME, SPEC)` when given.
fn by_table(hint: Option<(&str, &str)>) -> kerneltime::Result<Emulation> {
    use kerneltime::emulate::{emulate_with, BufferHint, DataSpec};
    let (m, _) = parse(CONST_TABLE);
    let args = KernelArg::parse_all(&["out=1048576"])?;
    let data = match hint {
        Some((name, spec)) => vec![BufferHint {
            param: name.into(),
            hint: DataSpec::parse("data", spec)?.load(None)?,
        }],
        None => vec![],
    };
    let launch = LaunchDims {
        grid: [1, 1, 1],
        block: [32, 1, 1],
    };
    emulate_with(&m, "by_table", launch, &args, &data, Options::default())
}

#[test]
fn a_hinted_constant_table_makes_divides_and_branches_exact() {
    use kerneltime::workload::trace::LatencyClass;
    let classes =
        |e: &Emulation| -> Vec<LatencyClass> { e.warps[0].ops.iter().map(|o| o.latency).collect() };
    let stores = |e: &Emulation| e.warps[0].accesses.iter().filter(|a| a.store).count();
    // Without a hint the table is whatever the host copied there: the divide is taken as an
    // ordinary one, the branch depends on unknown data and both paths run.
    let e = by_table(None).unwrap();
    assert!(classes(&e).contains(&LatencyClass::Fp32Divide));
    assert_eq!(e.warps[0].data_dependent_branches, 1);
    assert_eq!(stores(&e), 1);
    let says_unknown = |e: &Emulation| {
        e.notes
            .iter()
            .any(|n| n.contains("IEEE divide by a value the emulator cannot know (32 lanes)"))
    };
    assert!(says_unknown(&e), "{:?}", e.notes);
    // A zero table (a __constant__ array nobody filled): 1/0 takes ptxas's slow path and the
    // store is skipped for certain.
    let e = by_table(Some(("table", "const:0"))).unwrap();
    assert!(classes(&e).contains(&LatencyClass::Fp32DivideSlow));
    assert!(!classes(&e).contains(&LatencyClass::Fp32Divide));
    assert_eq!(e.warps[0].data_dependent_branches, 0);
    assert_eq!(stores(&e), 0);
    assert!(
        e.notes
            .iter()
            .any(|n| n.contains("module variable `table`")),
        "{:?}",
        e.notes
    );
    // A table of twos: 1/2 stays on the fast path and the store runs.
    let e = by_table(Some(("table", "const:2"))).unwrap();
    assert!(classes(&e).contains(&LatencyClass::Fp32Divide));
    assert!(!says_unknown(&e), "{:?}", e.notes);
    assert_eq!(e.warps[0].data_dependent_branches, 0);
    assert_eq!(stores(&e), 1);
    // A name that is neither a parameter nor a module variable is an error naming both kinds.
    let err = by_table(Some(("tabel", "const:0")))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`tabel` names neither a parameter") && err.contains("(table)"),
        "{err}"
    );
}

/// A predicate made a number (`selp.u32 %r, 1, 0, %p`) feeding one add, one feeding two adds,
/// and one feeding one `selp`.
const SELECTS: &str = r#"
.version 7.0
.target sm_75
.address_size 64
.visible .entry counts(.param .u64 p)
{
    .reg .pred %p<3>;
    .reg .b32 %r<9>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p];
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 8;
    selp.u32 %r2, 1, 0, %p1;
    add.s32 %r3, %r1, %r2;
    selp.u32 %r4, 1, 0, %p1;
    add.s32 %r5, %r1, %r4;
    add.s32 %r6, %r5, %r4;
    setp.gt.u32 %p2, %r1, 3;
    selp.u32 %r7, 1, 0, %p1;
    selp.b32 %r8, %r7, %r6, %p2;
    st.global.u32 [%rd1], %r3;
    st.global.u32 [%rd1+4], %r8;
    ret;
}
"#;

#[test]
fn a_predicate_made_a_number_folds_into_a_select_not_into_an_add() {
    use kerneltime::workload::trace::LatencyClass;
    let e = run(SELECTS, "counts", [1, 1, 1], [32, 1, 1], &["0=1048576"]).unwrap();
    let c: Vec<LatencyClass> = e.warps[0].ops.iter().map(|o| o.latency).collect();
    // ptxas 12.9 for sm_75 (cuobjdump): the `selp` feeding one add is `IADD3 R2, R3, 0x1` and
    // `@P0 IMAD.MOV R2, R3`, two instructions as in the PTX, so it is not folded; nor is the
    // one with two readers; the one feeding one `selp` is one `@P0 SEL R0, RZ, 0x1, P1`.
    // ld.param, mov, setp, selp, add, selp, add, add, setp, selp (folded), selp, st, st, ret
    assert_eq!(c[9], LatencyClass::Folded, "{c:?}");
    let folded: Vec<usize> = (0..c.len())
        .filter(|&k| c[k] == LatencyClass::Folded)
        .collect();
    assert_eq!(folded, [9], "{c:?}");
}
