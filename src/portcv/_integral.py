"""The integral-image kernel: summed-area tables with a zero first row and column.

The portable version is two cumulative sums (exact integer additions, so every backend agrees);
the CuPy override runs ``cuda/integral.cu``, a tile-decomposed 2-D scan (tile sums, carries
across tiles, in-tile warp-shuffle scans) in three launches.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._kernel import kernel

#: Largest per-plane pixel count whose int32 sums cannot wrap: 255 * H * W <= 2**31 - 1.
MAX_INT32_PIXELS = (2**31 - 1) // 255
SUM_DTYPES = ("int32", "int64")


@kernel("integral")
def integral_kernel(xp: Any, img: Any, *, has_channels: bool, squared: bool, dtype: str) -> Any:
    """Portable integral image: ``I[y, x] = sum(img[:y, :x])`` (per channel), shape ``(..., H+1, W+1[, C])``."""
    y_axis, x_axis = (-3, -2) if has_channels else (-2, -1)
    # The zero first row and column go in before the scans (cheaper to compile under jit than
    # include_initial), so the cumulative sums produce them.
    shape = list(img.shape)
    shape[y_axis] = 1
    padded = xp.concat([xp.zeros(tuple(shape), dtype=img.dtype), img], axis=y_axis)
    shape = list(padded.shape)
    shape[x_axis] = 1
    padded = xp.concat([xp.zeros(tuple(shape), dtype=img.dtype), padded], axis=x_axis)

    def table(values: Any, acc: Any) -> Any:
        return xp.cumulative_sum(xp.cumulative_sum(values, axis=y_axis, dtype=acc), axis=x_axis, dtype=acc)

    # The caller guarantees 255*H*W < 2**31 for int32, so the running sums cannot wrap.
    sums = table(padded, getattr(xp, dtype))
    if not squared:
        return sums
    wide = xp.astype(padded, xp.int64)
    # 255^2 * H * W < 2^63 for any image of at most 2^31 elements: int64 squared sums are exact.
    return sums, table(wide * wide, xp.int64)


_CUDA_SUM = {"int32": "int", "int64": "long long", "uint32": "unsigned int"}


def tile_geometry(channels: int, squared: bool) -> tuple[int, int]:
    """(tile width in pixels, tile height) of the CUDA kernels; shared memory stays under 48 KB."""
    tw = 128 if channels == 1 else 64
    th = 32 if tw * channels * (2 if squared else 1) <= 256 else 16
    return tw, th


@integral_kernel.override("cupy")
def _integral_cupy(img: Any, *, has_channels: bool, squared: bool, dtype: str) -> Any:
    return launch_integral(img, has_channels=has_channels, squared=squared, dtype=dtype, sq_dtype="int64")


def launch_integral(img: Any, *, has_channels: bool, squared: bool, dtype: str, sq_dtype: str) -> Any:
    """``integral.cu`` on a uint8 CuPy array: sums as ``dtype`` and squared sums as ``sq_dtype``
    (``"int32"``/``"int64"`` and ``"int64"``: exact; ``"uint32"``: modulo 2^32, written
    directly instead of cast from int64 -- the cascade detector's tables)."""
    import cupy

    from .backends.cupy import cuda_function

    channels = img.shape[-1] if has_channels else 1
    height, width = img.shape[-3:-1] if has_channels else img.shape[-2:]
    tw, th = tile_geometry(channels, squared)
    ntx, nty = math.ceil(width / tw), math.ceil(height / th)
    if not 1 <= channels <= 4 or nty > 65535:
        return NotImplemented
    lead = img.shape[:-3] if has_channels else img.shape[:-2]
    planes = math.prod(lead)
    src = cupy.ascontiguousarray(img).reshape(planes, height, width * channels)
    sq = "true" if squared else "false"
    tile_sums = cuda_function("integral.cu", f"portcv_integral_tile_sums<{channels},{tw},{th},{sq}>")
    carries = cuda_function("integral.cu", f"portcv_integral_carries<{channels},{sq}>")
    tiles = cuda_function("integral.cu",
                          f"portcv_integral_tiles<{channels},{tw},{th},{sq},{_CUDA_SUM[dtype]},{_CUDA_SUM[sq_dtype]}>")

    # Partial sums per tile row / tile column / tile (int32 is exact: <= 255^2 * 32 * 128), and
    # their exclusive prefixes across tiles (int64).
    nq = 2 if squared else 1
    rowseg = cupy.empty((nq, planes, height, ntx, channels), np.int32)
    colseg = cupy.empty((nq, planes, nty, width * channels), np.int32)
    tiletot = cupy.empty((nq, planes, nty, ntx, channels), np.int32)
    rowcarry = cupy.empty(rowseg.shape, np.int64)
    colcarry = cupy.empty(colseg.shape, np.int64)
    colex = cupy.empty(tiletot.shape, np.int64)
    sums = cupy.empty((planes, height + 1, width + 1, channels), dtype)
    squares = cupy.empty(sums.shape, sq_dtype) if squared else sums  # unused unless squared
    last = nq - 1
    h, w, nx, ny = np.int32(height), np.int32(width), np.int32(ntx), np.int32(nty)

    for start in range(0, planes, 65535):  # gridDim.z limit
        stop = min(planes, start + 65535)
        grid = (ntx, nty, stop - start)
        part = slice(start, stop)
        segs = (rowseg[0, part], colseg[0, part], tiletot[0, part], rowseg[last, part], colseg[last, part],
                tiletot[last, part])
        cars = (rowcarry[0, part], colcarry[0, part], colex[0, part], rowcarry[last, part], colcarry[last, part],
                colex[last, part])
        tile_sums(grid, (256,), (src[part], h, w, nx, ny) + segs)
        n_threads = (stop - start) * (height + width + ntx) * channels * nq
        grid_1d = (min((n_threads + 255) // 256, 65535 * 8),)
        carries(grid_1d, (256,), (np.int32(stop - start), h, w, nx, ny) + segs + cars)
        tiles(grid, (256,), (src[part], h, w, nx, ny) + cars + (sums[part], squares[part]))

    out_shape = lead + (height + 1, width + 1) + ((channels,) if has_channels else ())
    sums = sums.reshape(out_shape)
    return (sums, squares.reshape(out_shape)) if squared else sums
