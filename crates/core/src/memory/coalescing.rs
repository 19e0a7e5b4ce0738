//! Coalescing: the distinct 32-byte sectors and 128-byte lines that one warp request touches.
//!
//! A lane reading `bytes` at `addr` touches every sector from `addr / 32` to
//! `(addr + bytes - 1) / 32`. The request costs as many sector transfers as there are distinct
//! sectors (the Volta-and-later L1/L2 granularity; Fermi/Kepler 128-byte L1 transactions are the
//! line count). This module does not model caches or timing.

/// Bytes per sector.
pub const SECTOR_BYTES: u64 = 32;
/// Bytes per cache line.
pub const LINE_BYTES: u64 = 128;

/// Sorts and deduplicates sector ids touched by lanes at `addrs`, each reading `bytes`, into
/// `out` (cleared first). Returns the number of distinct 128-byte lines.
pub fn sectors_of(addrs: &[u64], bytes: u64, out: &mut Vec<u64>) -> u32 {
    out.clear();
    let bytes = bytes.max(1);
    for &a in addrs {
        let first = a / SECTOR_BYTES;
        let last = a.saturating_add(bytes - 1) / SECTOR_BYTES;
        for s in first..=last.min(first + 64) {
            out.push(s);
        }
    }
    // Lanes usually address memory in increasing order; sort only when they do not.
    if !out.windows(2).all(|w| w[0] <= w[1]) {
        out.sort_unstable();
    }
    out.dedup();
    let per_line = LINE_BYTES / SECTOR_BYTES;
    let mut lines = 0u32;
    let mut prev = u64::MAX;
    for &s in out.iter() {
        let l = s / per_line;
        if l != prev {
            lines += 1;
            prev = l;
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strided(stride_floats: u64) -> (usize, u32) {
        let addrs: Vec<u64> = (0..32).map(|l| 4096 + l * stride_floats * 4).collect();
        let mut out = Vec::new();
        let lines = sectors_of(&addrs, 4, &mut out);
        (out.len(), lines)
    }

    #[test]
    fn strided_float_access() {
        // stride 1: 32 lanes x 4 B = 128 contiguous bytes = 4 sectors, 1 line.
        assert_eq!(strided(1), (4, 1));
        // stride 2: lanes span 256 B, every sector holds 4 lanes' floats: 256 / 32 = 8 sectors.
        assert_eq!(strided(2), (8, 2));
        // stride 4: 16 B apart, two lanes per sector: 16 sectors in 512 B = 4 lines.
        assert_eq!(strided(4), (16, 4));
        // stride 8: 32 B apart, one lane per sector: 32 sectors, 1024 B = 8 lines.
        assert_eq!(strided(8), (32, 8));
        // stride 32: 128 B apart, one lane per sector and per line: 32 and 32.
        assert_eq!(strided(32), (32, 32));
    }

    #[test]
    fn broadcast_and_straddling() {
        let mut out = Vec::new();
        // every lane reads the same float: one sector.
        assert_eq!(sectors_of(&[100; 32], 4, &mut out), 1);
        assert_eq!(out.len(), 1);
        // one 16-byte read starting at byte 24 straddles sectors 0 and 1.
        sectors_of(&[24], 16, &mut out);
        assert_eq!(out, vec![0, 1]);
    }
}
