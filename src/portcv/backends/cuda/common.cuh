// Helpers shared by every portcv CUDA source (#include "common.cuh"; the launcher adds this
// folder to NVRTC's include path).
#pragma once

enum Border { REFLECT101 = 0, REPLICATE = 1, CONSTANT = 2 };

// Index remapping; portcv/_border.py (border_indices) is the same rule on the host:
// reflect101 repeats with period 2(n-1), like np.pad(mode="reflect"); -1 means "constant".
__device__ __forceinline__ int remap(int i, int n, int border) {
    if (i >= 0 && i < n) return i;
    if (border == REFLECT101) {
        if (n == 1) return 0;
        const int period = 2 * (n - 1);
        i %= period;
        if (i < 0) i += period;
        return i < n ? i : period - i;
    }
    if (border == REPLICATE) return i < 0 ? 0 : n - 1;
    return -1;
}

template <typename T> struct Limits;
template <> struct Limits<unsigned char> { static constexpr int lo = 0, hi = 255; };
template <> struct Limits<short> { static constexpr int lo = -32768, hi = 32767; };
template <> struct Limits<int> { static constexpr int lo = -2147483647 - 1, hi = 2147483647; };
