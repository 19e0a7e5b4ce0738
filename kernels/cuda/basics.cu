// Small reference kernels written for kerneltime: vector add, naive and tiled matrix
// multiplication (n x n, row-major, TILE x TILE blocks), and a block-wide sum in shared memory.

#define TILE 16
#define BLOCK 256

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void matmul_naive(const float* a, const float* b, float* c, int n) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n || col >= n) return;
    float acc = 0.0f;
#pragma unroll 1
    for (int k = 0; k < n; ++k) acc += a[row * n + k] * b[k * n + col];
    c[row * n + col] = acc;
}

// n must be a multiple of TILE.
extern "C" __global__ void matmul_tiled(const float* a, const float* b, float* c, int n) {
    __shared__ float ta[TILE][TILE];
    __shared__ float tb[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
#pragma unroll 1
    for (int t = 0; t < n; t += TILE) {
        ta[ty][tx] = a[row * n + t + tx];
        tb[ty][tx] = b[(t + ty) * n + col];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc += ta[ty][k] * tb[k][tx];
        __syncthreads();
    }
    c[row * n + col] = acc;
}

// Each block of BLOCK threads sums BLOCK inputs; the halving loop runs log2(BLOCK) = 8 times.
extern "C" __global__ void reduce_sum(const float* in, float* out, int n) {
    __shared__ float part[BLOCK];
    int t = threadIdx.x;
    int i = blockIdx.x * BLOCK + t;
    part[t] = i < n ? in[i] : 0.0f;
    __syncthreads();
#pragma unroll 1
    for (int half = BLOCK / 2; half > 0; half /= 2) {
        if (t < half) part[t] += part[t + half];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = part[0];
}
