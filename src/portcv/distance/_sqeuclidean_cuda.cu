// Exact squared Euclidean distances of 8-bit feature vectors on int8 tensor cores (Lin et al.'s
// eq. 3): P[i][j] = |f_i|^2 + |d_j|^2 - 2 f_i.d_j, with the cross term f.d accumulated by
// mma.sync m16n8k32 (int8 x int8 -> int32, an exact integer product: no rounding anywhere).
// Compiled by portcv.backends.cupy with --fmad=false (nothing here is floating point).
//
// Centering: uint8 features become int8 as u - 128 (one XOR of the sign bit per byte); the
// differences, and so the distances, are unchanged. After centering |x| <= 128, so with
// l <= 33,025 features (the host's int32 rule) |f.d| and |f|^2 + |d|^2 are at most l * 2^15
// < 2^31 and the int32 sums below cannot overflow; the result itself is <= l * 255^2 < 2^31.
//
// Tiling: a block of 8 warps owns a 128 x 128 tile of P (128 query rows x 128 gallery rows);
// each warp 64 x 32 of it (4 x 4 mma tiles of 16 x 8, 64 int32 sums per thread). The features
// pass through shared memory 64 bytes of each row at a time, rows padded to 80 bytes so the
// fragment reads (8 rows x 4 words per instruction) hit 32 different banks.
// Fragment layout of mma.m16n8k32 .s8 (PTX ISA), lane = 4 * g + t:
//   A (16 x 32, row): a0 = A[g][4t..4t+3], a1 = A[g+8][4t..], a2 = A[g][16+4t..], a3 = A[g+8][16+4t..]
//   B (32 x 8, col):  b0 = B[4t..4t+3][g], b1 = B[16+4t..][g]   (B = D^T: a gallery row's bytes)
//   C (16 x 8):       c0, c1 = C[g][2t, 2t+1], c2, c3 = C[g+8][2t, 2t+1]
//
// portcv_sqeuclidean writes P; portcv_sq_nearest (below) never writes it.

#include "common.cuh"

constexpr int SQ_BM = 128, SQ_BN = 128, SQ_BK = 64, SQ_PITCH = 80, SQ_THREADS = 256;

__device__ __forceinline__ void sq_mma(int (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// 64 feature bytes of 128 rows (rows >= `rows` and features >= `length` read as the centered
// zero, which adds nothing) into shared memory, centered, byte by byte: the path for rows that
// are not whole uint4s (length % 16 != 0 or an unaligned base).
template <bool CENTER>
__device__ __forceinline__ void sq_load_bytes(unsigned char (*s)[SQ_PITCH], const unsigned char* __restrict__ x,
                                              int row0, int rows, int k0, int length) {
    const unsigned char flip = CENTER ? 0x80 : 0;
    for (int idx = threadIdx.x; idx < SQ_BM * SQ_BK; idx += SQ_THREADS) {
        const int r = idx / SQ_BK, c = idx - r * SQ_BK;
        const int row = row0 + r, k = k0 + c;
        unsigned char v = 0;
        if (row < rows && k < length) v = x[(size_t)row * length + k] ^ flip;
        s[r][c] = v;
    }
}

// The same 64 x 128 bytes when rows are whole uint4s, in two halves: sq_fetch loads a thread's
// two uint4 (centered) into registers, sq_store writes them to shared memory. The loop fetches
// the next step's bytes before it multiplies this step's, so the loads are in flight meanwhile.
constexpr int SQ_VECS = (SQ_BM * SQ_BK / 16) / SQ_THREADS;  // uint4s a thread moves per matrix
template <bool CENTER>
__device__ __forceinline__ void sq_fetch(uint4 (&v)[SQ_VECS], const unsigned char* __restrict__ x, int row0,
                                         int rows, int k0, int length) {
    const unsigned flip = CENTER ? 0x80808080u : 0u;
#pragma unroll
    for (int i = 0; i < SQ_VECS; ++i) {
        const int idx = threadIdx.x + i * SQ_THREADS;
        const int row = row0 + (idx >> 2), k = k0 + (idx & 3) * 16;
        v[i] = make_uint4(0, 0, 0, 0);
        if (row < rows && k < length) {
            v[i] = *reinterpret_cast<const uint4*>(x + (size_t)row * length + k);
            v[i].x ^= flip; v[i].y ^= flip; v[i].z ^= flip; v[i].w ^= flip;
        }
    }
}
__device__ __forceinline__ void sq_store(unsigned char (*s)[SQ_PITCH], const uint4 (&v)[SQ_VECS]) {
#pragma unroll
    for (int i = 0; i < SQ_VECS; ++i) {
        const int idx = threadIdx.x + i * SQ_THREADS;
        *reinterpret_cast<uint4*>(&s[idx >> 2][(idx & 3) * 16]) = v[i];
    }
}

// Four 8 x 16-byte matrices from shared memory, lane L giving the address of row L % 8 of matrix
// L / 8; lane 4g + t receives word t of row g of each: the mma's fragment layout for 8-bit data.
__device__ __forceinline__ void sq_ldmatrix4(unsigned (&r)[4], const unsigned char* p) {
    const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(p));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// One step's 64 bytes of the block's tile: per 32 bytes, the warp's A fragments (4 ldmatrix),
// its B fragments (2 ldmatrix), 16 mma.
template <int APITCH>
__device__ __forceinline__ void sq_multiply(int (&acc)[4][4][4], const unsigned char (*sA)[APITCH],
                                            const unsigned char (*sB)[SQ_PITCH], int a_row, int a_col,
                                            int b_row, int b_col) {
#pragma unroll
    for (int ks = 0; ks < SQ_BK; ks += 32) {
        unsigned a[4][4], b[4][2];
#pragma unroll
        for (int i = 0; i < 4; ++i) sq_ldmatrix4(a[i], &sA[a_row + i * 16][ks + a_col]);
#pragma unroll
        for (int j = 0; j < 4; j += 2) {
            unsigned q[4];
            sq_ldmatrix4(q, &sB[b_row + j * 8][ks + b_col]);
            b[j][0] = q[0]; b[j][1] = q[1]; b[j + 1][0] = q[2]; b[j + 1][1] = q[3];
        }
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) sq_mma(acc[i][j], a[i], b[j][0], b[j][1]);
    }
}

// |x - center|^2 of every row of F (rows 0..m-1) and D (rows m..m+n-1), one warp a row. For
// portcv_sq_nearest (best != nullptr) it also sets best[i] = ~0 (no candidate yet) for the m
// query rows and the ticket counter best[m] to 0.
template <bool CENTER>
__global__ void portcv_sq_row_norms(const unsigned char* __restrict__ F, const unsigned char* __restrict__ D,
                                    int m, int n, int length, int* __restrict__ norms,
                                    unsigned long long* __restrict__ best) {
    // 64-bit: the thread index passes 2^31 from m + n = 2^26 rows
    const long long thread = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const int warp = (int)(thread >> 5), lane = threadIdx.x & 31;
    if (warp >= m + n) return;
    const unsigned char* row = warp < m ? F + (size_t)warp * length : D + (size_t)(warp - m) * length;
    int sum = 0;
    for (int k = lane; k < length; k += 32) {
        const int v = CENTER ? (int)row[k] - 128 : (int)(signed char)row[k];
        sum += v * v;
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (lane == 0) {
        norms[warp] = sum;
        if (best != nullptr && warp < m) best[warp] = ~0ull;
        if (best != nullptr && warp == 0) best[m] = 0;
    }
}

__device__ __forceinline__ unsigned long long sq_pack(int d, int j) {
    return ((unsigned long long)(unsigned)d << 32) | (unsigned)j;
}

template <bool CENTER, bool VEC>
__global__ void __launch_bounds__(SQ_THREADS)
portcv_sqeuclidean(const unsigned char* __restrict__ F, const unsigned char* __restrict__ D, int m, int n,
                   int length, const int* __restrict__ norms, int* __restrict__ out) {
    __shared__ __align__(16) unsigned char sA[SQ_BM][SQ_PITCH];
    __shared__ __align__(16) unsigned char sB[SQ_BN][SQ_PITCH];
    const int row0 = blockIdx.y * SQ_BM, col0 = blockIdx.x * SQ_BN;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;  // the warp's 64 x 32 sub-tile
    const int g = lane >> 2, t = lane & 3;

    int acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[i][j][r] = 0;

    // Fragments by ldmatrix (see the layout above): A's 16 x 32 tile i is 4 matrices (rows
    // +0 / +8, bytes +0 / +16), lane L addressing row L % 8 of matrix L / 8; two of B's 8-row
    // tiles j, j + 1 (bytes +0 / +16 each) are another 4. Rows are 80 bytes apart, so the 8
    // rows of a matrix fall on 8 different 4-bank groups.
    const int lr = lane & 7, lq = lane >> 3;
    const int a_row = wm + lr + 8 * (lq & 1), a_col = 16 * (lq >> 1);
    const int b_row = wn + lr + 8 * (lq >> 1), b_col = 16 * (lq & 1);
    if (VEC) {
        uint4 va[SQ_VECS], vb[SQ_VECS];
        sq_fetch<CENTER>(va, F, row0, m, 0, length);
        sq_fetch<CENTER>(vb, D, col0, n, 0, length);
        for (int k0 = 0; k0 < length; k0 += SQ_BK) {
            sq_store(sA, va);
            sq_store(sB, vb);
            __syncthreads();
            if (k0 + SQ_BK < length) {
                sq_fetch<CENTER>(va, F, row0, m, k0 + SQ_BK, length);
                sq_fetch<CENTER>(vb, D, col0, n, k0 + SQ_BK, length);
            }
            sq_multiply(acc, sA, sB, a_row, a_col, b_row, b_col);
            __syncthreads();
        }
    } else {
        for (int k0 = 0; k0 < length; k0 += SQ_BK) {
            sq_load_bytes<CENTER>(sA, F, row0, m, k0, length);
            sq_load_bytes<CENTER>(sB, D, col0, n, k0, length);
            __syncthreads();
            sq_multiply(acc, sA, sB, a_row, a_col, b_row, b_col);
            __syncthreads();
        }
    }

    const int* nd = norms + m;
    const bool pairs = (n & 1) == 0;  // rows of P start 8-byte aligned: store two at once
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = row0 + wm + i * 16 + g + 8 * h;
            if (row >= m) continue;
            const int nf = norms[row];
            int* dst = out + (size_t)row * n;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int col = col0 + wn + j * 8 + 2 * t;
                const int p0 = nf - 2 * acc[i][j][2 * h];
                const int p1 = nf - 2 * acc[i][j][2 * h + 1];
                if (pairs && col + 1 < n) {
                    __stcs(reinterpret_cast<int2*>(dst + col), make_int2(p0 + nd[col], p1 + nd[col + 1]));
                } else {
                    if (col < n) dst[col] = p0 + nd[col];
                    if (col + 1 < n) dst[col + 1] = p1 + nd[col + 1];
                }
            }
        }
    }
}

// nearest (k = 1) by strips: a block takes 128 query rows and `tiles` consecutive 128-column
// tiles of the gallery, one after the other, keeping each of its rows' best so far in registers;
// the block's best per row meets the other strips' in one atomicMin on (distance << 32 | column)
// into best[row]. A minimum over that total order is the same in any order of arrival, so the
// result does not depend on the thread schedule, and ties go to the smaller column: a thread sees
// its columns in increasing order and keeps the first of the smallest (a strict <).
// While a tile's last step multiplies, the next tile's first features and gallery norms are
// already being fetched, so the loads' latency hides behind the mma and the tile's reduction.
// RESIDENT (16-byte rows of at most SQ_RESIDENT bytes, SIFT's 128 among them): the block's query
// rows are loaded into shared memory once, whole, and only the gallery's pass through it step by
// step, which halves what the blocks read from L2.
// A thread compares d' = |d|^2 - 2 f.d; |f|^2, the same for the whole row, is added at the end.
// PACKED (length < SQ_PACKED_LENGTH): a tile's comparisons use one int32 key per distance,
// d' * 128 + (column within the tile), whose minimum is the smallest d' and of those the first
// column: with s_nd holding |d|^2 * 128 + c (INT_MAX past n, where the zero rows give f.d = 0),
// the key is s_nd - 256 f.d, one multiply-add and one min a distance instead of a subtraction,
// a bounds test and two compare-selects. -l 2^14 <= d' <= 3 l 2^14 (|x| <= 128 after centering),
// so -2^31 < key < 3 l 2^21 + 128 <= INT_MAX for l <= 341.
// The last block to finish (a ticket counter after the best array, set to 0 by the norms kernel)
// unpacks best into the (m, 1) index and distance arrays.
// GPU time of a call at 4096 x 16384 x 128 on an H200: a block a tile (each waiting for its
// loads, an atomicMin per row per tile) and a separate unpacking launch 87 us; strips 65; strips
// with resident query rows and the last block unpacking 60.
constexpr int SQ_RESIDENT = 128;
constexpr int SQ_PACKED_LENGTH = 342;
constexpr int SQ_RESIDENT_PITCH = SQ_RESIDENT + 16;  // 36 words: a ldmatrix's 8 rows on 8 bank groups

template <bool CENTER, bool VEC, bool RESIDENT, bool PACKED>
__global__ void __launch_bounds__(SQ_THREADS, 2)
portcv_sq_nearest(const unsigned char* __restrict__ F, const unsigned char* __restrict__ D, int m, int n, int length,
                  int tiles, const int* __restrict__ norms, unsigned long long* __restrict__ best,
                  int* __restrict__ index, int* __restrict__ distance) {
    constexpr int APITCH = RESIDENT ? SQ_RESIDENT_PITCH : SQ_PITCH;
    __shared__ __align__(16) unsigned char sA[SQ_BM][APITCH];
    __shared__ __align__(16) unsigned char sB[SQ_BN][SQ_PITCH];
    __shared__ unsigned long long s_best[4][SQ_BM];
    // The tile's gallery norms, two buffers by tile parity: a thread may store the next tile's
    // while another still reads this tile's (each step's two barriers keep them a tile apart).
    __shared__ int s_nd[2][SQ_BN];
    __shared__ bool s_last;
    const int row0 = blockIdx.y * SQ_BM;
    const int n_tiles = (n - 1) / SQ_BN + 1;  // n >= 1; n + 127 would overflow near 2^31
    const int first = blockIdx.x * tiles, last = min(first + tiles, n_tiles);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;
    const int g = lane >> 2, t = lane & 3;
    const int lr = lane & 7, lq = lane >> 3;
    const int a_row = wm + lr + 8 * (lq & 1), a_col = 16 * (lq >> 1);
    const int b_row = wn + lr + 8 * (lq >> 1), b_col = 16 * (lq & 1);
    const int steps = (length + SQ_BK - 1) / SQ_BK;
    const int* nd = norms + m;

    int bd[4][2], bc[4][2];  // the best (d', column) of each of the thread's 8 rows; column -1: none yet
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) { bd[i][h] = 0x7fffffff; bc[i][h] = -1; }

    auto fetch_norm = [&](int col0) {  // thread c < 128: column col0 + c's norm (PACKED: its key base)
        const int col = col0 + threadIdx.x;
        if (PACKED) return threadIdx.x < SQ_BN && col < n ? __ldg(nd + col) * 128 + (int)threadIdx.x : 0x7fffffff;
        return threadIdx.x < SQ_BN && col < n ? __ldg(nd + col) : 0;
    };
    int nd_next = first < last ? fetch_norm(first * SQ_BN) : 0;
    uint4 va[SQ_VECS], vb[SQ_VECS];
    if (RESIDENT) {  // the query rows, whole (zeros past `length` and past m)
        const unsigned flip = CENTER ? 0x80808080u : 0u;
        constexpr int PIECES = SQ_RESIDENT / 16;
        for (int idx = threadIdx.x; idx < SQ_BM * PIECES; idx += SQ_THREADS) {
            const int r = idx / PIECES, k = (idx % PIECES) * 16, row = row0 + r;
            uint4 v = make_uint4(0, 0, 0, 0);
            if (row < m && k < length) {
                v = *reinterpret_cast<const uint4*>(F + (size_t)row * length + k);
                v.x ^= flip; v.y ^= flip; v.z ^= flip; v.w ^= flip;
            }
            *reinterpret_cast<uint4*>(&sA[r][k]) = v;
        }
    } else if (VEC && first < last) {
        sq_fetch<CENTER>(va, F, row0, m, 0, length);
    }
    if (VEC && first < last) sq_fetch<CENTER>(vb, D, first * SQ_BN, n, 0, length);
    for (int tile = first; tile < last; ++tile) {
        const int col0 = tile * SQ_BN;
        if (threadIdx.x < SQ_BN) s_nd[tile & 1][threadIdx.x] = nd_next;
        int acc[4][4][4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j)
#pragma unroll
                for (int r = 0; r < 4; ++r) acc[i][j][r] = 0;
        for (int s = 0; s < steps; ++s) {
            const int k0 = s * SQ_BK;
            if (VEC) {
                if (!RESIDENT) sq_store(reinterpret_cast<unsigned char (*)[SQ_PITCH]>(sA), va);
                sq_store(sB, vb);
            } else {
                sq_load_bytes<CENTER>(reinterpret_cast<unsigned char (*)[SQ_PITCH]>(sA), F, row0, m, k0, length);
                sq_load_bytes<CENTER>(sB, D, col0, n, k0, length);
            }
            __syncthreads();
            if (VEC) {  // the next step's features: this tile's next 64 bytes, or the next tile's first
                if (s + 1 < steps) {
                    if (!RESIDENT) sq_fetch<CENTER>(va, F, row0, m, k0 + SQ_BK, length);
                    sq_fetch<CENTER>(vb, D, col0, n, k0 + SQ_BK, length);
                } else if (tile + 1 < last) {
                    if (!RESIDENT && steps > 1) sq_fetch<CENTER>(va, F, row0, m, 0, length);  // else va holds them
                    sq_fetch<CENTER>(vb, D, col0 + SQ_BN, n, 0, length);
                }
            }
            if (s + 1 == steps && tile + 1 < last) nd_next = fetch_norm(col0 + SQ_BN);
            // RESIDENT: this step's 64 bytes of the whole rows
            sq_multiply(acc, reinterpret_cast<const unsigned char (*)[APITCH]>(&sA[0][RESIDENT ? k0 : 0]), sB, a_row,
                        a_col, b_row, b_col);
            __syncthreads();
        }
        if (PACKED) {
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    int key = 0x7fffffff;
#pragma unroll
                    for (int j = 0; j < 4; ++j)
#pragma unroll
                        for (int e = 0; e < 2; ++e)
                            key = min(key, s_nd[tile & 1][wn + j * 8 + 2 * t + e] - 256 * acc[i][j][2 * h + e]);
                    // a later tile replaces the best only when strictly smaller: ties keep the smaller column
                    if (key != 0x7fffffff && (key >> 7) < bd[i][h]) { bd[i][h] = key >> 7; bc[i][h] = col0 + (key & 127); }
                }
        } else {
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int h = 0; h < 2; ++h)
#pragma unroll
                    for (int j = 0; j < 4; ++j)
#pragma unroll
                        for (int e = 0; e < 2; ++e) {
                            const int c = wn + j * 8 + 2 * t + e, col = col0 + c;
                            const int d = s_nd[tile & 1][c] - 2 * acc[i][j][2 * h + e];
                            if (col < n && d < bd[i][h]) { bd[i][h] = d; bc[i][h] = col; }
                        }
        }
    }

    // Each row's smallest (distance, column) over the strip: the quad's (shuffles), the 4 warps'
    // of the row (shared memory), then one atomicMin.
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int r = wm + i * 16 + g + 8 * h, row = row0 + r;
            unsigned long long mine = ~0ull;
            if (row < m && bc[i][h] >= 0) mine = sq_pack(norms[row] + bd[i][h], bc[i][h]);
#pragma unroll
            for (int off = 1; off < 4; off <<= 1) {
                const unsigned long long other = __shfl_xor_sync(0xffffffffu, mine, off);
                mine = other < mine ? other : mine;
            }
            if (t == 0) s_best[warp & 3][r] = mine;
        }
    }
    __syncthreads();
    if (threadIdx.x < SQ_BM) {
        const int r = threadIdx.x, row = row0 + r;
        unsigned long long v = s_best[0][r];
#pragma unroll
        for (int w = 1; w < 4; ++w) v = s_best[w][r] < v ? s_best[w][r] : v;
        if (row < m && v != ~0ull) atomicMin(best + row, v);
    }
    // The last block unpacks: every block's atomics are made visible before it takes its ticket.
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) s_last = atomicAdd(best + m, 1ull) + 1 == (unsigned long long)gridDim.x * gridDim.y;
    __syncthreads();
    if (s_last) {
        __threadfence();
        constexpr int BATCH = 8;  // loads in flight per thread: the block is alone on the GPU by now
        for (int i0 = threadIdx.x; i0 < m; i0 += BATCH * SQ_THREADS) {
            unsigned long long v[BATCH];
#pragma unroll
            for (int q = 0; q < BATCH; ++q) {
                const int i = i0 + q * SQ_THREADS;
                v[q] = i < m ? __ldcg(best + i) : 0;
            }
#pragma unroll
            for (int q = 0; q < BATCH; ++q) {
                const int i = i0 + q * SQ_THREADS;
                if (i < m) {
                    index[i] = (int)(unsigned)(v[q] & 0xffffffffu);
                    distance[i] = (int)(unsigned)(v[q] >> 32);
                }
            }
        }
    }
}
