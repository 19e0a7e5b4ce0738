// Matrix multiplication of the lslag case study, written for kerneltime in OpenCL C:
// one work-item per element of the n x n product (row-major).
__kernel void matmul(__global const float* a, __global const float* b, __global float* c, int n) {
    int col = get_global_id(0);
    int row = get_global_id(1);
    if (row >= n || col >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < n; ++k) acc += a[row * n + k] * b[k * n + col];
    c[row * n + col] = acc;
}
