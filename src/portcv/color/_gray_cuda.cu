// Colour conversions. Compiled by portcv.backends.cupy with --std=c++17 --fmad=false.
//
// rgb_to_gray: 16 pixels per thread: three 16-byte loads of interleaved RGB, one 16-byte store
// of gray. Byte indices into the register words are compile-time constants after unrolling, so
// the words stay in registers. The array is processed as n_vec vectors of 16 pixels from a
// 16-byte aligned base; the last n_pixels % 16 pixels go through a scalar path.

template <int Method>
__device__ __forceinline__ unsigned int gray_of(unsigned int r, unsigned int g, unsigned int b) {
    if constexpr (Method == 0) {
        // OpenCV's RGB2GRAY: 15-bit weights summing to 32768, round half up.
        return (9798u * r + 19235u * g + 3735u * b + 16384u) >> 15;
    } else {
        // The Webcam Streaming & Filters report's average method, truncating like its C `sum / 3`.
        return (r + g + b) / 3u;
    }
}

template <int Method>
__global__ void portcv_rgb_to_gray(const unsigned char* __restrict__ rgb,
                                   unsigned char* __restrict__ gray,
                                   long long n_pixels) {
    const long long n_vec = n_pixels / 16;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const uint4* in = reinterpret_cast<const uint4*>(rgb);
    uint4* out = reinterpret_cast<uint4*>(gray);
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < n_vec; v += stride) {
        uint4 a = in[3 * v], b = in[3 * v + 1], c = in[3 * v + 2];
        const unsigned int w[12] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, c.x, c.y, c.z, c.w};
        unsigned int o[4] = {0u, 0u, 0u, 0u};
#pragma unroll
        for (int p = 0; p < 16; ++p) {
            const unsigned int r = (w[(3 * p) >> 2] >> (((3 * p) & 3) * 8)) & 255u;
            const unsigned int g = (w[(3 * p + 1) >> 2] >> (((3 * p + 1) & 3) * 8)) & 255u;
            const unsigned int bl = (w[(3 * p + 2) >> 2] >> (((3 * p + 2) & 3) * 8)) & 255u;
            o[p >> 2] |= gray_of<Method>(r, g, bl) << ((p & 3) * 8);
        }
        out[v] = make_uint4(o[0], o[1], o[2], o[3]);
    }
    // Tail: fewer than 16 pixels, one per thread of the first block.
    const long long tail = n_vec * 16 + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (blockIdx.x == 0 && tail < n_pixels) {
        gray[tail] = (unsigned char)gray_of<Method>(rgb[3 * tail], rgb[3 * tail + 1], rgb[3 * tail + 2]);
    }
}
