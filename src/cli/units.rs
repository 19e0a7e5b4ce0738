//! Times for people: the one function through which text output prints a time, in the unit
//! that fits it (`135.35 ms` rather than `135346.757 us`).
//!
//! The library and every machine-readable output (`--json`, CSV, TOML) keep raw microseconds;
//! this module is for text meant to be read, and does not parse times back. Chart axes pick
//! one of the same units for a whole range (`cli::charts::axis`).

/// The units a time is shown in: name, size in microseconds and that size's power of ten.
const UNITS: [(&str, f64, i32); 4] = [
    ("ns", 1e-3, -3),
    ("us", 1.0, 0),
    ("ms", 1e3, 3),
    ("s", 1e6, 6),
];

/// The units of [`time_us`] as (name, power of ten of the unit in microseconds), smallest
/// first: for axes that pick one unit for a whole range.
pub fn time_units() -> impl Iterator<Item = (&'static str, i32)> {
    UNITS.iter().map(|(name, _, exp)| (*name, *exp))
}

/// A time given in microseconds, in the unit that fits: ns below 1 us, us below 1 ms, ms below
/// 1 s, else s, with two decimals (three significant digits below 1 ns). A value that rounds up
/// to 1000 of a unit is shown in the next one (`999.999 us` is `1.00 ms`). Zero is `0 us`;
/// NaN and infinities are printed as they are, in us.
pub fn time_us(us: f64) -> String {
    if us == 0.0 {
        return "0 us".into();
    }
    if !us.is_finite() {
        return format!("{us} us");
    }
    let magnitude = us.abs();
    let mut i = UNITS
        .iter()
        .rposition(|(_, scale, _)| magnitude >= *scale)
        .unwrap_or(0);
    loop {
        let (unit, scale, _) = UNITS[i];
        let value = us / scale;
        let decimals = if i == 0 && value.abs() < 1.0 {
            // Below 1 ns: three significant digits.
            (2 - value.abs().log10().floor() as i64).clamp(2, 12) as usize
        } else {
            2
        };
        let text = format!("{value:.decimals$}");
        let shown: f64 = text.parse().unwrap_or(value);
        if shown.abs() >= 1000.0 && i + 1 < UNITS.len() {
            i += 1;
            continue;
        }
        return format!("{text} {unit}");
    }
}

#[cfg(test)]
mod tests {
    use super::time_us;

    #[test]
    fn each_time_is_shown_in_the_unit_that_fits() {
        assert_eq!(time_us(135_346.757), "135.35 ms");
        assert_eq!(time_us(129.16), "129.16 us");
        assert_eq!(time_us(2.5e6), "2.50 s");
        assert_eq!(time_us(3_600e6), "3600.00 s");
        assert_eq!(time_us(-12.5), "-12.50 us");
    }

    #[test]
    fn unit_boundaries() {
        assert_eq!(time_us(0.9999), "999.90 ns");
        assert_eq!(time_us(1.0), "1.00 us");
        assert_eq!(time_us(999.99), "999.99 us");
        assert_eq!(time_us(1000.0), "1.00 ms");
        assert_eq!(time_us(999_999.0), "1.00 s");
        assert_eq!(time_us(1e6), "1.00 s");
        // Rounding up to 1000 of a unit moves to the next unit.
        assert_eq!(time_us(0.999_999), "1.00 us");
        assert_eq!(time_us(999.999), "1.00 ms");
    }

    #[test]
    fn zero_sub_nanosecond_and_non_finite() {
        assert_eq!(time_us(0.0), "0 us");
        assert_eq!(time_us(0.0005), "0.500 ns");
        assert_eq!(time_us(0.000_012_34), "0.0123 ns");
        assert_eq!(time_us(f64::NAN), "NaN us");
        assert_eq!(time_us(f64::INFINITY), "inf us");
    }
}
