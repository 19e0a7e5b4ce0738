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
        let n = n.min(8);
        if let Some(o) = in_one_page(n, &at) {
            // The usual access: one page lookup for all its bytes.
            let s = self.slot(at(0) >> PAGE_BITS, false)?;
            let p = &self.pages[s];
            let mut v = 0u64;
            for k in 0..n as usize {
                let b = o + k;
                if p.known[b / 64] >> (b % 64) & 1 == 0 {
                    return None;
                }
                v |= u64::from(p.bytes[b]) << (8 * k);
            }
            return Some(v);
        }
        let mut v = 0u64;
        for k in 0..n {
            v |= u64::from(self.byte(at(k))?) << (8 * k);
        }
        Some(v)
    }

    /// Stores `n` (at most 8) little-endian bytes of `v` at `at(k)`; `None` makes them unknown.
    pub(super) fn write(&mut self, n: u64, v: Option<u64>, at: impl Fn(u64) -> u64) {
        let n = n.min(8);
        if let Some(o) = in_one_page(n, &at) {
            // Forgetting bytes of a page never stored: they are unknown already.
            let Some(s) = self.slot(at(0) >> PAGE_BITS, v.is_some()) else {
                return;
            };
            let p = &mut self.pages[s];
            for k in 0..n as usize {
                let b = o + k;
                match v {
                    Some(v) => {
                        p.bytes[b] = (v >> (8 * k)) as u8;
                        p.known[b / 64] |= 1 << (b % 64);
                    }
                    None => p.known[b / 64] &= !(1 << (b % 64)),
                }
            }
            return;
        }
        for k in 0..n {
            self.set_byte(at(k), v.map(|v| (v >> (8 * k)) as u8));
        }
    }
}

/// The offset in its page of the first of `n` (at least 1) bytes whose addresses `at(k)` gives,
/// when they are consecutive and in one page (a shared access, a lane's aligned local word);
/// `None` otherwise (a local access across the lanes' interleaved words, a page boundary).
fn in_one_page(n: u64, at: &impl Fn(u64) -> u64) -> Option<usize> {
    let first = at(0);
    let last = first.checked_add(n.checked_sub(1)?)?;
    let consecutive = (1..n).all(|k| at(k) == first + k);
    (consecutive && first >> PAGE_BITS == last >> PAGE_BITS).then_some(first as usize & (PAGE - 1))
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

    #[test]
    fn whole_accesses_agree_with_byte_by_byte_ones() {
        // A reference of known bytes against the memory, over writes and reads of 1-8 bytes,
        // flat (shared) and interleaved (local), some across a page boundary, some forgetting.
        let mut m = Memory::default();
        let mut reference: std::collections::HashMap<u64, u8> = Default::default();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20_000 {
            let r = next();
            let n = 1 + r % 8;
            let base = 4096 - 64 + (r >> 8) % 160;
            let lane = (r >> 20) % 32;
            let local = (r >> 30) & 1 == 1;
            let at = move |k: u64| {
                if local {
                    local_byte(base, lane, k)
                } else {
                    base + k
                }
            };
            if (r >> 31) & 3 == 0 {
                let v = ((r >> 33) & 1 == 0).then_some(next());
                m.write(n, v, at);
                for k in 0..n {
                    match v {
                        Some(v) => reference.insert(at(k), (v >> (8 * k)) as u8),
                        None => reference.remove(&at(k)),
                    };
                }
            } else {
                let want = (0..n).try_fold(0u64, |acc, k| {
                    reference
                        .get(&at(k))
                        .map(|&b| acc | u64::from(b) << (8 * k))
                });
                assert_eq!(
                    m.read(n, at),
                    want,
                    "{n} bytes at {base} lane {lane} local {local}"
                );
            }
        }
    }
}
