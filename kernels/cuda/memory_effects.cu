// Small kernels written for kerneltime's tests of what memory does to a kernel's time: atomics
// on one address and on histogram bins, gathers and branches that depend on loaded data,
// indices staged through local and shared memory, every block reading the same table (L2
// reuse), and register spills.

// Every thread adds to one address (`red`: the result is not used).
extern "C" __global__ void count_all(float* sum, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(sum, 1.0f);
}

// Every thread takes a ticket from one counter (`atom`: the old value is used).
extern "C" __global__ void take_ticket(int* counter, int* ticket, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) ticket[i] = atomicAdd(counter, 1);
}

// A histogram in global memory: bins[data[i]] += 1.
extern "C" __global__ void histogram(const int* data, int* bins, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[data[i]], 1);
}

// A histogram of up to 256 bins in shared memory, added to the global one at the end.
extern "C" __global__ void histogram_shared(const int* data, int* bins, int n) {
    __shared__ int local_bins[256];
    int t = threadIdx.x;
    local_bins[t] = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + t;
    if (i < n) atomicAdd(&local_bins[data[i]], 1);
    __syncthreads();
    atomicAdd(&bins[t], local_bins[t]);
}

// y[i] = x[idx[i]]: a gather whose addresses come from loaded data.
extern "C" __global__ void gather(const float* x, const int* idx, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[idx[i]];
}

// A store that runs only where the data say so.
extern "C" __global__ void rare_store(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        if (v == 123.0f) y[i] = 2.0f * v;
    }
}

// The index goes through a local array (volatile, so it stays in local memory).
extern "C" __global__ void staged_local(const float* x, float* y, int n) {
    volatile int slot[4];
    slot[threadIdx.x & 3] = blockIdx.x * blockDim.x + threadIdx.x;
    int i = slot[threadIdx.x & 3];
    if (i < n) y[i] = x[i];
}

// The block's first index is written to shared memory by the block's last thread and read by
// every thread after the barrier.
extern "C" __global__ void staged_shared(const float* x, float* y, int n) {
    __shared__ int base;
    if (threadIdx.x == blockDim.x - 1) base = blockIdx.x * blockDim.x;
    __syncthreads();
    int i = base + threadIdx.x;
    if (i < n) y[i] = x[i];
}

// Every block reads the whole table (n floats) and writes one sum per thread.
extern "C" __global__ void table_sum(const float* table, float* out, int n) {
    float acc = 0.0f;
#pragma unroll 1
    for (int j = threadIdx.x; j < n; j += blockDim.x) acc += table[j];
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// 96 live values per thread under the 64-register limit of 1024-thread blocks: ptxas spills.
extern "C" __global__ void __launch_bounds__(1024) spill_heavy(float* x, int n, int rounds) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v[96];
#pragma unroll
    for (int k = 0; k < 96; ++k) v[k] = x[i + k * n];
#pragma unroll 1
    for (int r = 0; r < rounds; ++r) {
#pragma unroll
        for (int k = 0; k < 96; ++k) v[k] = v[k] * v[(k + 1) % 96] + v[(k + 7) % 96];
    }
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 96; ++k) s += v[k];
    x[i] = s;
}
