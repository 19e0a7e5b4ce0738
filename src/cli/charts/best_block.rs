//! The block-size curve of `best-block` (wu2019): predicted time against threads per block, the
//! infeasible sizes left out and the best one marked.

use crate::cli::analytical::BestBlockReport;

pub fn curve_svg(report: &BestBlockReport) -> std::result::Result<String, String> {
    use plotters::prelude::*;
    let pts: Vec<(f64, f64)> = report
        .curve
        .iter()
        .filter_map(|c| c.time_us.map(|t| (f64::from(c.threads_per_block), t)))
        .collect();
    let x_max = f64::from(report.max_threads_per_block) + 32.0;
    let y_max = pts.iter().map(|p| p.1).fold(0.0_f64, f64::max).max(1e-9) * 1.1;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (800, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "wu2019 model on {}: best {} threads per block",
                    report.device, report.best_threads_per_block
                ),
                ("sans-serif", 18),
            )
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("threads per block")
            .y_desc("predicted time (us)")
            .draw()
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), &BLUE))
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(
                pts.iter()
                    .map(|&(x, y)| Circle::new((x, y), 3, BLUE.filled())),
            )
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(std::iter::once(Circle::new(
                (
                    f64::from(report.best_threads_per_block),
                    report.best_time_us,
                ),
                6,
                RED.filled(),
            )))
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(buf)
}
