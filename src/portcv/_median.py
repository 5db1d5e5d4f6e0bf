"""The median filter kernel: the k x k median of each channel of a uint8 image, exact everywhere.

The webcam report's tiled median filter (section 6.5): every output pixel is the middle value
of its sorted k x k window. The portable version (NumPy reference, JAX under jit) finds that
value by counting instead of sorting: for uint8 data the median of ``N = k*k`` values
(``N`` odd) is the largest ``v`` with ``#{x < v} <= N // 2``, found bit by bit from the top
(8 steps, each a count over the window: ``k*k`` compares of static slices of one padded
image, which XLA fuses into elementwise passes under ``jit``). The CuPy override runs
``cuda/median.cu``: generated min/max circuits that sort the pixels shared by a tile's windows
once, for k = 3, 5, and Huang's sliding histogram (4 outputs per histogram) for k = 7..15.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._border import BORDER_CODE, pad_axis
from ._kernel import kernel

#: Window sizes: odd, 3 to 15 (a 15 x 15 window holds 225 values, so counts fit uint8).
MIN_KSIZE, MAX_KSIZE = 3, 15

# Launch geometry of cuda/median.cu (its #defines).
_NETWORK_THREADS, _NETWORK_TILE_PX, _NETWORK_TILE_H = 128, 128, 32  # a block: 128 pixels x 32 rows
_HISTOGRAM_THREADS, _HISTOGRAM_STRIP = 32, 64  # a block (one warp): 4 * groups pixels x 64 rows
_HISTOGRAM_GROUPS = {1: 32, 2: 16, 3: 8, 4: 8}  # 4-pixel groups per block (HistogramGroups<C>)


@kernel("median_filter")
def median_filter_kernel(
    xp: Any, img: Any, *, ksize: int, has_channels: bool, border: str, border_value: int
) -> Any:
    """Portable k x k median: the k*k shifted views of one padded image, an 8-step bitwise search."""
    k = ksize
    rank = k * k // 2  # 0-based rank of the median; k*k <= 225 so every count fits uint8
    y_axis = img.ndim - (3 if has_channels else 2)
    x_axis = y_axis + 1
    height, width = img.shape[y_axis], img.shape[x_axis]
    tail = (slice(None),) if has_channels else ()
    # One padded copy (static slices + concat, no gather); every window value is then a static
    # slice of it, so under jit the 8 steps fuse into elementwise passes with no k*k array.
    x = pad_axis(xp, img, x_axis, k // 2, k - 1 - k // 2, border, border_value)
    x = pad_axis(xp, x, y_axis, k // 2, k - 1 - k // 2, border, border_value)
    views = [x[(..., slice(dy, dy + height), slice(dx, dx + width)) + tail]
             for dy in range(k) for dx in range(k)]
    median = xp.zeros(img.shape, dtype=xp.uint8)
    for bit in (128, 64, 32, 16, 8, 4, 2, 1):
        # Invariant: median <= true median < median + 2*bit. The candidate c = median | bit
        # is <= the true median iff fewer than rank + 1 window values lie below c.
        candidate = median | bit
        below = None
        for view in views:  # Python loops only over taps and bits
            count = xp.astype(view < candidate, xp.uint8)
            below = count if below is None else below + count  # <= k*k <= 225: no uint8 overflow
        median = xp.where(below <= rank, candidate, median)
    return median


def launch_geometry(ksize: int, height: int, width: int, channels: int, planes: int) -> tuple[str, tuple, int]:
    """``(kernel, grid (x, y, planes), threads per block)`` of cuda/median.cu for this input."""
    if ksize <= 5:
        grid = (-(-width // _NETWORK_TILE_PX), -(-height // _NETWORK_TILE_H), planes)
        return "network", grid, _NETWORK_THREADS
    grid = (-(-width // (4 * _HISTOGRAM_GROUPS[channels])), -(-height // _HISTOGRAM_STRIP), planes)
    return "histogram", grid, _HISTOGRAM_THREADS


@median_filter_kernel.override("cupy")
def _median_filter_cupy(img: Any, *, ksize: int, has_channels: bool, border: str, border_value: int) -> Any:
    import cupy

    from .backends.cupy import cuda_function

    channels = img.shape[-1] if has_channels else 1
    height, width = img.shape[-3:-1] if has_channels else img.shape[-2:]
    if not 1 <= channels <= 4:
        return NotImplemented
    planes = img.size // (height * width * channels)
    variant, (gx, gy, _), threads = launch_geometry(ksize, height, width, channels, planes)
    if gy > 65535:  # gridDim.y limit (a very tall, narrow image)
        return NotImplemented
    if variant == "network":
        fn = cuda_function("median.cu", f"portcv_median_network<{ksize},{channels}>")
    else:
        fn = cuda_function("median.cu", f"portcv_median_histogram<{ksize},{channels}>")
    img = cupy.ascontiguousarray(img)
    out = cupy.empty(img.shape, dtype=cupy.uint8)
    args = (np.int32(height), np.int32(width), np.int32(BORDER_CODE[border]), np.int32(border_value))
    src, dst = img.reshape(planes, -1), out.reshape(planes, -1)
    for start in range(0, planes, 65535):  # gridDim.z limit
        stop = min(planes, start + 65535)
        fn((gx, gy, stop - start), (threads,), (src[start:stop], dst[start:stop]) + args)
    return out
