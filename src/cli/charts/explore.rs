//! Charts of `compare`: the time ratio of two kernels per GPU (puchala2022's chart for the DWT
//! pair over n and k, else ratio lines against the parameter with the most values) and the
//! ranking of GPUs for one kernel.

use plotters::prelude::*;

use super::{draw_err, COLORS};
use kerneltime::error::{Error, Result};
use kerneltime::explore::compare::{KernelComparison, Ranking, RatioPoint};
use kerneltime::explore::Space;
use kerneltime::model::puchala::paper::GridPoint;

/// One ratio chart per device: the puchala2022 chart (reused) for the DWT pair over n and k,
/// else ratio lines against the parameter with the most values.
pub fn compare_svgs(space: &Space, c: &KernelComparison) -> Result<Vec<(String, String)>> {
    let mut devices: Vec<&str> = Vec::new();
    for p in &c.points {
        if !devices.contains(&p.device.as_str()) {
            devices.push(&p.device);
        }
    }
    let names: Vec<&str> = space.axes.iter().map(|a| a.name.as_str()).collect();
    let dwt_pair = c.kernel_a == "dwt-matrix"
        && c.kernel_b == "dwt-lattice"
        && names.len() == 2
        && names.iter().any(|n| n.eq_ignore_ascii_case("n"))
        && names.iter().any(|n| n.eq_ignore_ascii_case("k"));
    let mut out = Vec::new();
    for d in devices {
        let pts: Vec<&RatioPoint> = c.points.iter().filter(|p| p.device == d).collect();
        let svg = if dwt_pair {
            let grid = dwt_grid(space, d, &pts)?;
            super::puchala::ratio_svg(d, &grid)?
        } else {
            ratio_lines_svg(d, c, space, &pts)?
        };
        out.push((d.to_string(), svg));
    }
    Ok(out)
}

/// The comparison as puchala2022 grid points (full predictions), for the paper's chart.
fn dwt_grid(space: &Space, device: &str, pts: &[&RatioPoint]) -> Result<Vec<GridPoint>> {
    let cell = |kernel: &str| {
        space
            .cells
            .iter()
            .find(|c| c.kernel == kernel && c.device == device)
            .ok_or_else(|| Error::invalid("compare", format!("no {kernel} cell for {device}")))
    };
    let (ma, la) = (cell("dwt-matrix")?, cell("dwt-lattice")?);
    let get = |p: &RatioPoint, name: &str| {
        p.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| v.as_f64())
    };
    let mut grid = Vec::new();
    for p in pts {
        let (Some(n), Some(k)) = (get(p, "n"), get(p, "k")) else {
            continue;
        };
        let values: Vec<f64> = space
            .axes
            .iter()
            .map(|a| {
                if a.name.eq_ignore_ascii_case("n") {
                    n
                } else {
                    k
                }
            })
            .collect();
        let (Ok(m), Ok(l)) = (ma.evaluator.predict(&values), la.evaluator.predict(&values)) else {
            continue;
        };
        grid.push(GridPoint {
            device: device.to_string(),
            k: k as u32,
            n: n as u64,
            ratio: m.time_us / l.time_us,
            matrix: m,
            lattice: l,
        });
    }
    Ok(grid)
}

/// Ratio against the parameter with the most values (log2 when all are powers of two), one line
/// per combination of the others.
fn ratio_lines_svg(
    device: &str,
    c: &KernelComparison,
    space: &Space,
    pts: &[&RatioPoint],
) -> Result<String> {
    let x_axis = space
        .axes
        .iter()
        .max_by_key(|a| a.values.len())
        .map(|a| a.name.clone());
    let log2 = space
        .axes
        .iter()
        .find(|a| Some(&a.name) == x_axis.as_ref())
        .is_some_and(|a| {
            a.values
                .iter()
                .all(|v| *v > 0.0 && (v.log2().fract() == 0.0))
                && a.values.len() > 2
        });
    let x_of = |p: &RatioPoint| -> f64 {
        let v = x_axis
            .as_ref()
            .and_then(|n| p.params.get(n))
            .and_then(|v| v.as_f64())
            .unwrap_or(0.0);
        if log2 {
            v.log2()
        } else {
            v
        }
    };
    let key = |p: &RatioPoint| -> String {
        p.params
            .iter()
            .filter(|(k, _)| Some(*k) != x_axis.as_ref())
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut lines: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for p in pts {
        let Some(r) = p.ratio else { continue };
        let k = key(p);
        match lines.iter_mut().find(|(n, _)| *n == k) {
            Some((_, l)) => l.push((x_of(p), r)),
            None => lines.push((k, vec![(x_of(p), r)])),
        }
    }
    let all: Vec<(f64, f64)> = lines.iter().flat_map(|(_, l)| l.iter().copied()).collect();
    if all.is_empty() {
        return Err(Error::Infeasible(format!(
            "no point on {device} where both kernels run, so there is no ratio to draw"
        )));
    }
    let (x0, x1) = all
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.0), b.max(p.0))
        });
    let (y0, y1) = all
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.1), b.max(p.1))
        });
    let xpad = ((x1 - x0) * 0.03).max(0.5);
    let ypad = ((y1 - y0) * 0.08).max(0.05);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "{device}: {} / {} time ratio ({})",
                    c.kernel_a, c.kernel_b, c.model
                ),
                ("sans-serif", 20),
            )
            .margin(14)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(x0 - xpad..x1 + xpad, (y0 - ypad).max(0.0)..y1 + ypad)
            .map_err(draw_err)?;
        let x_name = x_axis.clone().unwrap_or_else(|| "point".into());
        let fmt = move |v: &f64| {
            if log2 {
                format!("2^{}", v.round())
            } else {
                format!("{v}")
            }
        };
        chart
            .configure_mesh()
            .x_label_formatter(&fmt)
            .x_desc(if log2 {
                format!("{x_name} (log2 scale)")
            } else {
                x_name
            })
            .y_desc(format!("T_{} / T_{}", c.kernel_a, c.kernel_b))
            .draw()
            .map_err(draw_err)?;
        for (i, (name, line)) in lines.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let series = chart
                .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))
                .map_err(draw_err)?;
            if i < 12 {
                series
                    .label(if name.is_empty() {
                        "ratio".to_string()
                    } else {
                        name.clone()
                    })
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
            }
        }
        chart
            .draw_series(LineSeries::new(
                vec![(x0 - xpad, 1.0), (x1 + xpad, 1.0)],
                BLACK.mix(0.4),
            ))
            .map_err(draw_err)?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// Horizontal bars, fastest on top.
pub fn ranking_svg(r: &Ranking) -> Result<String> {
    let n = r.devices.len();
    let height = (90 + 24 * n) as u32;
    let x_max = r
        .devices
        .iter()
        .map(|d| d.objective)
        .fold(0.0_f64, f64::max)
        .max(1e-12)
        * 1.08;
    let names: Vec<String> = r.devices.iter().map(|d| d.device.clone()).collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{} ({}): GPUs by {}", r.kernel, r.model, r.objective),
                ("sans-serif", 20),
            )
            .margin(14)
            .x_label_area_size(40)
            .y_label_area_size(300)
            .build_cartesian_2d(0.0..x_max, 0.0..n as f64)
            .map_err(draw_err)?;
        let label = move |y: &f64| {
            let i = n as f64 - y - 0.5;
            if i >= 0.0 && (i - i.round()).abs() < 1e-6 {
                names.get(i.round() as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(2 * n + 1)
            .y_label_formatter(&label)
            .x_desc(format!("{} ({})", r.objective, r.objective_unit))
            .draw()
            .map_err(draw_err)?;
        chart
            .draw_series(r.devices.iter().enumerate().map(|(i, d)| {
                let y = (n - 1 - i) as f64;
                Rectangle::new(
                    [(0.0, y + 0.15), (d.objective, y + 0.85)],
                    COLORS[0].filled(),
                )
            }))
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}
