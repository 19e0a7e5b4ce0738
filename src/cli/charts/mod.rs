//! Every SVG chart of the command line, drawn with plotters' SVG backend: one file per family
//! (`puchala` execution profiles and ratio charts, `evaluation` report charts, `explore`
//! comparison and ranking charts, `best_block` curves, `tuning` for `tune --evaluate --plot`) and
//! the helpers they share. Drawing only:
//! the numbers come from the library; files are written by the callers.

pub mod axis;
pub mod best_block;
pub mod evaluation;
pub mod explore;
pub mod puchala;
pub mod tuning;

use plotters::style::RGBColor;

use kerneltime::error::Error;

/// A chart that plotters could not draw, as an error.
pub fn draw_err(e: impl std::fmt::Display) -> Error {
    Error::invalid("svg", format!("cannot draw the chart: {e}"))
}

/// Series colours in order (the evaluation charts' kernel colours): the ten of matplotlib's
/// `tab10`, then ten darker or lighter ones.
pub const PALETTE: [RGBColor; 20] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 63, 120),
    RGBColor(160, 70, 0),
    RGBColor(0, 95, 30),
    RGBColor(130, 0, 20),
    RGBColor(80, 40, 130),
    RGBColor(222, 165, 120),
    RGBColor(150, 30, 110),
    RGBColor(40, 40, 40),
    RGBColor(110, 110, 0),
    RGBColor(0, 120, 130),
];

/// Six colours of [`PALETTE`] in the order the comparison charts use.
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
