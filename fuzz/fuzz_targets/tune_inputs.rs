//! Fuzz target: the autotuning inputs — FAIR search-space specs (with the Python expression
//! subset they use) and measured Kernel Tuner caches or T4 results files. The first byte picks
//! the reader. Run with `RUSTC_BOOTSTRAP=1 cargo fuzz run tune_inputs -- -runs=10000000`.
#![no_main]

use kerneltime::tune::kt_cache::MeasuredCache;
use kerneltime::tune::spec::TuneSpec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    if pick % 2 == 0 {
        let _ = TuneSpec::parse(text, "fuzz.json");
    } else {
        let _ = MeasuredCache::parse(text, "fuzz.json");
    }
});
