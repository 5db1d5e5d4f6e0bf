// Cubic B-spline zoom on CUDA: the prefilter's two symmetric integer FIR passes and the
// table-driven separable interpolation (an x pass and a y pass), one thread per output sample. Compiled by
// portcv.backends.cupy (--std=c++17 --fmad=false); launched by src/portcv/transform/_zoom_cuda.py;
// the portable version (src/portcv/transform/_zoom.py: _prefilter, _interpolate) is the reference
// and every step below is its integer arithmetic:
//   prefilter pass: acc = h0 v[i] + sum_k h_k (v[i-k] + v[i+k]) in int64 (reflect101 indices),
//                   out = (acc + round) >> shift (arithmetic shift: floor, as NumPy's >>);
//   interpolation:  row = sum_kx wx v[r][xi] (int64); with rounded weights (not EXACT) row is
//                   floor((row 2^shift + Sx/2) / Sx); acc = sum_ky wy row[yi]; out =
//                   clip(floor((acc + D/2) / D), 0, 255).
// Every sum is exact in int64 (the bounds are in _zoom.py: below 2^61 + 2^45), so the order of
// the terms does not matter and the bits equal NumPy's.
// Layout: a prefilter pass sees the array as (outer, len, inner) and filters along len; the
// interpolation sees (planes, H, W, C) in, (planes, H, dw, C) between and (planes, dh, dw, C)
// out (C = 1 without channels). The weights are int32 (each at most 2^30), so an x tap is one
// 32 x 32 -> 64-bit multiply-add.
// Grids: blockIdx.y (striding) walks the outer slabs / output rows, x the samples within one, so
// the index arithmetic is 32-bit.

#include "common.cuh"

// floor(a / d) for a constant d >= 1 without a 64-bit division (a software routine on the GPU):
// Granlund and Montgomery's unsigned division by an invariant integer ("Division by invariant
// integers using multiplication", PLDI 1994, Figure 4.1): with l = ceil(log2 d) and
// m = floor(2^64 (2^l - d) / d) + 1 (made on the host), n / d = (t + ((n - t) >> s1)) >> s2 for
// t = mulhi(m, n), s1 = min(l, 1), s2 = max(l - 1, 0), exact for every n < 2^64 (their
// Theorem 4.2). Signed a: a >= 0 divides directly; a < 0 gives -ceil(-a / d) = -((-a + d - 1) / d),
// with -a + d - 1 < 2^64 for |a| <= 2^63 and d <= 2^63.
struct Divisor {
    unsigned long long d, m;
    int s1, s2;
};

__device__ __forceinline__ unsigned long long udiv(unsigned long long n, const Divisor& v) {
    const unsigned long long t = __umul64hi(v.m, n);
    return (t + ((n - t) >> v.s1)) >> v.s2;
}

__device__ __forceinline__ long long floor_div(long long a, const Divisor& v) {
    if (a >= 0) return (long long)udiv((unsigned long long)a, v);
    return -(long long)udiv((0ull - (unsigned long long)a) + (v.d - 1), v);
}

template <typename T>
__global__ void portcv_spline_prefilter_pass(const T* __restrict__ in, const long long* __restrict__ taps, int n,
                                             int outer, int len, int inner, long long round, int shift,
                                             int* __restrict__ out) {
    const int slab = len * inner;
    const long long s64 = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // past 2^31 in the last block
    if (s64 >= slab) return;
    const int s = (int)s64;
    const int i = s / inner, c = s - i * inner;
    for (int o = blockIdx.y; o < outer; o += gridDim.y) {
        const T* src = in + (long long)o * slab + c;
        long long acc = taps[0] * (long long)src[i * inner];
        for (int k = 1; k <= n; ++k) {
            const long long lo = (long long)src[remap(i - k, len, REFLECT101) * inner];
            const long long hi = (long long)src[remap(i + k, len, REFLECT101) * inner];
            acc += taps[k] * (lo + hi);
        }
        out[(long long)o * slab + s] = (int)((acc + round) >> shift);
    }
}

// The interpolation in two passes through an int64 buffer (planes, H, dw, C): the x pass computes
// each input row's horizontal sum once per output column (rounded back to Q16 when not EXACT,
// as the portable version's first pass), the y pass combines TAPS of those rows per output
// sample. One pass doing both recomputed each row sum for every output row that reads it (TAPS^2
// multiply-adds and loads per sample instead of TAPS + TAPS H / dh); the sums are the same exact
// int64 values either way.
template <typename T, int TAPS, bool EXACT>
__global__ void portcv_spline_zoom_rows(const T* __restrict__ in, int rows, int W, int C, int dw,
                                        const int* __restrict__ xi, const int* __restrict__ xw,
                                        unsigned long long sx_d, unsigned long long sx_m, int sx_s1, int sx_s2,
                                        long long half_sx, int shift, long long* __restrict__ tmp) {
    const Divisor sx{sx_d, sx_m, sx_s1, sx_s2};
    const int row_samples = dw * C;
    const long long s64 = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // past 2^31 in the last block
    if (s64 >= row_samples) return;
    const int s = (int)s64;
    const int ox = s / C, c = s - ox * C;
    int cx[TAPS], wx[TAPS];
#pragma unroll
    for (int k = 0; k < TAPS; ++k) {
        cx[k] = xi[ox * TAPS + k] * C + c;
        wx[k] = xw[ox * TAPS + k];
    }
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {
        const T* src = in + (long long)r * W * C;
        long long row = 0;
#pragma unroll
        for (int k = 0; k < TAPS; ++k) row += (long long)wx[k] * (long long)src[cx[k]];  // 32 x 32 -> 64
        if constexpr (!EXACT) row = floor_div(row * (1LL << shift) + half_sx, sx);
        tmp[(long long)r * row_samples + s] = row;
    }
}

template <int TAPS>
__global__ void portcv_spline_zoom_columns(const long long* __restrict__ tmp, int planes, int H, int dh,
                                           int row_samples, const int* __restrict__ yi,
                                           const int* __restrict__ yw, unsigned long long div_d,
                                           unsigned long long div_m, int div_s1, int div_s2, long long half_div,
                                           unsigned char* __restrict__ out) {
    const Divisor div{div_d, div_m, div_s1, div_s2};
    const long long s64 = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (s64 >= row_samples) return;
    const int s = (int)s64;
    for (int r = blockIdx.y; r < planes * dh; r += gridDim.y) {
        const int b = r / dh, oy = r - b * dh;
        const long long* plane = tmp + (long long)b * H * row_samples + s;
        long long acc = 0;
#pragma unroll
        for (int k = 0; k < TAPS; ++k) acc += (long long)yw[oy * TAPS + k] * plane[(long long)yi[oy * TAPS + k] * row_samples];
        acc = floor_div(acc + half_div, div);
        out[(long long)r * row_samples + s] = (unsigned char)(acc < 0 ? 0 : acc > 255 ? 255 : acc);
    }
}
