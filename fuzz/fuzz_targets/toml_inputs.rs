//! Fuzz target: the TOML input files — analytical inputs of mwp-cwp, hong-kim, wu and roofline
//! (with and without a device), kernel programs, PTX kernel files, measurement suites,
//! calibration files and LSLAG parameter and graph files. The first byte picks the reader.
//! Run with `RUSTC_BOOTSTRAP=1 cargo fuzz run toml_inputs -- -runs=10000000`.
#![no_main]

use std::path::Path;

use kerneltime::device::catalogue;
use kerneltime::emulate::kernel_file::KernelFile;
use kerneltime::fit::calibrate::Calibration;
use kerneltime::model::lsla::Graph;
use kerneltime::model::lslag::LslagParams;
use kerneltime::suite::Suite;
use kerneltime::workload::analytical::{HongKimInputs, MwpCwpInputs, RooflineInputs, WuInputs};
use kerneltime::workload::program::ProgramFile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let device = if pick & 0x80 != 0 {
        catalogue::find("Tesla K40").ok()
    } else {
        None
    };
    match pick % 10 {
        0 => drop(MwpCwpInputs::from_toml(text, "fuzz.toml", device)),
        1 => drop(HongKimInputs::from_toml(text, "fuzz.toml", device)),
        2 => drop(WuInputs::from_toml(text, "fuzz.toml", device)),
        3 => drop(RooflineInputs::from_toml(text, "fuzz.toml")),
        4 => {
            if let Ok(p) = ProgramFile::from_toml(text, "fuzz.toml") {
                let _ = p.program.expand(&Default::default());
            }
        }
        5 => drop(KernelFile::parse(text, "fuzz.toml")),
        6 => drop(Suite::from_toml(text, Path::new("fuzz.toml"))),
        7 => drop(Calibration::from_toml(text, "fuzz.toml")),
        8 => drop(LslagParams::from_toml_str(text, Path::new("fuzz.toml"))),
        _ => drop(Graph::from_toml_str(text, Path::new("fuzz.toml"))),
    }
});
