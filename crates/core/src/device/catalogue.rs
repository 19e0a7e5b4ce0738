//! The embedded device catalogue (`data/devices/*.toml`) and name lookup.
//!
//! Lookup is case-insensitive and ignores spaces, dashes and underscores; aliases count. An
//! unknown name is an error listing the closest names. Adding a GPU is adding one TOML file.

use std::sync::OnceLock;

use super::{normalize, Device};
use crate::error::{Error, Result};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/devices.rs"));
}

/// Every catalogue device, in file-name order. The test suite checks that each file loads.
pub fn all() -> &'static [Device] {
    static ALL: OnceLock<Vec<Device>> = OnceLock::new();
    ALL.get_or_init(|| {
        embedded::DEVICE_FILES
            .iter()
            .filter_map(|(file, text)| {
                Device::from_toml(text, &format!("data/devices/{file}")).ok()
            })
            .collect()
    })
}

/// Loads every embedded file, returning the first error (used by tests and `devices --check`).
pub fn check_all() -> Result<usize> {
    let mut names = std::collections::BTreeMap::new();
    for (file, text) in embedded::DEVICE_FILES {
        let d = Device::from_toml(text, &format!("data/devices/{file}"))?;
        for n in std::iter::once(&d.name).chain(d.aliases.iter()) {
            if let Some(other) = names.insert(normalize(n), d.name.clone()) {
                return Err(Error::invalid(
                    format!("data/devices/{file}"),
                    format!("name or alias `{n}` is also used by `{other}`"),
                ));
            }
        }
    }
    Ok(embedded::DEVICE_FILES.len())
}

/// The device with this name or alias; else the one device whose name or alias is the same
/// once both drop a leading vendor or product-line word ("NVIDIA", "GeForce", "Tesla",
/// "Quadro"), so that "RTX 3060 Laptop GPU" finds "GeForce RTX 3060 Laptop GPU".
pub fn find(name: &str) -> Result<&'static Device> {
    if let Some(d) = all().iter().find(|d| d.answers_to(name)) {
        return Ok(d);
    }
    let normalized = normalize(name);
    let q = without_brand(&normalized);
    let mut loose = all().iter().filter(|d| {
        std::iter::once(&d.name)
            .chain(d.aliases.iter())
            .any(|n| without_brand(&normalize(n)) == q)
    });
    if let (Some(d), None) = (loose.next(), loose.next()) {
        return Ok(d);
    }
    Err(Error::UnknownDevice {
        name: name.to_string(),
        closest: closest_names(name, 5).join(", "),
    })
}

/// The `n` catalogue names closest to `query` (substring matches first, then edit distance).
pub fn closest_names(query: &str, n: usize) -> Vec<String> {
    let q = normalize(query);
    let mut scored: Vec<(usize, &str)> = all()
        .iter()
        .map(|d| {
            let best = std::iter::once(&d.name)
                .chain(d.aliases.iter())
                .map(|cand| {
                    let c = normalize(cand);
                    if !q.is_empty() && (c.contains(&q) || q.contains(&c)) {
                        c.len().abs_diff(q.len()) / 4
                    } else {
                        edit_distance(&q, &c)
                    }
                })
                .min()
                .unwrap_or(usize::MAX);
            (best, d.name.as_str())
        })
        .collect();
    scored.sort();
    scored
        .into_iter()
        .take(n)
        .map(|(_, s)| s.to_string())
        .collect()
}

/// A normalized name without its leading vendor and product-line words.
fn without_brand(normalized: &str) -> &str {
    let mut s = normalized;
    while let Some(rest) = ["nvidia", "geforce", "tesla", "quadro"]
        .iter()
        .find_map(|w| s.strip_prefix(w).filter(|r| !r.is_empty()))
    {
        s = rest;
    }
    s
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_file_loads() {
        let n = check_all().unwrap();
        assert_eq!(n, all().len());
    }

    #[test]
    fn a_name_without_its_brand_words_finds_the_one_device() {
        let laptop = find("GeForce RTX 3060 Laptop GPU").unwrap();
        for name in ["RTX 3060 Laptop GPU", "nvidia rtx 3060 laptop gpu"] {
            assert_eq!(find(name).unwrap().name, laptop.name, "{name}");
        }
        // Exact names and aliases still come first.
        assert_eq!(find("RTX 3060").unwrap().name, "GeForce RTX 3060");
        // A brand word alone is not a name.
        assert!(find("GeForce").is_err());
        assert_eq!(without_brand("nvidiageforcertx3090"), "rtx3090");
        assert_eq!(without_brand("tesla"), "tesla");
    }

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}
