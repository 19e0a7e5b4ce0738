//! Shared-memory bank conflicts: 32 banks of 4-byte words, word `w` in bank `w mod 32`.
//!
//! Lanes reading the same word are served at once (broadcast); distinct words in one bank are
//! served one after another. The conflict degree ("ways") of a request is the largest number of
//! distinct words any bank must deliver; 1 means conflict-free. Accesses wider than 4 bytes
//! touch several consecutive words. This module does not time anything.

/// Banks per SM.
pub const BANKS: u64 = 32;
/// Bytes per bank word.
pub const WORD_BYTES: u64 = 4;

/// Conflict ways of one request by lanes at byte addresses `addrs`, each `bytes` wide.
/// `scratch` is reused between calls to avoid allocation.
pub fn conflict_ways(addrs: &[u64], bytes: u64, scratch: &mut Vec<u64>) -> u32 {
    scratch.clear();
    let bytes = bytes.max(1);
    for &a in addrs {
        let first = a / WORD_BYTES;
        let last = a.saturating_add(bytes - 1) / WORD_BYTES;
        for w in first..=last.min(first + 32) {
            scratch.push(w);
        }
    }
    if scratch.is_empty() {
        return 0;
    }
    scratch.sort_unstable();
    scratch.dedup();
    let mut per_bank = [0u32; BANKS as usize];
    for &w in scratch.iter() {
        per_bank[(w % BANKS) as usize] += 1;
    }
    per_bank.iter().copied().max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ways(stride_words: u64) -> u32 {
        let addrs: Vec<u64> = (0..32).map(|l| l * stride_words * 4).collect();
        conflict_ways(&addrs, 4, &mut Vec::new())
    }

    #[test]
    fn strided_words() {
        // stride 1: lane l -> bank l, all distinct: 1 way.
        assert_eq!(ways(1), 1);
        // stride 2: lanes l and l+16 share bank 2l mod 32 with different words: 2 ways.
        assert_eq!(ways(2), 2);
        // stride 32: every lane in bank 0, 32 different words: 32 ways.
        assert_eq!(ways(32), 32);
        // stride 3 (odd): a permutation of the banks: 1 way.
        assert_eq!(ways(3), 1);
    }

    #[test]
    fn broadcast() {
        // all lanes read the same word: served in one pass.
        assert_eq!(conflict_ways(&[64; 32], 4, &mut Vec::new()), 1);
    }
}
