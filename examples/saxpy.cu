// y = a * x + y over n floats, one element per thread: the smallest memory-bound kernel.
// Compiled to saxpy.ptx with: nvcc -ptx -arch=sm_75 saxpy.cu -o saxpy.ptx
extern "C" __global__ void saxpy(int n, float a, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
