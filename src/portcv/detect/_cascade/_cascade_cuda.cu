// Cascade window evaluation (OpenCV's Haar and LBP cascades) and the stream compaction that
// turns a window mask into a dense plan (Pertsau and Uvarov's mask -> plan). Compiled by
// portcv.backends.cupy with --std=c++17 --fmad=false; src/portcv/detect/_cascade.py holds the portable
// version (the reference) and src/portcv/detect/_cascade_cuda.py the launchers.
//
// portcv_cascade_stages_haar / portcv_cascade_stages_lbp: LANES threads per window (1 for the
// first stages over every window; 32 for the deep stages, each lane walking every 32nd tree of
// a stage, the group summing the int64 fixed-point leaves); the window is a flat offset
// y * stride + x of its top-left corner in the integral images of the packed pyramid (all
// scales in one image, so one launch covers every scale: the thesis, section 3.1).
// Stages [stage_begin, stage_end) run one after the other; status = 1 when all pass, -s when
// stage s rejects (0 for stage 0), -1 for the variance reject. Depth-first detection is one
// launch with [0, S) over all grid windows; breadth-first runs [0, split) over all windows,
// compacts the survivors and runs [split, S) on the plan, whose length stays on the device
// (`count`), so there is no host round trip between the launches. With use_plan, thread i
// evaluates windows[plan[i]] (the plan indexes the grid's windows: no gather launch).
//
// portcv_cascade_pyramid packs every pyramid level into one image in one launch (a gather
// through host-built maps, INTER_LINEAR_EXACT's Q8 arithmetic); portcv_cascade_candidates
// writes the one small array the host reads at the end of a detection.
//
// Exactness (the same decisions as the portable version, bit for bit):
// - Integral images are uint32 and wrap modulo 2^32; a rectangle inside one window sums to less
//   than 2^32 (the loader bounds the window area), so the uint32 difference of the four corners
//   is the true sum. It is widened to int64 before any multiply.
// - Variance: A = (W-2)(H-2), s and q the sum and squared sum over (1, 1, W-2, H-2),
//   nf = A*q - s*s in int64 (< 2^49); rejected when nf <= 0 or 100*A*A >= nf (OpenCV's
//   A / sqrt(nf) >= 0.1 without the square root).
// - Haar node: F = sum w_i * S_i in int64 (exact). OpenCV goes left iff F / sqrt(nf) < thr,
//   i.e. F < thr * sqrt(nf), decided from signs and squares: thr > 0: F < 0 or F^2 < thr^2 nf;
//   thr <= 0: F < 0 and F^2 > thr^2 nf. F^2 is double(F) * double(F) and thr^2 nf is
//   thr_sq * double(nf) (thr_sq = double(thr)^2 from the loader, exact; nf < 2^53, exact): two
//   correctly rounded IEEE multiplies (__dmul_rn, never contracted), one compare.
// - LBP node: integer block sums and compares only.
// - Stage sums: leaves in fixed point (int64, exact), compared with the stage threshold's
//   fixed-point ceiling: acc < thr <=> sum(leaf_fixed) < stage_threshold_fixed.
//
// Compaction (portcv_cascade_compact_*): keep flags (status 1, visited under OpenCV's stage-0
// skip rule) -> per-tile counts -> one-block scan of the tile counts -> per-tile block scans and
// a scatter in ascending index order, so the plan's order never depends on thread timing (no
// atomics). count = min(total, capacity); slots count..capacity-1 hold zeros.
#include "common.cuh"

namespace portcv_cascade {

// Sum over the upright rectangle whose top-left corner is at flat offset p (uint32 wrap-around:
// the true sum is < 2^32, so the modular result is exact).
__device__ __forceinline__ unsigned int rect_sum(const unsigned int* __restrict__ ii, int p, int w, int h,
                                                 int stride) {
    const int q = p + h * stride;
    return __ldg(ii + p) - __ldg(ii + p + w) - __ldg(ii + q) + __ldg(ii + q + w);
}

// Sum over a 45-degree rectangle in OpenCV's integral3 tilted layout, relative to the window
// corner `win`: T[y][x] - T[y+h][x-h] - T[y+w][x+w] + T[y+w+h][x+w-h].
__device__ __forceinline__ unsigned int tilted_sum(const unsigned int* __restrict__ t, int win, int x, int y, int w,
                                                   int h, int stride) {
    return __ldg(t + win + y * stride + x) - __ldg(t + win + (y + h) * stride + (x - h)) -
           __ldg(t + win + (y + w) * stride + (x + w)) + __ldg(t + win + (y + w + h) * stride + (x + w - h));
}

// The window's variance term nf = A*q - s*s over (1, 1, W-2, H-2); nf >= 0 (Cauchy-Schwarz).
__device__ __forceinline__ long long variance_term(const unsigned int* __restrict__ sum,
                                                   const unsigned int* __restrict__ sqsum, int win, int W, int H,
                                                   int stride) {
    const int p = win + stride + 1;
    const long long s = (long long)rect_sum(sum, p, W - 2, H - 2, stride);
    const long long q = (long long)rect_sum(sqsum, p, W - 2, H - 2, stride);
    const long long A = (long long)(W - 2) * (H - 2);
    return A * q - s * s;
}

// Whether the variance test rejects: nf <= 0 or 100 A^2 >= nf.
__device__ __forceinline__ bool variance_rejects(long long nf, int W, int H) {
    const long long A = (long long)(W - 2) * (H - 2);
    return nf <= 0 || 100 * A * A >= nf;
}

// Exact form of OpenCV's "F / sqrt(nf) < thr" (see the header).
__device__ __forceinline__ bool haar_goes_left(long long F, float thr, double thr_sq, double nf) {
    const double f = __ll2double_rn(F);  // |F| < 2^40: exact
    const double f2 = __dmul_rn(f, f);
    const double t2 = __dmul_rn(thr_sq, nf);
    return thr > 0.0f ? (F < 0 || f2 < t2) : (F < 0 && f2 > t2);
}

// The int32 Haar feature value F = sum_i w_i * S_i (unused rectangles have weight 0).
template <bool TILTED>
__device__ __forceinline__ long long haar_feature(const unsigned int* __restrict__ sum,
                                                  const unsigned int* __restrict__ tilted, int win, int stride,
                                                  const int* __restrict__ rect, const int* __restrict__ weight,
                                                  const unsigned char* __restrict__ is_tilted, int f) {
    const bool tilt = TILTED && __ldg(is_tilted + f) != 0;
    long long F = 0;
#pragma unroll
    for (int i = 0; i < 3; ++i) {
        const int w = __ldg(weight + 3 * f + i);
        if (w == 0) continue;  // contributes 0 either way
        const int* r = rect + 12 * f + 4 * i;
        const int x = __ldg(r), y = __ldg(r + 1), rw = __ldg(r + 2), rh = __ldg(r + 3);
        const unsigned int S = tilt ? tilted_sum(tilted, win, x, y, rw, rh, stride)
                                    : rect_sum(sum, win + y * stride + x, rw, rh, stride);
        F += (long long)w * (long long)S;
    }
    return F;
}

// The 8-bit LBP code of the 3x3 blocks of size w x h whose top-left block starts at (x, y):
// bit order 128 TL | 64 T | 32 TR | 16 R | 8 BR | 4 B | 2 BL | 1 L, set when block >= centre.
__device__ __forceinline__ int lbp_code(const unsigned int* __restrict__ sum, int win, int stride,
                                        const int* __restrict__ rect, int f) {
    const int* r = rect + 4 * f;
    const int x = __ldg(r), y = __ldg(r + 1), w = __ldg(r + 2), h = __ldg(r + 3);
    unsigned int P[4][4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const int row = win + (y + j * h) * stride + x;
#pragma unroll
        for (int i = 0; i < 4; ++i) P[j][i] = __ldg(sum + row + i * w);
    }
    unsigned int B[3][3];
#pragma unroll
    for (int j = 0; j < 3; ++j)
#pragma unroll
        for (int i = 0; i < 3; ++i) B[j][i] = P[j][i] - P[j][i + 1] - P[j + 1][i] + P[j + 1][i + 1];
    const unsigned int c = B[1][1];  // true block sums < 2^32: unsigned compares are exact
    return (B[0][0] >= c) << 7 | (B[0][1] >= c) << 6 | (B[0][2] >= c) << 5 | (B[1][2] >= c) << 4 |
           (B[2][2] >= c) << 3 | (B[2][1] >= c) << 2 | (B[2][0] >= c) << 1 | (B[1][0] >= c);
}

// The cascade's flat arrays (device pointers), see portcv.detect.Cascade.
struct Stages {
    const int* __restrict__ stage_tree_start;          // (S+1,)
    const long long* __restrict__ stage_threshold_fixed;  // (S,)
    const int* __restrict__ tree_node_start;           // (T+1,)
    const int* __restrict__ tree_leaf_start;           // (T+1,)
    const int* __restrict__ node_feature;              // (N,)
    const int* __restrict__ node_left;                 // (N,) > 0 node (local), <= 0 leaf -value
    const int* __restrict__ node_right;                // (N,)
    const long long* __restrict__ leaf_fixed;          // (L,)
};

// Sum of v over the LANES lanes of this thread's group (LANES a power of two <= 32, groups
// aligned inside the warp; `mask` = the group's lanes). Integer addition: exact in any order.
template <int LANES>
__device__ __forceinline__ long long group_sum(long long v, unsigned int mask) {
    if constexpr (LANES > 1) {
#pragma unroll
        for (int d = LANES / 2; d > 0; d >>= 1) v += __shfl_xor_sync(mask, v, d, LANES);
    }
    return v;
}

// Runs stages [stage_begin, stage_end) with `goes_left(global node id)` as the node test;
// returns 1 or -s for the rejecting stage s. The LANES threads of a group evaluate one window
// together: lane l walks trees t0 + l, t0 + l + LANES, ... of each stage and the group sums the
// fixed-point leaves (int64: the same sum in any order), so every lane returns the same value.
// A tree walk takes at most as many steps as the tree has nodes (the loader checks that every
// child index is larger than its parent's, so the walk always reaches a leaf within that bound).
template <int LANES, typename GoesLeft>
__device__ __forceinline__ int run_stages(const Stages& c, int stage_begin, int stage_end, int lane,
                                          unsigned int mask, GoesLeft goes_left) {
    for (int s = stage_begin; s < stage_end; ++s) {
        const int t_end = __ldg(c.stage_tree_start + s + 1);
        long long acc = 0;
        for (int t = __ldg(c.stage_tree_start + s) + lane; t < t_end; t += LANES) {
            const int n0 = __ldg(c.tree_node_start + t);
            const int nodes = __ldg(c.tree_node_start + t + 1) - n0;
            int node = 0, leaf = 0;
            for (int step = 0; step < nodes; ++step) {
                const int g = n0 + node;
                const int next = goes_left(g) ? __ldg(c.node_left + g) : __ldg(c.node_right + g);
                if (next <= 0) {
                    leaf = -next;
                    break;
                }
                node = next;
            }
            acc += __ldg(c.leaf_fixed + __ldg(c.tree_leaf_start + t) + leaf);
        }
        acc = group_sum<LANES>(acc, mask);
        if (acc < __ldg(c.stage_threshold_fixed + s)) return -s;
    }
    return 1;
}

// Number of windows this launch evaluates: n, or min(*count, n) (use_count) for a plan whose
// length is on the device.
__device__ __forceinline__ int live_windows(int n, const int* __restrict__ count, int use_count) {
    if (!use_count) return n;
    const int c = *count;
    return c < 0 ? 0 : (c < n ? c : n);
}

// Where work item w of a launch lives: its slot in status (sel[w] with use_sel, else w) and its
// window's offset (windows[plan[slot]] with use_plan, else windows[slot]).
struct Work {
    const int* __restrict__ windows;
    const int* __restrict__ plan;
    int use_plan;
    const int* __restrict__ sel;
    int use_sel;
    __device__ __forceinline__ int slot(int w) const { return use_sel ? __ldg(sel + w) : w; }
    __device__ __forceinline__ int window(int slot) const { return __ldg(windows + (use_plan ? __ldg(plan + slot) : slot)); }
};

// The launch loop shared by the Haar and LBP kernels: groups of LANES threads take work items
// w = group, group + groups, ... below live and write status[slot(w)] = evaluate(window, lane,
// mask) from lane 0. Without use_sel, slots live..n-1 get 0 (a defined value: "rejected at
// stage 0"); with use_sel the launch writes only the selected slots.
template <int BLOCK, int LANES, typename Evaluate>
__device__ __forceinline__ void for_each_window(const Work& work, int n, int live, int* __restrict__ status,
                                                Evaluate evaluate) {
    static_assert(LANES >= 1 && LANES <= 32 && (LANES & (LANES - 1)) == 0, "LANES: a power of two <= 32");
    static_assert(BLOCK % 32 == 0, "BLOCK: whole warps");
    const int tid = blockIdx.x * BLOCK + threadIdx.x;
    const int threads = gridDim.x * BLOCK;
    const int lane = threadIdx.x & (LANES - 1);
    const unsigned int mask =
        LANES == 32 ? 0xffffffffu : ((1u << LANES) - 1u) << ((threadIdx.x & 31) & ~(LANES - 1));
    for (int w = tid / LANES; w < live; w += threads / LANES) {
        const int slot = work.slot(w);
        const int r = evaluate(work.window(slot), lane, mask);
        if (lane == 0) status[slot] = r;
    }
    if (!work.use_sel)
        for (int i = live + tid; i < n; i += threads) status[i] = 0;
}

}  // namespace portcv_cascade

// ---------------------------------------------------------------------------------------------
// Window evaluation. Any grid of BLOCK-thread blocks (a grid-stride loop); groups of LANES
// threads evaluate one window each (see for_each_window): LANES = 1 for the first stages over
// every window (neighbouring threads read neighbouring windows: coalesced), LANES = 32 for the
// deep stages of the few windows that reach them (a window's 100-200 trees per stage are then
// walked 32 at a time instead of one after another by one thread). Work item w < live (n, or
// min(*count, n) with use_count) is slot sel[w] (use_sel) or w, its window windows[plan[slot]]
// (use_plan) or windows[slot]; status[slot] is written. Arrays that a launch does not read
// (sqsum of an LBP launch without check_variance, tilted without TILTED, count, plan, sel
// without their flags) may be any int array: CuPy passes no null pointers.
template <int BLOCK, int LANES, bool TILTED>
__global__ void __launch_bounds__(BLOCK)
portcv_cascade_stages_haar(const unsigned int* __restrict__ sum, const unsigned int* __restrict__ sqsum,
                           const unsigned int* __restrict__ tilted, int stride, const int* __restrict__ windows,
                           int n, const int* __restrict__ count, int use_count,
                           const int* __restrict__ plan, int use_plan, const int* __restrict__ sel, int use_sel,
                           int win_w, int win_h, int stage_begin, int stage_end, int check_variance,
                           const int* __restrict__ stage_tree_start,
                           const long long* __restrict__ stage_threshold_fixed,
                           const int* __restrict__ tree_node_start, const int* __restrict__ tree_leaf_start,
                           const int* __restrict__ node_feature, const int* __restrict__ node_left,
                           const int* __restrict__ node_right, const long long* __restrict__ leaf_fixed,
                           const float* __restrict__ node_threshold, const double* __restrict__ node_threshold_sq,
                           const int* __restrict__ feature_rect, const int* __restrict__ feature_weight,
                           const unsigned char* __restrict__ feature_tilted, int* __restrict__ status) {
    using namespace portcv_cascade;
    const Stages c{stage_tree_start, stage_threshold_fixed, tree_node_start, tree_leaf_start,
                   node_feature,     node_left,             node_right,      leaf_fixed};
    const Work work{windows, plan, use_plan, sel, use_sel};
    for_each_window<BLOCK, LANES>(work, n, live_windows(n, count, use_count), status,
                                  [&](int win, int lane, unsigned int mask) {
        // nf is needed by every node test, so it is computed whether or not the test applies.
        const long long nf = variance_term(sum, sqsum, win, win_w, win_h, stride);
        if (check_variance && variance_rejects(nf, win_w, win_h)) return -1;
        const double nfd = __ll2double_rn(nf);  // 0 <= nf < 2^53: exact
        return run_stages<LANES>(c, stage_begin, stage_end, lane, mask, [&](int g) {
            const long long F = haar_feature<TILTED>(sum, tilted, win, stride, feature_rect, feature_weight,
                                                     feature_tilted, __ldg(node_feature + g));
            return haar_goes_left(F, __ldg(node_threshold + g), __ldg(node_threshold_sq + g), nfd);
        });
    });
}

// LBP: the same launch geometry and status convention; node_subset is (N, 8) uint32 (a 256-bit
// category set), left iff bit `code` is set.
template <int BLOCK, int LANES>
__global__ void __launch_bounds__(BLOCK)
portcv_cascade_stages_lbp(const unsigned int* __restrict__ sum, const unsigned int* __restrict__ sqsum, int stride,
                          const int* __restrict__ windows, int n, const int* __restrict__ count, int use_count,
                          const int* __restrict__ plan, int use_plan, const int* __restrict__ sel, int use_sel,
                          int win_w, int win_h, int stage_begin, int stage_end, int check_variance,
                          const int* __restrict__ stage_tree_start, const long long* __restrict__ stage_threshold_fixed,
                          const int* __restrict__ tree_node_start, const int* __restrict__ tree_leaf_start,
                          const int* __restrict__ node_feature, const int* __restrict__ node_left,
                          const int* __restrict__ node_right, const long long* __restrict__ leaf_fixed,
                          const unsigned int* __restrict__ node_subset, const int* __restrict__ feature_rect,
                          int* __restrict__ status) {
    using namespace portcv_cascade;
    const Stages c{stage_tree_start, stage_threshold_fixed, tree_node_start, tree_leaf_start,
                   node_feature,     node_left,             node_right,      leaf_fixed};
    const Work work{windows, plan, use_plan, sel, use_sel};
    for_each_window<BLOCK, LANES>(work, n, live_windows(n, count, use_count), status,
                                  [&](int win, int lane, unsigned int mask) {
        if (check_variance && variance_rejects(variance_term(sum, sqsum, win, win_w, win_h, stride), win_w, win_h))
            return -1;
        return run_stages<LANES>(c, stage_begin, stage_end, lane, mask, [&](int g) {
            const int code = lbp_code(sum, win, stride, feature_rect, __ldg(node_feature + g));
            return ((__ldg(node_subset + 8 * g + (code >> 5)) >> (code & 31)) & 1u) != 0;
        });
    });
}

// ---------------------------------------------------------------------------------------------
// Compaction (the portable version: _cascade.py, compact_kernel): plan[k] = the k-th index i,
// ascending, that is kept; *count = min(#kept, capacity); plan[count..capacity) = 0.
// Kept: status[i] == 1 and, with SKIP_RULE, i is *visited* under OpenCV's stage-0 skip rule
// (each row scanned left to right; the window after a visited stage-0 reject is skipped):
// v[row start] = 1, v[i+1] = !(v[i] && status[i] == 0). Unrolled, v[i] <=> the run of
// status == 0 entries right before i, inside i's row (row_end marks each row's last window),
// has even length -- the portable version's closed form "(i - last reset - 1) is even". Only
// threads with status 1 walk back over the run, and a run ends at the first non-zero entry,
// so every entry is walked over by at most one thread: O(n) work in all.
// A tile is BLOCK * ITEMS entries, handled in ITEMS coalesced rounds of BLOCK.
//   1. portcv_cascade_compact_count<BLOCK, ITEMS, SKIP_RULE>: grid = tiles; tile_counts[b] = #kept in tile b.
//   2. portcv_cascade_compact_offsets<NT>: one block of NT; tile counts -> exclusive offsets (in
//      place), *count = min(total, capacity).
//   3. portcv_cascade_compact_scatter<BLOCK, ITEMS, SKIP_RULE>: grid = tiles; ranks by block scans,
//      the scatter, zeros in the unused slots.
// n < 2^31, so indices and counts fit int.
namespace portcv_cascade {

template <bool SKIP_RULE>
__device__ __forceinline__ int kept(const int* __restrict__ status, const unsigned char* __restrict__ row_end,
                                    int n, int i) {
    if (i >= n || __ldg(status + i) != 1) return 0;
    if (!SKIP_RULE) return 1;
    int j = i - 1;
    while (j >= 0 && __ldg(row_end + j) == 0 && __ldg(status + j) == 0) --j;
    return ((i - 1 - j) & 1) == 0;
}

}  // namespace portcv_cascade

template <int BLOCK, int ITEMS, bool SKIP_RULE>
__global__ void __launch_bounds__(BLOCK)
portcv_cascade_compact_count(const int* __restrict__ status, const unsigned char* __restrict__ row_end, int n,
                             int* __restrict__ tile_counts) {
    using namespace portcv_cascade;
    __shared__ int s_warp[BLOCK / 32];
    const int tile = blockIdx.x * BLOCK * ITEMS;
    int c = 0;
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) c += kept<SKIP_RULE>(status, row_end, n, tile + j * BLOCK + (int)threadIdx.x);
    block_sum_store<BLOCK>(c, s_warp, tile_counts + blockIdx.x);
}

// Thread t owns a contiguous run of ceil(tiles / NT) tile counts.
template <int NT>
__global__ void __launch_bounds__(NT)
portcv_cascade_compact_offsets(int* __restrict__ tile_counts, int tiles, int capacity, int* __restrict__ count) {
    using namespace portcv_cascade;
    __shared__ int s_warp[NT / 32];
    counts_to_offsets<NT>(tile_counts, tiles, capacity, count, s_warp);
}

template <int BLOCK, int ITEMS, bool SKIP_RULE>
__global__ void __launch_bounds__(BLOCK)
portcv_cascade_compact_scatter(const int* __restrict__ status, const unsigned char* __restrict__ row_end, int n,
                               const int* __restrict__ tile_offsets, const int* __restrict__ count, int capacity,
                               int* __restrict__ plan) {
    using namespace portcv_cascade;
    __shared__ int s_warp[BLOCK / 32];
    const int tile = blockIdx.x * BLOCK * ITEMS;
    long long base = tile_offsets[blockIdx.x];
    for (int j = 0; j < ITEMS; ++j) {  // every thread runs every round: the scan syncs the block
        const int i = tile + j * BLOCK + (int)threadIdx.x;
        const int k = kept<SKIP_RULE>(status, row_end, n, i);
        int round_total;
        const int rank = block_exclusive_scan<BLOCK>(k, s_warp, round_total);
        if (k && base + rank < capacity) plan[base + rank] = i;
        base += round_total;
    }
    // Slots count..capacity-1: the scatter writes none of them, so no ordering is needed.
    const long long stored = *count;
    const long long G = (long long)gridDim.x * BLOCK;
    for (long long k = stored + (long long)blockIdx.x * BLOCK + threadIdx.x; k < capacity; k += G) plan[k] = 0;
}

// ---------------------------------------------------------------------------------------------
// The packed pyramid in one launch (the portable version: _cascade.py, pyramid_kernel). Packed
// pixel p < n takes column entry xtab[xmap[p]] = (x0, x1, wx0, wx1) and row entry
// ytab[ymap[p]] = (y0 * W, y1 * W, wy0, wy1) of its level (Q8 weights; entry 0 of both tables
// has zero weights: a fill pixel, 0) and is
//   (wy0 (wx0 g[y0 W + x0] + wx1 g[y0 W + x1]) + wy1 (wx0 g[y1 W + x0] + wx1 g[y1 W + x1]) + 2^15) >> 16,
// at most 256 * 256 * 255 + 2^15 < 2^31: int arithmetic, exact. Grid-stride, any launch shape.
__global__ void portcv_cascade_pyramid(const unsigned char* __restrict__ gray, const int* __restrict__ xmap,
                                       const int* __restrict__ ymap, const int4* __restrict__ xtab,
                                       const int4* __restrict__ ytab, int n, unsigned char* __restrict__ out) {
    const int stride = gridDim.x * blockDim.x;
    for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < n; p += stride) {
        const int4 xe = __ldg(xtab + __ldg(xmap + p));
        const int4 ye = __ldg(ytab + __ldg(ymap + p));
        const int h0 = xe.z * (int)__ldg(gray + ye.x + xe.x) + xe.w * (int)__ldg(gray + ye.x + xe.y);
        const int h1 = xe.z * (int)__ldg(gray + ye.y + xe.x) + xe.w * (int)__ldg(gray + ye.y + xe.y);
        out[p] = (unsigned char)((ye.z * h0 + ye.w * h1 + 32768) >> 16);
    }
}

// The end of a detection (the portable version: _cascade.py, candidates_kernel): out[0] = *count
// (the plan's length), out[1] = *n_kept (the plan slots that passed the later stages, from a
// compaction of their statuses into keep), out[2 + k] = plan[keep[k]] for k < *n_kept, else 0;
// k < limit. keep and plan hold `capacity` entries and *n_kept <= capacity. Grid-stride.
__global__ void portcv_cascade_candidates(const int* __restrict__ plan, const int* __restrict__ keep,
                                          const int* __restrict__ count, const int* __restrict__ n_kept, int capacity,
                                          int limit, int* __restrict__ out) {
    const int stride = gridDim.x * blockDim.x;
    const int kept = *n_kept;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < limit + 2; i += stride) {
        int v;
        if (i == 0) {
            v = *count;
        } else if (i == 1) {
            v = kept;
        } else {
            const int k = i - 2;
            v = (k < kept && k < capacity) ? plan[keep[k]] : 0;
        }
        out[i] = v;
    }
}

// OpenCV's groupRectangles (eps, min_neighbors) and the clip to the image, on the device, for
// the candidates of one detection (`cand`, as portcv_cascade_candidates writes it). One block;
// the portable version is _cascade.py's group_kernel, the host reference
// portcv/detect/_group.py (group_rectangles_impl, then clip_rects); every step below is their
// arithmetic:
// 1. rect of window w: rint(float(x_w) * f), ..., rint(float(window) * f), f the level's float
//    factor (candidates_to_rects);
// 2. classes = connected components of SimilarRects (|dx|, |dy|, |dright|, |dbottom| <= delta,
//    delta = eps * (min(w) + min(h)) * 0.5 in double), labelled by their smallest member: rounds
//    of hooking (atomicMin of the larger root onto the smaller) and pointer jumping until a round
//    hooks nothing; classes are numbered in the order of their smallest member (cv::partition);
// 3. average rect: integer sums, rint(float(sum) * (1.f / n)); dx = rint(w * eps) in double;
// 4. a class is kept when n > min_neighbors and no other big class (expanded by its dx, dy)
//    contains it with n_j > max(3, n_i) or n_i < 3; then clipped, empty clips dropped.
// res: [n candidates, m boxes, then (x, y, w, h, neighbours) per box, in class order, zeros after]
// (2 + 5 * limit ints; limit = the portable version's capacity). When cand[1] > limit, m = -1
// and the rest is zeros: the host groups the candidates itself. scratch: 16 * limit ints.
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
portcv_cascade_group(const int* __restrict__ cand, int limit, const int* __restrict__ win_x,
                     const int* __restrict__ win_y, const int* __restrict__ win_level,
                     const float* __restrict__ factors, int window_w, int window_h, int min_neighbors, double eps,
                     int width, int height, int* __restrict__ scratch, int* __restrict__ res) {
    __shared__ int s_warp[BLOCK / 32];
    const int tid = threadIdx.x;
    const int total = cand[1];
    if (total > limit) {
        for (int k = tid; k < 2 + 5 * limit; k += BLOCK) res[k] = k == 0 ? total : (k == 1 ? -1 : 0);
        return;
    }
    const int n = total;
    int* rx = scratch;  // per candidate, then per class (the class averages)
    int* ry = rx + limit;
    int* rw = ry + limit;
    int* rh = rw + limit;
    int* label = rh + limit;  // per candidate, then the class's dx
    int* next = label + limit;  // pointer jumping, then the class's dy
    int* rank = next + limit;  // class number of each root
    int* members = rank + limit;
    long long* sums = reinterpret_cast<long long*>(members + limit);  // 4 per class

    // 1. Candidate rects.
    for (int i = tid; i < n; i += BLOCK) {
        const int w = cand[2 + i];
        const float f = factors[win_level[w]];
        rx[i] = __float2int_rn(__fmul_rn((float)win_x[w], f));
        ry[i] = __float2int_rn(__fmul_rn((float)win_y[w], f));
        rw[i] = __float2int_rn(__fmul_rn((float)window_w, f));
        rh[i] = __float2int_rn(__fmul_rn((float)window_h, f));
        label[i] = i;
        members[i] = 0;
        sums[4 * i] = sums[4 * i + 1] = sums[4 * i + 2] = sums[4 * i + 3] = 0;
    }
    __syncthreads();

    // 2. Components: hook, then jump pointers until every label is a root; stop when nothing hooked.
    for (;;) {
        int hooked = 0;
        for (int i = tid >> 5; i < n; i += BLOCK / 32) {  // a warp per candidate i, lanes over j > i
            for (int j = i + 1 + (tid & 31); j < n; j += 32) {
                const double delta = __dmul_rn(__dmul_rn(eps, (double)(min(rw[i], rw[j]) + min(rh[i], rh[j]))), 0.5);
                if (fabs((double)(rx[i] - rx[j])) <= delta && fabs((double)(ry[i] - ry[j])) <= delta &&
                    fabs((double)(rx[i] + rw[i] - rx[j] - rw[j])) <= delta &&
                    fabs((double)(ry[i] + rh[i] - ry[j] - rh[j])) <= delta) {
                    const int a = label[i], b = label[j];
                    if (a != b) {
                        atomicMin(&label[max(a, b)], min(a, b));
                        hooked = 1;
                    }
                }
            }
        }
        if (!__syncthreads_or(hooked)) break;
        for (;;) {
            int moved = 0;
            for (int i = tid; i < n; i += BLOCK) next[i] = label[label[i]];
            __syncthreads();
            for (int i = tid; i < n; i += BLOCK) {
                moved |= next[i] != label[i];
                label[i] = next[i];
            }
            if (!__syncthreads_or(moved)) break;
        }
    }

    // 3. Class numbers in the order of the smallest member (a root), then integer sums.
    const int per = (n + BLOCK - 1) / BLOCK;
    const int begin = min(n, tid * per), end = min(n, begin + per);
    int roots = 0;
    for (int i = begin; i < end; ++i) roots += label[i] == i;
    int classes;
    int r = block_exclusive_scan<BLOCK>(roots, s_warp, classes);
    for (int i = begin; i < end; ++i)
        if (label[i] == i) rank[i] = r++;
    __syncthreads();
    for (int i = tid; i < n; i += BLOCK) {
        const int c = rank[label[i]];
        atomicAdd(&members[c], 1);
        atomicAdd(reinterpret_cast<unsigned long long*>(&sums[4 * c]), (unsigned long long)(long long)rx[i]);
        atomicAdd(reinterpret_cast<unsigned long long*>(&sums[4 * c + 1]), (unsigned long long)(long long)ry[i]);
        atomicAdd(reinterpret_cast<unsigned long long*>(&sums[4 * c + 2]), (unsigned long long)(long long)rw[i]);
        atomicAdd(reinterpret_cast<unsigned long long*>(&sums[4 * c + 3]), (unsigned long long)(long long)rh[i]);
    }
    __syncthreads();

    // 4. Averages (rx.. now per class), the containment test, the clip, the ordered output.
    for (int c = tid; c < classes; c += BLOCK) {
        const float s = __fdiv_rn(1.f, (float)members[c]);
        rx[c] = __float2int_rn(__fmul_rn(__ll2float_rn(sums[4 * c]), s));
        ry[c] = __float2int_rn(__fmul_rn(__ll2float_rn(sums[4 * c + 1]), s));
        rw[c] = __float2int_rn(__fmul_rn(__ll2float_rn(sums[4 * c + 2]), s));
        rh[c] = __float2int_rn(__fmul_rn(__ll2float_rn(sums[4 * c + 3]), s));
        label[c] = __double2int_rn(__dmul_rn((double)rw[c], eps));
        next[c] = __double2int_rn(__dmul_rn((double)rh[c], eps));
    }
    __syncthreads();
    const int cper = (classes + BLOCK - 1) / BLOCK;
    const int cbegin = min(classes, tid * cper), cend = min(classes, cbegin + cper);
    int kept = 0;
    for (int i = cbegin; i < cend; ++i) {
        bool keep = members[i] > min_neighbors;
        for (int j = 0; keep && j < classes; ++j) {
            if (j == i || members[j] <= min_neighbors) continue;
            const bool inside = rx[i] >= rx[j] - label[j] && ry[i] >= ry[j] - next[j] &&
                                rx[i] + rw[i] <= rx[j] + rw[j] + label[j] && ry[i] + rh[i] <= ry[j] + rh[j] + next[j];
            if (inside && (members[j] > max(3, members[i]) || members[i] < 3)) keep = false;
        }
        const int x0 = max(rx[i], 0), y0 = max(ry[i], 0);
        const int x1 = min(rx[i] + rw[i], width), y1 = min(ry[i] + rh[i], height);
        rank[i] = keep && x1 > x0 && y1 > y0;  // rank is free: reused as the keep flag
        kept += rank[i];
    }
    int m;
    int o = block_exclusive_scan<BLOCK>(kept, s_warp, m);
    for (int i = cbegin; i < cend; ++i) {
        if (!rank[i]) continue;
        const int x0 = max(rx[i], 0), y0 = max(ry[i], 0);
        int* box = res + 2 + 5 * o++;
        box[0] = x0;
        box[1] = y0;
        box[2] = min(rx[i] + rw[i], width) - x0;
        box[3] = min(ry[i] + rh[i], height) - y0;
        box[4] = members[i];
    }
    for (int k = 2 + 5 * m + tid; k < 2 + 5 * limit; k += BLOCK) res[k] = 0;
    if (tid == 0) { res[0] = total; res[1] = m; }
}
