//! Calibration: fitting a model's free parameters to measured kernel times, with bootstrap
//! intervals, the training error and a grouped k-fold cross-validated error, and the calibration
//! file (`CAL.toml`) that `predict` and `evaluate` apply.
//!
//! Measurements become [`Row`]s ([`prepare`]): the device resolved against the catalogue (or the
//! caller's device), and the model inputs (the counters path of `workload::counters`, or
//! `gamma`/`s` parameters for `lslag`). [`predict_row`] evaluates a model on a row, uncalibrated
//! (`None`) or with parameters.
//!
//! Free parameters, each within physical bounds ([`params_of`]) and, where the model has device
//! values to relate them to, a ratio to the device's own value, so that parameters fitted on one
//! GPU apply to another through that GPU's catalogue values:
//! - `roofline`: compute and memory efficiency (fractions of the device's FP32 and DRAM peaks,
//!   0.001..1) and a scale on the device's launch overhead (0..30):
//!   `t = max(compute / e_c, memory / e_m) + s * t_launch(device)`.
//! - `mwp-cwp`, `hong-kim`, `wu`: scales on the DRAM latency (0.1..10), the departure delay
//!   (0.1..50) and the arithmetic latency (0.1..10) of the inputs (the device's latency table on
//!   the counters and PTX paths), and a scale on the device's launch overhead
//!   (`model::analytical::launch_overhead_us`, 0..30) added to the model's time.
//! - `lslag`: `alpha`, `beta` of the GPU element, `t = (alpha / gamma + beta) * s` (µs): the
//!   paper's per-platform linear coefficients, which no device value scales.
//! - `puchala` (rows naming a built-in kernel, dwt-matrix, dwt-lattice or mtx-mul-vec, with its
//!   parameters `n`, `k`): `t_p` (0..100 µs; the median launch API time when the rows carry one,
//!   puchala2022 section 5.3, and then not fitted), `t_m` (0..200 core cycles) and one scale on
//!   every memory duration of the kernel program (0.05..20): the paper's own per-device
//!   parameters.
//! - `trace`: a DRAM latency scale and an L2 hit latency scale (0.2..5 each, on the device's
//!   latency table), a scale on the device's launch overhead (0..30) added to the simulated time,
//!   and a scale on the simulated time without that overhead (0.2..5). Rows of the kernel a PTX
//!   kernel file names (`fit::trace_calibration`) are simulated again for each trial and fit the
//!   first three (the time scale held at 1: it would trade against the latencies); rows that keep
//!   their simulation (a suite's cases, `suite::calibration_rows`) fit the last two, linear in
//!   them, with the latency scales held at 1.
//!
//! Fitting minimises the mean squared relative error `mean (t_model / t_measured - 1)^2` (so
//! that short and long kernels weigh alike, as the MAPE does). `lslag` is linear in its
//! parameters and is solved exactly by NNLS on rows scaled by `1 / t_measured`; the others use
//! the bounded Nelder-Mead of `fit::nelder_mead`.
//!
//! Fits are per group, for every requested [`Scope`]: per (kernel, device), per (kernel,
//! compute-capability family), per device, per family, and one global group. The file keeps the
//! devices' properties, and a (kernel, device) pair takes the first group of
//! [`FALLBACK_ORDER`] that exists, so a calibration made on some GPUs predicts others.
//!
//! Cross-validation keeps every measurement of one problem point (kernel and parameters, e.g.
//! input sizes) in the same fold, so repetitions of a point never sit on both sides. Bootstrap
//! intervals (on request) resample the fit's rows with replacement (seeded) and give the 2.5 and
//! 97.5 percentiles. Parameters the rows cannot determine are reported as warnings of their
//! group (too few rows or points, flat directions), never as zero-width intervals.
//!
mod file;
mod fit;
mod params;
mod rows;
mod validate;

pub use file::{
    family_of, Calibration, DeviceDescription, GroupCalibration, Lookup, Scope, FALLBACK_ORDER,
};
pub use fit::{fit_rows, fit_rows_from};
pub use params::{params_of, predict_row, CalibrationFile};
pub(crate) use rows::short_msg;
pub use rows::{kernel_label, prepare, prepare_with, skipped_text, Prepared, Row};
pub use validate::{calibrate, calibrate_with_progress, CalibrateOptions};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::measurements::{Counters, Dim3, Measurement};
    use crate::model::ModelId;

    /// Counter rows over a range of sizes: some compute-bound, some memory-bound.
    fn synthetic_rows(n: usize) -> Vec<Measurement> {
        (0..n)
            .map(|i| {
                let size = 1u64 << (8 + i % 12);
                let mut m =
                    Measurement::new(if i % 2 == 0 { "a" } else { "b" }, 1.0, "synthetic", i + 2);
                m.device = Some("GTX-680".into());
                m.grid = Some(Dim3::new(size.div_ceil(256).max(1), 1, 1));
                m.block = Some(Dim3::new(256, 1, 1));
                m.params
                    .insert("input_size_1".into(), serde_json::json!(size));
                m.params.insert("rep".into(), serde_json::json!(i / 24));
                let warps = (size.div_ceil(256).max(1) * 8) as f64;
                // Kernel "a": many instructions per byte; "b": few.
                let inst_per_warp = if i % 2 == 0 { 400.0 } else { 20.0 };
                m.counters = Some(Counters {
                    regs_per_thread: Some(20),
                    warps_launched: Some(warps),
                    inst_executed: Some(warps * inst_per_warp),
                    gld_transactions: Some(warps * 4.0),
                    gst_transactions: Some(warps),
                    dram_read_transactions: Some(warps * 4.0 * (1.0 + (i % 5) as f64)),
                    dram_write_transactions: Some(warps),
                    ..Counters::default()
                });
                m
            })
            .collect()
    }

    fn with_model_times(model: ModelId, truth: &[f64], ms: &mut [Measurement]) -> Prepared {
        let p = prepare(ms, model, None).unwrap();
        for (r, m) in p.rows.iter().zip(ms.iter_mut()) {
            m.time_us = predict_row(model, &p.devices[r.device], r, Some(truth)).unwrap();
        }
        prepare(ms, model, None).unwrap()
    }

    #[test]
    fn roofline_calibration_recovers_its_own_parameters() {
        let truth = [0.35, 0.8, 4.2];
        let mut ms = synthetic_rows(96);
        let p = with_model_times(ModelId::Roofline, &truth, &mut ms);
        assert_eq!(p.rows.len(), 96);
        let opts = CalibrateOptions {
            scopes: vec![Scope::Device],
            folds: 4,
            bootstrap: 3,
            ..CalibrateOptions::default()
        };
        let c = calibrate(ModelId::Roofline, &p, &opts, "synthetic").unwrap();
        assert_eq!(c.groups.len(), 1);
        let g = &c.groups[0];
        for (s, t) in params_of(ModelId::Roofline).iter().zip(truth) {
            assert!(
                (g.params[s.name] - t).abs() < 1e-6,
                "{}: {} vs {t}",
                s.name,
                g.params[s.name]
            );
        }
        assert!(g.mape_train < 1e-6);
        // The cross-validated error is its own number, also near zero on noise-free data.
        let cv = g.mape_cv.expect("cross-validated");
        assert!(cv < 1e-5, "{cv}");
        // The file round-trips and applies.
        let text = c.to_toml().unwrap();
        let back = Calibration::from_toml(&text, "cal.toml").unwrap();
        let q = back.params_for(&p.devices[0], "a").unwrap();
        assert!((q[0] - truth[0]).abs() < 1e-6);
    }

    #[test]
    fn wu_calibration_recovers_its_own_parameters() {
        // Latency-bound rows: the departure delay and latency scale both matter.
        let truth = [1.7, 6.0, 0.8, 2.5];
        let mut ms = synthetic_rows(48);
        let p = with_model_times(ModelId::Wu, &truth, &mut ms);
        let opts = CalibrateOptions {
            scopes: vec![Scope::Device],
            folds: 0,
            bootstrap: 0,
            ..CalibrateOptions::default()
        };
        let c = calibrate(ModelId::Wu, &p, &opts, "synthetic").unwrap();
        let g = &c.groups[0];
        assert!(g.mape_train < 1e-6, "{g:?}");
        assert!(g.mape_cv.is_none());
        // Identifiable parameters: the launch overhead and the time they produce.
        assert!(
            (g.params["launch_overhead_scale"] - truth[3]).abs() < 1e-4,
            "{g:?}"
        );
    }

    #[test]
    fn lslag_calibration_is_exact_nnls() {
        let (alpha, beta) = (30.0, 0.5);
        let mut ms = Vec::new();
        for (i, gamma) in [1.0, 2.0, 4.0, 8.0].iter().enumerate() {
            for s in [10.0, 100.0, 1000.0] {
                let mut m = Measurement::new("k", (alpha / gamma + beta) * s, "lslag", i + 2);
                m.device = Some("GTX-680".into());
                m.params.insert("gamma".into(), serde_json::json!(gamma));
                m.params.insert("s".into(), serde_json::json!(s));
                ms.push(m);
            }
        }
        let p = prepare(&ms, ModelId::Lslag, None).unwrap();
        let c = calibrate(
            ModelId::Lslag,
            &p,
            &CalibrateOptions {
                bootstrap: 5,
                ..Default::default()
            },
            "x",
        )
        .unwrap();
        let g = &c.groups[0];
        assert!((g.params["alpha_us"] - alpha).abs() < 1e-6);
        assert!((g.params["beta_us"] - beta).abs() < 1e-6);
        assert!(g.mape_cv.unwrap() < 1e-9);
    }

    fn puchala_rows(truth: &[f64], api_us: Option<f64>) -> Vec<Measurement> {
        let mut ms = Vec::new();
        for k in [8.0, 12.0] {
            for e in 6..=16 {
                let mut m = Measurement::new("dwt_matrix", 1.0, "p", ms.len() + 2);
                m.device = Some("GTX 1070 (puchala2022)".into());
                m.params.insert("n".into(), serde_json::json!(2f64.powi(e)));
                m.params.insert("k".into(), serde_json::json!(k));
                m.launch_api_us = api_us;
                ms.push(m);
            }
        }
        let p = prepare(&ms, ModelId::Puchala, None).unwrap();
        assert_eq!(p.rows.len(), ms.len(), "{:?}", p.skipped);
        for (r, m) in p.rows.iter().zip(ms.iter_mut()) {
            m.time_us =
                predict_row(ModelId::Puchala, &p.devices[r.device], r, Some(truth)).unwrap();
        }
        ms
    }

    #[test]
    fn puchala_calibration_recovers_t_p_t_m_and_memory_scale() {
        let truth = [6.5, 23.0, 1.4];
        let ms = puchala_rows(&truth, None);
        let p = prepare(&ms, ModelId::Puchala, None).unwrap();
        let opts = CalibrateOptions {
            scopes: vec![Scope::Kernel],
            folds: 0,
            bootstrap: 0,
            ..Default::default()
        };
        let g = &calibrate(ModelId::Puchala, &p, &opts, "p").unwrap().groups[0];
        for (s, t) in params_of(ModelId::Puchala).iter().zip(truth) {
            assert!(
                (g.params[s.name] - t).abs() < 1e-6,
                "{}: {} vs {t}",
                s.name,
                g.params[s.name]
            );
        }
        // With launch API times in the data, t_p is their median and is not fitted.
        let ms = puchala_rows(&truth, Some(6.5));
        let p = prepare(&ms, ModelId::Puchala, None).unwrap();
        let g = &calibrate(ModelId::Puchala, &p, &opts, "p").unwrap().groups[0];
        assert_eq!(g.params["t_p_us"], 6.5);
        assert!((g.params["t_m_cycles"] - 23.0).abs() < 1e-6, "{g:?}");
    }

    #[test]
    fn groups_of_every_scope_and_warnings_instead_of_zero_width_intervals() {
        // Memory-bound launches (about 1 s): the compute efficiency never decides the roofline's
        // time anywhere in its range, so it is flagged as not identifiable and gets no interval.
        let truth = [0.35, 0.8, 1.0];
        let mut ms = synthetic_rows(48);
        for m in &mut ms {
            let c = m.counters.as_mut().unwrap();
            c.dram_read_transactions = c.dram_read_transactions.map(|v| v * 2e5);
        }
        let p = with_model_times(ModelId::Roofline, &truth, &mut ms);
        let opts = CalibrateOptions {
            folds: 2,
            bootstrap: 8,
            ..CalibrateOptions::default()
        };
        let c = calibrate(ModelId::Roofline, &p, &opts, "synthetic").unwrap();
        // One device, two kernels: kernel groups (2), kernel-architecture (2, the same rows as
        // the kernel groups), device, architecture and global (the same rows again).
        assert_eq!(c.groups.len(), 7, "{:#?}", c.groups);
        assert_eq!(c.scopes, Scope::ALL.to_vec());
        assert_eq!(c.devices.len(), 1);
        for g in &c.groups {
            assert!(
                g.warnings
                    .iter()
                    .any(|w| w.contains("`compute_efficiency` is not identifiable")),
                "{g:?}"
            );
            assert!(!g.intervals.contains_key("compute_efficiency"), "{g:?}");
            // Every estimate lies inside its own interval.
            for (k, [lo, hi]) in &g.intervals {
                let v = g.params[k];
                assert!(*lo <= v && v <= *hi, "{k}: {v} outside [{lo}, {hi}]");
            }
        }
        // Broader groups with the same rows carry the same fit.
        let global = c
            .groups
            .iter()
            .find(|g| g.scope == Some(Scope::Global))
            .unwrap();
        let device = c
            .groups
            .iter()
            .find(|g| g.scope == Some(Scope::Device))
            .unwrap();
        assert_eq!(global.params, device.params);
        assert_eq!(global.devices, vec!["GeForce GTX 680".to_string()]);

        // One row: the fit can match it exactly, so there are no intervals but a warning.
        let one = Prepared {
            rows: p.rows[..1].to_vec(),
            ..p.clone()
        };
        let c = calibrate(
            ModelId::Roofline,
            &one,
            &CalibrateOptions {
                scopes: vec![Scope::Device],
                ..opts.clone()
            },
            "one",
        )
        .unwrap();
        let g = &c.groups[0];
        assert!(g.intervals.is_empty(), "{g:?}");
        assert!(
            g.warnings.iter().any(|w| w.contains("only 1 rows")),
            "{g:?}"
        );
        assert!(
            g.warnings.iter().any(|w| w.contains("one problem point")),
            "{g:?}"
        );
    }

    #[test]
    fn unknown_models_and_missing_rows() {
        assert_eq!("puchala".parse::<ModelId>().unwrap(), ModelId::Puchala);
        assert!("nope".parse::<ModelId>().is_err());
        let ms = vec![Measurement::new("k", 1.0, "f", 2)];
        let p = prepare(&ms, ModelId::Roofline, None).unwrap();
        assert!(p.rows.is_empty());
        assert!(calibrate(ModelId::Roofline, &p, &CalibrateOptions::default(), "f").is_err());
    }
}
