// Resizing uint8 images by gathering through host-built per-axis tables; OpenCV's arithmetic.
// Compiled by portcv.backends.cupy with --std=c++17 --fmad=false; launched by src/portcv/transform/_resize.py.
//
// Each axis has a table of int4 {i0, i1, w0, w1}: the two source indices (already clamped) and
// their integer weights, computed on the host in float64/float32 exactly as OpenCV does. The
// pixel work is integer only, so every backend gives the same bits:
//   NEAREST  out = S[y.i0][x.i0]
//   LINEAR   (cv::INTER_LINEAR, Q11): H_k = S[y_k][x.i0]*x.w0 + S[y_k][x.i1]*x.w1 (int32);
//            out = (((y.w0*(H_0 >> 4)) >> 16) + ((y.w1*(H_1 >> 4)) >> 16) + 2) >> 2
//   EXACT    (cv::INTER_LINEAR_EXACT, Q8): out = (y.w0*H_0 + y.w1*H_1 + 2^15) >> 16
//   AREA2    (both modes at exactly 2x down): s = sum of the 1, 2 or 4 covered pixels (weights
//            0/1), n = their count; n = 4: (s + 2) >> 2 (ROUND_UP4) or round-half-even(s / 4);
//            n = 2: round-half-even(s / 2); n = 1: s.
// Layout: `planes` images of H x W pixels of C interleaved channels in, dh x dw out. Each thread
// makes 4 consecutive output bytes of one row.

#include "common.cuh"

enum ResizeArith { RESIZE_NEAREST = 0, RESIZE_LINEAR = 1, RESIZE_EXACT = 2, RESIZE_AREA2 = 3 };

#define RESIZE_BLOCK_X 64
#define RESIZE_BLOCK_Y 4

template <int A, int C, bool ROUND_UP4>
__device__ __forceinline__ unsigned char resize_one(const unsigned char* __restrict__ in, int WC, int4 tx, int4 ty,
                                                    int c) {
    const unsigned char* r0 = in + (size_t)ty.x * WC + c;
    if constexpr (A == RESIZE_NEAREST) {
        return __ldg(r0 + tx.x * C);
    } else {
        const unsigned char* r1 = in + (size_t)ty.y * WC + c;
        const int h0 = (int)__ldg(r0 + tx.x * C) * tx.z + (int)__ldg(r0 + tx.y * C) * tx.w;
        const int h1 = (int)__ldg(r1 + tx.x * C) * tx.z + (int)__ldg(r1 + tx.y * C) * tx.w;
        if constexpr (A == RESIZE_LINEAR) {
            // |H| <= 255 * 2048, so H >> 4 fits int16 and each product fits int32.
            return (unsigned char)((((ty.z * (h0 >> 4)) >> 16) + ((ty.w * (h1 >> 4)) >> 16) + 2) >> 2);
        } else if constexpr (A == RESIZE_EXACT) {
            // <= 256 * 65280 + 32768 < 2^31
            return (unsigned char)((ty.z * h0 + ty.w * h1 + 32768) >> 16);
        } else {
            const int s = ty.z * h0 + ty.w * h1;
            const int n = (tx.z + tx.w) * (ty.z + ty.w);
            if (n == 4) return (unsigned char)(ROUND_UP4 ? (s + 2) >> 2 : (s + 1 + ((s >> 2) & 1)) >> 2);
            if (n == 2) return (unsigned char)((s + ((s >> 1) & 1)) >> 1);
            return (unsigned char)s;
        }
    }
}

// grid (ceil(dw*C / 256), ceil(dh / 4), planes), block (64, 4).
template <int A, int C, bool ROUND_UP4>
__global__ void __launch_bounds__(RESIZE_BLOCK_X * RESIZE_BLOCK_Y)
portcv_resize(const unsigned char* __restrict__ src, unsigned char* __restrict__ dst, int H, int W, int dh, int dw,
              const int4* __restrict__ xtab, const int4* __restrict__ ytab) {
    const int dy = blockIdx.y * RESIZE_BLOCK_Y + threadIdx.y;
    const int DWC = dw * C, WC = W * C;
    const int e0 = (blockIdx.x * RESIZE_BLOCK_X + threadIdx.x) * 4;
    if (dy >= dh || e0 >= DWC) return;
    const size_t p = blockIdx.z;
    const unsigned char* in = src + p * H * (size_t)WC;
    unsigned char* out = dst + (p * dh + dy) * (size_t)DWC;
    const int4 ty = __ldg(ytab + dy);
    unsigned char o[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const int e = e0 + j;
        if (e < DWC) {
            const int dx = e / C, c = e - dx * C;
            o[j] = resize_one<A, C, ROUND_UP4>(in, WC, __ldg(xtab + dx), ty, c);
        } else {
            o[j] = 0;
        }
    }
    if ((DWC & 3) == 0 && ((reinterpret_cast<size_t>(dst) & 3) == 0)) {
        *reinterpret_cast<uchar4*>(out + e0) = make_uchar4(o[0], o[1], o[2], o[3]);
    } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
            if (e0 + j < DWC) out[e0 + j] = o[j];
    }
}
