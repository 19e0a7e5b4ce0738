//! Seeded pseudo-random numbers and train/test splits, reproducible on every platform.
//!
//! The generator is SplitMix64 (Steele, Lea and Flood, 2014): a 64-bit state advanced by the
//! constant `0x9E3779B97F4A7C15` and passed through a bijective mixing function,
//!
//! ```text
//! s <- s + 0x9E3779B97F4A7C15
//! z <- (s ^ (s >> 30)) * 0xBF58476D1CE4E5B9
//! z <- (z ^ (z >> 27)) * 0x94D049BB133111EB
//! out = z ^ (z >> 31)
//! ```
//!
//! It is small, fast and statistically sound for sampling and shuffling; the same seed gives the
//! same numbers forever (we own the code, so no dependency update can change a split).
//!
//! What this module does NOT do: cryptographic randomness, or stratified/grouped splits.

use crate::error::{Error, Result};

/// The SplitMix64 generator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose first output is the mix of `seed + 0x9E3779B97F4A7C15`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number in `[0, 1)`: the top 53 bits times `2^-53`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform integer in `[0, n)` without modulo bias (Lemire's multiply-and-reject);
    /// `n = 0` gives 0.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        // Reject the low products that would make some outcomes more likely: 2^64 mod n of them.
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = (self.next_u64() as u128) * (n as u128);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }

    /// A standard normal number by the Box-Muller transform,
    /// `sqrt(-2 ln u1) cos(2 pi u2)` with `u1` in `(0, 1]` and `u2` in `[0, 1)`.
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.next_f64();
        let u2 = self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Shuffles a slice in place (Fisher-Yates: for `i` from the end, swap `i` with a uniform
    /// `j <= i`), so every permutation is equally likely.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// The seed of a stratum's shuffle in a seeded sample: the first 64 bits of the key hash of the
/// run's seed (little-endian bytes) and the stratum's key. The accuracy harness's groups and
/// `tune --evaluate`'s sample of a measured cache draw with it, so the same seed and stratum
/// give the same permutation in both.
pub fn stratum_seed(seed: u64, stratum: &str) -> u64 {
    let mut h = crate::compile::cache::KeyHasher::default();
    h.field(&seed.to_le_bytes()).field(stratum.as_bytes());
    u64::from_str_radix(&h.hex()[..16], 16).unwrap_or(seed)
}

/// Indices of a train/test split, each list in ascending order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    pub train: Vec<usize>,
    pub test: Vec<usize>,
}

/// Splits `0..n` at random: `round(n * test_fraction)` indices go to the test set, the rest to
/// training. With `0 < test_fraction` and `n >= 2` each side keeps at least one index.
///
/// Errors when `test_fraction` is not in `[0, 1)`.
pub fn train_test_split(n: usize, test_fraction: f64, seed: u64) -> Result<Split> {
    if !(0.0..1.0).contains(&test_fraction) {
        return Err(Error::invalid(
            "test_fraction",
            format!("must be at least 0 and below 1, got {test_fraction}"),
        ));
    }
    let mut n_test = (n as f64 * test_fraction).round() as usize;
    if test_fraction > 0.0 && n >= 2 {
        n_test = n_test.clamp(1, n - 1);
    }
    let mut order: Vec<usize> = (0..n).collect();
    SplitMix64::new(seed).shuffle(&mut order);
    let mut test = order[..n_test].to_vec();
    let mut train = order[n_test..].to_vec();
    test.sort_unstable();
    train.sort_unstable();
    Ok(Split { train, test })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_ranges_and_determinism() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        for _ in 0..1000 {
            let u = a.next_f64();
            assert!((0.0..1.0).contains(&u));
            assert_eq!(u, b.next_f64());
            assert!(a.below(10) < 10);
            b.below(10);
        }
        assert_eq!(a.below(0), 0);
    }

    #[test]
    fn split_sizes_and_partition() {
        // The paper's split: 360 samples, 20 % test -> 72 test and 288 training.
        let s = train_test_split(360, 0.2, 42).unwrap();
        assert_eq!((s.train.len(), s.test.len()), (288, 72));
        let mut all: Vec<usize> = s.train.iter().chain(&s.test).copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..360).collect::<Vec<_>>());
        assert_eq!(s, train_test_split(360, 0.2, 42).unwrap());
        assert_ne!(s, train_test_split(360, 0.2, 43).unwrap());
        // Small n keeps one on each side.
        let t = train_test_split(2, 0.01, 1).unwrap();
        assert_eq!((t.train.len(), t.test.len()), (1, 1));
        assert!(train_test_split(10, 1.0, 1).is_err());
        assert!(train_test_split(10, f64::NAN, 1).is_err());
        assert_eq!(train_test_split(5, 0.0, 1).unwrap().test.len(), 0);
    }

    #[test]
    fn normal_moments() {
        // Mean ~0 and variance ~1 over many draws (loose bounds: 5 standard errors).
        let mut r = SplitMix64::new(1);
        let n = 20000;
        let v: Vec<f64> = (0..n).map(|_| r.normal()).collect();
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 5.0 / (n as f64).sqrt());
        assert!((var - 1.0).abs() < 5.0 * (2.0 / n as f64).sqrt());
    }
}
