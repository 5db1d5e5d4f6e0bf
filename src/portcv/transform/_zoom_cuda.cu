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
    long long acc = (long long)h[0] * v[j];
#pragma unroll
    for (int k = 1; k <= PF_N; ++k) acc += (long long)h[k] * (v[j - k] + v[j + k]);
    return acc;
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
        const unsigned char* src = in + r * W * C + c;
        int v[PF_SPAN];
        if (p0 - PF_N >= 0 && p0 + PF_RUN + PF_N <= W) {  // interior: no mirrored index
#pragma unroll
            for (int i = 0; i < PF_SPAN; ++i) v[i] = src[(p0 - PF_N + i) * C];
        } else {
#pragma unroll
            for (int i = 0; i < PF_SPAN; ++i) v[i] = src[remap(p0 - PF_N + i, W, REFLECT101) * C];
        }
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
        const int* src = in + b * H * wc + s;
        int v[PF_SPAN];
        if (y0 - PF_N >= 0 && y0 + PF_RUN + PF_N <= H) {
#pragma unroll
            for (int i = 0; i < PF_SPAN; ++i) v[i] = src[(long long)(y0 - PF_N + i) * wc];
        } else {
#pragma unroll
            for (int i = 0; i < PF_SPAN; ++i) v[i] = src[(long long)remap(y0 - PF_N + i, H, REFLECT101) * wc];
        }
        int* dst = out + b * H * wc + s;
#pragma unroll
        for (int j = 0; j < PF_RUN; ++j) {
            if (y0 + j < H) dst[(long long)(y0 + j) * wc] = (int)((prefilter_at(h, v, PF_N + j) + (1 << 23)) >> 24);
        }
    }
}

// The interpolation, fused: a block makes a tile of ZOOM_TW output samples (columns x channels)
// by `tile_rows` output rows of one plane. First its threads compute the x pass of the source
// rows the tile's y taps read (the band [lo, lo + n), from the host's table `bands`) into shared
// memory, each input row's horizontal sum once per tile column; then each output sample combines
// TAPS of those sums. The host picks tile_rows so every band fits the shared memory it gives.
// (Two launches through a global int64 buffer of every input row's x pass was the first
// version: 12 us per QCIF frame x7, and a buffer of H x dw samples that grows with the input's
// rows even where a large shrink reads few of them.)
constexpr int ZOOM_TW = 64;
constexpr int ZOOM_TY = 4;

template <typename T, int TAPS, bool EXACT>
__global__ void __launch_bounds__(ZOOM_TW * ZOOM_TY)
portcv_spline_zoom_tiles(const T* __restrict__ in, long long planes, int H, int W, int C, int dh, int dw,
                         const int* __restrict__ xi, const int* __restrict__ xw, const int* __restrict__ yi,
                         const int* __restrict__ yw, const int* __restrict__ bands, int tile_rows, int tiles_y,
                         unsigned long long sx_d, unsigned long long sx_m, int sx_s1, int sx_s2, long long half_sx,
                         int shift, unsigned long long div_d, unsigned long long div_m, int div_s1, int div_s2,
                         long long half_div, unsigned char* __restrict__ out) {
    extern __shared__ long long band[];  // [n][ZOOM_TW]: the x pass of the band's rows
    const Divisor sx{sx_d, sx_m, sx_s1, sx_s2}, div{div_d, div_m, div_s1, div_s2};
    const int row_samples = dw * C;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int s = blockIdx.x * ZOOM_TW + tx;
    const bool live = s < row_samples;
    int cx[TAPS], wx[TAPS];
    if (live) {
        const int ox = s / C, c = s - ox * C;
#pragma unroll
        for (int k = 0; k < TAPS; ++k) {
            cx[k] = xi[ox * TAPS + k] * C + c;
            wx[k] = xw[ox * TAPS + k];
        }
    }
    for (long long job = blockIdx.y; job < planes * tiles_y; job += gridDim.y) {  // uniform per block
        const long long b = job / tiles_y;
        const int tile = (int)(job - b * tiles_y);
        const int lo = bands[2 * tile], n = bands[2 * tile + 1];
        const int oy0 = tile * tile_rows, oy1 = min(oy0 + tile_rows, dh);
        const T* plane = in + b * H * W * C;
        __syncthreads();  // the previous tile's band has been read
        if (live) {
            for (int r = ty; r < n; r += ZOOM_TY) {
                const T* src = plane + (long long)(lo + r) * W * C;
                long long row = 0;
#pragma unroll
                for (int k = 0; k < TAPS; ++k) row += (long long)wx[k] * (long long)src[cx[k]];  // 32 x 32 -> 64
                if constexpr (!EXACT) row = floor_div(row * (1LL << shift) + half_sx, sx);
                band[r * ZOOM_TW + tx] = row;
            }
        }
        __syncthreads();
        if (live) {
            unsigned char* dst = out + b * dh * (long long)row_samples + s;
            for (int oy = oy0 + ty; oy < oy1; oy += ZOOM_TY) {
                long long acc = 0;
#pragma unroll
                for (int k = 0; k < TAPS; ++k) {
                    acc += (long long)yw[oy * TAPS + k] * band[(yi[oy * TAPS + k] - lo) * ZOOM_TW + tx];
                }
                acc = floor_div(acc + half_div, div);
                dst[(long long)oy * row_samples] = (unsigned char)(acc < 0 ? 0 : acc > 255 ? 255 : acc);
            }
        }
    }
}
