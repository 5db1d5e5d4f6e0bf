// Direct 3-D correlation of an integer volume, eq. 1 of Lin et al.'s video-parallelization
// article, in two launches. Compiled by portcv.backends.cupy with --fmad=false.
//
// portcv_convolve3d_pad: the video extended by the kernel's reach (KH/2 rows and KW/2 columns on
// each side, PAD_T frames at each end) under `border` (common.cuh's remap, the rule of
// portcv/_border.py's pad_axis), its rows `pitch` elements apart (16-byte aligned). One launch
// instead of CuPy's slices and joins: at Table 1's size (k = 5) those took 40 of a clip's 61 µs
// on an H100. (Reading the border in place in the sums instead made their loop 1.5-1.7x slower:
// remapped rows, more registers.)
//
// portcv_convolve3d: the 'valid' part of
//   out[f][t][y][x] = sum_{l,n,m} taps[f][l][n][m] * src[t + l][y + n][x + m]
// of the padded volume (Wp columns of each row used), with the kernel already flipped by the caller.
//
// The article's "streaming" idea, moved from shared memory to registers: a thread owns
// FRAMES output frames x XS consecutive pixels of one row (16 or 32 sums in registers) and walks
// the FRAMES + KT - 1 input frames they need, row tap by row tap. Each input row window
// (XS + KW - 1 samples, read once through L1) feeds every output frame that uses it, with the
// taps of that frame's time tap: up to FRAMES * XS * KW multiply-adds per window. The taps of
// one kernel sit in shared memory and are read warp-uniformly (a broadcast).
//
// Exactness: AccT = float only when every partial sum is an integer below 2^24 in magnitude
// (checked on the host: exact_in_float32), so each __fmaf_rn is exact; otherwise AccT = int and
// the host checked max|src| * sum|taps| < 2^31. Either way the int32 result is the exact sum.

#include "common.cuh"

constexpr int C3_FRAMES = 4;  // output frames per thread
constexpr int C3_BX = 32, C3_BY = 8;

__device__ __forceinline__ float c3_mad(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ __forceinline__ int c3_mad(int a, int b, int c) { return a * b + c; }

template <typename InT>
__global__ void __launch_bounds__(256) portcv_convolve3d_pad(const InT* __restrict__ src, InT* __restrict__ dst,
                                                                int frames, int T, int H, int W, int Tp, int Hp,
                                                                int Wp, int pitch, int pad_t, int border,
                                                                int border_value) {
    // A warp per padded row (rows `pitch` elements apart, a multiple of 16 bytes). The pieces of
    // 16 bytes that lie inside the source row are a lane's each: 5 aligned word loads shifted
    // into place, one vector store. The columns left over at the row's ends (all of them when
    // source rows do not start on a word) are a lane's per sample, remapped under `border`. So
    // the lanes of a warp take one path at a time: with a lane remapping its piece's samples one
    // by one while the others waited, ncu counted 6 of 32 threads active and the pad ran at a
    // quarter of the memory's bandwidth. Samples from Wp to the pitch are made too (so nothing
    // the sums read is uninitialised); the sums' whole-word windows read some of them, which
    // reach only sums of pixels past W, never stored.
    constexpr int V = 16 / sizeof(InT);
    constexpr int WORD = 4 / sizeof(InT);
    const int pieces = pitch / V;
    const int ph = (Hp - H) / 2, pw = (Wp - W) / 2;
    const InT fill = static_cast<InT>(border_value);
    // Source rows start on a word when the video does and a row is whole words.
    const bool words = ((reinterpret_cast<unsigned long long>(src) | (unsigned long long)W * sizeof(InT)) & 3) == 0;
    // Pieces [first, end) are inside the source row, with a word to spare for the shift.
    const int first = (pw + V - 1) / V;
    const int last_start = W - V - WORD + pw;  // the largest first column of such a piece
    const int end = words && last_start >= 0 ? max(first, last_start / V + 1) : first;
    const int left = words ? first * V : 0;  // columns made per sample: [0, left) and [end * V, pitch)
    const int right0 = words ? end * V : 0;
    const int per_sample = left + pitch - right0;
    const int lane = threadIdx.x % 32;  // blockDim.x is a multiple of 32 (launch_1d's 256)
    const int rows = frames * Hp;  // frame = plane * Tp + padded frame; the launcher keeps it in range
    for (int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32; row < rows; row += gridDim.x * blockDim.x / 32) {
        const int frame = row / Hp;
        const int plane = frame / Tp;
        const int ts = remap(frame - plane * Tp - pad_t, T, border);
        const int ys = remap(row - frame * Hp - ph, H, border);
        InT* out = dst + (size_t)row * pitch;
        if (ts < 0 || ys < 0) {  // a constant row
            union {
                uint4 v;
                InT e[V];
            } piece;
#pragma unroll
            for (int j = 0; j < V; ++j) piece.e[j] = fill;
            for (int p = lane; p < pieces; p += 32) reinterpret_cast<uint4*>(out)[p] = piece.v;
            continue;
        }
        const InT* src_row = src + (((size_t)plane * T + ts) * H + ys) * W;
        auto inside = [&](int p) {  // piece p, inside the source row
            const int byte = (p * V - pw) * static_cast<int>(sizeof(InT));
            const unsigned* w = reinterpret_cast<const unsigned*>(
                reinterpret_cast<const unsigned char*>(src_row) + (byte & ~3));
            unsigned loaded[5];
#pragma unroll
            for (int j = 0; j < 5; ++j) loaded[j] = __ldg(w + j);
            const int shift = 8 * (byte & 3);
            return make_uint4(__funnelshift_r(loaded[0], loaded[1], shift), __funnelshift_r(loaded[1], loaded[2], shift),
                              __funnelshift_r(loaded[2], loaded[3], shift), __funnelshift_r(loaded[3], loaded[4], shift));
        };
        // Two pieces a lane, both loaded before either is stored: twice the bytes in flight.
        for (int p = first + lane; p < end; p += 64) {
            const uint4 one = inside(p);
            const bool two = p + 32 < end;
            const uint4 other = two ? inside(p + 32) : one;
            reinterpret_cast<uint4*>(out)[p] = one;
            if (two) reinterpret_cast<uint4*>(out)[p + 32] = other;
        }
        for (int i = lane; i < per_sample; i += 32) {
            const int x = i < left ? i : right0 + (i - left);
            const int xs = remap(x - pw, W, border);
            out[x] = xs < 0 ? fill : __ldg(src_row + xs);
        }
    }
}

// Sample i of a row read as 32-bit words, as the sums' type. For float sums a byte permute
// builds the float 2^23 + u (u the sample as an unsigned integer) and one exact subtraction
// leaves the sample: the integer-to-float conversion it replaces runs at a quarter of the FP32
// rate on Hopper (16 a cycle an SM) and fed every sample of every window.
template <typename InT> struct C3Sample;
template <> struct C3Sample<unsigned char> {
    static __device__ __forceinline__ int as_int(const unsigned* w, int i) { return (w[i >> 2] >> (8 * (i & 3))) & 0xFF; }
    static __device__ __forceinline__ float as_float(const unsigned* w, int i) {
        return __int_as_float(__byte_perm(w[i >> 2], 0x4B000000u, 0x7650 | (i & 3))) - 8388608.0f;
    }
};
template <> struct C3Sample<unsigned short> {
    static __device__ __forceinline__ int as_int(const unsigned* w, int i) { return (w[i >> 1] >> (16 * (i & 1))) & 0xFFFF; }
    static __device__ __forceinline__ float as_float(const unsigned* w, int i) {
        return __int_as_float(__byte_perm(w[i >> 1], 0x4B000000u, (i & 1) ? 0x7632 : 0x7610)) - 8388608.0f;
    }
};
template <> struct C3Sample<short> {
    static __device__ __forceinline__ int as_int(const unsigned* w, int i) { return static_cast<short>(w[i >> 1] >> (16 * (i & 1))); }
    // The sign bit flipped, the sample + 2^15 is unsigned: 2^23 + 2^15 comes off afterwards.
    static __device__ __forceinline__ float as_float(const unsigned* w, int i) {
        return __int_as_float(__byte_perm(w[i >> 1] ^ 0x80008000u, 0x4B000000u, (i & 1) ? 0x7632 : 0x7610)) - 8421376.0f;
    }
};

template <typename InT> __device__ __forceinline__ void c3_sample(float& v, const unsigned* w, int i) { v = C3Sample<InT>::as_float(w, i); }
template <typename InT> __device__ __forceinline__ void c3_sample(int& v, const unsigned* w, int i) { v = C3Sample<InT>::as_int(w, i); }

template <typename AccT> struct C3Vec4;  // four taps, one shared-memory load
template <> struct C3Vec4<float> { using type = float4; };
template <> struct C3Vec4<int> { using type = int4; };

// XS: output pixels per thread (consecutive x). The launch bounds keep 64 registers, 4 blocks
// an SM (float sums at kw 23-31 then spill 8-16 bytes on sm_90).
template <typename InT, typename AccT, int KW, int XS>
__global__ void __launch_bounds__(C3_BX * C3_BY, 4)
portcv_convolve3d(const InT* __restrict__ src, int* __restrict__ dst, int Tp, int Hp, int Wp, int pitch,
                  int T_out, int H, int W, int KT, int KH, int F, int t_blocks, const int* __restrict__ taps) {
    extern __shared__ __align__(16) unsigned char c3_smem[];  // the taps are read as float4 / int4
    AccT* s_taps = reinterpret_cast<AccT*>(c3_smem);
    const int f = blockIdx.z % F;
    const int rest = blockIdx.z / F;
    const int tb = rest % t_blocks;
    const int plane = rest / t_blocks;
    // The taps in shared memory, each row of KW padded with zeros to KWP (a multiple of 4), so
    // a thread reads 4 taps with one vector load.
    constexpr int KWP = (KW + 3) / 4 * 4;
    const int n_taps = KT * KH * KW;
    const int tid = threadIdx.y * C3_BX + threadIdx.x;
    for (int i = tid; i < KT * KH * KWP; i += C3_BX * C3_BY) {
        const int tap_row = i / KWP, m = i - tap_row * KWP;
        s_taps[i] = m < KW ? static_cast<AccT>(taps[(size_t)f * n_taps + tap_row * KW + m]) : AccT(0);
    }
    __syncthreads();

    const int x0 = (blockIdx.x * C3_BX + threadIdx.x) * XS;
    const int y = blockIdx.y * C3_BY + threadIdx.y;
    if (x0 >= W || y >= H) return;
    const int t0 = tb * C3_FRAMES;
    const int frames = min(C3_FRAMES, T_out - t0);
    const InT* base = src + (size_t)plane * Tp * Hp * pitch;

    AccT acc[C3_FRAMES][XS];
#pragma unroll
    for (int j = 0; j < C3_FRAMES; ++j)
#pragma unroll
        for (int r = 0; r < XS; ++r) acc[j][r] = 0;

    // A thread's window of a row, read as whole aligned words (x0 is a multiple of XS, rows are
    // 16-byte aligned): the launcher's pitch leaves room for the words past the last window, and
    // samples past Wp only reach sums of pixels past W, which are not stored.
    constexpr int WIN = XS + KW - 1;
    constexpr int WORDS = (WIN * static_cast<int>(sizeof(InT)) + 3) / 4;
    using Vec4 = typename C3Vec4<AccT>::type;
    const int in_frames = frames + KT - 1;
    for (int tt = 0; tt < in_frames; ++tt) {
        const InT* frame = base + (size_t)(t0 + tt) * Hp * pitch;
        for (int n = 0; n < KH; ++n) {
            const unsigned* row = reinterpret_cast<const unsigned*>(frame + (size_t)(y + n) * pitch + x0);
            unsigned raw[WORDS];
#pragma unroll
            for (int q = 0; q < WORDS; ++q) raw[q] = __ldg(row + q);
            AccT win[WIN];
#pragma unroll
            for (int i = 0; i < WIN; ++i) c3_sample<InT>(win[i], raw, i);
#pragma unroll
            for (int j = 0; j < C3_FRAMES; ++j) {
                const int l = tt - j;  // the time tap joining input frame tt to output frame j
                if (l < 0 || l >= KT || j >= frames) continue;  // uniform across the block
                const Vec4* k = reinterpret_cast<const Vec4*>(s_taps + (l * KH + n) * KWP);
#pragma unroll
                for (int q = 0; q < KWP / 4; ++q) {
                    const Vec4 four = k[q];
                    const AccT kv[4] = {four.x, four.y, four.z, four.w};
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        if (4 * q + e >= KW) break;
#pragma unroll
                        for (int r = 0; r < XS; ++r) acc[j][r] = c3_mad(kv[e], win[r + 4 * q + e], acc[j][r]);
                    }
                }
            }
        }
    }

    int* out = dst + (((size_t)plane * F + f) * T_out + t0) * H * W + (size_t)y * W + x0;
#pragma unroll
    for (int j = 0; j < C3_FRAMES; ++j) {
        if (j >= frames) break;
#pragma unroll
        for (int r = 0; r < XS; ++r)
            if (x0 + r < W) out[(size_t)j * H * W + r] = static_cast<int>(acc[j][r]);
    }
}

// The FFT methods on CuPy: cuFFT makes the transforms, these three kernels the steps around them
// that CuPy would otherwise do as several whole-array passes each (slices for the border, a
// float64 copy, the transforms' zero-padded copy; one product and one sum per time tap; a copy
// of the kept part, a rounding, a conversion). None of them changes a bit: the FFT result is
// within 0.25 of the exact integer (fft_error_bound, checked on the host), so the order of its
// floating-point steps is free and rounding to the nearest gives the exact sum.
//
// portcv_convolve3d_to_fft: the video padded by `border` (PAD_T frames, PH rows, PW columns on
// each side, as portcv_convolve3d_pad), then by zeros up to the FFT lengths T2 x H2 x W2, as
// float64. A block per row of the output, its threads along the row.
template <typename InT>
__global__ void __launch_bounds__(256) portcv_convolve3d_to_fft(const InT* __restrict__ src, double* __restrict__ dst,
                                                                   long long rows, int T, int H, int W, int Tp, int Hp,
                                                                   int Wp, int T2, int H2, int W2, int pad_t, int ph,
                                                                   int pw, int border, int border_value) {
    const double fill = static_cast<double>(static_cast<InT>(border_value));
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        const int y = (int)(row % H2);
        const long long frame = row / H2;
        const int t = (int)(frame % T2);
        const long long plane = frame / T2;
        double* out = dst + row * W2;
        const int ts = remap(t - pad_t, T, border), ys = remap(y - ph, H, border);
        if (t >= Tp || y >= Hp) {  // past the padded video: the FFT's zeros
            for (int x = threadIdx.x; x < W2; x += blockDim.x) out[x] = 0.0;
            continue;
        }
        const InT* in = (ts < 0 || ys < 0) ? nullptr : src + ((plane * T + ts) * H + ys) * W;
        for (int x = threadIdx.x; x < W2; x += blockDim.x) {
            double v = 0.0;
            if (x < Wp) {
                const int xs = remap(x - pw, W, border);
                v = (in == nullptr || xs < 0) ? fill : static_cast<double>(__ldg(in + xs));
            }
            out[x] = v;
        }
    }
}

// portcv_convolve3d_spectral_sum: the hybrid method's sum along time in the frequency domain,
//   out[p][f][t][j] = sum_l frames[p][t + l][j] * spectra[f][l][j]   (complex, l < KT),
// for each frequency bin j of each plane p's frame spectra and kernel f's KT slice spectra. A
// thread makes C3_SPECTRAL_RUN output frames of one bin; threads of a warp take neighbouring bins.
constexpr int C3_SPECTRAL_RUN = 4;

__global__ void __launch_bounds__(256) portcv_convolve3d_spectral_sum(const double2* __restrict__ frames,
                                                                         const double2* __restrict__ spectra,
                                                                         double2* __restrict__ out, long long jobs,
                                                                         int Tp, int T_out, int KT, int F, int bins,
                                                                         int runs) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= bins) return;
    for (long long job = blockIdx.y; job < jobs; job += gridDim.y) {  // (plane, f, run of output frames)
        const int run = (int)(job % runs);
        const long long pf = job / runs;
        const int f = (int)(pf % F);
        const long long plane = pf / F;
        const int t0 = run * C3_SPECTRAL_RUN;
        const int n = min(C3_SPECTRAL_RUN, T_out - t0);
        const double2* in = frames + (plane * Tp + t0) * bins + j;
        const double2* k = spectra + (long long)f * KT * bins + j;
        double2 acc[C3_SPECTRAL_RUN];
#pragma unroll
        for (int c = 0; c < C3_SPECTRAL_RUN; ++c) acc[c] = make_double2(0.0, 0.0);
        for (int l = 0; l < KT; ++l) {
            const double2 s = __ldg(k + (long long)l * bins);
#pragma unroll
            for (int c = 0; c < C3_SPECTRAL_RUN; ++c) {
                if (c < n) {
                    const double2 v = __ldg(in + (long long)(c + l) * bins);
                    acc[c].x += v.x * s.x - v.y * s.y;
                    acc[c].y += v.x * s.y + v.y * s.x;
                }
            }
        }
        double2* o = out + (pf * T_out + t0) * bins + j;
#pragma unroll
        for (int c = 0; c < C3_SPECTRAL_RUN; ++c)
            if (c < n) o[(long long)c * bins] = acc[c];
    }
}

// portcv_convolve3d_round: the kept ('valid') part of the inverse transforms, rounded to the
// nearest integer (the exact sum) as int32. Group g's output frame t (of T_out) is frame
// t + t_off of the group's src_frames H2 x W2 frames, from row y0 and column x0; it goes to frame
// dst_off + t of the group's dst_frames H x W frames in `dst`. A block per output row.
__global__ void __launch_bounds__(256) portcv_convolve3d_round(const double* __restrict__ src, int* __restrict__ dst,
                                                                  long long rows, int T_out, int src_frames, int t_off,
                                                                  int H2, int W2, int y0, int x0, int dst_frames,
                                                                  int dst_off, int H, int W) {
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        const int y = (int)(row % H);
        const long long frame = row / H;
        const int t = (int)(frame % T_out);
        const long long g = frame / T_out;
        const double* in = src + ((g * src_frames + t + t_off) * H2 + y + y0) * W2 + x0;
        int* out = dst + ((g * dst_frames + dst_off + t) * H + y) * W;
        for (int x = threadIdx.x; x < W; x += blockDim.x) out[x] = __double2int_rn(__ldg(in + x));
    }
}
