// Cubic B-spline zoom on CUDA: the prefilter's two symmetric integer FIR passes and the
// table-driven separable interpolation, fused per output tile. Compiled by portcv.backends.cupy
// (--std=c++17 --fmad=false); launched by src/portcv/transform/_zoom_cuda.py; the portable
// version (src/portcv/transform/_zoom.py: _prefilter, _interpolate) is the reference and every
// step below is its integer arithmetic:
//   prefilter pass: acc = h0 v[i] + sum_k h_k (v[i-k] + v[i+k]) in int64 (reflect101 indices),
//                   out = (acc + round) >> shift (arithmetic shift: floor, as NumPy's >>);
//   interpolation:  row = sum_kx wx v[r][xi] (int64); with rounded weights (not EXACT) row is
//                   floor((row 2^shift + Sx/2) / Sx); acc = sum_ky wy row[yi]; out =
//                   clip(floor((acc + D/2) / D), 0, 255).
// Every sum is exact in int64 (the bounds are in _zoom.py: below 2^61 + 2^45), so the order of
// the terms does not matter and the bits equal NumPy's.
// Every product is a 32 x 32 -> 64-bit multiply-add (one IMAD.WIDE) where both factors fit in 32
// bits: the taps (< 2^25), the sums of two mirrored samples (uint8: < 2^10; the W pass' Q16
// rows: < 2^27) and the interpolation's x weights (<= 2^30) times int32 samples; a 64 x 64-bit
// multiply is several instructions on the GPU.

#include "common.cuh"

// c + a b with a 32 x 32 -> 64-bit product: one IMAD.WIDE. Written as (long long)a * b, NVCC
// kept 64 x 64-bit multiplies (several instructions each) in the unrolled tap loops.
__device__ __forceinline__ long long mad_wide(int a, int b, long long c) {
#ifdef __CUDA_ARCH__
    long long r;
    asm("mad.wide.s32 %0, %1, %2, %3;" : "=l"(r) : "r"(a), "r"(b), "l"(c));
    return r;
#else
    return c + (long long)a * b;  // host builds of this file (tests of the kernels without a GPU)
#endif
}

// Division by a constant without a hardware divide: Granlund and Montgomery's unsigned division
// by an invariant integer ("Division by invariant integers using multiplication", PLDI 1994,
// Figure 4.1): with l = ceil(log2 d) and m = floor(2^N (2^l - d) / d) + 1 (made on the host for
// N = 32 and N = 64), n / d = (t + ((n - t) >> s1)) >> s2 for t = mulhi(m, n), s1 = min(l, 1),
// s2 = max(l - 1, 0), exact for every n < 2^N (their Theorem 4.2).
struct Divisor {
    unsigned long long d, m;
    int s1, s2;
};

__device__ __forceinline__ unsigned long long udiv(unsigned long long n, const Divisor& v) {
    const unsigned long long t = __umul64hi(v.m, n);
    return (t + ((n - t) >> v.s1)) >> v.s2;
}

// floor(a / d) for a signed a (|a| <= 2^63, d <= 2^63): a < 0 gives -ceil(-a / d) = -((-a + d - 1) / d).
__device__ __forceinline__ long long floor_div(long long a, const Divisor& v) {
    if (a >= 0) return (long long)udiv((unsigned long long)a, v);
    return -(long long)udiv((0ull - (unsigned long long)a) + (v.d - 1), v);
}

__device__ __forceinline__ unsigned int udiv32(unsigned int n, unsigned int m, int s1, int s2) {
    const unsigned int t = __umulhi(m, n);
    return (t + ((n - t) >> s1)) >> s2;
}

// The prefilter: 13 taps beyond the centre (prefilter_taps(); the launcher checks), each
// thread computes PF_RUN consecutive outputs along the filter axis from PF_RUN + 2 PF_N samples
// held in registers, so it loads 34 samples for 8 outputs instead of 27 per output.
constexpr int PF_N = 13;
constexpr int PF_RUN = 8;
constexpr int PF_SPAN = PF_RUN + 2 * PF_N;

// a / d for 0 <= a and 1 <= d: 32-bit when a fits (a 64-bit division is a long software routine).
__device__ __forceinline__ long long index_div(long long a, int d) {
    return a <= 0xffffffffLL ? (long long)((unsigned int)a / (unsigned int)d) : a / d;
}

// sum_k h_k (v[j - k] + v[j + k]) around v[j], j = PF_N + the output's place in the run.
__device__ __forceinline__ long long prefilter_at(const int (&h)[PF_N + 1], const int (&v)[PF_SPAN], int j) {
    long long acc = mad_wide(h[0], v[j], 0);
#pragma unroll
    for (int k = 1; k <= PF_N; ++k) acc = mad_wide(h[k], v[j - k] + v[j + k], acc);
    return acc;
}

// v[i] = the sample at p0 - PF_N + i of an axis of n samples `stride` apart from `src`: a run's
// span with the reflect101 border; only spans within PF_N of an end remap their indices.
template <typename T>
__device__ __forceinline__ void load_span(const T* __restrict__ src, int stride, int p0, int n, int (&v)[PF_SPAN]) {
    if (p0 - PF_N >= 0 && p0 + PF_RUN + PF_N <= n) {
        const T* p = src + (long long)(p0 - PF_N) * stride;
#pragma unroll
        for (int i = 0; i < PF_SPAN; ++i, p += stride) v[i] = *p;
    } else {
#pragma unroll
        for (int i = 0; i < PF_SPAN; ++i) v[i] = src[(long long)remap(p0 - PF_N + i, n, REFLECT101) * stride];
    }
}

// W pass, uint8 -> Q16 int32 (>> 8): rows of W pixels with C interleaved channels (CH; 0: the
// runtime `channels`); one thread per (row, run of PF_RUN pixels, channel), channel fastest so
// neighbouring threads read neighbouring bytes.
template <int CH>
__global__ void portcv_spline_prefilter_rows(const unsigned char* __restrict__ in, const int* __restrict__ taps,
                                             long long rows, int W, int channels, int* __restrict__ out) {
    const int C = CH > 0 ? CH : channels;
    int h[PF_N + 1];
#pragma unroll
    for (int k = 0; k <= PF_N; ++k) h[k] = taps[k];
    const int runs = (W + PF_RUN - 1) / PF_RUN;
    const long long items = rows * runs * C;
    for (long long item = blockIdx.x * (long long)blockDim.x + threadIdx.x; item < items;
         item += (long long)gridDim.x * blockDim.x) {
        const long long rest = index_div(item, C);
        const int c = (int)(item - rest * C);
        const long long r = index_div(rest, runs);
        const int p0 = (int)(rest - r * runs) * PF_RUN;
        int v[PF_SPAN];
        load_span(in + r * W * C + c, C, p0, W, v);
        int* dst = out + r * W * C + c;
#pragma unroll
        for (int j = 0; j < PF_RUN; ++j) {
            if (p0 + j < W) dst[(p0 + j) * C] = (int)((prefilter_at(h, v, PF_N + j) + (1 << 7)) >> 8);
        }
    }
}

// H pass, Q16 -> Q16 (>> 24): planes of H rows of `wc` int32 samples; one thread per (plane,
// run of PF_RUN rows, sample), sample fastest (coalesced rows).
__global__ void portcv_spline_prefilter_columns(const int* __restrict__ in, const int* __restrict__ taps,
                                                long long planes, int H, int wc, int* __restrict__ out) {
    int h[PF_N + 1];
#pragma unroll
    for (int k = 0; k <= PF_N; ++k) h[k] = taps[k];
    const int runs = (H + PF_RUN - 1) / PF_RUN;
    const long long items = planes * runs * wc;
    for (long long item = blockIdx.x * (long long)blockDim.x + threadIdx.x; item < items;
         item += (long long)gridDim.x * blockDim.x) {
        const long long rest = index_div(item, wc);
        const int s = (int)(item - rest * wc);
        const long long b = index_div(rest, runs);
        const int y0 = (int)(rest - b * runs) * PF_RUN;
        int v[PF_SPAN];
        load_span(in + b * H * wc + s, wc, y0, H, v);
        int* dst = out + b * H * wc + (long long)y0 * wc + s;
#pragma unroll
        for (int j = 0; j < PF_RUN; ++j, dst += wc) {
            if (y0 + j < H) *dst = (int)((prefilter_at(h, v, PF_N + j) + (1 << 23)) >> 24);
        }
    }
}

// The interpolation, fused: a block makes a tile of ZOOM_TW output samples (columns x channels)
// by `tile_rows` output rows of one plane. First its threads compute the x pass of the source
// rows the tile's y taps read (the band [lo, lo + n), from the host's table `bands`) into shared
// memory, each input row's horizontal sum once per tile column; then each output sample combines
// TAPS of those sums. The host picks tile_rows so every band fits the shared memory it gives.
// A thread makes ZOOM_CPT columns ZOOM_TX apart, so it loads each output row's y taps once for
// all of them. (Two launches through a global int64 buffer of every input row's x pass was the
// first version: 12 us per QCIF frame x7, and a buffer of H x dw samples that grows with the
// input's rows even where a large shrink reads few of them.)
// Rounding: the final floor((acc + D/2) / D) with
// D = 2^e q (q odd) is clipped to [0, 255] first: n = acc + D/2 < 0 gives 0, n >= 256 D gives 255,
// and otherwise floor(n / D) = floor((n >> e) / q) with n >> e < 256 q, a 32-bit division when
// 256 q <= 2^32 (`narrow`; Table 4's factors) and the 64-bit one otherwise.
constexpr int ZOOM_TX = 64;
constexpr int ZOOM_CPT = 2;
constexpr int ZOOM_TW = ZOOM_TX * ZOOM_CPT;
constexpr int ZOOM_TY = 4;

template <typename T, int TAPS, bool EXACT>
__global__ void __launch_bounds__(ZOOM_TX * ZOOM_TY)
portcv_spline_zoom_tiles(const T* __restrict__ in, long long planes, int H, int W, int C, int dh, int dw,
                         const int* __restrict__ xi, const int* __restrict__ xw, const int* __restrict__ yi,
                         const int* __restrict__ yw, const int* __restrict__ bands, int tile_rows, int tiles_y,
                         unsigned long long sx_d, unsigned long long sx_m, int sx_s1, int sx_s2, long long half_sx,
                         int shift, long long half_div, long long top, int e, int narrow, unsigned long long q_d,
                         unsigned long long q_m, int q_s1, int q_s2, unsigned char* __restrict__ out) {
    extern __shared__ long long band[];  // [n][ZOOM_TW]: the x pass of the band's rows
    const Divisor sx{sx_d, sx_m, sx_s1, sx_s2}, q64{q_d, q_m, q_s1, q_s2};
    const unsigned int q_m32 = (unsigned int)q_m;  // the 32-bit multiplier when narrow
    const int row_samples = dw * C;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int s0 = blockIdx.x * ZOOM_TW + tx;
    int cx[ZOOM_CPT][TAPS], wx[ZOOM_CPT][TAPS];
#pragma unroll
    for (int j = 0; j < ZOOM_CPT; ++j) {
        const int s = s0 + j * ZOOM_TX;
        if (s < row_samples) {
            const int ox = s / C, c = s - ox * C;
#pragma unroll
            for (int k = 0; k < TAPS; ++k) {
                cx[j][k] = xi[ox * TAPS + k] * C + c;
                wx[j][k] = xw[ox * TAPS + k];
            }
        }
    }
    for (long long job = blockIdx.y; job < planes * tiles_y; job += gridDim.y) {  // uniform per block
        const long long b = job / tiles_y;
        const int tile = (int)(job - b * tiles_y);
        const int lo = bands[2 * tile], n = bands[2 * tile + 1];
        const int oy0 = tile * tile_rows, oy1 = min(oy0 + tile_rows, dh);
        const T* plane = in + b * H * W * C;
        __syncthreads();  // the previous tile's band has been read
        for (int r = ty; r < n; r += ZOOM_TY) {
            const T* src = plane + (long long)(lo + r) * W * C;
#pragma unroll
            for (int j = 0; j < ZOOM_CPT; ++j) {
                if (s0 + j * ZOOM_TX < row_samples) {
                    long long row = 0;
#pragma unroll
                    for (int k = 0; k < TAPS; ++k) row = mad_wide(wx[j][k], (int)src[cx[j][k]], row);
                    if constexpr (!EXACT) row = floor_div(row * (1LL << shift) + half_sx, sx);
                    band[r * ZOOM_TW + tx + j * ZOOM_TX] = row;
                }
            }
        }
        __syncthreads();
        unsigned char* dst = out + b * dh * (long long)row_samples + s0;
        for (int oy = oy0 + ty; oy < oy1; oy += ZOOM_TY) {
            int at[TAPS], wy[TAPS];
#pragma unroll
            for (int k = 0; k < TAPS; ++k) {
                at[k] = (yi[oy * TAPS + k] - lo) * ZOOM_TW + tx;
                wy[k] = yw[oy * TAPS + k];
            }
#pragma unroll
            for (int j = 0; j < ZOOM_CPT; ++j) {
                if (s0 + j * ZOOM_TX < row_samples) {
                    long long acc = half_div;
#pragma unroll
                    for (int k = 0; k < TAPS; ++k) acc += (long long)wy[k] * band[at[k] + j * ZOOM_TX];
                    int v;
                    if (acc < 0) {
                        v = 0;
                    } else if (acc >= top) {
                        v = 255;
                    } else if (narrow) {
                        v = (int)udiv32((unsigned int)(acc >> e), q_m32, q_s1, q_s2);
                    } else {
                        v = (int)udiv((unsigned long long)(acc >> e), q64);
                    }
                    dst[(long long)oy * row_samples + j * ZOOM_TX] = (unsigned char)v;
                }
            }
        }
    }
}
