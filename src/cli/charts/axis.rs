//! Log-scale axes that read at a glance: ticks at 1, 2 and 5 x 10^k (only 1 x 10^k, or every
//! few decades, on wide ranges), labels written from the tick's digits so that no float noise
//! (`0.30000000000000004`) or repeated label can appear, and time axes in the unit of
//! `cli::units` (ns, us, ms, s) that gives the shortest labels over the range.

use plotters::coord::combinators::WithKeyPoints;
use plotters::prelude::*;

use crate::cli::units::time_units;

/// One tick `mantissa x 10^exp`, kept as digits so that its label is exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tick {
    pub mantissa: u8,
    pub exp: i32,
}

impl Tick {
    /// The value, the double nearest to the decimal `mantissa e exp`.
    pub fn value(self) -> f64 {
        format!("{}e{}", self.mantissa, self.exp)
            .parse()
            .unwrap_or(f64::NAN)
    }

    /// The label of the tick in a unit of `10^unit_exp`: plain decimals from 0.0001 to 10000,
    /// `5e-6` or `2e7` beyond.
    pub fn label(self, unit_exp: i32) -> String {
        let e = self.exp - unit_exp;
        let m = self.mantissa;
        match e {
            0..=4 => format!("{m}{}", "0".repeat(e as usize)),
            -4..=-1 => format!("0.{}{m}", "0".repeat((-e - 1) as usize)),
            _ => format!("{m}e{e}"),
        }
    }
}

/// Ticks inside `[lo, hi]` (positive, `lo < hi`): 1, 2, 5 x 10^k over at most five decades,
/// 1 x 10^k over at most ten, else 1 x 10^k every few decades (at most about ten ticks). A
/// range too narrow for two such ticks takes every 1..9 x 10^k inside it. Empty for a range
/// that is not positive and increasing.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<Tick> {
    if !(lo.is_finite() && hi.is_finite() && lo > 0.0 && hi > lo) {
        return Vec::new();
    }
    let decades = (hi / lo).log10();
    let (k0, k1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let inside = |t: &Tick| {
        let v = t.value();
        v >= lo * (1.0 - 1e-12) && v <= hi * (1.0 + 1e-12)
    };
    let ticks = |mantissas: &[u8], every: i32| -> Vec<Tick> {
        (k0..=k1)
            .filter(|k| k.rem_euclid(every) == 0)
            .flat_map(|exp| {
                mantissas
                    .iter()
                    .map(move |&mantissa| Tick { mantissa, exp })
            })
            .filter(inside)
            .collect()
    };
    let major = if decades <= 5.0 {
        ticks(&[1, 2, 5], 1)
    } else if decades <= 10.0 {
        ticks(&[1], 1)
    } else {
        ticks(&[1], (decades / 10.0).ceil() as i32)
    };
    if major.len() >= 2 {
        return major;
    }
    ticks(&[1, 2, 3, 4, 5, 6, 7, 8, 9], 1)
}

/// Light grid lines between the ticks of a range that has one tick per decade: 2..9 x 10^k.
fn minor_lines(lo: f64, hi: f64, major: &[Tick]) -> Vec<f64> {
    let one_per_decade =
        major.windows(2).all(|w| w[1].exp == w[0].exp + 1) && major.iter().all(|t| t.mantissa == 1);
    if major.len() < 2 || !one_per_decade {
        return Vec::new();
    }
    let (k0, k1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    (k0..=k1)
        .flat_map(|exp| (2..=9).map(move |mantissa| Tick { mantissa, exp }.value()))
        .filter(|v| *v > lo && *v < hi)
        .collect()
}

/// One log axis: its range, ticks and the unit its labels are in.
#[derive(Debug, Clone)]
pub struct LogAxis {
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<Tick>,
    /// The unit name (`us`, ...) of a time axis; `None` for a plain number.
    pub unit: Option<&'static str>,
    /// The unit's power of ten (0 for a plain number).
    unit_exp: i32,
}

impl LogAxis {
    /// A plain number axis (ratios).
    pub fn plain(lo: f64, hi: f64) -> Self {
        Self {
            lo,
            hi,
            ticks: log_ticks(lo, hi),
            unit: None,
            unit_exp: 0,
        }
    }

    /// A time axis over `[lo_us, hi_us]` microseconds, in the unit with the shortest labels
    /// (the larger unit on a tie).
    pub fn time_us(lo_us: f64, hi_us: f64) -> Self {
        let ticks = log_ticks(lo_us, hi_us);
        let length = |exp: i32| -> usize { ticks.iter().map(|t| t.label(exp).len()).sum() };
        let (unit, unit_exp) = time_units()
            .min_by_key(|(_, exp)| (length(*exp), -exp))
            .unwrap_or(("us", 0));
        Self {
            lo: lo_us,
            hi: hi_us,
            ticks,
            unit: Some(unit),
            unit_exp,
        }
    }

    /// The axis description: `name [unit]` for a time axis, `name` otherwise.
    pub fn desc(&self, name: &str) -> String {
        match self.unit {
            Some(u) => format!("{name} [{u}]"),
            None => name.to_string(),
        }
    }

    /// The label at a tick value (empty between ticks).
    pub fn label(&self, v: f64) -> String {
        self.ticks
            .iter()
            .find(|t| t.value() == v)
            .map_or(String::new(), |t| t.label(self.unit_exp))
    }

    /// The plotters coordinate: log scale with these ticks and the light lines between them.
    pub fn coord(&self) -> WithKeyPoints<LogCoord<f64>> {
        (self.lo..self.hi)
            .log_scale()
            .with_key_points(self.ticks.iter().map(|t| t.value()).collect())
            .with_light_points(minor_lines(self.lo, self.hi, &self.ticks))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(axis: &LogAxis) -> Vec<String> {
        axis.ticks.iter().map(|t| axis.label(t.value())).collect()
    }

    #[test]
    fn one_two_five_over_a_few_decades() {
        // 0.03 .. 700 spans log10(700 / 0.03) = 4.4 decades: 1, 2, 5 x 10^k from 0.05 to 500.
        let a = LogAxis::plain(0.03, 700.0);
        assert_eq!(
            labels(&a),
            ["0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "50", "100", "200", "500"]
        );
        // Values are the decimals themselves, not products that miss them by an ulp.
        let values: Vec<f64> = a.ticks.iter().map(|t| t.value()).collect();
        assert_eq!(values[0], 0.05);
        assert_eq!(values[2], 0.2);
        assert_eq!(values[12], 500.0);
    }

    #[test]
    fn one_per_decade_then_every_few_decades() {
        // 1e-4 .. 1e4: eight decades, one tick each, written plainly.
        let a = LogAxis::plain(1e-4, 1e4);
        assert_eq!(
            labels(&a),
            ["0.0001", "0.001", "0.01", "0.1", "1", "10", "100", "1000", "10000"]
        );
        // 1 .. 1e30: thirty decades, a tick every third (ceil(30 / 10)), exponents beyond 1e4.
        let a = LogAxis::plain(1.0, 1e30);
        let l = labels(&a);
        assert_eq!(l.len(), 11);
        assert_eq!(&l[..4], ["1", "1000", "1e6", "1e9"]);
        assert_eq!(l[10], "1e30");
        // Light lines sit between decade ticks only.
        assert!(minor_lines(1e-4, 1e4, &LogAxis::plain(1e-4, 1e4).ticks).contains(&0.002));
        assert!(minor_lines(0.03, 700.0, &LogAxis::plain(0.03, 700.0).ticks).is_empty());
    }

    #[test]
    fn labels_have_no_noise_and_no_duplicates() {
        for (lo, hi) in [
            (0.1, 0.9),
            (0.3, 3.0),
            (1e-7, 3e-2),
            (0.07, 1.3e7),
            (2.0, 9.0),
            (123.0, 4.56e5),
        ] {
            let a = LogAxis::plain(lo, hi);
            let l = labels(&a);
            assert!(l.len() >= 2, "{lo}..{hi}: {l:?}");
            for x in &l {
                assert!(!x.contains("000000") && !x.contains("99999"), "{x}");
                assert!(!x.is_empty());
            }
            let mut d = l.clone();
            d.dedup();
            assert_eq!(d, l, "duplicates in {l:?}");
        }
        // 0.1 .. 0.9: labels below 0.1 and between are there (0.1, 0.2, 0.5).
        assert_eq!(labels(&LogAxis::plain(0.1, 0.9)), ["0.1", "0.2", "0.5"]);
        // 2 .. 9 has only 2 and 5 of 1-2-5: fine; 1.1 .. 2.5 falls back to 1..9 x 10^k: 2 only.
        assert_eq!(labels(&LogAxis::plain(2.0, 9.0)), ["2", "5"]);
        assert_eq!(labels(&LogAxis::plain(1.1, 2.5)), ["2"]);
        assert!(log_ticks(0.0, 1.0).is_empty());
        assert!(log_ticks(2.0, 1.0).is_empty());
    }

    #[test]
    fn time_axes_pick_the_unit_with_the_shortest_labels() {
        // 0.03 .. 700 us: 0.05 .. 500 in us is shorter than 50 .. 500000 ns or 0.00005 ms.
        let a = LogAxis::time_us(0.03, 700.0);
        assert_eq!(a.unit, Some("us"));
        assert_eq!(a.desc("measured"), "measured [us]");
        assert_eq!(labels(&a)[0], "0.05");
        // 300 us .. 40 ms: 0.5, 1, 2, 5, 10, 20 ms beats 500 .. 20000 us.
        let a = LogAxis::time_us(300.0, 40_000.0);
        assert_eq!(a.unit, Some("ms"));
        assert_eq!(labels(&a), ["0.5", "1", "2", "5", "10", "20"]);
        // 2 .. 80 ns.
        let a = LogAxis::time_us(0.002, 0.08);
        assert_eq!(a.unit, Some("ns"));
        assert_eq!(labels(&a), ["2", "5", "10", "20", "50"]);
        // 3 s .. 100 s.
        let a = LogAxis::time_us(3e6, 1e8);
        assert_eq!(a.unit, Some("s"));
        assert_eq!(labels(&a), ["5", "10", "20", "50", "100"]);
    }
}
