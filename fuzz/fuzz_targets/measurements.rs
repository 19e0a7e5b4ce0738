//! Fuzz target: every measurement reader (generic CSV, nvprof CSV and log, nsys, Nsight Compute,
//! Kernel Tuner, KTT JSON and CSV, T4, counters tables), through format detection and through
//! each reader forced, plus gzip decoding with its size cap. The first byte picks the route.
//! Run with `RUSTC_BOOTSTRAP=1 cargo fuzz run measurements -- -runs=10000000`.
#![no_main]

use kerneltime::fit::measurements::{parse_text, Format};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let format = match usize::from(pick) % (Format::ALL.len() + 1) {
        0 => None,
        k => Some(Format::ALL[k - 1]),
    };
    if let Ok(set) = parse_text(text, "fuzz.csv", format) {
        assert!(!set.measurements.is_empty());
        for m in &set.measurements {
            assert!(m.time_us.is_finite(), "{m:?}");
        }
    }
});
