//! Every SVG chart of the command line, drawn with plotters' SVG backend: one file per family
//! (`puchala` execution profiles and ratio charts, `evaluation` report charts, `explore`
//! comparison and ranking charts, `best_block` curves) and the helpers they share. Drawing only:
//! the numbers come from the library; files are written by the callers.

pub mod best_block;
pub mod evaluation;
pub mod explore;
pub mod puchala;

use plotters::style::RGBColor;

use kerneltime::error::Error;

/// A chart that plotters could not draw, as an error.
pub fn draw_err(e: impl std::fmt::Display) -> Error {
    Error::invalid("svg", format!("cannot draw the chart: {e}"))
}

/// Line and point colours, one per series, in order.
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// The first six colours of [`PALETTE`] in the order the comparison charts use.
pub const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];

pub fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for v in values.filter(|v| v.is_finite() && *v > 0.0) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.1, 10.0);
    }
    (lo / 1.5, hi * 1.5)
}
