// Helpers shared by every portcv CUDA source (#include "common.cuh"; the launcher adds this
// folder to NVRTC's include path).
#pragma once

enum Border { REFLECT101 = 0, REPLICATE = 1, CONSTANT = 2 };

// Index remapping; portcv/_border.py (border_indices) is the same rule on the host:
// reflect101 repeats with period 2(n-1), like np.pad(mode="reflect"); -1 means "constant".
__device__ __forceinline__ int remap(int i, int n, int border) {
    if (i >= 0 && i < n) return i;
    if (border == REFLECT101) {
        if (n == 1) return 0;
        const int period = 2 * (n - 1);
        i %= period;
        if (i < 0) i += period;
        return i < n ? i : period - i;
    }
    if (border == REPLICATE) return i < 0 ? 0 : n - 1;
    return -1;
}

template <typename T> struct Limits;
template <> struct Limits<unsigned char> { static constexpr int lo = 0, hi = 255; };
template <> struct Limits<short> { static constexpr int lo = -32768, hi = 32767; };
template <> struct Limits<int> { static constexpr int lo = -2147483647 - 1, hi = 2147483647; };

// The one rounding step of every integer filter: int32 accumulator -> OutT. src/portcv/filters/_separable.py
// (`finish_accumulator`, `_FINISH_CODE`) is the same rule on the host; p0, p1 are its finish parameters.
// ROUND_SHIFT: (acc + 2^(s-1)) >> s (round half up; arithmetic shift), saturated to OutT.
// BOX_MULTIPLY: OpenCV's blur for window area A <= 256: ((acc + dd) * ds) >> 23 in uint32.
// BOX_FLOAT32: OpenCV's blur for A > 256: rint(float32(acc) * float32(1/A)), p1 = the float's
// bits. A lone multiply (no add to contract) with round-half-even is IEEE-exact everywhere.
// FLOOR_DIV: floor(acc / p0) for p0 > 0 (exact integer division), saturated to OutT: the webcam
// report's mean filter, which truncates.
enum Finish { ROUND_SHIFT = 0, BOX_MULTIPLY = 1, BOX_FLOAT32 = 2, FLOOR_DIV = 3 };

template <typename OutT, int F>
__device__ __forceinline__ OutT finish(int acc, int p0, int p1) {
    if constexpr (F == ROUND_SHIFT) {
        if (p0 > 0) acc = (acc + (1 << (p0 - 1))) >> p0;
        acc = max(Limits<OutT>::lo, min(Limits<OutT>::hi, acc));
        return (OutT)acc;
    } else if constexpr (F == BOX_MULTIPLY) {
        return (OutT)(((unsigned int)(acc + p0) * (unsigned int)p1) >> 23);
    } else if constexpr (F == BOX_FLOAT32) {
        return (OutT)__float2int_rn(__fmul_rn((float)acc, __int_as_float(p1)));
    } else {
        int q = acc / p0;        // C++ truncates toward zero ...
        if (acc % p0 < 0) --q;   // ... so step down for a negative remainder: floor, like Python's //
        q = max(Limits<OutT>::lo, min(Limits<OutT>::hi, q));
        return (OutT)q;
    }
}

// Block-cooperative load of a stencil's input window into shared memory. Shared byte (r, cb) is
// global byte column gx0 + cb of image row gy0 + r, both remapped by `border` (pixel columns of
// CH interleaved bytes; outside a constant border: border_value); 16 zero bytes follow each row,
// so a thread may read whole words past the window's end. `in` is the plane's first byte; a row
// is W*CH bytes. When the window's columns lie inside the image and rows are 16-byte aligned,
// rows load as uint4 vectors and only the row index is remapped (the tile interior); edge
// tiles remap every byte (used by the separable, median, convolve and gradient kernels).
template <int NROWS, int NCOLS, int CH, int NTHREADS, int PITCH>
__device__ __forceinline__ void load_tile(unsigned char (*s)[PITCH], const unsigned char* __restrict__ in,
                                          bool aligned, int H, int W, int gx0, int gy0, int border,
                                          int border_value) {
    static_assert(NCOLS % 16 == 0 && PITCH >= NCOLS + 16, "window rows must be whole uint4s plus 16 bytes");
    const int tid = threadIdx.x;
    const int WB = W * CH;
    const bool vector_cols = aligned && ((WB & 15) == 0) && gx0 >= 0 && gx0 + NCOLS <= WB;
    if (vector_cols) {
        constexpr int VPR = NCOLS / 16;
        const unsigned int fill = (unsigned int)border_value * 0x01010101u;
        for (int i = tid; i < NROWS * VPR; i += NTHREADS) {
            const int r = i / VPR, v = i - r * VPR;
            const int y = remap(gy0 + r, H, border);
            const uint4 val = y < 0 ? make_uint4(fill, fill, fill, fill)
                                    : *reinterpret_cast<const uint4*>(in + (size_t)y * WB + gx0 + v * 16);
            *reinterpret_cast<uint4*>(&s[r][v * 16]) = val;
        }
    } else {
        for (int i = tid; i < NROWS * NCOLS; i += NTHREADS) {
            const int r = i / NCOLS, cb = i - r * NCOLS;
            const int y = remap(gy0 + r, H, border);
            const int gb = gx0 + cb;
            const int x = gb >= 0 ? gb / CH : -((CH - 1 - gb) / CH);  // floor division
            const int c = gb - x * CH;
            const int xr = remap(x, W, border);
            s[r][cb] = (y < 0 || xr < 0) ? (unsigned char)border_value : in[(size_t)y * WB + xr * CH + c];
        }
    }
    for (int r = tid; r < NROWS; r += NTHREADS) *reinterpret_cast<uint4*>(&s[r][NCOLS]) = make_uint4(0, 0, 0, 0);
}

// Byte `b` of a little-endian run of 32-bit words (the window a thread holds in registers).
template <int NW>
__device__ __forceinline__ int window_byte(const unsigned int (&w)[NW], int b) {
    return (int)((w[b >> 2] >> ((b & 3) * 8)) & 255u);
}

// Four consecutive outputs at `out`: one 4-, 8- or 16-byte vector store when `vector_store`
// (the row length is a multiple of 4, so `out` is aligned), else the first `valid` one by one.
template <typename OutT>
__device__ __forceinline__ void store4(OutT* out, const OutT (&o)[4], int valid, bool vector_store) {
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
            if (e < valid) out[e] = o[e];
    }
}

// Warp and block reductions shared by the compaction kernels (codec/_delta.cu, detect/_cascade_cuda.cu).
__device__ __forceinline__ int warp_sum(int v) {
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
    return v;
}

// Exclusive scan of v over the block (BLOCK a multiple of 32, at most 1024); `total` = the sum.
// s_warp holds BLOCK/32 ints. Contains __syncthreads: every thread of the block must call it.
template <int BLOCK>
__device__ __forceinline__ int block_exclusive_scan(int v, int* s_warp, int& total) {
    constexpr int NW = BLOCK / 32;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int incl = v;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const int t = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d) incl += t;
    }
    if (lane == 31) s_warp[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        int w = lane < NW ? s_warp[lane] : 0;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const int t = __shfl_up_sync(0xffffffffu, w, d);
            if (lane >= d) w += t;
        }
        if (lane < NW) s_warp[lane] = w;  // inclusive warp prefixes
    }
    __syncthreads();
    total = s_warp[NW - 1];
    const int before = warp > 0 ? s_warp[warp - 1] : 0;
    __syncthreads();  // s_warp may be reused by the caller after this
    return before + incl - v;
}

// Thread 0 stores the sum of v over the block at *out (BLOCK a multiple of 32, at most 1024).
template <int BLOCK>
__device__ __forceinline__ void block_sum_store(int v, int* s_warp, int* out) {
    v = warp_sum(v);
    if ((threadIdx.x & 31) == 0) s_warp[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        int w = threadIdx.x < BLOCK / 32 ? s_warp[threadIdx.x] : 0;
        w = warp_sum(w);
        if (threadIdx.x == 0) *out = w;
    }
}

// The middle pass of a compaction, for one block of NT threads: per-tile counts -> exclusive
// offsets, in place, and *count = min(total, capacity). Thread t owns a contiguous run of
// ceil(tiles / NT) tiles, so any number of tiles takes one block.
template <int NT>
__device__ __forceinline__ void counts_to_offsets(int* tile_counts, int tiles, int capacity, int* count, int* s_warp) {
    const int per = (tiles + NT - 1) / NT;
    const long long begin = (long long)threadIdx.x * per;
    const long long end = begin + per < tiles ? begin + per : (long long)tiles;
    int sum = 0;
    for (long long i = begin; i < end; ++i) sum += tile_counts[i];
    int total;
    int offset = block_exclusive_scan<NT>(sum, s_warp, total);
    for (long long i = begin; i < end; ++i) {
        const int t = tile_counts[i];
        tile_counts[i] = offset;
        offset += t;
    }
    if (threadIdx.x == 0) *count = min(total, capacity);
}
