// Image-registration kernels of the wu2019 case study, written for kerneltime.
//
// trilinear: sample a volume (nx * ny * nz, x fastest) at given fractional coordinates, one
//   output per thread, eight neighbour loads blended by the fractional parts.
// transform_global / transform_shared: apply a 3x4 affine matrix to every voxel's coordinate
//   and resample the moving volume there (trilinear). The first reads the matrix from global
//   memory per voxel; the second stages it in shared memory once per block (__syncthreads).
// landmark_similarity: for each landmark pair, the sum of squared differences between the
//   (2 radius + 1)^3 neighbourhoods of the two volumes around the two landmark positions.

__device__ __forceinline__ int clamp_index(int v, int hi) { return v < 0 ? 0 : (v > hi ? hi : v); }

__device__ __forceinline__ float sample(const float* v, int nx, int ny, int nz, float fx,
                                        float fy, float fz) {
    int x0 = clamp_index((int)fx, nx - 2);
    int y0 = clamp_index((int)fy, ny - 2);
    int z0 = clamp_index((int)fz, nz - 2);
    float ax = fx - x0, ay = fy - y0, az = fz - z0;
    long sx = 1, sy = nx, sz = (long)nx * ny;
    long b = z0 * sz + y0 * sy + x0;
    float c00 = v[b] * (1 - ax) + v[b + sx] * ax;
    float c10 = v[b + sy] * (1 - ax) + v[b + sy + sx] * ax;
    float c01 = v[b + sz] * (1 - ax) + v[b + sz + sx] * ax;
    float c11 = v[b + sz + sy] * (1 - ax) + v[b + sz + sy + sx] * ax;
    float c0 = c00 * (1 - ay) + c10 * ay;
    float c1 = c01 * (1 - ay) + c11 * ay;
    return c0 * (1 - az) + c1 * az;
}

extern "C" __global__ void trilinear(const float* vol, const float* coords, float* out,
                                     int count, int nx, int ny, int nz) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    out[i] = sample(vol, nx, ny, nz, coords[3 * i], coords[3 * i + 1], coords[3 * i + 2]);
}

extern "C" __global__ void transform_global(const float* moving, const float* affine,
                                            float* out, int nx, int ny, int nz) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    int z = blockIdx.z;
    if (x >= nx) return;
    float fx = affine[0] * x + affine[1] * y + affine[2] * z + affine[3];
    float fy = affine[4] * x + affine[5] * y + affine[6] * z + affine[7];
    float fz = affine[8] * x + affine[9] * y + affine[10] * z + affine[11];
    out[((long)z * ny + y) * nx + x] = sample(moving, nx, ny, nz, fx, fy, fz);
}

extern "C" __global__ void transform_shared(const float* moving, const float* affine,
                                            float* out, int nx, int ny, int nz) {
    __shared__ float a[12];
    if (threadIdx.x < 12) a[threadIdx.x] = affine[threadIdx.x];
    __syncthreads();
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    int z = blockIdx.z;
    if (x >= nx) return;
    float fx = a[0] * x + a[1] * y + a[2] * z + a[3];
    float fy = a[4] * x + a[5] * y + a[6] * z + a[7];
    float fz = a[8] * x + a[9] * y + a[10] * z + a[11];
    out[((long)z * ny + y) * nx + x] = sample(moving, nx, ny, nz, fx, fy, fz);
}

extern "C" __global__ void landmark_similarity(const float* fixed, const float* moving,
                                               const int* lm_fixed, const int* lm_moving,
                                               float* ssd, int count, int nx, int ny,
                                               int radius) {
    int l = blockIdx.x * blockDim.x + threadIdx.x;
    if (l >= count) return;
    long plane = (long)nx * ny;
    long f = lm_fixed[3 * l + 2] * plane + lm_fixed[3 * l + 1] * nx + lm_fixed[3 * l];
    long m = lm_moving[3 * l + 2] * plane + lm_moving[3 * l + 1] * nx + lm_moving[3 * l];
    float sum = 0.0f;
#pragma unroll 1
    for (int dz = -radius; dz <= radius; ++dz) {
#pragma unroll 1
        for (int dy = -radius; dy <= radius; ++dy) {
#pragma unroll 1
            for (int dx = -radius; dx <= radius; ++dx) {
                long o = dz * plane + dy * nx + dx;
                float d = fixed[f + o] - moving[m + o];
                sum += d * d;
            }
        }
    }
    ssd[l] = sum;
}
