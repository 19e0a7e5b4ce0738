//! Fuzz target: any bytes through the whole PTX frontend (parse, CFG, loops, classes, kernel
//! program), the streamed analysis of `kerneltime analyze --json`, and the warp emulator on a
//! one-warp launch (calls, vector operands, textures and parameter space included) with a small
//! step budget (4,000 warp instructions per warp, 16,000 per launch: a looping input costs
//! milliseconds, so 10 M executions fit in hours rather than days). Run with
//! `cargo +nightly fuzz run parse_ptx fuzz/corpus/parse_ptx tests/fixtures/ptx tests/fixtures/ptx/shapes -- -runs=10000000`
//! (seed corpus: the fixtures, including the shapes of public PTX in `tests/fixtures/ptx/shapes`).
#![no_main]

use kerneltime::emulate::{emulate, ArgValue, KernelArg, LaunchDims, Options};
use kerneltime::ptx::analysis::{analyze_each, analyze_function, JsonEntries};
use kerneltime::ptx::program::MemoryDurations;
use kerneltime::ptx::{parse_bytes, text_of};
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
    let mut json = JsonEntries::new(std::io::sink());
    let _ = analyze_each(&text_of(data), None, durations, &[], |e| json.entry(&e));
    let launch = LaunchDims {
        grid: [1, 1, 1],
        block: [32, 1, 1],
    };
    let opts = Options {
        step_budget: 4_000,
        launch_budget: 16_000,
        ..Options::default()
    };
    for f in module.entries().take(4) {
        // Every scalar parameter gets 3; aggregates get a field at offset 0.
        let args: Vec<KernelArg> = f
            .params
            .iter()
            .enumerate()
            .map(|(k, p)| match p.array {
                Some(_) => KernelArg::field(k.to_string(), 0, ArgValue::Int(3)),
                None => KernelArg::new(k.to_string(), ArgValue::Int(3)),
            })
            .collect();
        let _ = emulate(&module, &f.name, launch, &args, opts);
    }
});
