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
