// 3D acoustic FDTD kernels of the parra2016 case study, written for kerneltime.
//
// Second-order-in-time update on a regular grid of nx * ny * nz points (x fastest):
//   p_next = 2 p - p_prev + vel2 * (c0 p + sum_{r=1..R} c_r (six neighbours at distance r))
// with R = ORDER / 2. One thread per (x, y) column marches along z over the interior points
// z = R .. nz-R-1 (nz - 2R iterations); points closer than R to an x or y face are skipped.
// `ricker_source` fills one wavelet sample per thread; `add_source` adds the sample of time
// step `step` at one grid point (a single thread).

template <int R>
__device__ __forceinline__ void fdtd_column(const float* p, const float* p_prev, float* p_next,
                                            const float* vel2, const float* c, int nx, int ny,
                                            int nz) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < R || y < R || x >= nx - R || y >= ny - R) return;
    long plane = (long)nx * ny;
#pragma unroll 1
    for (int z = R; z < nz - R; ++z) {
        long i = z * plane + (long)y * nx + x;
        float lap = c[0] * p[i];
#pragma unroll
        for (int r = 1; r <= R; ++r) {
            lap += c[r] * (p[i - r] + p[i + r] + p[i - r * nx] + p[i + r * nx] +
                           p[i - r * plane] + p[i + r * plane]);
        }
        p_next[i] = 2.0f * p[i] - p_prev[i] + vel2[i] * lap;
    }
}

extern "C" __global__ void fdtd_o2(const float* p, const float* p_prev, float* p_next,
                                   const float* vel2, const float* c, int nx, int ny, int nz) {
    fdtd_column<1>(p, p_prev, p_next, vel2, c, nx, ny, nz);
}

extern "C" __global__ void fdtd_o4(const float* p, const float* p_prev, float* p_next,
                                   const float* vel2, const float* c, int nx, int ny, int nz) {
    fdtd_column<2>(p, p_prev, p_next, vel2, c, nx, ny, nz);
}

extern "C" __global__ void fdtd_o8(const float* p, const float* p_prev, float* p_next,
                                   const float* vel2, const float* c, int nx, int ny, int nz) {
    fdtd_column<4>(p, p_prev, p_next, vel2, c, nx, ny, nz);
}

// Ricker wavelet w(t) = (1 - 2 a) exp(-a), a = (pi f (t - t0))^2, sampled at t = k dt.
extern "C" __global__ void ricker_source(float* w, int steps, float f, float dt, float t0) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= steps) return;
    float arg = 3.14159265f * f * (k * dt - t0);
    float a = arg * arg;
    w[k] = (1.0f - 2.0f * a) * __expf(-a);
}

extern "C" __global__ void add_source(float* p, const float* w, int step, long at) {
    if (blockIdx.x == 0 && threadIdx.x == 0) p[at] += w[step];
}
