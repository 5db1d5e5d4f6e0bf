// Direct (non-separable) integer 2-D correlation on uint8 images: Del Vecchio et al.'s eq. 1 form,
// KW*KH taps per output, in one pass (load tile + halo into shared memory, all taps, finish,
// store). Compiled by portcv.backends.cupy with --std=c++17 --fmad=false.
//
// Layout: `planes` images of H rows of W pixels of C interleaved channels (C in 1..4); a row is
// W*C bytes and a horizontal tap steps C bytes. A block computes a 128-byte x 32-row output
// tile; each thread makes 4 consecutive bytes of 4 consecutive rows.
//
// Exactness: taps and pixels are integers; the accumulator is int32 and the caller guarantees
// sum|k| * 255 + rounding < 2^31 (portcv/_convolve.py check_accumulator). finish() of
// common.cuh is the only rounding.

#include "common.cuh"

constexpr int CONV_TILE_W = 128;  // output bytes per tile row
constexpr int CONV_THREADS = 256;
constexpr int CONV_ROWS = 4;      // output rows per thread
constexpr int CONV_TILE_H = (CONV_THREADS / (CONV_TILE_W / 4)) * CONV_ROWS;  // 32

template <int KW, int KH, int C, typename OutT, int F>
__global__ void __launch_bounds__(CONV_THREADS)
portcv_convolve2d(const unsigned char* __restrict__ src, OutT* __restrict__ dst, int H, int W,
                  const int* __restrict__ taps, int border, int border_value, int p0, int p1) {
    constexpr int AX = KW / 2, AY = KH / 2;  // OpenCV's default anchor (filter2D)
    constexpr int HALO_L = AX * C, HALO_R = (KW - 1 - AX) * C;
    // Shared column 0 is global byte column bx0 - LEAD: 16-byte aligned, so interior rows load
    // as uint4. Output byte q's first tap byte sits at shared column q + DELTA.
    constexpr int LEAD = (HALO_L + 15) / 16 * 16;
    constexpr int DELTA = LEAD - HALO_L;
    constexpr int IN_W = (LEAD + CONV_TILE_W + HALO_R + 15) / 16 * 16;
    constexpr int IN_H = CONV_TILE_H + KH - 1;
    constexpr int D0 = DELTA % 4;
    constexpr int NW = (D0 + 4 + (KW - 1) * C + 3) / 4;  // words covering one thread's window row
    // Tap rows padded with CONV_ROWS - 1 zero rows above and below: input row jj feeds output row
    // rr through tap row jj - rr, which is then always a valid (possibly zero) row: no branch.
    constexpr int PAD = CONV_ROWS - 1;
    constexpr int K_ROWS = KH + 2 * PAD;

    __shared__ __align__(16) unsigned char s_in[IN_H][IN_W + 16];
    __shared__ int s_k[K_ROWS * KW];

    const int tid = threadIdx.x;
    const int WB = W * C;
    const int bx0 = blockIdx.x * CONV_TILE_W, by0 = blockIdx.y * CONV_TILE_H;
    const size_t plane_off = (size_t)blockIdx.z * H * WB;

    for (int i = tid; i < K_ROWS * KW; i += CONV_THREADS) {
        const int r = i / KW - PAD;
        s_k[i] = (r >= 0 && r < KH) ? taps[r * KW + (i - (i / KW) * KW)] : 0;
    }
    const bool aligned = (reinterpret_cast<size_t>(src) & 15) == 0;
    load_tile<IN_H, IN_W, C, CONV_THREADS, IN_W + 16>(s_in, src + plane_off, aligned, H, W, bx0 - LEAD,
                                                      by0 - AY, border, border_value);
    __syncthreads();

    // Each thread slides down its input rows once; each row's window is read into registers and
    // feeds every output row of this thread that uses it (tap row jj - rr).
    const int q = (tid % (CONV_TILE_W / 4)) * 4;
    const int r0 = (tid / (CONV_TILE_W / 4)) * CONV_ROWS;  // warp-uniform: no divergence
    int acc[CONV_ROWS][4];
#pragma unroll
    for (int rr = 0; rr < CONV_ROWS; ++rr)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[rr][e] = 0;

    // Small kernels unroll completely, and the pairs (jj, rr) outside the kernel vanish at compile
    // time; big ones keep a loop over input rows (taps of a row unrolled) and read the zero rows.
    constexpr bool UNROLL = KH * KW <= 49;
#pragma unroll(UNROLL ? KH + CONV_ROWS - 1 : 1)
    for (int jj = 0; jj < KH + CONV_ROWS - 1; ++jj) {
        const unsigned int* row = reinterpret_cast<const unsigned int*>(&s_in[r0 + jj][0]) + (q + DELTA) / 4;
        unsigned int w[NW];
#pragma unroll
        for (int j = 0; j < NW; ++j) w[j] = row[j];
#pragma unroll
        for (int i = 0; i < KW; ++i) {
            int px[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) px[e] = window_byte(w, D0 + i * C + e);
#pragma unroll
            for (int rr = 0; rr < CONV_ROWS; ++rr) {
                if (UNROLL && (jj - rr < 0 || jj - rr >= KH)) continue;
                const int t = s_k[(jj - rr + PAD) * KW + i];
#pragma unroll
                for (int e = 0; e < 4; ++e) acc[rr][e] += t * px[e];
            }
        }
    }

    const int xb = bx0 + q;
    if (xb >= WB) return;
    const bool vector_store = (WB % 4 == 0);
#pragma unroll
    for (int rr = 0; rr < CONV_ROWS; ++rr) {
        const int y = by0 + r0 + rr;
        if (y >= H) break;
        OutT o[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) o[e] = finish<OutT, F>(acc[rr][e], p0, p1);
        store4(dst + plane_off + (size_t)y * WB + xb, o, WB - xb, vector_store);
    }
}
