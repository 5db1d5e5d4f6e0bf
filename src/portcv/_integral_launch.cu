// Integral images (summed-area tables) of uint8 images: sums and, optionally, squared sums.
// Compiled by portcv.backends.cupy with --std=c++17 --fmad=false; launched by src/portcv/transform/_integral.py.
//
// Layout: `planes` images of H rows of W pixels of C interleaved channels (C in 1..4). The
// outputs are (planes, H+1, W+1, C) with a zero first row and column, like cv::integral.
//
// Three launches, none of them serial over the image (a tile-decomposed 2-D scan):
//   1. portcv_integral_tile_sums: per TH x TW tile, the sum of each tile row, of each tile
//      column and of the whole tile (int32: at most 255^2 * 32 * 128 < 2^31 even squared).
//   2. portcv_integral_carries: exclusive prefix sums of those partial sums across tiles
//      (along x for rows, along y for columns and tile totals), in int64.
//   3. portcv_integral_tiles: per tile, row scans in shared memory (warp-shuffle scans over
//      LANES threads per row), then each thread walks one column down the tile adding the
//      row carries, starting from the integral of the row above the tile:
//        I(y0-1, x) = corner(ty, tx) + sum_{x0 <= x' <= x} colcarry(ty, x')
//      where corner = sum of everything above-left of the tile. Coalesced stores, one per
//      output element.
// Each input byte is read twice, each output element written once. Everything is integer
// addition, so the result is exact and independent of the launch geometry.

#include "common.cuh"

#define INTEGRAL_THREADS 256

// Tile geometry: TW pixels (TWB = TW*C bytes) by TH rows; LANES threads share a tile row, each
// owning SEG consecutive bytes (a whole number of pixels and of 4-byte words).
template <int C, int TW, int TH>
struct IntegralTile {
    static constexpr int TWB = TW * C;
    static constexpr int LANES = INTEGRAL_THREADS / TH;
    static constexpr int SEG = TWB / LANES;
    static_assert(LANES * TH == INTEGRAL_THREADS, "one thread group per tile row");
    static_assert(SEG % C == 0 && SEG % 4 == 0, "segments hold whole pixels and whole words");
    static_assert(LANES <= 16, "two lane groups fit one warp");
};

// Tile bytes into shared memory, zero outside the image. 16-byte loads when the tile's columns
// are inside the image and rows are 16-byte aligned.
template <int TH, int TWB>
__device__ __forceinline__ void integral_load_tile(const unsigned char* __restrict__ in, int H, int WC,
                                                   int y0, int e0, unsigned char (*s)[TWB]) {
    const int tid = threadIdx.x;
    const bool vec = ((WC & 15) == 0) && ((reinterpret_cast<size_t>(in) & 15) == 0) && (e0 + TWB <= WC);
    if (vec) {
        constexpr int VPR = TWB / 16;
        for (int i = tid; i < TH * VPR; i += INTEGRAL_THREADS) {
            const int r = i / VPR, v = i - r * VPR, y = y0 + r;
            const uint4 val = y < H ? *reinterpret_cast<const uint4*>(in + (size_t)y * WC + e0 + v * 16)
                                    : make_uint4(0, 0, 0, 0);
            *reinterpret_cast<uint4*>(&s[r][v * 16]) = val;
        }
    } else {
        for (int i = tid; i < TH * TWB; i += INTEGRAL_THREADS) {
            const int r = i / TWB, e = i - r * TWB, y = y0 + r, x = e0 + e;
            s[r][e] = (y < H && x < WC) ? in[(size_t)y * WC + x] : (unsigned char)0;
        }
    }
}

template <typename T, int LANES>
__device__ __forceinline__ T lane_group_sum(T v) {
#pragma unroll
    for (int d = LANES / 2; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d, LANES);
    return v;
}

// Exclusive prefix over the LANES lanes of a group (lane = threadIdx.x % LANES).
template <typename T, int LANES>
__device__ __forceinline__ T lane_group_exclusive(T v, int lane) {
    T incl = v;
#pragma unroll
    for (int d = 1; d < LANES; d <<= 1) {
        const T t = __shfl_up_sync(0xffffffffu, incl, d, LANES);
        if (lane >= d) incl += t;
    }
    return incl - v;
}

// The partial sums (int32) and their carries (int64) live in one workspace each, laid out as
// rowseg[planes][H][ntx][C], colseg[planes][nty][W*C], tiletot[planes][nty][ntx][C], then the
// same three for the squared sums (which = 1). One allocation and one argument per workspace
// keep a call's host cost low.
template <typename T>
struct IntegralParts {
    T *row, *col, *tile;
    __device__ __forceinline__ IntegralParts(T* base, int which, int planes, int H, int WC, int C, int ntx,
                                             int nty) {
        const size_t n_row = (size_t)planes * H * ntx * C, n_col = (size_t)planes * nty * WC;
        const size_t n_tile = (size_t)planes * nty * ntx * C;
        row = base + which * (n_row + n_col + n_tile);
        col = row + n_row;
        tile = col + n_col;
    }
};

// Launch 1: grid (ntx, nty, planes). Writes rowseg[p][y][tx][c], colseg[p][ty][x*C+c],
// tiletot[p][ty][tx][c] (and the squared versions when SQ).
template <int C, int TW, int TH, bool SQ>
__global__ void __launch_bounds__(INTEGRAL_THREADS)
portcv_integral_tile_sums(const unsigned char* __restrict__ src, int H, int W, int ntx, int nty,
                          int* __restrict__ seg) {
    using G = IntegralTile<C, TW, TH>;
    __shared__ __align__(16) unsigned char s_in[TH][G::TWB];
    __shared__ int s_col[SQ ? 2 : 1][G::TWB];

    const int tid = threadIdx.x, tx = blockIdx.x, ty = blockIdx.y;
    const size_t p = blockIdx.z;
    const int WC = W * C, e0 = tx * TW * C, y0 = ty * TH;
    const IntegralParts<int> sums(seg, 0, gridDim.z, H, WC, C, ntx, nty);
    const IntegralParts<int> sqs(seg, SQ ? 1 : 0, gridDim.z, H, WC, C, ntx, nty);
    int *rowseg = sums.row, *colseg = sums.col, *tiletot = sums.tile;
    int *rowseg_sq = sqs.row, *colseg_sq = sqs.col, *tiletot_sq = sqs.tile;
    integral_load_tile<TH, G::TWB>(src + p * H * WC, H, WC, y0, e0, s_in);
    __syncthreads();

    // Row sums: LANES threads per tile row, SEG bytes each, reduced with shuffles.
    {
        const int r = tid / G::LANES, lane = tid - r * G::LANES;
        const unsigned int* words = reinterpret_cast<const unsigned int*>(&s_in[r][lane * G::SEG]);
        int acc[C], accq[C];
#pragma unroll
        for (int c = 0; c < C; ++c) acc[c] = accq[c] = 0;
#pragma unroll
        for (int k = 0; k < G::SEG; ++k) {
            const int v = (int)((words[k >> 2] >> ((k & 3) * 8)) & 255u);
            acc[k % C] += v;
            if constexpr (SQ) accq[k % C] += v * v;
        }
        const int y = y0 + r;
#pragma unroll
        for (int c = 0; c < C; ++c) {
            const int s = lane_group_sum<int, G::LANES>(acc[c]);
            const int q = SQ ? lane_group_sum<int, G::LANES>(accq[c]) : 0;
            if (lane == 0 && y < H) {
                const size_t at = ((p * H + y) * ntx + tx) * C + c;
                rowseg[at] = s;
                if constexpr (SQ) rowseg_sq[at] = q;
            }
        }
    }
    // Column sums: one thread per tile column byte (and one more per byte for squares).
    for (int item = tid; item < (SQ ? 2 : 1) * G::TWB; item += INTEGRAL_THREADS) {
        const int which = item / G::TWB, e = item - which * G::TWB;
        int s = 0;
#pragma unroll 8
        for (int r = 0; r < TH; ++r) {
            const int v = s_in[r][e];
            s += which ? v * v : v;
        }
        s_col[which][e] = s;
        if (e0 + e < WC) {
            const size_t at = (p * nty + ty) * (size_t)WC + e0 + e;
            if (which) colseg_sq[at] = s; else colseg[at] = s;
        }
    }
    __syncthreads();
    // Tile totals: warp 0 (sums) and warp 1 (squares) reduce the column sums per channel.
    const int warp = tid >> 5, lane = tid & 31;
    if (warp < (SQ ? 2 : 1)) {
        int acc[C];
#pragma unroll
        for (int c = 0; c < C; ++c) acc[c] = 0;
        for (int e = lane; e < G::TWB; e += 32) acc[e % C] += s_col[warp][e];
#pragma unroll
        for (int c = 0; c < C; ++c) {
            const int s = lane_group_sum<int, 32>(acc[c]);
            if (lane == 0) {
                const size_t at = ((p * nty + ty) * ntx + tx) * C + c;
                if (warp) tiletot_sq[at] = s; else tiletot[at] = s;
            }
        }
    }
}

// Exclusive prefix of n values spaced `stride` apart; loads are independent of the running
// sum and issued 8 at a time so their latency overlaps.
__device__ __forceinline__ void integral_exclusive_scan(const int* __restrict__ in, long long* __restrict__ out,
                                                        int n, size_t stride) {
    long long run = 0;
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        int v[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) v[j] = in[(i + j) * stride];
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            out[(i + j) * stride] = run;
            run += v[j];
        }
    }
    for (; i < n; ++i) {
        const int v = in[i * stride];
        out[i * stride] = run;
        run += v;
    }
}

// Launch 2: 1-D grid-stride. rowcarry[p][y][tx][c] = sum of row y left of tile tx;
// colcarry[p][ty][e] = sum of column element e above band ty; colex[p][ty][tx][c] = sum of the
// totals of tiles above (ty, tx) in its tile column.
template <int C, bool SQ>
__global__ void __launch_bounds__(INTEGRAL_THREADS)
portcv_integral_carries(int planes, int H, int W, int ntx, int nty, const int* __restrict__ seg,
                        long long* __restrict__ carry) {
    const int q = SQ ? 1 : 0;
    const IntegralParts<const int> sums(seg, 0, planes, H, W * C, C, ntx, nty);
    const IntegralParts<const int> sqs(seg, q, planes, H, W * C, C, ntx, nty);
    const IntegralParts<long long> cars(carry, 0, planes, H, W * C, C, ntx, nty);
    const IntegralParts<long long> cars_sq(carry, q, planes, H, W * C, C, ntx, nty);
    const int *rowseg = sums.row, *colseg = sums.col, *tiletot = sums.tile;
    const int *rowseg_sq = sqs.row, *colseg_sq = sqs.col, *tiletot_sq = sqs.tile;
    long long *rowcarry = cars.row, *colcarry = cars.col, *colex = cars.tile;
    long long *rowcarry_sq = cars_sq.row, *colcarry_sq = cars_sq.col, *colex_sq = cars_sq.tile;
    const long long WC = (long long)W * C;
    const long long n_row = (long long)planes * H * C, n_col = (long long)planes * WC;
    const long long n_tile = (long long)planes * ntx * C;
    const long long per = n_row + n_col + n_tile, total = per * (SQ ? 2 : 1);
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (long long)gridDim.x * blockDim.x) {
        const bool sq = SQ && t >= per;
        const long long u = sq ? t - per : t;
        if (u < n_row) {  // u = (p*H + y)*C + c; scan along tx
            const long long py = u / C, c = u - py * C;
            const size_t base = (size_t)py * ntx * C + c;
            integral_exclusive_scan((sq ? rowseg_sq : rowseg) + base, (sq ? rowcarry_sq : rowcarry) + base, ntx, C);
        } else if (u < n_row + n_col) {  // v = p*WC + e; scan along ty
            const long long v = u - n_row, p = v / WC, e = v - p * WC;
            const size_t base = (size_t)p * nty * WC + e;
            integral_exclusive_scan((sq ? colseg_sq : colseg) + base, (sq ? colcarry_sq : colcarry) + base, nty, WC);
        } else {  // v = p*ntx*C + tx*C + c; scan along ty
            const long long v = u - n_row - n_col, per_plane = (long long)ntx * C;
            const long long p = v / per_plane, rest = v - p * per_plane;
            const size_t base = (size_t)p * nty * per_plane + rest;
            integral_exclusive_scan((sq ? tiletot_sq : tiletot) + base, (sq ? colex_sq : colex) + base, nty,
                                    per_plane);
        }
    }
}

// Launch 3: grid (ntx, nty, planes). SumT is int (OpenCV's CV_32S) or long long, SqT long long;
// or both unsigned int, the sums modulo 2^32 (the cascade detector's wrap-around tables: its
// rectangle sums are differences of four corners, exact modulo 2^32).
template <int C, int TW, int TH, bool SQ, typename SumT, typename SqT>
__global__ void __launch_bounds__(INTEGRAL_THREADS)
portcv_integral_tiles(const unsigned char* __restrict__ src, int H, int W, int ntx, int nty,
                      const long long* __restrict__ carry, SumT* __restrict__ sum_out, SqT* __restrict__ sq_out) {
    using G = IntegralTile<C, TW, TH>;
    constexpr int NQ = SQ ? 2 : 1;
    __shared__ __align__(16) unsigned char s_in[TH][G::TWB];
    // Row prefixes, one padded segment per lane: a lane stride of SEG+1 words keeps the row
    // scans free of bank conflicts.
    __shared__ int s_row[NQ][TH][G::LANES][G::SEG + 1];
    __shared__ long long s_top[NQ][G::TWB];
    __shared__ long long s_carry[NQ][TH][C];

    const int tid = threadIdx.x, tx = blockIdx.x, ty = blockIdx.y;
    const size_t p = blockIdx.z;
    const int WC = W * C, e0 = tx * TW * C, y0 = ty * TH;
    const IntegralParts<const long long> cars(carry, 0, gridDim.z, H, WC, C, ntx, nty),
        cars_sq(carry, SQ ? 1 : 0, gridDim.z, H, WC, C, ntx, nty);
    const long long *rowcarry = cars.row, *colcarry = cars.col, *colex = cars.tile;
    const long long *rowcarry_sq = cars_sq.row, *colcarry_sq = cars_sq.col, *colex_sq = cars_sq.tile;
    integral_load_tile<TH, G::TWB>(src + p * H * WC, H, WC, y0, e0, s_in);
    for (int i = tid; i < NQ * TH * C; i += INTEGRAL_THREADS) {
        const int which = i / (TH * C), rc = i - which * TH * C, r = rc / C, c = rc - r * C, y = y0 + r;
        const long long* rows = which ? rowcarry_sq : rowcarry;
        s_carry[which][r][c] = y < H ? rows[((p * H + y) * ntx + tx) * C + c] : 0;
    }
    __syncthreads();

    // 1. Inclusive row prefixes inside the tile, per channel (local: at most 255^2 * 128).
    {
        const int r = tid / G::LANES, lane = tid - r * G::LANES;
        const unsigned int* words = reinterpret_cast<const unsigned int*>(&s_in[r][lane * G::SEG]);
        int acc[C], accq[C];
#pragma unroll
        for (int c = 0; c < C; ++c) acc[c] = accq[c] = 0;
#pragma unroll
        for (int k = 0; k < G::SEG; ++k) {
            const int v = (int)((words[k >> 2] >> ((k & 3) * 8)) & 255u);
            acc[k % C] += v;
            s_row[0][r][lane][k] = acc[k % C];
            if constexpr (SQ) {
                accq[k % C] += v * v;
                s_row[NQ - 1][r][lane][k] = accq[k % C];
            }
        }
        int off[C], offq[C];
#pragma unroll
        for (int c = 0; c < C; ++c) {
            off[c] = lane_group_exclusive<int, G::LANES>(acc[c], lane);
            offq[c] = SQ ? lane_group_exclusive<int, G::LANES>(accq[c], lane) : 0;
        }
#pragma unroll
        for (int k = 0; k < G::SEG; ++k) {
            s_row[0][r][lane][k] += off[k % C];
            if constexpr (SQ) s_row[NQ - 1][r][lane][k] += offq[k % C];
        }
    }
    // 2. The integral of the row above the tile, I(y0-1, x), for the tile's columns: warp 0,
    //    one lane group for sums and one for squares.
    if (tid < 32) {
        const int group = tid / G::LANES, lane = tid - group * G::LANES;
        const int which = group < NQ ? group : 0;  // surplus lanes compute a copy and do not store
        const long long* cc = (which ? colcarry_sq : colcarry) + (p * nty + ty) * (size_t)WC;
        const long long* ce = (which ? colex_sq : colex) + (p * nty + ty) * (size_t)ntx * C;
        long long corner[C], acc[C];
#pragma unroll
        for (int c = 0; c < C; ++c) corner[c] = acc[c] = 0;
        for (int t = lane; t < tx; t += G::LANES)
#pragma unroll
            for (int c = 0; c < C; ++c) corner[c] += ce[t * C + c];
        // Two passes over the lane's segment (totals, then prefixes) keep registers low.
#pragma unroll
        for (int k = 0; k < G::SEG; ++k) {
            const int x = e0 + lane * G::SEG + k;
            acc[k % C] += x < WC ? cc[x] : 0;
        }
#pragma unroll
        for (int c = 0; c < C; ++c)
            acc[c] = lane_group_exclusive<long long, G::LANES>(acc[c], lane) +
                     lane_group_sum<long long, G::LANES>(corner[c]);
        if (group < NQ) {
#pragma unroll
            for (int k = 0; k < G::SEG; ++k) {
                const int x = e0 + lane * G::SEG + k;
                acc[k % C] += x < WC ? cc[x] : 0;
                s_top[which][lane * G::SEG + k] = acc[k % C];
            }
        }
    }
    __syncthreads();

    // 3. Walk down the tile's columns: one thread per column byte (per output), coalesced stores.
    const size_t pitch = (size_t)(W + 1) * C;
    const size_t plane_out = p * (size_t)(H + 1) * pitch;
    for (int item = tid; item < NQ * G::TWB; item += INTEGRAL_THREADS) {
        const int which = item / G::TWB, e = item - which * G::TWB;
        if (e0 + e >= WC) continue;
        const int c = e % C, lane = e / G::SEG, k = e - lane * G::SEG;
        const size_t col = plane_out + C + e0 + e;
        if (which == 0) {
            SumT run = (SumT)s_top[0][e];
            if (ty == 0) sum_out[col] = 0;
#pragma unroll 4
            for (int r = 0; r < TH; ++r) {
                if (y0 + r >= H) break;
                run += (SumT)s_row[0][r][lane][k] + (SumT)s_carry[0][r][c];
                sum_out[col + (size_t)(y0 + r + 1) * pitch] = run;
            }
        } else {
            SqT run = (SqT)s_top[NQ - 1][e];
            if (ty == 0) sq_out[col] = 0;
#pragma unroll 4
            for (int r = 0; r < TH; ++r) {
                if (y0 + r >= H) break;
                run += (SqT)s_row[NQ - 1][r][lane][k] + (SqT)s_carry[NQ - 1][r][c];
                sq_out[col + (size_t)(y0 + r + 1) * pitch] = run;
            }
        }
    }
    // The zero first column (and the zero corner, written by tile (0, 0)).
    if (tx == 0) {
        for (int i = tid; i < (TH + 1) * C; i += INTEGRAL_THREADS) {
            const int r = i / C, c = i - r * C;
            if (r == 0 && ty != 0) continue;
            const int row = r == 0 ? 0 : y0 + r;
            if (row > H) continue;
            const size_t at = plane_out + (size_t)row * pitch + c;
            sum_out[at] = 0;
            if constexpr (SQ) sq_out[at] = 0;
        }
    }
}
