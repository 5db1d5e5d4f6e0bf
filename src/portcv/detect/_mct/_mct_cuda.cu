// CUDA kernels of the MCT detector. src/portcv/detect/_mct.py and _mct_detector.py hold the
// portable versions (the reference) and _mct_cuda.py the launchers.
//
// portcv_mct_codes: the modified census transform of the valid interior of a stack of planes,
// one thread per code (grid-stride): the 3x3 sum S (<= 2295) and bit 8 - k = 9 * I_k > S for the
// raster index k of the 3x3, top-left the most significant. Integer, exact.
//
// portcv_mct_segment: one thread per plan slot i < n. Slot i is alive when i < *count and window
// plan[i] passes every stage of the segment: sum_k lut[k * 512 + codes[offsets[w] +
// position_offsets[k]]] <= thresholds[stage] for k in [stage_begin, stage_end). The terms are
// int16 and at most 484: |sum| < 2^24, exact in int32 in any order. A window stops at its first
// failed stage (the portable version ANDs every stage: the same result). Indices are < 2^31 (the
// host checks the packed pyramid's size).

extern "C" __global__ void portcv_mct_codes(const unsigned char* __restrict__ img, long long planes, int h, int w,
                                            unsigned short* __restrict__ out) {
    const int oh = h - 2, ow = w - 2;
    const long long per_plane = (long long)oh * ow;
    const long long total = planes * per_plane;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const long long p = i / per_plane;
        const long long rest = i - p * per_plane;
        const int r = (int)(rest / ow), c = (int)(rest - (long long)r * ow);
        const unsigned char* src = img + p * h * (long long)w + (long long)r * w + c;
        int v[9];
        int s = 0;
#pragma unroll
        for (int k = 0; k < 9; ++k) {
            v[k] = __ldg(src + (k / 3) * w + (k % 3));
            s += v[k];
        }
        unsigned int code = 0;
#pragma unroll
        for (int k = 0; k < 9; ++k) code |= (unsigned int)(9 * v[k] > s) << (8 - k);
        out[i] = (unsigned short)code;
    }
}

extern "C" __global__ void portcv_mct_segment(const unsigned short* __restrict__ codes,
                                              const int* __restrict__ offsets, const int* __restrict__ plan,
                                              const int* __restrict__ count,
                                              const int* __restrict__ position_offsets,
                                              const short* __restrict__ lut, const int* __restrict__ thresholds,
                                              const int* __restrict__ stage_index,
                                              const int* __restrict__ stage_begin,
                                              const int* __restrict__ stage_end, int n_stages, int n,
                                              int* __restrict__ alive) {
    const int live = *count;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int ok = 0;
        if (i < live) {
            const unsigned short* base = codes + __ldg(offsets + __ldg(plan + i));
            ok = 1;
            for (int s = 0; s < n_stages && ok; ++s) {
                int sum = 0;
                for (int k = stage_begin[s]; k < stage_end[s]; ++k)
                    sum += __ldg(lut + k * 512 + __ldg(base + __ldg(position_offsets + k)));
                ok = sum <= thresholds[stage_index[s]];
            }
        }
        alive[i] = ok;
    }
}
