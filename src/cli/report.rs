//! The outputs of an evaluation: a terminal table, CSV tables, Markdown tables (for the README)
//! and one self-contained HTML page that shows the charts (`cli::charts::evaluation`) inline.
//!
//! Everything here turns an `Evaluation` into text; writing files (atomically) is the caller's.

use std::fmt::Write as _;

use kerneltime::eval::evaluate::{Evaluation, LeftOutKind, ModelDeviceAggregate, RunSummary};

pub fn pct(v: f64) -> String {
    format!("{:.1}", v * 100.0)
}

fn opt_tau(t: Option<f64>) -> String {
    t.map_or("-".into(), |t| format!("{t:.3}"))
}

/// One row of the per-model/device table in reading order, and whether it is the device's
/// best.
pub struct Ranked<'a> {
    pub aggregate: &'a ModelDeviceAggregate,
    pub best: bool,
}

/// The aggregates sorted by device, then MAPE ascending (then model name). On each device the
/// best is the lowest MAPE among the runs that predicted the most rows there (a run on fewer
/// rows is not comparable); ties all count as best.
pub fn ranked(e: &Evaluation) -> Vec<Ranked<'_>> {
    let mut rows: Vec<&ModelDeviceAggregate> = e.aggregates.iter().collect();
    rows.sort_by(|a, b| {
        a.device
            .cmp(&b.device)
            .then(a.mape.total_cmp(&b.mape))
            .then(a.model.cmp(&b.model))
    });
    rows.iter()
        .map(|a| {
            let same: Vec<&&ModelDeviceAggregate> =
                rows.iter().filter(|o| o.device == a.device).collect();
            let most = same.iter().map(|o| o.n).max().unwrap_or(0);
            let best_mape = same
                .iter()
                .filter(|o| o.n == most)
                .map(|o| o.mape)
                .fold(f64::INFINITY, f64::min);
            Ranked {
                aggregate: a,
                best: a.n == most && a.mape == best_mape,
            }
        })
        .collect()
}

/// What each column of the per-model/device table is, one sentence a column.
pub const DEFINITIONS: [(&str, &str); 6] = [
    (
        "n",
        "measured rows the run predicted on the device.",
    ),
    (
        "MAPE %",
        "eq 19: per kernel (one experiment), the mean of |t_pred - t_meas| / t_meas over its rows; then the mean over the device's kernels, each kernel weighing the same.",
    ),
    (
        "max %",
        "the largest |t_pred - t_meas| / t_meas of any single row on the device.",
    ),
    (
        "Kendall tau-b",
        "rank agreement of predicted and measured times over every row on the device, all kernels together (1: same order, 0: none).",
    ),
    (
        "CV MAPE %",
        "calibrated runs only: the grouped k-fold cross-validated MAPE recorded in the calibration file (mean |t_pred - t_meas| / t_meas over held-out problem points), averaged over the calibration groups fitted on this device alone; - when a group spans several devices or was not cross-validated. It measures the calibration's own rows, not this table's.",
    ),
    (
        "best",
        "the lowest MAPE on the device among the runs that predicted the most rows there.",
    ),
];

/// The aggregate table for a terminal: sorted by device then MAPE, the best per device
/// marked, the column definitions, the rows left out, then the comparisons.
pub fn table(e: &Evaluation) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<26} {:<24} {:>7} {:>8} {:>9} {:>7} {:>9}  best",
        "device", "model", "n", "MAPE %", "max %", "tau", "CV MAPE %"
    );
    for r in ranked(e) {
        let a = r.aggregate;
        let _ = writeln!(
            s,
            "{:<26} {:<24} {:>7} {:>8} {:>9} {:>7} {:>9}  {}",
            a.device,
            a.model,
            a.n,
            pct(a.mape),
            pct(a.max_error),
            opt_tau(a.kendall_tau),
            a.mape_cv.map_or("-".into(), pct),
            if r.best { "* best" } else { "" }
        );
    }
    s.push_str(concat!(
        "MAPE: eq 19, the mean over kernels of each kernel's mean |t_pred - t_meas| / t_meas; ",
        "max: the largest error of one row;\n",
        "tau: Kendall tau-b over all rows of the device; CV MAPE: the calibration's ",
        "cross-validated MAPE (calibrated runs);\n",
        "best: the lowest MAPE among the runs that predicted the most rows on the device.\n\n",
    ));
    s.push_str(&left_out_text(e));
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
    s
}

/// The kinds of reason a run left rows out for, with counts: `model inputs missing 80, no
/// calibration group 20`.
fn kinds_text(r: &RunSummary) -> String {
    r.left_out_by_kind
        .iter()
        .map(|(k, n)| format!("{} {n}", k.phrase()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs that left out the same rows for the same reasons, together: (their labels, one of
/// them), in the order of the runs.
fn same_left_out(e: &Evaluation) -> Vec<(Vec<&str>, &RunSummary)> {
    let mut out: Vec<(Vec<&str>, &RunSummary)> = Vec::new();
    for r in &e.runs {
        match out
            .iter_mut()
            .find(|(_, o)| (o.rows, o.predicted, &o.left_out) == (r.rows, r.predicted, &r.left_out))
        {
            Some((labels, _)) => labels.push(&r.model),
            None => out.push((vec![&r.model], r)),
        }
    }
    out
}

/// The text summary of rows left out: per run (runs with the same rows left out together),
/// predicted and left out with the kinds of reason, then each exact reason with its count.
pub fn left_out_text(e: &Evaluation) -> String {
    let mut s = String::new();
    let total: usize = e.runs.iter().map(RunSummary::left_out_total).sum();
    if total == 0 {
        let _ = writeln!(
            s,
            "rows left out: none (every run predicted every measured row)"
        );
        return s;
    }
    let _ = writeln!(
        s,
        "rows left out (measured rows that a run did not predict):"
    );
    for (labels, r) in same_left_out(e) {
        let _ = writeln!(
            s,
            "  {}: predicted {} of {}; left out {}{}",
            labels.join(", "),
            r.predicted,
            r.rows,
            r.left_out_total(),
            if r.left_out.is_empty() {
                String::new()
            } else {
                format!(" ({})", kinds_text(r))
            }
        );
        for (why, n) in &r.left_out {
            let _ = writeln!(s, "      {n:>7}  {why}");
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

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:1150px;color:#222}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:3px 8px;text-align:right}\
th{background:#eee;text-align:left}td.t{text-align:left}tr.dev td{border-top:2px solid #555}\
tr.best td{font-weight:bold;background:#fff6d5}td.mark{text-align:left;white-space:nowrap}\
dl.defs{font-size:90%;display:grid;grid-template-columns:max-content auto;gap:2px 12px;margin:0 0 1.5em}\
dl.defs dt{font-weight:bold}dl.defs dd{margin:0}figure{margin:2em 0}\
figcaption{font-weight:bold;margin-bottom:.3em}svg{max-width:100%;height:auto}";

/// The per-model/device table, sorted, the best per device marked (bold, ★ and the word), with
/// the definitions of its columns under it.
fn html_table(s: &mut String, e: &Evaluation) {
    s.push_str("<h2 id=\"summary\">Per device and model, best first</h2>\n<table id=\"models\"><tr><th>device</th><th>model</th><th>n</th><th>MAPE %</th><th>max %</th><th>Kendall tau-b</th><th>CV MAPE %</th><th>best</th></tr>\n");
    let mut last: Option<&str> = None;
    for r in ranked(e) {
        let a = r.aggregate;
        let mut class = Vec::new();
        if last != Some(a.device.as_str()) {
            class.push("dev");
        }
        if r.best {
            class.push("best");
        }
        last = Some(a.device.as_str());
        let _ = writeln!(
            s,
            "<tr class=\"{}\"><td class=\"t\">{}</td><td class=\"t\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"mark\">{}</td></tr>",
            class.join(" "),
            html_escape(&a.device),
            html_escape(&a.model),
            a.n,
            pct(a.mape),
            pct(a.max_error),
            opt_tau(a.kendall_tau),
            a.mape_cv.map_or("-".into(), pct),
            if r.best { "★ best" } else { "" }
        );
    }
    s.push_str("</table>\n<dl class=\"defs\">\n");
    for (name, what) in DEFINITIONS {
        let _ = writeln!(
            s,
            "<dt>{}</dt><dd>{}</dd>",
            html_escape(name),
            html_escape(what)
        );
    }
    s.push_str("</dl>\n");
}

/// The rows-left-out section: per run, rows predicted and left out per kind of reason, then
/// the exact reasons.
fn html_left_out(s: &mut String, e: &Evaluation) {
    s.push_str("<h2 id=\"left-out\">Rows left out</h2>\n");
    let total: usize = e.runs.iter().map(RunSummary::left_out_total).sum();
    if total == 0 {
        s.push_str("<p>None: every run predicted every measured row.</p>\n");
        return;
    }
    let kinds: Vec<LeftOutKind> = {
        let mut k: Vec<LeftOutKind> = e
            .runs
            .iter()
            .flat_map(|r| r.left_out_by_kind.keys().copied())
            .collect();
        k.sort();
        k.dedup();
        k
    };
    s.push_str("<p>Measured rows a run did not predict, counted per kind of reason; they are in no number above.</p>\n<table id=\"left-out-table\"><tr><th>model</th><th>measured rows</th><th>predicted</th><th>left out</th>");
    for k in &kinds {
        let _ = write!(s, "<th>{}</th>", html_escape(k.phrase()));
    }
    s.push_str("</tr>\n");
    for r in &e.runs {
        let _ = write!(
            s,
            "<tr><td class=\"t\">{}</td><td>{}</td><td>{}</td><td>{}</td>",
            html_escape(&r.model),
            r.rows,
            r.predicted,
            r.left_out_total()
        );
        for k in &kinds {
            let n = r.left_out_by_kind.get(k).copied().unwrap_or(0);
            let _ = write!(s, "<td>{n}</td>");
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n<p>The reasons, exactly:</p>\n<ul class=\"reasons\">\n");
    for (labels, r) in same_left_out(e) {
        if r.left_out.is_empty() {
            continue;
        }
        let _ = writeln!(s, "<li>{}:<ul>", html_escape(&labels.join(", ")));
        for (why, n) in &r.left_out {
            let _ = writeln!(s, "<li>{n} rows: {}</li>", html_escape(why));
        }
        s.push_str("</ul></li>\n");
    }
    s.push_str("</ul>\n");
}

/// One self-contained HTML page: the sorted table with its definitions, the rows left out,
/// every chart inline, the comparisons and the notes.
pub fn html(e: &Evaluation, charts: &[(String, String, String)]) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>kerneltime evaluation</title>\n<style>{STYLE}</style>\n</head><body>\n"
    );
    let measured = e.runs.iter().map(|r| r.rows).max().unwrap_or(e.rows);
    let left: Vec<usize> = e.runs.iter().map(RunSummary::left_out_total).collect();
    let (fewest, most) = (
        left.iter().copied().min().unwrap_or(0),
        left.iter().copied().max().unwrap_or(0),
    );
    let left_text = if fewest == most {
        format!("every run left out {most}")
    } else {
        format!("the runs left out {fewest} to {most}")
    };
    let _ = writeln!(
        s,
        "<h1>kerneltime evaluation</h1>\n<p>Measurements: {} ({measured} measured rows; {left_text}, see <a href=\"#left-out\">rows left out</a>). Errors as percentages; ratios r = t_model / t_measured.</p>",
        html_escape(&e.measurements),
    );
    html_table(&mut s, e);
    html_left_out(&mut s, e);
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
        s.push_str("<h2>Comparisons of kernel variants (eq 21-22)</h2>\n<table><tr><th>model</th><th>device</th><th>A</th><th>B</th><th>n</th><th>mean %</th><th>max %</th></tr>\n");
        for c in &e.comparisons {
            let _ = writeln!(
                s,
                "<tr><td class=\"t\">{}</td><td class=\"t\">{}</td><td class=\"t\">{}</td><td class=\"t\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
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
    use kerneltime::eval::evaluate::{Experiment, Point};
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

    fn aggregate(model: &str, device: &str, n: usize, mape: f64) -> ModelDeviceAggregate {
        ModelDeviceAggregate {
            model: model.into(),
            device: device.into(),
            n,
            experiments: 1,
            mape,
            max_error: mape * 2.0,
            kendall_tau: None,
            mape_cv: None,
        }
    }

    fn run(model: &str, predicted: usize, left_out: &[(LeftOutKind, &str, usize)]) -> RunSummary {
        let mut r = RunSummary {
            model: model.into(),
            rows: predicted + left_out.iter().map(|x| x.2).sum::<usize>(),
            predicted,
            left_out: BTreeMap::new(),
            left_out_by_kind: BTreeMap::new(),
            groups_used: BTreeMap::new(),
        };
        for (kind, why, n) in left_out {
            *r.left_out.entry(why.to_string()).or_default() += n;
            *r.left_out_by_kind.entry(*kind).or_default() += n;
        }
        r
    }

    /// Device B: m3 has the lowest MAPE but on 4 of the 10 rows the others predicted, so m2
    /// (10 %) is the best; device A: m1 and m2 tie at 20 % and are both best.
    fn ranked_evaluation() -> Evaluation {
        let mut e = evaluation();
        e.aggregates = vec![
            aggregate("m1", "GPU B", 10, 0.3),
            aggregate("m2", "GPU B", 10, 0.1),
            aggregate("m3", "GPU B", 4, 0.05),
            aggregate("m2", "GPU A", 5, 0.2),
            aggregate("m1", "GPU A", 5, 0.2),
        ];
        e
    }

    #[test]
    fn table_sorts_by_device_then_mape_and_marks_the_best() {
        let e = ranked_evaluation();
        let order: Vec<(&str, &str, bool)> = ranked(&e)
            .iter()
            .map(|r| {
                (
                    r.aggregate.device.as_str(),
                    r.aggregate.model.as_str(),
                    r.best,
                )
            })
            .collect();
        assert_eq!(
            order,
            [
                ("GPU A", "m1", true),
                ("GPU A", "m2", true),
                ("GPU B", "m3", false),
                ("GPU B", "m2", true),
                ("GPU B", "m1", false),
            ]
        );
        let text = table(&e);
        let best: Vec<&str> = text.lines().filter(|l| l.ends_with("* best")).collect();
        assert_eq!(best.len(), 3, "{text}");
        assert!(
            best[2].starts_with("GPU B") && best[2].contains(" m2 "),
            "{text}"
        );
        let page = html(&e, &[]);
        assert_eq!(page.matches("★ best").count(), 3);
        // A's first row opens its device and is best; B opens with m3, and m2 is best inside.
        assert_eq!(page.matches("<tr class=\"dev best\">").count(), 1);
        assert_eq!(page.matches("<tr class=\"best\">").count(), 2);
        // Every column is defined under the table.
        for (name, _) in DEFINITIONS {
            assert!(page.contains(&format!("<dt>{}</dt>", html_escape(name))));
        }
    }

    #[test]
    fn rows_left_out_are_summed_per_kind_in_text_and_html() {
        let mut e = evaluation();
        assert!(table(&e).contains("rows left out: none"));
        assert!(html(&e, &[]).contains("None: every run predicted every measured row."));
        let missing = (LeftOutKind::Inputs, "read: missing input `x`", 3);
        e.runs = vec![
            run("roofline", 10, &[missing]),
            run(
                "roofline (calibrated)",
                6,
                &[
                    missing,
                    (
                        LeftOutKind::NoCalibrationGroup,
                        "no calibration group covers k2",
                        4,
                    ),
                ],
            ),
            run("wu", 10, &[missing]),
        ];
        let text = table(&e);
        // roofline and wu left out the same 3 rows: one line for both.
        assert!(
            text.contains(
                "  roofline, wu: predicted 10 of 13; left out 3 (model inputs missing 3)"
            ),
            "{text}"
        );
        assert!(
            text.contains("  roofline (calibrated): predicted 6 of 13; left out 7 (model inputs missing 3, no calibration group 4)"),
            "{text}"
        );
        assert!(
            text.contains("      4  no calibration group covers k2"),
            "{text}"
        );
        let page = html(&e, &[]);
        assert!(page.contains("the runs left out 3 to 7"));
        assert!(page.contains("<th>model inputs missing</th><th>no calibration group</th>"));
        assert!(page.contains(
            "<tr><td class=\"t\">roofline (calibrated)</td><td>13</td><td>6</td><td>7</td><td>3</td><td>4</td></tr>"
        ));
        assert!(page.contains("<li>roofline, wu:<ul>"));
    }
}
