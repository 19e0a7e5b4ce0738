//! Vector moves and texture fetches of the warp emulator.
//!
//! Vector moves (PTX ISA 9.1, "Vectors as Operands", 6.4.3): `mov.b32 d, {a, b}` packs the
//! elements into one value (the first in the low bits), `mov.b64 {a, b}, s` unpacks one, and
//! `mov.v4.f32 {a, b, c, d}, V` copies element-wise, all sources read before any write.
//!
//! Texture fetches (`tex`, `tld4`, `suld`; "Texture Instructions", 9.7.10): a request on the
//! global load path whose value is unknown. The texture's layout in memory and its cache are not
//! modelled: each distinct texel the warp fetches (distinct coordinate tuples; a lane with an
//! unknown coordinate is its own texel) is counted as one 32-byte sector, exact for a warp that
//! fetches one texel and an upper bound otherwise. What it does NOT do: filter, address modes,
//! mip levels or the values fetched.

use std::collections::HashSet;

use super::super::alu::{mask_bits, Lanes, UNKNOWN};
use super::super::decode::{DInst, OpK};
use super::super::WARP;
use super::Emulator;
use crate::workload::trace::{
    Atomic, CacheOp, LatencyClass, MemAccess, MemSpace, TraceOp, WarpTrace,
};

impl Emulator<'_> {
    /// A source's lanes, copied.
    fn lanes(
        &self,
        s: super::super::decode::Src,
        ty: super::super::decode::Ty,
        block: [u32; 3],
        warp: u32,
    ) -> Lanes {
        let v = self.view(s, ty, block, warp);
        let mut o = Lanes {
            v: [0; WARP],
            known: v.known(),
        };
        for (l, x) in o.v.iter_mut().enumerate() {
            *x = v.get(l);
        }
        o
    }

    /// `VecMov`, `Pack` and `Unpack` (see the module documentation).
    pub(super) fn vector_move(
        &mut self,
        d: &DInst,
        exec: u32,
        guard_unknown: u32,
        block: [u32; 3],
        warp: u32,
    ) {
        let n = usize::from(d.nsrc).min(4);
        let eb = d.ty_src.bits.clamp(1, 64);
        match d.op {
            OpK::VecMov => {
                let mut vals = [UNKNOWN; 4];
                for (k, v) in vals.iter_mut().enumerate().take(n) {
                    *v = self.lanes(d.srcs[k], d.ty, block, warp);
                }
                for (k, v) in vals.iter().enumerate().take(n) {
                    self.write(d.dst[k], exec, &v.v, v.known & !guard_unknown);
                }
            }
            OpK::Pack => {
                let mut out = [0u64; WARP];
                let mut known = u32::MAX;
                for k in 0..n {
                    let shift = k as u32 * u32::from(eb);
                    if shift >= 64 {
                        break;
                    }
                    let v = self.lanes(d.srcs[k], d.ty_src, block, warp);
                    known &= v.known;
                    for (o, x) in out.iter_mut().zip(v.v.iter()) {
                        *o |= mask_bits(*x, eb) << shift;
                    }
                }
                self.write(d.dst[0], exec, &out, known & !guard_unknown);
            }
            OpK::Unpack => {
                let v = self.lanes(d.srcs[0], d.ty, block, warp);
                for k in 0..4 {
                    let shift = k as u32 * u32::from(eb);
                    if d.dst[k].is_none() || shift >= 64 {
                        continue;
                    }
                    let part: [u64; WARP] = std::array::from_fn(|l| mask_bits(v.v[l] >> shift, eb));
                    self.write(d.dst[k], exec, &part, v.known & !guard_unknown);
                }
            }
            _ => self.set_unknown(&d.dst, exec),
        }
    }

    /// A texture fetch (see the module documentation): one request, its value unknown.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn texture(
        &mut self,
        d: &DInst,
        k: usize,
        exec: u32,
        block: [u32; 3],
        warp: u32,
        trace: &mut WarpTrace,
        op: &mut TraceOp,
        noted: &mut HashSet<u32>,
    ) {
        let n = usize::from(d.nsrc).min(4);
        let coords: Vec<Lanes> = (0..n)
            .map(|c| self.lanes(d.srcs[c], d.ty, block, warp))
            .collect();
        let mut texels: Vec<[u64; 4]> = Vec::with_capacity(WARP);
        let mut unknown = 0u32;
        let mut m = exec;
        while m != 0 {
            let l = m.trailing_zeros() as usize;
            m &= m - 1;
            if coords.iter().all(|c| c.known & (1 << l) != 0) {
                let mut t = [0u64; 4];
                for (x, c) in t.iter_mut().zip(coords.iter()) {
                    *x = c.v[l];
                }
                texels.push(t);
            } else {
                unknown += 1;
            }
        }
        texels.sort_unstable();
        texels.dedup();
        let distinct = texels.len() as u32 + unknown;
        if noted.insert(d.line) {
            trace.notes.push(format!(
                "line {}: texture fetch: its value is unknown and each distinct texel of the warp is counted as one 32-byte sector (texture layout and cache not modelled)",
                d.line
            ));
        }
        let lanes = exec.count_ones();
        if lanes > 0 {
            let at = trace.sector_ids.len() as u32;
            op.access = trace.accesses.len() as u32;
            trace.accesses.push(MemAccess {
                instr: k as u32,
                space: MemSpace::Global,
                store: false,
                lanes: lanes as u8,
                bytes_per_lane: d.mem.map_or(16, |m| m.bytes),
                addresses_known: false,
                sectors: distinct,
                lines: distinct,
                bank_ways: 0,
                sector_start: at,
                sector_end: at,
                atomic: Atomic::No,
                // Texture fetches go through the read-only (texture) cache.
                cache: CacheOp::ReadOnly,
                same_address_lanes: 0,
                distinct_addresses: 0,
            });
        }
        op.latency = LatencyClass::GlobalLoad;
        self.set_unknown(&d.dst, exec);
    }
}
