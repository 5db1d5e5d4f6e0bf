// The z-buffer of portcv.depth's propagation on CUDA: a scatter-min of one packed 64-bit key
// per source pixel by atomicMin, as the article's atomic operations. Compiled by
// portcv.backends.cupy (--std=c++17 --fmad=false); launched by src/portcv/depth/_propagate_cuda.py.
// Keys are distinct and non-negative (key = (depth << 32) | source_index < 2^62 = EMPTY), and the
// minimum of a set does not depend on the order its elements arrive in, so every thread schedule
// gives the slots the portable version (a stable sort) and NumPy's np.minimum.at give. A source
// with dest == slots (the dump slot) writes nothing.

__global__ void portcv_zbuffer_min(const long long* __restrict__ dest, const long long* __restrict__ key,
                                   long long n, long long slots, unsigned long long* __restrict__ out) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const long long d = dest[i];
        if (d >= 0 && d < slots) atomicMin(out + d, (unsigned long long)key[i]);
    }
}

// The projections, one thread per source pixel i = v W + u (src/portcv/depth/_propagate.py:
// project_kernel, disparity_project_kernel), the portable version's int64 steps: the host bounds
// |a|, |b|, |c| below 2^61, so no product or sum overflows; `//` is a floor division (by 2c > 0)
// and `>>` an arithmetic shift, as NumPy's.
__device__ __forceinline__ long long floor_div_positive(long long a, long long d) {
    long long q = a / d;
    if (a % d < 0) --q;
    return q;
}

template <typename D>
__global__ void portcv_depth_project(const D* __restrict__ depth, const long long* __restrict__ m, int height,
                                     int width, int dh, int dw, long long unknown, long long max_depth, int bits,
                                     long long* __restrict__ dest, long long* __restrict__ key) {
    const long long n = (long long)height * width;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const long long z = (long long)depth[i];
        const long long u = i % width, v = i / width;
        const long long uz = u * z, vz = v * z;
        const long long a = uz * m[0] + vz * m[1] + z * m[2] + m[3];
        const long long b = uz * m[4] + vz * m[5] + z * m[6] + m[7];
        const long long c = uz * m[8] + vz * m[9] + z * m[10] + m[11];
        const bool in_front = c > 0;
        const long long two_c = in_front ? 2 * c : 1;
        const long long tu = floor_div_positive(2 * a + c, two_c);
        const long long tv = floor_div_positive(2 * b + c, two_c);
        const long long tz = (c + (1LL << (bits - 1))) >> bits;
        const bool valid = z != unknown && in_front && tu >= 0 && tu < dw && tv >= 0 && tv < dh && tz >= 1 &&
                           tz <= max_depth && tz != unknown;
        dest[i] = valid ? tv * dw + tu : (long long)dh * dw;
        key[i] = (long long)(((unsigned long long)(valid ? tz : 0) << 32) | (unsigned long long)i);
    }
}

template <typename D>
__global__ void portcv_disparity_project(const D* __restrict__ disparity, int height, int width, int direction,
                                         int frac_bits, long long unknown, long long max_value,
                                         long long* __restrict__ dest, long long* __restrict__ key) {
    const long long n = (long long)height * width;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const long long d = (long long)disparity[i];
        const long long u = i % width, v = i / width;
        const long long tu = ((u << frac_bits) + direction * d + ((1LL << frac_bits) >> 1)) >> frac_bits;
        const bool valid = d != unknown && tu >= 0 && tu < width;
        dest[i] = valid ? v * width + tu : n;
        key[i] = (long long)(((unsigned long long)(max_value - d) << 32) | (unsigned long long)i);
    }
}

// The winners (src/portcv/depth/_propagate.py: gather_kernel), one thread per destination slot:
// depth = offset + sign (key >> 32) where a source landed (key != EMPTY), else `unknown`, cast to
// D as NumPy's astype (modulo 2^bits); with `channels` > 0 the winner's colour (its source index
// is the key's low 32 bits), `fill` where none landed.
template <typename D>
__global__ void portcv_zbuffer_gather(const long long* __restrict__ best, long long slots, long long offset,
                                      long long sign, long long unknown, const unsigned char* __restrict__ color,
                                      int channels, int fill, D* __restrict__ depth,
                                      unsigned char* __restrict__ picked) {
    const long long EMPTY = 1LL << 62;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < slots; i += (long long)gridDim.x * blockDim.x) {
        const long long b = best[i];
        const bool hit = b != EMPTY;
        depth[i] = (D)(hit ? offset + sign * (b >> 32) : unknown);
        const long long winner = hit ? (b & 0xFFFFFFFFLL) : 0;
        for (int c = 0; c < channels; ++c) picked[i * channels + c] = hit ? color[winner * channels + c] : (unsigned char)fill;
    }
}
