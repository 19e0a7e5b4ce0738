// ubench.cu - kerneltime's own GPU micro-benchmarks. Written for kerneltime.
//
// Measures, on the GPU it runs on, the values a kerneltime device file takes from a measurement:
//   l1_hit_cycles, l2_hit_cycles, dram_cycles  one-thread pointer chases through global memory
//                                               (L1: 8 KB footprint with ld.global.ca; L2: a quarter
//                                               of the L2 with ld.global.cg; DRAM: 8 x L2, 4 KB stride,
//                                               after an L2 flush)
//   shared_load_cycles                          one-thread pointer chase in shared memory
//   dram_bandwidth_gbs                          a grid-stride float4 copy (bytes read + written / s)
//   l2_bandwidth_gbs                            float4 ld.global.cg reads of half the L2, repeated
//   launch_overhead_us                          an empty kernel: host launch call to completion
//                                               (median of 200)
//   atomic_same_address_per_s                   atomicAdd by every thread to one address
//   atomic_distinct_address_per_s               atomicAdd by every thread to its own address
//   measured_sm_clock_mhz                       clock64() ticks per event-timed microsecond
// plus the device properties the CUDA runtime reports (attributes, so that CUDA 11 to 13 work).
//
// Output: "# kerneltime-ubench 1", then one `key = value` line per value, units in the key names.
// `kerneltime device import --format kerneltime-ubench OUT.txt -o my-gpu.toml` reads it; the
// one-command route is scripts/ubench.sh. Latencies are in SM clock cycles (clock64).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(call)                                                                      \
    do {                                                                                 \
        cudaError_t err_ = (call);                                                       \
        if (err_ != cudaSuccess) {                                                       \
            fprintf(stderr, "ubench: %s failed: %s (line %d)\n", #call,                  \
                    cudaGetErrorString(err_), __LINE__);                                 \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

// ---------------------------------------------------------------------------------------------
// Kernels

// next[i] = (i + stride) mod n: a cyclic chain visiting every stride-th word.
__global__ void init_chain(unsigned* next, unsigned n, unsigned stride) {
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        next[i] = (i + stride) % n;
}

__device__ __forceinline__ unsigned load_ca(const unsigned* p) {
    unsigned v;
    asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ unsigned load_cg(const unsigned* p) {
    unsigned v;
    asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// One thread follows the chain: `warm` untimed steps, then `steps` timed ones.
__global__ void chase_global(const unsigned* next, int warm, int steps, int bypass_l1,
                             long long* cycles, unsigned* sink) {
    unsigned j = 0;
    if (bypass_l1) {
        for (int i = 0; i < warm; ++i) j = load_cg(next + j);
        long long t0 = clock64();
        for (int i = 0; i < steps; ++i) j = load_cg(next + j);
        long long t1 = clock64();
        cycles[0] = t1 - t0;
    } else {
        for (int i = 0; i < warm; ++i) j = load_ca(next + j);
        long long t0 = clock64();
        for (int i = 0; i < steps; ++i) j = load_ca(next + j);
        long long t1 = clock64();
        cycles[0] = t1 - t0;
    }
    sink[0] = j;
}

#define SHARED_WORDS 2048

__global__ void chase_shared(int steps, long long* cycles, unsigned* sink) {
    __shared__ unsigned chain[SHARED_WORDS];
    for (int i = threadIdx.x; i < SHARED_WORDS; i += blockDim.x) chain[i] = (i + 1) % SHARED_WORDS;
    __syncthreads();
    if (threadIdx.x != 0) return;
    volatile unsigned* s = chain;
    unsigned j = 0;
    for (int i = 0; i < SHARED_WORDS; ++i) j = s[j];
    long long t0 = clock64();
    for (int i = 0; i < steps; ++i) j = s[j];
    long long t1 = clock64();
    cycles[0] = t1 - t0;
    sink[0] = j;
}

// Writes every word of `buf` so that nothing the chase needs stays in L2.
__global__ void flush(unsigned* buf, size_t words) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words;
         i += (size_t)gridDim.x * blockDim.x)
        buf[i] = (unsigned)i;
}

__global__ void copy(const float4* __restrict__ in, float4* __restrict__ out, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = in[i];
}

__device__ __forceinline__ float4 load_cg4(const float4* p) {
    float4 v;
    asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(p)
                 : "memory");
    return v;
}

// Every thread reads its share of `in` (small enough to stay in L2) `repeat` times.
__global__ void read_l2(const float4* in, size_t n, int repeat, float* sink) {
    float acc = 0.0f;
    for (int r = 0; r < repeat; ++r)
        for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
             i += (size_t)gridDim.x * blockDim.x) {
            float4 v = load_cg4(in + i);
            acc += v.x + v.y + v.z + v.w;
        }
    if (acc == -1.0f) sink[0] = acc;  // never true for the data written; keeps the loads
}

__global__ void empty_kernel() {}

__global__ void atomics(unsigned* counters, int distinct, int repeat, unsigned* out) {
    unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned* target = counters + (distinct ? tid : 0);
    unsigned s = 0;
    for (int i = 0; i < repeat; ++i) s += atomicAdd(target, 1u);
    out[tid] = s;  // the returned values are used, so every atomic is performed
}

__global__ void spin(long long target_cycles, long long* cycles) {
    long long start = clock64();
    long long now = start;
    while (now - start < target_cycles) now = clock64();
    cycles[0] = now - start;
}

// ---------------------------------------------------------------------------------------------
// Host side

// FP32 results per clock per SM (CUDA C++ Programming Guide, arithmetic instruction throughput),
// which is what deviceQuery calls CUDA cores per multiprocessor. 0 when unknown.
static int cores_per_sm(int major, int minor) {
    switch (major) {
        case 2: return minor == 1 ? 48 : 32;
        case 3: return 192;
        case 5: return 128;
        case 6: return minor == 0 ? 64 : 128;
        case 7: return 64;
        case 8: return minor == 0 ? 64 : 128;
        case 9: return 128;
        case 10: case 11: case 12: return 128;
        default: return 0;
    }
}

static int attribute(cudaDeviceAttr a, int dev) {
    int v = 0;
    CHECK(cudaDeviceGetAttribute(&v, a, dev));
    return v;
}

struct Timer {
    cudaEvent_t start, stop;
    Timer() {
        CHECK(cudaEventCreate(&start));
        CHECK(cudaEventCreate(&stop));
    }
    ~Timer() {
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
    }
    void begin() { CHECK(cudaEventRecord(start)); }
    // Milliseconds since begin().
    float end() {
        CHECK(cudaEventRecord(stop));
        CHECK(cudaEventSynchronize(stop));
        float ms = 0.0f;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        return ms;
    }
};

// Cycles per step of a chase over `bytes` bytes with `stride_bytes` between visited words.
static double chase(size_t bytes, size_t stride_bytes, int warm, int steps, bool bypass_l1,
                    size_t flush_bytes) {
    unsigned n = (unsigned)(bytes / sizeof(unsigned));
    unsigned stride = (unsigned)(stride_bytes / sizeof(unsigned));
    unsigned *next = nullptr, *sink = nullptr, *junk = nullptr;
    long long* cycles = nullptr;
    CHECK(cudaMalloc(&next, bytes));
    CHECK(cudaMalloc(&sink, sizeof(unsigned)));
    CHECK(cudaMalloc(&cycles, sizeof(long long)));
    init_chain<<<256, 256>>>(next, n, stride);
    CHECK(cudaGetLastError());
    if (flush_bytes > 0) {
        CHECK(cudaMalloc(&junk, flush_bytes));
        flush<<<256, 256>>>(junk, flush_bytes / sizeof(unsigned));
        CHECK(cudaGetLastError());
    }
    chase_global<<<1, 1>>>(next, warm, steps, bypass_l1 ? 1 : 0, cycles, sink);
    CHECK(cudaGetLastError());
    long long c = 0;
    CHECK(cudaMemcpy(&c, cycles, sizeof c, cudaMemcpyDeviceToHost));
    cudaFree(next);
    cudaFree(sink);
    cudaFree(cycles);
    if (junk) cudaFree(junk);
    return (double)c / steps;
}

int main(int argc, char** argv) {
    int dev = argc > 1 ? atoi(argv[1]) : 0;
    CHECK(cudaSetDevice(dev));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, dev));
    int major = attribute(cudaDevAttrComputeCapabilityMajor, dev);
    int minor = attribute(cudaDevAttrComputeCapabilityMinor, dev);
    int sms = attribute(cudaDevAttrMultiProcessorCount, dev);
    int clock_khz = attribute(cudaDevAttrClockRate, dev);
    int l2_bytes = attribute(cudaDevAttrL2CacheSize, dev);
    size_t free_bytes = 0, total_bytes = 0;
    CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));

    printf("# kerneltime-ubench 1\n");
    printf("# device %d; latencies in SM clock cycles (clock64)\n", dev);
    printf("name = %s\n", prop.name);
    printf("compute_capability = %d.%d\n", major, minor);
    printf("sm_count = %d\n", sms);
    if (cores_per_sm(major, minor) > 0) printf("cores_per_sm = %d\n", cores_per_sm(major, minor));
    printf("max_clock_mhz = %.1f\n", clock_khz / 1000.0);
    printf("memory_clock_mhz = %.1f\n", attribute(cudaDevAttrMemoryClockRate, dev) / 1000.0);
    printf("memory_bus_width_bits = %d\n", attribute(cudaDevAttrGlobalMemoryBusWidth, dev));
    printf("l2_cache_bytes = %d\n", l2_bytes);
    printf("global_memory_bytes = %zu\n", total_bytes);
    printf("shared_memory_per_block_bytes = %d\n", attribute(cudaDevAttrMaxSharedMemoryPerBlock, dev));
    printf("shared_memory_per_block_optin_bytes = %d\n",
           attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    printf("shared_memory_per_sm_bytes = %d\n",
           attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
    printf("registers_per_block = %d\n", attribute(cudaDevAttrMaxRegistersPerBlock, dev));
    printf("registers_per_sm = %d\n", attribute(cudaDevAttrMaxRegistersPerMultiprocessor, dev));
    printf("max_threads_per_block = %d\n", attribute(cudaDevAttrMaxThreadsPerBlock, dev));
    printf("max_threads_per_sm = %d\n", attribute(cudaDevAttrMaxThreadsPerMultiProcessor, dev));
    printf("max_blocks_per_sm = %d\n", attribute(cudaDevAttrMaxBlocksPerMultiprocessor, dev));
    fflush(stdout);

    Timer timer;
    long long* cycles = nullptr;
    unsigned* sink = nullptr;
    CHECK(cudaMalloc(&cycles, sizeof(long long)));
    CHECK(cudaMalloc(&sink, sizeof(unsigned)));

    // The SM clock while busy: clock64 ticks over event time.
    {
        long long target = 200LL * 1000 * 1000;
        spin<<<1, 1>>>(target / 20, cycles);  // warm up the clocks
        timer.begin();
        spin<<<1, 1>>>(target, cycles);
        float ms = timer.end();
        long long c = 0;
        CHECK(cudaMemcpy(&c, cycles, sizeof c, cudaMemcpyDeviceToHost));
        printf("measured_sm_clock_mhz = %.1f\n", c / (ms * 1000.0));
    }

    // Latencies.
    size_t l2 = l2_bytes > 0 ? (size_t)l2_bytes : (size_t)1 << 20;
    printf("l1_hit_cycles = %.3f\n", chase(8 << 10, 128, 64, 4096, false, 0));
    size_t l2_footprint = std::max<size_t>(l2 / 4, 64 << 10);
    printf("l2_hit_cycles = %.3f\n",
           chase(l2_footprint, 128, (int)(l2_footprint / 128), 4096, true, 0));
    size_t dram_footprint = std::min(std::max<size_t>(8 * l2, 64u << 20), free_bytes / 4);
    int dram_steps = (int)std::min<size_t>(dram_footprint / 4096 - 1, 16384);
    printf("dram_cycles = %.3f\n",
           chase(dram_footprint, 4096, 0, dram_steps, true, std::min(4 * l2, free_bytes / 4)));
    chase_shared<<<1, 256>>>(4096, cycles, sink);
    CHECK(cudaGetLastError());
    {
        long long c = 0;
        CHECK(cudaMemcpy(&c, cycles, sizeof c, cudaMemcpyDeviceToHost));
        printf("shared_load_cycles = %.3f\n", c / 4096.0);
    }
    fflush(stdout);

    int blocks = sms * 8, threads = 256;

    // DRAM bandwidth: a copy of buffers far larger than L2.
    {
        size_t bytes = std::min(std::max<size_t>(16 * l2, 256u << 20), free_bytes / 4);
        size_t n = bytes / sizeof(float4);
        float4 *in = nullptr, *out = nullptr;
        CHECK(cudaMalloc(&in, bytes));
        CHECK(cudaMalloc(&out, bytes));
        CHECK(cudaMemset(in, 0, bytes));
        copy<<<blocks, threads>>>(in, out, n);
        const int reps = 10;
        timer.begin();
        for (int r = 0; r < reps; ++r) copy<<<blocks, threads>>>(in, out, n);
        float ms = timer.end();
        CHECK(cudaGetLastError());
        printf("dram_bandwidth_gbs = %.3f\n", 2.0 * bytes * reps / (ms * 1e-3) / 1e9);
        cudaFree(in);
        cudaFree(out);
    }

    // L2 bandwidth: repeated reads of half the L2.
    {
        size_t bytes = std::max<size_t>(l2 / 2, 64 << 10);
        size_t n = bytes / sizeof(float4);
        float4* in = nullptr;
        float* fsink = nullptr;
        CHECK(cudaMalloc(&in, bytes));
        CHECK(cudaMalloc(&fsink, sizeof(float)));
        CHECK(cudaMemset(in, 0, bytes));
        const int repeat = 64;
        read_l2<<<blocks, threads>>>(in, n, 2, fsink);
        timer.begin();
        read_l2<<<blocks, threads>>>(in, n, repeat, fsink);
        float ms = timer.end();
        CHECK(cudaGetLastError());
        printf("l2_bandwidth_gbs = %.3f\n", (double)bytes * repeat / (ms * 1e-3) / 1e9);
        cudaFree(in);
        cudaFree(fsink);
    }

    // Launch overhead: host time from the launch call to the end of cudaDeviceSynchronize.
    {
        for (int i = 0; i < 20; ++i) empty_kernel<<<1, 32>>>();
        CHECK(cudaDeviceSynchronize());
        std::vector<double> us;
        for (int i = 0; i < 200; ++i) {
            auto t0 = std::chrono::steady_clock::now();
            empty_kernel<<<1, 32>>>();
            CHECK(cudaDeviceSynchronize());
            auto t1 = std::chrono::steady_clock::now();
            us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        }
        std::sort(us.begin(), us.end());
        printf("launch_overhead_us = %.3f\n", us[us.size() / 2]);
    }

    // Atomics: every thread of a full grid adds `repeat` times.
    {
        int total = blocks * threads, repeat = 64;
        unsigned *counters = nullptr, *out = nullptr;
        CHECK(cudaMalloc(&counters, total * sizeof(unsigned)));
        CHECK(cudaMalloc(&out, total * sizeof(unsigned)));
        const char* names[2] = {"atomic_same_address_per_s", "atomic_distinct_address_per_s"};
        for (int distinct = 0; distinct < 2; ++distinct) {
            CHECK(cudaMemset(counters, 0, total * sizeof(unsigned)));
            atomics<<<blocks, threads>>>(counters, distinct, 4, out);
            timer.begin();
            atomics<<<blocks, threads>>>(counters, distinct, repeat, out);
            float ms = timer.end();
            CHECK(cudaGetLastError());
            printf("%s = %.6e\n", names[distinct], (double)total * repeat / (ms * 1e-3));
        }
        cudaFree(counters);
        cudaFree(out);
    }
    cudaFree(cycles);
    cudaFree(sink);
    return 0;
}
