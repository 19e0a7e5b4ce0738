//! LSLAG fitting end to end on synthetic measurements generated from the paper's Table II
//! parameter sets on the paper's grid (S = 512..16384 and gamma = 8..256, powers of two,
//! 10 repetitions: 360 rows, split 288/72 as in the paper).

use std::path::Path;

use kerneltime::fit::lslag::{fit, parse_samples_csv, FitOptions, Sample};
use kerneltime::fit::split::SplitMix64;
use kerneltime::model::lslag::{builtins, LslagParams};

const S_GRID: [f64; 6] = [512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0];
const GAMMA_GRID: [f64; 6] = [8.0, 16.0, 32.0, 64.0, 128.0, 256.0];

/// 360 samples of `p`; with `noise > 0` each measured time (t_w, t_1, t_k) is multiplied by
/// `1 + noise * z`, z standard normal from a seeded generator.
fn samples(p: &LslagParams, noise: f64, seed: u64) -> Vec<Sample> {
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::new();
    for s in S_GRID {
        for gamma in GAMMA_GRID {
            for _ in 0..10 {
                let t = p.times(gamma, s).unwrap();
                let mut jitter = |v: f64| v * (1.0 + noise * rng.normal());
                out.push(Sample {
                    line: out.len() + 2,
                    gamma,
                    s,
                    t_w: jitter(t.t_w),
                    t_1: jitter(t.t_1),
                    t_k: jitter(t.t_k),
                });
            }
        }
    }
    out
}

/// `|got - want| <= 1e-6 * |want|`, or `|got| <= 1e-9` for a parameter that is 0 in Table II.
fn recovered(got: f64, want: f64) -> bool {
    if want == 0.0 {
        got.abs() <= 1e-9
    } else {
        (got - want).abs() <= 1e-6 * want.abs()
    }
}

#[test]
fn noiseless_samples_recover_every_table_ii_set() {
    for p in builtins() {
        let name = format!("{:?} on {:?}", p.app, p.platform);
        let report = fit(
            &samples(&p, 0.0, 1),
            &FitOptions::default(),
            Path::new("gen"),
        )
        .unwrap();
        assert_eq!((report.train_rows, report.test_rows), (288, 72));
        let q = &report.params;
        for (got, want) in [
            (q.gpu, p.gpu),
            (q.host, p.host),
            (q.interconnect, p.interconnect),
        ] {
            assert!(
                recovered(got.alpha, want.alpha) && recovered(got.beta, want.beta),
                "{name}: fitted {got:?}, Table II {want:?}"
            );
        }
        // A perfect model orders the test set perfectly (ties in both sides are the repetitions).
        let tau = report.lslag.fidelity.unwrap();
        assert!((tau - 1.0).abs() < 1e-12, "{name}: fidelity {tau}");
    }
}

/// Fidelity of LSLAG and LSLA on 5 %-noise samples of `p` (noise seed and split seed given).
fn noisy_fidelity(p: &LslagParams, noise_seed: u64, split_seed: u64) -> (f64, f64) {
    let data = samples(p, 0.05, noise_seed);
    let opts = FitOptions {
        seed: split_seed,
        ..FitOptions::default()
    };
    let report = fit(&data, &opts, Path::new("gen")).unwrap();
    for c in [
        report.params.gpu,
        report.params.host,
        report.params.interconnect,
    ] {
        assert!(c.alpha >= 0.0 && c.beta >= 0.0);
    }
    (
        report.lslag.fidelity.unwrap(),
        report.lsla.fidelity.unwrap(),
    )
}

/// Digital predistortion on the Baffin (Table II row B2) has the largest parallel share: at
/// gamma = 8 its parallel part is (0.005 + 0.002 + 0.060) / 8 = 0.0084 per item against
/// 0.049 + 0.003 + 0.000 = 0.052 (16 %), so gamma moves t_w well beyond 5 % noise. Its fidelity
/// must stay above 0.85 for every noise and split seed tried.
#[test]
fn five_percent_noise_keeps_fidelity_above_0_85() {
    let b2 = builtins()
        .into_iter()
        .find(|p| p.app.as_deref() == Some("digital_predistortion"))
        .unwrap();
    for seed in 0..10 {
        let (lslag, lsla) = noisy_fidelity(&b2, 1000 + seed, seed);
        println!("B2 seed {seed}: fidelity LSLAG {lslag:.3}, LSLA {lsla:.3}");
        assert!(lslag > 0.85, "seed {seed}: LSLAG fidelity {lslag}");
    }
}

/// In the other Table II sets the parallel part at gamma = 8 is 0.07-3 % of the per-item cost
/// (B3: 0.006 / 8 against 1.125; M3: 0.107 / 8 against 0.483), below the noise,
/// so test pairs that differ only in gamma (or only in repetition) are ordered by the noise:
/// their fidelity sits near 0.85 (0.80-0.90 over 30 seeds). Reported, with a floor of 0.75.
#[test]
fn five_percent_noise_fidelity_of_every_set_is_reported() {
    for p in builtins() {
        let (lslag, lsla) = noisy_fidelity(&p, 100, 7);
        println!(
            "{} on {}: fidelity LSLAG {lslag:.3}, LSLA {lsla:.3}",
            p.app.as_deref().unwrap_or("?"),
            p.platform.as_deref().unwrap_or("?")
        );
        assert!(lslag > 0.75, "{:?}: LSLAG fidelity {lslag}", p.app);
    }
}

#[test]
fn same_seed_same_report_and_params_file_round_trip() {
    let p = &builtins()[0];
    let data = samples(p, 0.05, 3);
    let a = fit(&data, &FitOptions::default(), Path::new("gen")).unwrap();
    let b = fit(&data, &FitOptions::default(), Path::new("gen")).unwrap();
    assert_eq!(a, b);
    let text = a.params.to_toml_string().unwrap();
    let back = LslagParams::from_toml_str(&text, Path::new("p.toml")).unwrap();
    assert_eq!(back, a.params);
}

#[test]
fn csv_text_round_trip() {
    // Rows written as CSV parse back to the same samples, with their line numbers.
    let p = &builtins()[1];
    let data = samples(p, 0.0, 1);
    let mut text = String::from("gamma,s,t_w,t_1,t_k\n");
    for x in &data {
        text.push_str(&format!(
            "{},{},{},{},{}\n",
            x.gamma, x.s, x.t_w, x.t_1, x.t_k
        ));
    }
    let parsed = parse_samples_csv(&text, Path::new("gen.csv")).unwrap();
    assert_eq!(parsed, data);
}
