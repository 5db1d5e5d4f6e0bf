// Separable integer filters on uint8 images: one fused pass (load tile + halo into shared
// memory, horizontal taps into a shared int32 tile, vertical taps, finish, store).
// Compiled by portcv.backends.cupy with --std=c++17 --fmad=false.
//
// Layout: `planes` images of H rows of W pixels of C interleaved channels (C in 1..4); a row is
// W*C bytes and a horizontal tap steps C bytes. A block computes a TILE_W-byte x TILE_H-row
// output tile; each thread makes 4 consecutive bytes of TILE_H / 8 rows.
//
// Exactness: taps and pixels are integers; accumulators are int32 and the caller guarantees
// sum|kx| * sum|ky| * 255 < 2^31. The finish step is the only rounding (see finish() below).

#define TILE_W 128
#define THREADS 256

#include "common.cuh"

// finish() and the Finish codes (the one rounding step) live in common.cuh.

// TILE_H (16 or 32 rows) is chosen by the launcher so that shared memory stays under 48 KB.
template <int KX, int KY, int C, typename OutT, int F, int TILE_H>
__global__ void __launch_bounds__(THREADS)
portcv_separable_filter(const unsigned char* __restrict__ src, OutT* __restrict__ dst,
                        int H, int W, const int* __restrict__ taps_x, const int* __restrict__ taps_y,
                        int border, int border_value, int p0, int p1) {
    constexpr int ROWS_PER_THREAD = TILE_H / (THREADS / (TILE_W / 4));
    constexpr int AX = KX / 2, AY = KY / 2;                // OpenCV's default anchor
    constexpr int HALO_L = AX * C, HALO_R = (KX - 1 - AX) * C;
    // Shared column 0 is global byte column bx0 - LEAD: 16-byte aligned, so interior rows load
    // as uint4. Output byte q's first tap byte sits at shared column q + DELTA.
    constexpr int LEAD = (HALO_L + 15) / 16 * 16;
    constexpr int DELTA = LEAD - HALO_L;
    constexpr int IN_W = (LEAD + TILE_W + HALO_R + 15) / 16 * 16;
    constexpr int IN_H = TILE_H + KY - 1;
    constexpr int D0 = DELTA % 4;
    constexpr int NW = (D0 + 4 + (KX - 1) * C + 3) / 4;   // words covering one thread's window

    __shared__ __align__(16) unsigned char s_in[IN_H][IN_W + 16];
    __shared__ __align__(16) int s_row[IN_H][TILE_W];
    __shared__ int s_kx[KX], s_ky[KY];

    const int tid = threadIdx.x;
    const int WB = W * C;
    const int bx0 = blockIdx.x * TILE_W, by0 = blockIdx.y * TILE_H;
    const size_t plane_off = (size_t)blockIdx.z * H * WB;
    const unsigned char* in = src + plane_off;

    if (tid < KX) s_kx[tid] = taps_x[tid];
    if (tid < KY) s_ky[tid] = taps_y[tid];

    // 1. Tile + halo into shared memory (common.cuh's load_tile: uint4 rows for interior tiles,
    //    every byte remapped at the image's edges, 16 zero bytes after each row).
    const int gx0 = bx0 - LEAD, gy0 = by0 - AY;
    load_tile<IN_H, IN_W, C, THREADS, IN_W + 16>(s_in, in, (reinterpret_cast<size_t>(src) & 15) == 0, H, W, gx0,
                                                 gy0, border, border_value);
    __syncthreads();

    // 2. Horizontal taps: 4 consecutive output bytes per work item, window bytes in registers.
    for (int i = tid; i < IN_H * (TILE_W / 4); i += THREADS) {
        const int r = i / (TILE_W / 4), q = (i - r * (TILE_W / 4)) * 4;
        const unsigned int* row = reinterpret_cast<const unsigned int*>(&s_in[r][0]) + (q + DELTA) / 4;
        unsigned int w[NW];
#pragma unroll
        for (int j = 0; j < NW; ++j) w[j] = row[j];
        int a[4] = {0, 0, 0, 0};
#pragma unroll
        for (int k = 0; k < KX; ++k) {
            const int t = s_kx[k];
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int b = D0 + k * C + e;
                a[e] += t * (int)((w[b >> 2] >> ((b & 3) * 8)) & 255u);
            }
        }
        *reinterpret_cast<int4*>(&s_row[r][q]) = make_int4(a[0], a[1], a[2], a[3]);
    }
    __syncthreads();

    // 3. Vertical taps over ROWS_PER_THREAD consecutive rows, 4 bytes wide, then finish + store.
    const int q = (tid % (TILE_W / 4)) * 4;
    const int r0 = (tid / (TILE_W / 4)) * ROWS_PER_THREAD;
    int acc[ROWS_PER_THREAD][4];
#pragma unroll
    for (int rr = 0; rr < ROWS_PER_THREAD; ++rr)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[rr][e] = 0;
#pragma unroll
    for (int j = 0; j < KY + ROWS_PER_THREAD - 1; ++j) {
        const int4 v = *reinterpret_cast<const int4*>(&s_row[r0 + j][q]);
#pragma unroll
        for (int rr = 0; rr < ROWS_PER_THREAD; ++rr) {
            const int k = j - rr;
            if (k >= 0 && k < KY) {
                const int t = s_ky[k];
                acc[rr][0] += t * v.x;
                acc[rr][1] += t * v.y;
                acc[rr][2] += t * v.z;
                acc[rr][3] += t * v.w;
            }
        }
    }
    const int xb = bx0 + q;
    if (xb >= WB) return;
    const bool vector_store = (WB % 4 == 0);
#pragma unroll
    for (int rr = 0; rr < ROWS_PER_THREAD; ++rr) {
        const int y = by0 + r0 + rr;
        if (y >= H) break;
        OutT* out = dst + plane_off + (size_t)y * WB + xb;
        OutT o[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) o[e] = finish<OutT, F>(acc[rr][e], p0, p1);
        if (vector_store) {
            if constexpr (sizeof(OutT) == 1) {
                *reinterpret_cast<uchar4*>(out) = make_uchar4(o[0], o[1], o[2], o[3]);
            } else if constexpr (sizeof(OutT) == 2) {
                *reinterpret_cast<short4*>(out) = make_short4(o[0], o[1], o[2], o[3]);
            } else {
                *reinterpret_cast<int4*>(out) = make_int4(o[0], o[1], o[2], o[3]);
            }
        } else {
#pragma unroll
            for (int e = 0; e < 4; ++e)
                if (xb + e < WB) out[e] = o[e];
        }
    }
}
