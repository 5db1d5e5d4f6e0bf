// YUV 4:2:0 (NV12/NV21, I420/YV12) to RGB/BGR on CUDA, one thread per 2 x 2 pixel block. Compiled
// by portcv.backends.cupy (--std=c++17 --fmad=false); launched by src/portcv/color/_nv12_cuda.py.
// The portable version (src/portcv/color/_nv12.py: _yuv420_to_rgb_kernel) is the reference and
// this is its arithmetic, OpenCV's Q20 BT.601 conversion (modules/imgproc/src/color_yuv.simd.hpp):
//   y = max(0, Y - 16) * CY;  R = sat((y + 2^19 + CVR (V - 128)) >> 20), G and B likewise,
// the chroma terms once per block, shared by its four pixels. Every sum is below 2^30 in
// magnitude, so int32 holds it; >> of a negative int is arithmetic (floor), as in the portable
// version and in OpenCV.
//
// Layout 0: NV12, H/2 rows of W bytes of interleaved chroma pairs after the luma; Layout 1: I420,
// the H/2 x W/2 first chroma plane and then the second, packed, after the luma. VFirst: the
// pair or plane order is V, U (NV21, YV12). Bgr: write blue first.

#define PORTCV_CY 1220542
#define PORTCV_CUB 2116026
#define PORTCV_CUG (-409993)
#define PORTCV_CVG (-852492)
#define PORTCV_CVR 1673527
#define PORTCV_YUV_SHIFT 20

__device__ __forceinline__ unsigned char portcv_saturate_u8(int x) {
    return (unsigned char)min(max(x, 0), 255);
}

template <int Layout, int VFirst, int Bgr>
__global__ void portcv_yuv420_to_rgb(const unsigned char* __restrict__ yuv,
                                     unsigned char* __restrict__ rgb,
                                     long long n_blocks, int height, int width) {
    const int half_h = height / 2, half_w = width / 2;
    const long long blocks_per_frame = (long long)half_h * half_w;
    const long long plane = (long long)height * width;
    const long long frame_bytes = plane + 2 * blocks_per_frame;  // 3/2 H W
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n_blocks; t += stride) {
        const long long f = t / blocks_per_frame;
        const long long k = t - f * blocks_per_frame;  // j * half_w + i: the block's chroma index
        const int j = (int)(k / half_w), i = (int)(k - (long long)j * half_w);
        const unsigned char* luma = yuv + f * frame_bytes;
        const unsigned char* chroma = luma + plane;
        int first, second;
        if (Layout == 0) {
            const long long at = (long long)j * width + 2 * i;
            first = chroma[at];
            second = chroma[at + 1];
        } else {
            first = chroma[k];
            second = chroma[blocks_per_frame + k];
        }
        const int uu = (VFirst ? second : first) - 128;
        const int vv = (VFirst ? first : second) - 128;
        const int round = 1 << (PORTCV_YUV_SHIFT - 1);
        const int ruv = round + PORTCV_CVR * vv;
        const int guv = round + PORTCV_CVG * vv + PORTCV_CUG * uu;
        const int buv = round + PORTCV_CUB * uu;
        unsigned char* out = rgb + f * plane * 3;
#pragma unroll
        for (int dy = 0; dy < 2; ++dy) {
#pragma unroll
            for (int dx = 0; dx < 2; ++dx) {
                const long long p = (long long)(2 * j + dy) * width + (2 * i + dx);
                const int y = max((int)luma[p] - 16, 0) * PORTCV_CY;
                const unsigned char r = portcv_saturate_u8((y + ruv) >> PORTCV_YUV_SHIFT);
                const unsigned char g = portcv_saturate_u8((y + guv) >> PORTCV_YUV_SHIFT);
                const unsigned char b = portcv_saturate_u8((y + buv) >> PORTCV_YUV_SHIFT);
                out[3 * p] = Bgr ? b : r;
                out[3 * p + 1] = g;
                out[3 * p + 2] = Bgr ? r : b;
            }
        }
    }
}
