//! Call frames of the warp emulator: a `call` into a `.func` with a body runs the callee on the
//! calling lanes with its own SIMT stack, its own registers (saved and restored when the callee
//! is already running, so recursion works) and its own parameter space; arguments and return
//! values pass through `.param` variables or registers as the declarations say (PTX ISA 9.1,
//! "Function Declarations and Definitions", 7.1, "Parameter State Space", 5.1.6, and "Control
//! Flow Instructions: call"). Also the loads and
//! stores of the parameter space: kernel parameters (scalars as their little-endian bytes,
//! by-value aggregates by the fields given as arguments) and the frames' own `.param` variables.
//!
//! What it does NOT do: follow calls through function pointers or into functions without a body
//! (those stay one instruction with unknown results, see `decode`), or nest calls deeper than
//! [`MAX_CALL_DEPTH`] (an error).

use super::super::alu::{mask_bits, Lanes, View, UNKNOWN};
use super::super::args::ArgValue;
use super::super::decode::{Actual, DInst, Formal, Mem, OpK, Src, Ty};
use super::super::WARP;
use super::Emulator;
use crate::error::{Error, Result};

/// Deepest nesting of calls the emulator follows; deeper recursion is an error.
pub const MAX_CALL_DEPTH: usize = 64;

/// Most values one frame's parameter space holds; stores beyond it are dropped (read back as
/// unknown), so a loop storing to ever new parameter addresses cannot grow memory.
const MAX_CELLS: usize = 4096;

/// A value in a parameter space: `bytes` bytes at `addr` (or at an offset, in a piece of an
/// argument being passed), per lane.
#[derive(Debug, Clone, Copy)]
struct Cell {
    addr: u64,
    bytes: u8,
    val: Lanes,
}

/// The call frames of the warp being emulated.
pub(in crate::emulate) struct Frames {
    /// Fields of by-value aggregate kernel parameters given as arguments: (offset, value).
    fields: Vec<Vec<(u64, ArgValue)>>,
    /// The parameter space of each running frame, the kernel's first.
    spaces: Vec<Vec<Cell>>,
    /// How many frames of each function are running.
    running: Vec<u32>,
}

impl Frames {
    pub(in crate::emulate) fn new(fields: Vec<Vec<(u64, ArgValue)>>, funcs: usize) -> Self {
        let mut f = Frames {
            fields,
            spaces: Vec::new(),
            running: vec![0; funcs.max(1)],
        };
        f.reset();
        f
    }

    /// Back to the kernel's frame alone (before each warp).
    pub(in crate::emulate) fn reset(&mut self) {
        self.spaces.clear();
        self.spaces.push(Vec::new());
        self.running.iter_mut().for_each(|r| *r = 0);
        self.running[0] = 1;
    }

    fn space(&mut self) -> &mut Vec<Cell> {
        if self.spaces.is_empty() {
            self.spaces.push(Vec::new());
        }
        let last = self.spaces.len() - 1;
        &mut self.spaces[last]
    }
}

/// Stores `val` (its lanes of `exec`, known where `known`) as `bytes` bytes at `addr`.
fn store(space: &mut Vec<Cell>, addr: u64, bytes: u8, val: &[u64; WARP], known: u32, exec: u32) {
    if let Some(c) = space
        .iter_mut()
        .find(|c| c.addr == addr && c.bytes == bytes)
    {
        let mut m = exec;
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            c.val.v[l] = val[l];
        }
        c.val.known = (c.val.known & !exec) | (known & exec);
        return;
    }
    let end = addr.saturating_add(u64::from(bytes));
    space.retain(|c| c.addr.saturating_add(u64::from(c.bytes)) <= addr || end <= c.addr);
    if space.len() < MAX_CELLS {
        space.push(Cell {
            addr,
            bytes,
            val: Lanes {
                v: *val,
                known: known & exec,
            },
        });
    }
}

/// Reads `bytes` bytes at `addr` from cells (little-endian, assembled from several cells if
/// needed); unknown where a byte was never stored.
fn read(cells: &[Cell], addr: u64, bytes: u8) -> Lanes {
    let mut out = Lanes {
        v: [0; WARP],
        known: u32::MAX,
    };
    let mut done = 0u64;
    let want = u64::from(bytes.min(8));
    while done < want {
        let a = addr.wrapping_add(done);
        let Some(c) = cells
            .iter()
            .rev()
            .find(|c| c.addr <= a && a < c.addr.saturating_add(u64::from(c.bytes)))
        else {
            return UNKNOWN;
        };
        let take = (c.addr + u64::from(c.bytes) - a).min(want - done);
        let (shift_in, shift_out) = (8 * (a - c.addr), 8 * done);
        for l in 0..WARP {
            out.v[l] |= mask_bits(c.val.v[l] >> shift_in, (8 * take) as u8) << shift_out;
        }
        out.known &= c.val.known;
        done += take;
    }
    out
}

/// The lanes of a view, copied.
fn lanes_of(v: View) -> Lanes {
    let mut o = Lanes {
        v: [0; WARP],
        known: v.known(),
    };
    for (l, x) in o.v.iter_mut().enumerate() {
        *x = v.get(l);
    }
    o
}

/// The element width of a formal, bits.
fn formal_bits(f: &Formal) -> u8 {
    match f {
        Formal::Regs { bits, .. } => *bits,
        Formal::Param { elem_bits, .. } => *elem_bits,
    }
}

fn ty_of(bits: u8) -> Ty {
    Ty {
        bits,
        signed: false,
        float: false,
    }
}

impl Emulator<'_> {
    /// Follows call site `call` for the lanes of `exec`; returns the lanes that left the warp
    /// inside the callee (`exit`).
    pub(super) fn call(
        &mut self,
        call: usize,
        exec: u32,
        line: u32,
        st: &mut super::WarpState,
    ) -> Result<u32> {
        let (block, warp) = (st.block, st.warp);
        let dec = self.dec;
        let c = &dec.calls[call];
        let f = &dec.funcs[c.callee];
        if exec == 0 {
            return Ok(0);
        }
        if self.frames.spaces.len() > MAX_CALL_DEPTH {
            return Err(Error::invalid(
                "ptx",
                format!(
                    "line {line}: calls nested more than {MAX_CALL_DEPTH} deep (into `{}`): a recursion that does not end for these arguments? the emulator follows calls up to {MAX_CALL_DEPTH} deep",
                    f.name
                ),
            ));
        }
        // The arguments, read in the caller's frame.
        let args: Vec<Vec<Cell>> = f
            .params
            .iter()
            .zip(c.args.iter())
            .map(|(formal, actual)| self.read_actual(actual, formal_bits(formal), block, warp))
            .collect();
        // A fresh frame: the callee's registers start unknown (saved first if it is running).
        let (lo, hi) = (usize::from(f.reg_start), usize::from(f.reg_end));
        let hi = hi.min(self.regs.len());
        let lo = lo.min(hi);
        let saved = (self.frames.running[c.callee] > 0).then(|| self.regs[lo..hi].to_vec());
        for r in &mut self.regs[lo..hi] {
            r.known = 0;
        }
        self.frames.spaces.push(Vec::new());
        self.frames.running[c.callee] += 1;
        for (formal, pieces) in f.params.iter().zip(args.iter()) {
            self.bind_formal(formal, pieces, exec);
        }
        let mut stack = vec![super::Entry {
            pc: f.block_start,
            mask: exec,
            reconv: f.block_end,
        }];
        let run = self
            .run_frame(c.callee, &mut stack, st)
            .map(|stop| match stop {
                super::Stop::Returned(gone) => gone,
                // Only the kernel's frame stops at barriers.
                super::Stop::Barrier => 0,
            });
        // The return values, read in the callee's frame before it goes.
        let rets: Vec<(Vec<Cell>, u8)> = f
            .returns
            .iter()
            .map(|formal| (self.read_formal(formal), formal_bits(formal)))
            .collect();
        self.frames.spaces.pop();
        self.frames.running[c.callee] -= 1;
        if let Some(saved) = saved {
            self.regs[lo..hi].copy_from_slice(&saved);
        }
        let gone = run?;
        for (actual, (pieces, bits)) in c.returns.iter().zip(rets.iter()) {
            self.write_actual(actual, pieces, *bits, exec & !gone);
        }
        Ok(gone)
    }

    /// What an argument passes, as pieces at offsets from the parameter's start.
    fn read_actual(&mut self, a: &Actual, bits: u8, block: [u32; 3], warp: u32) -> Vec<Cell> {
        match a {
            Actual::Values(srcs) => srcs
                .iter()
                .enumerate()
                .map(|(k, s)| Cell {
                    addr: k as u64 * u64::from(bits / 8),
                    bytes: bits / 8,
                    val: lanes_of(self.view(*s, ty_of(bits), block, warp)),
                })
                .collect(),
            Actual::Param { addr, bytes } => {
                let end = addr.saturating_add(*bytes);
                self.frames
                    .space()
                    .iter()
                    .filter(|c| c.addr >= *addr && c.addr < end)
                    .map(|c| Cell {
                        addr: c.addr - addr,
                        ..*c
                    })
                    .collect()
            }
        }
    }

    /// Gives a formal parameter of the current (callee's) frame its argument.
    fn bind_formal(&mut self, formal: &Formal, pieces: &[Cell], exec: u32) {
        match formal {
            Formal::Regs { regs, bits } => {
                self.pieces_to_regs(regs.iter().copied().enumerate(), *bits, pieces, exec)
            }
            Formal::Param { addr, .. } => self.pieces_to_params(*addr, pieces, exec),
        }
    }

    /// Writes element `k` of `pieces` (`bits` wide, at byte `k * bits / 8`) to each `(k, reg)`.
    fn pieces_to_regs(
        &mut self,
        regs: impl Iterator<Item = (usize, u16)>,
        bits: u8,
        pieces: &[Cell],
        exec: u32,
    ) {
        for (k, r) in regs {
            let v = read(pieces, k as u64 * u64::from(bits / 8), bits / 8);
            self.write(Some(r), exec, &v.v, v.known);
        }
    }

    /// Stores `pieces` at `addr` of the current frame's parameter space.
    fn pieces_to_params(&mut self, addr: u64, pieces: &[Cell], exec: u32) {
        for p in pieces {
            let at = addr.saturating_add(p.addr);
            store(
                self.frames.space(),
                at,
                p.bytes,
                &p.val.v,
                p.val.known,
                exec,
            );
        }
    }

    /// The value of a formal (a return value) in the current frame, as pieces.
    fn read_formal(&mut self, formal: &Formal) -> Vec<Cell> {
        match formal {
            Formal::Regs { regs, bits } => regs
                .iter()
                .enumerate()
                .map(|(k, r)| Cell {
                    addr: k as u64 * u64::from(bits / 8),
                    bytes: bits / 8,
                    val: self.regs.get(usize::from(*r)).copied().unwrap_or(UNKNOWN),
                })
                .collect(),
            Formal::Param { addr, bytes, .. } => self.read_actual(
                &Actual::Param {
                    addr: *addr,
                    bytes: *bytes,
                },
                8,
                [0; 3],
                0,
            ),
        }
    }

    /// Delivers a return value to the caller's registers or `.param` variable.
    fn write_actual(&mut self, a: &Actual, pieces: &[Cell], bits: u8, exec: u32) {
        match a {
            Actual::Values(srcs) => {
                let regs = srcs.iter().enumerate().filter_map(|(k, s)| match s {
                    Src::Reg(r) => Some((k, *r)),
                    _ => None,
                });
                self.pieces_to_regs(regs, bits, pieces, exec)
            }
            Actual::Param { addr, .. } => self.pieces_to_params(*addr, pieces, exec),
        }
    }

    /// A kernel parameter's bytes `offset..offset + bytes` read as type `ty`: a scalar's
    /// little-endian bytes, or the field of a by-value aggregate given at exactly that offset.
    fn kernel_param(&self, p: u16, offset: i64, bytes: u8, ty: Ty) -> Option<u64> {
        let offset = u64::try_from(offset).ok()?;
        let fields = self.frames.fields.get(usize::from(p))?;
        if !fields.is_empty() {
            let (_, v) = fields.iter().find(|(o, _)| *o == offset)?;
            let name = match (ty.float, ty.signed) {
                (true, _) => format!("f{}", ty.bits),
                (false, true) => format!("s{}", ty.bits),
                (false, false) => format!("u{}", ty.bits),
            };
            return v.bits_for(&name).map(|b| mask_bits(b, ty.bits));
        }
        let v = self.params.get(usize::from(p)).copied().flatten()?;
        if offset + u64::from(bytes) > 8 {
            return None;
        }
        Some(mask_bits(
            v >> (8 * offset),
            (8 * bytes).min(ty.bits.max(8)),
        ))
    }

    /// `ld.param` / `st.param`: kernel parameters, or the current frame's `.param` variables.
    pub(super) fn param_access(
        &mut self,
        d: &DInst,
        mem: Mem,
        exec: u32,
        guard_unknown: u32,
        block: [u32; 3],
        warp: u32,
    ) {
        let elem = (d.ty.bits.max(8) / 8).min(8);
        let n = (usize::from(mem.bytes) / usize::from(elem)).clamp(1, 4);
        let step = i64::from(elem);
        match (d.op, mem.base) {
            (OpK::Load, Src::Param(p)) => {
                for k in 0..n {
                    match self.kernel_param(p, mem.offset + k as i64 * step, elem, d.ty) {
                        Some(v) => self.write(d.dst[k], exec, &[v; WARP], !guard_unknown),
                        None => self.set_unknown(&[d.dst[k], None, None, None], exec),
                    }
                }
            }
            (OpK::Store, Src::Param(_)) => {}
            (op, base) => {
                let base = lanes_of(self.view(base, ty_of(64), block, warp));
                for k in 0..n {
                    let off = (mem.offset + k as i64 * step) as u64;
                    if op == OpK::Load {
                        let mut out = UNKNOWN;
                        let mut m = exec & base.known;
                        while m != 0 {
                            let l = m.trailing_zeros() as usize;
                            m &= m - 1;
                            let v = read(self.frames.space(), base.v[l].wrapping_add(off), elem);
                            out.v[l] = v.v[l];
                            out.known |= v.known & (1 << l);
                        }
                        self.write(d.dst[k], exec, &out.v, out.known & !guard_unknown);
                    } else {
                        let src = d.srcs.get(k).copied().unwrap_or(Src::Unknown);
                        let val = lanes_of(self.view(src, d.ty, block, warp));
                        let val_v: [u64; WARP] =
                            std::array::from_fn(|l| mask_bits(val.v[l], d.ty.bits));
                        // Lanes storing to the same address store together.
                        let mut left = exec & base.known;
                        while left != 0 {
                            let a = base.v[left.trailing_zeros() as usize];
                            let mut same = 0u32;
                            let mut m = left;
                            while m != 0 {
                                let l = m.trailing_zeros() as usize;
                                m &= m - 1;
                                if base.v[l] == a {
                                    same |= 1 << l;
                                }
                            }
                            store(
                                self.frames.space(),
                                a.wrapping_add(off),
                                elem,
                                &val_v,
                                val.known & !guard_unknown,
                                same,
                            );
                            left &= !same;
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uniform(v: u64) -> [u64; WARP] {
        [v; WARP]
    }

    #[test]
    fn parameter_space_stores_and_reads_bytes() {
        let mut s = Vec::new();
        store(&mut s, 0, 4, &uniform(0x4433_2211), u32::MAX, u32::MAX);
        store(&mut s, 4, 4, &uniform(0x8877_6655), u32::MAX, u32::MAX);
        // A 64-bit read assembles both words, little-endian; a 16-bit read inside one.
        let v = read(&s, 0, 8);
        assert_eq!((v.v[0], v.known), (0x8877_6655_4433_2211, u32::MAX));
        assert_eq!(read(&s, 2, 2).v[5], 0x4433);
        // A byte never stored is unknown.
        assert_eq!(read(&s, 6, 4).known, 0);
        // A partial store replaces the lanes it executes for; an overlapping store of another
        // width drops the old value.
        store(&mut s, 0, 4, &uniform(7), u32::MAX, 0b1);
        let v = read(&s, 0, 4);
        assert_eq!((v.v[0], v.v[1]), (7, 0x4433_2211));
        store(&mut s, 2, 4, &uniform(9), u32::MAX, u32::MAX);
        assert_eq!(read(&s, 0, 4).known, 0);
        assert_eq!(read(&s, 2, 4).v[3], 9);
    }

    #[test]
    fn parameter_space_is_bounded() {
        let mut s = Vec::new();
        for a in 0..(MAX_CELLS as u64 + 100) {
            store(&mut s, a * 8, 8, &uniform(a), u32::MAX, u32::MAX);
        }
        assert_eq!(s.len(), MAX_CELLS);
    }
}
