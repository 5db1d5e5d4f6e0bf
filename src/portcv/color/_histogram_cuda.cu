// Histograms, global thresholds and binarization (the Webcam Streaming & Filters report's section 8). Compiled by
// portcv.backends.cupy with --std=c++17 --fmad=false; launched from portcv/_histogram.py.
//
// portcv_histogram<C>: the report's shared-memory histogram (8.2.3) done right. Each warp counts
// into its own shared sub-histogram (8 warps -> 8 copies, so lanes of different warps never
// contend for a counter), each thread reads 16-byte vectors (gray: equal neighbours merged into
// one atomic, see count_vector), and each block adds its merged
// counts to the global result once: one 64-bit atomicAdd per non-zero (channel, bin). Integer
// additions commute, so the result is exact and independent of the order atomics land in.
// A frame is `frame_bytes` contiguous bytes holding C interleaved channels; the 16-byte aligned
// body of each frame is read as uint4 vectors, its unaligned head and tail (< 16 bytes each) one
// byte at a time by block 0 of the frame.
//
// portcv_otsu: OpenCV's Otsu threshold (imgproc/src/thresh.cpp, getThreshVal_Otsu), one thread per
// histogram, the same IEEE double operations in the same order, each one spelled out with a
// round-to-nearest intrinsic so that nothing can be contracted into an FMA.
//
// portcv_two_peaks<RULE>: the report's two-maxima threshold (8.3-8.4), one thread per histogram,
// the loops transcribed (RULE 0 = two largest bins, 1 = the CPU loop as printed, 2 = the GPU
// tree reduction as printed).
//
// portcv_binarize<C>: 255 where a byte is > its frame's (and channel's) threshold, else 0
// (8.5); 16 bytes per thread.
#include "common.cuh"

#define HIST_THREADS 256
#define HIST_WARPS (HIST_THREADS / 32)

// Count the 16 bytes of one vector into a warp's sub-histogram `s` (C * 256 uint32).
// One channel: runs of equal bins are merged first and added with one atomic each, so a flat
// region (where all 32 lanes of a warp hit the same counter, and shared atomics on one address
// serialize) costs one atomic per 16 pixels instead of 16. Interleaved channels: one atomic per
// byte, channel c advancing with the byte; c is the channel of the vector's first byte.
template <int C>
__device__ __forceinline__ void count_vector(unsigned int* __restrict__ s, const uint4 q, int c, int shift) {
    const unsigned int w[4] = {q.x, q.y, q.z, q.w};
    if constexpr (C == 1) {
        unsigned int run_bin = (w[0] & 255u) >> shift, run = 0u;
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            const unsigned int bin = ((w[j >> 2] >> ((j & 3) * 8)) & 255u) >> shift;
            if (bin != run_bin) {
                atomicAdd(&s[run_bin], run);
                run_bin = bin;
                run = 0u;
            }
            ++run;
        }
        atomicAdd(&s[run_bin], run);
    } else {
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            const unsigned int bin = ((w[j >> 2] >> ((j & 3) * 8)) & 255u) >> shift;
            atomicAdd(&s[c * 256 + bin], 1u);
            c = (c + 1 == C) ? 0 : c + 1;
        }
    }
}

// grid: (blocks per frame, frames); hist: (frames, C, bins) int64, zeroed by the launcher.
template <int C>
__global__ void __launch_bounds__(HIST_THREADS) portcv_histogram(const unsigned char* __restrict__ img,
                                                                 unsigned long long* __restrict__ hist,
                                                                 long long frame_bytes, int shift, int bins) {
    __shared__ unsigned int s_hist[HIST_WARPS][C * 256];
    const int tid = threadIdx.x;
    for (int i = tid; i < HIST_WARPS * C * 256; i += HIST_THREADS) (&s_hist[0][0])[i] = 0u;
    __syncthreads();

    unsigned int* s = s_hist[tid >> 5];
    const unsigned char* frame = img + (long long)blockIdx.y * frame_bytes;
    const unsigned long long base = reinterpret_cast<unsigned long long>(frame);
    // Aligned body [head, body_end) in bytes from the frame start; head < 16, tail < 16.
    long long head = (long long)((16u - (base & 15u)) & 15u);
    if (head > frame_bytes) head = frame_bytes;
    const long long n_vec = (frame_bytes - head) / 16;
    const long long body_end = head + 16 * n_vec;
    const uint4* vec = reinterpret_cast<const uint4*>(frame + head);

    for (long long v = (long long)blockIdx.x * HIST_THREADS + tid; v < n_vec; v += (long long)gridDim.x * HIST_THREADS) {
        int c = 0;  // channel of the vector's first byte (frames have < 2^31 bytes: 32-bit math)
        if constexpr (C > 1) c = (int)((unsigned int)(head + 16 * v) % (unsigned int)C);
        count_vector<C>(s, vec[v], c, shift);
    }
    if (blockIdx.x == 0) {
        // Head bytes [0, head) and tail bytes [body_end, frame_bytes): at most 30, one per thread.
        const long long tail = frame_bytes - body_end;
        if (tid < head + tail) {
            const long long o = tid < head ? tid : body_end + (tid - head);
            atomicAdd(&s[(int)(o % C) * 256 + (frame[o] >> shift)], 1u);
        }
    }
    __syncthreads();

    // Merge the warps' copies; one global atomic per non-zero (channel, bin). Per-warp counts fit
    // uint32 (a frame has < 2^31 bytes); their sum is widened before the 64-bit add.
    unsigned long long* out = hist + (long long)blockIdx.y * C * bins;
    for (int k = tid; k < C * bins; k += HIST_THREADS) {
        const int c = k / bins, b = k - c * bins;
        unsigned long long sum = 0;
#pragma unroll
        for (int w = 0; w < HIST_WARPS; ++w) sum += s_hist[w][c * 256 + b];
        if (sum) atomicAdd(&out[k], sum);
    }
}

// OpenCV's getThreshVal_Otsu on a 256-bin histogram: hist (planes, 256) int64 -> out (planes,).
// `mu += i*(double)h[i]` sums integers below 2^53 (255 * 2^31), so it is the exact integer
// sum; every other step is one IEEE double operation, rounded to nearest, in OpenCV's order.
template <int BINS>
__global__ void portcv_otsu(const long long* __restrict__ hist, long long* __restrict__ out, int planes) {
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= planes) return;
    const long long* h = hist + (long long)p * BINS;
    long long n = 0, s = 0;
    for (int i = 0; i < BINS; ++i) {
        n += h[i];
        s += (long long)i * h[i];
    }
    const double flt_epsilon = 1.1920928955078125e-07;  // FLT_EPSILON = 2^-23
    const double scale = __ddiv_rn(1.0, (double)n);
    const double mu = __dmul_rn((double)s, scale);
    double mu1 = 0.0, q1 = 0.0, max_sigma = 0.0;
    int max_val = 0;
    for (int i = 0; i < BINS; ++i) {
        const double p_i = __dmul_rn((double)h[i], scale);
        mu1 = __dmul_rn(mu1, q1);
        q1 = __dadd_rn(q1, p_i);
        const double q2 = __dadd_rn(1.0, -q1);
        if (fmin(q1, q2) < flt_epsilon || fmax(q1, q2) > 1.0 - flt_epsilon) continue;
        mu1 = __ddiv_rn(__dadd_rn(mu1, __dmul_rn((double)i, p_i)), q1);
        const double mu2 = __ddiv_rn(__dadd_rn(mu, -__dmul_rn(q1, mu1)), q2);
        const double d = __dadd_rn(mu1, -mu2);
        const double sigma = __dmul_rn(__dmul_rn(__dmul_rn(q1, q2), d), d);
        if (sigma > max_sigma) {
            max_sigma = sigma;
            max_val = i;
        }
    }
    out[p] = max_val;
}

// The report's two-maxima threshold on hist (planes, 256) int64 -> out (planes,) int64:
// (first + second) / 2 with C's truncating division, clamped to [50, 200].
template <int RULE>
__global__ void portcv_two_peaks(const long long* __restrict__ hist, long long* __restrict__ out, int planes) {
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= planes) return;
    const long long* h = hist + (long long)p * 256;
    long long first = -1, second = -1;
    if constexpr (RULE == 0 || RULE == 1) {
        // Section 8.3.1. RULE 0 runs the loop with `sec_max = max` before `max = histogram[i]`
        // (the intent: the old maximum becomes the second); RULE 1 as printed, where the
        // assignment after it makes sec_max == max, so the `else if` never runs.
        long long mx = -1, sec = -1;
        for (int i = 0; i < 256; ++i) {
            const long long v = h[i];
            if (v >= mx) {
                second = first;
                first = i;
                sec = RULE == 0 ? mx : v;
                mx = v;
            } else if (v > sec && v < mx) {
                sec = v;
                second = i;
            }
        }
    } else {
        // Section 8.3.2: the shared-memory tree reduction (offsets 128 .. 2, strict `<`, the lower
        // slot keeps ties) leaves in slots 0 and 1 the largest even and the largest odd bin. Among
        // equal counts the tournament prefers bit 1 clear, then bit 2, ... bit 7: the smallest
        // bit-reversed index. That closed form is used here; the portable version replays the tree.
        long long best[2] = {h[0], h[1]};
        unsigned int best_key[2] = {0u, 128u};  // bit-reversed 0 and 1
        first = 0;
        second = 1;
        for (int i = 2; i < 256; ++i) {
            const int par = i & 1;
            const unsigned int key = __brev((unsigned int)i) >> 24;
            const long long v = h[i];
            if (v > best[par] || (v == best[par] && key < best_key[par])) {
                best[par] = v;
                best_key[par] = key;
                if (par) second = i; else first = i;
            }
        }
    }
    long long t = (first + second) / 2;  // C division truncates: -1 / 2 == 0 (then clamped)
    out[p] = t < 50 ? 50 : (t > 200 ? 200 : t);
}

// 255 where byte > threshold else 0. PER_FRAME: thr holds (frames * C) int64 thresholds and
// byte o of the array belongs to frame o / frame_bytes, channel o % C; else every byte is
// compared with `scalar` (thr is unused).
__device__ __forceinline__ int clamp_threshold(long long t) {
    // Comparing a byte with t equals comparing it with t clamped to [-1, 255].
    return t < -1 ? -1 : (t > 255 ? 255 : (int)t);
}

template <int C, bool PER_FRAME>
__global__ void portcv_binarize(const unsigned char* __restrict__ img, unsigned char* __restrict__ out,
                                const long long* __restrict__ thr, int scalar, int frame_bytes, int n_bytes) {
    // The launcher refuses arrays of 2^31 bytes or more, so offsets are 32-bit.
    const int n_vec = n_bytes / 16;
    const bool single_frame = frame_bytes == n_bytes;
    const uint4* in = reinterpret_cast<const uint4*>(img);
    uint4* dst = reinterpret_cast<uint4*>(out);
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < n_vec; v += gridDim.x * blockDim.x) {
        const int o0 = 16 * v;
        int t[C];
        bool straddles = false;  // the vector crosses a frame boundary (frame_bytes % 16 != 0)
        int f0 = 0;
        if constexpr (PER_FRAME) {
            f0 = single_frame ? 0 : o0 / frame_bytes;
            straddles = !single_frame && (long long)(f0 + 1) * frame_bytes < (long long)o0 + 16;
#pragma unroll
            for (int c = 0; c < C; ++c) t[c] = clamp_threshold(thr[f0 * C + c]);
        } else {
#pragma unroll
            for (int c = 0; c < C; ++c) t[c] = scalar;
        }
        int c = C > 1 ? o0 % C : 0;
        const uint4 q = in[v];
        const unsigned int w[4] = {q.x, q.y, q.z, q.w};
        unsigned int r[4] = {0u, 0u, 0u, 0u};
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            const int b = (int)((w[j >> 2] >> ((j & 3) * 8)) & 255u);
            int tj = t[c];
            if constexpr (PER_FRAME) {
                if (straddles) tj = clamp_threshold(thr[((o0 + j) / frame_bytes) * C + c]);
            }
            if (b > tj) r[j >> 2] |= 255u << ((j & 3) * 8);
            if constexpr (C > 1) c = (c + 1 == C) ? 0 : c + 1;
        }
        dst[v] = make_uint4(r[0], r[1], r[2], r[3]);
    }
    // Tail: fewer than 16 bytes, one per thread of the first block.
    const int o = n_vec * 16 + threadIdx.x;
    if (blockIdx.x == 0 && o < n_bytes) {
        const int c = o % C;
        int tj = scalar;
        if constexpr (PER_FRAME) tj = clamp_threshold(thr[(o / frame_bytes) * C + c]);
        out[o] = img[o] > tj ? 255 : 0;
    }
}
