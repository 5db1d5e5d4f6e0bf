// Motion detection of Del Vecchio et al. (section III): the thresholded difference matrix
// (Algorithm 2 / Listing 6) and the per-cell counts of the spatial difference density map
// (Algorithm 3 / Listing 7). Compiled by portcv.backends.cupy with --std=c++17 --fmad=false.
// portcv/_motion.py holds the portable version of both kernels and their launchers.
//
// Exactness: everything is integer counting of 0/1 pixels; no atomics, every count is summed by
// one thread or one block reduction (integer addition: the order cannot change the result).

#include "common.cuh"

#define DIFF_TILE_W 128
#define DIFF_TILE_H 64
#define DIFF_THREADS 256
#define DIFF_SEG 16  // output columns per thread in the horizontal pass (one running window)

// Difference matrix D of two binary edge maps (non-zero = edge), per plane (blockIdx.z):
//   D[p] = 255  iff  E1[p] != E2[p]  and no q with |q - p| <= beta per axis, q inside the
//   searched range [lo, H) x [lo, W), has E1[q] == E2[p]; else 0.
// With n1 = #E1 edges in that apron and size = its pixel count, "no such q" is n1 == 0 when
// E2[p] is an edge and n1 == size when it is not: a box count instead of (2 beta + 1)^2 reads.
// The count is separable: running window sums along rows (shared memory, DIFF_SEG outputs per
// thread, two reads per step), then running sums down columns, O(1) reads per pixel per axis.
// `crop` (Listing 6: 7; the pseudocode: -1) keeps only crop < r < H - crop, crop < c < W - crop.
// HALO (16 or 32) bounds beta; the launcher clips beta to max(H, W) - 1 first.
template <int HALO>
__global__ void __launch_bounds__(DIFF_THREADS)
portcv_motion_difference(const unsigned char* __restrict__ e1, const unsigned char* __restrict__ e2,
                         unsigned char* __restrict__ out, int H, int W, int beta, int lo, int crop,
                         int aligned) {
    constexpr int NR = DIFF_TILE_H + 2 * HALO;   // rows of E1 the tile's aprons reach
    constexpr int NC = DIFF_TILE_W + 2 * HALO;   // columns (a multiple of 16: uint4 loads)
    constexpr int PITCH = NC + 16;               // load_tile pads each row with 16 zero bytes
    __shared__ __align__(16) unsigned char s_e[NR][PITCH];
    // Horizontal window counts (<= 2 * HALO + 1 <= 65) of every loaded row, per output column.
    __shared__ unsigned char s_h[NR][DIFF_TILE_W];

    const int tid = threadIdx.x;
    const int bx0 = blockIdx.x * DIFF_TILE_W, by0 = blockIdx.y * DIFF_TILE_H;
    const size_t plane = (size_t)blockIdx.z * H * W;
    const int gx0 = bx0 - HALO, gy0 = by0 - HALO;

    // 1. E1 over the tile and its apron; outside the image: 0 (no edge, and never counted).
    load_tile<NR, NC, 1, DIFF_THREADS, PITCH>(s_e, e1 + plane, aligned != 0, H, W, gx0, gy0, CONSTANT, 0);
    __syncthreads();

    // 2. Row counts: s_h[r][x] = #edges in s_e[r][HALO + x - beta .. HALO + x + beta] whose image
    //    row and column are >= lo (Listing 6 never matches row 0 or column 0).
    for (int item = tid; item < NR * (DIFF_TILE_W / DIFF_SEG); item += DIFF_THREADS) {
        const int r = item / (DIFF_TILE_W / DIFF_SEG);
        const int x0 = (item - r * (DIFF_TILE_W / DIFF_SEG)) * DIFF_SEG;
        const unsigned char* row = s_e[r];
        unsigned char* hrow = s_h[r];
        if (gy0 + r < lo) {
#pragma unroll
            for (int t = 0; t < DIFF_SEG; ++t) hrow[x0 + t] = 0;
            continue;
        }
        // Shared column k is image column gx0 + k; edge(k) is 1 for a searched edge pixel.
        auto edge = [&](int k) { return (int)(row[k] != 0 && gx0 + k >= lo); };
        int sum = 0;
        for (int k = HALO + x0 - beta; k <= HALO + x0 + beta; ++k) sum += edge(k);
        hrow[x0] = (unsigned char)sum;
#pragma unroll
        for (int t = 1; t < DIFF_SEG; ++t) {
            sum += edge(HALO + x0 + t + beta) - edge(HALO + x0 + t - 1 - beta);
            hrow[x0 + t] = (unsigned char)sum;
        }
    }
    __syncthreads();

    // 3. Column counts and the decision: thread = one column x, DIFF_TILE_H / 2 consecutive rows.
    constexpr int ROWS_PER_THREAD = DIFF_TILE_H / (DIFF_THREADS / DIFF_TILE_W);
    const int x = tid % DIFF_TILE_W;
    const int y0 = (tid / DIFF_TILE_W) * ROWS_PER_THREAD;
    const int gx = bx0 + x;
    if (gx >= W) return;
    const int ncols = min(gx + beta, W - 1) - max(gx - beta, lo) + 1;
    const bool col_in = gx > crop && gx < W - crop;
    int n1 = 0;
    for (int k = HALO + y0 - beta; k <= HALO + y0 + beta; ++k) n1 += s_h[k][x];
    for (int t = 0; t < ROWS_PER_THREAD; ++t) {
        if (t > 0) n1 += (int)s_h[HALO + y0 + t + beta][x] - (int)s_h[HALO + y0 + t - 1 - beta][x];
        const int gy = by0 + y0 + t;
        if (gy >= H) break;
        const bool c1 = s_e[HALO + y0 + t][HALO + x] != 0;
        const bool c2 = e2[plane + (size_t)gy * W + gx] != 0;
        const int size = (min(gy + beta, H - 1) - max(gy - beta, lo) + 1) * ncols;
        const bool keep = c1 != c2 && (c2 ? n1 == 0 : n1 == size) && col_in && gy > crop && gy < H - crop;
        out[plane + (size_t)gy * W + gx] = keep ? 255 : 0;
    }
}

// Per-cell counts of the non-zero pixels of D: one block per (cell column j, cell row i, plane),
// over the half-open rectangle [r0[i], r1[i]) x [c0[j], c1[j]) (portcv/_motion.py, cell_bounds:
// the pseudocode's inclusive cells overlap by one row/column, Listing 7's partition the image).
// Warps take rows, lanes take columns (coalesced); a warp-shuffle and shared-memory reduction
// gives the exact count, written once. THREADS is a multiple of 32 (the launcher uses 256).
template <int THREADS>
__global__ void __launch_bounds__(THREADS)
portcv_motion_density(const unsigned char* __restrict__ d, int* __restrict__ counts, int H, int W, int rows,
                      int cols, const int* __restrict__ r0, const int* __restrict__ r1,
                      const int* __restrict__ c0, const int* __restrict__ c1) {
    constexpr int WARPS = THREADS / 32;
    const int j = blockIdx.x, i = blockIdx.y;
    const unsigned char* p = d + (size_t)blockIdx.z * H * W;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int ya = r0[i], yb = r1[i], xa = c0[j], xb = c1[j];
    int n = 0;
    for (int y = ya + warp; y < yb; y += WARPS) {
        const unsigned char* row = p + (size_t)y * W;
        for (int x = xa + lane; x < xb; x += 32) n += row[x] != 0;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) n += __shfl_down_sync(0xffffffffu, n, o);
    __shared__ int s_warp[WARPS];
    if (lane == 0) s_warp[warp] = n;
    __syncthreads();
    if (threadIdx.x == 0) {
        int total = 0;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) total += s_warp[w];
        counts[((size_t)blockIdx.z * rows + i) * cols + j] = total;
    }
}

// Motion cells drawn over a frame, one thread per pixel (all its C channels), per plane
// (blockIdx.z): the motion-area image (OUTLINE false: the pixel where it lies in a motion cell,
// 0 elsewhere) or the region outlines (OUTLINE true: `color` where the pixel is within
// `thickness` of a motion cell's edge, the pixel elsewhere). A pixel lies in at most two cells
// per axis: rslots holds 4 rows of H ints (first cell, second cell, first inset, second inset;
// cell == rows means none), cslots the same for columns (portcv/_motion.py: cell_membership).
template <int C, bool OUTLINE>
__global__ void __launch_bounds__(256)
portcv_motion_cells(const unsigned char* __restrict__ image, const unsigned char* __restrict__ regions,
                    unsigned char* __restrict__ out, int H, int W, int rows, int cols,
                    const int* __restrict__ rslots, const int* __restrict__ cslots, int thickness,
                    unsigned int color) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y;
    if (x >= W) return;
    const unsigned char* grid = regions + (size_t)blockIdx.z * rows * cols;
    bool inside = false;
#pragma unroll
    for (int a = 0; a < 2; ++a) {
        const int rc = rslots[a * H + y];
        if (rc >= rows) continue;
#pragma unroll
        for (int b = 0; b < 2; ++b) {
            const int cc = cslots[b * W + x];
            if (cc >= cols || !grid[rc * cols + cc]) continue;
            if (!OUTLINE || rslots[(2 + a) * H + y] < thickness || cslots[(2 + b) * W + x] < thickness)
                inside = true;
        }
    }
    const size_t p = (((size_t)blockIdx.z * H + y) * W + x) * C;
#pragma unroll
    for (int c = 0; c < C; ++c) {
        const unsigned char v = image[p + c];
        if (OUTLINE)
            out[p + c] = inside ? (unsigned char)(color >> (8 * c)) : v;
        else
            out[p + c] = inside ? v : (unsigned char)0;
    }
}
