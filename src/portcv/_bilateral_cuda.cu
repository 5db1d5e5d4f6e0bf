// Joint bilateral filter on CUDA (OpenCV's jointBilateralFilter and the depth-colour bilateral
// filter of portcv.depth.dcbf), one thread per output pixel (with KEEP, one warp per hole). Compiled by
// portcv.backends.cupy (--std=c++17 --fmad=false); launched by src/portcv/filters/_bilateral_cuda.py. The portable
// version (src/portcv/filters/_bilateral.py: _bilateral_sums) is the reference, and every step
// below is its integer arithmetic, per window offset k with spatial weight Ws[k]:
//   delta = sum_c |g_n[c] - g[c]| (L1) or sum_c (g_n[c] - g[c])^2 (L2)   (int32)
//   w = (table[delta] Ws[k] + 2^14) >> 15   (table[delta] Ws[k] <= 2^30: int32)
//   w = 0 where the neighbour's value is the hole (HOLE)
//   N += w v (int32, or int64 when WIDE), W += w   (exact sums: the order does not matter)
// then out = (N + W / 2) / W for W > 0 (non-negative: C's division is the floor); W = 0 gives the
// hole (HOLE) or 0; KEEP keeps every value that is not the hole (and walks no window for it).
// Neighbours outside the image follow `border` per axis (common.cuh's remap, the rule of
// pad_axis); a constant border reads guide 0 and value `fill`.
// Layout: frames of H x W pixels, CG interleaved guide channels, CV value channels.

#include "common.cuh"

template <bool WIDE> struct Accumulator { using type = int; };
template <> struct Accumulator<true> { using type = long long; };

// Where window offset k's neighbour is: its index in the frame (false: outside, constant border).
// Bordered remaps rows and columns by `border`; Interior adds the offset's index step dy W + dx,
// for a centre whose whole window is inside the frame.
struct Bordered {
    const int2* __restrict__ offsets;  // (dy, dx) as .x, .y
    int H, W, y, x, border;
    __device__ __forceinline__ bool operator()(int k, long long& at) const {
        const int2 o = offsets[k];
        const int ny = remap(y + o.x, H, border), nx = remap(x + o.y, W, border);
        at = (long long)ny * W + nx;
        return ny >= 0 && nx >= 0;
    }
};
struct Interior {
    const int* __restrict__ steps;
    long long centre;
    __device__ __forceinline__ bool operator()(int k, long long& at) const {
        at = centre + steps[k];
        return true;
    }
};

// One output pixel's sums over the window offsets k0, k0 + step, ...: num[c] (Acc) and the
// returned den (int). `centre` is the pixel's index in the frame.
template <typename V, int CG, int CV, bool L2, bool HOLE, typename Acc, typename Locate>
__device__ __forceinline__ int window_sums(const unsigned char* __restrict__ gf, const V* __restrict__ vf,
                                           const int* __restrict__ table, const int* __restrict__ spatial,
                                           int taps, long long centre, const Locate& locate, int fill, Acc* num,
                                           int k0 = 0, int step = 1) {
    int g0[CG];
#pragma unroll
    for (int c = 0; c < CG; ++c) g0[c] = gf[centre * CG + c];
#pragma unroll
    for (int c = 0; c < CV; ++c) num[c] = 0;
    int den = 0;
    for (int k = k0; k < taps; k += step) {
        long long at;
        const bool inside = locate(k, at);
        int delta = 0;
#pragma unroll
        for (int c = 0; c < CG; ++c) {
            const int d = (inside ? (int)gf[at * CG + c] : 0) - g0[c];
            delta += L2 ? d * d : abs(d);
        }
        int w = (table[delta] * spatial[k] + (1 << 14)) >> 15;
        V v[CV];
#pragma unroll
        for (int c = 0; c < CV; ++c) v[c] = inside ? vf[at * CV + c] : (V)fill;
        if constexpr (HOLE) {
            if ((int)v[0] == fill) w = 0;  // HOLE: one value channel, fill = the hole
        }
#pragma unroll
        for (int c = 0; c < CV; ++c) num[c] += (Acc)w * (Acc)v[c];
        den += w;
    }
    return den;
}

// Every pixel walks the window (joint_bilateral; dcbf with update="all").
template <typename V, int CG, int CV, bool L2, bool WIDE, bool HOLE>
__global__ void portcv_joint_bilateral(const unsigned char* __restrict__ guide, const V* __restrict__ values,
                                       const int* __restrict__ table, const int* __restrict__ spatial,
                                       const int2* __restrict__ offsets, int taps, int frames, int H, int W,
                                       int border, int fill, V* __restrict__ out) {
    using Acc = typename Accumulator<WIDE>::type;
    const long long x64 = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // past 2^31 in the last block
    if (x64 >= W) return;
    const int x = (int)x64;
    for (int r = blockIdx.y; r < frames * H; r += gridDim.y) {
        const int f = r / H, y = r - f * H;
        Acc num[CV];
        const int den = window_sums<V, CG, CV, L2, HOLE>(guide + (long long)f * H * W * CG, values + (long long)f * H * W * CV,
                                                         table, spatial, taps, (long long)y * W + x,
                                                         Bordered{offsets, H, W, y, x, border}, fill, num);
        V* o = out + ((long long)f * H * W + (long long)y * W + x) * CV;
#pragma unroll
        for (int c = 0; c < CV; ++c) o[c] = (V)(den > 0 ? (num[c] + (Acc)(den / 2)) / (Acc)den : HOLE ? (Acc)fill : (Acc)0);
    }
}

// KEEP (dcbf's update="holes", one value channel): only the holes walk the window. The first
// kernel copies every known value and lists the holes (the list's order varies from run to run;
// each hole's result does not depend on it), the second gives each listed hole one warp: lane l
// sums the window offsets l, l + 32, ... and the lanes' sums are added by shuffles (integers: any
// order gives the same sums). Table 5's map has 7 % holes: one thread per pixel let nearly every
// warp walk the window for its one or two holes, and one thread per hole left most of the GPU
// idle on a frame's 33,000 holes.
// The list is made a block at a time: a block takes LIST_ITEMS chunks of blockDim.x pixels, each
// warp counts its holes with ballots, and one atomicAdd per block reserves the slots (one per
// hole, or one per warp with holes, on the single counter took 14 us of Table 5's frame on an
// H100: the same-address atomics queue at the L2, and the map's holes are scattered); each hole
// is written at its warp's first slot plus the hole lanes before it. The loop is uniform per
// block (the barriers) and every lane runs it (the ballots); blockDim.x is a multiple of 32 and
// the launcher gives blockDim.x / 32 + 1 slots of dynamic shared memory.
constexpr int LIST_ITEMS = 8;

template <typename V>
__global__ void portcv_bilateral_list_holes(const V* __restrict__ values, long long n, int fill,
                                            V* __restrict__ out, unsigned long long* __restrict__ count,
                                            long long* __restrict__ holes) {
    extern __shared__ unsigned long long warp_slot[];  // [warps + 1]: each warp's first slot, then the block's total
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const long long chunk = (long long)blockDim.x * LIST_ITEMS;
    for (long long first = blockIdx.x * chunk; first < n; first += gridDim.x * chunk) {
        unsigned hole_lanes[LIST_ITEMS];
        unsigned mine = 0;
#pragma unroll
        for (int it = 0; it < LIST_ITEMS; ++it) {
            const long long i = first + (long long)it * blockDim.x + threadIdx.x;
            const bool inside = i < n;
            const V v = inside ? values[i] : (V)0;
            const bool hole = inside && (int)v == fill;
            if (inside && !hole) out[i] = v;
            hole_lanes[it] = __ballot_sync(0xffffffffu, hole);
            mine += __popc(hole_lanes[it]);
        }
        if (lane == 0) warp_slot[warp] = mine;
        __syncthreads();
        if (threadIdx.x == 0) {  // the warps' counts -> their first slots
            unsigned long long total = 0;
            for (unsigned w = 0; w < warps; ++w) {
                const unsigned long long c = warp_slot[w];
                warp_slot[w] = total;
                total += c;
            }
            warp_slot[warps] = total > 0 ? atomicAdd(count, total) : 0;
        }
        __syncthreads();
        unsigned long long slot = warp_slot[warps] + warp_slot[warp];
#pragma unroll
        for (int it = 0; it < LIST_ITEMS; ++it) {
            if (hole_lanes[it] >> lane & 1u) {
                holes[slot + __popc(hole_lanes[it] & ((1u << lane) - 1u))] =
                    first + (long long)it * blockDim.x + threadIdx.x;
            }
            slot += __popc(hole_lanes[it]);
        }
        __syncthreads();  // warp_slot is rewritten by the next chunk
    }
}

// The fill's block first copies what every hole reads into shared memory: each offset's index
// step dy W + dx and spatial weight and, with SHARED_TABLE, the range table (table_len entries);
// the launcher gives 8 taps (+ 4 table_len) bytes of dynamic shared memory. A hole whose window
// is inside the frame (`reach` from every side; the launcher makes it unreachable where dy W + dx
// would not fit an int) adds the steps, the others remap by `border`.
template <typename V, int CG, bool L2, bool WIDE, bool SHARED_TABLE>
__global__ void portcv_bilateral_fill_holes(const unsigned char* __restrict__ guide, const V* __restrict__ values,
                                            const int* __restrict__ table, const int* __restrict__ spatial,
                                            const int2* __restrict__ offsets, int taps, int reach, int table_len,
                                            int H, int W, int border, int fill,
                                            const unsigned long long* __restrict__ count,
                                            const long long* __restrict__ holes, V* __restrict__ out) {
    using Acc = typename Accumulator<WIDE>::type;
    extern __shared__ int fill_shared[];  // [taps] index steps, [taps] spatial weights, [table_len] range table
    int* steps = fill_shared;
    int* weights = steps + taps;
    int* range = weights + taps;
    for (int k = threadIdx.x; k < taps; k += blockDim.x) {
        steps[k] = (int)((long long)offsets[k].x * W + offsets[k].y);  // unused where it does not fit (reach)
        weights[k] = spatial[k];
    }
    if constexpr (SHARED_TABLE) {
        for (int k = threadIdx.x; k < table_len; k += blockDim.x) range[k] = table[k];
    }
    __syncthreads();
    const int* ranges = SHARED_TABLE ? range : table;
    const long long n = (long long)*count, plane = (long long)H * W;
    const int lane = threadIdx.x & 31;  // blockDim.x is a multiple of 32 (the launcher's BLOCK)
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    // j is the same on every lane of a warp, so the whole warp reaches the shuffles together.
    for (long long j = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5; j < n; j += warps) {
        const long long i = holes[j], f = i / plane, at = i - f * plane;
        const int y = (int)(at / W), x = (int)(at - (long long)y * W);
        const unsigned char* gf = guide + f * plane * CG;
        const V* vf = values + f * plane;
        Acc num[1];
        int den;
        if (y >= reach && y < H - reach && x >= reach && x < W - reach) {  // the same on every lane
            den = window_sums<V, CG, 1, L2, true>(gf, vf, ranges, weights, taps, at, Interior{steps, at}, fill, num,
                                                  lane, 32);
        } else {
            den = window_sums<V, CG, 1, L2, true>(gf, vf, ranges, weights, taps, at,
                                                  Bordered{offsets, H, W, y, x, border}, fill, num, lane, 32);
        }
        Acc sum = num[0];
#pragma unroll
        for (int width = 16; width > 0; width >>= 1) {
            sum += __shfl_xor_sync(0xffffffffu, sum, width);
            den += __shfl_xor_sync(0xffffffffu, den, width);
        }
        if (lane == 0) out[i] = (V)(den > 0 ? (sum + (Acc)(den / 2)) / (Acc)den : (Acc)fill);
    }
}
