"""The tiled integral-image scan on CUDA (``_integral_launch.cu``), launched by
``portcv.transform``'s CuPy override of ``integral`` (``transform/_integral_cuda.py``) and by the
cascade detector, which writes its tables modulo 2^32 directly (``portcv.detect``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


_CUDA_SUM = {"int32": "int", "int64": "long long", "uint32": "unsigned int"}


def tile_geometry(channels: int, squared: bool) -> tuple[int, int]:
    """(tile width in pixels, tile height) of the CUDA kernels; shared memory stays under 48 KB."""
    tw = 128 if channels == 1 else 64
    th = 32 if tw * channels * (2 if squared else 1) <= 256 else 16
    return tw, th


def launch_integral(img: Any, *, has_channels: bool, squared: bool, dtype: str, sq_dtype: str) -> Any:
    """``_integral_launch.cu`` on a uint8 CuPy array: sums as ``dtype`` and squared sums as ``sq_dtype``
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
    tile_sums = cuda_function(__name__, f"portcv_integral_tile_sums<{channels},{tw},{th},{sq}>")
    carries = cuda_function(__name__, f"portcv_integral_carries<{channels},{sq}>")
    tiles = cuda_function(__name__, f"portcv_integral_tiles<{channels},{tw},{th},{sq},{_CUDA_SUM[dtype]},{_CUDA_SUM[sq_dtype]}>")

    sums = cupy.empty((planes, height + 1, width + 1, channels), dtype)
    squares = cupy.empty(sums.shape, sq_dtype) if squared else sums  # unused unless squared
    h, w, nx, ny = np.int32(height), np.int32(width), np.int32(ntx), np.int32(nty)
    nq = 2 if squared else 1
    chunk = max(1, min(planes, 65535))  # gridDim.z limit
    # Partial sums per tile row / tile column / tile (int32 is exact: <= 255^2 * 32 * 128) and
    # their exclusive prefixes across tiles (int64): one workspace each, for a chunk of planes
    # (_integral_launch.cu's IntegralParts layout). Few allocations and arguments: a call's host cost.
    per_plane = (height * ntx + nty * width + nty * ntx) * channels * nq
    seg = cupy.empty(chunk * per_plane, np.int32)
    carry = cupy.empty(chunk * per_plane, np.int64)
    for start in range(0, planes, chunk):
        n = min(chunk, planes - start)
        if n == planes:  # one chunk: no views to make (each costs host time)
            part_src, part_sums, part_squares = src, sums, squares
        else:
            part = slice(start, start + n)
            part_src, part_sums, part_squares = src[part], sums[part], squares[part]
        grid = (ntx, nty, n)
        tile_sums(grid, (256,), (part_src, h, w, nx, ny, seg))
        n_threads = n * (height + width + ntx) * channels * nq
        grid_1d = (min((n_threads + 255) // 256, 65535 * 8),)
        carries(grid_1d, (256,), (np.int32(n), h, w, nx, ny, seg, carry))
        tiles(grid, (256,), (part_src, h, w, nx, ny, carry, part_sums, part_squares))

    out_shape = lead + (height + 1, width + 1) + ((channels,) if has_channels else ())
    sums = sums.reshape(out_shape)
    return (sums, squares.reshape(out_shape)) if squared else sums
