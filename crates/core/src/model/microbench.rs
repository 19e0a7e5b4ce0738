//! Model parameters derived from micro-benchmark measurements (parra2016, thesis section 4.4.3 and
//! 4.5.3): the departure delay from global-load latencies measured with 1, 2, ... warps (eq 4.25)
//! and the L1/L2 hit latencies from register, shared-memory and global-memory latencies
//! (eq 4.27, 4.28).
//!
//! These are plain arithmetic on numbers the caller measured; nothing here runs a benchmark or
//! reads a device. The thesis' prose divides the sum of differences by "#warps/2"; its equation
//! divides by `#warps - 1`, which is what a mean of successive differences is: we follow the
//! equation.

use crate::error::{Error, Result};

/// Departure delay Δ (eq 4.25): the mean of the successive differences of a global-load latency
/// series measured with 1, 2, ..., W warps, i.e. `(lat[W] - lat[1]) / (W - 1)`.
///
/// Errors when the series has fewer than two points, holds a non-finite or negative latency, or
/// does not grow with the warp count (a departure delay must be above zero for the models).
pub fn departure_delay_cycles(latencies_cycles: &[f64]) -> Result<f64> {
    const NAME: &str = "latencies_cycles";
    if latencies_cycles.len() < 2 {
        return Err(Error::invalid(
            NAME,
            "needs the latency measured with at least 1 and 2 warps",
        ));
    }
    for v in latencies_cycles {
        crate::error::non_negative(NAME, *v)?;
    }
    let differences: f64 = latencies_cycles.windows(2).map(|w| w[1] - w[0]).sum();
    let delta = differences / (latencies_cycles.len() - 1) as f64;
    if delta <= 0.0 {
        return Err(Error::invalid(
            NAME,
            format!(
                "latency does not grow with the number of warps (mean step {delta} cycles), so no departure delay follows from it"
            ),
        ));
    }
    Ok(delta)
}

/// L1 hit latency (eq 4.27): halfway between the shared-memory and register latencies.
pub fn hit_lat_l1_cycles(shared_memory_cycles: f64, register_cycles: f64) -> Result<f64> {
    crate::error::non_negative("shared_memory_cycles", shared_memory_cycles)?;
    crate::error::non_negative("register_cycles", register_cycles)?;
    Ok((shared_memory_cycles + register_cycles) / 2.0)
}

/// L2 hit latency (eq 4.28): halfway between the global-memory latency and the L1 hit latency.
pub fn hit_lat_l2_cycles(global_memory_cycles: f64, hit_lat_l1_cycles: f64) -> Result<f64> {
    crate::error::non_negative("global_memory_cycles", global_memory_cycles)?;
    crate::error::non_negative("hit_lat_l1_cycles", hit_lat_l1_cycles)?;
    Ok((global_memory_cycles + hit_lat_l1_cycles) / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn departure_delay_is_mean_step() {
        // 400, 403, 405, 412: steps 3 + 2 + 7 = 12 over 3 steps = 4 cycles.
        let d = departure_delay_cycles(&[400.0, 403.0, 405.0, 412.0]).unwrap();
        assert!((d - 4.0).abs() < 1e-12);
    }

    #[test]
    fn departure_delay_needs_growth_and_two_points() {
        assert!(departure_delay_cycles(&[400.0]).is_err());
        // Table 4.3's global read: 402 with 1 warp, 395 with 32: falls, so no delay follows.
        let e = departure_delay_cycles(&[402.0, 395.0]).unwrap_err();
        assert!(e.to_string().contains("latencies_cycles"));
        assert!(departure_delay_cycles(&[400.0, f64::NAN]).is_err());
    }

    #[test]
    fn cache_latencies_reproduce_table_4_3() {
        // Table 4.3, 1 warp: register 13, shared read 45 -> L1 (45 + 13) / 2 = 29 (table: 29);
        // global read 402 -> L2 (402 + 29) / 2 = 215.5 (table: 215.5).
        let l1 = hit_lat_l1_cycles(45.0, 13.0).unwrap();
        assert_eq!(l1, 29.0);
        assert_eq!(hit_lat_l2_cycles(402.0, l1).unwrap(), 215.5);
        // 32 warps: register 13, shared 45 -> 29; global 395 -> (395 + 29) / 2 = 212 (table: 212).
        let l1_32 = hit_lat_l1_cycles(45.0, 13.0).unwrap();
        assert_eq!(hit_lat_l2_cycles(395.0, l1_32).unwrap(), 212.0);
        assert!(hit_lat_l1_cycles(-1.0, 13.0).is_err());
    }
}
