//! Charts of an evaluation: puchala2022 Fig 9b's ratio characteristic (`r_k = t_model /
//! t_measured` against the measured time, with t_min, t_max and the errors), predicted against
//! measured on log-log axes, and the error per device and kernel. Points and bars are coloured
//! by kernel (so that one wrong kernel stands out) and points are marked by GPU, with a legend
//! beside; log axes tick at 1, 2, 5 x 10^k with times in ns, us, ms or s (`axis`). Each draws
//! at most [`MAX_POINTS`] points (an even stride over the rows) so that a large data set still
//! gives a small page.

use plotters::coord::cartesian::Cartesian2d;
use plotters::prelude::*;

use super::axis::LogAxis;
use super::{bounds, draw_err, PALETTE};
use crate::cli::report::pct;
use crate::cli::units::time_us;
use kerneltime::error::Result;
use kerneltime::eval::evaluate::{Evaluation, Experiment};

/// Most points one chart draws.
pub const MAX_POINTS: usize = 4000;

/// The colour of each kernel and the marker of each GPU, the same in every chart of a report
/// (kernels and GPUs in name order over the whole evaluation).
pub struct Keys {
    kernels: Vec<String>,
    devices: Vec<String>,
}

impl Keys {
    pub fn of(e: &Evaluation) -> Self {
        let sorted = |f: fn(&Experiment) -> &str| {
            let mut v: Vec<String> = e.experiments.iter().map(|x| f(x).to_string()).collect();
            v.sort();
            v.dedup();
            v
        };
        Self {
            kernels: sorted(|x| &x.kernel),
            devices: sorted(|x| &x.device),
        }
    }

    fn color(&self, kernel: &str) -> RGBColor {
        let i = self.kernels.iter().position(|k| k == kernel).unwrap_or(0);
        PALETTE[i % PALETTE.len()]
    }

    fn marker(&self, device: &str) -> Marker {
        let i = self.devices.iter().position(|d| d == device).unwrap_or(0);
        MARKERS[i % MARKERS.len()]
    }
}

/// The marker of a GPU's points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    Circle,
    Triangle,
    Square,
    Diamond,
    Cross,
}

const MARKERS: [Marker; 5] = [
    Marker::Circle,
    Marker::Triangle,
    Marker::Square,
    Marker::Diamond,
    Marker::Cross,
];

/// Runs `$then` with `$el` bound to a marker of `shape` at `at`, `size` pixels across (each
/// shape is its own element type, hence a macro rather than a function).
macro_rules! with_marker {
    ($shape:expr, $at:expr, $size:expr, $style:expr, |$el:ident| $then:expr) => {{
        let (at, size, style): (_, i32, ShapeStyle) = ($at, $size, $style);
        match $shape {
            Marker::Circle => {
                let $el = Circle::new(at, size, style);
                $then
            }
            Marker::Triangle => {
                let $el = TriangleMarker::new(at, size + 1, style);
                $then
            }
            Marker::Square => {
                let $el =
                    EmptyElement::at(at) + Rectangle::new([(-size, -size), (size, size)], style);
                $then
            }
            Marker::Diamond => {
                let d = size + 1;
                let $el = EmptyElement::at(at)
                    + Polygon::new(vec![(0, -d), (d, 0), (0, d), (-d, 0)], style);
                $then
            }
            Marker::Cross => {
                let $el = Cross::new(at, size + 1, style.stroke_width(2));
                $then
            }
        }
    }};
}

/// Draws `points` as markers of one shape and colour.
fn draw_markers<X, Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    shape: Marker,
    points: Vec<(f64, f64)>,
    color: RGBColor,
) -> Result<()>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let style = color.mix(0.8).filled();
    for p in points {
        with_marker!(shape, p, 3, style, |el| chart
            .plotting_area()
            .draw(&el)
            .map_err(draw_err)?);
    }
    Ok(())
}

/// Width of the legend beside a chart, pixels.
const LEGEND_WIDTH: u32 = 230;
/// Height of one legend line, pixels.
const LEGEND_LINE: i32 = 17;

/// The kernels and GPUs of `exps`, for the legend.
fn present<'a>(keys: &'a Keys, exps: &[&Experiment]) -> (Vec<&'a str>, Vec<&'a str>) {
    let has_k = |k: &str| exps.iter().any(|e| e.kernel == k);
    let has_d = |d: &str| exps.iter().any(|e| e.device == d);
    (
        keys.kernels
            .iter()
            .map(String::as_str)
            .filter(|k| has_k(k))
            .collect(),
        keys.devices
            .iter()
            .map(String::as_str)
            .filter(|d| has_d(d))
            .collect(),
    )
}

/// The chart height that leaves room for the legend of `exps` (at least `base`).
fn height_for_legend(keys: &Keys, exps: &[&Experiment], base: u32) -> u32 {
    let (k, d) = present(keys, exps);
    base.max((40 + LEGEND_LINE * (k.len() + d.len() + 3) as i32) as u32)
}

fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

/// The legend: a colour per kernel, then a marker per GPU.
fn draw_legend(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    keys: &Keys,
    exps: &[&Experiment],
) -> Result<()> {
    let (kernels, devices) = present(keys, exps);
    let head = ("sans-serif", 14).into_font().style(FontStyle::Bold);
    let text = ("sans-serif", 12).into_font();
    let mut y = 30;
    area.draw(&Text::new("kernel (colour)", (8, y), head.clone()))
        .map_err(draw_err)?;
    for k in kernels {
        y += LEGEND_LINE;
        let c = keys.color(k);
        area.draw(&Rectangle::new([(8, y + 2), (20, y + 13)], c.filled()))
            .map_err(draw_err)?;
        area.draw(&Text::new(shorten(k, 28), (26, y + 1), text.clone()))
            .map_err(draw_err)?;
    }
    y += LEGEND_LINE + 8;
    area.draw(&Text::new("GPU (marker)", (8, y), head))
        .map_err(draw_err)?;
    for d in devices {
        y += LEGEND_LINE;
        with_marker!(
            keys.marker(d),
            (14, y + 8),
            4,
            RGBColor(60, 60, 60).filled(),
            |el| area.draw(&el).map_err(draw_err)?
        );
        area.draw(&Text::new(shorten(d, 28), (26, y + 1), text.clone()))
            .map_err(draw_err)?;
    }
    Ok(())
}

fn stride(total: usize) -> usize {
    total.div_ceil(MAX_POINTS).max(1)
}

/// puchala2022 Fig 9b for one model: `r_k = t_model / t_measured` against the measured time
/// (log axes), colour by kernel and marker by GPU, with E, Ê and the measured range in the
/// caption.
pub fn ratio_svg(model: &str, exps: &[&Experiment], keys: &Keys) -> Result<String> {
    let total: usize = exps.iter().map(|e| e.points.len()).sum();
    let step = stride(total);
    let (tlo, thi) = bounds(
        exps.iter()
            .flat_map(|e| e.points.iter().map(|p| p.measured_us)),
    );
    let (rlo, rhi) = bounds(exps.iter().flat_map(|e| e.points.iter().map(|p| p.ratio)));
    let (rlo, rhi) = (rlo.clamp(1e-4, 0.9), rhi.clamp(1.1, 1e4));
    let (x_axis, y_axis) = (LogAxis::time_us(tlo, thi), LogAxis::plain(rlo, rhi));
    let e_mean = exps.iter().map(|e| e.mape).sum::<f64>() / exps.len().max(1) as f64;
    let e_max = exps.iter().map(|e| e.max_error).fold(0.0, f64::max);
    let height = height_for_legend(keys, exps, 520);
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (900 + LEGEND_WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let (plot, legend) = root.split_horizontally(900);
        let mut chart = ChartBuilder::on(&plot)
            .caption(
                format!(
                    "{model}: r = t_model / t_measured   E = {} %, E^ = {} %, t from {} to {}",
                    pct(e_mean),
                    pct(e_max),
                    time_us(tlo * 1.5),
                    time_us(thi / 1.5)
                ),
                ("sans-serif", 15),
            )
            .margin(10)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(x_axis.coord(), y_axis.coord())
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .light_line_style(RGBColor(236, 236, 236))
            .x_desc(x_axis.desc("measured time"))
            .y_desc("r = t_model / t_measured")
            .x_label_formatter(&|v| x_axis.label(*v))
            .y_label_formatter(&|v| y_axis.label(*v))
            .label_style(("sans-serif", 12))
            .draw()
            .map_err(draw_err)?;
        chart
            .draw_series(LineSeries::new(
                [(tlo, 1.0), (thi, 1.0)],
                BLACK.stroke_width(1),
            ))
            .map_err(draw_err)?;
        for e in exps {
            let (c, m) = (keys.color(&e.kernel), keys.marker(&e.device));
            let points = e
                .points
                .iter()
                .step_by(step)
                .map(|p| (p.measured_us, p.ratio.clamp(rlo, rhi)))
                .collect();
            draw_markers(&mut chart, m, points, c)?;
        }
        draw_legend(&legend, keys, exps)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// The frame of a predicted-against-measured chart on `area`: both axes `axis` (log, in its
/// time unit), labelled, with the diagonal drawn.
pub fn predicted_vs_measured<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    caption: String,
    axis: &LogAxis,
) -> Result<ChartContext<'a, SVGBackend<'b>, Cartesian2d<LogTimeCoord, LogTimeCoord>>> {
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(axis.coord(), axis.coord())
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .light_line_style(RGBColor(236, 236, 236))
        .x_desc(axis.desc("measured"))
        .y_desc(axis.desc("predicted"))
        .x_label_formatter(&|v| axis.label(*v))
        .y_label_formatter(&|v| axis.label(*v))
        .label_style(("sans-serif", 12))
        .draw()
        .map_err(draw_err)?;
    let (lo, hi) = (axis.lo, axis.hi);
    chart
        .draw_series(LineSeries::new([(lo, lo), (hi, hi)], BLACK.stroke_width(1)))
        .map_err(draw_err)?;
    Ok(chart)
}

/// A log axis's plotters coordinate ([`LogAxis::coord`]).
pub type LogTimeCoord = plotters::coord::combinators::WithKeyPoints<LogCoord<f64>>;

/// Predicted against measured time on log-log axes, with the diagonal; colour by kernel,
/// marker by GPU.
pub fn scatter_svg(model: &str, exps: &[&Experiment], keys: &Keys) -> Result<String> {
    let total: usize = exps.iter().map(|e| e.points.len()).sum();
    let step = stride(total);
    let (lo, hi) = bounds(
        exps.iter()
            .flat_map(|e| e.points.iter().flat_map(|p| [p.measured_us, p.model_us])),
    );
    let axis = LogAxis::time_us(lo, hi);
    let height = height_for_legend(keys, exps, 600);
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (640 + LEGEND_WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let (plot, legend) = root.split_horizontally(640);
        let plot = plot.shrink((0, 0), (640, 600.min(height)));
        let mut chart =
            predicted_vs_measured(&plot, format!("{model}: predicted vs measured"), &axis)?;
        for e in exps {
            let (c, m) = (keys.color(&e.kernel), keys.marker(&e.device));
            let points = e
                .points
                .iter()
                .step_by(step)
                .filter(|p| p.model_us > 0.0)
                .map(|p| (p.measured_us, p.model_us))
                .collect();
            draw_markers(&mut chart, m, points, c)?;
        }
        draw_legend(&legend, keys, exps)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// MAPE per device and kernel as horizontal bars coloured by kernel (capped at 300 %, the
/// value is written beside).
pub fn error_svg(model: &str, exps: &[&Experiment], keys: &Keys) -> Result<String> {
    let n = exps.len().max(1);
    let cap = 3.0;
    let labels: Vec<String> = exps
        .iter()
        .map(|e| format!("{} / {}", e.device, shorten(&e.kernel, 40)))
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
            .light_line_style(RGBColor(236, 236, 236))
            .y_labels(n * 2 + 1)
            .y_label_formatter(&label_of)
            .x_label_formatter(&|v| format!("{v:.0}"))
            .x_desc("MAPE [%]")
            .disable_y_mesh()
            .label_style(("sans-serif", 11))
            .draw()
            .map_err(draw_err)?;
        chart
            .draw_series(exps.iter().enumerate().map(|(i, e)| {
                let y = i as f64;
                Rectangle::new(
                    [(0.0, y - 0.35), (e.mape.min(cap) * 100.0, y + 0.35)],
                    keys.color(&e.kernel).filled(),
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
    let keys = Keys::of(e);
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
            ratio_svg(m, &exps, &keys)?,
        ));
        out.push((
            format!("scatter-{slug}.svg"),
            format!("{m}: predicted vs measured"),
            scatter_svg(m, &exps, &keys)?,
        ));
        out.push((
            format!("errors-{slug}.svg"),
            format!("{m}: error per device and kernel"),
            error_svg(m, &exps, &keys)?,
        ));
    }
    Ok(out)
}
