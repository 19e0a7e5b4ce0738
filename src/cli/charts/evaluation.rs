//! Charts of an evaluation: puchala2022 Fig 9b's ratio characteristic (`r_k = t_model /
//! t_measured` against the measured time, with t_min, t_max and the errors), predicted against
//! measured on log-log axes, and the error per device and kernel. Each draws at most
//! [`MAX_POINTS`] points (an even stride over the rows) so that a large data set still gives a
//! small page.

use std::collections::BTreeMap;

use plotters::prelude::*;

use super::{bounds, draw_err, PALETTE};
use crate::cli::report::pct;
use kerneltime::error::Result;
use kerneltime::eval::evaluate::{Evaluation, Experiment};

/// Most points one chart draws.
pub const MAX_POINTS: usize = 4000;

/// Experiments of one model, by device.
fn by_device<'a>(exps: &[&'a Experiment]) -> BTreeMap<&'a str, Vec<&'a Experiment>> {
    let mut m: BTreeMap<&str, Vec<&Experiment>> = BTreeMap::new();
    for e in exps {
        m.entry(e.device.as_str()).or_default().push(e);
    }
    m
}

fn stride(total: usize) -> usize {
    total.div_ceil(MAX_POINTS).max(1)
}

/// puchala2022 Fig 9b for one model: `r_k = t_model / t_measured` against the measured time
/// (log axes), one colour per device, with E, Ê and the measured range in the caption.
pub fn ratio_svg(model: &str, exps: &[&Experiment]) -> Result<String> {
    let total: usize = exps.iter().map(|e| e.points.len()).sum();
    let step = stride(total);
    let (tlo, thi) = bounds(
        exps.iter()
            .flat_map(|e| e.points.iter().map(|p| p.measured_us)),
    );
    let (rlo, rhi) = bounds(exps.iter().flat_map(|e| e.points.iter().map(|p| p.ratio)));
    let (rlo, rhi) = (rlo.clamp(1e-4, 0.9), rhi.clamp(1.1, 1e4));
    let e_mean = exps.iter().map(|e| e.mape).sum::<f64>() / exps.len().max(1) as f64;
    let e_max = exps.iter().map(|e| e.max_error).fold(0.0, f64::max);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 520)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "{model}: r = t_model / t_measured   E = {} %, E^ = {} %, t_min = {:.3} us, t_max = {:.1} us",
                    pct(e_mean),
                    pct(e_max),
                    tlo * 1.5,
                    thi / 1.5
                ),
                ("sans-serif", 15),
            )
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d((tlo..thi).log_scale(), (rlo..rhi).log_scale())
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_desc("measured time [us]")
            .y_desc("r")
            .draw()
            .map_err(draw_err)?;
        chart
            .draw_series(LineSeries::new(
                [(tlo, 1.0), (thi, 1.0)],
                BLACK.stroke_width(1),
            ))
            .map_err(draw_err)?;
        for (i, (dev, es)) in by_device(exps).into_iter().enumerate() {
            let c = PALETTE[i % PALETTE.len()];
            let pts: Vec<(f64, f64)> = es
                .iter()
                .flat_map(|e| e.points.iter())
                .step_by(step)
                .map(|p| (p.measured_us, p.ratio.clamp(rlo, rhi)))
                .collect();
            chart
                .draw_series(pts.into_iter().map(|p| Circle::new(p, 2, c.filled())))
                .map_err(draw_err)?
                .label(dev.to_string())
                .legend(move |(x, y)| Circle::new((x + 8, y), 4, c.filled()));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// Predicted against measured time on log-log axes, with the diagonal.
pub fn scatter_svg(model: &str, exps: &[&Experiment]) -> Result<String> {
    let total: usize = exps.iter().map(|e| e.points.len()).sum();
    let step = stride(total);
    let (lo, hi) = bounds(
        exps.iter()
            .flat_map(|e| e.points.iter().flat_map(|p| [p.measured_us, p.model_us])),
    );
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (640, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{model}: predicted vs measured"),
                ("sans-serif", 16),
            )
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d((lo..hi).log_scale(), (lo..hi).log_scale())
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_desc("measured [us]")
            .y_desc("predicted [us]")
            .draw()
            .map_err(draw_err)?;
        chart
            .draw_series(LineSeries::new([(lo, lo), (hi, hi)], BLACK.stroke_width(1)))
            .map_err(draw_err)?;
        for (i, (dev, es)) in by_device(exps).into_iter().enumerate() {
            let c = PALETTE[i % PALETTE.len()];
            let pts: Vec<(f64, f64)> = es
                .iter()
                .flat_map(|e| e.points.iter())
                .step_by(step)
                .filter(|p| p.model_us > 0.0)
                .map(|p| (p.measured_us, p.model_us))
                .collect();
            chart
                .draw_series(pts.into_iter().map(|p| Circle::new(p, 2, c.filled())))
                .map_err(draw_err)?
                .label(dev.to_string())
                .legend(move |(x, y)| Circle::new((x + 8, y), 4, c.filled()));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// MAPE per device and kernel as horizontal bars (capped at 300 %, the value is written beside).
pub fn error_svg(model: &str, exps: &[&Experiment]) -> Result<String> {
    let n = exps.len().max(1);
    let cap = 3.0;
    let labels: Vec<String> = exps
        .iter()
        .map(|e| {
            let k: String = e.kernel.chars().take(40).collect();
            format!("{} / {k}", e.device)
        })
        .collect();
    let height = (80 + 18 * n) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{model}: MAPE per device and kernel"),
                ("sans-serif", 16),
            )
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(330)
            .build_cartesian_2d(0f64..cap * 100.0 * 1.15, -0.5f64..n as f64 - 0.5)
            .map_err(draw_err)?;
        let label_of = |v: &f64| {
            let i = v.round();
            if (v - i).abs() < 0.01 && i >= 0.0 && (i as usize) < labels.len() {
                labels[i as usize].clone()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .y_labels(n * 2 + 1)
            .y_label_formatter(&label_of)
            .x_desc("MAPE [%]")
            .disable_y_mesh()
            .label_style(("sans-serif", 11))
            .draw()
            .map_err(draw_err)?;
        let devices: Vec<&str> = by_device(exps).keys().copied().collect();
        chart
            .draw_series(exps.iter().enumerate().map(|(i, e)| {
                let c = PALETTE
                    [devices.iter().position(|d| *d == e.device).unwrap_or(0) % PALETTE.len()];
                let y = i as f64;
                Rectangle::new(
                    [(0.0, y - 0.35), (e.mape.min(cap) * 100.0, y + 0.35)],
                    c.filled(),
                )
            }))
            .map_err(draw_err)?;
        chart
            .draw_series(exps.iter().enumerate().map(|(i, e)| {
                Text::new(
                    format!("{} %", pct(e.mape)),
                    (e.mape.min(cap) * 100.0 + 2.0, i as f64 + 0.3),
                    ("sans-serif", 10),
                )
            }))
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// Every chart of an evaluation: (file name, title, SVG text), three per model.
pub fn charts(e: &Evaluation) -> Result<Vec<(String, String, String)>> {
    let mut models: Vec<&str> = e.experiments.iter().map(|x| x.model.as_str()).collect();
    models.dedup();
    let mut out = Vec::new();
    for m in models {
        let exps: Vec<&Experiment> = e.experiments.iter().filter(|x| x.model == m).collect();
        let slug: String = m
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect::<String>()
            .replace("--", "-")
            .trim_matches('-')
            .to_string();
        out.push((
            format!("ratio-{slug}.svg"),
            format!("{m}: ratio characteristic (puchala2022 Fig 9b)"),
            ratio_svg(m, &exps)?,
        ));
        out.push((
            format!("scatter-{slug}.svg"),
            format!("{m}: predicted vs measured"),
            scatter_svg(m, &exps)?,
        ));
        out.push((
            format!("errors-{slug}.svg"),
            format!("{m}: error per device and kernel"),
            error_svg(m, &exps)?,
        ));
    }
    Ok(out)
}
