// Shapes of public PTX that the emulator has to follow, compiled by nvcc for the fixtures in
// tests/fixtures/ptx/shapes/ (see scripts/regenerate-fixtures.sh):
//   - a struct passed by value (a `.param .align 8 .b8 p[24]` aggregate read with
//     `ld.param.u32 %r, [p+8]`),
//   - calls into `.func`s that nvcc keeps (`__noinline__`), one of them recursive,
//   - a 2D texture fetch through a texture object (`tex.2d.v4.f32.f32` with a vector of
//     coordinates).

struct Params {
    float *out;   // bytes 0..8
    int n;        // bytes 8..12
    float scale;  // bytes 12..16
    int stride;   // bytes 16..20
};

__device__ __noinline__ float square(float x) { return x * x; }

__device__ __noinline__ int depth_sum(int d) { return d <= 0 ? 0 : d + depth_sum(d - 1); }

extern "C" __global__ void by_value(Params p) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int k = 0; k < p.n; ++k) {
        acc += square(p.scale * (float)k);
    }
    p.out[i * p.stride] = acc;
}

extern "C" __global__ void recursive(int *out, int depth) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // The returned value sets the store's stride, so the trace shows whether it was known.
    out[i * depth_sum(depth)] = i;
}

extern "C" __global__ void textured(cudaTextureObject_t t, float *out) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    float4 v = tex2D<float4>(t, (float)x + 0.5f, 0.5f);
    out[x] = v.x + v.w;
}
