//! `kerneltime occupancy`: active blocks and warps per SM for one block shape.

use clap::Args;

use super::{print_json, DeviceSelection};
use crate::device::occupancy::{occupancy, BlockResources};
use crate::error::Result;

#[derive(Debug, Args)]
pub struct OccupancyArgs {
    #[command(flatten)]
    pub device: DeviceSelection,
    /// Threads per block.
    #[arg(long)]
    pub threads_per_block: u32,
    /// Registers per thread (as reported by ptxas -v); 0 means "not limiting".
    #[arg(long, default_value_t = 0)]
    pub registers_per_thread: u32,
    /// Dynamic plus static shared memory per block, bytes.
    #[arg(long, default_value_t = 0)]
    pub shared_memory_per_block: u32,
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &OccupancyArgs) -> Result<()> {
    let device = args.device.resolve()?;
    let r = BlockResources {
        threads_per_block: args.threads_per_block,
        registers_per_thread: args.registers_per_thread,
        shared_memory_per_block_bytes: args.shared_memory_per_block,
    };
    let occ = occupancy(&device, &r)?;
    if args.json {
        let mut v = serde_json::to_value(&occ).unwrap_or_default();
        if let Some(m) = v.as_object_mut() {
            m.insert("device".into(), device.name.clone().into());
        }
        return print_json(&v);
    }
    println!(
        "{}: {} threads, {} registers/thread, {} B shared memory per block",
        device.name, r.threads_per_block, r.registers_per_thread, r.shared_memory_per_block_bytes
    );
    println!("  active blocks per SM  {}", occ.active_blocks_per_sm);
    println!(
        "  active warps per SM   {} of {}",
        occ.active_warps_per_sm, device.limits.max_warps_per_sm
    );
    println!("  occupancy             {:.3}", occ.occupancy);
    let lim: Vec<String> = occ.limited_by.iter().map(|l| format!("{l:?}")).collect();
    println!("  limited by            {}", lim.join(", "));
    Ok(())
}
