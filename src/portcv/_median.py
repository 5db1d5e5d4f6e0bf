"""The median filter kernel: the k x k median of each channel of a uint8 image, exact everywhere.

The webcam report's tiled median filter (section 6.5): every output pixel is the middle value
of its sorted k x k window. The portable version (NumPy reference, JAX under jit) finds that
value by counting instead of sorting: for uint8 data the median of ``N = k*k`` values
(``N`` odd) is the largest ``v`` with ``#{x < v} <= N // 2``, found bit by bit from the top
(8 steps, each a count over the window). The CuPy override runs ``cuda/median.cu``: selection
networks for k = 3, 5 and Huang's sliding histogram for k = 7..15.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._border import BORDER_CODE, border_indices
from ._kernel import kernel

#: Window sizes: odd, 3 to 15 (a 15 x 15 window holds 225 values, so counts fit uint8).
MIN_KSIZE, MAX_KSIZE = 3, 15
#: Largest window array one step of the portable version builds (k*k values per pixel of a row
#: chunk, uint8): 32 MiB, so a 4K gray frame with k = 15 is filtered in 38-row chunks.
CHUNK_ELEMENTS = 2**25
#: At most this many row chunks (bounds the traced graph under jit for huge batches).
MAX_CHUNKS = 64

# Launch geometry of cuda/median.cu (its #defines).
_TILE_W = 128
_NETWORK_THREADS, _NETWORK_TILE_H = 256, 8
_HISTOGRAM_THREADS, _HISTOGRAM_STRIP = 128, 32


def _window_indices(n: int, k: int, border: str) -> np.ndarray:
    """``(k, n)`` int32: source index of tap ``d`` of output ``i`` along an axis of length ``n``
    (``n`` = the appended constant slot under ``border='constant'``)."""
    padded = border_indices(n, k // 2, k - 1 - k // 2, border)
    padded = np.where(padded < 0, n, padded)
    return padded[np.arange(k)[:, None] + np.arange(n)[None, :]].astype(np.int32)


def _append_constant(xp: Any, x: Any, axis: int, value: int) -> Any:
    shape = list(x.shape)
    shape[axis] = 1
    return xp.concat([x, xp.full(tuple(shape), value, dtype=x.dtype)], axis=axis)


def _chunk_rows(k: int, lead: tuple, height: int, width: int, tail: tuple) -> int:
    per_row = k * k * math.prod(lead) * width * math.prod(tail)
    rows = max(1, CHUNK_ELEMENTS // per_row)
    return min(height, max(rows, -(-height // MAX_CHUNKS)))


@kernel("median_filter")
def median_filter_kernel(
    xp: Any, img: Any, *, ksize: int, has_channels: bool, border: str, border_value: int
) -> Any:
    """Portable k x k median: gather each row chunk's windows, then an 8-step bitwise search."""
    k = ksize
    rank = k * k // 2  # 0-based rank of the median; k*k <= 225 so every count fits uint8
    y_axis = img.ndim - (3 if has_channels else 2)
    x_axis = y_axis + 1
    lead, tail = tuple(img.shape[:y_axis]), tuple(img.shape[x_axis + 1 :])
    height, width = img.shape[y_axis], img.shape[x_axis]
    ix, iy = _window_indices(width, k, border), _window_indices(height, k, border)

    # Horizontal taps side by side: (..., H, k*W, [C]); then per chunk the vertical taps.
    x = _append_constant(xp, img, x_axis, border_value) if border == "constant" else img
    rows = xp.take(x, xp.asarray(ix.reshape(-1)), axis=x_axis)
    if border == "constant":
        rows = _append_constant(xp, rows, y_axis, border_value)

    step = _chunk_rows(k, lead, height, width, tail)
    outs = []
    for y0 in range(0, height, step):
        h = min(step, height - y0)
        window = xp.take(rows, xp.asarray(iy[:, y0 : y0 + h].reshape(-1)), axis=y_axis)
        window = xp.reshape(window, lead + (k, h, k, width) + tail)  # [..., dy, y, dx, x, (c)]
        taps = (y_axis, y_axis + 2)
        median = xp.zeros(lead + (h, width) + tail, dtype=xp.uint8)
        for bit in (128, 64, 32, 16, 8, 4, 2, 1):
            # Invariant: median <= true median < median + 2*bit. The candidate c = median | bit
            # is <= the true median iff fewer than rank + 1 window values lie below c.
            candidate = median | bit
            spread = xp.reshape(candidate, lead + (1, h, 1, width) + tail)
            below = xp.sum(window < spread, axis=taps, dtype=xp.uint8)  # counts the Trues
            median = xp.where(below <= rank, candidate, median)
        outs.append(median)
    return outs[0] if len(outs) == 1 else xp.concat(outs, axis=y_axis)


def launch_geometry(ksize: int, height: int, width: int, channels: int, planes: int) -> tuple[str, tuple, int]:
    """``(kernel, grid (x, y, planes), threads per block)`` of cuda/median.cu for this input."""
    if ksize <= 5:
        variant, threads, tile_h = "network", _NETWORK_THREADS, _NETWORK_TILE_H
    else:
        variant, threads, tile_h = "histogram", _HISTOGRAM_THREADS, _HISTOGRAM_STRIP
    return variant, (-(-width * channels // _TILE_W), -(-height // tile_h), planes), threads


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
