//! The device catalogue as a user meets it: through the built binary (`devices`, `device show`,
//! `device check`, `device import`, `--device-file`). Expected values are datasheet or paper
//! figures written here with their arithmetic, never output copied from the program.

use crate::common::output as kerneltime;

use std::path::PathBuf;

use serde_json::Value;

fn stdout_json(args: &[&str]) -> Value {
    let out = kerneltime(args);
    assert!(
        out.status.success(),
        "kerneltime {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("valid JSON on stdout")
}

fn devices() -> Vec<Value> {
    match stdout_json(&["devices", "--json"]) {
        Value::Array(v) => v,
        other => panic!("devices --json is not an array: {other}"),
    }
}

fn show(name: &str) -> Value {
    stdout_json(&["device", "show", name, "--json"])
}

fn scratch(file: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("kerneltime-catalogue-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(file)
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{}: `{key}` is not a number", v["name"]))
}

#[test]
fn devices_json_lists_at_least_60_gpus_with_the_contract_fields() {
    let all = devices();
    assert!(all.len() >= 60, "only {} devices", all.len());
    let numeric = [
        "sm_count",
        "cores_per_sm",
        "core_clock_mhz",
        "registers_per_sm",
        "max_threads_per_sm",
        "max_warps_per_sm",
        "max_blocks_per_sm",
        "shared_memory_per_sm_bytes",
        "shared_memory_per_block_optin_bytes",
        "reserved_shared_memory_per_block_bytes",
        "memory_bandwidth_gbs",
    ];
    for d in &all {
        assert!(d["name"].as_str().is_some_and(|n| !n.is_empty()), "{d}");
        let cc = d["compute_capability"]
            .as_str()
            .expect("compute_capability is a string");
        let (major, minor) = cc.split_once('.').expect("compute capability like \"8.0\"");
        assert!(
            major.parse::<u32>().is_ok() && minor.parse::<u32>().is_ok(),
            "{cc}"
        );
        for key in numeric {
            assert!(d[key].is_number(), "{}: `{key}` missing", d["name"]);
        }
    }
    let real = all
        .iter()
        .filter(|d| !d["name"].as_str().unwrap().ends_with("(puchala2022)"))
        .count();
    assert!(
        real >= 65,
        "only {real} real GPUs besides the paper profiles"
    );
}

/// Every GPU the seed papers measure, by the name or alias the paper uses, with its compute
/// capability (CUDA programming guide, "CUDA-enabled GPUs" list).
#[test]
fn every_seed_gpu_is_in_the_catalogue() {
    let seeds = [
        // puchala2022
        ("GeForce GT 720M", "2.1"),
        ("Quadro K1000M", "3.0"),
        ("GeForce GTX 860M", "5.0"),
        ("GeForce GTX 1070", "6.1"),
        ("GeForce RTX 2060", "7.5"),
        ("GeForce RTX 2080", "7.5"),
        ("GeForce RTX 2080 Ti", "7.5"),
        // wang2019 (spellings as in its Table III)
        ("Quadro K600", "3.0"),
        ("GeForce GTX645", "3.0"),
        ("Quadro K620", "5.0"),
        ("GeForce 940M", "5.0"),
        // wu2019
        ("Tesla C2050", "2.0"),
        ("Tesla K20c", "3.5"),
        ("Quadro M5000", "5.2"),
        ("Tesla P100", "6.0"),
        // parra2016
        ("Tesla K40", "3.5"),
        ("K40c", "3.5"),
        ("Tesla K40m", "3.5"),
        ("GeForce GTX660", "3.0"),
    ];
    for (name, cc) in seeds {
        let d = show(name);
        assert_eq!(d["compute_capability"], cc, "{name}");
        assert!(
            !d["name"].as_str().unwrap().contains("puchala2022"),
            "{name} resolves to a paper profile"
        );
    }
    // wu2019 used the 16 GB PCIe P100 (Table 2: 16 GB, 732.2 GB/s).
    let p100 = show("Tesla P100");
    assert_eq!(p100["memory_size_bytes"], 16u64 * 1024 * 1024 * 1024);
    assert_eq!(
        num(&p100, "boost_clock_mhz"),
        1303.0,
        "PCIe boost, not SXM2's 1480"
    );
    // The K40c and K40m are the same GPU as the K40.
    assert_eq!(show("K40c")["name"], show("Tesla K40m")["name"]);
}

/// puchala2022 Table 3, typed from the paper:
/// CC, device, F [MHz], N_sm, N_c/sm, L_b/sm, L_w/sm, then t_p [us] and t_m [cycles] for DWT
/// matrix and DWT lattice.
/// CC, device, F, N_sm, N_c/sm, L_b/sm, L_w/sm, [t_p, t_m (matrix), t_p, t_m (lattice)].
type Table3Row = (
    &'static str,
    &'static str,
    f64,
    u64,
    u64,
    u64,
    u64,
    [f64; 4],
);

#[test]
fn the_six_puchala2022_profiles_are_as_printed() {
    #[rustfmt::skip]
    let table3: [Table3Row; 6] = [
        ("2.1", "GeForce GT 720M", 1550.0, 2, 32, 8, 48, [18.7, 9.5, 11.0, 33.0]),
        ("3.0", "Quadro K1000M", 706.0, 2, 192, 16, 64, [11.2, 33.0, 11.2, 47.0]),
        ("5.0", "GeForce GTX 860M", 1020.0, 5, 128, 32, 64, [8.7, 17.0, 7.9, 15.0]),
        ("6.1", "GeForce GTX 1070", 1760.0, 10, 128, 32, 64, [6.3, 18.5, 5.8, 19.0]),
        ("7.5", "GeForce RTX 2060", 1200.0, 30, 64, 16, 32, [5.2, 1.1, 5.0, 12.5]),
        ("7.5", "GeForce RTX 2080", 1545.0, 68, 64, 16, 32, [5.2, 1.1, 5.6, 12.3]),
    ];
    let names: Vec<String> = devices()
        .iter()
        .map(|d| d["name"].as_str().unwrap().to_string())
        .collect();
    for (cc, device, f, n_sm, cores, blocks, warps, p) in table3 {
        let name = format!("{device} (puchala2022)");
        assert!(names.contains(&name), "{name} missing from devices --json");
        let d = show(&name);
        assert_eq!(d["compute_capability"], cc, "{name}");
        assert_eq!(num(&d, "core_clock_mhz"), f, "{name}");
        assert_eq!(d["sm_count"], n_sm, "{name}");
        assert_eq!(d["cores_per_sm"], cores, "{name}");
        assert_eq!(d["limits"]["max_blocks_per_sm"], blocks, "{name}");
        assert_eq!(d["limits"]["max_warps_per_sm"], warps, "{name}");
        assert_eq!(d["limits"]["max_threads_per_block"], 1024, "{name}");
        let m = &d["puchala"]["dwt-matrix"];
        let l = &d["puchala"]["dwt-lattice"];
        assert_eq!(
            [num(m, "t_p_us"), num(m, "t_m_cycles")],
            [p[0], p[1]],
            "{name}"
        );
        assert_eq!(
            [num(l, "t_p_us"), num(l, "t_m_cycles")],
            [p[2], p[3]],
            "{name}"
        );
        // The table's short spelling (e.g. "GT 720M (puchala2022)") is an alias.
        let short = device
            .trim_start_matches("GeForce ")
            .trim_start_matches("Quadro ");
        assert_eq!(
            show(&format!("{short} (puchala2022)"))["name"],
            name.as_str()
        );
    }
}

/// The amaris2018 measurement files name GPUs as its deviceInfo.csv does; each spelling is an
/// alias, with the compute capability the dataset lists.
#[test]
fn amaris2018_spellings_resolve() {
    let dataset = [
        ("GTX-680", "3.0"),
        ("Tesla-K40", "3.5"),
        ("Tesla-K20", "3.5"),
        ("TitanBlack", "3.5"),
        ("Titan", "3.5"),
        ("Quadro", "3.5"),
        ("GTX-750", "5.0"),
        ("TitanX", "5.2"),
        ("GTX-980", "5.2"),
        ("GTX-970", "5.2"),
    ];
    for (name, cc) in dataset {
        assert_eq!(show(name)["compute_capability"], cc, "{name}");
    }
    // With the shared data present, every gpu_name of the dataset's own table resolves.
    let csv = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/data/measurements/amaris2018/deviceInfo.csv"
    );
    let Ok(text) = std::fs::read_to_string(csv) else {
        eprintln!("skipping the deviceInfo.csv check: {csv} is absent");
        return;
    };
    for line in text.lines().skip(1) {
        let fields: Vec<&str> = line.split(',').map(|f| f.trim_matches('"')).collect();
        assert_eq!(show(fields[2])["compute_capability"], fields[0], "{line}");
    }
}

#[test]
fn device_show_ignores_case_spaces_and_dashes_and_takes_aliases() {
    let expected = "GeForce RTX 4090";
    for spelling in [
        "GEFORCE rtx 4090",
        "rtx-4090",
        "RTX_4090",
        "nvidia geforce rtx 4090",
    ] {
        assert_eq!(show(spelling)["name"], expected, "{spelling}");
    }
    assert_eq!(show("h100")["name"], show("H100 SXM5")["name"]);
    let text = kerneltime(&["device", "show", "a100"]);
    assert!(text.status.success());
    let out = String::from_utf8_lossy(&text.stdout);
    // Sources are footnotes: each distinct source text is printed once, after the values.
    assert!(out.contains("[1]") && out.contains("sources:"), "{out}");
    let whitepaper = "A100 Tensor Core GPU Architecture whitepaper";
    assert_eq!(out.matches(whitepaper).count(), 1, "{out}");
}

#[test]
fn an_unknown_name_exits_2_and_lists_close_names() {
    let out = kerneltime(&["device", "show", "RTX 4091"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("RTX 4091") && err.contains("GeForce RTX 4090"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn an_unknown_key_in_a_device_file_exits_2_naming_the_key() {
    let good = concat!(env!("CARGO_MANIFEST_DIR"), "/data/devices/tesla-t4.toml");
    let text = std::fs::read_to_string(good).unwrap();
    // Top-level keys go before the first table header.
    let bad = text.replacen("name = ", "sm_cuont = 40\nname = ", 1);
    let path = scratch("unknown-key.toml");
    std::fs::write(&path, bad).unwrap();
    let p = path.to_str().unwrap();
    for args in [
        vec!["device", "check", p],
        vec![
            "occupancy",
            "--device-file",
            p,
            "--threads-per-block",
            "128",
        ],
    ] {
        let out = kerneltime(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("sm_cuont"), "{args:?}: {err}");
    }
    // The unmodified file passes.
    assert!(kerneltime(&["device", "check", good]).status.success());
}

/// Physical plausibility of every entry, per architecture.
#[test]
fn every_entry_is_physically_plausible() {
    for d in devices() {
        let name = d["name"].as_str().unwrap();
        let arch = d["architecture"].as_str().unwrap();
        let cores = d["cores_per_sm"].as_u64().unwrap();
        let allowed: &[u64] = match arch {
            "Fermi" => &[32, 48],
            "Kepler" => &[192],
            "Maxwell" => &[128],
            "Pascal" => &[64, 128],
            "Volta" | "Turing" => &[64],
            "Ampere" => &[64, 128],
            "Ada" | "Hopper" | "Blackwell" => &[128],
            other => panic!("{name}: unknown architecture {other}"),
        };
        assert!(
            allowed.contains(&cores),
            "{name}: {cores} cores per SM on {arch}"
        );
        for key in ["base_clock_mhz", "boost_clock_mhz", "core_clock_mhz"] {
            let mhz = num(&d, key);
            assert!((300.0..=3000.0).contains(&mhz), "{name}: {key} = {mhz}");
        }
        assert!(
            num(&d, "base_clock_mhz") <= num(&d, "boost_clock_mhz"),
            "{name}"
        );
        let bw = num(&d, "memory_bandwidth_gbs");
        assert!((10.0..=10_000.0).contains(&bw), "{name}: {bw} GB/s");
        let l2 = d["l2_cache_bytes"].as_u64().unwrap();
        assert!(l2 > 0 && l2 <= 200 * 1024 * 1024, "{name}: L2 {l2}");
        let l1 = d["l1_shared_per_sm_bytes"].as_u64().unwrap();
        assert!(
            l1 >= d["shared_memory_per_sm_bytes"].as_u64().unwrap(),
            "{name}: L1/shared {l1} below the shared memory limit"
        );
        assert!(d["sm_count"].as_u64().unwrap() >= 1, "{name}");
    }
}

/// Total CUDA cores against the datasheet figure.
#[test]
fn core_totals_match_the_datasheets() {
    let totals = [
        ("H100 SXM", 132 * 128, 16896),
        ("A100", 108 * 64, 6912),
        ("RTX 4090", 128 * 128, 16384),
        ("Tesla V100 SXM2", 80 * 64, 5120),
        ("Tesla T4", 40 * 64, 2560),
        ("Tesla K40", 15 * 192, 2880),
        ("Tesla C2050", 14 * 32, 448),
        ("GTX 1080 Ti", 28 * 128, 3584),
        ("GTX Titan X", 24 * 128, 3072),
        ("RTX 5090", 170 * 128, 21760),
        ("L40S", 142 * 128, 18176),
    ];
    for (name, product, datasheet) in totals {
        assert_eq!(product, datasheet, "{name}: arithmetic in the test");
        let d = show(name);
        let total = d["sm_count"].as_u64().unwrap() * d["cores_per_sm"].as_u64().unwrap();
        assert_eq!(total, datasheet, "{name}");
    }
}

/// deviceQuery output for a Tesla V100-SXM2-16GB, written for this test in the samples' layout.
/// V100 SXM2: 80 SMs x 64 cores, 1530 MHz, HBM2 at 877 MHz on a 4096-bit bus, 6 MB L2
/// (Tesla V100 whitepaper, Table 1).
const V100_DEVICE_QUERY: &str = r#"./deviceQuery Starting...

 CUDA Device Query (Runtime API) version (CUDART static linking)

Detected 1 CUDA Capable device(s)

Device 0: "Tesla V100-SXM2-16GB"
  CUDA Driver Version / Runtime Version          11.4 / 11.4
  CUDA Capability Major/Minor version number:    7.0
  Total amount of global memory:                 16160 MBytes (16945512448 bytes)
  (80) Multiprocessors, ( 64) CUDA Cores/MP:     5120 CUDA Cores
  GPU Max Clock rate:                            1530 MHz (1.53 GHz)
  Memory Clock rate:                             877 Mhz
  Memory Bus Width:                              4096-bit
  L2 Cache Size:                                 6291456 bytes
  Total amount of constant memory:               65536 bytes
  Total amount of shared memory per block:       49152 bytes
  Total shared memory per multiprocessor:        98304 bytes
  Total number of registers available per block: 65536
  Warp size:                                     32
  Maximum number of threads per multiprocessor:  2048
  Maximum number of threads per block:           1024
Result = PASS
"#;

#[test]
fn device_import_writes_a_device_file_from_device_query_output() {
    let input = scratch("v100-devicequery.txt");
    std::fs::write(&input, V100_DEVICE_QUERY).unwrap();
    let output = scratch("v100.toml");
    let out = kerneltime(&[
        "device",
        "import",
        input.to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d = stdout_json(&["device", "check", output.to_str().unwrap(), "--json"]);
    assert_eq!(d["name"], "Tesla V100-SXM2-16GB");
    assert_eq!(d["compute_capability"], "7.0");
    assert_eq!(d["architecture"], "Volta");
    assert_eq!(d["sm_count"], 80);
    assert_eq!(d["cores_per_sm"], 64);
    assert_eq!(num(&d, "core_clock_mhz"), 1530.0);
    assert_eq!(d["l2_cache_bytes"], 6 * 1024 * 1024);
    // 2 transfers x 877 MHz x 4096 bits / 8 = 898048 MB/s (whitepaper: 900 GB/s).
    let bw = num(&d, "memory_bandwidth_gbs");
    assert!(
        (bw - 2.0 * 877.0 * 4096.0 / 8.0 / 1000.0).abs() < 1e-9,
        "{bw}"
    );
    assert!(d["sources"]["sm_count"]
        .as_str()
        .unwrap()
        .starts_with("deviceQuery output"));

    // --name renames it.
    let renamed = stdout_json(&[
        "device",
        "import",
        input.to_str().unwrap(),
        "--name",
        "lab V100",
        "--json",
    ]);
    assert_eq!(renamed["name"], "lab V100");
}

#[test]
fn device_import_of_other_text_exits_2_naming_the_missing_line() {
    let input = scratch("not-devicequery.txt");
    std::fs::write(&input, "Sat Jan  1 00:00:00 2000\n| NVIDIA-SMI 550.54 |\n").unwrap();
    let out = kerneltime(&["device", "import", input.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("CUDA Capability Major/Minor version number"),
        "{err}"
    );
}

#[test]
fn a_laptop_part_is_timed_at_the_geometric_middle_of_its_clock_range() {
    // NVIDIA's RTX 3060 Laptop GPU specifications: boost 1283-1703 MHz, set by the laptop's power
    // limit. The catalogue keeps 1703 as the boost clock and times cycles at the geometric middle,
    // sqrt(1283 x 1703) = 1478.2 MHz, rounded to 1478.
    let laptop = show("RTX 3060 Laptop");
    assert_eq!(num(&laptop, "boost_clock_mhz"), 1703.0);
    let middle = (1283.0f64 * 1703.0).sqrt();
    assert!((num(&laptop, "core_clock_mhz") - middle).abs() < 0.5);

    // A small launch: its time is the simulated cycles at that clock plus the launch overhead,
    // and the prediction says which clock and why. The same file without `core_clock_mhz` is
    // timed at the boost clock (its cycles differ a little: DRAM's bytes per second are fewer
    // bytes per core cycle at a faster clock).
    let ptx = scratch("clock.ptx");
    std::fs::write(
        &ptx,
        ".version 7.0\n.target sm_86\n.address_size 64\n.visible .entry k(.param .u64 out)\n{\n\
         .reg .f32 %f<3>;\n.reg .b64 %rd<2>;\nld.param.u64 %rd1, [out];\n\
         mov.f32 %f1, 0f3F800000;\nadd.f32 %f2, %f1, %f1;\nadd.f32 %f2, %f2, %f1;\n\
         st.global.f32 [%rd1], %f2;\nret;\n}\n",
    )
    .unwrap();
    let ptx = ptx.to_str().unwrap();
    let predict = |device: &[&str]| {
        let mut args = vec!["predict", "--model", "trace", "--ptx", ptx, "--entry", "k"];
        args.extend(["--grid", "30", "--block", "256", "--json"]);
        args.extend(device);
        let p = stdout_json(&args);
        let overhead = p["breakdown"]["launch_overhead_us"].as_f64().unwrap();
        (
            num(&p, "cycles"),
            num(&p, "time_us") - overhead,
            p["notes"].to_string(),
        )
    };
    let (cycles, us, notes) = predict(&["--device", "RTX 3060 Laptop"]);
    assert!(cycles > 0.0);
    assert!(
        (us * 1478.0 / cycles - 1.0).abs() < 1e-6,
        "{us} us, {cycles} cycles"
    );
    assert!(
        notes.contains("1478 MHz, not the 1703 MHz boost clock"),
        "{notes}"
    );

    let file =
        env!("CARGO_MANIFEST_DIR").to_string() + "/data/devices/geforce-rtx-3060-laptop.toml";
    let text = std::fs::read_to_string(file).unwrap();
    let at_boost: String = text
        .lines()
        .filter(|l| !l.starts_with("core_clock_mhz"))
        .map(|l| l.to_string() + "\n")
        .collect();
    let boost_file = scratch("laptop-at-boost.toml");
    std::fs::write(&boost_file, at_boost).unwrap();
    let (boost_cycles, boost_us, boost_notes) =
        predict(&["--device-file", boost_file.to_str().unwrap()]);
    assert!((boost_us * 1703.0 / boost_cycles - 1.0).abs() < 1e-6);
    assert!(!boost_notes.contains("boost clock"), "{boost_notes}");

    // A user who knows their laptop's clock gives it: the bottom of the range here.
    let (low_cycles, low_us, low_notes) =
        predict(&["--device", "RTX 3060 Laptop", "--clock-mhz", "1283"]);
    assert!((low_us * 1283.0 / low_cycles - 1.0).abs() < 1e-6);
    assert!(
        low_notes.contains("1283 MHz, not the 1703 MHz boost clock: given with --clock-mhz"),
        "{low_notes}"
    );
}
