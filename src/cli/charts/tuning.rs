//! The chart of `tune --evaluate --plot`: predicted against measured time for every timed
//! configuration, coloured by its value of the parameter the error moves with most (the widest
//! spread of `Evaluation::by_parameter`), beside that parameter's predicted / measured per
//! value in the same colours. Drawing only: the numbers come from `kerneltime::tune::evaluate`.

use plotters::prelude::*;

use super::axis::LogAxis;
use super::evaluation::predicted_vs_measured;
use super::{bounds, draw_err};

use kerneltime::error::Result;
use kerneltime::tune::evaluate::{Evaluation, TimedPair};

const FIRST: RGBColor = RGBColor(49, 54, 149);
const MIDDLE: RGBColor = RGBColor(230, 200, 90);
const LAST: RGBColor = RGBColor(165, 0, 38);
/// The colour of every point when no parameter has more than one value.
const PLAIN: RGBColor = RGBColor(31, 119, 180);

/// Colour of value `i` of `n`: blue for the first, through yellow, to red for the last.
fn ramp(i: usize, n: usize) -> RGBColor {
    let t = if n > 1 {
        i as f64 / (n - 1) as f64
    } else {
        0.0
    };
    let (a, b, u) = if t < 0.5 {
        (FIRST, MIDDLE, 2.0 * t)
    } else {
        (MIDDLE, LAST, 2.0 * t - 1.0)
    };
    let mix = |x: u8, y: u8| (f64::from(x) + (f64::from(y) - f64::from(x)) * u).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// The two panels side by side (1200 x 600 pixels). `names` are the report's parameter names,
/// in the order of each pair's values.
pub fn evaluation_svg(e: &Evaluation, names: &[String], pairs: &[TimedPair]) -> Result<String> {
    let top = e.by_parameter.first();
    // The top parameter's column and its values in the trend's order.
    let column = top.and_then(|t| names.iter().position(|n| *n == t.name));
    let value_index = |p: &TimedPair| -> Option<usize> {
        let (t, c) = (top?, column?);
        t.values.iter().position(|v| v.value == p.values[c])
    };
    let n_values = top.map_or(0, |t| t.values.len());
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1200, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let (left, right) = root.split_horizontally(600);

        let (lo, hi) = bounds(pairs.iter().flat_map(|p| [p.measured_us, p.predicted_us]));
        let axis = LogAxis::time_us(lo, hi);
        let tau = e
            .kendall_tau_b
            .map_or(String::new(), |t| format!(", Kendall tau {t:.2}"));
        let mut chart = predicted_vs_measured(
            &left,
            format!("{}: predicted vs measured{tau}", e.device),
            &axis,
        )?;
        chart
            .draw_series(pairs.iter().map(|p| {
                let color = value_index(p).map_or(PLAIN, |i| ramp(i, n_values));
                Circle::new((p.measured_us, p.predicted_us), 3, color.mix(0.75).filled())
            }))
            .map_err(draw_err)?;

        match top {
            Some(t) => {
                let (lo, hi) = bounds(
                    t.values
                        .iter()
                        .map(|v| v.geomean_ratio)
                        .chain([1.0])
                        .flat_map(|r| [r / 1.25, r * 1.25]),
                );
                let ratio = LogAxis::plain(lo, hi);
                let n = t.values.len();
                // At most about 16 labels along x.
                let every = n.div_ceil(16).max(1);
                let spread = t
                    .spread
                    .map_or(String::new(), |s| format!(" (spread {s:.2})"));
                let mut chart = ChartBuilder::on(&right)
                    .caption(
                        format!("predicted / measured per {}{spread}", t.name),
                        ("sans-serif", 16),
                    )
                    .margin(10)
                    .x_label_area_size(45)
                    .y_label_area_size(60)
                    .build_cartesian_2d(-0.5..n as f64 - 0.5, ratio.coord())
                    .map_err(draw_err)?;
                chart
                    .configure_mesh()
                    .light_line_style(RGBColor(236, 236, 236))
                    .x_max_light_lines(0)
                    .x_desc(format!("{} (points: pairs at the value)", t.name))
                    .y_desc("predicted / measured (geometric mean)")
                    .x_labels(n.min(16))
                    .x_label_formatter(&|x| {
                        let i = x.round();
                        if (x - i).abs() > 1e-9 || i < 0.0 || !(i as usize).is_multiple_of(every) {
                            return String::new();
                        }
                        t.values
                            .get(i as usize)
                            .map_or(String::new(), |v| v.value.clone())
                    })
                    .y_label_formatter(&|v| ratio.label(*v))
                    .label_style(("sans-serif", 12))
                    .draw()
                    .map_err(draw_err)?;
                chart
                    .draw_series(LineSeries::new(
                        [(-0.5, 1.0), (n as f64 - 0.5, 1.0)],
                        BLACK.stroke_width(1),
                    ))
                    .map_err(draw_err)?;
                chart
                    .draw_series(LineSeries::new(
                        t.values
                            .iter()
                            .enumerate()
                            .map(|(i, v)| (i as f64, v.geomean_ratio)),
                        RGBColor(120, 120, 120).stroke_width(1),
                    ))
                    .map_err(draw_err)?;
                chart
                    .draw_series(t.values.iter().enumerate().map(|(i, v)| {
                        // Larger for more pairs: 3 to 8 pixels.
                        let size = (3.0 + (v.pairs as f64).sqrt()).min(8.0) as i32;
                        Circle::new((i as f64, v.geomean_ratio), size, ramp(i, n).filled())
                    }))
                    .map_err(draw_err)?;
            }
            None => {
                right
                    .draw(&Text::new(
                        "no parameter with more than one value among the timed configurations",
                        (20, 290),
                        ("sans-serif", 14),
                    ))
                    .map_err(draw_err)?;
            }
        }
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ramp_runs_from_blue_to_red() {
        assert_eq!(ramp(0, 5), FIRST);
        assert_eq!(ramp(2, 5), MIDDLE);
        assert_eq!(ramp(4, 5), LAST);
        assert_eq!(ramp(0, 1), FIRST);
    }
}
