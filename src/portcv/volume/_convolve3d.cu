// Direct 3-D correlation of a padded integer volume: the 'valid' part of
//   out[f][t][y][x] = sum_{l,n,m} taps[f][l][n][m] * src[t + l][y + n][x + m]
// (eq. 1 of Lin et al.'s video-parallelization article with the kernel already flipped and the
// borders already added by the caller). Compiled by portcv.backends.cupy with --fmad=false.
//
// The article's "streaming" idea, moved from shared memory to registers: a thread owns
// FRAMES output frames x XS consecutive pixels of one row (16 sums in registers) and walks
// the FRAMES + KT - 1 input frames they need, row tap by row tap. Each input row window
// (XS + KW - 1 samples, read once through L1) feeds every output frame that uses it, with the
// taps of that frame's time tap: up to FRAMES * XS * KW multiply-adds per window. The taps of
// one kernel sit in shared memory and are read warp-uniformly (a broadcast).
//
// Exactness: AccT = float only when every partial sum is an integer below 2^24 in magnitude
// (checked on the host: exact_in_float32), so each __fmaf_rn is exact; otherwise AccT = int and
// the host checked max|src| * sum|taps| < 2^31. Either way the int32 result is the exact sum.

#include "common.cuh"

constexpr int C3_XS = 4;      // output pixels per thread (consecutive x)
constexpr int C3_FRAMES = 4;  // output frames per thread
constexpr int C3_BX = 32, C3_BY = 8;

__device__ __forceinline__ float c3_mad(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ __forceinline__ int c3_mad(int a, int b, int c) { return a * b + c; }

template <typename InT, typename AccT, int KW>
__global__ void __launch_bounds__(C3_BX * C3_BY)
portcv_convolve3d(const InT* __restrict__ src, int* __restrict__ dst, int Tp, int Hp, int Wp, int T_out,
                  int H, int W, int KT, int KH, int F, int t_blocks, const int* __restrict__ taps) {
    extern __shared__ unsigned char c3_smem[];
    AccT* s_taps = reinterpret_cast<AccT*>(c3_smem);
    const int f = blockIdx.z % F;
    const int rest = blockIdx.z / F;
    const int tb = rest % t_blocks;
    const int plane = rest / t_blocks;
    const int n_taps = KT * KH * KW;
    const int tid = threadIdx.y * C3_BX + threadIdx.x;
    for (int i = tid; i < n_taps; i += C3_BX * C3_BY) s_taps[i] = static_cast<AccT>(taps[(size_t)f * n_taps + i]);
    __syncthreads();

    const int x0 = (blockIdx.x * C3_BX + threadIdx.x) * C3_XS;
    const int y = blockIdx.y * C3_BY + threadIdx.y;
    if (x0 >= W || y >= H) return;
    const int t0 = tb * C3_FRAMES;
    const int frames = min(C3_FRAMES, T_out - t0);
    const InT* base = src + (size_t)plane * Tp * Hp * Wp;

    AccT acc[C3_FRAMES][C3_XS];
#pragma unroll
    for (int j = 0; j < C3_FRAMES; ++j)
#pragma unroll
        for (int r = 0; r < C3_XS; ++r) acc[j][r] = 0;

    constexpr int WIN = C3_XS + KW - 1;
    const int in_frames = frames + KT - 1;
    for (int tt = 0; tt < in_frames; ++tt) {
        const InT* frame = base + (size_t)(t0 + tt) * Hp * Wp;
        for (int n = 0; n < KH; ++n) {
            const InT* row = frame + (size_t)(y + n) * Wp + x0;
            AccT win[WIN];
#pragma unroll
            for (int i = 0; i < WIN; ++i) win[i] = (x0 + i < Wp) ? static_cast<AccT>(__ldg(row + i)) : AccT(0);
#pragma unroll
            for (int j = 0; j < C3_FRAMES; ++j) {
                const int l = tt - j;  // the time tap joining input frame tt to output frame j
                if (l < 0 || l >= KT || j >= frames) continue;  // uniform across the block
                const AccT* k = s_taps + (l * KH + n) * KW;
#pragma unroll
                for (int i = 0; i < KW; ++i) {
                    const AccT kv = k[i];
#pragma unroll
                    for (int r = 0; r < C3_XS; ++r) acc[j][r] = c3_mad(kv, win[r + i], acc[j][r]);
                }
            }
        }
    }

    int* out = dst + (((size_t)plane * F + f) * T_out + t0) * H * W + (size_t)y * W + x0;
#pragma unroll
    for (int j = 0; j < C3_FRAMES; ++j) {
        if (j >= frames) break;
#pragma unroll
        for (int r = 0; r < C3_XS; ++r)
            if (x0 + r < W) out[(size_t)j * H * W + r] = static_cast<int>(acc[j][r]);
    }
}
