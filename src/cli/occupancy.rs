//! `kerneltime occupancy`: active blocks and warps per SM for one block shape, by NVIDIA's exact
//! algorithm (default) or one of the paper formulas (`--variant wu2019|wang2019`).
//!
//! This file only turns flags into a request and prints the result; the arithmetic is in
//! `device::occupancy`. Out-of-range values are errors naming the flag (exit code 2); a block that
//! fits but leaves no room for even one block prints 0 active blocks and the limiting resource.

use clap::Args;

use super::{print_json, DeviceSelection};
use kerneltime::device::occupancy::{
    occupancy_variant, BlockResources, Carveout, OccupancyOptions, Variant,
};
use kerneltime::error::{Error, Result};

#[derive(Debug, Args)]
pub struct OccupancyArgs {
    #[command(flatten)]
    pub device: DeviceSelection,
    /// Threads per block (1 to the device's maximum, usually 1024).
    #[arg(long)]
    pub threads_per_block: u32,
    /// Registers per thread (as reported by ptxas -v); 0 means "not limiting".
    #[arg(long, default_value_t = 0)]
    pub registers_per_thread: u32,
    /// Static plus dynamic shared memory per block, bytes (without the driver's reserved bytes).
    #[arg(long, default_value_t = 0)]
    pub shared_memory_per_block: u32,
    /// Shared-memory carve-out: default, shared, l1, equal, or a percentage 0-100 (7.0 and newer).
    #[arg(long, default_value = "default")]
    pub carveout: String,
    /// Formula: exact (NVIDIA's cuda_occupancy.h), wu2019 (eq 7-11) or wang2019 (eq 1-7).
    #[arg(long, default_value = "exact")]
    pub variant: String,
    /// One JSON object on stdout: the occupancy and what limits it.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &OccupancyArgs) -> Result<()> {
    let variant = Variant::parse(&args.variant)?;
    let carveout = Carveout::parse(&args.carveout)?;
    let device = args.device.resolve().map_err(|e| match e {
        Error::UnknownDevice { .. } => Error::invalid("--device", e.to_string()),
        other => other,
    })?;
    let r = BlockResources {
        threads_per_block: args.threads_per_block,
        registers_per_thread: args.registers_per_thread,
        shared_memory_per_block_bytes: args.shared_memory_per_block,
    };
    let occ = occupancy_variant(&device, &r, &OccupancyOptions { carveout }, variant)?;
    if args.json {
        let mut v = serde_json::to_value(&occ)
            .map_err(|e| Error::invalid("json", format!("cannot serialize output: {e}")))?;
        if let Some(m) = v.as_object_mut() {
            m.insert("device".into(), device.name.clone().into());
            m.insert(
                "compute_capability".into(),
                device.compute_capability.to_string().into(),
            );
            m.insert(
                "max_warps_per_sm".into(),
                device.limits.max_warps_per_sm.into(),
            );
        }
        return print_json(&v);
    }
    println!(
        "{} (compute capability {}): {} threads, {} registers/thread, {} B shared memory per block [{}]",
        device.name,
        device.compute_capability,
        r.threads_per_block,
        r.registers_per_thread,
        r.shared_memory_per_block_bytes,
        args.variant.to_ascii_lowercase()
    );
    println!("  active blocks per SM  {}", occ.active_blocks_per_sm);
    println!(
        "  active warps per SM   {} of {}",
        occ.active_warps_per_sm, device.limits.max_warps_per_sm
    );
    println!("  occupancy             {:.3}", occ.occupancy);
    let show = |v: u32| {
        if v == u32::MAX {
            "no limit".to_string()
        } else {
            v.to_string()
        }
    };
    println!(
        "  block limits          blocks {}, warps {}, registers {}, shared memory {}",
        show(occ.blocks_limit_blocks),
        show(occ.blocks_limit_warps),
        show(occ.blocks_limit_registers),
        show(occ.blocks_limit_shared_memory)
    );
    let lim: Vec<String> = occ
        .limited_by
        .iter()
        .map(|l| {
            serde_json::to_value(l)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        })
        .collect();
    println!("  limited by            {}", lim.join(", "));
    if occ.active_blocks_per_sm == 0 {
        println!("  (this block cannot run on this device: no block fits on an SM)");
    }
    Ok(())
}
