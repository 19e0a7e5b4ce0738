//! One block's warps running the kernel: a SIMT stack per warp with reconvergence at immediate
//! post-dominators, guard predicates, unknown-predicate branches (wang2019's conservative rule,
//! or the best case), short `if` bodies predicated as ptxas compiles them (`DBlock::predicated`:
//! the branch is not issued and every warp issues the body), memory accesses with coalescing
//! and bank conflicts, the values kept in shared and local memory and read from hinted buffers,
//! atomics, and the step budget. The warps of a block run in turn up to each barrier, so that
//! what one warp stores in shared memory before a barrier is there for every warp after it. The
//! result is one `WarpTrace` per warp.
//!
//! Calls into `.func`s are followed by `frame` (each call runs the callee's own SIMT stack on
//! the calling lanes, with its own registers and parameter space; a barrier inside a called
//! function does not wait for the other warps, a note says so); vector moves and texture
//! fetches are `vector`'s.

mod frame;
mod vector;

use std::collections::HashSet;

use super::alu::{alu, fast_lanes, fput, mask_bits, sext, Lanes, View, UNKNOWN};
use super::args::ArgValue;
use super::decode::{DInst, Decoded, Mem, OpK, Special, Src, Ty};
use super::decode::{LOCAL_WINDOW, SHARED_WINDOW};
use super::hints::DataHint;
use super::launch::LaunchDims;
use super::memstate::{local_byte, Memory};
use super::sampling::linear;
use super::{UnknownData, WARP};
use crate::error::{Error, Result};
use crate::memory::{banks, coalescing};
use crate::workload::trace::{Atomic, LatencyClass, MemAccess, MemSpace, TraceOp, WarpTrace};
use kerneltime_ptx::classify::Space;

/// Base of the synthetic addresses the best case gives lanes whose address is unknown (one
/// 16 MiB region per instruction, lanes side by side).
const UNKNOWN_WINDOW: u64 = 0x7d00_0000_0000;

const U64: Ty = Ty {
    bits: 64,
    signed: false,
    float: false,
};

/// A hinted global buffer: `[base, end)` holds `hint`'s values.
#[derive(Debug, Clone)]
pub(super) struct GlobalHint {
    pub(super) base: u64,
    pub(super) end: u64,
    pub(super) hint: DataHint,
}

/// A warp between barriers: its registers, SIMT stack, trace so far and local memory.
pub(super) struct WarpState {
    block: [u32; 3],
    warp: u32,
    regs: Vec<Lanes>,
    stack: Vec<Entry>,
    /// Where to go on in the top entry's block after a barrier (an instruction index).
    resume: Option<usize>,
    trace: WarpTrace,
    noted: HashSet<u32>,
    local: Memory,
    /// The warp's call frames (the kernel's parameter space, and callees' while they run).
    frames: frame::Frames,
    done: bool,
    /// Shared loads that a following load may extend into one vector load ([`SharedRun`]).
    shared_runs: Vec<SharedRun>,
}

/// A run of scalar shared loads at consecutive addresses in every lane, which ptxas issues as
/// one vector load (`LDS.64`/`LDS.128`) when the run's start is aligned to its width: for
/// example an unrolled `a[tx][k]` over `k` reads 4 words per lane with one instruction, whose
/// bank conflicts are those of the 16-byte access, paid once instead of four times.
#[derive(Debug, Clone)]
struct SharedRun {
    /// The access the run is timed as (index into `WarpTrace::accesses`).
    access: u32,
    exec: u32,
    /// Each lane's first address.
    start: [u64; WARP],
    /// Bytes per lane so far.
    width: u64,
}

/// The widest shared load ptxas forms, bytes per lane.
const SHARED_VECTOR_BYTES: u64 = 16;
/// Runs a warp keeps open (loads of different arrays interleave in unrolled loops).
const SHARED_RUNS: usize = 4;

/// How a frame stopped running.
enum Stop {
    /// Every lane returned; the lanes that left the warp (`exit`, or `ret` from the kernel).
    Returned(u32),
    /// The kernel's frame reached a barrier (it goes on from `WarpState::resume`).
    Barrier,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    pc: usize,
    mask: u32,
    reconv: usize,
}

pub(super) struct Emulator<'a> {
    dec: &'a Decoded,
    params: Vec<Option<u64>>,
    /// Fields of by-value aggregate kernel parameters given as arguments: (offset, value).
    fields: Vec<Vec<(u64, ArgValue)>>,
    launch: LaunchDims,
    budget: u64,
    /// Most warp instructions the whole launch may issue (every emulated warp of every sampled
    /// block), and how many it has issued so far: bounds time and trace memory per launch.
    launch_budget: u64,
    launch_steps: u64,
    /// The call frames of the warp running now (swapped in and out with its registers).
    frames: frame::Frames,
    regs: Vec<Lanes>,
    addr_scratch: Vec<u64>,
    sector_scratch: Vec<u64>,
    /// `%tid.x`, `%tid.y`, `%tid.z` and `%laneid` of the current warp.
    special: [Lanes; 4],
    /// The current block's shared memory.
    shared: Memory,
    globals: Vec<GlobalHint>,
    rule: UnknownData,
}

impl<'a> Emulator<'a> {
    pub(super) fn new(
        dec: &'a Decoded,
        params: Vec<Option<u64>>,
        fields: Vec<Vec<(u64, ArgValue)>>,
        launch: LaunchDims,
        globals: Vec<GlobalHint>,
        opts: &super::Options,
    ) -> Self {
        Self {
            dec,
            params,
            frames: frame::Frames::new(fields.clone(), dec.funcs.len()),
            fields,
            launch,
            budget: opts.step_budget,
            launch_budget: opts.launch_budget,
            launch_steps: 0,
            regs: vec![UNKNOWN; dec.reg_count],
            addr_scratch: Vec::with_capacity(64),
            sector_scratch: Vec::with_capacity(128),
            special: [UNKNOWN; 4],
            shared: Memory::default(),
            globals,
            rule: opts.unknown,
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

    /// Runs every warp of a block to completion, in turn from barrier to barrier; the traces
    /// in warp order.
    pub(super) fn run_block(&mut self, block: [u32; 3]) -> Result<Vec<WarpTrace>> {
        self.shared.clear();
        let mut warps: Vec<WarpState> = (0..self.launch.warps_per_block())
            .map(|w| self.start(block, w))
            .collect();
        loop {
            let mut ran = false;
            for st in warps.iter_mut().filter(|s| !s.done) {
                std::mem::swap(&mut self.regs, &mut st.regs);
                std::mem::swap(&mut self.frames, &mut st.frames);
                self.set_special(st.warp);
                let r = self.run(st);
                std::mem::swap(&mut self.regs, &mut st.regs);
                std::mem::swap(&mut self.frames, &mut st.frames);
                r?;
                ran = true;
            }
            if !ran {
                break;
            }
        }
        Ok(warps
            .into_iter()
            .map(|mut s| {
                let t = &mut s.trace.atomic_targets;
                t.sort_unstable();
                t.dedup_by(|b, a| {
                    let same = a.0 == b.0;
                    if same {
                        a.1 += b.1;
                    }
                    same
                });
                s.trace
            })
            .collect())
    }

    /// A warp of a block at the kernel's first instruction.
    fn start(&self, block: [u32; 3], warp: u32) -> WarpState {
        let tpb = self.launch.threads_per_block();
        let first = warp * WARP as u32;
        let threads = (tpb - first).min(WARP as u32);
        let full: u32 = if threads >= 32 {
            u32::MAX
        } else {
            (1u32 << threads) - 1
        };
        WarpState {
            block,
            warp,
            regs: vec![UNKNOWN; self.dec.reg_count],
            stack: vec![Entry {
                pc: 0,
                mask: full,
                reconv: self.dec.funcs.first().map_or(0, |f| f.block_end),
            }],
            resume: None,
            trace: WarpTrace {
                block,
                block_linear: linear(&self.launch, block),
                warp,
                threads,
                ..Default::default()
            },
            noted: HashSet::new(),
            local: Memory::default(),
            frames: frame::Frames::new(self.fields.clone(), self.dec.funcs.len()),
            done: false,
            shared_runs: Vec::new(),
        }
    }

    /// Runs a warp (its registers and frames swapped in) until its next barrier or its end.
    fn run(&mut self, st: &mut WarpState) -> Result<()> {
        let mut stack = std::mem::take(&mut st.stack);
        let stop = self.run_frame(0, &mut stack, st);
        st.stack = stack;
        if let Stop::Returned(_) = stop? {
            st.done = true;
        }
        Ok(())
    }

    /// Runs function `func` of the program (0 is the kernel) on its SIMT `stack` until every
    /// lane returns or, in the kernel's frame, a barrier is reached.
    fn run_frame(
        &mut self,
        func: usize,
        stack: &mut Vec<Entry>,
        st: &mut WarpState,
    ) -> Result<Stop> {
        let (block, warp) = (st.block, st.warp);
        let (first, nblocks) = {
            let f = &self.dec.funcs[func];
            (f.block_start, f.block_end)
        };
        let mut exited = 0u32;
        while let Some(top) = stack.last().copied() {
            if top.mask == 0 || top.pc == top.reconv || top.pc >= nblocks || top.pc < first {
                stack.pop();
                st.resume = None;
                continue;
            }
            let b = top.pc;
            let blk = self.dec.blocks[b];
            let (start, end) = (st.resume.take().unwrap_or(blk.start), blk.end);
            if st.trace.ops.len() as u64 + (end - start) as u64 > self.budget {
                let line = self.dec.insts.get(start).map_or(blk.line, |d| d.line);
                return Err(Error::invalid(
                    "ptx",
                    format!(
                        "warp {warp} of block ({}, {}, {}) issued more than {} instructions (the per-warp step budget) near PTX line {line}: a loop there runs that long, or does not end, for these arguments; narrow the launch (smaller values for the arguments that bound the loop, such as the problem size or iteration count) or raise the per-warp step budget",
                        block[0], block[1], block[2], self.budget
                    ),
                ));
            }
            self.launch_steps = self.launch_steps.saturating_add((end - start) as u64);
            if self.launch_steps > self.launch_budget {
                let line = self.dec.insts.get(start).map_or(blk.line, |d| d.line);
                return Err(Error::invalid(
                    "ptx",
                    format!(
                        "the launch issued more than {} warp instructions over its emulated warps (the per-launch budget) by warp {warp} of block ({}, {}, {}) near PTX line {line}: narrow the launch (fewer threads per block, or smaller values for the arguments that bound its loops, such as the problem size or iteration count) or raise the per-launch budget",
                        self.launch_budget, block[0], block[1], block[2]
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
                    if guard_unknown != 0 && d.op != OpK::Bra {
                        st.trace.unknown_guard_lanes += u64::from(guard_unknown.count_ones());
                        if self.rule == UnknownData::Best {
                            // Best case: a lane whose guard is unknown does not execute.
                            exec &= !guard_unknown;
                            guard_unknown = 0;
                        }
                    }
                }
                let op = TraceOp {
                    instr: k as u32,
                    latency: d.latency,
                    access: TraceOp::NO_ACCESS,
                };
                match d.op {
                    OpK::Bra => {
                        // ptxas predicates a short `if` body instead of branching over it, so
                        // the branch itself is not issued (`predicated` is only set on blocks
                        // ending in a guarded branch).
                        let predicated = blk.predicated;
                        if !predicated {
                            st.trace.ops.push(op);
                        }
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
                        let r = blk.ipdom.min(nblocks);
                        if guard_unknown != 0 {
                            st.trace.data_dependent_branches += 1;
                        }
                        let (taken, fall) = if guard_unknown == 0 {
                            (exec, active & !exec)
                        } else if back {
                            if st.noted.insert(d.line) {
                                st.trace.notes.push(format!(
                                    "line {}: loop branch depends on data for {} lanes; those lanes leave the loop here (conservative rule cannot bound it)",
                                    d.line,
                                    guard_unknown.count_ones()
                                ));
                            }
                            (known_taken, active & !known_taken)
                        } else if self.rule == UnknownData::Best {
                            // Best case: the lanes take the side that goes straight to the
                            // reconvergence point (skipping the conditional code), else they
                            // fall through.
                            let skip = target == r;
                            if st.noted.insert(d.line) {
                                st.trace.notes.push(format!(
                                    "line {}: data-dependent branch ({} lanes); best case: those lanes {}",
                                    d.line,
                                    guard_unknown.count_ones(),
                                    if skip { "jump to the reconvergence point" } else { "fall through" }
                                ));
                            }
                            let t = if skip {
                                known_taken | guard_unknown
                            } else {
                                known_taken
                            };
                            (t, active & !t)
                        } else {
                            if st.noted.insert(d.line) {
                                st.trace.notes.push(format!(
                                    "line {}: data-dependent branch ({} lanes); both paths assumed to run (wang2019's conservative rule)",
                                    d.line,
                                    guard_unknown.count_ones()
                                ));
                            }
                            (exec, (active & !exec) | guard_unknown)
                        };
                        if predicated && fall == 0 {
                            // Every lane skips the body (the blocks up to the target), and the
                            // warp issues it with every lane's predicate off.
                            let body =
                                self.dec.blocks[b + 1].start..self.dec.blocks[target - 1].end;
                            self.issue_predicated_off(body, &mut st.trace);
                            next = target;
                        } else if d.guard.is_none() || fall == 0 {
                            next = target;
                        } else if taken == 0 {
                            next = b + 1;
                        } else {
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
                        st.trace.ops.push(op);
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
                        st.trace.ops.push(op);
                        match d.target {
                            Some(call) => {
                                let gone = self.call(call, exec, d.line, st)?;
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
                        let mut op = op;
                        self.texture(
                            d,
                            k,
                            exec,
                            block,
                            warp,
                            &mut st.trace,
                            &mut op,
                            &mut st.noted,
                        );
                        st.trace.ops.push(op);
                    }
                    OpK::VecMov | OpK::Pack | OpK::Unpack => {
                        st.trace.ops.push(op);
                        self.vector_move(d, exec, guard_unknown, block, warp);
                    }
                    OpK::Load | OpK::Store | OpK::Atom | OpK::Red => {
                        self.memory(d, op, exec, guard_unknown, st);
                    }
                    OpK::Bar => {
                        st.trace.ops.push(op);
                        st.shared_runs.clear();
                        self.set_unknown(&d.dst, exec);
                        if func == 0 {
                            // The other warps of the block run up to this barrier before this
                            // one goes on, so that their stores are seen after it.
                            if let Some(t) = stack.last_mut() {
                                t.mask = active;
                            }
                            st.resume = Some(k + 1);
                            return Ok(Stop::Barrier);
                        }
                        if st.noted.insert(d.line) {
                            st.trace.notes.push(format!(
                                "line {}: barrier inside a called function: this warp goes on without waiting for the others",
                                d.line
                            ));
                        }
                    }
                    OpK::Opaque => {
                        st.trace.ops.push(op);
                        self.set_unknown(&d.dst, exec);
                    }
                    _ => {
                        let mut op = op;
                        if d.latency == LatencyClass::Fp32Divide {
                            let (slow, unknown) = self.divide_path(d, exec, block, warp);
                            if slow {
                                op.latency = LatencyClass::Fp32DivideSlow;
                            } else if unknown != 0 && st.noted.insert(d.line) {
                                st.trace.notes.push(format!(
                                    "line {}: IEEE divide by a value the emulator cannot know ({} lanes): taken on ptxas's fast path; a zero, subnormal, infinite or NaN divisor (an array nobody filled reads zero) takes the slow path, 24 more instructions a divide: a data hint makes it exact",
                                    d.line,
                                    unknown.count_ones()
                                ));
                            }
                        }
                        st.trace.ops.push(op);
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
        Ok(Stop::Returned(exited))
    }

    /// Issues instructions `range` with every lane's predicate off: each takes its issue slot,
    /// and (the CUDA C++ Best Practices Guide, "Branch Predication") instructions with a false
    /// predicate neither write results nor evaluate addresses or read operands, so a memory
    /// instruction makes no request and is timed as one integer issue.
    fn issue_predicated_off(&mut self, range: std::ops::Range<usize>, trace: &mut WarpTrace) {
        self.launch_steps = self.launch_steps.saturating_add(range.len() as u64);
        for k in range {
            let d = &self.dec.insts[k];
            // A branch inside a predicated body is predicated too: no instruction of its own.
            if d.op == OpK::Bra {
                continue;
            }
            let latency = if d.latency.is_memory() {
                LatencyClass::Int
            } else {
                d.latency
            };
            trace.ops.push(TraceOp {
                instr: k as u32,
                latency,
                access: TraceOp::NO_ACCESS,
            });
        }
    }

    /// The value a hinted global buffer holds at `addr` for a load of `ty`.
    fn hinted(&self, addr: u64, ty: Ty, elem_bytes: u64) -> Option<u64> {
        let g = self
            .globals
            .iter()
            .find(|g| (g.base..g.end).contains(&addr))?;
        g.hint.value_at(addr - g.base, ty, elem_bytes)
    }

    /// Whether an IEEE fp32 divide takes ptxas's slow path for a lane, by what is known of its
    /// operands (see [`fp32_divide_is_slow`]; an unknown operand is taken to be an ordinary
    /// one), and the executing lanes whose divisor is unknown.
    fn divide_path(&self, d: &DInst, exec: u32, block: [u32; 3], warp: u32) -> (bool, u32) {
        let (a, b) = (
            self.view(d.srcs[0], d.ty, block, warp),
            self.view(d.srcs[1], d.ty, block, warp),
        );
        let value = |v: &View, l: usize| {
            (v.known() & (1 << l) != 0).then(|| f32::from_bits(v.get(l) as u32))
        };
        let unknown = exec & !b.known();
        let mut m = exec & (a.known() | b.known());
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            if fp32_divide_is_slow(value(&a, l), value(&b, l)) {
                return (true, unknown);
            }
        }
        (false, unknown)
    }

    /// A load, store or atomic: the lanes' addresses, the memory touched, the values moved, and
    /// the access record of the trace.
    fn memory(&mut self, d: &DInst, mut op: TraceOp, exec: u32, gu: u32, st: &mut WarpState) {
        let (block, warp) = (st.block, st.warp);
        let Some(mem) = d.mem else {
            st.trace.ops.push(op);
            if matches!(d.op, OpK::Load | OpK::Atom) {
                self.set_unknown(&d.dst, exec);
            }
            return;
        };
        if mem.space == Space::Param {
            st.trace.ops.push(op);
            self.param_access(d, mem, exec, gu, block, warp);
            return;
        }
        // Addresses of the executing lanes.
        let mut lane_addr = [0u64; WARP];
        let mut known = 0u32;
        {
            let base = self.view(mem.base, U64, block, warp);
            let bk = base.known();
            let mut m = exec & bk;
            while m != 0 {
                let l = m.trailing_zeros() as usize;
                m &= m - 1;
                lane_addr[l] = base.get(l).wrapping_add(mem.offset as u64);
                known |= 1 << l;
            }
        }
        let unknown = exec & !known;
        let unknown_lanes = unknown.count_ones();
        st.trace.unknown_address_lanes += u64::from(unknown_lanes);
        let first = (known != 0).then(|| lane_addr[known.trailing_zeros() as usize]);
        let space = match mem.space {
            Space::Shared => MemSpace::Shared,
            Space::Local => MemSpace::Local,
            Space::Const => MemSpace::Const,
            Space::Generic => match first {
                Some(a) if (SHARED_WINDOW..SHARED_WINDOW + (1 << 32)).contains(&a) => {
                    MemSpace::Shared
                }
                Some(a) if (LOCAL_WINDOW..LOCAL_WINDOW + (1 << 40)).contains(&a) => MemSpace::Local,
                _ => MemSpace::Global,
            },
            _ => MemSpace::Global,
        };
        if mem.space == Space::Generic {
            let window = match space {
                MemSpace::Shared => SHARED_WINDOW,
                MemSpace::Local => LOCAL_WINDOW,
                _ => 0,
            };
            for a in lane_addr.iter_mut() {
                *a = a.wrapping_sub(window);
            }
        }
        match d.op {
            OpK::Load => self.load_values(d, &mem, space, exec, known, gu, &lane_addr, st),
            OpK::Store => self.store_values(d, &mem, space, exec, known, gu, &lane_addr, st),
            _ => {
                // Atomics: the result is unknown, and so is what the memory holds afterwards.
                self.set_unknown(&d.dst, exec);
                self.forget(&mem, space, exec, known, &lane_addr, st);
            }
        }
        if unknown_lanes > 0 && st.noted.insert(d.line) {
            st.trace.notes.push(match self.rule {
                UnknownData::Worst => format!(
                    "line {}: address unknown for {unknown_lanes} lanes (it depends on loaded data); each counted as its own sector",
                    d.line
                ),
                UnknownData::Best => format!(
                    "line {}: address unknown for {unknown_lanes} lanes (it depends on loaded data); best case: side by side (coalesced), the same for every warp",
                    d.line
                ),
            });
        }
        // The addresses of the trace, lane order.
        let mut addrs = std::mem::take(&mut self.addr_scratch);
        addrs.clear();
        let mut m = known;
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            addrs.push(if space == MemSpace::Local {
                local_sector_address(lane_addr[l], l as u64, &st.trace, self.launch)
            } else {
                lane_addr[l]
            });
        }
        let best = self.rule == UnknownData::Best;
        if best && space != MemSpace::Shared {
            let region = UNKNOWN_WINDOW + ((op.instr as u64) << 24);
            for r in 0..u64::from(unknown_lanes) {
                addrs.push(region + r * u64::from(mem.bytes));
            }
        }
        let counted_unknown = if best { 0 } else { unknown_lanes };
        let atomic = match d.op {
            OpK::Atom => Atomic::Atom,
            OpK::Red => Atomic::Red,
            _ => Atomic::No,
        };
        let lanes = exec.count_ones();
        let mut acc = MemAccess {
            instr: op.instr,
            space,
            store: d.op != OpK::Load,
            lanes: lanes as u8,
            bytes_per_lane: mem.bytes,
            addresses_known: unknown_lanes == 0,
            sectors: 0,
            lines: 0,
            bank_ways: 0,
            sector_start: st.trace.sector_ids.len() as u32,
            sector_end: st.trace.sector_ids.len() as u32,
            atomic,
            cache: mem.cache,
            same_address_lanes: 0,
            distinct_addresses: 0,
        };
        if lanes > 0 {
            if atomic != Atomic::No {
                let (same, distinct) = same_address(&lane_addr, known);
                acc.same_address_lanes = same.max(u32::from(unknown_lanes > 0)) as u8;
                acc.distinct_addresses = (distinct + unknown_lanes).min(255) as u8;
                if space == MemSpace::Global {
                    let mut m = known;
                    while m != 0 {
                        let l = m.trailing_zeros() as usize;
                        m &= m - 1;
                        st.trace.atomic_targets.push((lane_addr[l], 1));
                    }
                }
            }
            if space == MemSpace::Shared {
                if atomic == Atomic::No && d.op == OpK::Load && unknown_lanes == 0 {
                    if self.extend_shared_run(st, exec, &lane_addr, u64::from(mem.bytes)) {
                        // ptxas folds this load into the earlier one's vector load.
                        op.latency = LatencyClass::Int;
                        st.trace.ops.push(op);
                        self.addr_scratch = addrs;
                        return;
                    }
                } else {
                    st.shared_runs.clear();
                }
                let ways =
                    banks::conflict_ways(&addrs, u64::from(mem.bytes), &mut self.sector_scratch)
                        .max(1)
                        + counted_unknown.min(31);
                acc.bank_ways = ways.min(32);
                acc.sectors = acc.bank_ways;
                if atomic == Atomic::No && d.op == OpK::Load && unknown_lanes == 0 {
                    if st.shared_runs.len() == SHARED_RUNS {
                        st.shared_runs.remove(0);
                    }
                    st.shared_runs.push(SharedRun {
                        access: st.trace.accesses.len() as u32,
                        exec,
                        start: lane_addr,
                        width: u64::from(mem.bytes),
                    });
                }
            } else {
                acc.lines =
                    coalescing::sectors_of(&addrs, u64::from(mem.bytes), &mut self.sector_scratch)
                        + counted_unknown;
                acc.sectors = self.sector_scratch.len() as u32 + counted_unknown;
                st.trace.sector_ids.extend_from_slice(&self.sector_scratch);
                acc.sector_end = st.trace.sector_ids.len() as u32;
            }
            op.access = st.trace.accesses.len() as u32;
            st.trace.accesses.push(acc);
        }
        self.addr_scratch = addrs;
        if atomic == Atomic::No {
            op.latency = match (space, d.op == OpK::Store) {
                (MemSpace::Shared, false) => LatencyClass::SharedLoad,
                (MemSpace::Shared, true) => LatencyClass::SharedStore,
                (MemSpace::Local, false) => LatencyClass::LocalLoad,
                (MemSpace::Local, true) => LatencyClass::LocalStore,
                // A fixed-address constant load is an operand of its user (see decode).
                (MemSpace::Const, _) if d.latency == LatencyClass::Folded => LatencyClass::Folded,
                (MemSpace::Const, _) => LatencyClass::ConstLoad,
                (MemSpace::Global, false) => LatencyClass::GlobalLoad,
                (MemSpace::Global, true) => LatencyClass::GlobalStore,
            };
        }
        st.trace.ops.push(op);
    }

    /// Whether a shared load of `bytes` per lane continues an open run (every lane reads just
    /// past the run's end, and the longer run is still one aligned vector load); if so the
    /// run's access is widened and its bank conflicts recounted.
    fn extend_shared_run(
        &mut self,
        st: &mut WarpState,
        exec: u32,
        lane_addr: &[u64; WARP],
        bytes: u64,
    ) -> bool {
        let lanes = || (0..WARP).filter(move |&l| exec & (1 << l) != 0);
        let Some(k) = st.shared_runs.iter().position(|r| {
            let width = r.width + bytes;
            r.exec == exec
                && width <= SHARED_VECTOR_BYTES
                && lanes().all(|l| {
                    lane_addr[l] == r.start[l] + r.width
                        && r.start[l] % width.next_power_of_two() == 0
                })
        }) else {
            return false;
        };
        let run = &mut st.shared_runs[k];
        run.width += bytes;
        // The run's lane starts, on the stack: this runs once per folded load.
        let mut starts = [0u64; WARP];
        let mut n = 0;
        for l in lanes() {
            starts[n] = run.start[l];
            n += 1;
        }
        let ways = banks::conflict_ways(&starts[..n], run.width, &mut self.sector_scratch).max(1);
        let acc = &mut st.trace.accesses[run.access as usize];
        acc.bytes_per_lane = run.width as u16;
        acc.bank_ways = ways.min(32);
        acc.sectors = acc.bank_ways;
        if run.width == SHARED_VECTOR_BYTES {
            st.shared_runs.remove(k);
        }
        true
    }

    /// A load's values: from shared or local memory as stored, from a hinted global buffer, or
    /// unknown.
    #[allow(clippy::too_many_arguments)]
    fn load_values(
        &mut self,
        d: &DInst,
        mem: &Mem,
        space: MemSpace,
        exec: u32,
        known: u32,
        gu: u32,
        lane_addr: &[u64; WARP],
        st: &mut WarpState,
    ) {
        let eb = u64::from(mem.elem_bytes.max(1));
        let elems = (u64::from(mem.bytes) / eb).clamp(1, 4) as usize;
        for (e, dst) in d.dst.iter().enumerate() {
            let Some(r) = *dst else {
                continue;
            };
            let mut vals = [0u64; WARP];
            let mut ok = 0u32;
            let hinted_space = matches!(space, MemSpace::Global | MemSpace::Const);
            if e < elems && (!hinted_space || !self.globals.is_empty()) {
                let mut m = exec & known & !gu;
                while m != 0 {
                    let l = m.trailing_zeros() as usize;
                    m &= m - 1;
                    let a = lane_addr[l].wrapping_add(e as u64 * eb);
                    let v = match space {
                        MemSpace::Shared => self.shared.read(eb, |k| a.wrapping_add(k)),
                        MemSpace::Local => st.local.read(eb, |k| local_byte(a, l as u64, k)),
                        MemSpace::Global | MemSpace::Const => self.hinted(a, d.ty, eb),
                    };
                    if let Some(v) = v {
                        vals[l] = if d.ty.signed && !d.ty.float {
                            sext(v, (eb * 8) as u8) as u64
                        } else {
                            v
                        };
                        ok |= 1 << l;
                    }
                }
            }
            self.write(Some(r), exec, &vals, ok);
        }
    }

    /// A store's values into shared or local memory (global stores are not kept).
    #[allow(clippy::too_many_arguments)]
    fn store_values(
        &mut self,
        d: &DInst,
        mem: &Mem,
        space: MemSpace,
        exec: u32,
        known: u32,
        gu: u32,
        lane_addr: &[u64; WARP],
        st: &mut WarpState,
    ) {
        if !matches!(space, MemSpace::Shared | MemSpace::Local) {
            return;
        }
        let eb = u64::from(mem.elem_bytes.max(1));
        let elems = (u64::from(mem.bytes) / eb).clamp(1, 4) as usize;
        let mut vals = [[0u64; WARP]; 4];
        let mut ok = [0u32; 4];
        for e in 0..elems.min(d.nsrc as usize) {
            let v = self.view(d.srcs[e], d.ty, st.block, st.warp);
            ok[e] = v.known() & exec & known & !gu;
            let mut m = ok[e];
            while m != 0 {
                let l = m.trailing_zeros() as usize;
                m &= m - 1;
                vals[e][l] = mask_bits(v.get(l), (eb * 8).min(64) as u8);
            }
        }
        self.forget(mem, space, exec, known, lane_addr, st);
        for e in 0..elems {
            let mut m = ok[e];
            while m != 0 {
                let l = m.trailing_zeros() as usize;
                m &= m - 1;
                let a = lane_addr[l].wrapping_add(e as u64 * eb);
                let v = Some(vals[e][l]);
                match space {
                    MemSpace::Shared => self.shared.write(eb, v, |k| a.wrapping_add(k)),
                    _ => st.local.write(eb, v, |k| local_byte(a, l as u64, k)),
                }
            }
        }
    }

    /// Makes the shared or local bytes an access writes unknown; an unknown address may have
    /// written anywhere, so then all of that memory is.
    fn forget(
        &mut self,
        mem: &Mem,
        space: MemSpace,
        exec: u32,
        known: u32,
        lane_addr: &[u64; WARP],
        st: &mut WarpState,
    ) {
        if !matches!(space, MemSpace::Shared | MemSpace::Local) {
            return;
        }
        if exec & !known != 0 {
            match space {
                MemSpace::Shared => self.shared.clear(),
                _ => st.local.clear(),
            }
            return;
        }
        let n = u64::from(mem.bytes);
        let mut m = exec;
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            let a = lane_addr[l];
            for k in (0..n).step_by(8) {
                let len = (n - k).min(8);
                match space {
                    MemSpace::Shared => self.shared.write(len, None, |j| a.wrapping_add(k + j)),
                    _ => st
                        .local
                        .write(len, None, |j| local_byte(a, l as u64, k + j)),
                }
            }
        }
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

/// The most lanes on one address and the number of distinct addresses among the `known` lanes.
/// Whether `a / b` (IEEE fp32, round to nearest) leaves ptxas's fast path. ptxas compiles
/// `div.rn.f32` to a reciprocal seed (`MUFU.RCP`), an fma refinement and `FCHK`, a range check
/// of both operands that branches to a subroutine for the operands the refinement cannot round
/// correctly (seen in the sm_75 and sm_86 SASS of the project's builds: the subroutine tests
/// for zero, infinite and NaN operands first and rescales extreme exponents). Taken as slow: a
/// divisor that is zero, subnormal, infinite or NaN; a dividend that is infinite, NaN or
/// subnormal; a quotient whose exponent leaves the normal range. A zero dividend over a normal
/// divisor stays on the fast path (its refinement is exact). An unknown operand (None) is taken
/// to be an ordinary one: only what is known of the other decides.
pub(super) fn fp32_divide_is_slow(a: Option<f32>, b: Option<f32>) -> bool {
    if b.is_some_and(|b| !b.is_normal())
        || a.is_some_and(|a| !a.is_finite() || (a != 0.0 && !a.is_normal()))
    {
        return true;
    }
    let (Some(a), Some(b)) = (a, b) else {
        return false;
    };
    if a == 0.0 {
        return false;
    }
    let exponent = |x: f32| ((x.to_bits() >> 23) & 0xff) as i32;
    let quotient = exponent(a) - exponent(b);
    !(-125..=126).contains(&quotient)
}

fn same_address(lane_addr: &[u64; WARP], known: u32) -> (u32, u32) {
    let mut a: Vec<u64> = (0..WARP)
        .filter(|&l| known >> l & 1 == 1)
        .map(|l| lane_addr[l])
        .collect();
    a.sort_unstable();
    let (mut most, mut distinct, mut run) = (0u32, 0u32, 0u32);
    for (k, x) in a.iter().enumerate() {
        if k == 0 || a[k - 1] != *x {
            distinct += 1;
            run = 0;
        }
        run += 1;
        most = most.max(run);
    }
    (most, distinct)
}

/// Where a lane's local word lives for the caches: local memory is interleaved per lane by the
/// hardware (each lane's word at the same offset sits side by side), and every warp has its
/// own (tagged by the warp's number in the launch, above any global address).
pub fn local_sector_address(offset: u64, lane: u64, w: &WarpTrace, l: LaunchDims) -> u64 {
    let uid =
        (w.block_linear * u64::from(l.warps_per_block()) + u64::from(w.warp)) & ((1 << 26) - 1);
    (1 << 63) | (uid << 37) | ((offset & 0xffff_fffc) * WARP as u64 + lane * 4)
}

#[cfg(test)]
mod tests {
    use super::fp32_divide_is_slow as slow;

    #[test]
    fn the_divide_leaves_the_fast_path_for_the_operands_fchk_refuses() {
        // Ordinary operands, and a zero dividend over a normal divisor: the fast path.
        assert!(!slow(Some(1.0), Some(3.0)));
        assert!(!slow(Some(-7.5e20), Some(2.5e-12)));
        assert!(!slow(Some(0.0), Some(3.0)));
        // A zero, subnormal, infinite or NaN divisor; an infinite, NaN or subnormal dividend.
        for b in [0.0, -0.0, 1e-40, f32::INFINITY, f32::NAN] {
            assert!(slow(Some(1.0), Some(b)), "divisor {b}");
        }
        for a in [f32::INFINITY, f32::NAN, 1e-40] {
            assert!(slow(Some(a), Some(1.0)), "dividend {a}");
        }
        // Quotients out of the normal range: 2^100 / 2^-100 = 2^200, 2^-100 / 2^100 = 2^-200.
        assert!(slow(Some(2f32.powi(100)), Some(2f32.powi(-100))));
        assert!(slow(Some(2f32.powi(-100)), Some(2f32.powi(100))));
        // What is known decides alone: a zero divisor is slow whatever the dividend; an unknown
        // divisor of an ordinary dividend is taken as ordinary.
        assert!(slow(None, Some(0.0)));
        assert!(!slow(Some(1.0), None));
        assert!(!slow(None, None));
    }
}
