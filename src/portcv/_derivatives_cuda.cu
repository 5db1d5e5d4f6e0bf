// Fused Sobel/Scharr gradients on uint8 images: one pass loads the tile + halo once and writes
// both gx (derivative across columns) and gy (derivative across rows) as int16, each equal to
// cv2.Sobel(img, CV_16S, 1, 0 / 0, 1, ksize). Compiled by portcv.backends.cupy with
// --std=c++17 --fmad=false.
//
// Both gradients are separable: gx = smooth (vertical) x deriv (horizontal), gy = deriv
// (vertical) x smooth (horizontal). The horizontal pass makes both row sums from one read of the
// shared tile; the vertical pass makes gx from the derivative rows and gy from the smoothed rows.
//
// Layout: as _separable.cu: `planes` images of H rows of W pixels of C interleaved channels (C in
// 1..4); a block computes a 128-byte x 32-row tile of both outputs; each thread makes 4
// consecutive bytes of 4 rows of each.
//
// Exactness: taps are OpenCV's integer first-order kernels of size K <= 7 (ksize 1 runs as
// K = 3 with smooth taps 0, 1, 0). A horizontal row sum is at most max(sum|smooth|, sum|deriv|)
// * 255 <= 64 * 255 = 16320 in magnitude, so the two row tiles are int16 (half the shared
// memory of int32); the vertical sums are int32 (<= 64 * 20 * 255) and saturate to int16 in
// finish() like OpenCV's saturate_cast<short>.

#include "common.cuh"

constexpr int GRAD_TILE_W = 128;  // output bytes per tile row
constexpr int GRAD_THREADS = 256;
constexpr int GRAD_ROWS = 4;      // output rows per thread
constexpr int GRAD_TILE_H = (GRAD_THREADS / (GRAD_TILE_W / 4)) * GRAD_ROWS;  // 32

template <int K, int C>
__global__ void __launch_bounds__(GRAD_THREADS)
portcv_gradients(const unsigned char* __restrict__ src, short* __restrict__ gx, short* __restrict__ gy,
                 int H, int W, const int* __restrict__ smooth_taps, const int* __restrict__ deriv_taps,
                 int border) {
    static_assert(K == 3 || K == 5 || K == 7, "first-order Sobel/Scharr kernels of size 3, 5 or 7");
    constexpr int A = K / 2;
    constexpr int HALO = A * C;
    constexpr int LEAD = (HALO + 15) / 16 * 16;
    constexpr int DELTA = LEAD - HALO;
    constexpr int IN_W = (LEAD + GRAD_TILE_W + HALO + 15) / 16 * 16;
    constexpr int IN_H = GRAD_TILE_H + K - 1;
    constexpr int D0 = DELTA % 4;
    constexpr int NW = (D0 + 4 + (K - 1) * C + 3) / 4;

    __shared__ __align__(16) unsigned char s_in[IN_H][IN_W + 16];
    __shared__ __align__(16) short s_smooth[IN_H][GRAD_TILE_W];  // rows x smooth taps
    __shared__ __align__(16) short s_deriv[IN_H][GRAD_TILE_W];   // rows x derivative taps
    __shared__ int s_ks[K], s_kd[K];

    const int tid = threadIdx.x;
    const int WB = W * C;
    const int bx0 = blockIdx.x * GRAD_TILE_W, by0 = blockIdx.y * GRAD_TILE_H;
    const size_t plane_off = (size_t)blockIdx.z * H * WB;

    if (tid < K) {
        s_ks[tid] = smooth_taps[tid];
        s_kd[tid] = deriv_taps[tid];
    }
    const bool aligned = (reinterpret_cast<size_t>(src) & 15) == 0;
    // OpenCV's Sobel pads a constant border with 0.
    load_tile<IN_H, IN_W, C, GRAD_THREADS, IN_W + 16>(s_in, src + plane_off, aligned, H, W, bx0 - LEAD,
                                                      by0 - A, border, 0);
    __syncthreads();

    // 1. Horizontal: both row sums of 4 consecutive bytes from one register window.
    for (int i = tid; i < IN_H * (GRAD_TILE_W / 4); i += GRAD_THREADS) {
        const int r = i / (GRAD_TILE_W / 4), q = (i - r * (GRAD_TILE_W / 4)) * 4;
        const unsigned int* row = reinterpret_cast<const unsigned int*>(&s_in[r][0]) + (q + DELTA) / 4;
        unsigned int w[NW];
#pragma unroll
        for (int j = 0; j < NW; ++j) w[j] = row[j];
        int sm[4] = {0, 0, 0, 0}, de[4] = {0, 0, 0, 0};
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const int ts = s_ks[k], td = s_kd[k];
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int p = window_byte(w, D0 + k * C + e);
                sm[e] += ts * p;
                de[e] += td * p;
            }
        }
        *reinterpret_cast<short4*>(&s_smooth[r][q]) = make_short4(sm[0], sm[1], sm[2], sm[3]);
        *reinterpret_cast<short4*>(&s_deriv[r][q]) = make_short4(de[0], de[1], de[2], de[3]);
    }
    __syncthreads();

    // 2. Vertical: gx = smooth taps over the derivative rows, gy = derivative taps over the
    //    smoothed rows; each loaded row feeds every output row of this thread that uses it.
    const int q = (tid % (GRAD_TILE_W / 4)) * 4;
    const int r0 = (tid / (GRAD_TILE_W / 4)) * GRAD_ROWS;
    int ax[GRAD_ROWS][4], ay[GRAD_ROWS][4];
#pragma unroll
    for (int rr = 0; rr < GRAD_ROWS; ++rr)
#pragma unroll
        for (int e = 0; e < 4; ++e) ax[rr][e] = ay[rr][e] = 0;
#pragma unroll
    for (int j = 0; j < K + GRAD_ROWS - 1; ++j) {
        const short4 d = *reinterpret_cast<const short4*>(&s_deriv[r0 + j][q]);
        const short4 s = *reinterpret_cast<const short4*>(&s_smooth[r0 + j][q]);
#pragma unroll
        for (int rr = 0; rr < GRAD_ROWS; ++rr) {
            const int k = j - rr;
            if (k >= 0 && k < K) {
                const int ts = s_ks[k], td = s_kd[k];
                ax[rr][0] += ts * d.x; ax[rr][1] += ts * d.y; ax[rr][2] += ts * d.z; ax[rr][3] += ts * d.w;
                ay[rr][0] += td * s.x; ay[rr][1] += td * s.y; ay[rr][2] += td * s.z; ay[rr][3] += td * s.w;
            }
        }
    }

    const int xb = bx0 + q;
    if (xb >= WB) return;
    const bool vector_store = (WB % 4 == 0);
#pragma unroll
    for (int rr = 0; rr < GRAD_ROWS; ++rr) {
        const int y = by0 + r0 + rr;
        if (y >= H) break;
        short ox[4], oy[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            ox[e] = finish<short, ROUND_SHIFT>(ax[rr][e], 0, 0);
            oy[e] = finish<short, ROUND_SHIFT>(ay[rr][e], 0, 0);
        }
        const size_t at = plane_off + (size_t)y * WB + xb;
        store4(gx + at, ox, WB - xb, vector_store);
        store4(gy + at, oy, WB - xb, vector_store);
    }
}
