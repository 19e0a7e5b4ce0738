//! One warp running the kernel: a SIMT stack with reconvergence at immediate post-dominators,
//! guard predicates, unknown-predicate branches (wang2019's conservative rule), memory accesses
//! with coalescing and bank conflicts, and the step budget. The result is a `WarpTrace`.
//!
//! Calls into `.func`s are followed by `frame` (each call runs the callee's own SIMT stack on
//! the calling lanes, with its own registers and parameter space); vector moves and texture
//! fetches are `vector`'s.

mod frame;
mod vector;

use std::collections::HashSet;

use super::alu::{alu, fast_lanes, fput, Lanes, View, UNKNOWN};
use super::args::ArgValue;
use super::decode::{DInst, Decoded, OpK, Special, Src, Ty};
use super::decode::{LOCAL_WINDOW, SHARED_WINDOW};
use super::launch::LaunchDims;
use super::sampling::linear;
use super::WARP;
use crate::error::{Error, Result};
use crate::memory::{banks, coalescing};
use crate::workload::trace::{MemAccess, MemSpace, TraceOp, WarpTrace};
use kerneltime_ptx::classify::Space;

#[derive(Debug, Clone, Copy)]
struct Entry {
    pc: usize,
    mask: u32,
    reconv: usize,
}

pub(super) struct Emulator<'a> {
    dec: &'a Decoded,
    params: Vec<Option<u64>>,
    launch: LaunchDims,
    budget: u64,
    /// Call frames: parameter spaces, which functions are running, the depth.
    frames: frame::Frames,
    regs: Vec<Lanes>,
    addr_scratch: Vec<u64>,
    sector_scratch: Vec<u64>,
    /// `%tid.x`, `%tid.y`, `%tid.z` and `%laneid` of the current warp.
    special: [Lanes; 4],
}

impl<'a> Emulator<'a> {
    pub(super) fn new(
        dec: &'a Decoded,
        params: Vec<Option<u64>>,
        fields: Vec<Vec<(u64, ArgValue)>>,
        launch: LaunchDims,
        budget: u64,
    ) -> Self {
        Self {
            dec,
            params,
            launch,
            budget,
            frames: frame::Frames::new(fields, dec.funcs.len()),
            regs: vec![UNKNOWN; dec.reg_count],
            addr_scratch: Vec::with_capacity(64),
            sector_scratch: Vec::with_capacity(128),
            special: [UNKNOWN; 4],
        }
    }

    /// Sets the per-lane special registers for a warp.
    fn set_special(&mut self, warp: u32) {
        let b = self.launch.block;
        let (bx, by) = (u64::from(b[0]), u64::from(b[1]));
        for k in 0..WARP {
            let t = u64::from(warp) * WARP as u64 + k as u64;
            self.special[0].v[k] = t % bx;
            self.special[1].v[k] = (t / bx) % by;
            self.special[2].v[k] = t / (bx * by);
            self.special[3].v[k] = k as u64;
        }
        for l in self.special.iter_mut() {
            l.known = u32::MAX;
        }
    }

    /// A source for every lane: values and the known mask.
    fn view(&self, s: Src, ty: Ty, block: [u32; 3], warp: u32) -> View<'_> {
        match s {
            Src::Reg(r) => View::Lanes(&self.regs[r as usize]),
            Src::Imm(v) => View::Uniform(v),
            Src::FImm(bits) => {
                let x = f64::from_bits(bits);
                View::Uniform(if ty.float {
                    fput(x, ty.bits).unwrap_or(bits)
                } else {
                    x as i64 as u64
                })
            }
            Src::Addr(a) => View::Uniform(a),
            Src::Param(p) => match self.params.get(p as usize).copied().flatten() {
                Some(v) => View::Uniform(v),
                None => View::Unknown,
            },
            Src::Unknown => View::Unknown,
            Src::Special(sp) => {
                let b = self.launch.block;
                match sp {
                    Special::Ntid(d) => View::Uniform(u64::from(b[d as usize])),
                    Special::Ctaid(d) => View::Uniform(u64::from(block[d as usize])),
                    Special::Nctaid(d) => View::Uniform(u64::from(self.launch.grid[d as usize])),
                    Special::Warpid => View::Uniform(u64::from(warp)),
                    Special::Nwarpid => View::Uniform(u64::from(self.launch.warps_per_block())),
                    Special::Unknowable => View::Unknown,
                    Special::Laneid => View::Lanes(&self.special[3]),
                    Special::Tid(d) => View::Lanes(&self.special[(d as usize).min(2)]),
                }
            }
        }
    }

    fn write(&mut self, r: Option<u16>, exec: u32, vals: &[u64; WARP], known: u32) {
        if let Some(r) = r {
            let reg = &mut self.regs[r as usize];
            let mut m = exec;
            while m != 0 {
                let l = m.trailing_zeros() as usize;
                m &= m - 1;
                reg.v[l] = vals[l];
            }
            reg.known = (reg.known & !exec) | (known & exec);
        }
    }

    fn set_unknown(&mut self, dst: &[Option<u16>; 4], exec: u32) {
        for r in dst.iter().flatten() {
            self.regs[*r as usize].known &= !exec;
        }
    }

    /// Runs one warp of a block to completion.
    pub(super) fn run_warp(&mut self, block: [u32; 3], warp: u32) -> Result<WarpTrace> {
        let tpb = self.launch.threads_per_block();
        let first = warp * WARP as u32;
        let threads = (tpb - first).min(WARP as u32);
        let full: u32 = if threads >= 32 {
            u32::MAX
        } else {
            (1u32 << threads) - 1
        };
        for r in self.regs.iter_mut() {
            r.known = 0;
        }
        self.frames.reset();
        self.set_special(warp);
        let mut trace = WarpTrace {
            block,
            block_linear: linear(&self.launch, block),
            warp,
            threads,
            ..Default::default()
        };
        let mut noted: HashSet<u32> = HashSet::new();
        self.run_frame(0, full, block, warp, &mut trace, &mut noted)?;
        Ok(trace)
    }

    /// Runs function `func` of the program (0 is the kernel) on the lanes of `mask` until they
    /// all return; returns the lanes that left the warp (`exit`, or `ret` from the kernel).
    fn run_frame(
        &mut self,
        func: usize,
        mask: u32,
        block: [u32; 3],
        warp: u32,
        trace: &mut WarpTrace,
        noted: &mut HashSet<u32>,
    ) -> Result<u32> {
        let (first, nblocks) = {
            let f = &self.dec.funcs[func];
            (f.block_start, f.block_end)
        };
        let mut exited = 0u32;
        let mut stack = vec![Entry {
            pc: first,
            mask,
            reconv: nblocks,
        }];
        while let Some(top) = stack.last().copied() {
            if top.mask == 0 || top.pc == top.reconv || top.pc >= nblocks || top.pc < first {
                stack.pop();
                continue;
            }
            let b = top.pc;
            let blk = self.dec.blocks[b];
            let (start, end) = (blk.start, blk.end);
            if trace.ops.len() as u64 + (end - start) as u64 > self.budget {
                let line = self.dec.insts.get(start).map_or(blk.line, |d| d.line);
                return Err(Error::invalid(
                    "ptx",
                    format!(
                        "warp {warp} of block ({}, {}, {}) issued more than {} instructions (the per-warp step budget) near PTX line {line}: a loop there runs that long, or does not end, for these arguments; narrow the launch (smaller values for the arguments that bound the loop, such as the problem size or iteration count) or raise the budget (--step-budget)",
                        block[0], block[1], block[2], self.budget
                    ),
                ));
            }
            let mut active = top.mask;
            let mut next = b + 1;
            let mut diverged = false;
            for k in start..end {
                let d = &self.dec.insts[k];
                let mut exec = active;
                let mut guard_unknown = 0u32;
                if let Some((g, neg)) = d.guard {
                    let p = &self.regs[g as usize];
                    let mut t = 0u32;
                    let mut m = active;
                    while m != 0 {
                        let l = m.trailing_zeros() as usize;
                        m &= m - 1;
                        if (p.v[l] != 0) != neg {
                            t |= 1 << l;
                        }
                    }
                    guard_unknown = active & !p.known;
                    exec = (t & p.known) | guard_unknown;
                }
                let mut op = TraceOp {
                    instr: k as u32,
                    latency: d.latency,
                    access: TraceOp::NO_ACCESS,
                };
                match d.op {
                    OpK::Bra => {
                        trace.ops.push(op);
                        let Some(target) = d.target else {
                            return Err(Error::invalid(
                                "ptx",
                                format!(
                                    "line {}: branch to a label the emulator cannot find",
                                    d.line
                                ),
                            ));
                        };
                        let back = self.dec.back_edges.contains(&(b, target));
                        let known_taken = exec & !guard_unknown;
                        let (taken, fall) = if guard_unknown == 0 {
                            (exec, active & !exec)
                        } else if back {
                            if noted.insert(d.line) {
                                trace.notes.push(format!(
                                    "line {}: loop branch depends on data for {} lanes; those lanes leave the loop here (conservative rule cannot bound it)",
                                    d.line,
                                    guard_unknown.count_ones()
                                ));
                            }
                            (known_taken, active & !known_taken)
                        } else {
                            if noted.insert(d.line) {
                                trace.notes.push(format!(
                                    "line {}: data-dependent branch ({} lanes); both paths assumed to run (wang2019's conservative rule)",
                                    d.line,
                                    guard_unknown.count_ones()
                                ));
                            }
                            (exec, (active & !exec) | guard_unknown)
                        };
                        if d.guard.is_none() || fall == 0 {
                            next = target;
                        } else if taken == 0 {
                            next = b + 1;
                        } else {
                            let r = blk.ipdom.min(nblocks);
                            if let Some(t) = stack.last_mut() {
                                t.pc = r;
                            }
                            stack.push(Entry {
                                pc: b + 1,
                                mask: fall,
                                reconv: r,
                            });
                            stack.push(Entry {
                                pc: target,
                                mask: taken,
                                reconv: r,
                            });
                            diverged = true;
                        }
                    }
                    OpK::Ret => {
                        trace.ops.push(op);
                        let leaving = exec & !guard_unknown;
                        if func == 0 || d.opcode == "exit" {
                            exited |= leaving;
                        }
                        for e in stack.iter_mut() {
                            e.mask &= !leaving;
                        }
                        active &= !leaving;
                        if d.guard.is_none() || active == 0 {
                            stack.pop();
                            diverged = true;
                        }
                    }
                    OpK::BrxIdx => {
                        return Err(Error::invalid(
                            "ptx",
                            format!("line {}: `brx.idx` jump tables cannot be emulated", d.line),
                        ));
                    }
                    OpK::Call => {
                        trace.ops.push(op);
                        match d.target {
                            Some(call) => {
                                let gone =
                                    self.call(call, exec, d.line, block, warp, trace, noted)?;
                                if gone != 0 {
                                    for e in stack.iter_mut() {
                                        e.mask &= !gone;
                                    }
                                    active &= !gone;
                                    exited |= gone;
                                    if active == 0 {
                                        stack.pop();
                                        diverged = true;
                                    }
                                }
                            }
                            // Not followed (`decode` says why in the launch's notes).
                            None => self.set_unknown(&d.dst, exec),
                        }
                    }
                    OpK::Tex => {
                        self.texture(d, k, exec, block, warp, trace, &mut op, noted);
                        trace.ops.push(op);
                    }
                    OpK::VecMov | OpK::Pack | OpK::Unpack => {
                        trace.ops.push(op);
                        self.vector_move(d, exec, guard_unknown, block, warp);
                    }
                    OpK::Load | OpK::Store => {
                        let Some(mem) = d.mem else {
                            trace.ops.push(op);
                            continue;
                        };
                        if mem.space == Space::Param {
                            trace.ops.push(op);
                            self.param_access(d, mem, exec, guard_unknown, block, warp);
                            continue;
                        }
                        // Addresses of executing lanes.
                        let mut unknown_lanes = 0u32;
                        let mut addrs = std::mem::take(&mut self.addr_scratch);
                        {
                            let base = self.view(
                                mem.base,
                                Ty {
                                    bits: 64,
                                    signed: false,
                                    float: false,
                                },
                                block,
                                warp,
                            );
                            let bk = base.known();
                            addrs.clear();
                            let mut m = exec;
                            while m != 0 {
                                let l = m.trailing_zeros() as usize;
                                m &= m - 1;
                                if bk & (1 << l) != 0 {
                                    addrs.push(base.get(l).wrapping_add(mem.offset as u64));
                                } else {
                                    unknown_lanes += 1;
                                }
                            }
                        }
                        self.addr_scratch = addrs;
                        let space = match mem.space {
                            Space::Shared => MemSpace::Shared,
                            Space::Local => MemSpace::Local,
                            Space::Const => MemSpace::Const,
                            Space::Generic => match self.addr_scratch.first() {
                                Some(&a)
                                    if (SHARED_WINDOW..SHARED_WINDOW + (1 << 32)).contains(&a) =>
                                {
                                    MemSpace::Shared
                                }
                                Some(&a)
                                    if (LOCAL_WINDOW..LOCAL_WINDOW + (1 << 40)).contains(&a) =>
                                {
                                    MemSpace::Local
                                }
                                _ => MemSpace::Global,
                            },
                            _ => MemSpace::Global,
                        };
                        if space == MemSpace::Shared && mem.space == Space::Generic {
                            for a in self.addr_scratch.iter_mut() {
                                *a -= SHARED_WINDOW;
                            }
                        }
                        if space == MemSpace::Local {
                            // Local memory is interleaved per lane by the hardware (each lane's
                            // word at the same offset sits side by side).
                            let mut m = exec;
                            let mut idx = 0;
                            while m != 0 {
                                let l = m.trailing_zeros() as u64;
                                m &= m - 1;
                                if let Some(a) = self.addr_scratch.get_mut(idx) {
                                    *a = (*a & !3).wrapping_mul(WARP as u64) + l * 4;
                                }
                                idx += 1;
                            }
                        }
                        if unknown_lanes > 0 && noted.insert(d.line) {
                            trace.notes.push(format!(
                                "line {}: address unknown for {unknown_lanes} lanes (it depends on loaded data); each counted as its own sector",
                                d.line
                            ));
                        }
                        let lanes = exec.count_ones();
                        let mut acc = MemAccess {
                            instr: k as u32,
                            space,
                            store: d.op == OpK::Store,
                            lanes: lanes as u8,
                            bytes_per_lane: mem.bytes,
                            addresses_known: unknown_lanes == 0,
                            sectors: 0,
                            lines: 0,
                            bank_ways: 0,
                            sector_start: trace.sector_ids.len() as u32,
                            sector_end: trace.sector_ids.len() as u32,
                        };
                        if lanes > 0 {
                            if space == MemSpace::Shared {
                                acc.bank_ways = banks::conflict_ways(
                                    &self.addr_scratch,
                                    u64::from(mem.bytes),
                                    &mut self.sector_scratch,
                                )
                                .max(1)
                                    + unknown_lanes.min(31);
                                acc.bank_ways = acc.bank_ways.min(32);
                                acc.sectors = acc.bank_ways;
                            } else {
                                acc.lines = coalescing::sectors_of(
                                    &self.addr_scratch,
                                    u64::from(mem.bytes),
                                    &mut self.sector_scratch,
                                ) + unknown_lanes;
                                acc.sectors = self.sector_scratch.len() as u32 + unknown_lanes;
                                trace.sector_ids.extend_from_slice(&self.sector_scratch);
                                acc.sector_end = trace.sector_ids.len() as u32;
                            }
                            op.access = trace.accesses.len() as u32;
                            trace.accesses.push(acc);
                        }
                        op.latency = match (space, d.op == OpK::Store) {
                            (MemSpace::Shared, false) => {
                                crate::workload::trace::LatencyClass::SharedLoad
                            }
                            (MemSpace::Shared, true) => {
                                crate::workload::trace::LatencyClass::SharedStore
                            }
                            (MemSpace::Local, false) => {
                                crate::workload::trace::LatencyClass::LocalLoad
                            }
                            (MemSpace::Local, true) => {
                                crate::workload::trace::LatencyClass::LocalStore
                            }
                            (MemSpace::Const, _) => crate::workload::trace::LatencyClass::ConstLoad,
                            (MemSpace::Global, false) => {
                                crate::workload::trace::LatencyClass::GlobalLoad
                            }
                            (MemSpace::Global, true) => {
                                crate::workload::trace::LatencyClass::GlobalStore
                            }
                        };
                        trace.ops.push(op);
                        if d.op == OpK::Load {
                            self.set_unknown(&d.dst, exec);
                        }
                    }
                    OpK::Bar | OpK::Opaque => {
                        trace.ops.push(op);
                        self.set_unknown(&d.dst, exec);
                    }
                    _ => {
                        trace.ops.push(op);
                        self.arith(d, exec, guard_unknown, block, warp);
                    }
                }
                if diverged {
                    break;
                }
            }
            if !diverged {
                if let Some(t) = stack.last_mut() {
                    t.pc = next;
                    t.mask = active;
                }
            }
        }
        Ok(exited)
    }

    fn arith(&mut self, d: &DInst, exec: u32, guard_unknown: u32, block: [u32; 3], warp: u32) {
        let n = d.nsrc as usize;
        let src_ty = if d.op == OpK::Cvt { d.ty_src } else { d.ty };
        let mut out = [0u64; WARP];
        let mut ok = 0u32;
        {
            let mut s = [View::Unknown; 4];
            let mut known = exec;
            #[allow(clippy::needless_range_loop)] // `k` also picks the operand type
            for k in 0..n.min(4) {
                // selp/setp's predicate operands are 1-bit values.
                let ty = if k == 2 && matches!(d.op, OpK::Selp | OpK::Setp) {
                    Ty {
                        bits: 1,
                        signed: false,
                        float: false,
                    }
                } else {
                    src_ty
                };
                s[k] = self.view(d.srcs[k], ty, block, warp);
                known &= s[k].known();
            }
            if fast_lanes(d, &s, known, &mut out) {
                ok = known;
            } else {
                let mut m = known;
                while m != 0 {
                    let l = m.trailing_zeros() as usize;
                    m &= m - 1;
                    if let Some(v) = alu(d, s[0].get(l), s[1].get(l), s[2].get(l), s[3].get(l)) {
                        out[l] = v;
                        ok |= 1 << l;
                    }
                }
            }
        }
        // Lanes whose guard was unknown may or may not have written: unknown.
        ok &= !guard_unknown;
        self.write(d.dst[0], exec, &out, ok);
        if d.op == OpK::Setp && d.dst[1].is_some() {
            let mut neg = [0u64; WARP];
            for l in 0..WARP {
                neg[l] = u64::from(out[l] == 0);
            }
            self.write(d.dst[1], exec, &neg, ok);
        } else if d.dst[1].is_some() {
            let extra = [d.dst[1], d.dst[2], d.dst[3], None];
            self.set_unknown(&extra, exec);
        }
    }
}
