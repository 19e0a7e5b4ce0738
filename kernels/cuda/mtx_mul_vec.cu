// Matrix-vector product of the puchala2022 case study, written for kerneltime from the
// algorithm: thread `row` accumulates row `row` of the n x n row-major matrix times the input
// vector directly into the output vector (which the host zeroes), one column per iteration.
// The loop is kept rolled so that its structure stays visible in the PTX.

extern "C" __global__ void mtx_mul_vec(int n, const float* m, const float* v_in, float* v_out) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll 1
    for (int col = 0; col < n; ++col) {
        v_out[row] += m[row * n + col] * v_in[col];
    }
}
