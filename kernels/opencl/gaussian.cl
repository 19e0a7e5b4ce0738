// Gaussian filter of the lslag case study, written for kerneltime in OpenCL C: each work-item
// convolves one pixel of a width x height image with a (2 radius + 1)^2 weight table, clamping
// coordinates at the borders.
static int clamp_index(int v, int hi) { return v < 0 ? 0 : (v > hi ? hi : v); }

__kernel void gaussian_filter(__global const float* img, __global const float* weights,
                              __global float* out, int width, int height, int radius) {
    int x = get_global_id(0);
    int y = get_global_id(1);
    if (x >= width || y >= height) return;
    int side = 2 * radius + 1;
    float acc = 0.0f;
    for (int dy = -radius; dy <= radius; ++dy) {
        int yy = clamp_index(y + dy, height - 1);
        for (int dx = -radius; dx <= radius; ++dx) {
            int xx = clamp_index(x + dx, width - 1);
            acc += weights[(dy + radius) * side + dx + radius] * img[yy * width + xx];
        }
    }
    out[y * width + x] = acc;
}
