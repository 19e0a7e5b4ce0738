//! Mapped host memory (zero-copy): a kernel that reads or writes host buffers mapped into the
//! device moves those bytes over the host link (PCI Express) while it runs. The models do not
//! know about it, so `tune`, `predict --mapped-host` and the measurement suite (`suite::run`)
//! add this module's term, through [`mapped_traffic`] (or [`mapped_link`]) and [`LinkedTime`]:
//! the bytes of the mapped buffers the kernel's sampled warps touch (32-byte sectors, scaled to
//! every block of the grid), reads and writes counted separately because the link carries each
//! direction at full rate, over the link's bandwidth:
//!
//! ```text
//! t_link_us = max(bytes_read, bytes_written) / (link_gbs * 1e3)
//! ```
//!
//! How it combines with the model's time `t_model` is a band:
//!
//! ```text
//! headline = lo = max(t_model, t_link)     the transfer overlaps the kernel's own work
//!            hi = t_model + t_link         no overlap at all
//! ```
//!
//! The headline is the overlapped end. The CUDA C++ Programming Guide (Page-Locked Host
//! Memory, Mapped Memory) lists as an advantage of mapped memory that no streams are needed to
//! overlap transfers with kernel execution, because the transfers the kernel itself issues
//! overlap its execution automatically. The reads are issued by the warps themselves, as
//! long-latency global loads that the GPU's memory controller turns into PCIe reads, so while
//! some warps wait on the link others compute: latency hiding, as for device memory. The
//! overlap is only partial at the edges: the first requests' round trip, and the work of the
//! last warps after their data arrive, run with the link idle. Those are a few microseconds
//! (one link round trip, one wave's tail), below what this term resolves, so the headline
//! does not add them; the band's top says how much a kernel that cannot hide the link (too few
//! warps in flight) would take.
//!
//! The link bandwidth is the per-direction rate of a x16 link of the PCI Express generation
//! the GPU's architecture ships with (PCI-SIG, PCI Express Base Specification 2.0: 5 GT/s per
//! lane, 8b/10b encoding; 3.0: 8 GT/s, 128b/130b; 4.0: 16 GT/s; 5.0: 32 GT/s, both 128b/130b):
//! 8.0, 15.75, 31.5 and 63.0 GB/s. That is an upper bound: packet headers and the latency of
//! the device's read requests keep real zero-copy throughput below it, and a board may have
//! fewer lanes (laptops often x8). Integrated GPUs (Jetson/Tegra) map host memory in their own
//! DRAM, so the term uses the device's memory bandwidth there.
//!
//! What it does NOT do: change the model's own charge for those accesses (they are still
//! counted as device-memory traffic as well), or model the overlap's edges (above).

use crate::device::Device;
use crate::emulate::decode::GLOBAL_STRIDE_SHIFT;
use crate::emulate::{find_entry, param_index, Emulation};
use crate::error::Result;
use crate::memory::coalescing::SECTOR_BYTES;
use crate::workload::trace::MemSpace;

/// The host link of a device.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct HostLink {
    /// `PCIe 4.0 x16`, `integrated` or `given`.
    pub kind: String,
    /// Bandwidth per direction, GB/s.
    pub gbs: f64,
    pub source: String,
}

/// Per-direction x16 bandwidth of a PCIe generation, GB/s: lanes x line rate x encoding / 8.
fn pcie_x16_gbs(generation: u32) -> f64 {
    let (gts, encoding) = match generation {
        1 => (2.5, 8.0 / 10.0),
        2 => (5.0, 8.0 / 10.0),
        3 => (8.0, 128.0 / 130.0),
        4 => (16.0, 128.0 / 130.0),
        _ => (32.0, 128.0 / 130.0),
    };
    16.0 * gts * encoding / 8.0
}

/// Compute capabilities of NVIDIA's integrated (Tegra) GPUs.
const INTEGRATED: &[(u32, u32)] = &[(3, 2), (5, 3), (6, 2), (7, 2), (8, 7)];

/// The host link of `device`: `given_gbs` when the caller knows it, else by architecture.
pub fn host_link(device: &Device, given_gbs: Option<f64>) -> HostLink {
    if let Some(gbs) = given_gbs {
        return HostLink {
            kind: "given".into(),
            gbs,
            source: "given by the caller".into(),
        };
    }
    let cc = device.compute_capability;
    if INTEGRATED.contains(&(cc.major, cc.minor)) || device.name.to_lowercase().contains("jetson") {
        return HostLink {
            kind: "integrated".into(),
            gbs: device.memory_bandwidth_gbs,
            source:
                "integrated GPU: mapped host memory is the device's own DRAM (memory_bandwidth_gbs)"
                    .into(),
        };
    }
    let generation = match cc.major {
        0..=2 => 2,
        3..=7 => 3,
        8 => 4,
        _ => 5,
    };
    HostLink {
        kind: format!("PCIe {generation}.0 x16"),
        gbs: pcie_x16_gbs(generation),
        source: format!(
            "PCI Express Base Specification {generation}.0 line rate and encoding, x16, for compute capability {cc}"
        ),
    }
}

/// The host-link transfer of a launch's mapped host buffers, named as kernel parameters (PTX
/// names, or positions), at the link the device's architecture ships with ([`host_link`]), and
/// the note that explains it, naming them as `shown` (the names the user typed): what `predict
/// --mapped-host` and a suite case's `mapped_host` add.
pub fn mapped_link(
    module: &crate::ptx::ast::Module,
    entry: &str,
    em: &Emulation,
    mapped: &[String],
    shown: &[&str],
    device: &Device,
) -> Result<(f64, String)> {
    let f = find_entry(module, entry)?;
    let mut positions = Vec::new();
    for name in mapped {
        let k = param_index(f, name, "mapped_host")?;
        if !positions.contains(&k) {
            positions.push(k);
        }
    }
    let link = host_link(device, None);
    let traffic = mapped_traffic(em, &positions);
    let us = traffic.time_us(&link);
    let note = format!(
        "{} ({:.0} bytes read, {:.0} written)",
        link_note(shown, &link, (us, us)),
        traffic.read_bytes,
        traffic.written_bytes
    );
    Ok((us, note))
}

/// Bytes a launch moves to and from the mapped buffers.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct MappedTraffic {
    pub read_bytes: f64,
    pub written_bytes: f64,
}

impl MappedTraffic {
    /// The transfer time over a link, microseconds.
    pub fn time_us(&self, link: &HostLink) -> f64 {
        self.read_bytes.max(self.written_bytes) / (link.gbs * 1e3)
    }
}

/// A prediction with the host-link term added (module doc): the headline and its band.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct LinkedTime {
    /// The model's own time, microseconds.
    pub model_us: f64,
    /// The transfer over the host link alone, microseconds.
    pub link_us: f64,
    /// `max(model, link)`: the transfer overlaps the kernel's work (the headline).
    pub lo_us: f64,
    /// `model + link`: no overlap.
    pub hi_us: f64,
}

impl LinkedTime {
    /// The band for a model time and a link time.
    pub fn new(model_us: f64, link_us: f64) -> LinkedTime {
        LinkedTime {
            model_us,
            link_us,
            lo_us: model_us.max(link_us),
            hi_us: model_us + link_us,
        }
    }

    /// The time to report: the overlapped end of the band.
    pub fn headline_us(&self) -> f64 {
        self.lo_us
    }
}

/// The note that explains the term: which buffers, which link, and `link_us` (the transfer
/// time, or a range `lo..hi` of them over several launches).
pub fn link_note(buffers: &[&str], link: &HostLink, link_us: (f64, f64)) -> String {
    let time = if (link_us.1 - link_us.0).abs() <= 0.05 {
        format!("{:.1} us", link_us.1)
    } else {
        format!("{:.1} to {:.1} us", link_us.0, link_us.1)
    };
    format!(
        "mapped host memory ({}) crosses the host link, {} at {:.2} GB/s per direction ({}): {time} of transfer; the prediction is max(model, link), the transfer overlapping the kernel's work (the CUDA Programming Guide: kernel-originated transfers of mapped memory overlap kernel execution), up to model + link with no overlap; the model still charges those accesses as device memory too",
        buffers.join(", "),
        link.kind,
        link.gbs,
        link.source
    )
}

/// The sectors of kernel parameters `positions` (their synthetic address windows, see
/// `emulate`) touched by the emulated warps, scaled to the whole grid.
pub fn mapped_traffic(em: &Emulation, positions: &[usize]) -> MappedTraffic {
    let mut t = MappedTraffic::default();
    if positions.is_empty() {
        return t;
    }
    let represented: u64 = em.sampled_blocks.iter().map(|b| b.represents).sum();
    let scale = em.launch.blocks() as f64 / represented.max(1) as f64;
    for w in &em.warps {
        let weight = em
            .sampled_blocks
            .iter()
            .find(|b| b.linear == w.block_linear)
            .map_or(1.0, |b| b.represents as f64)
            * scale;
        for a in w.accesses.iter().filter(|a| a.space == MemSpace::Global) {
            let sectors = &w.sector_ids[a.sector_start as usize..a.sector_end as usize];
            let n = sectors
                .iter()
                .filter(|&&s| {
                    let window = (s * SECTOR_BYTES) >> GLOBAL_STRIDE_SHIFT;
                    window >= 1 && positions.contains(&((window - 1) as usize))
                })
                .count();
            let bytes = n as f64 * SECTOR_BYTES as f64 * weight;
            if a.store {
                t.written_bytes += bytes;
            } else {
                t.read_bytes += bytes;
            }
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcie_rates_follow_the_specification() {
        // 16 lanes x 8 GT/s x 128/130 / 8 bits = 15.754 GB/s.
        assert!((pcie_x16_gbs(3) - 15.753_846).abs() < 1e-5);
        assert!((pcie_x16_gbs(4) - 31.507_692).abs() < 1e-5);
        assert!((pcie_x16_gbs(5) - 63.015_385).abs() < 1e-5);
        // 16 x 5 GT/s x 8/10 / 8 = 8 GB/s.
        assert!((pcie_x16_gbs(2) - 8.0).abs() < 1e-12);
    }

    #[test]
    fn each_architecture_gets_its_link() {
        let find = |n: &str| crate::device::catalogue::find(n).unwrap().clone();
        assert_eq!(host_link(&find("RTX 3090"), None).kind, "PCIe 4.0 x16");
        assert_eq!(host_link(&find("RTX 2080 Ti"), None).kind, "PCIe 3.0 x16");
        assert_eq!(host_link(&find("H100 SXM5"), None).kind, "PCIe 5.0 x16");
        let tx2 = find("Jetson TX2");
        let l = host_link(&tx2, None);
        assert_eq!(l.kind, "integrated");
        assert_eq!(l.gbs, tx2.memory_bandwidth_gbs);
        assert_eq!(host_link(&tx2, Some(12.0)).gbs, 12.0);
    }

    #[test]
    fn the_headline_is_the_overlapped_end_of_the_band() {
        // A 30 us kernel with a 50 us transfer: 50 us overlapped, 80 us in turn.
        let t = LinkedTime::new(30.0, 50.0);
        assert_eq!((t.lo_us, t.hi_us, t.headline_us()), (50.0, 80.0, 50.0));
        // A kernel longer than its transfer hides it.
        let t = LinkedTime::new(120.0, 50.0);
        assert_eq!((t.lo_us, t.hi_us, t.headline_us()), (120.0, 170.0, 120.0));
    }

    #[test]
    fn reads_and_writes_use_separate_directions() {
        let link = HostLink {
            kind: "test".into(),
            gbs: 10.0,
            source: String::new(),
        };
        // 160 MB read, 80 MB written at 10 GB/s per direction: 16,000 us.
        let t = MappedTraffic {
            read_bytes: 160e6,
            written_bytes: 80e6,
        };
        assert!((t.time_us(&link) - 16_000.0).abs() < 1e-9);
    }
}
