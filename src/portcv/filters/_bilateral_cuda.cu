// Joint bilateral filter on CUDA (OpenCV's jointBilateralFilter and the depth-colour bilateral
// filter of portcv.depth.dcbf), one thread per output pixel. Compiled by portcv.backends.cupy
// (--std=c++17 --fmad=false); launched by src/portcv/filters/_bilateral_cuda.py. The portable
// version (src/portcv/filters/_bilateral.py: _bilateral_sums) is the reference, and every step
// below is its integer arithmetic, per window offset k with spatial weight Ws[k]:
//   delta = sum_c |g_n[c] - g[c]| (L1) or sum_c (g_n[c] - g[c])^2 (L2)   (int32)
//   w = (table[delta] Ws[k] + 2^14) >> 15   (table[delta] Ws[k] <= 2^30: int32)
//   w = 0 where the neighbour's value is the hole (HOLE)
//   N += w v (int32, or int64 when WIDE), W += w   (exact sums: the order does not matter)
// then out = (N + W / 2) / W for W > 0 (non-negative: C's division is the floor); W = 0 gives the
// hole (HOLE) or 0; KEEP keeps every value that is not the hole. Neighbours outside the image
// follow `border` per axis (common.cuh's remap, the rule of pad_axis); a constant border reads
// guide 0 and value `fill`.
// Layout: frames of H x W pixels, CG interleaved guide channels, CV value channels.

#include "common.cuh"

template <bool WIDE> struct Accumulator { using type = int; };
template <> struct Accumulator<true> { using type = long long; };

template <typename V, int CG, int CV, bool L2, bool WIDE, bool HOLE, bool KEEP>
__global__ void portcv_joint_bilateral(const unsigned char* __restrict__ guide, const V* __restrict__ values,
                                       const int* __restrict__ table, const int* __restrict__ spatial,
                                       const int2* __restrict__ offsets, int taps, int frames, int H, int W,
                                       int border, int fill, V* __restrict__ out) {
    using Acc = typename Accumulator<WIDE>::type;
    const long long x64 = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // past 2^31 in the last block
    if (x64 >= W) return;
    const int x = (int)x64;
    for (int r = blockIdx.y; r < frames * H; r += gridDim.y) {
        const int f = r / H, y = r - f * H;
        const unsigned char* gf = guide + (long long)f * H * W * CG;
        const V* vf = values + (long long)f * H * W * CV;
        const unsigned char* gc = gf + ((long long)y * W + x) * CG;
        int g0[CG];
#pragma unroll
        for (int c = 0; c < CG; ++c) g0[c] = gc[c];
        Acc num[CV];
#pragma unroll
        for (int c = 0; c < CV; ++c) num[c] = 0;
        int den = 0;
        for (int k = 0; k < taps; ++k) {
            const int2 o = offsets[k];  // (dy, dx) as .x, .y
            const int ny = remap(y + o.x, H, border), nx = remap(x + o.y, W, border);
            const bool inside = ny >= 0 && nx >= 0;
            const long long at = (long long)ny * W + nx;
            int delta = 0;
#pragma unroll
            for (int c = 0; c < CG; ++c) {
                const int d = (inside ? (int)gf[at * CG + c] : 0) - g0[c];
                delta += L2 ? d * d : abs(d);
            }
            int w = (table[delta] * spatial[k] + (1 << 14)) >> 15;
            V v[CV];
#pragma unroll
            for (int c = 0; c < CV; ++c) v[c] = inside ? vf[at * CV + c] : (V)fill;
            if constexpr (HOLE) {
                if ((int)v[0] == fill) w = 0;  // HOLE: one value channel, fill = the hole
            }
#pragma unroll
            for (int c = 0; c < CV; ++c) num[c] += (Acc)w * (Acc)v[c];
            den += w;
        }
        V* o = out + ((long long)f * H * W + (long long)y * W + x) * CV;
        const V* self = vf + ((long long)y * W + x) * CV;
#pragma unroll
        for (int c = 0; c < CV; ++c) {
            Acc result;
            if (den > 0) {
                result = (num[c] + (Acc)(den / 2)) / (Acc)den;
            } else {
                result = HOLE ? (Acc)fill : (Acc)0;
            }
            if constexpr (KEEP) {
                if ((int)self[c] != fill) result = (Acc)self[c];
            }
            o[c] = (V)result;
        }
    }
}
