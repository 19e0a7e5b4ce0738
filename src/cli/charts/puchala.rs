//! SVG charts for the puchala2022 commands: the per-warp execution profile of one core
//! package (like the paper's Figs 7-8) and the matrix/lattice ratio chart per GPU (the model's
//! side of Figs 10-15). Drawing only: the numbers come from the model; files are written by
//! the caller.

use plotters::prelude::*;

use super::draw_err;

use kerneltime::error::{Error, Result};
use kerneltime::model::puchala::paper::GridPoint;
use kerneltime::model::puchala::simulate::{SegmentKind, Timeline};

/// Most segments a timeline chart draws (beyond that it is unreadable anyway).
pub const MAX_TIMELINE_SEGMENTS: usize = 100_000;

const CALC: RGBColor = RGBColor(66, 110, 200);
const ISSUE: RGBColor = RGBColor(0, 0, 0);
const IN_FLIGHT: RGBColor = RGBColor(250, 190, 110);
const IN_FLIGHT_EDGE: RGBColor = RGBColor(200, 120, 30);
const IDLE: RGBColor = RGBColor(170, 170, 170);

/// The execution profile: one row per warp (warp 1 on top), time in cycles to the right.
pub fn timeline_svg(tl: &Timeline, title: &str) -> Result<String> {
    if tl.segments.len() > MAX_TIMELINE_SEGMENTS {
        return Err(Error::invalid(
            "--timeline",
            format!(
                "{} segments are too many to draw (at most {MAX_TIMELINE_SEGMENTS}); use fewer warps or a shorter program",
                tl.segments.len()
            ),
        ));
    }
    let warps = tl.warps.max(1);
    let height = 170 + 46 * warps.min(200);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1200, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let end = tl.cycles.max(1.0) * 1.02;
        // Row w (0-based) is centred at y = warps - 1 - w; one spare row on top holds the legend.
        let rows = f64::from(warps);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..end, -0.6f64..rows + 0.4)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc("time [cycles]")
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_labels(0)
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(draw_err)?;
        let row = |w: u32| f64::from(warps - 1 - w);
        let bar = |kind: SegmentKind| -> (f64, f64) {
            match kind {
                SegmentKind::Idle => (0.22, 0.36),
                _ => (-0.3, 0.18),
            }
        };
        let series: [(SegmentKind, &str, ShapeStyle, Option<ShapeStyle>); 4] = [
            (
                SegmentKind::InFlight,
                "memory in flight (d - t_m)",
                IN_FLIGHT.filled(),
                Some(IN_FLIGHT_EDGE.stroke_width(1)),
            ),
            (
                SegmentKind::Calc,
                "calc",
                CALC.filled(),
                Some(WHITE.stroke_width(1)),
            ),
            (
                SegmentKind::Issue,
                "memory issue (t_m)",
                ISSUE.filled(),
                None,
            ),
            (
                SegmentKind::Idle,
                "idle: waiting for memory",
                IDLE.filled(),
                None,
            ),
        ];
        for (kind, label, fill, edge) in series {
            let (lo, hi) = bar(kind);
            let rects = tl.segments.iter().filter(|s| s.kind == kind).map(move |s| {
                let y = row(s.warp);
                Rectangle::new([(s.start_cycles, y + lo), (s.end_cycles, y + hi)], fill)
            });
            chart
                .draw_series(rects)
                .map_err(draw_err)?
                .label(label)
                .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 18, y + 6)], fill));
            if let Some(edge) = edge {
                let outlines = tl.segments.iter().filter(|s| s.kind == kind).map(move |s| {
                    let y = row(s.warp);
                    Rectangle::new([(s.start_cycles, y + lo), (s.end_cycles, y + hi)], edge)
                });
                chart.draw_series(outlines).map_err(draw_err)?;
            }
        }
        // Row labels, placed in pixels left of the plotting area.
        for w in 0..warps.min(200) {
            let (px, py) = chart.backend_coord(&(0.0, row(w) - 0.06));
            root.draw(&Text::new(
                format!("warp {}", w + 1),
                (px - 70, py - 7),
                ("sans-serif", 14),
            ))
            .map_err(draw_err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

const LINE_COLORS: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];

/// Matrix/lattice time ratio against log2 N for one GPU, one line per filter length K.
pub fn ratio_svg(device: &str, points: &[GridPoint]) -> Result<String> {
    let mut ks: Vec<u32> = points.iter().map(|p| p.k).collect();
    ks.sort_unstable();
    ks.dedup();
    let x = |p: &GridPoint| (p.n as f64).log2();
    let (xmin, xmax) = points
        .iter()
        .map(x)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    let (ymin, ymax) = points
        .iter()
        .map(|p| p.ratio)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if !(xmin.is_finite() && ymin.is_finite()) {
        return Err(Error::invalid(
            "reproduce",
            format!("no points to draw for {device}"),
        ));
    }
    let pad = ((ymax - ymin) * 0.08).max(0.05);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{device}: modelled DWT matrix / lattice time ratio"),
                ("sans-serif", 20),
            )
            .margin(14)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(xmin - 0.3..xmax + 0.3, (ymin - pad).max(0.0)..ymax + pad)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_labels((xmax - xmin) as usize + 1)
            .x_label_formatter(&|v| format!("2^{}", v.round()))
            .x_desc("transform size N (log2 scale)")
            .y_desc("T_matrix / T_lattice")
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(draw_err)?;
        for (i, k) in ks.iter().enumerate() {
            let color = LINE_COLORS[i % LINE_COLORS.len()];
            let line: Vec<(f64, f64)> = points
                .iter()
                .filter(|p| p.k == *k)
                .map(|p| (x(p), p.ratio))
                .collect();
            chart
                .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))
                .map_err(draw_err)?
                .label(format!("K = {k}"))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            chart
                .draw_series(line.into_iter().map(|p| Circle::new(p, 3, color.filled())))
                .map_err(draw_err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}
