//! The values the kernel keeps in memory while it is emulated: shared memory per block and local
//! memory per warp (each lane's own words), byte by byte with a known bit per byte, so that a
//! value stored and loaded again (an index staged through a local variable or through shared
//! memory) stays exact.
//!
//! Sparse: 4 KiB pages are created on the first store; a byte never stored is unknown. Global
//! memory is not kept here (its initial contents are the data hints' business, and stores by
//! other blocks are not ordered with the sampled block's loads). Nothing here decides which
//! memory an access goes to.

use crate::hash::FastMap;

const PAGE_BITS: u32 = 12;
const PAGE: usize = 1 << PAGE_BITS;

#[derive(Clone)]
struct Page {
    bytes: [u8; PAGE],
    /// One bit per byte: known.
    known: [u64; PAGE / 64],
}

/// A sparse byte-addressed memory with a known bit per byte.
#[derive(Clone, Default)]
pub(super) struct Memory {
    pages: Vec<Page>,
    index: FastMap<u64, u32>,
    /// The last page looked up: (page number, slot).
    last: Option<(u64, u32)>,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Memory({} pages)", self.pages.len())
    }
}

impl Memory {
    /// Forgets everything.
    pub(super) fn clear(&mut self) {
        self.pages.clear();
        self.index.clear();
        self.last = None;
    }

    fn slot(&mut self, page: u64, create: bool) -> Option<usize> {
        if let Some((p, s)) = self.last {
            if p == page {
                return Some(s as usize);
            }
        }
        let s = match self.index.get(&page) {
            Some(&s) => s,
            None if create => {
                let s = self.pages.len() as u32;
                self.pages.push(Page {
                    bytes: [0; PAGE],
                    known: [0; PAGE / 64],
                });
                self.index.insert(page, s);
                s
            }
            None => return None,
        };
        self.last = Some((page, s));
        Some(s as usize)
    }

    fn byte(&mut self, addr: u64) -> Option<u8> {
        let s = self.slot(addr >> PAGE_BITS, false)?;
        let o = (addr as usize) & (PAGE - 1);
        let p = &self.pages[s];
        (p.known[o / 64] >> (o % 64) & 1 == 1).then_some(p.bytes[o])
    }

    fn set_byte(&mut self, addr: u64, v: Option<u8>) {
        let Some(s) = self.slot(addr >> PAGE_BITS, v.is_some()) else {
            // Forgetting a byte of a page never stored: it is unknown already.
            return;
        };
        let o = (addr as usize) & (PAGE - 1);
        let p = &mut self.pages[s];
        match v {
            Some(b) => {
                p.bytes[o] = b;
                p.known[o / 64] |= 1 << (o % 64);
            }
            None => p.known[o / 64] &= !(1 << (o % 64)),
        }
    }

    /// The little-endian value of `n` (at most 8) bytes whose addresses `at(k)` gives for
    /// `k in 0..n`, when every byte is known.
    pub(super) fn read(&mut self, n: u64, at: impl Fn(u64) -> u64) -> Option<u64> {
        let mut v = 0u64;
        for k in 0..n.min(8) {
            v |= u64::from(self.byte(at(k))?) << (8 * k);
        }
        Some(v)
    }

    /// Stores `n` (at most 8) little-endian bytes of `v` at `at(k)`; `None` makes them unknown.
    pub(super) fn write(&mut self, n: u64, v: Option<u64>, at: impl Fn(u64) -> u64) {
        for k in 0..n.min(8) {
            self.set_byte(at(k), v.map(|v| (v >> (8 * k)) as u8));
        }
    }
}

/// Byte `k` of an access at `addr` by `lane` in local memory, where the hardware interleaves
/// the lanes' words (each lane's word at the same offset sits side by side).
pub(super) fn local_byte(addr: u64, lane: u64, k: u64) -> u64 {
    let a = addr.wrapping_add(k);
    (a & !3).wrapping_mul(32).wrapping_add(lane * 4 + (a & 3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_bytes_come_back_and_others_are_unknown() {
        let mut m = Memory::default();
        let flat = |a: u64| move |k: u64| a + k;
        assert_eq!(m.read(4, flat(100)), None);
        m.write(4, Some(0xdead_beef), flat(100));
        assert_eq!(m.read(4, flat(100)), Some(0xdead_beef));
        // A 2-byte read inside, an 8-byte read half outside.
        assert_eq!(m.read(2, flat(102)), Some(0xdead));
        assert_eq!(m.read(8, flat(100)), None);
        // Across a page boundary.
        m.write(8, Some(0x0102_0304_0506_0708), flat(4092));
        assert_eq!(m.read(8, flat(4092)), Some(0x0102_0304_0506_0708));
        // Forgetting one byte makes the word unknown.
        m.write(1, None, flat(4093));
        assert_eq!(m.read(4, flat(4092)), None);
        assert_eq!(m.read(2, flat(4094)), Some(0x0506));
        m.clear();
        assert_eq!(m.read(4, flat(100)), None);
    }

    #[test]
    fn local_lanes_do_not_overlap() {
        // Word 0 of lanes 0 and 1 are 4 bytes apart; word 1 of lane 0 is 128 bytes on.
        assert_eq!(local_byte(0, 0, 0), 0);
        assert_eq!(local_byte(0, 1, 0), 4);
        assert_eq!(local_byte(0, 0, 4), 128);
        assert_eq!(local_byte(2, 3, 1), 12 + 3);
        let mut m = Memory::default();
        for lane in 0..32 {
            m.write(8, Some(lane * 1000), |k| local_byte(16, lane, k));
        }
        for lane in 0..32 {
            assert_eq!(m.read(8, |k| local_byte(16, lane, k)), Some(lane * 1000));
        }
    }
}
