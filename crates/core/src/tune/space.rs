//! The configurations of a search space: the Cartesian product of the tuning parameters' values
//! (in spec order, the last parameter varying fastest, as `itertools.product` orders them),
//! keeping those for which every condition is true, and a seeded uniform sample of them.
//!
//! Enumeration checks each condition as soon as the parameters it reads are fixed, so a
//! restriction on the first parameters prunes whole sub-trees. A configuration is identified by
//! its position in the full product (its mixed-radix index), which stays valid across samples.
//!
//! What it does NOT do: compute launches or defines (`launch`), or rank anything.

use super::expr::Value;
use super::spec::TuneSpec;
use crate::error::{Error, Result};
use crate::fit::split::SplitMix64;

/// Largest product of value counts that is enumerated (the filtered space is usually far
/// smaller, but every combination is visited).
pub const MAX_PRODUCT: u128 = 1 << 32;

/// One configuration: its index in the full product and the value of every parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Configuration {
    pub index: u64,
    pub values: Vec<Value>,
}

/// Which configurations to rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    All,
    /// `n` distinct configurations drawn uniformly with a seeded generator (all when the space
    /// has fewer).
    Sample {
        n: usize,
        seed: u64,
    },
    /// These configurations, by their index in the full product (a caller that filtered the
    /// space further, e.g. by restrictions written as Python functions, or one chunk of a space
    /// split over several machines). Each must meet the conditions.
    Indices(Vec<u64>),
}

/// The values of the configuration at `index` of the full product.
pub fn configuration(spec: &TuneSpec, index: u64) -> Configuration {
    let mut rest = index;
    let mut values = vec![Value::Int(0); spec.params.len()];
    for (k, p) in spec.params.iter().enumerate().rev() {
        let n = p.values.len() as u64;
        values[k] = p.values[(rest % n) as usize].clone();
        rest /= n;
    }
    Configuration { index, values }
}

/// Indices (in the full product, ascending) of every configuration that meets the conditions.
pub fn enumerate(spec: &TuneSpec) -> Result<Vec<u64>> {
    let sizes: Vec<u64> = spec.params.iter().map(|p| p.values.len() as u64).collect();
    let product: u128 = sizes.iter().map(|&s| u128::from(s)).product();
    if product > MAX_PRODUCT {
        return Err(Error::invalid(
            "ConfigurationSpace.TuningParameters",
            format!("the product of the value lists has {product} combinations, more than the {MAX_PRODUCT} that can be enumerated"),
        ));
    }
    // Check each condition at the depth where its last parameter is fixed.
    let mut at_depth: Vec<Vec<usize>> = vec![Vec::new(); spec.params.len()];
    let mut constant = Vec::new();
    for (c, cond) in spec.conditions.iter().enumerate() {
        match cond.expr.uses().iter().max() {
            Some(&d) => at_depth[d].push(c),
            None => constant.push(c),
        }
    }
    let mut env: Vec<Value> = spec.params.iter().map(|p| p.values[0].clone()).collect();
    for &c in &constant {
        if !check(spec, c, &env)? {
            return Ok(Vec::new());
        }
    }
    let mut out = Vec::new();
    walk(spec, &at_depth, 0, 0, &mut env, &mut out)?;
    Ok(out)
}

fn check(spec: &TuneSpec, c: usize, env: &[Value]) -> Result<bool> {
    let cond = &spec.conditions[c];
    cond.expr.eval(env).map(|v| v.truthy()).map_err(|e| {
        let at: Vec<String> = spec
            .params
            .iter()
            .zip(env)
            .map(|(p, v)| format!("{}={v}", p.name))
            .collect();
        Error::file(
            spec.origin.as_str(),
            format!(
                "ConfigurationSpace.Conditions[{c}].Expression: `{}` at {}: {e}",
                cond.text,
                at.join(", ")
            ),
        )
    })
}

fn walk(
    spec: &TuneSpec,
    at_depth: &[Vec<usize>],
    depth: usize,
    prefix: u64,
    env: &mut Vec<Value>,
    out: &mut Vec<u64>,
) -> Result<()> {
    if depth == spec.params.len() {
        out.push(prefix);
        return Ok(());
    }
    let values = &spec.params[depth].values;
    'value: for (k, v) in values.iter().enumerate() {
        env[depth] = v.clone();
        for &c in &at_depth[depth] {
            if !check(spec, c, env)? {
                continue 'value;
            }
        }
        let index = prefix * values.len() as u64 + k as u64;
        walk(spec, at_depth, depth + 1, index, env, out)?;
    }
    Ok(())
}

/// The selected configuration indices, ascending. `valid` is ascending (as `enumerate` gives
/// it); an index of `Selection::Indices` that is not in it is an error naming the index.
pub fn select(valid: &[u64], selection: &Selection) -> Result<Vec<u64>> {
    Ok(match *selection {
        Selection::All => valid.to_vec(),
        Selection::Indices(ref wanted) => {
            let mut picked = wanted.clone();
            picked.sort_unstable();
            picked.dedup();
            if let Some(bad) = picked.iter().find(|i| valid.binary_search(i).is_err()) {
                return Err(Error::invalid(
                    "configurations",
                    format!("configuration index {bad} is not a configuration of the space that meets every condition"),
                ));
            }
            picked
        }
        Selection::Sample { n, .. } if n >= valid.len() => valid.to_vec(),
        Selection::Sample { n, seed } => {
            // A partial Fisher-Yates shuffle: the first n positions are a uniform sample.
            let mut order: Vec<u64> = valid.to_vec();
            let mut rng = SplitMix64::new(seed);
            for i in 0..n {
                let j = i + rng.below((order.len() - i) as u64) as usize;
                order.swap(i, j);
            }
            let mut picked = order[..n].to_vec();
            picked.sort_unstable();
            picked
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::spec::TuneSpec;

    fn spec(params: &str, conditions: &str) -> TuneSpec {
        let text = format!(
            r#"{{"ConfigurationSpace": {{"TuningParameters": [{params}], "Conditions": [{conditions}]}},
               "KernelSpecification": {{"Language": "CUDA", "KernelName": "k", "KernelFile": "k.cu"}}}}"#
        );
        TuneSpec::parse(&text, "test.json").unwrap()
    }

    #[test]
    fn the_product_is_filtered_by_the_conditions() {
        let s = spec(
            r#"{"Name": "a", "Values": "[1, 2, 3]"}, {"Name": "b", "Values": "[10, 20]"}"#,
            r#"{"Expression": "a * b != 20"}, {"Expression": "a != 3"}"#,
        );
        // Indices a_k * 2 + b_k: (1,10)=0 passes, (1,20)=1 and (2,10)=2 have a*b = 20,
        // (2,20)=3 passes, (3,10)=4 and (3,20)=5 have a = 3.
        assert_eq!(enumerate(&s).unwrap(), vec![0, 3]);
        let c = configuration(&s, 3);
        assert_eq!(c.values, vec![Value::Int(2), Value::Int(20)]);
        let c = configuration(&s, 5);
        assert_eq!(c.values, vec![Value::Int(3), Value::Int(20)]);
    }

    #[test]
    fn a_sample_is_distinct_sorted_and_reproducible() {
        let valid: Vec<u64> = (0..1000).map(|k| k * 3).collect();
        let a = select(&valid, &Selection::Sample { n: 50, seed: 7 }).unwrap();
        let b = select(&valid, &Selection::Sample { n: 50, seed: 7 }).unwrap();
        let c = select(&valid, &Selection::Sample { n: 50, seed: 8 }).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.len(), 50);
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert!(a.iter().all(|x| valid.contains(x)));
        assert_eq!(
            select(&valid, &Selection::Sample { n: 5000, seed: 1 })
                .unwrap()
                .len(),
            1000
        );
        assert_eq!(select(&valid, &Selection::All).unwrap(), valid);
    }

    #[test]
    fn explicit_indices_are_sorted_deduplicated_and_checked() {
        // The valid indices of a space are multiples of 3 here.
        let valid: Vec<u64> = (0..10).map(|k| k * 3).collect();
        let picked = select(&valid, &Selection::Indices(vec![27, 3, 3, 0])).unwrap();
        assert_eq!(picked, vec![0, 3, 27]);
        // 4 is in the product but not among the valid configurations; 30 is past the end.
        for bad in [4, 30] {
            let e = select(&valid, &Selection::Indices(vec![0, bad]))
                .unwrap_err()
                .to_string();
            assert!(e.contains(&format!("index {bad} ")), "{e}");
        }
    }

    #[test]
    fn a_condition_that_fails_to_evaluate_names_the_configuration() {
        let s = spec(
            r#"{"Name": "a", "Values": "[1, 0]"}"#,
            r#"{"Expression": "10 // a > 1"}"#,
        );
        let e = enumerate(&s).unwrap_err().to_string();
        assert!(
            e.contains("Conditions[0]") && e.contains("a=0") && e.contains("division by zero"),
            "{e}"
        );
    }
}
