// Occupancy oracle for tests/occupancy_oracle.rs: runs NVIDIA's occupancy calculator
// (cuda_occupancy.h, included from the installed CUDA toolkit) on cases read from stdin.
//
// Input, one case per line, whitespace-separated integers:
//   major minor max_threads_per_block max_threads_per_sm registers_per_block registers_per_sm
//   shared_memory_per_block shared_memory_per_sm shared_memory_per_block_optin
//   reserved_shared_memory_per_block threads_per_block registers_per_thread
//   shared_memory_bytes cache_config carveout_percent
// where cache_config is 0 none, 1 prefer shared, 2 prefer L1, 3 prefer equal, and
// carveout_percent is -1 (no preference) or 0..100.
//
// The kernel is described the way a CUDA program that opted in to `shared_memory_bytes` of
// dynamic shared memory would be: no static shared memory, the opt-in per-block limit, the
// function's dynamic limit set to exactly the bytes launched with, one block barrier.
//
// Output, one line per case:
//   status active_blocks limiting_factors limit_registers limit_shared_memory limit_warps limit_blocks
// limiting_factors is the header's bit field restricted to warps (1), registers (2),
// shared memory (4) and blocks (8). Limits the header reports as INT_MAX print as -1.
#include <climits>
#include <cstdio>
#include <cstring>

#include "cuda_occupancy.h"

static long long or_unlimited(int v) { return v == INT_MAX ? -1 : (long long)v; }

int main() {
    long long f[15];
    for (;;) {
        for (int i = 0; i < 15; ++i) {
            if (std::scanf("%lld", &f[i]) != 1) {
                return 0;
            }
        }
        cudaOccDeviceProp prop;
        prop.computeMajor = (int)f[0];
        prop.computeMinor = (int)f[1];
        prop.maxThreadsPerBlock = (int)f[2];
        prop.maxThreadsPerMultiprocessor = (int)f[3];
        prop.regsPerBlock = (int)f[4];
        prop.regsPerMultiprocessor = (int)f[5];
        prop.warpSize = 32;
        prop.sharedMemPerBlock = (size_t)f[6];
        prop.sharedMemPerMultiprocessor = (size_t)f[7];
        prop.numSms = 1;
        prop.sharedMemPerBlockOptin = (size_t)f[8];
        prop.reservedSharedMemPerBlock = (size_t)f[9];

        cudaOccFuncAttributes attr;
        attr.maxThreadsPerBlock = INT_MAX;
        attr.numRegs = (int)f[11];
        attr.sharedSizeBytes = 0;
        attr.partitionedGCConfig = PARTITIONED_GC_OFF;
        attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
        attr.maxDynamicSharedSizeBytes = (size_t)f[12];
        attr.numBlockBarriers = 1;
        attr.virtualResourceCount = 0;

        cudaOccDeviceState state;
        state.cacheConfig = (cudaOccCacheConfig)f[13];
        state.carveoutConfig = (int)f[14];

        cudaOccResult result;
        std::memset(&result, 0, sizeof(result));
        cudaOccError status = cudaOccMaxActiveBlocksPerMultiprocessor(
            &result, &prop, &attr, &state, (int)f[10], (size_t)f[12]);
        unsigned int factors = result.limitingFactors &
            (OCC_LIMIT_WARPS | OCC_LIMIT_REGISTERS | OCC_LIMIT_SHARED_MEMORY | OCC_LIMIT_BLOCKS);
        std::printf("%d %d %u %lld %lld %lld %lld\n", (int)status,
                    result.activeBlocksPerMultiprocessor, factors,
                    or_unlimited(result.blockLimitRegs), or_unlimited(result.blockLimitSharedMem),
                    or_unlimited(result.blockLimitWarps), or_unlimited(result.blockLimitBlocks));
    }
}
