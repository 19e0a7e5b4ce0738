//! Register spills as local-memory traffic. PTX has no spill instructions (ptxas adds them when
//! it runs out of registers), so the spills a resource report lists (`N bytes spill stores, M
//! bytes spill loads`: the bytes of the spill instructions in the code) are placed into the
//! traces here: each spilled 4-byte word is one static `st.local`/`ld.local`, and a static
//! instruction of the kernel is taken to be as likely as any other to sit next to one, so a
//! warp that issues `n` instructions of a kernel of `N` static instructions issues
//! `n x words / N` of each, spread evenly through its trace (stores and loads of the same
//! frame slots, in turn). They go through L1 like the kernel's own local accesses.
//!
//! Known compensation: a load takes its slot by its own count, so with more spill loads than
//! stores the loads run ahead and read slots no store wrote yet (missing both caches), where
//! ptxas reloads only what it spilled. Pairing them (2026-12-08) put 16 of 24 spilling
//! convolution configurations at 0.45-0.65 of their measured time, from 0.81-1.06: the misses
//! stand in for spill traffic the static byte count under-states, so the pairing waits for a
//! better estimate of the dynamic spill volume.
//!
//! Nothing here decides what they cost; the trace model times them like any local access.

use crate::emulate::{local_sector_address, LaunchDims, WARP};
use crate::memory::coalescing;
use crate::workload::trace::{LatencyClass, MemAccess, MemSpace, TraceOp, WarpTrace};

/// Bytes per spilled word.
const WORD: u64 = 4;

/// The dynamic spill stores and loads a warp of `ops` instructions issues.
pub fn dynamic_spills(
    ops: usize,
    store_bytes: u32,
    load_bytes: u32,
    static_instr: usize,
) -> (u64, u64) {
    let n = static_instr.max(1) as f64;
    let per =
        |bytes: u32| (ops as f64 * (u64::from(bytes).div_ceil(WORD)) as f64 / n).round() as u64;
    (per(store_bytes), per(load_bytes))
}

/// `w` with its spill stores and loads inserted (module doc).
pub fn with_spills(
    w: &WarpTrace,
    store_bytes: u32,
    load_bytes: u32,
    static_instr: usize,
    launch: LaunchDims,
) -> WarpTrace {
    let (stores, loads) = dynamic_spills(w.ops.len(), store_bytes, load_bytes, static_instr);
    let total = stores + loads;
    if total == 0 || w.ops.is_empty() {
        return w.clone();
    }
    let slots = u64::from(store_bytes.max(load_bytes)).div_ceil(WORD).max(1);
    let mut out = WarpTrace {
        ops: Vec::with_capacity(w.ops.len() + total as usize),
        accesses: Vec::with_capacity(w.accesses.len() + total as usize),
        sector_ids: Vec::with_capacity(w.sector_ids.len() + 4 * total as usize),
        ..w.clone()
    };
    let lanes = w.threads.min(WARP as u32);
    let mut addrs = Vec::with_capacity(WARP);
    let mut scratch = Vec::new();
    let (mut done_st, mut done_ld) = (0u64, 0u64);
    let every = w.ops.len() as f64 / total as f64;
    let mut next = every / 2.0;
    for (k, op) in w.ops.iter().enumerate() {
        let mut op = *op;
        if op.access != TraceOp::NO_ACCESS {
            let mut a = w.accesses[op.access as usize];
            let ids = &w.sector_ids[a.sector_start as usize..a.sector_end as usize];
            a.sector_start = out.sector_ids.len() as u32;
            out.sector_ids.extend_from_slice(ids);
            a.sector_end = out.sector_ids.len() as u32;
            op.access = out.accesses.len() as u32;
            out.accesses.push(a);
        }
        out.ops.push(op);
        while (k + 1) as f64 > next && done_st + done_ld < total {
            next += every;
            // Stores and loads in turn, in proportion.
            let store =
                done_ld * stores >= done_st * loads.max(1) && done_st < stores || done_ld >= loads;
            let j = if store { done_st } else { done_ld };
            if store {
                done_st += 1;
            } else {
                done_ld += 1;
            }
            let slot = (j % slots) * WORD;
            addrs.clear();
            for lane in 0..u64::from(lanes) {
                addrs.push(local_sector_address(slot, lane, w, launch));
            }
            let start = out.sector_ids.len() as u32;
            let lines = coalescing::sectors_of(&addrs, WORD, &mut scratch);
            out.sector_ids.extend_from_slice(&scratch);
            out.accesses.push(MemAccess {
                instr: op.instr,
                space: MemSpace::Local,
                store,
                lanes: lanes as u8,
                bytes_per_lane: WORD as u16,
                addresses_known: true,
                sectors: scratch.len() as u32,
                lines,
                bank_ways: 0,
                sector_start: start,
                sector_end: out.sector_ids.len() as u32,
                atomic: Default::default(),
                cache: Default::default(),
                same_address_lanes: 0,
                distinct_addresses: 0,
            });
            out.ops.push(TraceOp {
                instr: op.instr,
                latency: if store {
                    LatencyClass::LocalStore
                } else {
                    LatencyClass::LocalLoad
                },
                access: out.accesses.len() as u32 - 1,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spills_are_spread_in_proportion_to_the_static_code() {
        // 880 bytes of spill stores and loads = 220 words each; a kernel of 1,000 static
        // instructions whose warp issues 10,000: 10,000 x 220 / 1,000 = 2,200 of each.
        assert_eq!(dynamic_spills(10_000, 880, 880, 1_000), (2_200, 2_200));
        assert_eq!(dynamic_spills(10_000, 0, 0, 1_000), (0, 0));
        let launch = LaunchDims {
            grid: [1, 1, 1],
            block: [32, 1, 1],
        };
        let w = WarpTrace {
            threads: 32,
            ops: (0..100)
                .map(|k| TraceOp {
                    instr: k,
                    latency: LatencyClass::Fp32,
                    access: TraceOp::NO_ACCESS,
                })
                .collect(),
            ..Default::default()
        };
        // 8 bytes of each on 20 static instructions: 2 words each, 100 x 2 / 20 = 10 each.
        let s = with_spills(&w, 8, 8, 20, launch);
        assert_eq!(s.ops.len(), 120);
        let st = s.accesses.iter().filter(|a| a.store).count();
        assert_eq!((st, s.accesses.len() - st), (10, 10));
        // 32 lanes x 4 bytes side by side: 4 sectors each.
        assert!(s
            .accesses
            .iter()
            .all(|a| a.sectors == 4 && a.space == MemSpace::Local));
        // Spread out: no two spill accesses next to each other among the first 60 ops.
        let at: Vec<usize> = s
            .ops
            .iter()
            .enumerate()
            .filter(|(_, o)| o.access != TraceOp::NO_ACCESS)
            .map(|(k, _)| k)
            .collect();
        assert!(at.windows(2).all(|p| p[1] - p[0] >= 5), "{at:?}");
    }
}
