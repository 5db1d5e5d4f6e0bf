// CUDA's kernel language on the host, enough to build portcv's .cu files with g++ -std=c++20 and
// run their kernels without a GPU (tests/cuda_host): every thread of a block is a std::thread, so
// __syncthreads is a real barrier; each warp of 32 has its own barrier for the shuffles. The
// arithmetic is C++'s on x86-64, which for the integer types the kernels use is CUDA's.
#pragma once
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

using std::abs;
using std::max;
using std::min;

#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
// Only dynamic shared memory: `extern __shared__ T name[];` declares the global array the
// wrapper defines for the kernel (blocks run one at a time). A static __shared__ array would
// become one per thread here, so kernels with one are not built this way.
#define __shared__

struct dim3 { unsigned x = 1, y = 1, z = 1; };
struct int2 { int x, y; };
struct alignas(16) double2 { double x, y; };
inline double2 make_double2(double x, double y) { return {x, y}; }
#define HOST_VECTOR4(V, T)                                                    \
    struct alignas(4 * sizeof(T)) V { T x, y, z, w; };                      \
    inline V make_##V(T a, T b, T c, T d) { return {a, b, c, d}; }
HOST_VECTOR4(uint4, unsigned int)
HOST_VECTOR4(int4, int)
HOST_VECTOR4(uchar4, unsigned char)
HOST_VECTOR4(short4, short)
HOST_VECTOR4(float4, float)

inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;
inline std::barrier<>* host_block_barrier = nullptr;
inline std::vector<std::unique_ptr<std::barrier<>>> host_warp_barriers;
inline long long host_warp_slots[1024];

inline void __syncthreads() { host_block_barrier->arrive_and_wait(); }

template <typename T> inline T host_exchange(T v, unsigned from_lane) {
    const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned warp = t / 32;
    std::memcpy(&host_warp_slots[t], &v, sizeof(T));
    host_warp_barriers[warp]->arrive_and_wait();
    T r;
    std::memcpy(&r, &host_warp_slots[warp * 32 + from_lane], sizeof(T));
    host_warp_barriers[warp]->arrive_and_wait();
    return r;
}
template <typename T> inline T __shfl_xor_sync(unsigned, T v, int mask) {
    const unsigned lane = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 32;
    return host_exchange(v, lane ^ (unsigned)mask);
}
template <typename T> inline T __shfl_up_sync(unsigned, T v, unsigned d) {
    const unsigned lane = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 32;
    return host_exchange(v, lane >= d ? lane - d : lane);
}
template <typename T> inline T __shfl_sync(unsigned, T v, int src_lane) { return host_exchange(v, (unsigned)src_lane % 32); }
// Bit i: lane i's predicate (every lane of the warp takes part, as the kernels call it).
inline unsigned __ballot_sync(unsigned, int predicate) {
    const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned warp = t / 32, threads = blockDim.x * blockDim.y * blockDim.z;
    host_warp_slots[t] = predicate != 0;
    host_warp_barriers[warp]->arrive_and_wait();
    unsigned mask = 0;
    for (unsigned lane = 0; lane < 32 && warp * 32 + lane < threads; ++lane)
        if (host_warp_slots[warp * 32 + lane]) mask |= 1u << lane;
    host_warp_barriers[warp]->arrive_and_wait();
    return mask;
}
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
    return std::atomic_ref<unsigned long long>(*p).fetch_add(v);
}
inline int atomicAdd(int* p, int v) { return std::atomic_ref<int>(*p).fetch_add(v); }
inline unsigned long long atomicMin(unsigned long long* p, unsigned long long v) {
    std::atomic_ref<unsigned long long> a(*p);
    unsigned long long old = a.load();
    while (v < old && !a.compare_exchange_weak(old, v)) {
    }
    return old;
}
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline unsigned int __umulhi(unsigned int a, unsigned int b) { return (unsigned int)(((unsigned long long)a * b) >> 32); }
inline int __float2int_rn(float x) { return (int)std::nearbyint(x); }
inline int __double2int_rn(double x) { return (int)std::nearbyint(x); }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fmaf_rn(float a, float b, float c) { return std::fmaf(a, b, c); }
template <typename T> inline T __ldg(const T* p) { return *p; }
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
    shift &= 31;
    return shift ? (lo >> shift) | (hi << (32 - shift)) : lo;
}
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
// Result byte n is byte (s >> 4n) & 7 of the pair (x low, y high); the sign-replicate mode
// (bit 3 of a nibble) is not used by portcv and so not emulated.
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    const unsigned long long pair = ((unsigned long long)y << 32) | x;
    unsigned out = 0;
    for (int n = 0; n < 4; ++n) out |= (unsigned)((pair >> (8 * ((s >> (4 * n)) & 7))) & 0xFF) << (8 * n);
    return out;
}

// Runs a kernel over the grid: blocks one after another, each block's threads at once.
inline void host_launch(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        const std::function<void()>& kernel) {
    gridDim = {gx, gy, gz};
    blockDim = {bx, by, bz};
    const unsigned n = bx * by * bz;
    for (unsigned z = 0; z < gz; ++z) for (unsigned y = 0; y < gy; ++y) for (unsigned x = 0; x < gx; ++x) {
        std::barrier<> block(n);
        host_block_barrier = &block;
        host_warp_barriers.clear();
        for (unsigned w = 0; w < (n + 31) / 32; ++w)
            host_warp_barriers.push_back(std::make_unique<std::barrier<>>(std::min(32u, n - 32 * w)));
        std::vector<std::thread> threads;
        threads.reserve(n);
        for (unsigned t = 0; t < n; ++t) {
            threads.emplace_back([&, t, x, y, z] {
                blockIdx = {x, y, z};
                threadIdx = {t % bx, (t / bx) % by, t / (bx * by)};
                kernel();
            });
        }
        for (auto& th : threads) th.join();
    }
}
