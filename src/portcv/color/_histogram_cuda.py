"""CuPy overrides of the histogram and threshold kernels (``histogram``, ``threshold_two_peaks``,
``threshold_otsu``, ``binarize``), running ``_histogram_cuda.cu``. ``portcv.color`` imports this
module, which registers the overrides."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._histogram import RULES, _shape_parts, binarize_kernel, histogram_kernel, otsu_kernel, two_peaks_kernel


@histogram_kernel.override("cupy")
def _histogram_cupy(img: Any, *, bins: int, has_channels: bool) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, sm_count

    lead, pixels, channels = _shape_parts(tuple(img.shape), has_channels)
    if channels > 4:  # the kernel's shared memory holds 4 channels
        return NotImplemented
    img = cupy.ascontiguousarray(img)
    frames = math.prod(lead)
    frame_bytes = pixels * channels
    hist = cupy.zeros((frames, channels, bins), dtype=cupy.int64)
    fn = cuda_function(__name__, f"portcv_histogram<{channels}>")
    # At least 8 uint4 vectors per thread (256 threads), and about 4 blocks per SM in all.
    per_frame = max(1, min(-(-(frame_bytes // 16) // (256 * 8)), (4 * sm_count()) // frames))
    src = img.reshape(frames, frame_bytes)
    shift = 8 - (bins.bit_length() - 1)
    for start in range(0, frames, 65535):  # gridDim.y limit
        stop = min(frames, start + 65535)
        fn((per_frame, stop - start), (256,),
           (src[start:stop], hist[start:stop], np.int64(frame_bytes), np.int32(shift), np.int32(bins)))
    return hist.reshape(lead + ((channels, bins) if has_channels else (bins,)))


@two_peaks_kernel.override("cupy")
def _two_peaks_cupy(hist: Any, *, rule: str) -> Any:
    import cupy

    from ..backends.cupy import cuda_function

    lead = tuple(hist.shape[:-1])
    h = cupy.ascontiguousarray(hist.astype(cupy.int64, copy=False)).reshape(-1, 256)
    planes = h.shape[0]
    out = cupy.empty(planes, dtype=cupy.int64)
    fn = cuda_function(__name__, f"portcv_two_peaks<{RULES.index(rule)}>")
    fn(((planes + 127) // 128,), (128,), (h, out, np.int32(planes)))
    return out.reshape(lead)


@otsu_kernel.override("cupy")
def _otsu_cupy(hist: Any) -> Any:
    import cupy

    from ..backends.cupy import cuda_function

    lead = tuple(hist.shape[:-1])
    h = cupy.ascontiguousarray(hist.astype(cupy.int64, copy=False)).reshape(-1, 256)
    planes = h.shape[0]
    out = cupy.empty(planes, dtype=cupy.int64)
    fn = cuda_function(__name__, "portcv_otsu<256>")
    fn(((planes + 127) // 128,), (128,), (h, out, np.int32(planes)))
    return out.reshape(lead)


@binarize_kernel.override("cupy")
def _binarize_cupy(img: Any, *thresholds: Any, scalar: int | None, has_channels: bool) -> Any:
    import cupy

    from ..backends.cupy import cuda_function, launch_1d

    lead, pixels, channels = _shape_parts(tuple(img.shape), has_channels)
    if channels > 4:
        return NotImplemented
    img = cupy.ascontiguousarray(img)
    if img.data.ptr % 16:  # the kernel reads 16-byte vectors
        img = img.copy()
    out = cupy.empty(img.shape, dtype=cupy.uint8)
    frame_bytes = pixels * channels
    if thresholds:
        t = thresholds[0]
        if t.dtype == cupy.uint64:
            t = cupy.minimum(t, 255)  # only the comparison with bytes matters; keep it in int64 range
        # (frames * channels,) int64: frame f, channel c at f * channels + c.
        t = cupy.broadcast_to(t.astype(cupy.int64, copy=False), lead + ((channels,) if has_channels else ()))
        thr = cupy.ascontiguousarray(t).reshape(-1)
        fn = cuda_function(__name__, f"portcv_binarize<{channels},true>")
    else:
        thr = np.uint64(0)  # a null pointer; the kernel uses `scalar`
        fn = cuda_function(__name__, f"portcv_binarize<{channels},false>")
    grid, block = launch_1d(max(img.size // 16, 1))
    fn(grid, block, (img, out, thr, np.int32(scalar or 0), np.int32(frame_bytes), np.int32(img.size)))
    return out
