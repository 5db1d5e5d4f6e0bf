// The LBP recognizer on CUDA: labels, regional histograms and the exact weighted chi-square.
// Each kernel computes the same integers as its portable version in portcv/recognize (the
// module docstrings there carry the definitions and bounds); nothing here rounds a float that
// reaches a result. Compiled by portcv.backends.cupy with --fmad=false.

#include "common.cuh"

// ------------------------------------------------------------------------------------------
// LBP labels: one thread per output pixel. Sample point i reads the 2 x 2 pixels at
// (cy + r0, cx + c0) .. (cy + r0 + 1, cx + c0 + 1) with the 5-decimal fractions wr, wc (integers
// in [0, S), S = 10^5), and bit i is set when
//   (S - wr) ((S - wc) TL + wc TR) + wr ((S - wc) BL + wc BR)  >=  centre * S^2.
// The inner sums are below 255 * S < 2^25 (int32); times S - wr or wr (< 2^17) below 2^42, so
// the 64-bit products and their sum are exact: the same integer comparison as the portable
// float64 sum of four products (exact there because every partial sum is an integer < 2^53).
// A pixel outside the image reads 0 (border "constant"); with border "valid" no sample of an
// output pixel lies outside.
// ------------------------------------------------------------------------------------------
constexpr int LBP_SCALE = 100000;
constexpr int LBP_MAX_POINTS = 16;

// The four pixels around a sample, read through `at(dy, dx)`, compared with the centre. Pixels
// of weight 0 are not read (wr = 0: no bottom row; wc = 0: no right column).
template <typename At>
__device__ __forceinline__ bool lbp_bit(At at, int r0, int c0, int wr, int wc, int centre, long long threshold) {
    if (wr == 0 && wc == 0) return at(r0, c0) >= centre;  // a grid point: the pixel itself
    int top = (LBP_SCALE - wc) * at(r0, c0);
    if (wc) top += wc * at(r0, c0 + 1);
    long long value = (long long)(LBP_SCALE - wr) * top;
    if (wr) {
        int bottom = (LBP_SCALE - wc) * at(r0 + 1, c0);
        if (wc) bottom += wc * at(r0 + 1, c0 + 1);
        value += (long long)wr * bottom;
    }
    return value >= threshold;
}

// points: P rows of (r0, c0, wr, wc). lut: 2^P labels, or nullptr for the code itself.
// origin: the centre of output (0, 0) in the image (0 for "constant", ceil(R) for "valid");
// reach: the farthest row/column offset a sample of weight > 0 reads (<= ceil(R)).
// Grid: (columns / 32, rows / 8, frames), blocks of 32 x 8: a warp reads 32 adjacent pixels;
// row0: the first output row of this launch (the host splits images of more than 65535 x 8 rows).
// A block whose samples all lie inside the image reads without bounds checks. P is a template
// parameter so that the loop over the points unrolls and their loads overlap.
template <int P>
__global__ void portcv_lbp_labels(const unsigned char* __restrict__ src, int H, int W, int Ho, int Wo, int origin,
                                  int row0, int reach, int checked, const int* __restrict__ points,
                                  const unsigned short* __restrict__ lut,
                                  unsigned short* __restrict__ out) {
    static_assert(P >= 1 && P <= LBP_MAX_POINTS, "P in [1, 16]");
    __shared__ int pts[4 * P];
    __shared__ int4 offs[P];   // per point: the image offsets of its TL, TR, BL, BR pixels ...
    __shared__ int2 fracs[P];  // ... and (wr, wc); a pixel of weight 0 is read as its neighbour
    const int t = threadIdx.y * blockDim.x + threadIdx.x;
    if (t < 4 * P) pts[t] = points[t];
    if (t < P) {
        const int r0 = points[4 * t], c0 = points[4 * t + 1], wr = points[4 * t + 2], wc = points[4 * t + 3];
        const int tl = r0 * W + c0, bl = tl + (wr ? W : 0);
        offs[t] = make_int4(tl, tl + (wc ? 1 : 0), bl, bl + (wc ? 1 : 0));
        fracs[t] = make_int2(wr, wc);
    }
    __syncthreads();
    const int bx = blockIdx.x * blockDim.x + origin, by = row0 + blockIdx.y * blockDim.y + origin;  // first centre
    // With border "valid" (checked = 0) every sample of weight > 0 lies inside the image.
    const bool inside = !checked || (bx - reach >= 0 && by - reach >= 0 && bx + (int)blockDim.x - 1 + reach < W &&
                                     by + (int)blockDim.y - 1 + reach < H);
    const int ox = blockIdx.x * blockDim.x + threadIdx.x, oy = row0 + blockIdx.y * blockDim.y + threadIdx.y;
    if (ox >= Wo || oy >= Ho) return;
    const unsigned char* frame = src + (size_t)blockIdx.z * H * W;
    const int cy = oy + origin, cx = ox + origin;
    const unsigned char* centre_px = frame + (size_t)cy * W + cx;
    const int centre = *centre_px;
    const long long threshold = centre * ((long long)LBP_SCALE * LBP_SCALE);
    unsigned code = 0;
    if (inside) {
        // lbp_bit's value (S - wr) top + wr bottom >= centre S^2, branch-free: with
        // top = S TL + wc (TR - TL) and bottom = S BL + wc (BR - BL) (int32: |.| <= 255 S), it is
        // wr (bottom - top) >= S (centre S - top), both sides below 2^42 in 64 bits. A pixel of
        // weight 0 reads its neighbour (the offsets above), so every read lies within `reach`.
        const int centre_s = centre * LBP_SCALE;
#pragma unroll
        for (int i = 0; i < P; ++i) {
            const int4 o = offs[i];
            const int2 f = fracs[i];
            const int tl = __ldg(centre_px + o.x), tr = __ldg(centre_px + o.y);
            const int bl = __ldg(centre_px + o.z), br = __ldg(centre_px + o.w);
            const int top = LBP_SCALE * tl + f.y * (tr - tl);
            const int bottom = LBP_SCALE * bl + f.y * (br - bl);
            const bool bit = (long long)f.x * (bottom - top) >= (long long)LBP_SCALE * (centre_s - top);
            code |= (unsigned)bit << i;
        }
    } else {  // near the image's edge: pixels outside read 0 (border "constant")
        auto at = [&](int dy, int dx) {
            const int y = cy + dy, x = cx + dx;
            return (y >= 0 && y < H && x >= 0 && x < W) ? (int)__ldg(frame + (size_t)y * W + x) : 0;
        };
#pragma unroll
        for (int i = 0; i < P; ++i)
            code |= (unsigned)lbp_bit(at, pts[4 * i], pts[4 * i + 1], pts[4 * i + 2], pts[4 * i + 3], centre, threshold) << i;
    }
    out[((size_t)blockIdx.z * Ho + oy) * Wo + ox] = lut ? __ldg(lut + code) : (unsigned short)code;
}

// ------------------------------------------------------------------------------------------
// Regional histograms: one block per (frame, region); its warps count into COPIES shared
// histograms (warp w into copy w % COPIES, so fewer lanes collide on one address), which are
// then added bin by bin. Integer additions in any order: the counts are exact.
// ------------------------------------------------------------------------------------------
template <typename OutT>
__global__ void portcv_region_histograms(const unsigned short* __restrict__ labels, int Hl, int Wl, int ny, int nx,
                                         int h, int w, int bins, int copies, OutT* __restrict__ out) {
    extern __shared__ int hist[];  // copies x bins
    const long long block = blockIdx.x;  // frame * (ny * nx) + region
    const int regions = ny * nx;
    const long long f = block / regions;
    const int region = (int)(block - f * regions);
    const int ry = region / nx, rx = region - ry * nx;
    for (int i = threadIdx.x; i < copies * bins; i += blockDim.x) hist[i] = 0;
    __syncthreads();
    const int y0 = ry * h, x0 = rx * w;
    const int rh = max(0, min(h, Hl - y0)), rw = max(0, min(w, Wl - x0));  // the last row/column of regions may be partial
    const unsigned short* frame = labels + f * Hl * Wl;
    int* mine = hist + ((threadIdx.x >> 5) % copies) * bins;
    for (int i = threadIdx.x; i < rh * rw; i += blockDim.x) {
        const int y = i / rw, x = i - y * rw;
        atomicAdd(mine + __ldg(frame + (size_t)(y0 + y) * Wl + x0 + x), 1);
    }
    __syncthreads();
    OutT* dst = out + block * bins;
    for (int b = threadIdx.x; b < bins; b += blockDim.x) {
        int sum = 0;
        for (int c = 0; c < copies; ++c) sum += hist[c * bins + b];
        dst[b] = (OutT)sum;  // at most h * w < 2^15 pixels: fits the dtype the host chose
    }
}

// ------------------------------------------------------------------------------------------
// Weighted chi-square: D[q][c] = sum_j W[j] sum_i T(Q[q][j][i], G[c][j][i]) over regions j and
// bins i, with T(S, M) = floor((S - M)^2 2^F / (S + M)) (0 when S + M = 0), summed in int64
// (integer sums: any order, the same D; weights are in [0, 255], checked by the host).
//
// In the domain (0 <= S, M <= n, F = min(20, 30 - bitlen(n))) T = q 2^F + floor(r 2^F / b) with
// a = (S - M)^2 < 2^30, b = S + M < 2^16, q = floor(a / b) <= max(S, M) <= n, r = a - q b < b,
// r 2^F < 2^31 (see _chi_square.py). Each quotient is estimated from a float reciprocal of b
// and corrected by its remainder; no float ever reaches D.
//
// SMALL (n <= 1023, SMALL_COUNT in _cuda.py, so F = 20), portcv_chi_square_small: for every
// 0 <= S, M <= 1023 (whatever n: the portable int32 steps cannot wrap there, a < 2^20, r 2^20 <
// 2^31) T = floor(a 2^20 / b) is computed in float64 as
//   y = fl(a * R[b]),  R[b] = fl(2^20 / b) (a shared table, R[0] = 0),  z = fl(fl(y + 2^-12 - 1/2) + 1.5 2^52),
// T = the low word of z (1.5 2^52 has ulp 1 from -2^51 to 2^51: z is the nearest integer to
// y + 2^-12 - 1/2, i.e. floor(y + 2^-12)). Why it is exact: y = a 2^20 / b with a relative
// error below 2^-52 and y < 2^31 (a <= b^2), so |y - a 2^20 / b| < 2^-21; the fraction of
// a 2^20 / b is 0 or in [1/b, 1 - 1/b] with b <= 2046, so y + 2^-12 is never within 2^-13 of
// an integer and floor(y + 2^-12) = floor(a 2^20 / b). All 1024^2 pairs were also checked
// exhaustively with NumPy's float64 (the same IEEE operations: --fmad=false, no fused add).
//
// Otherwise (n <= 32767): float(b) is exact, rcp = 1/b correctly rounded; float(a) (relative
// error <= 2^-24) times rcp truncated (< 2^-23) is within (a/b) 2^-21 < 2^-6 of a/b; r 2^F has
// at most 16 significant bits (exact as a float) and its product within 2^F 2^-22 <= 1/4 of
// r 2^F / b: each truncation within 1 of the floor, corrected by the remainder on either side.
// Unsigned products q b <= a + b and q2 b <= r 2^F + b stay below 2^32.
//
// Outside the domain (a count above n, or a negative int32 count) the portable version's int32
// arithmetic wraps; chi_exact_wrapping repeats it step by step (two's complement products and
// sums, floor division), so the bits still equal NumPy's; a division by -1 (b = -1 after
// wrapping, from negative counts) is a wrapping negation, INT_MIN / -1 = INT_MIN as in NumPy.
// ------------------------------------------------------------------------------------------
__device__ __forceinline__ int floor_div_i32(int a, int b) {
    if (b == -1) return (int)(0u - (unsigned)a);
    int q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

__device__ __noinline__ int chi_exact_wrapping(int S, int M, int F) {
    const int b = (int)((unsigned)S + (unsigned)M);
    const unsigned diff = (unsigned)S - (unsigned)M;
    const int a = (int)(diff * diff);
    const int safe = b == 0 ? 1 : b;
    const int q = floor_div_i32(a, safe);
    const int r = (int)((unsigned)a - (unsigned)q * (unsigned)safe);
    const int q2 = floor_div_i32((int)((unsigned)r << F), safe);
    return (int)(((unsigned)q << F) + (unsigned)q2);
}

// T for 0 <= S, M <= n <= 32767.
__device__ __forceinline__ unsigned chi_term_float(int S, int M, int F) {
    const unsigned b = (unsigned)(S + M);
    if (b == 0) return 0u;
    const unsigned d = (unsigned)abs(S - M);
    const unsigned a = d * d;
    const float rcp = __frcp_rn((float)b);
    unsigned q = (unsigned)__fmul_rz((float)a, rcp);
    if (q * b > a) --q;
    else if (a - q * b >= b) ++q;
    const unsigned x = (a - q * b) << F;
    unsigned q2 = (unsigned)__fmul_rz((float)x, rcp);
    if (q2 * b > x) --q2;
    else if (x - q2 * b >= b) ++q2;
    return (q << F) + q2;
}

// acc += w T(S, M) by the wrapping steps: counts outside the fast paths' domains.
__device__ __forceinline__ void chi_add_wrapping(unsigned long long& acc, unsigned w, int S, int M, int F) {
    acc += (unsigned long long)((long long)w * (long long)chi_exact_wrapping(S, M, F));
}

// Warps stride over the gallery rows (one row at a time, QB queries each; grid.y: query
// groups). A warp walks a row region by region (the weight is the same for all its lanes,
// regions of weight 0 are skipped), the lanes 32 bins apart.
template <typename TQ, typename TG, int QB>
__global__ void __launch_bounds__(256) portcv_chi_square(const TQ* __restrict__ Q, const TG* __restrict__ G,
                                                         const long long* __restrict__ W, int m, int n_rows,
                                                         int regions, int bins, int n, int F,
                                                         long long* __restrict__ D) {
    const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    const int q0 = blockIdx.y * QB;
    const size_t d = (size_t)regions * bins;
    for (int c = blockIdx.x * warps + (threadIdx.x >> 5); c < n_rows; c += gridDim.x * warps) {
        const TG* g = G + c * d;
        unsigned long long acc[QB];
#pragma unroll
        for (int k = 0; k < QB; ++k) acc[k] = 0;
        for (int j = 0; j < regions; ++j) {
            const unsigned w = (unsigned)__ldg(W + j);
            if (w == 0) continue;
#pragma unroll 4
            for (int i = lane; i < bins; i += 32) {
                const size_t e = (size_t)j * bins + i;
                const int M = (int)__ldcs(g + e);
#pragma unroll
                for (int k = 0; k < QB; ++k) {
                    if (q0 + k < m) {
                        const int S = (int)__ldg(Q + (q0 + k) * d + e);
                        if ((unsigned)S <= (unsigned)n && (unsigned)M <= (unsigned)n) {
                            acc[k] += (unsigned long long)w * chi_term_float(S, M, F);
                        } else {
                            chi_add_wrapping(acc[k], w, S, M, F);
                        }
                    }
                }
            }
        }
#pragma unroll
        for (int k = 0; k < QB; ++k) {
            unsigned long long v = acc[k];
            for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
            if (lane == 0 && q0 + k < m) D[(size_t)(q0 + k) * n_rows + c] = (long long)v;
        }
    }
}

constexpr unsigned CHI_SMALL_MAX = 1023;          // the float64 path's domain: 0 <= S, M <= 1023
constexpr int CHI_RCP_ENTRIES = 2 * CHI_SMALL_MAX + 1;
constexpr double CHI_ROUND = 6755399441055744.0;   // 1.5 2^52
constexpr double CHI_NUDGE = 0.000244140625 - 0.5;  // 2^-12 - 1/2

// acc += w t with one 32 x 32 -> 64-bit multiply-add (C's 64-bit product kept a dead high-word add).
__device__ __forceinline__ void mad_wide(unsigned long long& acc, unsigned w, unsigned t) {
    asm("mad.wide.u32 %0, %1, %2, %0;" : "+l"(acc) : "r"(w), "r"(t));
}

// T for 0 <= S, M <= 1023 (F = 20), in float64 (the comment above).
__device__ __forceinline__ unsigned chi_term_fp64(unsigned S, unsigned M, const double* rcp) {
    const unsigned b = S + M;
    const int diff = (int)S - (int)M;
    const double a = __uint2double_rn((unsigned)(diff * diff));  // exactly: < 2^20
    const double y = __dmul_rn(a, rcp[b]);
    return (unsigned)__double2loint(__dadd_rn(__dadd_rn(y, CHI_NUDGE), CHI_ROUND));
}

// The SMALL path (counts n <= 1023). As portcv_chi_square, but a lane loads CH bins of a region
// (32 apart) before it computes any, so that a warp keeps CH loads of the gallery in flight, and
// one test of the CH bins (all in [0, 1023]) picks the float64 terms; a bin outside takes the
// wrapping steps (the portable version's int32 arithmetic), the rest of its CH still exact.
template <typename TQ, typename TG, int QB, int CH>
__global__ void __launch_bounds__(256) portcv_chi_square_small(const TQ* __restrict__ Q, const TG* __restrict__ G,
                                                               const long long* __restrict__ W, int m, int n_rows,
                                                               int regions, int bins, long long* __restrict__ D) {
    __shared__ double rcp[CHI_RCP_ENTRIES];  // 2^20 / b correctly rounded; rcp[0] = 0 gives T(0, 0) = 0
    for (int b = threadIdx.x; b < CHI_RCP_ENTRIES; b += blockDim.x) rcp[b] = b == 0 ? 0.0 : __ddiv_rn(1048576.0, (double)b);
    __syncthreads();
    const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    const int q0 = blockIdx.y * QB;
    const size_t d = (size_t)regions * bins;
    for (int c = blockIdx.x * warps + (threadIdx.x >> 5); c < n_rows; c += gridDim.x * warps) {
        const TG* g = G + c * d;
        unsigned long long acc[QB];
#pragma unroll
        for (int k = 0; k < QB; ++k) acc[k] = 0;
        for (int j = 0; j < regions; ++j) {
            const unsigned w = (unsigned)__ldg(W + j);
            if (w == 0) continue;
            const TG* gj = g + (size_t)j * bins;
            for (int i0 = lane; i0 < bins; i0 += 32 * CH) {
                const TG* gp = gj + i0;
                unsigned M[CH];
                unsigned any_m = 0;  // unsigned: a negative int32 count is above 1023 here
#pragma unroll
                for (int t = 0; t < CH; ++t) {
                    M[t] = i0 + 32 * t < bins ? (unsigned)(int)gp[32 * t] : 0u;  // 0: T(0, 0) = 0
                    any_m |= M[t];
                }
#pragma unroll
                for (int k = 0; k < QB; ++k) {
                    if (q0 + k >= m) continue;
                    const TQ* qp = Q + (size_t)(q0 + k) * d + (size_t)j * bins + i0;
                    unsigned S[CH];
                    unsigned any = any_m;
#pragma unroll
                    for (int t = 0; t < CH; ++t) {
                        S[t] = i0 + 32 * t < bins ? (unsigned)(int)__ldg(qp + 32 * t) : 0u;
                        any |= S[t];
                    }
                    if (any <= CHI_SMALL_MAX) {
#pragma unroll
                        for (int t = 0; t < CH; ++t) mad_wide(acc[k], w, chi_term_fp64(S[t], M[t], rcp));
                    } else {
#pragma unroll
                        for (int t = 0; t < CH; ++t) {
                            if ((S[t] | M[t]) <= CHI_SMALL_MAX) mad_wide(acc[k], w, chi_term_fp64(S[t], M[t], rcp));
                            else chi_add_wrapping(acc[k], w, (int)S[t], (int)M[t], 20);
                        }
                    }
                }
            }
        }
#pragma unroll
        for (int k = 0; k < QB; ++k) {
            unsigned long long v = acc[k];
            for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
            if (lane == 0 && q0 + k < m) D[(size_t)(q0 + k) * n_rows + c] = (long long)v;
        }
    }
}
