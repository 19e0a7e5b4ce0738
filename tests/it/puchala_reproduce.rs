//! `kerneltime reproduce puchala2022`: the paper's grid, CSV and SVG files.

use crate::common::{json, output as run, temp_dir};
use crate::puchala_common::*;

#[test]
fn reproduce_writes_the_grid_table_csv_and_charts() {
    let d = temp_dir("reproduce");
    let devs = other_paper_devices(&d);
    let out_dir = d.join("out");
    let mut args = vec![
        "reproduce".to_string(),
        "puchala2022".into(),
        "--out".into(),
        out_dir.display().to_string(),
        "--json".into(),
    ];
    for p in &devs {
        args.push("--device-file".into());
        args.push(p.display().to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let v = json(&args);
    let points = v["points"].as_array().unwrap();
    // 6 GPUs x 4 filter lengths x 15 sizes; each point holds a matrix and a lattice prediction.
    assert_eq!(points.len(), 6 * 4 * 15);
    for p in points {
        let ratio = p["ratio"].as_f64().unwrap();
        let m = p["matrix"]["time_us"].as_f64().unwrap();
        let l = p["lattice"]["time_us"].as_f64().unwrap();
        assert!(close(ratio, m / l));
        assert!(ratio.is_finite() && ratio > 0.0);
    }
    let csv = std::fs::read_to_string(out_dir.join("puchala2022_ratios.csv")).unwrap();
    assert!(csv.starts_with("device,k,n,matrix_time_us,lattice_time_us,ratio"));
    assert_eq!(csv.lines().count(), 1 + 360);
    assert!(csv.contains("GeForce GTX 860M (puchala2022)"));
    let svg =
        std::fs::read_to_string(out_dir.join("puchala2022_ratio_geforce-rtx-2080-puchala2022.svg"))
            .unwrap();
    assert!(svg.starts_with("<svg"));
    for label in [
        "GeForce RTX 2080 (puchala2022)",
        "K = 8",
        "K = 14",
        "2^6",
        "2^20",
        "T_matrix / T_lattice",
    ] {
        assert!(svg.contains(label), "ratio chart lacks `{label}`");
    }
    let n_svg = std::fs::read_dir(&out_dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "svg")
        })
        .count();
    assert_eq!(n_svg, 6);
}

#[test]
fn reproduce_text_table_and_skipped_profiles() {
    let d = temp_dir("reproduce_text");
    let out = run(&[
        "reproduce",
        "puchala2022",
        "--out",
        d.join("o").to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("GeForce RTX 2080 (puchala2022): modelled T_matrix / T_lattice"),
        "{text}"
    );
    assert!(text.contains("K=14") && text.contains("2^20"));
    // Profiles missing from the catalogue are listed, not fatal.
    let missing = text.matches("note: skipped").count();
    let present = text.matches(": modelled T_matrix").count();
    assert_eq!(missing + present, 6, "{text}");
}
