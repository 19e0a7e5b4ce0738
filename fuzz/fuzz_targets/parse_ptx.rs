//! Fuzz target: any bytes through the whole PTX frontend (parse, CFG, loops, classes, kernel
//! program). Run with `cargo +nightly fuzz run parse_ptx -- -runs=10000000`
//! (seed corpus: `tests/fixtures/ptx/*.ptx`).
#![no_main]

use kerneltime::ptx::analysis::analyze_function;
use kerneltime::ptx::parse_bytes;
use kerneltime::ptx::program::MemoryDurations;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (module, _diags) = parse_bytes(data);
    let durations = MemoryDurations {
        load_cycles: 1.0,
        store_cycles: 1.0,
    };
    for f in &module.functions {
        let _ = analyze_function(f, durations);
    }
});
