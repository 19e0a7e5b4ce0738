// Discrete wavelet transform kernels of the puchala2022 case study, written for kerneltime.
//
// dwt_matrix: one thread per output coefficient. Even outputs use the low-pass filter, odd
// outputs the high-pass filter; both are K taps long and read the input cyclically from the
// even position 2*(i/2). One loop of K iterations with two global loads each (tap, sample),
// then one global store.
//
// dwt_lattice_stage: one launch per lattice stage, one thread per pair of samples. The pair
// (a, b) becomes (a + s*b, t*a + b) with the stage's two coefficients s and t (two multiplies,
// two adds). Stage 0 pairs (2j, 2j+1); later stages pair (2j+1, 2j+2), wrapping around.
// No loop: two coefficient loads, two sample loads, arithmetic, two stores.

extern "C" __global__ void dwt_matrix(const float* x, const float* filters, float* y, int n,
                                      int taps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float* h = filters + (i & 1) * taps;
    int first = i & ~1;
    float acc = 0.0f;
#pragma unroll 1
    for (int k = 0; k < taps; ++k) {
        acc += h[k] * x[(first + k) % n];
    }
    y[i] = acc;
}

extern "C" __global__ void dwt_lattice_stage(const float* in, float* out, const float* coef,
                                             int n, int stage) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n / 2) return;
    int shift = stage > 0 ? 1 : 0;
    int ia = 2 * j + shift;
    int ib = (ia + 1) % n;
    float s = coef[2 * stage];
    float t = coef[2 * stage + 1];
    float a = in[ia];
    float b = in[ib];
    out[ia] = a + s * b;
    out[ib] = t * a + b;
}
