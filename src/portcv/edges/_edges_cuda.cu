// Edge detection kernels (src/portcv/edges/_edges.py is the portable reference of each):
//   portcv_edges_detect<ALPHA, TILE_H, LISTING, KS>  Del Vecchio et al.'s Algorithm 1 on a uint8
//       image: (KS x KS low-pass when KS > 0 ->) Sobel -> m = gx^2 + gy^2 -> sector -> local
//       maximum -> accepted -> (2 ALPHA + 1)^2 apron *gather* -> uint8 {0, 255}, in one pass
//       over a shared-memory tile;
//   portcv_edges_magnitude<L2>                   exact |gx| + |gy| or isqrt(gx^2 + gy^2);
//   portcv_canny_cc_*                            Canny's hysteresis as connected components;
//   portcv_canny_candidates<L2, T>               Canny's NMS and double threshold.
// Compiled by portcv.backends.cupy with --std=c++17 --fmad=false.
//
// Exactness: integers only. A 3x3 Sobel of uint8 is at most 4 * 255 = 1020 in magnitude, so
// m <= 2 * 1020^2 < 2^21 and 3 * gx^2 < 2^22 fit int32, and (m << 3) | sector < 2^24 packs the
// sector beside m. Thresholds arrive as floor(t^2), so "||G|| > t" is "m > floor(t^2)".

#include "common.cuh"

constexpr int EDGE_TILE_W = 128;  // output pixels per tile row
constexpr int EDGE_THREADS = 256;
constexpr int EDGE_SHARED_LIMIT = 48 * 1024;

// Sector codes, as src/portcv/edges/_edges.py's SECTOR_* constants.
enum Sector { SECTOR_HORIZONTAL = 0, SECTOR_DIAGONAL_45 = 1, SECTOR_VERTICAL = 2, SECTOR_DIAGONAL_135 = 3,
              SECTOR_NONE = 4 };

// Exact integer sector predicates (tan^2(pi/6) = 1/3, tan^2(pi/3) = 3): see _edges.sectors.
template <bool LISTING>
__device__ __forceinline__ int sector_of(int gx, int gy, int gx2, int gy2) {
    if (3 * gy2 < gx2) return (LISTING && gy == 0 && gx < 0) ? SECTOR_NONE : SECTOR_HORIZONTAL;
    if (3 * gx2 < gy2) return SECTOR_VERTICAL;
    if (gx2 < 3 * gy2 && gy2 < 3 * gx2) return ((gx > 0) == (gy > 0)) ? SECTOR_DIAGONAL_45 : SECTOR_DIAGONAL_135;
    return SECTOR_NONE;  // gx = gy = 0
}

// Layout: `planes` gray images of H x W bytes (blockIdx.z = plane). A block makes a 128 x TILE_H
// output tile (TILE_H = 32, 16 or 8, the launcher's choice so shared memory fits 48 KB):
//   s_in   the low-passed image on the tile + R = ALPHA + 2 halo (apron + NMS ring + Sobel ring),
//          loaded once with 16-byte vectors (load_tile, border remapped like the portable pad);
//   s_m    (m << 3) | sector on the tile + ALPHA + 1 ring;
//   s_acc  accepted (0/1) on the tile + ALPHA ring;
//   s_hd   the horizontal OR of s_acc over 2 ALPHA + 1 columns (reuses s_in's bytes);
// then each output pixel ORs s_hd over 2 ALPHA + 1 rows (the separable apron dilation) and ANDs
// m > floor(t_l^2). No thread writes another pixel's output: the apron is a gather.
//
// KS > 0 fuses the low-pass (one launch instead of two): `src` is the raw image, s_raw (in s_m's
// bytes, free until step 1) holds it on the tile + R + KS / 2 halo, and s_in gets the separable
// blur with the KS Q8 `taps` (sum 256) rounded as the separable kernel does, (v + 2^15) >> 16.
// Outside the image, s_in must hold what the Sobel's border reads from the *blurred* image,
// which differs from the blur of the raw border (replicate, constant): those cells are refilled
// from the remapped blurred pixel. Only the ring 1 outside matters (no m outside the image is
// ever compared: accepted pixels are inside [ALPHA + 1, n - ALPHA - 2] or [2, n - 2]), and its
// remapped cell always lies in the tile; farther cells get 0.
template <int ALPHA, int TILE_H, bool LISTING, int KS>
__global__ void __launch_bounds__(EDGE_THREADS)
portcv_edges_detect(const unsigned char* __restrict__ src, unsigned char* __restrict__ dst, int H, int W,
                    int low_sq, int high_sq, int border, const int* __restrict__ taps) {
    constexpr int R = ALPHA + 2;
    constexpr int LEAD = (R + 15) / 16 * 16;  // shared column 0 = global column bx0 - LEAD (16-byte aligned)
    constexpr int IN_W = (LEAD + EDGE_TILE_W + R + 15) / 16 * 16;
    constexpr int IN_H = TILE_H + 2 * R;
    constexpr int PITCH = IN_W + 16;
    constexpr int MW = EDGE_TILE_W + 2 * ALPHA + 2, MH = TILE_H + 2 * ALPHA + 2;
    constexpr int AW = EDGE_TILE_W + 2 * ALPHA, AH = TILE_H + 2 * ALPHA;
    constexpr int ROWS = TILE_H / (EDGE_THREADS / (EDGE_TILE_W / 4));  // output rows per thread
    constexpr int KR = KS / 2;
    constexpr int LEAD_RAW = (R + KR + 15) / 16 * 16;  // s_raw column 0 = global column bx0 - LEAD_RAW
    constexpr int RAW_W = (LEAD_RAW + EDGE_TILE_W + R + KR + 15) / 16 * 16;
    constexpr int RAW_H = IN_H + 2 * KR;
    constexpr int RAW_PITCH = RAW_W + 16;
    static_assert(TILE_H % 8 == 0 && ROWS >= 1, "TILE_H is 8, 16 or 32");
    static_assert(KS == 0 || (KS % 2 == 1 && KS <= 7), "KS is 0 (no low-pass) or an odd size up to 7");
    static_assert(AH * EDGE_TILE_W <= IN_H * PITCH, "s_hd reuses s_in");
    static_assert(KS == 0 || RAW_H * RAW_PITCH <= MH * MW * 4, "s_raw reuses s_m");
    static_assert(IN_H * PITCH + MH * MW * 4 + AH * AW <= EDGE_SHARED_LIMIT, "shared memory over 48 KB");

    __shared__ __align__(16) unsigned char s_in[IN_H][PITCH];
    __shared__ __align__(16) int s_m[MH][MW];
    __shared__ unsigned char s_acc[AH][AW];
    unsigned char (*s_hd)[EDGE_TILE_W] = reinterpret_cast<unsigned char (*)[EDGE_TILE_W]>(&s_in[0][0]);

    const int tid = threadIdx.x;
    const int bx0 = blockIdx.x * EDGE_TILE_W, by0 = blockIdx.y * TILE_H;
    const size_t plane_off = (size_t)blockIdx.z * H * W;
    const bool aligned = (reinterpret_cast<size_t>(src) & 15) == 0;
    if constexpr (KS == 0) {
        load_tile<IN_H, IN_W, 1, EDGE_THREADS, PITCH>(s_in, src + plane_off, aligned, H, W, bx0 - LEAD, by0 - R,
                                                      border, 0);  // cv2.Sobel pads a constant border with 0
        __syncthreads();
    } else {
        unsigned char (*s_raw)[RAW_PITCH] = reinterpret_cast<unsigned char (*)[RAW_PITCH]>(&s_m[0][0]);
        load_tile<RAW_H, RAW_W, 1, EDGE_THREADS, RAW_PITCH>(s_raw, src + plane_off, aligned, H, W, bx0 - LEAD_RAW,
                                                            by0 - R - KR, border, 0);  // GaussianBlur's border
        int t[KS];
#pragma unroll
        for (int k = 0; k < KS; ++k) t[k] = taps[k];
        __syncthreads();
        // The blur on every cell the Sobel reads: s_in columns [LEAD - R, LEAD + 128 + R).
        constexpr int BW = EDGE_TILE_W + 2 * R;
        for (int i = tid; i < IN_H * BW; i += EDGE_THREADS) {
            const int r = i / BW, c = i - r * BW;
            const unsigned char* p = &s_raw[r][c + LEAD_RAW - R - KR];
            int v = 0;
#pragma unroll
            for (int a = 0; a < KS; ++a) {
                int h = 0;
#pragma unroll
                for (int b = 0; b < KS; ++b) h += t[b] * p[a * RAW_PITCH + b];
                v += t[a] * h;
            }
            s_in[r][c + LEAD - R] = (unsigned char)min(255, (v + (1 << 15)) >> 16);
        }
        __syncthreads();
        // Cells outside the image: the Sobel's border of the blurred image (see above).
        if (by0 - R < 0 || by0 + TILE_H + R > H || bx0 - R < 0 || bx0 + EDGE_TILE_W + R > W) {
            for (int i = tid; i < IN_H * BW; i += EDGE_THREADS) {
                const int r = i / BW, c = i - r * BW;
                const int y = by0 - R + r, x = bx0 - R + c;
                if (y >= 0 && y < H && x >= 0 && x < W) continue;
                const int ys = remap(y, H, border) - (by0 - R), xs = remap(x, W, border) - (bx0 - R);
                const bool inside = y >= -1 && y <= H && x >= -1 && x <= W && ys >= 0 && ys < IN_H && xs >= 0 &&
                                    xs < BW && remap(y, H, border) >= 0 && remap(x, W, border) >= 0;
                s_in[r][c + LEAD - R] = inside ? s_in[ys][xs + LEAD - R] : 0;
            }
            __syncthreads();
        }
    }

    // 1. Sobel, m and sector on the tile + ALPHA + 1 ring. Element (r, c) is pixel
    //    (by0 - ALPHA - 1 + r, bx0 - ALPHA - 1 + c); its 3x3 window starts at s_in[r][c + LEAD - R].
    for (int i = tid; i < MH * MW; i += EDGE_THREADS) {
        const int r = i / MW, c = i - r * MW;
        const unsigned char* p0 = &s_in[r][c + LEAD - R];
        const unsigned char* p1 = p0 + PITCH;
        const unsigned char* p2 = p1 + PITCH;
        const int gx = ((int)p0[2] - p0[0]) + 2 * ((int)p1[2] - p1[0]) + ((int)p2[2] - p2[0]);
        const int gy = ((int)p2[0] + 2 * p2[1] + p2[2]) - ((int)p0[0] + 2 * p0[1] + p0[2]);
        const int gx2 = gx * gx, gy2 = gy * gy;
        s_m[r][c] = ((gx2 + gy2) << 3) | sector_of<LISTING>(gx, gy, gx2, gy2);
    }
    __syncthreads();

    // 2. Accepted (Algorithm 1, line 12) on the tile + ALPHA ring: inside the centre region,
    //    m > floor(t_h^2), strictly above both neighbours along the sector.
    const int r_lo = LISTING ? 2 : ALPHA + 1, r_hi = LISTING ? H - 2 : H - ALPHA - 2;
    const int c_lo = LISTING ? 2 : ALPHA + 1, c_hi = LISTING ? W - 2 : W - ALPHA - 2;
    for (int i = tid; i < AH * AW; i += EDGE_THREADS) {
        const int r = i / AW, c = i - r * AW;
        const int y = by0 - ALPHA + r, x = bx0 - ALPHA + c;
        unsigned char a = 0;
        if (y >= r_lo && y <= r_hi && x >= c_lo && x <= c_hi) {
            const int v = s_m[r + 1][c + 1];
            const int m = v >> 3;
            if (m > high_sq) {
                int n0 = 0x7fffffff, n1 = 0x7fffffff;  // SECTOR_NONE: never a maximum
                switch (v & 7) {
                    case SECTOR_HORIZONTAL: n0 = s_m[r + 1][c]; n1 = s_m[r + 1][c + 2]; break;
                    case SECTOR_DIAGONAL_45: n0 = s_m[r + 2][c + 2]; n1 = s_m[r][c]; break;      // (i+1, j+1), (i-1, j-1)
                    case SECTOR_VERTICAL: n0 = s_m[r][c + 1]; n1 = s_m[r + 2][c + 1]; break;
                    case SECTOR_DIAGONAL_135: n0 = s_m[r + 2][c]; n1 = s_m[r][c + 2]; break;     // (i+1, j-1), (i-1, j+1)
                    default: break;
                }
                a = (m > (n0 >> 3)) && (m > (n1 >> 3));
            }
        }
        s_acc[r][c] = a;
    }
    __syncthreads();

    // 3. Horizontal OR of the accepted map over 2 ALPHA + 1 columns (s_in is no longer needed).
    for (int i = tid; i < AH * EDGE_TILE_W; i += EDGE_THREADS) {
        const int r = i / EDGE_TILE_W, q = i - r * EDGE_TILE_W;
        unsigned char o = 0;
#pragma unroll
        for (int k = 0; k <= 2 * ALPHA; ++k) o |= s_acc[r][q + k];
        s_hd[r][q] = o;
    }
    __syncthreads();

    // 4. Vertical OR over 2 ALPHA + 1 rows (4 pixels per word), AND m > floor(t_l^2); store.
    const int q = (tid % (EDGE_TILE_W / 4)) * 4;
    const int r0 = (tid / (EDGE_TILE_W / 4)) * ROWS;
    const int xb = bx0 + q;
    if (xb >= W) return;
    const bool vector_store = (W % 4 == 0);
#pragma unroll
    for (int rr = 0; rr < ROWS; ++rr) {
        const int y = by0 + r0 + rr;
        if (y >= H) break;
        unsigned int d = 0;
#pragma unroll
        for (int k = 0; k <= 2 * ALPHA; ++k) d |= *reinterpret_cast<const unsigned int*>(&s_hd[r0 + rr + k][q]);
        unsigned char o[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            bool edge = ((d >> (8 * e)) & 255u) && (s_m[r0 + rr + ALPHA + 1][q + e + ALPHA + 1] >> 3) > low_sq;
            if (LISTING) {
                // Listing 4 writes the apron only where r + m > 0 and c + n > 0, and sets the
                // accepted pixel itself to 255 whatever t_l.
                edge = (edge && y >= 1 && xb + e >= 1) || s_acc[r0 + rr + ALPHA][q + e + ALPHA];
            }
            o[e] = edge ? 255 : 0;
        }
        store4(dst + plane_off + (size_t)y * W + xb, o, W - xb, vector_store);
    }
}

// Gradient magnitude of int16 gradients: |gx| + |gy| (L1) or floor(sqrt(gx^2 + gy^2)) (L2).
// s = gx^2 + gy^2 <= 2^31 is exact in uint32 and in double; the IEEE double square root is
// within one of the integer root, and the two integer checks make the floor exact.
template <bool L2>
__global__ void portcv_edges_magnitude(const short* __restrict__ gx, const short* __restrict__ gy,
                                       int* __restrict__ out, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x) {
        const int a = gx[i], b = gy[i];
        if (L2) {
            const unsigned long long s = (unsigned long long)(a * a) + (unsigned long long)(b * b);
            unsigned long long r = (unsigned long long)sqrt((double)s);
            if (r * r > s) --r;
            else if ((r + 1) * (r + 1) <= s) ++r;
            out[i] = (int)r;
        } else {
            out[i] = abs(a) + abs(b);
        }
    }
}

// Canny hysteresis as connected components (the edges are the 8-connected candidate components
// that hold a strong pixel), by union-find on a label per pixel: four launches, no host loop.
// `parent` holds, for each pixel of a chunk of planes, the chunk-wide index of a pixel of its
// component with parent[i] <= i; a root has parent[r] == r. Unions link the larger root under
// the smaller one with atomicMin (Playne and Hawick's concurrent union-find), so parents only
// decrease and every thread schedule ends in the same partition; the edges depend only on the
// partition. Label reads are plain loads and may see a parent older than another thread's
// link: that is still a pixel of the same component with a smaller index, so finds still end
// at a root of it, and a failed atomicMin retries from the value it found.
//   1. portcv_canny_cc_init:     parent[i] = i, strong_root[i] = 0 for each candidate.
//   2. portcv_canny_cc_union:    each candidate joins its candidate W, NW, N, NE neighbours (at
//                                most two of them: the rest are joined through those).
//   3. portcv_canny_cc_compress: each candidate points at its root (shortening paths for 4),
//                                a strong candidate marks strong_root[root].
//   4. portcv_canny_cc_edges:    out = 255 where a candidate's root is marked, else 0.
// state: 0 none, 1 weak candidate, 2 strong candidate (portcv_canny_candidates).

__device__ __forceinline__ int canny_cc_find(const int* parent, int i) {
    int p = parent[i];
    while (p != i) {
        i = p;
        p = parent[i];
    }
    return i;
}

__global__ void portcv_canny_cc_init(const unsigned char* __restrict__ state, int* __restrict__ parent,
                                     unsigned char* __restrict__ strong_root, int n) {
    // Only candidates: launches 2-4 read the entries of candidates only.
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        if (!state[i]) continue;
        parent[i] = i;
        strong_root[i] = 0;
    }
}

__device__ __forceinline__ void canny_cc_union(int* parent, int a, int b) {
    for (;;) {
        a = canny_cc_find(parent, a);
        b = canny_cc_find(parent, b);
        if (a == b) return;
        if (a > b) {  // link the larger root under the smaller
            const int t = a;
            a = b;
            b = t;
        }
        const int old = atomicMin(&parent[b], a);
        if (old == b) return;  // b was still a root: linked
        b = old;               // b was linked meanwhile: retry from its new parent
    }
}

// n = planes * H * W pixels of the chunk (< 2^31, checked by the launcher).
__global__ void portcv_canny_cc_union(const unsigned char* __restrict__ state, int* parent, int H, int W, int n) {
    const int hw = H * W;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        if (!state[i]) continue;
        const int r = i % hw, y = r / W, x = r - y * W;
        // Wu, Otoo and Suzuki's scan-order decision tree: at most two unions per pixel, and
        // still every pair of 8-adjacent candidates ends up joined (the neighbours skipped are
        // adjacent to one that is joined, and are joined to it by their own pixel's tree).
        const bool w = x > 0 && state[i - 1];
        const int up = i - W;
        const bool nw = y > 0 && x > 0 && state[up - 1], nn = y > 0 && state[up];
        const bool ne = y > 0 && x + 1 < W && state[up + 1];
        if (nn) {
            canny_cc_union(parent, i, up);
        } else if (ne) {
            canny_cc_union(parent, i, up + 1);
            if (nw) canny_cc_union(parent, i, up - 1);
            else if (w) canny_cc_union(parent, i, i - 1);
        } else if (nw) {
            canny_cc_union(parent, i, up - 1);
        } else if (w) {
            canny_cc_union(parent, i, i - 1);
        }
    }
}

__global__ void portcv_canny_cc_compress(const unsigned char* __restrict__ state, int* parent,
                                         unsigned char* __restrict__ strong_root, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        const unsigned char s = state[i];
        if (!s) continue;
        // Concurrent compression only replaces a parent by one of its ancestors: finds stay valid.
        const int root = canny_cc_find(parent, i);
        parent[i] = root;
        if (s == 2) strong_root[root] = 1;  // every writer stores the same value
    }
}

__global__ void portcv_canny_cc_edges(const unsigned char* __restrict__ state, const int* __restrict__ parent,
                                      const unsigned char* __restrict__ strong_root, unsigned char* __restrict__ out,
                                      int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        out[i] = (state[i] && strong_root[parent[i]]) ? 255 : 0;  // parent[i] is a root after launch 3
}

// Canny's candidates, as cv::Canny's NMS (src/portcv/edges/_edges.py canny_candidates_kernel): state 0
// (none), 1 (weak: a maximum with m > low), 2 (strong: also m > high) per pixel. A block makes
// a T x T tile; s_m holds m (|gx| + |gy| or gx^2 + gy^2, int32; 0 outside the image, as
// OpenCV's zeroed border rows/columns) on the tile + 1 ring. Direction by OpenCV's Q15 tangents:
// y = |gy| << 15 against |gx| * 13573 (tan 22.5 deg) and |gx| * (13573 + 2^16) (tan 67.5 deg);
// |g| <= 24480 (aperture <= 7, 7 scaled by 1/16) keeps every product below 2^31.
template <bool L2, int T>
__global__ void __launch_bounds__(256)
portcv_canny_candidates(const short* __restrict__ gx, const short* __restrict__ gy, unsigned char* __restrict__ out,
                        int H, int W, int low, int high) {
    static_assert(256 % T == 0 && (T * T) % 256 == 0, "T x T pixels over 256 threads");
    constexpr int RSTEP = 256 / T, ROWS = T * T / 256;
    constexpr int TG22 = 13573;
    __shared__ int s_m[T + 2][T + 3];

    const int tid = threadIdx.x;
    const int tx = tid % T, ty = tid / T;
    const int x0 = blockIdx.x * T, y0 = blockIdx.y * T;
    const size_t plane_off = (size_t)blockIdx.z * H * W;
    for (int i = tid; i < (T + 2) * (T + 2); i += 256) {
        const int r = i / (T + 2), c = i - r * (T + 2);
        const int y = y0 - 1 + r, x = x0 - 1 + c;
        int m = 0;
        if (y >= 0 && y < H && x >= 0 && x < W) {
            const int a = gx[plane_off + (size_t)y * W + x], b = gy[plane_off + (size_t)y * W + x];
            m = L2 ? a * a + b * b : abs(a) + abs(b);
        }
        s_m[r][c] = m;
    }
    __syncthreads();

    const int x = x0 + tx;
    if (x >= W) return;
#pragma unroll
    for (int k = 0; k < ROWS; ++k) {
        const int y = y0 + ty + k * RSTEP;
        if (y >= H) break;
        const int r = ty + k * RSTEP + 1, c = tx + 1;
        const int m = s_m[r][c];
        unsigned char state = 0;
        if (m > low) {
            const size_t at = plane_off + (size_t)y * W + x;
            const int xs = gx[at], ys = gy[at];
            const int ax = abs(xs), ay = abs(ys) << 15;
            const int tg22x = ax * TG22;
            bool is_max;
            if (ay < tg22x) {
                is_max = m > s_m[r][c - 1] && m >= s_m[r][c + 1];
            } else if (ay > tg22x + (ax << 16)) {
                is_max = m > s_m[r - 1][c] && m >= s_m[r + 1][c];
            } else {
                const int s = (xs ^ ys) < 0 ? -1 : 1;
                is_max = m > s_m[r - 1][c - s] && m > s_m[r + 1][c + s];
            }
            if (is_max) state = m > high ? 2 : 1;
        }
        out[plane_off + (size_t)y * W + x] = state;
    }
}
