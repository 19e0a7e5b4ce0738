//! DRAM technologies and the row-activation limit (`data/dram.toml`).
//!
//! A DRAM channel delivers its peak bandwidth only while requests hit rows it has open. Each
//! new row costs an activation, and one channel can activate a row at most every
//! `activate_ns` (max(tRRD, tFAW/4) of the technology's timing). A kernel whose DRAM sectors
//! each fall in a different row (a column walk, a scattered gather) is therefore limited to
//! `channels / activate_ns` sectors per second, whatever the bytes per second allow.
//!
//! This module reads the embedded table and resolves a device's channels from its memory type
//! and bus width. It does not decide which sectors open rows (that is `model::trace_sim`,
//! from the addresses) and does not model bank conflicts, refresh or the address mapping.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One row of `data/dram.toml`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DramType {
    pub name: String,
    #[serde(default)]
    pub channel_bits: Option<u32>,
    #[serde(default)]
    pub row_bytes: Option<u64>,
    #[serde(default)]
    pub activate_ns: Option<f64>,
    pub source: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    #[serde(rename = "type")]
    types: Vec<DramType>,
}

/// A device's row-activation limit: what the trace model needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Activation {
    /// Independently scheduled channels (bus bits / channel bits).
    pub channels: f64,
    /// Bytes one activation opens in one channel.
    pub row_bytes: u64,
    /// Shortest average interval between two activations in one channel, ns.
    pub activate_ns: f64,
    /// The memory type's row of `data/dram.toml`: its name and source.
    pub memory_type: &'static str,
    pub source: &'static str,
}

impl Activation {
    /// Nanoseconds per activation for the whole memory system (all channels in parallel).
    pub fn ns_per_activation(&self) -> f64 {
        self.activate_ns / self.channels
    }
}

fn parse(text: &str) -> Result<Vec<DramType>> {
    let t: Table =
        toml::from_str(text).map_err(|e| Error::file("data/dram.toml", e.message().to_string()))?;
    for row in &t.types {
        let timing = [
            row.channel_bits.is_some(),
            row.row_bytes.is_some(),
            row.activate_ns.is_some(),
        ];
        if timing.iter().any(|&b| b) && !timing.iter().all(|&b| b) {
            return Err(Error::invalid(
                format!("dram.{}", row.name),
                "channel_bits, row_bytes and activate_ns come together or not at all",
            ));
        }
        if row.channel_bits == Some(0) || row.row_bytes == Some(0) {
            return Err(Error::invalid(
                format!("dram.{}", row.name),
                "channel_bits and row_bytes must be at least 1",
            ));
        }
        if let Some(ns) = row.activate_ns {
            crate::error::within(
                &format!("dram.{}.activate_ns", row.name),
                ns,
                0.1,
                1000.0,
                "ns",
            )?;
        }
    }
    Ok(t.types)
}

fn table() -> &'static [DramType] {
    static T: OnceLock<Vec<DramType>> = OnceLock::new();
    T.get_or_init(|| {
        // The embedded table is checked by a unit test; an unreadable one yields no rows.
        parse(include_str!("../../../../data/dram.toml")).unwrap_or_default()
    })
}

/// The memory types a device file may name.
pub fn type_names() -> Vec<&'static str> {
    table().iter().map(|t| t.name.as_str()).collect()
}

/// The table row of a memory type (exact name, as in `data/dram.toml`).
pub fn lookup(name: &str) -> Option<&'static DramType> {
    table().iter().find(|t| t.name == name)
}

/// The activation limit of a memory system of `bus_bits` of `memory_type`; None when the type
/// has no timing source or the bus is narrower than one channel.
pub fn activation(memory_type: &str, bus_bits: u32) -> Option<Activation> {
    let t = lookup(memory_type)?;
    let (cb, row, ns) = (t.channel_bits?, t.row_bytes?, t.activate_ns?);
    let channels = f64::from(bus_bits / cb);
    (channels >= 1.0).then(|| Activation {
        channels,
        row_bytes: row,
        activate_ns: ns,
        memory_type: &t.name,
        source: &t.source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_table_reads_and_names_each_type_once() {
        let rows = parse(include_str!("../../../../data/dram.toml")).unwrap();
        assert!(rows.len() >= 10);
        let mut names: Vec<_> = rows.iter().map(|r| r.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), rows.len());
        assert!(rows.iter().all(|r| !r.source.trim().is_empty()));
    }

    #[test]
    fn gddr5_channels_are_32_bits_wide() {
        // GTX Titan X: 384-bit GDDR5 = 12 channels, one activation per 5.9 ns each, so the
        // memory system activates a row every 5.9 / 12 = 0.4917 ns.
        let a = activation("GDDR5", 384).unwrap();
        assert_eq!(a.channels, 12.0);
        assert_eq!(a.row_bytes, 2048);
        assert!((a.ns_per_activation() - 5.9 / 12.0).abs() < 1e-12);
        // GDDR6 channels are 16 bits: a 192-bit bus has 12.
        assert_eq!(activation("GDDR6", 192).unwrap().channels, 12.0);
    }

    #[test]
    fn types_without_timing_and_unknown_types_have_no_limit() {
        assert!(lookup("LPDDR4").is_some());
        assert!(activation("LPDDR4", 128).is_none());
        assert!(activation("SRAM", 128).is_none());
        assert!(activation("GDDR5", 16).is_none());
    }

    #[test]
    fn partial_timing_is_refused() {
        let bad = "[[type]]\nname = \"X\"\nchannel_bits = 32\nsource = \"s\"\n";
        assert!(parse(bad).is_err());
        let zero = "[[type]]\nname = \"X\"\nchannel_bits = 0\nrow_bytes = 2048\nactivate_ns = 5.0\nsource = \"s\"\n";
        assert!(parse(zero).is_err());
    }
}
