// k x k median filter on uint8 images (the webcam report's tiled median, section 6.5), two
// kernels, both exact (they only compare and count; no arithmetic on pixel values):
//
// * portcv_median_network<K, C>, K = 3, 5: a selection network per output pixel, in registers.
//   The report sorted the K*K window with a bubble sort per pixel (575 ms at 1080p RGB, K = 5);
//   a network is branch-free min/max, 19 exchanges for 3x3 and 99 for 5x5, and the compiler
//   drops the half of an exchange whose result is never read.
// * portcv_median_histogram<K, C>, K = 7..15: Huang's sliding histogram. A thread owns one byte
//   column of a HISTOGRAM_STRIP-row tile and walks down it, keeping a 256-bin histogram of its K x K window
//   in shared memory; each step removes a row of K values, adds a row of K values and moves the
//   median from its previous value: O(K) work per output instead of O(K^2 log K).
//
// Layout (as filters.cu): `planes` (gridDim.z) images of H rows of W pixels of C interleaved
// channels (C in 1..4); a row is W*C bytes, a horizontal tap steps C bytes and each byte column
// is filtered on its own. A block loads its output tile plus a halo of K/2 pixels on each side
// into shared memory with common.cuh's load_tile, which applies the border rule (remap()).
//
// The median of a window of N = K*K values (N odd) is its element of rank N/2 (0-based), as
// OpenCV's medianBlur and portcv/_median.py define it.

#include "common.cuh"

#define MEDIAN_TILE_W 128     // output bytes per block row (both kernels)
#define NETWORK_THREADS 256   // network kernel: 128 columns x 2 row groups ...
#define NETWORK_ROWS 4        // ... of 4 consecutive output rows per thread: 8-row tiles
#define HISTOGRAM_THREADS 128 // histogram kernel: one byte column per thread (4 warps) ...
#define HISTOGRAM_STRIP 32    // ... and 32 output rows per block

// One compare-exchange of a selection network: a <- min(a, b), b <- max(a, b).
__device__ __forceinline__ void exchange(int& a, int& b) {
    const int lo = min(a, b);
    b = max(a, b);
    a = lo;
}

// Selection networks, as (a, b) exchange lists. tests/test_median.py reads these two lists from
// this file and proves with the 0-1 principle (all 2^9 / 2^25 inputs of zeros and ones) that
// wire N/2 ends up holding the median; keep each list between its BEGIN and END markers.
// 3x3: A. Paeth, "Median finding on a 3x3 grid", Graphics Gems (1990); 19 exchanges.
// 5x5: N. Devillard, "Fast median search: an ANSI C implementation" (1998); 99 exchanges.
// clang-format off
#define PORTCV_MEDIAN9_NETWORK(X) /* BEGIN median9 */ \
    X(1, 2) X(4, 5) X(7, 8) X(0, 1) X(3, 4) X(6, 7) X(1, 2) X(4, 5) X(7, 8) X(0, 3) \
    X(5, 8) X(4, 7) X(3, 6) X(1, 4) X(2, 5) X(4, 7) X(4, 2) X(6, 4) X(4, 2) /* END median9 */

#define PORTCV_MEDIAN25_NETWORK(X) /* BEGIN median25 */ \
    X(0, 1) X(3, 4) X(2, 4) X(2, 3) X(6, 7) X(5, 7) X(5, 6) X(9, 10) X(8, 10) X(8, 9) \
    X(12, 13) X(11, 13) X(11, 12) X(15, 16) X(14, 16) X(14, 15) X(18, 19) X(17, 19) X(17, 18) \
    X(21, 22) X(20, 22) X(20, 21) X(23, 24) X(2, 5) X(3, 6) X(0, 6) X(0, 3) X(4, 7) X(1, 7) \
    X(1, 4) X(11, 14) X(8, 14) X(8, 11) X(12, 15) X(9, 15) X(9, 12) X(13, 16) X(10, 16) \
    X(10, 13) X(20, 23) X(17, 23) X(17, 20) X(21, 24) X(18, 24) X(18, 21) X(19, 22) X(8, 17) \
    X(9, 18) X(0, 18) X(0, 9) X(10, 19) X(1, 19) X(1, 10) X(11, 20) X(2, 20) X(2, 11) \
    X(12, 21) X(3, 21) X(3, 12) X(13, 22) X(4, 22) X(4, 13) X(14, 23) X(5, 23) X(5, 14) \
    X(15, 24) X(6, 24) X(6, 15) X(7, 16) X(7, 19) X(13, 21) X(15, 23) X(7, 13) X(7, 15) \
    X(1, 9) X(3, 11) X(5, 17) X(11, 17) X(9, 17) X(4, 10) X(6, 12) X(7, 14) X(4, 6) X(4, 7) \
    X(12, 14) X(10, 14) X(6, 7) X(10, 12) X(6, 10) X(6, 17) X(12, 17) X(7, 17) X(7, 10) \
    X(12, 18) X(7, 12) X(10, 18) X(12, 20) X(10, 20) X(10, 12) /* END median25 */
// clang-format on

#define PORTCV_MEDIAN_EXCHANGE(a, b) exchange(p[a], p[b]);

template <int K>
__device__ __forceinline__ int select_median(int (&p)[K * K]) {
    static_assert(K == 3 || K == 5, "selection networks exist for 3x3 and 5x5 windows");
    if constexpr (K == 3) {
        PORTCV_MEDIAN9_NETWORK(PORTCV_MEDIAN_EXCHANGE)
    } else {
        PORTCV_MEDIAN25_NETWORK(PORTCV_MEDIAN_EXCHANGE)
    }
    return p[K * K / 2];
}

// Shared-memory tile geometry for a K x K window: shared column 0 is global byte column
// bx0 - LEAD (16-byte aligned, so interior rows load as uint4); output byte q's window starts at
// shared column q + DELTA.
template <int K, int C, int TILE_H>
struct MedianTile {
    static constexpr int HALO = (K / 2) * C;
    static constexpr int LEAD = (HALO + 15) / 16 * 16;
    static constexpr int DELTA = LEAD - HALO;
    static constexpr int IN_W = (LEAD + MEDIAN_TILE_W + HALO + 15) / 16 * 16;
    static constexpr int PITCH = IN_W + 16;  // load_tile zeroes 16 bytes after each row
    static constexpr int IN_H = TILE_H + K - 1;
};

// K = 3, 5. Block: 128 output bytes x 8 rows; thread (q, g): byte column q, rows 4g .. 4g + 3.
// It reads the (4 + K - 1) x K window bytes it needs once into registers and runs one network
// per output row.
template <int K, int C>
__global__ void __launch_bounds__(NETWORK_THREADS)
portcv_median_network(const unsigned char* __restrict__ src, unsigned char* __restrict__ dst, int H, int W,
                      int border, int border_value) {
    constexpr int TILE_H = (NETWORK_THREADS / MEDIAN_TILE_W) * NETWORK_ROWS;
    using Tile = MedianTile<K, C, TILE_H>;
    __shared__ __align__(16) unsigned char s_in[Tile::IN_H][Tile::PITCH];

    const int WB = W * C;
    const int bx0 = blockIdx.x * MEDIAN_TILE_W, by0 = blockIdx.y * TILE_H;
    const size_t plane_off = (size_t)blockIdx.z * H * WB;
    const bool aligned = (reinterpret_cast<size_t>(src) & 15) == 0;
    load_tile<Tile::IN_H, Tile::IN_W, C, NETWORK_THREADS, Tile::PITCH>(
        s_in, src + plane_off, aligned, H, W, bx0 - Tile::LEAD, by0 - K / 2, border, border_value);
    __syncthreads();

    const int q = threadIdx.x % MEDIAN_TILE_W;
    const int r0 = (threadIdx.x / MEDIAN_TILE_W) * NETWORK_ROWS;
    const int xb = bx0 + q;
    if (xb >= WB) return;

    int win[NETWORK_ROWS + K - 1][K];
#pragma unroll
    for (int j = 0; j < NETWORK_ROWS + K - 1; ++j)
#pragma unroll
        for (int i = 0; i < K; ++i) win[j][i] = s_in[r0 + j][q + Tile::DELTA + i * C];

#pragma unroll
    for (int rr = 0; rr < NETWORK_ROWS; ++rr) {
        const int y = by0 + r0 + rr;
        if (y >= H) break;
        int p[K * K];
#pragma unroll
        for (int j = 0; j < K; ++j)
#pragma unroll
            for (int i = 0; i < K; ++i) p[j * K + i] = win[rr + j][i];
        dst[plane_off + (size_t)y * WB + xb] = (unsigned char)select_median<K>(p);
    }
}

// K = 7..15. Block: 128 output bytes x HISTOGRAM_STRIP rows; thread t owns byte column t and
// walks down the strip. Its histogram is 256 byte counters (a window holds at most 225 values,
// so a byte never overflows), stored so that a warp's 32 threads always hit 32 different banks:
// the counter of bin b for thread (warp w, lane l) is byte w of word [b][l].
// `below` = number of window values < `med`; after each step `med` moves down while
// below > rank and up while below + hist[med] <= rank, which leaves med = the rank-th value.
template <int K, int C>
__global__ void __launch_bounds__(HISTOGRAM_THREADS)
portcv_median_histogram(const unsigned char* __restrict__ src, unsigned char* __restrict__ dst, int H, int W,
                        int border, int border_value) {
    static_assert(K * K <= 255, "byte counters hold at most 255");
    constexpr int RANK = K * K / 2;
    using Tile = MedianTile<K, C, HISTOGRAM_STRIP>;
    constexpr int P = Tile::PITCH;
    __shared__ __align__(16) unsigned char s_in[Tile::IN_H][P];
    __shared__ __align__(16) unsigned int s_hist[256][32];  // 32 KB

    const int tid = threadIdx.x;
    for (int i = tid; i < 256 * 32 / 4; i += HISTOGRAM_THREADS)
        reinterpret_cast<uint4*>(&s_hist[0][0])[i] = make_uint4(0, 0, 0, 0);

    const int WB = W * C;
    const int bx0 = blockIdx.x * MEDIAN_TILE_W, by0 = blockIdx.y * HISTOGRAM_STRIP;
    const size_t plane_off = (size_t)blockIdx.z * H * WB;
    const bool aligned = (reinterpret_cast<size_t>(src) & 15) == 0;
    load_tile<Tile::IN_H, Tile::IN_W, C, HISTOGRAM_THREADS, P>(
        s_in, src + plane_off, aligned, H, W, bx0 - Tile::LEAD, by0 - K / 2, border, border_value);
    __syncthreads();

    const int xb = bx0 + tid;
    if (xb >= WB) return;
    // Counter of bin b: hist[b * 128] (word [b][lane], byte warp).
    unsigned char* hist = reinterpret_cast<unsigned char*>(&s_hist[0][0]) + (tid % 32) * 4 + tid / 32;
    const unsigned char* col = &s_in[0][tid + Tile::DELTA];  // window byte (row j, tap i): col[j * P + i * C]

    // First window. The walk to its median starts at the window mean (any start gives the same
    // median; the mean is usually a few bins away, where a walk from 0 could take 255 steps).
    int sum = 0;  // <= 225 * 255
#pragma unroll 1
    for (int j = 0; j < K; ++j)
#pragma unroll
        for (int i = 0; i < K; ++i) {
            const int v = col[j * P + i * C];
            ++hist[v * 128];
            sum += v;
        }
    int med = sum / (K * K), below = 0;
#pragma unroll 1
    for (int j = 0; j < K; ++j)
#pragma unroll
        for (int i = 0; i < K; ++i) below += col[j * P + i * C] < med;
    while (below > RANK) below -= hist[(--med) * 128];
    while (below + hist[med * 128] <= RANK) below += hist[(med++) * 128];
    unsigned char* out = dst + plane_off + (size_t)by0 * WB + xb;
    *out = (unsigned char)med;

    const int rows = min(HISTOGRAM_STRIP, H - by0);
#pragma unroll 1
    for (int rr = 1; rr < rows; ++rr) {
        const unsigned char* leaving = col + (rr - 1) * P;
        const unsigned char* entering = col + (rr + K - 1) * P;
#pragma unroll
        for (int i = 0; i < K; ++i) {
            const int v_out = leaving[i * C], v_in = entering[i * C];
            --hist[v_out * 128];
            ++hist[v_in * 128];
            below += (v_in < med) - (v_out < med);
        }
        while (below > RANK) below -= hist[(--med) * 128];
        while (below + hist[med * 128] <= RANK) below += hist[(med++) * 128];
        out += WB;
        *out = (unsigned char)med;
    }
}
