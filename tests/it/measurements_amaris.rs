//! Reads the real amaris2018 development split (when ../shared is present) through the
//! auto-detected counters reader, gzip and all.

use std::collections::BTreeSet;
use std::path::PathBuf;

use kerneltime::fit::measurements::{read_measurements, summarize, Format};

#[test]
fn amaris2018_development_split_reads_completely() {
    let path = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/data/measurements/amaris2018/measurements_dev.csv.gz"
    ));
    if !path.exists() {
        eprintln!("skipped: {} is absent", path.display());
        return;
    }
    let set = read_measurements(&path).expect("the amaris2018 file reads");
    assert_eq!(set.format, Format::Counters);
    // The data set's README: one row per kernel launch; 131,690 data rows in this split.
    assert_eq!(set.measurements.len(), 131_690);
    assert!(set
        .measurements
        .iter()
        .all(|m| m.time_us.is_finite() && m.time_us > 0.0));
    assert!(set.measurements.iter().all(|m| m.launch().is_some()));
    let gpus: BTreeSet<&str> = set
        .measurements
        .iter()
        .filter_map(|m| m.device.as_deref())
        .collect();
    // The README lists GTX-680, GTX-970, Tesla-K20, GTX Titan and GTX Titan X (Maxwell).
    let expected: BTreeSet<&str> = ["GTX-680", "GTX-970", "Tesla-K20", "Titan", "TitanX"]
        .into_iter()
        .collect();
    assert_eq!(gpus, expected);
    let s = summarize(&set);
    assert_eq!(s.rows, 131_690);
    assert!(s.time_min_us > 0.0 && s.time_min_us <= s.time_median_us);
}
