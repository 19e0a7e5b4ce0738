//! Rank and linear correlation between two samples: Kendall's tau-b, Spearman's rho, Pearson's r.
//!
//! Kendall's tau-b counts, over all `n0 = n (n - 1) / 2` pairs of observations, the concordant
//! pairs `C` (both variables order the pair the same way) and the discordant pairs `D`:
//!
//! ```text
//! tau_b = (C - D) / sqrt((n0 - n1) (n0 - n2))
//! ```
//!
//! where `n1 = sum_i t_i (t_i - 1) / 2` over the groups of tied `x` values and `n2` likewise for
//! `y`. Pairs tied in either variable count as neither concordant nor discordant. It is computed
//! in O(n log n) with Knight's method (1966): sort by `(x, y)`; count the pairs tied in `x` (`n1`)
//! and tied in both (`n3`); a merge sort of the `y` sequence then counts the exchanges needed,
//! which equals `D`; a final pass over the sorted `y` counts `n2`. Then
//! `C - D = n0 - n1 - n2 + n3 - 2 D`.
//!
//! Spearman's rho is Pearson's correlation of the ranks, where tied values share the average of
//! the ranks they occupy.
//!
//! The coefficients are undefined (returned as `None`) with fewer than two observations or when
//! one variable is constant. NaN inputs are errors; they have no rank.
//!
//! What this module does NOT do: p-values, confidence intervals, or other tau variants (tau-a,
//! tau-c).

use std::cmp::Ordering;

use crate::error::{Error, Result};

fn check(x: &[f64], y: &[f64]) -> Result<()> {
    if x.len() != y.len() {
        return Err(Error::invalid(
            "correlation",
            format!("the samples differ in length ({} and {})", x.len(), y.len()),
        ));
    }
    if let Some(i) = x.iter().chain(y).position(|v| v.is_nan()) {
        let (which, at) = if i < x.len() {
            ("x", i)
        } else {
            ("y", i - x.len())
        };
        return Err(Error::invalid(
            "correlation",
            format!("{which}[{at}] is NaN, which has no rank"),
        ));
    }
    Ok(())
}

fn cmp(a: f64, b: f64) -> Ordering {
    // Callers have rejected NaN, so partial_cmp always answers (and -0.0 equals 0.0).
    a.partial_cmp(&b).unwrap_or(Ordering::Equal)
}

/// Sum of `t (t - 1) / 2` over runs of equal neighbours in an already sorted sequence.
fn tied_pairs<T, F: Fn(&T, &T) -> bool>(sorted: &[T], same: F) -> u64 {
    let mut total = 0u64;
    let mut run = 1u64;
    for k in 1..sorted.len() {
        if same(&sorted[k - 1], &sorted[k]) {
            run += 1;
        } else {
            total += run * (run - 1) / 2;
            run = 1;
        }
    }
    if !sorted.is_empty() {
        total += run * (run - 1) / 2;
    }
    total
}

/// Sorts `v` ascending by merge sort and returns the number of pairs `i < j` with
/// `v[i] > v[j]` (strictly), i.e. the exchanges a stable sort needs.
fn merge_count(v: &mut [f64], buf: &mut [f64]) -> u64 {
    let n = v.len();
    if n < 2 {
        return 0;
    }
    let mid = n / 2;
    let mut swaps = {
        let (left, right) = v.split_at_mut(mid);
        merge_count(left, &mut buf[..mid]) + merge_count(right, &mut buf[mid..])
    };
    let (mut i, mut j, mut k) = (0, mid, 0);
    while i < mid && j < n {
        if cmp(v[j], v[i]) == Ordering::Less {
            // v[j] jumps over every remaining element of the left half.
            swaps += (mid - i) as u64;
            buf[k] = v[j];
            j += 1;
        } else {
            buf[k] = v[i];
            i += 1;
        }
        k += 1;
    }
    buf[k..k + (mid - i)].copy_from_slice(&v[i..mid]);
    k += mid - i;
    buf[k..k + (n - j)].copy_from_slice(&v[j..n]);
    v.copy_from_slice(&buf[..n]);
    swaps
}

/// Kendall's tau-b of `x` and `y` (see the module doc); `None` when undefined.
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> Result<Option<f64>> {
    check(x, y)?;
    let n = x.len();
    if n < 2 {
        return Ok(None);
    }
    let mut pairs: Vec<(f64, f64)> = x.iter().copied().zip(y.iter().copied()).collect();
    pairs.sort_by(|a, b| cmp(a.0, b.0).then(cmp(a.1, b.1)));
    let n0 = (n as u64) * (n as u64 - 1) / 2;
    let n1 = tied_pairs(&pairs, |a, b| cmp(a.0, b.0) == Ordering::Equal);
    let n3 = tied_pairs(&pairs, |a, b| {
        cmp(a.0, b.0) == Ordering::Equal && cmp(a.1, b.1) == Ordering::Equal
    });
    let mut ys: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    let mut buf = vec![0.0; n];
    let discordant = merge_count(&mut ys, &mut buf);
    let n2 = tied_pairs(&ys, |a, b| cmp(*a, *b) == Ordering::Equal);
    if n0 == n1 || n0 == n2 {
        return Ok(None);
    }
    // Signed to allow a negative numerator; counts fit in i128 for any realistic n.
    let numerator = n0 as i128 - n1 as i128 - n2 as i128 + n3 as i128 - 2 * discordant as i128;
    let denominator = ((n0 - n1) as f64).sqrt() * ((n0 - n2) as f64).sqrt();
    Ok(Some(numerator as f64 / denominator))
}

/// Ranks from 1 to n, tied values getting the average of the ranks they span.
///
/// Example: `[10, 20, 20, 5]` has ranks `[2, 3.5, 3.5, 1]`. Errors on NaN.
pub fn average_ranks(v: &[f64]) -> Result<Vec<f64>> {
    check(v, v)?;
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&a, &b| cmp(v[a], v[b]));
    let mut ranks = vec![0.0; v.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && cmp(v[order[end]], v[order[start]]) == Ordering::Equal {
            end += 1;
        }
        // Positions start..end hold ranks start+1 ..= end; their mean is (start + 1 + end) / 2.
        let mean = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = mean;
        }
        start = end;
    }
    Ok(ranks)
}

/// Pearson's correlation `r = sum (x - mx)(y - my) / sqrt(sum (x - mx)^2 sum (y - my)^2)`;
/// `None` when undefined (fewer than two observations or a constant variable).
pub fn pearson(x: &[f64], y: &[f64]) -> Result<Option<f64>> {
    check(x, y)?;
    let n = x.len();
    if n < 2 {
        return Ok(None);
    }
    let mx = x.iter().sum::<f64>() / n as f64;
    let my = y.iter().sum::<f64>() / n as f64;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    if sxx == 0.0 || syy == 0.0 {
        return Ok(None);
    }
    Ok(Some((sxy / (sxx.sqrt() * syy.sqrt())).clamp(-1.0, 1.0)))
}

/// Spearman's rho: [`pearson`] of the [`average_ranks`]; `None` when undefined.
pub fn spearman_rho(x: &[f64], y: &[f64]) -> Result<Option<f64>> {
    check(x, y)?;
    pearson(&average_ranks(x)?, &average_ranks(y)?)
}

/// Kendall's tau-b by counting every pair, O(n^2): the definition, kept to test the fast path.
pub fn kendall_tau_b_naive(x: &[f64], y: &[f64]) -> Result<Option<f64>> {
    check(x, y)?;
    let n = x.len();
    let (mut s, mut tx, mut ty, mut n0) = (0i64, 0u64, 0u64, 0u64);
    for i in 0..n {
        for j in i + 1..n {
            n0 += 1;
            let a = cmp(x[i], x[j]) as i64;
            let b = cmp(y[i], y[j]) as i64;
            s += a * b;
            tx += (a == 0) as u64;
            ty += (b == 0) as u64;
        }
    }
    if n < 2 || tx == n0 || ty == n0 {
        return Ok(None);
    }
    Ok(Some(
        s as f64 / (((n0 - tx) as f64).sqrt() * ((n0 - ty) as f64).sqrt()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tau_by_hand() {
        // x = 1,2,3,4 ; y = 1,3,2,4: pairs (2,3) discordant, the other 5 concordant -> 4/6.
        let t = kendall_tau_b(&[1.0, 2.0, 3.0, 4.0], &[1.0, 3.0, 2.0, 4.0]).unwrap();
        assert!((t.unwrap() - 4.0 / 6.0).abs() < 1e-15);
        // Perfect reversal: -1.
        let r = kendall_tau_b(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]).unwrap();
        assert!((r.unwrap() + 1.0).abs() < 1e-15);
        // Ties: x = 1,1,2 ; y = 1,2,3. n0 = 3, n1 = 1 (x tie), n2 = 0;
        // pairs (1,3) and (2,3) concordant, (1,2) tied in x -> 2 / sqrt(2 * 3).
        let t = kendall_tau_b(&[1.0, 1.0, 2.0], &[1.0, 2.0, 3.0]).unwrap();
        assert!((t.unwrap() - 2.0 / 6.0_f64.sqrt()).abs() < 1e-15);
    }

    #[test]
    fn undefined_and_errors() {
        assert_eq!(kendall_tau_b(&[1.0], &[2.0]).unwrap(), None);
        assert_eq!(kendall_tau_b(&[1.0, 1.0], &[2.0, 3.0]).unwrap(), None);
        assert_eq!(spearman_rho(&[1.0, 2.0], &[5.0, 5.0]).unwrap(), None);
        assert!(kendall_tau_b(&[1.0, f64::NAN], &[2.0, 3.0]).is_err());
        assert!(kendall_tau_b(&[1.0], &[2.0, 3.0]).is_err());
    }

    #[test]
    fn ranks_and_rho_by_hand() {
        assert_eq!(
            average_ranks(&[10.0, 20.0, 20.0, 5.0]).unwrap(),
            vec![2.0, 3.5, 3.5, 1.0]
        );
        // Monotone but non-linear: rho = 1.
        let r = spearman_rho(&[1.0, 2.0, 3.0], &[1.0, 4.0, 9.0]).unwrap();
        assert!((r.unwrap() - 1.0).abs() < 1e-15);
    }

    #[test]
    fn fast_tau_equals_pair_count() {
        // A deterministic sequence with many ties in both variables.
        let x: Vec<f64> = (0..200).map(|i| ((i * 37) % 11) as f64).collect();
        let y: Vec<f64> = (0..200).map(|i| ((i * 53) % 7) as f64 - 0.0).collect();
        let a = kendall_tau_b(&x, &y).unwrap().unwrap();
        let b = kendall_tau_b_naive(&x, &y).unwrap().unwrap();
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }
}
