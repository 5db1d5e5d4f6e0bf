// Cubic B-spline zoom on CUDA: the prefilter's two symmetric integer FIR passes, fused per
// tile, and the table-driven separable interpolation, fused per output tile. Compiled by
// portcv.backends.cupy (--std=c++17 --fmad=false); launched by src/portcv/transform/_zoom_cuda.py; the portable
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

// sum_k h_k (v[j - k] + v[j + k]) around v[j], j = PF_N + the output's place in the run.
__device__ __forceinline__ long long prefilter_at(const int (&h)[PF_N + 1], const int (&v)[PF_SPAN], int j) {
    long long acc = mad_wide(h[0], v[j], 0);
#pragma unroll
    for (int k = 1; k <= PF_N; ++k) acc = mad_wide(h[k], v[j - k] + v[j + k], acc);
    return acc;
}

// Both prefilter passes in one launch, per tile of `rows` x `px` pixels (C interleaved
// channels) of one plane: the block copies the tile's input with a PF_N border on every side into
// shared memory (reflect101 indices, so no pass remaps again), runs the W pass over the band of
// rows + 2 PF_N rows into shared memory (uint8 -> Q16, >> 8), then the H pass (Q16 -> Q16, >> 24)
// into `out`. A thread makes a run of PF_RUN outputs along the pass' axis from PF_SPAN samples in
// registers. rows and px are multiples of PF_RUN picked by the launcher, which gives
// (rows + 2 PF_N) (4 px C + (px + 2 PF_N) C) bytes of dynamic shared memory. (Two launches
// through a global int32 image, the W pass' stores 8-way strided, took 45 us of a 1080p frame
// on the H100.) The launch bounds hold it to 64 registers, 4 blocks an SM (80 without).
constexpr int PT_THREADS = 256;
constexpr int PF_LOADS = 4;

__global__ void __launch_bounds__(PT_THREADS, 4)
portcv_spline_prefilter_tiles(const unsigned char* __restrict__ in, const int* __restrict__ taps, long long planes,
                              int H, int W, int C, int rows, int px, int tiles_y, int* __restrict__ out) {
    extern __shared__ int pf_shared[];
    const int band = rows + 2 * PF_N, mid_w = px * C, raw_w = (px + 2 * PF_N) * C;
    int* mid = pf_shared;                                                     // [band][mid_w]: the W pass
    unsigned char* raw = reinterpret_cast<unsigned char*>(pf_shared + band * mid_w);  // [band][raw_w]: the input
    int h[PF_N + 1];
#pragma unroll
    for (int k = 0; k <= PF_N; ++k) h[k] = taps[k];
    const int x0 = blockIdx.x * px;
    const long long wc = (long long)W * C;
    const int step_r = PT_THREADS / raw_w, step_k = PT_THREADS - step_r * raw_w;  // byte i to byte i + PT_THREADS
    for (long long job = blockIdx.y; job < planes * tiles_y; job += gridDim.y) {  // (plane, tile row); uniform per block
        const long long b = job / tiles_y;
        const int y0 = (int)(job - b * tiles_y) * rows;
        const unsigned char* plane = in + b * H * wc;
        __syncthreads();  // the previous job's tile has been read
        // The input tile: PF_LOADS loads in flight per thread before any is stored, the (row,
        // byte) of byte i stepped along instead of divided out of it. (A byte loaded and stored
        // at a time, with two divisions each: 38.5 against 32.7 us of a 1080p frame on an H200;
        // 8 or 16 loads in flight, or a warp per row, were no faster.)
        int r = threadIdx.x / raw_w, k = threadIdx.x - r * raw_w;
        for (int i0 = threadIdx.x; i0 < band * raw_w; i0 += PT_THREADS * PF_LOADS) {
            unsigned char v[PF_LOADS];
#pragma unroll
            for (int u = 0; u < PF_LOADS; ++u) {
                if (r < band) {
                    const int p = C == 1 ? k : k / C;
                    const int y = remap(y0 - PF_N + r, H, REFLECT101), x = remap(x0 - PF_N + p, W, REFLECT101);
                    v[u] = __ldg(plane + y * wc + (long long)x * C + (k - p * C));
                }
                k += step_k;
                r += step_r;
                if (k >= raw_w) {
                    k -= raw_w;
                    ++r;
                }
            }
#pragma unroll
            for (int u = 0; u < PF_LOADS; ++u)
                if (i0 + u * PT_THREADS < band * raw_w) raw[i0 + u * PT_THREADS] = v[u];
        }
        __syncthreads();
        const int runs_x = px / PF_RUN;
        for (int i = threadIdx.x; i < band * runs_x * C; i += PT_THREADS) {  // (band row, run, channel)
            const int rest = i / C, c = i - rest * C, r = rest / runs_x, q0 = (rest - r * runs_x) * PF_RUN;
            const unsigned char* src = raw + r * raw_w + q0 * C + c;
            int v[PF_SPAN];
#pragma unroll
            for (int k = 0; k < PF_SPAN; ++k) v[k] = src[k * C];
            int* dst = mid + r * mid_w + q0 * C + c;
#pragma unroll
            for (int j = 0; j < PF_RUN; ++j) dst[j * C] = (int)((prefilter_at(h, v, PF_N + j) + (1 << 7)) >> 8);
        }
        __syncthreads();
        for (int i = threadIdx.x; i < (rows / PF_RUN) * mid_w; i += PT_THREADS) {  // (run of rows, sample)
            const int run = i / mid_w, s = i - run * mid_w;
            if (x0 + s / C >= W) continue;
            const int* src = mid + run * PF_RUN * mid_w + s;
            int v[PF_SPAN];
#pragma unroll
            for (int k = 0; k < PF_SPAN; ++k) v[k] = src[k * mid_w];
            int* dst = out + b * H * wc + (long long)x0 * C + s;
#pragma unroll
            for (int j = 0; j < PF_RUN; ++j) {
                const int y = y0 + run * PF_RUN + j;
                if (y < H) dst[y * wc] = (int)((prefilter_at(h, v, PF_N + j) + (1 << 23)) >> 24);
            }
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
    // Dynamic shared memory: the tile's y taps, [tile_rows][TAPS] offsets into the band and as
    // many weights (read from here, each output row's taps were a global load per thread that the
    // y pass waited for), then [n][ZOOM_TW], the x pass of the band's rows.
    extern __shared__ long long zoom_shared[];
    int* tap_at = reinterpret_cast<int*>(zoom_shared);
    int* tap_w = tap_at + tile_rows * TAPS;
    long long* band = zoom_shared + tile_rows * TAPS;
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
        for (int i = ty * ZOOM_TX + tx; i < (oy1 - oy0) * TAPS; i += ZOOM_TX * ZOOM_TY) {
            tap_at[i] = (yi[oy0 * TAPS + i] - lo) * ZOOM_TW;
            tap_w[i] = yw[oy0 * TAPS + i];
        }
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
                at[k] = tap_at[(oy - oy0) * TAPS + k] + tx;
                wy[k] = tap_w[(oy - oy0) * TAPS + k];
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
