//! Memory behaviour of warp accesses: coalescing of lane addresses into 32-byte sectors and
//! 128-byte lines (`coalescing`), shared-memory bank conflicts (`banks`) and an LRU cache
//! simulation for L1 and L2 hit ratios (`cache`).
//!
//! Pure arithmetic on addresses (and `prefetch`, a hint to the CPU for the walks over warp
//! traces); nothing here emulates instructions or knows a device beyond the sizes it is given.
//! Times are the models' business.

pub mod banks;
pub mod cache;
pub mod coalescing;

/// How far ahead of a warp's current request the trace walks prefetch its record and its
/// sector addresses (a request has a few sectors on average).
const PREFETCH_RECORDS: usize = 8;
const PREFETCH_SECTORS: usize = 32;

/// The prefetch of both trace walks: warp `w`'s access record a few requests after `record`
/// (the one being read) and its sector addresses a few after `sector` (that record's first).
#[inline(always)]
pub(crate) fn prefetch_ahead(w: &crate::workload::trace::WarpTrace, record: usize, sector: usize) {
    prefetch(&w.accesses, record + PREFETCH_RECORDS);
    prefetch(&w.sector_ids, sector + PREFETCH_SECTORS);
}

/// Asks the CPU to bring `items[i]` into its caches ahead of use (nothing when `i` is past the
/// end, or off x86-64). The trace walks (the cache simulation, the trace model's DRAM row
/// pass) read several warps' records in turn, a few bytes of each at a time: more streams than
/// the hardware prefetcher follows, so without this most records arrive from DRAM on demand.
#[inline(always)]
fn prefetch<T>(items: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(x) = items.get(i) {
        // SAFETY: a prefetch is a hint: it reads no value and cannot fault.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                (x as *const T).cast::<i8>(),
            )
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (items, i);
}
