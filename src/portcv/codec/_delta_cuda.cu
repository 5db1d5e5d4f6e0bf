// Frame-delta encoder and decoder of the Webcam Streaming & Filters report (section 2), done with a defined order.
// src/portcv/codec/_delta.py holds the portable version (the reference) and the launchers.
//
// A byte is *changed* when |frame - reference| > threshold. The report appends changed bytes
// with atomicInc, so their order depends on thread timing; here they come out in ascending
// position through prefix-sum compaction, in three launches and no atomics:
//   1. portcv_delta_count: each block counts the changed bytes of its 4 KiB tile (one uint4 of
//      the frame and of the reference per thread, per-byte SIMD compare: __vabsdiffu4 +
//      __vcmpgtu4), one int per tile.
//   2. portcv_delta_tile_offsets: one block turns the tile counts into exclusive offsets (a
//      block scan over per-thread runs) and writes count = min(total, capacity).
//   3. portcv_delta_compact: each block recomputes its flags (the tile is usually still in L2),
//      ranks them with a block scan, stages (position, diff) pairs in shared memory and writes
//      them out coalesced; sent bytes are those of rank < capacity. The new reference is
//      select(sent, frame, reference) per 16-byte vector: written whole into a fresh buffer or,
//      in place (IN_PLACE), only for the vectors holding a sent byte (the report's "store in
//      global memory only if needed"). Finally the grid zeroes slots count..capacity-1.
// portcv_delta_apply is the decoder: out[positions[k]] += diffs[k] (mod 256) for k < count.
//
// Byte indices are 64-bit; values of positions, counts and offsets are < 2^31 (the launcher
// refuses larger frames), so they fit int.
#include "common.cuh"

namespace portcv_delta {

constexpr int VEC = 16;

// The 16 bytes start..start+15 of a and b as little-endian words; bytes at or past n read as 0
// in both, so they never count as changed.
__device__ __forceinline__ void load_pair(const unsigned char* a, const unsigned char* b, long long start,
                                          long long n, bool aligned, unsigned int (&wa)[4],
                                          unsigned int (&wb)[4]) {
    if (aligned && start + VEC <= n) {
        const uint4 va = *reinterpret_cast<const uint4*>(a + start);
        const uint4 vb = *reinterpret_cast<const uint4*>(b + start);
        wa[0] = va.x; wa[1] = va.y; wa[2] = va.z; wa[3] = va.w;
        wb[0] = vb.x; wb[1] = vb.y; wb[2] = vb.z; wb[3] = vb.w;
    } else {
#pragma unroll
        for (int w = 0; w < 4; ++w) {
            unsigned int xa = 0, xb = 0;
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const long long i = start + 4 * w + k;
                if (i < n) {
                    xa |= (unsigned int)a[i] << (8 * k);
                    xb |= (unsigned int)b[i] << (8 * k);
                }
            }
            wa[w] = xa;
            wb[w] = xb;
        }
    }
}

// Bit j set <=> byte j changed: per byte |f - r| > threshold (unsigned SIMD: no widening).
__device__ __forceinline__ unsigned int changed_mask(const unsigned int (&f)[4], const unsigned int (&r)[4],
                                                     unsigned int threshold4) {
    unsigned int m = 0;
#pragma unroll
    for (int w = 0; w < 4; ++w) {
        const unsigned int g = __vcmpgtu4(__vabsdiffu4(f[w], r[w]), threshold4);  // 0xff per changed byte
        m |= (((g >> 7) & 1u) | ((g >> 14) & 2u) | ((g >> 21) & 4u) | ((g >> 28) & 8u)) << (4 * w);
    }
    return m;
}

// 4 bits -> 4 bytes of 0x00 / 0xff (the shifted copies do not overlap, so nothing carries).
__device__ __forceinline__ unsigned int byte_mask(unsigned int bits4) {
    return ((bits4 * 0x00204081u) & 0x01010101u) * 0xffu;
}

// w[q] for a run-time q in 0..3, by selects (a dynamic index would put w in local memory).
__device__ __forceinline__ unsigned int pick(const unsigned int (&w)[4], int q) {
    return q < 2 ? (q == 0 ? w[0] : w[1]) : (q == 2 ? w[2] : w[3]);
}

// Zero elements [begin, end) of `a` (16-byte aligned base) with uint4 stores in the aligned
// middle; thread g of G handles every G-th store.
template <typename T>
__device__ __forceinline__ void zero_range(T* a, long long begin, long long end, long long g, long long G) {
    constexpr int PER = VEC / (int)sizeof(T);
    if (begin >= end) return;
    const long long mid0 = (begin + PER - 1) / PER * PER;
    const long long mid1 = end / PER * PER;
    if (mid0 >= mid1) {
        for (long long i = begin + g; i < end; i += G) a[i] = T(0);
        return;
    }
    for (long long i = begin + g; i < mid0; i += G) a[i] = T(0);
    for (long long v = mid0 / PER + g; v < mid1 / PER; v += G)
        reinterpret_cast<uint4*>(a)[v] = make_uint4(0u, 0u, 0u, 0u);
    for (long long i = mid1 + g; i < end; i += G) a[i] = T(0);
}

}  // namespace portcv_delta

// Pass 1: tile_counts[b] = changed bytes in bytes [b*BLOCK*16, (b+1)*BLOCK*16).
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
portcv_delta_count(const unsigned char* __restrict__ frame, const unsigned char* __restrict__ reference,
                   long long n, int threshold, int aligned, int* __restrict__ tile_counts) {
    using namespace portcv_delta;
    __shared__ int s_warp[BLOCK / 32];
    const long long start = ((long long)blockIdx.x * BLOCK + threadIdx.x) * VEC;
    int c = 0;
    if (start < n) {
        unsigned int f[4], r[4];
        load_pair(frame, reference, start, n, aligned != 0, f, r);
        c = __popc(changed_mask(f, r, (unsigned int)threshold * 0x01010101u));
    }
    block_sum_store<BLOCK>(c, s_warp, tile_counts + blockIdx.x);
}

// Pass 2 (one block of NT threads): tile_counts -> exclusive offsets, in place; *count = min(total,
// capacity). Thread t owns a contiguous run of ceil(tiles / NT) tiles.
template <int NT>
__global__ void __launch_bounds__(NT)
portcv_delta_tile_offsets(int* __restrict__ tile_counts, int tiles, int capacity, int* __restrict__ count) {
    using namespace portcv_delta;
    __shared__ int s_warp[NT / 32];
    counts_to_offsets<NT>(tile_counts, tiles, capacity, count, s_warp);
}

// Pass 3: compaction in ascending position, the new reference, and zeros in the unused slots.
// With IN_PLACE, new_reference == reference (hence no __restrict__ on either): each 16-byte
// vector is read and written by the same thread only.
template <int BLOCK, bool IN_PLACE>
__global__ void __launch_bounds__(BLOCK)
portcv_delta_compact(const unsigned char* __restrict__ frame, const unsigned char* reference,
                     unsigned char* new_reference, long long n, int threshold, int aligned,
                     const int* __restrict__ tile_offsets, const int* __restrict__ count, int capacity,
                     int* __restrict__ positions, signed char* __restrict__ diffs) {
    using namespace portcv_delta;
    constexpr int TILE = BLOCK * VEC;
    static_assert(TILE <= 65536, "tile-local offsets are 16-bit");
    __shared__ unsigned short s_local[TILE];  // tile-local byte offset of each changed byte, in order
    __shared__ unsigned char s_diff[TILE];
    __shared__ int s_warp[BLOCK / 32];

    const long long tile_start = (long long)blockIdx.x * TILE;
    const long long start = tile_start + (long long)threadIdx.x * VEC;
    const bool inside = start < n;
    const bool vector_io = aligned != 0 && start + VEC <= n;
    unsigned int f[4] = {0u, 0u, 0u, 0u}, r[4] = {0u, 0u, 0u, 0u};
    unsigned int mask = 0;
    if (inside) {
        load_pair(frame, reference, start, n, aligned != 0, f, r);
        mask = changed_mask(f, r, (unsigned int)threshold * 0x01010101u);
    }
    const int c = __popc(mask);
    int block_total;
    const int offset = block_exclusive_scan<BLOCK>(c, s_warp, block_total);
    const int base = tile_offsets[blockIdx.x];

    // Sent = rank < capacity: the thread's first `room` changed bytes (all of them but in the
    // tile that straddles the capacity).
    const long long room = (long long)capacity - base - offset;
    unsigned int sent = mask;
    if (room < c) {
        sent = 0;
        unsigned int m = mask;
        for (long long k = 0; k < room; ++k) {
            const unsigned int low = m & (0u - m);
            sent |= low;
            m ^= low;
        }
    }

    // Stage this thread's changed bytes at their block ranks.
    {
        unsigned int d[4];
#pragma unroll
        for (int w = 0; w < 4; ++w) d[w] = __vsub4(f[w], r[w]);  // per byte (f - r) mod 256
        unsigned int m = mask;
        int k = offset;
        while (m) {
            const int j = __ffs(m) - 1;
            s_local[k] = (unsigned short)(threadIdx.x * VEC + j);
            s_diff[k] = (unsigned char)(pick(d, j >> 2) >> (8 * (j & 3)));
            ++k;
            m &= m - 1;
        }
    }

    // New reference: frame where sent, reference elsewhere (the report's error feedback).
    if (inside && (!IN_PLACE || sent != 0)) {
        unsigned int out[4];
#pragma unroll
        for (int w = 0; w < 4; ++w) {
            const unsigned int bm = byte_mask((sent >> (4 * w)) & 15u);
            out[w] = (f[w] & bm) | (r[w] & ~bm);
        }
        if (vector_io) {
            *reinterpret_cast<uint4*>(new_reference + start) = make_uint4(out[0], out[1], out[2], out[3]);
        } else {
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                const long long i = start + j;
                if (i < n && (!IN_PLACE || ((sent >> j) & 1u)))
                    new_reference[i] = (unsigned char)(out[j >> 2] >> (8 * (j & 3)));
            }
        }
    }
    __syncthreads();

    // Coalesced write-out of the staged entries whose rank fits.
    const long long fit = (long long)capacity - base;
    const int limit = (int)(fit < block_total ? (fit > 0 ? fit : 0) : block_total);
    for (int i = threadIdx.x; i < limit; i += BLOCK) {
        positions[base + i] = (int)(tile_start + s_local[i]);
        diffs[base + i] = (signed char)s_diff[i];
    }

    // Slots count..capacity-1 hold zeros (defined contents, equal on every backend).
    const long long stored = *count;
    const long long g = (long long)blockIdx.x * BLOCK + threadIdx.x;
    const long long G = (long long)gridDim.x * BLOCK;
    zero_range(positions, stored, capacity, g, G);
    zero_range(diffs, stored, capacity, g, G);
}

// Decoder: out[positions[k]] += diffs[k] (mod 256) for k < min(*count, capacity); positions
// outside [0, n) are skipped. Positions are distinct, so no two threads touch the same byte.
template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
portcv_delta_apply(unsigned char* __restrict__ out, long long n, const int* __restrict__ positions,
                   const signed char* __restrict__ diffs, const long long* __restrict__ count, int capacity) {
    const long long c = *count;
    const long long k_end = c < 0 ? 0 : (c < capacity ? c : (long long)capacity);
    for (long long k = (long long)blockIdx.x * BLOCK + threadIdx.x; k < k_end; k += (long long)gridDim.x * BLOCK) {
        const int p = positions[k];
        if (p >= 0 && p < n) out[p] = (unsigned char)(out[p] + (unsigned char)diffs[k]);
    }
}
