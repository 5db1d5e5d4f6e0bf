// The k = 1 merge of a tile of distances into each row's best (portcv/distance/_nearest.py,
// lexicographic_kmin): the lexicographically smallest (distance, index) over the row's current
// best (0 or 1 entries) and the tile's t columns (indices offset .. offset + t - 1). One block
// per row; a minimum over a total order does not depend on how the threads combine it.

template <typename T>
__device__ __forceinline__ bool lex_less(T d, int i, T best_d, int best_i) {
    return d < best_d || (d == best_d && i < best_i);
}

template <typename T>
__global__ void portcv_lexicographic_min(const T* __restrict__ best_d, const int* __restrict__ best_i, int has_best,
                                         const T* __restrict__ tile, int t, int offset,
                                         T* __restrict__ out_d, int* __restrict__ out_i) {
    __shared__ T sd[32];
    __shared__ int si[32];
    const int row = blockIdx.x;
    const T* d = tile + (size_t)row * t;
    // Each thread scans its columns in increasing order, keeping the first of equal minima.
    bool found = false;
    T md = T();
    int mi = 0;
    for (int c = threadIdx.x; c < t; c += blockDim.x) {
        const T v = d[c];
        if (!found || v < md) { md = v; mi = offset + c; found = true; }
    }
    if (threadIdx.x == 0 && has_best) {
        const T bd = best_d[row];
        const int bi = best_i[row];
        if (!found || lex_less(bd, bi, md, mi)) { md = bd; mi = bi; found = true; }
    }
    // Threads without a candidate take the largest index, which any real candidate beats.
    if (!found) { md = d[0]; mi = 0x7fffffff; }
    for (int s = 16; s > 0; s >>= 1) {
        const T od = __shfl_down_sync(0xffffffffu, md, s);
        const int oi = __shfl_down_sync(0xffffffffu, mi, s);
        if (lex_less(od, oi, md, mi)) { md = od; mi = oi; }
    }
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    if (lane == 0) { sd[warp] = md; si[warp] = mi; }
    __syncthreads();
    if (warp == 0) {
        md = lane < warps ? sd[lane] : sd[0];
        mi = lane < warps ? si[lane] : 0x7fffffff;
        for (int s = 16; s > 0; s >>= 1) {
            const T od = __shfl_down_sync(0xffffffffu, md, s);
            const int oi = __shfl_down_sync(0xffffffffu, mi, s);
            if (lex_less(od, oi, md, mi)) { md = od; mi = oi; }
        }
        if (lane == 0) { out_d[row] = md; out_i[row] = mi; }
    }
}
