//! Fuzz target: device description files (the catalogue's TOML schema) and the device importers
//! (CUDA deviceQuery, Accel-Sim micro-benchmark output, gpgpusim.config, kerneltime's own
//! micro-benchmarks), with detection and with each format forced; an imported draft is written
//! back as TOML and read again as a device. The first byte picks the route.
//! Run with `RUSTC_BOOTSTRAP=1 cargo fuzz run device_files -- -runs=10000000`.
#![no_main]

use kerneltime::device::import::{import, ImportFormat};
use kerneltime::device::Device;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match usize::from(pick) % (ImportFormat::ALL.len() + 2) {
        0 => {
            if let Ok(d) = Device::from_toml(text, "fuzz.toml") {
                assert!(d.core_clock_mhz.is_finite() && d.core_clock_mhz > 0.0);
            }
        }
        k => {
            let format = ImportFormat::ALL.get(k - 1).copied();
            if let Ok(draft) = import(text, "fuzz.txt", format) {
                if let Ok(toml) = draft.to_toml(Some("Fuzzed GPU")) {
                    let _ = Device::from_toml(&toml, "fuzz-import.toml");
                }
            }
        }
    }
});
