//! The outputs of an evaluation: a terminal table, CSV tables, Markdown tables (for the README)
//! and one self-contained HTML page that shows the charts (`cli::charts::evaluation`) inline.
//!
//! Everything here turns an `Evaluation` into text; writing files (atomically) is the caller's.

use std::fmt::Write as _;

use kerneltime::eval::evaluate::Evaluation;

pub fn pct(v: f64) -> String {
    format!("{:.1}", v * 100.0)
}

fn opt_tau(t: Option<f64>) -> String {
    t.map_or("-".into(), |t| format!("{t:.3}"))
}

/// The aggregate table for a terminal.
pub fn table(e: &Evaluation) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<24} {:<26} {:>7} {:>8} {:>9} {:>7} {:>9}",
        "model", "device", "n", "MAPE %", "max %", "tau", "CV MAPE %"
    );
    for a in &e.aggregates {
        let _ = writeln!(
            s,
            "{:<24} {:<26} {:>7} {:>8} {:>9} {:>7} {:>9}",
            a.model,
            a.device,
            a.n,
            pct(a.mape),
            pct(a.max_error),
            opt_tau(a.kendall_tau),
            a.mape_cv.map_or("-".into(), pct)
        );
    }
    if !e.comparisons.is_empty() {
        let _ = writeln!(s, "\ncomparisons (eq 21-22): mean / max error of t_A / t_B");
        for c in &e.comparisons {
            let _ = writeln!(
                s,
                "  {:<24} {:<22} {} vs {}: {} % / {} % over {} points",
                c.model,
                c.device,
                c.a,
                c.b,
                pct(c.mean_error),
                pct(c.max_error),
                c.n
            );
        }
    }
    for (model, fails) in &e.failed {
        for (why, n) in fails {
            let _ = writeln!(s, "{model}: {n} rows not predicted: {why}");
        }
    }
    s
}

fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn opt(v: Option<f64>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// `aggregates.csv`: one row per (model, device); errors as fractions.
pub fn aggregates_csv(e: &Evaluation) -> String {
    let mut s = String::from("model,device,n,experiments,mape,max_error,kendall_tau,mape_cv\n");
    for a in &e.aggregates {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{}",
            csv_cell(&a.model),
            csv_cell(&a.device),
            a.n,
            a.experiments,
            a.mape,
            a.max_error,
            opt(a.kendall_tau),
            opt(a.mape_cv)
        );
    }
    s
}

/// `experiments.csv`: one row per (model, device, kernel).
pub fn experiments_csv(e: &Evaluation) -> String {
    let mut s = String::from(
        "model,device,kernel,n,mape,max_error,kendall_tau,t_min_us,t_max_us,mape_cv\n",
    );
    for x in &e.experiments {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{}",
            csv_cell(&x.model),
            csv_cell(&x.device),
            csv_cell(&x.kernel),
            x.n,
            x.mape,
            x.max_error,
            opt(x.kendall_tau),
            x.t_min_us,
            x.t_max_us,
            opt(x.mape_cv)
        );
    }
    s
}

/// `points.csv`: every evaluated row.
pub fn points_csv(e: &Evaluation) -> String {
    let mut s = String::from("model,device,kernel,x,measured_us,model_us,ratio\n");
    for x in &e.experiments {
        let head = format!(
            "{},{},{}",
            csv_cell(&x.model),
            csv_cell(&x.device),
            csv_cell(&x.kernel)
        );
        for p in &x.points {
            let _ = writeln!(
                s,
                "{head},{},{},{},{}",
                opt(p.x),
                p.measured_us,
                p.model_us,
                p.ratio
            );
        }
    }
    s
}

/// Markdown tables for the README: per device (MAPE, tau, CV MAPE of every model) and per
/// device and kernel (MAPE and tau).
pub fn markdown(e: &Evaluation) -> String {
    let models: Vec<String> = {
        let mut m: Vec<String> = e.aggregates.iter().map(|a| a.model.clone()).collect();
        m.dedup();
        m
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Per GPU: MAPE % (eq 19: mean over kernels) / Kendall tau-b over all rows; calibrated runs also give the grouped k-fold cross-validated MAPE % (CV).\n"
    );
    let _ = write!(s, "| GPU |");
    for m in &models {
        let _ = write!(s, " {m} |");
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "|---|{}", "---|".repeat(models.len()));
    let devices: Vec<String> = {
        let mut d: Vec<String> = e.aggregates.iter().map(|a| a.device.clone()).collect();
        d.sort();
        d.dedup();
        d
    };
    for d in &devices {
        let _ = write!(s, "| {d} |");
        for m in &models {
            let a = e
                .aggregates
                .iter()
                .find(|a| &a.model == m && &a.device == d);
            score_cell(&mut s, a.map(|a| (a.mape, a.kendall_tau, a.mape_cv)), |c| {
                format!(", CV {}", pct(c))
            });
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(
        s,
        "\nPer GPU and kernel: MAPE % / Kendall tau-b (calibrated: CV MAPE % in brackets).\n"
    );
    let _ = write!(s, "| GPU | kernel |");
    for m in &models {
        let _ = write!(s, " {m} |");
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "|---|---|{}", "---|".repeat(models.len()));
    let mut keys: Vec<(String, String)> = e
        .experiments
        .iter()
        .map(|x| (x.device.clone(), x.kernel.clone()))
        .collect();
    keys.sort();
    keys.dedup();
    for (d, k) in keys {
        let _ = write!(s, "| {d} | {} |", k.replace('|', "\\|"));
        for m in &models {
            let x = e
                .experiments
                .iter()
                .find(|x| &x.model == m && x.device == d && x.kernel == k);
            score_cell(&mut s, x.map(|x| (x.mape, x.kendall_tau, x.mape_cv)), |c| {
                format!(" [{}]", pct(c))
            });
        }
        let _ = writeln!(s);
    }
    s
}

/// One Markdown table cell `MAPE / tau` with the CV MAPE as `cv` writes it, or `-` for a
/// model without that row.
fn score_cell(
    s: &mut String,
    score: Option<(f64, Option<f64>, Option<f64>)>,
    cv: impl Fn(f64) -> String,
) {
    let _ = match score {
        Some((mape, tau, mape_cv)) => {
            let cv = mape_cv.map_or(String::new(), cv);
            write!(s, " {} / {}{cv} |", pct(mape), opt_tau(tau))
        }
        None => write!(s, " - |"),
    };
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One self-contained HTML page: the tables, the notes and every chart inline.
pub fn html(e: &Evaluation, charts: &[(String, String, String)]) -> String {
    let mut s = String::new();
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>kerneltime evaluation</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:3px 8px;text-align:right}td:first-child,td:nth-child(2),th{text-align:left}figure{margin:2em 0}.cmp td{text-align:left}svg{max-width:100%;height:auto}</style>\n</head><body>\n");
    let _ = writeln!(
        s,
        "<h1>kerneltime evaluation</h1>\n<p>Measurements: {} ({} rows). Errors as percentages; ratios r = t_model / t_measured.</p>",
        html_escape(&e.measurements),
        e.rows
    );
    s.push_str("<h2>Per model and device (eq 19)</h2>\n<table><tr><th>model</th><th>device</th><th>n</th><th>MAPE %</th><th>max %</th><th>Kendall tau-b</th><th>CV MAPE %</th></tr>\n");
    for a in &e.aggregates {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            html_escape(&a.model),
            html_escape(&a.device),
            a.n,
            pct(a.mape),
            pct(a.max_error),
            opt_tau(a.kendall_tau),
            a.mape_cv.map_or("-".into(), pct)
        );
    }
    s.push_str("</table>\n");
    s.push_str("<h2>Charts</h2>\n");
    for (_, title, svg) in charts {
        let body = match svg.find("<svg") {
            Some(i) => &svg[i..],
            None => svg.as_str(),
        };
        let _ = writeln!(
            s,
            "<figure><figcaption>{}</figcaption>\n{body}\n</figure>",
            html_escape(title)
        );
    }
    if !e.comparisons.is_empty() {
        s.push_str("<h2>Comparisons of kernel variants (eq 21-22)</h2>\n<table class=\"cmp\"><tr><th>model</th><th>device</th><th>A</th><th>B</th><th>n</th><th>mean %</th><th>max %</th></tr>\n");
        for c in &e.comparisons {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                html_escape(&c.model),
                html_escape(&c.device),
                html_escape(&c.a),
                html_escape(&c.b),
                c.n,
                pct(c.mean_error),
                pct(c.max_error)
            );
        }
        s.push_str("</table>\n");
    }
    if !e.notes.is_empty() {
        s.push_str("<h2>Notes</h2>\n<ul>\n");
        for n in &e.notes {
            let _ = writeln!(s, "<li>{}</li>", html_escape(n));
        }
        s.push_str("</ul>\n");
    }
    s.push_str("</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::charts::evaluation::charts;
    use kerneltime::eval::evaluate::{Experiment, ModelDeviceAggregate, Point};
    use std::collections::BTreeMap;

    fn experiment(model: &str, kernel: &str, ratios: &[f64]) -> Experiment {
        let points: Vec<Point> = ratios
            .iter()
            .enumerate()
            .map(|(i, r)| Point {
                x: Some(2f64.powi(i as i32 + 6)),
                measured_us: 10.0 * (i + 1) as f64,
                model_us: 10.0 * (i + 1) as f64 * r,
                ratio: *r,
            })
            .collect();
        let errors: Vec<f64> = ratios.iter().map(|r| (1.0 - r).abs()).collect();
        Experiment {
            model: model.into(),
            device: "GPU A".into(),
            kernel: kernel.into(),
            n: ratios.len(),
            mape: errors.iter().sum::<f64>() / errors.len() as f64,
            max_error: errors.iter().copied().fold(0.0, f64::max),
            kendall_tau: Some(1.0),
            t_min_us: 10.0,
            t_max_us: 10.0 * ratios.len() as f64,
            mape_cv: None,
            points,
        }
    }

    fn evaluation() -> Evaluation {
        Evaluation {
            measurements: "m.csv".into(),
            rows: 4,
            runs: Vec::new(),
            aggregates: vec![ModelDeviceAggregate {
                model: "roofline".into(),
                device: "GPU A".into(),
                n: 4,
                experiments: 2,
                mape: 0.15,
                max_error: 0.2,
                kendall_tau: Some(0.5),
                mape_cv: None,
            }],
            experiments: vec![
                experiment("roofline", "k1", &[0.9, 1.1]),
                experiment("roofline", "k2", &[1.2, 0.8]),
            ],
            comparisons: Vec::new(),
            failed: BTreeMap::new(),
            notes: vec!["a <note>".into()],
        }
    }

    #[test]
    fn tables_and_csv_carry_the_numbers() {
        let e = evaluation();
        // 0.15 as a percentage with one decimal.
        assert!(table(&e).contains("15.0"));
        let md = markdown(&e);
        assert!(md.contains("| GPU A | 15.0 / 0.500 |"), "{md}");
        // k1: |1 - 0.9| and |1 - 1.1| average to 10 %.
        assert!(md.contains("| GPU A | k1 | 10.0 / 1.000 |"), "{md}");
        let csv = experiments_csv(&e);
        assert_eq!(csv.lines().count(), 3);
        assert_eq!(points_csv(&e).lines().count(), 5);
    }

    #[test]
    fn html_inlines_every_chart_and_escapes_text() {
        let e = evaluation();
        let charts = charts(&e).unwrap();
        assert_eq!(charts.len(), 3);
        let page = html(&e, &charts);
        assert_eq!(page.matches("<svg").count(), 3);
        assert!(page.contains("a &lt;note&gt;"));
        assert!(!page.contains("<?xml"));
    }
}
