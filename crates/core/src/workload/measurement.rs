//! Measured kernel times as plain data: one `Measurement` per launch with what is known about it
//! (device name, grid and block, parameters, profiler `Counters`, the file line it came from).
//! The readers that produce them from profiler and autotuner files are `fit::measurements`; the
//! models read them through `workload::counters`.

use std::fmt;

use serde::Serialize;

use super::Launch;

/// Grid or block dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Dim3 {
    pub x: u64,
    pub y: u64,
    pub z: u64,
}

impl Dim3 {
    pub const fn new(x: u64, y: u64, z: u64) -> Self {
        Self { x, y, z }
    }

    /// x * y * z.
    pub fn count(&self) -> u64 {
        self.x.saturating_mul(self.y).saturating_mul(self.z)
    }
}

impl fmt::Display for Dim3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}", self.x, self.y, self.z)
    }
}

/// Profiler counters of one launch (nvprof metric names); any of them may be absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Counters {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regs_per_thread: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub static_smem_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dynamic_smem_bytes: Option<u64>,
    /// Achieved occupancy, a fraction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub achieved_occupancy: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_cycles_sm: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_cycles: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warps_launched: Option<f64>,
    /// Warp instructions executed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inst_executed: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gld_transactions: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gst_transactions: Option<f64>,
    /// 32-byte DRAM read transactions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dram_read_transactions: Option<f64>,
    /// 32-byte DRAM write transactions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dram_write_transactions: Option<f64>,
    /// Warp-level global load requests (each may need several transactions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gld_requests: Option<f64>,
    /// Warp-level global store requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gst_requests: Option<f64>,
    /// 32-byte L2 read transactions (sectors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l2_read_transactions: Option<f64>,
    /// 32-byte L2 write transactions (sectors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub l2_write_transactions: Option<f64>,
    /// Cycles from the kernel's start to its end (Nsight Compute `gpc__cycles_elapsed.max`),
    /// unlike `elapsed_cycles_sm`, which sums over the SMs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_cycles: Option<f64>,
    /// The core clock the profiler reported for the run, when the file has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub core_clock_mhz: Option<f64>,
    /// The compute capability the file reports, such as "3.5".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_capability: Option<String>,
}

impl Counters {
    /// Whether no counter is set.
    pub fn is_empty(&self) -> bool {
        *self == Counters::default()
    }
}

/// Where a measurement came from: the file and its 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceLine {
    pub file: String,
    pub line: usize,
}

/// One measured kernel time with what is known about the launch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Measurement {
    /// The kernel's name as the tool printed it.
    pub kernel: String,
    /// The GPU's name as the file gives it (not resolved against the catalogue).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid: Option<Dim3>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<Dim3>,
    /// Kernel or problem parameters by name (numbers, or text when not numeric).
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub params: serde_json::Map<String, serde_json::Value>,
    /// The measured kernel time, microseconds.
    pub time_us: f64,
    /// How many runs `time_us` summarizes (a median or mean), when the file says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples: Option<u64>,
    /// The host-side launch API call time (`cudaLaunchKernel`), microseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch_api_us: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counters: Option<Counters>,
    pub source: SourceLine,
}

impl Measurement {
    /// A measurement with only a kernel name, a time and its source line.
    pub fn new(kernel: &str, time_us: f64, file: &str, line: usize) -> Self {
        Self {
            kernel: kernel.to_string(),
            device: None,
            grid: None,
            block: None,
            params: serde_json::Map::new(),
            time_us,
            samples: None,
            launch_api_us: None,
            counters: None,
            source: SourceLine {
                file: file.to_string(),
                line,
            },
        }
    }

    /// The launch as the models take it, when grid and block are known and fit the types.
    pub fn launch(&self) -> Option<Launch> {
        let (grid, block) = (self.grid?, self.block?);
        Some(Launch {
            blocks: grid.count(),
            threads_per_block: u32::try_from(block.count()).ok()?,
            launches: 1,
        })
    }
}
