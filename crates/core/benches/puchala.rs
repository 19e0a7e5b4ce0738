//! Speed of the puchala2022 model: one dwt-lattice prediction at N = 2^20, K = 14 on the
//! paper's RTX 2080 profile (target: mean <= 5 us; the paper's Python took 3.5 ms), and the
//! paper's whole grid of 720 predictions (target: <= 5 ms).
//!
//! The grid uses the RTX 2080 profile from the catalogue for all six devices' shapes when the
//! other five profiles are absent, by building them from Table 3 values here.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use kerneltime::device::{catalogue, Device};
use kerneltime::model::puchala::paper::{device_grid, PAPER_DEVICES};
use kerneltime::model::puchala::{predict, Builtin, Request};
use kerneltime::workload::params::ParamValues;

/// The six Table 3 profiles: from the catalogue when present, otherwise built from the table.
fn paper_devices() -> Vec<Device> {
    // cc, name, F, SMs, cores/SM, blocks/SM, warps/SM, matrix (t_p, t_m), lattice (t_p, t_m)
    let table = [
        (
            "2.1",
            PAPER_DEVICES[0],
            1550.0,
            2,
            32,
            8,
            48,
            (18.7, 9.5),
            (11.0, 33.0),
        ),
        (
            "3.0",
            PAPER_DEVICES[1],
            706.0,
            2,
            192,
            16,
            64,
            (11.2, 33.0),
            (11.2, 47.0),
        ),
        (
            "5.0",
            PAPER_DEVICES[2],
            1020.0,
            5,
            128,
            32,
            64,
            (8.7, 17.0),
            (7.9, 15.0),
        ),
        (
            "6.1",
            PAPER_DEVICES[3],
            1760.0,
            10,
            128,
            32,
            64,
            (6.3, 18.5),
            (5.8, 19.0),
        ),
        (
            "7.5",
            PAPER_DEVICES[4],
            1200.0,
            30,
            64,
            16,
            32,
            (5.2, 1.1),
            (5.0, 12.5),
        ),
        (
            "7.5",
            PAPER_DEVICES[5],
            1545.0,
            68,
            64,
            16,
            32,
            (5.2, 1.1),
            (5.6, 12.3),
        ),
    ];
    table
        .iter()
        .map(|(cc, name, f, sms, cores, blocks, warps, m, l)| {
            if let Ok(d) = catalogue::find(name) {
                return d.clone();
            }
            let text = format!(
                "name = \"{name}\"\narchitecture = \"paper\"\ncompute_capability = \"{cc}\"\nsm_count = {sms}\ncores_per_sm = {cores}\nbase_clock_mhz = {f}\nboost_clock_mhz = {f}\nmemory_bandwidth_gbs = 1\nl2_cache_bytes = 1\nl1_shared_per_sm_bytes = 1\nsource = \"bench\"\n[limits]\nmax_blocks_per_sm = {blocks}\nmax_warps_per_sm = {warps}\nmax_threads_per_block = 1024\n[puchala.dwt-matrix]\nt_p_us = {}\nt_m_cycles = {}\n[puchala.dwt-lattice]\nt_p_us = {}\nt_m_cycles = {}\n",
                m.0, m.1, l.0, l.1
            );
            Device::from_toml(&text, "bench").expect("bench profile")
        })
        .collect()
}

fn benches(c: &mut Criterion) {
    let rtx2080 = catalogue::find("GeForce RTX 2080 (puchala2022)")
        .expect("the paper's RTX 2080 profile is in the catalogue")
        .clone();
    let lattice = Builtin::DwtLattice.spec();
    let params = ParamValues::new([("n", (1u64 << 20) as f64), ("k", 14.0)]);
    c.bench_function("puchala dwt-lattice N=2^20 K=14 RTX 2080", |b| {
        b.iter(|| {
            let req = Request {
                kernel: &lattice,
                params: black_box(&params),
                launch: None,
                t_p_us: 5.6,
                t_m_cycles: 12.3,
            };
            black_box(predict(&rtx2080, &req).expect("prediction"))
        })
    });

    let devices = paper_devices();
    c.bench_function("puchala paper grid (720 predictions)", |b| {
        b.iter(|| {
            let mut n = 0;
            for d in &devices {
                n += device_grid(black_box(d)).expect("grid").len() * 2;
            }
            assert_eq!(n, 720);
            n
        })
    });
}

criterion_group!(puchala, benches);
criterion_main!(puchala);
