//! A fast hash for integer keys (addresses, sector and page numbers, block indices) in the inner
//! loops of the emulator and the models, where the standard library's SipHash, built to resist
//! keys an adversary chooses, costs more than the work around it. The keys here are the kernel's
//! own addresses, so that resistance buys nothing.
//!
//! It is the PTX parser's [`FxHasher`] (rotate, xor and multiply per 64-bit word) with the
//! MurmurHash3 64-bit finalizer on top, so that keys that differ only in their high bits (sector
//! addresses, multiples of 32; page numbers) still spread over the low bits a hash table indexes
//! by; the parser's identifiers do not need it.
//!
//! What it does NOT do: resist chosen keys, or hash long byte strings quickly.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use kerneltime_ptx::parser::FxHasher;

/// A `HashMap` with [`IntHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

/// A `HashSet` with [`IntHasher`].
pub type FastSet<K> = HashSet<K, BuildHasherDefault<IntHasher>>;

/// See the module doc.
#[derive(Default, Clone, Copy)]
pub struct IntHasher(FxHasher);

impl Hasher for IntHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.write(bytes);
    }

    fn write_u64(&mut self, x: u64) {
        self.0.write_u64(x);
    }

    fn finish(&self) -> u64 {
        let mut k = self.0.finish();
        k ^= k >> 33;
        k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
        k ^= k >> 33;
        k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        k ^ (k >> 33)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn sector_numbers_spread_over_the_low_bits() {
        // 4,096 consecutive multiples of 32 (the byte addresses of sectors): a table of 4,096
        // buckets indexed by the low 12 bits of the hash should see most buckets used. A hash
        // that kept the key's low zero bits would use at most 128 of them.
        let b = BuildHasherDefault::<IntHasher>::default();
        let used: HashSet<u64> = (0..4096u64).map(|i| b.hash_one(i * 32) & 4095).collect();
        assert!(used.len() > 2400, "{} buckets used", used.len());
    }

    #[test]
    fn maps_behave_as_maps() {
        let mut m: FastMap<u64, u32> = FastMap::default();
        for i in 0..10_000u64 {
            *m.entry(i * 4096).or_default() += 1;
            *m.entry(i * 4096).or_default() += 1;
        }
        assert_eq!(m.len(), 10_000);
        assert!(m.values().all(|&v| v == 2));
        assert_eq!(m.get(&(4096 * 9_999)), Some(&2));
        assert_eq!(m.get(&1), None);
    }
}
